"""helmfile releases of the karpenter charts (`helmfile.yaml`, `helmfile.yaml.gotmpl`, `helmfile.d/*.yaml`):
`releases[].chart` (`karpenter/karpenter` through a `repositories:` entry, or `oci://.../karpenter`), `version`,
`values` (files beside the helmfile, or inline maps) and `set`. A release with `installed: false` is absent;
Go-template expressions are masked (a version written as `{{ .Values.x }}` is not a literal to edit)."""
from __future__ import annotations

import posixpath
import re
from typing import Iterator

from ruamel.yaml.comments import CommentedMap

from ..model import Finding
from ..versions import parse_version
from .charts import ChartInstall, ValuesSource, _chart_name, _values_file
from .documents import _parse_yaml_docs, scalar_at
from .repo import Repo

SUFFIXES = (".yaml", ".yml", ".yaml.gotmpl", ".yml.gotmpl", ".gotmpl")


def is_helmfile(p: str) -> bool:
    """helmfile's own names: helmfile.yaml (and its .gotmpl form), or any YAML file of a helmfile.d folder."""
    base = posixpath.basename(p)
    return (base.startswith("helmfile") and base.endswith(SUFFIXES)) or \
        (posixpath.basename(posixpath.dirname(p)) == "helmfile.d" and base.endswith(SUFFIXES))


def helmfiles(repo: Repo) -> list[str]:
    """The repository's helmfiles (is_helmfile), in discovery order, listed once per run."""
    found = repo.__dict__.get("_helmfiles")
    if found is None:       # a substring test first: most paths never name a helmfile
        found = repo.__dict__["_helmfiles"] = [p for p in repo.files if "helmfile" in p and is_helmfile(p)]
    return found


_VALUES_REF = re.compile(r"^\s*\{\{-?\s*\.(?:Values|StateValues|Environment\.Values)((?:\.[A-Za-z_][\w-]*)+)\s*-?\}\}\s*$")


def _values_ref(raw: str) -> tuple[str, ...] | None:
    """The key path of a value written as `{{ .Values.a.b }}` (or `.StateValues`, `.Environment.Values`)."""
    m = _VALUES_REF.match(raw)
    return tuple(m.group(1).strip(".").split(".")) if m else None


def _environment_sites(repo: Repo, p: str, keys: tuple[str, ...]) -> list[tuple]:
    """(path, start, end, value, how) of every literal the helmfile's environments give a key path: their inline
    values and their values files (relative to the helmfile)."""
    d = posixpath.dirname(p) or "."
    out = []
    text = repo.text(p)
    for doc, m, obj in _parse_yaml_docs(repo, p, text, 0, 0, p, gotmpl=True):
        envs = obj.get("environments") if isinstance(obj, dict) else None
        for env, spec in (envs.items() if isinstance(envs, dict) else []):
            vals = spec.get("values") if isinstance(spec, dict) else None
            for item in vals if isinstance(vals, list) else []:
                if isinstance(item, CommentedMap):
                    got = scalar_at(text, doc.start, doc.text, item, keys)
                    if got:
                        out.append((p, *got, f"environment {env} of {p}"))
                elif isinstance(item, str) and "__MIG" not in item:
                    f = posixpath.normpath(posixpath.join(d, m.unmask(item)))
                    if f in repo.files:
                        ftext = repo.text(f)
                        for fdoc, _fm, fobj in _parse_yaml_docs(repo, f, ftext, 0, 0, f, gotmpl=True):
                            got = scalar_at(ftext, fdoc.start, fdoc.text, fobj, keys)
                            if got:
                                out.append((f, *got, f"environment {env} of {p} ({f})"))
    return out


def scan(repo: Repo) -> Iterator[ChartInstall]:
    from ..sources import keytree
    for p in helmfiles(repo):
        sf = repo.files[p]
        if "karpenter" not in sf.text or "releases" not in sf.text:
            continue
        d = posixpath.dirname(p) or "."
        for doc, m, obj in _parse_yaml_docs(repo, p, sf.text, 0, 0, p, gotmpl=True):
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
                keys = _values_ref(m.unmask(str(rel.get("version") or "")))
                if keys:                    # version: {{ .Values.x }}: where each environment sets x
                    ci.sites = _environment_sites(repo, p, keys)
                    found = [v for *_, v, _how in ci.sites if parse_version(v)]
                    ci.evaluated_version = min(found, key=parse_version) if found else None
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
