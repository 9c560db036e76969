"""Charts installed with the helm CLI from a script of the repository (`helm upgrade --install karpenter
oci://public.ecr.aws/karpenter/karpenter --version 1.0.8 -f values.yaml`), the way the getting-started guides do it:
the version where the script writes it (the literal, or the `VAR=value` it expands), the values files it passes."""
from __future__ import annotations

import posixpath
from types import SimpleNamespace
from typing import Iterator

from ..sources.shell import helm_calls
from .charts import ChartInstall, ValuesSource, _chart_name, _values_file
from .repo import Repo


def scan(repo: Repo) -> Iterator[ChartInstall]:
    for p in repo.containing("karpenter", (".sh",)):
        sf = repo.files[p]
        if "helm" not in sf.text:
            continue
        for call in helm_calls(p, sf.text):
            name = _chart_name(call.chart)
            if name is None:
                continue
            ci = ChartInstall("helm", name, p, call.line, evaluated_version=call.version, span=call.span,
                              namespace=call.namespace, release=call.release or None)
            for f in call.values:
                target = posixpath.normpath(posixpath.join(posixpath.dirname(p), f))
                ci.values.extend(_values_file(repo, p, call.line, target))
            if call.raw_sets:               # --set key=value: set (from the script's environment when not literal)
                ci.values.append(ValuesSource("cli_set", p, call.line, params=[
                    SimpleNamespace(name=k, value=call.sets.get(k) or v, line=call.line)
                    for k, v in call.raw_sets.items()]))
            yield ci
