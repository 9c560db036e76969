"""`migrator explain CODE` and the docs page of each finding code, from one source: the catalogue's title and
severity (knowledge/findings.yaml), why the finding matters, how to fix it by hand and where the fact comes from
(knowledge/explain.yaml), and a real example with its before/after (knowledge/examples.json, generated from the
fixtures by scripts/gen_examples.py)."""
from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources

from . import knowledge

SEVERITY = {
    "info": "a change migrator makes, said so the reviewer knows why",
    "warning": "something to decide or do by hand; migrator writes what it safely can around it",
    "error": "something migrator cannot do safely: nothing is written for it, and the plan exits 1",
}


@lru_cache(maxsize=None)
def examples() -> dict:
    text = resources.files("migrator.knowledge").joinpath("examples.json").read_text(encoding="utf-8")
    return json.loads(text)


def entry(code: str) -> dict | None:
    """Everything known about a code (None: no such code)."""
    code = code.upper()
    f = knowledge.load("findings").get(code)
    if f is None:
        return None
    more = knowledge.load("explain").get(code) or {}
    ex = examples().get(code)
    return {"code": code, "title": f["title"], "severity": f["severity"], "means": SEVERITY[f["severity"]],
            "why": more.get("why", ""), "fix": more.get("fix") or (ex or {}).get("manual_step", ""),
            "source": more.get("source", ""), "example": ex}


def text(code: str) -> str | None:
    e = entry(code)
    if e is None:
        return None
    out = [f"{e['code']} ({e['severity']}): {e['title']}", "", f"What it means: {e['means']}."]
    if e["why"]:
        out += ["", f"Why it matters: {e['why']}"]
    if e["fix"]:
        out += ["", f"How to fix it by hand: {e['fix']}"]
    if e["source"]:
        out += ["", f"Source: {e['source']}"]
    ex = e["example"]
    if ex:
        out += ["", f"Example (fixture {ex['fixture']}, {ex['path'] or '(repository)'}:{ex['line']}):", f"  {ex['message']}"]
        if ex.get("diff"):
            out += ["", "Before / after:", ex["diff"].rstrip("\n")]
    out += ["", f"Silence it with `# migrator: ignore[{e['code']}] <reason>` on the line (or the line above), or "
                f"--ignore {e['code']}."]
    return "\n".join(out) + "\n"


def markdown(code: str) -> str | None:
    e = entry(code)
    if e is None:
        return None
    out = [f"# {e['code']}", "", f"**{e['title']}**", "", f"Severity: `{e['severity']}`: {e['means']}."]
    if e["why"]:
        out += ["", "## Why it matters", "", e["why"]]
    if e["fix"]:
        out += ["", "## How to fix it by hand", "", e["fix"]]
    if e["source"]:
        out += ["", f"Source: {e['source']}"]
    ex = e["example"]
    if ex:
        out += ["", "## Example", "", f"From the fixture `{ex['fixture']}` (`{ex['path'] or '(repository)'}:{ex['line']}`):",
                "", f"> {ex['message']}"]
        if ex.get("diff"):
            out += ["", "```diff", ex["diff"].rstrip("\n"), "```"]
    out += ["", f"Silence it in a file with `# migrator: ignore[{e['code']}] <reason>` on the line or the line above, "
                f"or with `--ignore {e['code']}`."]
    return "\n".join(out) + "\n"
