"""The `--format json` contract (schema 2; docs/cli.md says what changed from schema 1). Extend it; never break it."""
from __future__ import annotations

import json

from ..plan import Plan

SCHEMA = 2


def to_dict(plan: Plan) -> dict:
    out = {
        "schema": SCHEMA,
        "root": plan.root.as_posix(),
    }
    # schema 2: the top-level hop and phase only when every selected root with a hop planned shares them
    if plan.hop is not None:
        out["hop"] = {"from": plan.hop_from, "to": plan.hop_to}
        out["phase"] = plan.phase
    out.update({
        "findings": [f.to_json() for f in plan.findings],
        "changes": [{"path": c.path, "action": c.action, "rules": c.rules, "diff": c.diff,
                     "roots": [r.path for r in plan.roots if c.path in r.changes]} for c in plan.changes],
        "steps": [s.to_json() for s in plan.steps],
        "roots": [r.to_json() for r in plan.roots],
    })
    if plan.hop is not None:
        out["path"] = plan.later                        # the hops after this one, for the next runs
    return out


def render(plan: Plan) -> str:
    return json.dumps(to_dict(plan), indent=2, ensure_ascii=False) + "\n"
