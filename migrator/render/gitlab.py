"""GitLab code quality report (the `codequality` artifact): a JSON array with one issue per finding."""
from __future__ import annotations

import json

from ..plan import Plan
from .sarif import fingerprint

SEVERITY = {"error": "major", "warning": "minor", "info": "info"}


def render(plan: Plan) -> str:
    issues = [{"description": f"{f.code}: {f.message}" + (f" -> {f.manual_step}" if f.manual_step else ""),
               "check_name": f.code, "fingerprint": fingerprint(f), "severity": SEVERITY[f.severity],
               "location": {"path": f.path or ".", "lines": {"begin": max(f.line, 1)}}}
              for f in plan.findings if not f.suppressed]
    return json.dumps(issues, indent=2, ensure_ascii=False) + "\n"
