"""Karpenter installed by eksctl at cluster creation (`ClusterConfig.karpenter: {version: ...}`). eksctl installs the
chart once; later versions go in with helm. The version it records is where the cluster's Karpenter stands until
then, and migrator keeps it in step with the chart it plans so the file keeps saying what runs."""
from __future__ import annotations

from typing import Iterator

from .charts import ChartInstall, ValuesSource
from .documents import _parse_yaml_docs
from .repo import YAML, Repo


def scan(repo: Repo) -> Iterator[ChartInstall]:
    for p in repo.containing_both("karpenter", "ClusterConfig", YAML):    # (the files every chart reader searches)
        sf = repo.files[p]
        if "karpenter:" not in sf.text:
            continue
        for doc, m, obj in _parse_yaml_docs(repo, p, sf.text, 0, 0, p):
            if not isinstance(obj, dict) or obj.get("kind") != "ClusterConfig" or \
                    not isinstance(obj.get("karpenter"), dict):
                continue
            line = doc.first_line + obj.lc.key("karpenter")[0] + 1
            ci = ChartInstall("eksctl", "karpenter", p, line, obj=obj, doc=doc, source=("karpenter",),
                              namespace="karpenter")
            # the values eksctl passed at creation live in the Helm release, not in a file migrator can read
            ci.values.append(ValuesSource("release", p, line))
            yield ci
