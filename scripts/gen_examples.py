"""Regenerate migrator/knowledge/examples.json: for every finding code the fixtures produce, its first occurrence
(fixtures in name order, each planned at every step it is recorded at) with the message, the manual step and the
before/after hunk of the file it is about. `migrator explain CODE` and the docs pages show them; tests/test_explain.py
checks the file is current. Usage: python scripts/gen_examples.py
"""
from __future__ import annotations

import difflib
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))     # this checkout's migrator, never an installed copy

from migrator.plan import make_plan  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
OUT = ROOT / "migrator" / "knowledge" / "examples.json"
MAX_LINES = 24


def _hunk(old: str | None, new: str | None, line: int, path: str) -> str:
    """The hunk of a file's diff nearest the finding's line, at most MAX_LINES lines."""
    a, b = (old or "").splitlines(keepends=True), (new or "").splitlines(keepends=True)
    lines = list(difflib.unified_diff(a, b, f"a/{path}" if old is not None else "/dev/null",
                                      f"b/{path}" if new is not None else "/dev/null", n=2))
    hunks, cur = [], None
    for ln in lines[2:]:
        if ln.startswith("@@"):
            cur = [ln]
            hunks.append(cur)
        elif cur is not None:
            cur.append(ln)
    if not hunks:
        return ""

    def start(h):
        return int(h[0].split()[1].split(",")[0].lstrip("-") or 0)
    best = min(hunks, key=lambda h: abs(start(h) - line))
    body = [x if x.endswith("\n") else x + "\n" for x in best[:MAX_LINES]]
    if len(best) > MAX_LINES:
        body.append("...\n")
    return "".join(lines[:2]) + "".join(body)


def _steps(fx: Path) -> list[tuple[Path, str | None, str | None]]:
    """(tree, --to, --phase) of each recorded step of a fixture: the input, then each expected tree."""
    if (fx / "walk.json").exists():
        spec = json.loads((fx / "walk.json").read_text())
        trees = [fx / "input"] + [fx / f"expected-run-{i}" for i in range(1, spec.get("runs", 0))]
        return [(t, spec["to"], None) for t in trees if t.is_dir()]
    if (fx / "hop.json").exists():
        d = json.loads((fx / "hop.json").read_text())
        phases = d["phases"]
        trees = [fx / "input"] + [fx / f"expected-{p}" for p in phases[:-1]]
        return [(t, d["to"], p) for t, p in zip(trees, phases) if t.is_dir()]
    return [(fx / "input", "v1beta1", "prepare"), (fx / "expected", "v1beta1", "cleanup")]


def build() -> dict:
    from migrator.options import Options
    out: dict = {}
    for fx in sorted(p for p in FIXTURES.iterdir() if (p / "input").is_dir()):
        opts = Options(**json.loads((fx / "options.json").read_text())) if (fx / "options.json").exists() else Options()
        for tree, to, phase in _steps(fx):
            if not tree.is_dir():
                continue
            try:
                plan = make_plan(tree, to=to, phase=phase, options=opts)
            except Exception:       # noqa: BLE001 - a step a fixture cannot be planned at gives no example
                continue
            changes = {c.path: c for c in plan.changes}
            for f in plan.findings:
                if f.code in out or f.suppressed:
                    continue
                c = changes.get(f.path)
                if c is None and f.path:        # the object it is about is converted into a new file beside it
                    c = next((x for x in plan.changes if x.action == "create" and
                              x.path.rsplit("/", 1)[0] == f.path.rsplit("/", 1)[0]), None)
                out[f.code] = {"fixture": fx.name, "path": f.path, "line": f.line, "message": f.message,
                               "manual_step": f.manual_step,
                               "diff": _hunk(c.old, c.new, f.line, c.path) if c is not None else ""}
    return dict(sorted(out.items()))


def render() -> str:
    return json.dumps(build(), indent=1, ensure_ascii=False, sort_keys=True) + "\n"


if __name__ == "__main__":
    OUT.write_text(render(), encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")
