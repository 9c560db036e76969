"""helmfile releases of the karpenter charts (`helmfile.yaml`, `helmfile.yaml.gotmpl`, `helmfile.d/*.yaml`):
`releases[].chart` (`karpenter/karpenter` through a `repositories:` entry, or `oci://.../karpenter`), `version`,
`values` (files beside the helmfile, or inline maps) and `set`. A release with `installed: false` is absent;
Go-template expressions are masked (a version written as `{{ .Values.x }}` is not a literal to edit)."""
from __future__ import annotations

import posixpath
from typing import Iterator

from ruamel.yaml.comments import CommentedMap

from ..model import Finding
from .charts import ChartInstall, ValuesSource, _chart_name, _values_file
from .documents import _parse_yaml_docs
from .repo import Repo

SUFFIXES = (".yaml", ".yml", ".yaml.gotmpl", ".yml.gotmpl", ".gotmpl")


def is_helmfile(p: str) -> bool:
    """helmfile's own names: helmfile.yaml (and its .gotmpl form), or any YAML file of a helmfile.d folder."""
    base = posixpath.basename(p)
    return (base.startswith("helmfile") and base.endswith(SUFFIXES)) or \
        (posixpath.basename(posixpath.dirname(p)) == "helmfile.d" and base.endswith(SUFFIXES))


def scan(repo: Repo) -> Iterator[ChartInstall]:
    from ..sources import keytree
    for p, sf in repo.files.items():
        if not is_helmfile(p) or "karpenter" not in sf.text or "releases" not in sf.text:
            continue
        d = posixpath.dirname(p) or "."
        for doc, m, obj in _parse_yaml_docs(repo, p, sf.text, 0, 0, p):
            releases = obj.get("releases") if isinstance(obj, dict) else None
            if not isinstance(releases, list):
                continue
            for i, rel in enumerate(releases):
                if not isinstance(rel, CommentedMap):
                    continue
                name = _chart_name(m.unmask(str(rel.get("chart") or "")))
                if name is None:
                    continue
                line = doc.first_line + releases.lc.item(i)[0] + 1
                if rel.get("installed") is False:
                    repo.findings.append(Finding(
                        "MIG-SRC-011", "info", p, line,
                        f"helmfile release {rel.get('name')} installs Karpenter, but it is switched off "
                        "(installed: false): not planned", "switch it on first if this cluster should run Karpenter"))
                    continue
                ci = ChartInstall("helmfile", name, p, line, obj=obj, doc=doc, source=("releases", i))
                ci.namespace = str(rel.get("namespace")) if rel.get("namespace") else None
                vals = rel.get("values")
                for j, item in enumerate(vals if isinstance(vals, list) else []):
                    iline = doc.first_line + vals.lc.item(j)[0] + 1
                    if isinstance(item, CommentedMap):
                        tree = keytree.yaml_tree(sf.text, p, doc.start, doc.end, obj,
                                                 under=("releases", i, "values", j))
                        ci.values.append(ValuesSource("flux", p, iline, tree=tree, masked=m))
                    elif isinstance(item, str) and "{{" not in m.unmask(item) and "__MIG" not in item:
                        ci.values.extend(_values_file(repo, p, iline, posixpath.normpath(posixpath.join(d, item))))
                    else:
                        ci.values.append(ValuesSource("other", p, iline))
                for key in ("set", "setString"):
                    if rel.get(key):
                        ci.values.append(ValuesSource("set_list", p, doc.first_line + rel.lc.key(key)[0] + 1))
                yield ci
