"""An umbrella chart of the repository that carries the karpenter charts as dependencies (`Chart.yaml`
`dependencies: [{name: karpenter, version, repository}]`, Helm 3): the version where the dependency pins it, the values
under the dependency's name (or `alias`) in the umbrella's `values.yaml`. A dependency switched off by its `condition`
(`karpenter.enabled: false` in those values) is absent."""
from __future__ import annotations

import posixpath
from typing import Iterator

from ruamel.yaml.comments import CommentedMap
from ruamel.yaml.error import YAMLError

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
                # whoever installs the umbrella (a helm command, a platform's catalog, as giantswarm/karpenter-app is
                # published) may pass values under this key: never read, so a key the values file leaves out is not
                # known to be unset; unless an Argo CD Application of the repository installs it with no values
                if not _installed_plainly(repo, d):
                    ci.values.append(ValuesSource("installer", p, ci.line))
                yield ci


def _installed_plainly(repo: Repo, d: str) -> bool:
    """Does an Argo CD Application of the repository install the chart folder `d` (its source's `path`) passing no
    values of its own (no `helm` section)?"""
    cache = repo.__dict__.setdefault("_umbrella_plain", {})
    if d in cache:
        return cache[d]
    found = False
    for p in repo.yaml_containing("argoproj.io"):
        if d not in repo.text(p):
            continue
        for doc in yamlsrc.split_documents(repo.text(p)):
            if d not in doc.text or "Application" not in doc.text:
                continue
            try:
                obj = yamlsrc.safe_load(doc.text)
            except YAMLError:           # a document that does not parse installs nothing migrator can tell
                continue
            spec = obj.get("spec") if isinstance(obj, dict) and obj.get("kind") == "Application" else None
            srcs = ([spec.get("source")] + list(spec.get("sources") or [])) if isinstance(spec, dict) else []
            for src in srcs:
                if isinstance(src, dict) and str(src.get("path") or "").strip("./") == d.strip("./") and \
                        "helm" not in src:
                    found = True
    cache[d] = found
    return found
