"""An umbrella chart of the repository that carries the karpenter charts as dependencies (`Chart.yaml`
`dependencies: [{name: karpenter, version, repository}]`, Helm 3): the version where the dependency pins it, the values
under the dependency's name (or `alias`) in the umbrella's `values.yaml`. A dependency switched off by its `condition`
(`karpenter.enabled: false` in those values) is absent."""
from __future__ import annotations

import posixpath
from typing import Iterator

from ruamel.yaml.comments import CommentedMap

from ..sources import yaml as yamlsrc
from ..sources.templates import TemplateError, mask
from .charts import ChartInstall, ValuesSource, _chart_name
from .documents import _parse_yaml_docs
from .repo import Repo


def _values(repo: Repo, d: str):
    """(path, text, parsed values, masked) of the umbrella's values.yaml, or None."""
    p = posixpath.join(d, "values.yaml") if d != "." else "values.yaml"
    if p not in repo.files:
        return None
    text = repo.text(p)
    try:
        m = mask(text)
        obj = yamlsrc.load(m.text)
    except (TemplateError, yamlsrc.YamlParseError):
        return None
    return (p, text, obj, m) if isinstance(obj, CommentedMap) else None


def scan(repo: Repo) -> Iterator[ChartInstall]:
    from ..sources import keytree
    for p in repo.named("Chart.yaml"):
        sf = repo.files[p]
        if "karpenter" not in sf.text or "dependencies" not in sf.text:
            continue
        for doc, m, obj in _parse_yaml_docs(repo, p, sf.text, 0, 0, p):
            deps = obj.get("dependencies") if isinstance(obj, dict) else None
            if not isinstance(deps, list):
                continue
            d = posixpath.dirname(p) or "."
            values = _values(repo, d)
            for i, dep in enumerate(deps):
                name = _chart_name(dep.get("name")) if isinstance(dep, dict) else None
                if name is None:
                    continue
                key = str(dep.get("alias") or dep.get("name"))
                cond = str(dep.get("condition") or "")
                if values is not None and cond:
                    node = values[2]
                    for part in cond.split(",")[0].strip().split("."):
                        node = node.get(part) if isinstance(node, dict) else None
                    if node is False:
                        continue            # switched off by its condition
                ci = ChartInstall("umbrella", name, p, doc.first_line + deps.lc.item(i)[0] + 1, obj=obj, doc=doc,
                                  source=("dependencies", i))
                if values is not None and isinstance(values[2].get(key), CommentedMap):
                    vp, vtext, vobj, vm = values
                    repo.template_paths.add(vp)
                    tree = keytree.yaml_tree(vtext, vp, 0, len(vtext), vobj, under=(key,))
                    ci.values.append(ValuesSource("file", vp, vobj.lc.key(key)[0] + 1, tree=tree, masked=vm))
                yield ci
