"""The `--format json` contract (schema 1). Extend it; never break it."""
from __future__ import annotations

import json

from ..plan import Plan

SCHEMA = 1


def to_dict(plan: Plan) -> dict:
    return {
        "schema": SCHEMA,
        "root": plan.root.as_posix(),
        "hop": {"from": plan.hop_from, "to": plan.hop_to},
        "phase": plan.phase,
        "findings": [f.to_json() for f in plan.findings],
        "changes": [{"path": c.path, "action": c.action, "rules": c.rules, "diff": c.diff} for c in plan.changes],
        "steps": [s.to_json() for s in plan.steps],
        "roots": [r.__dict__ for r in plan.roots],      # addition to schema 1 (issue 5)
        "path": plan.later,                             # addition: the hops after this one, for the next runs
    }


def render(plan: Plan) -> str:
    return json.dumps(to_dict(plan), indent=2, ensure_ascii=False) + "\n"
