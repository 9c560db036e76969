"""kustomize `helmCharts:` entries of the karpenter charts, with `valuesInline` and `valuesFile`.
"""
from __future__ import annotations

import posixpath
from typing import Iterator

from ruamel.yaml.comments import CommentedMap

from .charts import ChartInstall, ValuesSource, _chart_name, _values_file
from .documents import _parse_yaml_docs
from .repo import Repo



KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")


def scan(repo: Repo) -> Iterator[ChartInstall]:
    """`helmCharts:` entries of kustomizations (kustomize build --enable-helm): version, valuesInline,
    valuesFile and additionalValuesFiles (relative to the kustomization)."""
    from ..sources import keytree
    for p in repo.named(*KUSTOMIZATION_FILES):
        sf = repo.files[p]
        if "helmCharts" not in sf.text:
            continue
        for doc, m, obj in _parse_yaml_docs(repo, p, sf.text, 0, 0, p):
            items = obj.get("helmCharts") if isinstance(obj, dict) else None
            if not isinstance(items, list):
                continue
            for i, item in enumerate(items):
                name = _chart_name(item.get("name")) if isinstance(item, dict) else None
                if name is None:
                    continue
                ci = ChartInstall("kustomize", name, p, doc.first_line + items.lc.item(i)[0] + 1, obj=obj, doc=doc,
                                  source=("helmCharts", i))
                if isinstance(item.get("valuesInline"), CommentedMap):
                    tree = keytree.yaml_tree(sf.text, p, doc.start, doc.end, obj, under=ci.source + ("valuesInline",))
                    ci.values.append(ValuesSource("kustomize", p, ci.line, tree=tree, masked=m))
                files = [item.get("valuesFile")] + list(item.get("additionalValuesFiles") or [])
                for rel in [f for f in files if f]:
                    ci.values.extend(_values_file(repo, p, ci.line, posixpath.normpath(
                        posixpath.join(posixpath.dirname(p), str(rel)))))
                yield ci


