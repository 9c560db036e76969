"""Rule `v1x/rendered`: a chart rendered with `helm template` to the target 1.x (migrator/rendered.py).

The same stop and value rows as `v1x/helm` (the module's IAM cap, keys a crossed minor removed, keys a minor's
chart refuses to render without), applied to the values read back from the rendered file; the finding and the
runbook give the `helm template` commands for both charts and apply them with kubectl, CRDs first.
"""
from __future__ import annotations

from ...rendered import RenderResult, rerender
from ...rendered import scan as scan_rendered
from .helm import findings, values_plan

RULE = "v1x/rendered"


def run(ctx, phase: str, done: dict) -> RenderResult:
    ctl = next((rc for rc in scan_rendered(ctx.repo) if rc.chart == "karpenter" and ctx.owns(rc.path)), None)
    if ctl is None:
        return RenderResult()
    vp = values_plan(ctx, done, f"the chart rendered in {ctl.path}")
    if vp is None:                       # already at the target: the commands still serve the runbook
        return rerender(ctx.repo, [], None, ctx.owns)
    res = rerender(ctx.repo, vp.rows, vp.target, ctx.owns)
    # the held target is reported by v1x/helm for every root
    res.findings += [f for f in findings(ctx, vp, (ctl.path, ctl.line), f"the chart rendered in {ctl.path}")
                     if f.code != "MIG-V1X-HELM-003"]
    return res
