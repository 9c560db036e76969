"""Rule `v1/rendered`: charts rendered with `helm template` through the v1 rollout (migrator/rendered.py).

patch-upgrade  re-render at the newest patch of the current minor (the rollback point with conversion webhooks),
               with the settings.aws.* keys 0.33+ ignores renamed or dropped.
controller     re-render at 1.0.x with the v1 values table; the runbook deletes the webhook configurations the
               0.3x chart rendered (kubectl apply never deletes what a file no longer holds).
webhooks-off   the webhook values 1.1 removed, when the values read back name any.
The values are what the rendered file shows; a key at its chart default cannot be told from one set on purpose,
so a `set` row (webhook.enabled) is not re-applied to rendered output.
"""
from __future__ import annotations

from ... import knowledge
from ...path import parse_version
from ...rendered import RenderResult, rerender
from . import helm as helm_rule

RULE = "v1/rendered"
HOP = "v1beta1->v1"
NOTES = {"controller": "the 0.3x webhook configurations it no longer renders must be deleted (runbook)"}


def run(ctx, phase: str) -> RenderResult:
    cur = ctx.chart_version
    target = helm_rule.targets(phase, cur).get("karpenter")
    if target and cur and parse_version(cur) and parse_version(cur) >= parse_version(target):
        target = None                       # never a downgrade
    table = knowledge.load("helm")["values"][HOP]
    if phase == "patch-upgrade":
        rows = helm_rule.stale_alpha_rows()
    elif phase == "controller":
        rows = helm_rule.stale_alpha_rows() + [r for r in table if r["phase"] == "controller"]
    elif phase == "webhooks-off":
        rows = helm_rule.gate_rows("karpenter")
    else:
        return RenderResult()
    return rerender(ctx.repo, rows, target, ctx.owns, note=NOTES.get(phase, ""))
