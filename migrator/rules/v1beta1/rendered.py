"""Rule `v1beta1/rendered`: charts rendered with `helm template` and applied with kubectl (migrator/rendered.py).

Never edited piecemeal: the values they were rendered with are read back (they feed node-role resolution),
and a finding gives the `helm template` commands that re-render the controller chart for v0.32 (value renames
of the hop applied, keys removed in cleanup dropped then) and render the karpenter-crd chart; the runbook applies
them with kubectl.
"""
from __future__ import annotations

from ... import knowledge
from ...rendered import RenderResult, rerender

RULE = "v1beta1/rendered"
NOTE = "an affinity on karpenter.sh/provisioner-name becomes karpenter.sh/nodepool"


def run(ctx, hop: dict, phase: str) -> RenderResult:
    helm = knowledge.load("helm")
    key = f"{hop['from']}->{hop['to']}"
    phases = [p["name"] for p in hop["phases"]]
    upto = phases.index(phase) if phase in phases else len(phases)
    # the value rows of this phase and the ones before; a key alpha objects still need stays until cleanup
    rows = [r for r in helm["values"].get(key, [])
            if (r.get("phase") not in phases or phases.index(r["phase"]) <= upto)
            and not (r.get("needed_by_alpha") and phase == phases[0])]
    return rerender(ctx.repo, rows, hop["chart"]["version"], ctx.owns,
                    through=(helm.get("hops", {}).get(key) or {}).get("pass_through"), note=NOTE)
