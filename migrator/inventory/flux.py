"""Flux `HelmRelease`s of the karpenter charts (`spec.chart.spec`), with `spec.values` and `valuesFrom`.
"""
from __future__ import annotations

import re
from typing import Iterator

from ruamel.yaml.comments import CommentedMap

from .charts import ChartInstall, ValuesSource, _chart_name
from .documents import _parse_yaml_docs
from .repo import Repo



_FLUX_KIND = re.compile(r"""^kind:[ \t]*["']?HelmRelease\b""", re.M)




def scan(repo: Repo) -> Iterator[ChartInstall]:
    from ..sources import keytree
    for p, sf in repo.files.items():
        # decided on bytes before any parse: a Karpenter HelmRelease names the chart and is a top-level kind (a Flux
        # gotk-components.yaml mentions HelmRelease only inside its CRDs)
        if not p.endswith((".yaml", ".yml")) or "karpenter" not in sf.text or not _FLUX_KIND.search(sf.text):
            continue
        for doc, m, obj in _parse_yaml_docs(repo, p, sf.text, 0, 0, p):
            if not isinstance(obj, dict) or obj.get("kind") != "HelmRelease":
                continue
            chart = (((obj.get("spec") or {}).get("chart") or {}).get("spec") or {}).get("chart")
            name = _chart_name(chart)
            if name is None:
                continue
            ci = ChartInstall("flux", name, p, doc.first_line + 1, obj=obj, doc=doc)
            if (obj.get("spec") or {}).get("valuesFrom"):
                kl = obj["spec"].lc.key("valuesFrom")[0]
                ci.values.append(ValuesSource("values_from", p, doc.first_line + kl + 1))
            if isinstance((obj.get("spec") or {}).get("values"), CommentedMap):
                tree = keytree.yaml_tree(sf.text, p, doc.start, doc.end, obj, under=("spec", "values"))
                ci.values.append(ValuesSource("flux", p, ci.line, tree=tree, masked=m))
            yield ci
