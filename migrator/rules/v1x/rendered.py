"""Rule `v1x/rendered`: a chart rendered with `helm template` to the target 1.x (migrator/rendered.py).

The same stop and value rows as `v1x/helm` (the module's IAM cap, keys a crossed minor removed, keys a minor's
chart refuses to render without), applied to the values read back from the rendered file; the finding and the
runbook give the `helm template` commands for both charts and apply them with kubectl, CRDs first.

A copy of the chart's output kept only to review its diff (unlabelled, left out of its kustomization, beside a chart
release that installs: migrator/rendercopy.py) is no install: when the chart moves past its version it is said
(MIG-RND-002) with the command that makes it again, the Makefile target that renders it where there is one.
"""
from __future__ import annotations

from ...model import Finding
from ...path import parse_version
from ...rendercopy import copies
from ...rendered import RenderResult, rerender
from ...rendered import scan as scan_rendered
from .helm import findings, values_plan
from .plan import stop

RULE = "v1x/rendered"


def run(ctx, phase: str, done: dict) -> RenderResult:
    ctl = next((rc for rc in scan_rendered(ctx.repo) if rc.chart == "karpenter" and ctx.owns(rc.path)), None)
    if ctl is None:
        return RenderResult(findings=_copies(ctx, done))
    vp = values_plan(ctx, done, f"the chart rendered in {ctl.path}")
    if vp is None:                       # already at the target: the commands still serve the runbook
        return rerender(ctx.repo, [], None, ctx.owns)
    res = rerender(ctx.repo, vp.rows, vp.target, ctx.owns)
    # the held target is reported by v1x/helm for every root
    res.findings += [f for f in findings(ctx, vp, (ctl.path, ctl.line), f"the chart rendered in {ctl.path}")
                     if f.code != "MIG-V1X-HELM-003"]
    return res


def _copies(ctx, done: dict) -> list[Finding]:
    """A review copy of the controller chart's output (migrator/rendercopy.py) made at another version than the one
    the chart moves to: said, with the command that makes it again."""
    copies_ = copies(ctx.repo, ctx.owns)
    if not copies_ or not ctx.chart_version:
        return []
    target = stop(ctx, done)[0]
    out = []
    for c in copies_:
        if parse_version(c.version) == parse_version(target):
            continue
        files = c.folder + "/" if len(c.files) > 1 else c.path
        how = (f"`{c.make}` (the Makefile target that renders it)" if c.make else
               f"`helm template` as it was made, at chart {target}, with the release's values")
        out.append(Finding(
            "MIG-RND-002", "warning", c.path, c.line,
            f"{files} holds the karpenter chart's `helm template` output at {c.version} (the controller image's tag; "
            f"its `# Source:` comments), which {c.left_out_by} does not apply: a copy kept to review the chart's "
            f"output, not an install. The chart moves to {target}, so the copy no longer shows what runs",
            f"make it again after this change: {how}; it is not edited piecemeal"))
    return out
