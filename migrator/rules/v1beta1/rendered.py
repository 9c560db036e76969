"""Rule `v1beta1/rendered`: charts rendered with `helm template` and applied with kubectl (migrator/rendered.py).

Never edited piecemeal: the values they were rendered with are read back (they feed node-role resolution),
and a finding gives the `helm template` commands that re-render the controller chart for v0.32 (value renames
of the hop applied, keys removed in cleanup dropped then) and render the karpenter-crd chart; the runbook applies
them with kubectl.
"""
from __future__ import annotations

from ...rendered import RenderResult, rerender

RULE = "v1beta1/rendered"


def run(ctx, hop: dict, phase: str) -> RenderResult:
    return rerender(ctx.repo, f"{hop['from']}->{hop['to']}", phase, [p["name"] for p in hop["phases"]],
                    hop["chart"]["version"], ctx.owns)
