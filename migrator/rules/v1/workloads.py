"""Rule `v1/workloads`: the workload keys v1 removed, replaced in the manifests phase.

`karpenter.sh/do-not-evict` / `do-not-consolidate` become `karpenter.sh/do-not-disrupt` (v1 no longer reads
them); tolerations of the disruption taint `karpenter.sh/disruption` move to `karpenter.sh/disrupted`
(knowledge/workloads.yaml `v1beta1->v1`). The edit machinery is the first hop's workloads rule.
"""
from __future__ import annotations

from ... import knowledge
from ..v1beta1.workloads import WorkloadsResult, WorkloadsRule

RULE = "v1/workloads"
FACTS = knowledge.load("workloads")["v1beta1->v1"]
PHASE = "manifests"


def run(ctx, phase: str) -> WorkloadsResult:
    if phase != PHASE:
        return WorkloadsResult()
    return WorkloadsRule(ctx.repo, phase, ctx.owns, facts=FACTS, rule=RULE).run()
