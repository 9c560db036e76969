"""GitHub Actions workflow commands: one `::error|warning|notice file=...,line=...::` line per finding, so the
lines to change are annotated in the pull request. Suppressed findings are left out."""
from __future__ import annotations

from ..plan import Plan

LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def _escape(s: str, prop: bool = False) -> str:
    s = s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return s.replace(":", "%3A").replace(",", "%2C") if prop else s


def render(plan: Plan) -> str:
    out = []
    for f in plan.findings:
        if f.suppressed:
            continue
        props = [f"title={_escape(f.code, True)}"]
        if f.path:
            props.insert(0, f"file={_escape(f.path, True)}")
            if f.line > 0:
                props.insert(1, f"line={f.line}")
        msg = f.message + (f" -> {f.manual_step}" if f.manual_step else "")
        out.append(f"::{LEVEL[f.severity]} {','.join(props)}::{_escape(msg)}")
    changes = len(plan.changes)
    out.append(f"::notice title=migrator::{_escape(plan.heading())}: {changes} file(s) to change")
    if len(plan.roots) > 1:
        for r in plan.roots:
            now = f"{r.hop_from} -> {r.hop_to}, phase {r.phase}" if r.phase else "nothing planned"
            out.append(f"::notice title=migrator {_escape(r.path, True)}::{_escape(now)}: {len(r.changes)} file(s)")
    return "\n".join(out) + "\n"
