"""Which minors the onward hop crosses, and where it stops (the target, or what the module's IAM allows)."""
from __future__ import annotations

from ...path import MINORS, parse_version


def minor_of(version: str | None) -> str | None:
    v = parse_version(version) if version else None
    return f"{v[0]}.{v[1]}" if v else None


def crossed(current: str | None, target: str) -> list[dict]:
    """Minor rows after the current chart's minor, up to and including the target's."""
    cur = parse_version(minor_of(current) or "1.0")
    tgt = parse_version(minor_of(target))
    return [r for r in MINORS["minors"] if cur < parse_version(r["minor"]) <= tgt]


def stop(ctx, done: dict) -> tuple[str, str | None]:
    """(chart version to move to, why it is lower than asked) for this cluster root."""
    target = ctx.target.chart or MINORS["newest"]
    mod = done.get("v1x/terraform_module")
    cap = getattr(mod, "cap", None)
    if cap and parse_version(minor_of(cap)) < parse_version(minor_of(target)):
        target, why = cap, getattr(mod, "cap_reason", None)
        cur = ctx.chart_version
        if cur and parse_version(cur) and parse_version(cur) > parse_version(cap):
            target = cur                # already past the module's reach: held where it runs, never set back
    else:
        why = None
    held = getattr(done.get("v1x/helm"), "held", None)      # a required value nobody states (MIG-V1X-HELM-001)
    if held and parse_version(held[0]) < parse_version(target):
        return held
    return target, why
