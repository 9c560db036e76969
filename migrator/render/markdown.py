"""The runbook as Markdown (templates/runbook.md.j2), safe to paste into a pull request.

Everything taken from the repository is escaped: prose through `md` (Markdown and HTML neutralised, one
line), inline code through `code` (a backtick fence longer than any run inside), blocks through `fence`,
and text inside HTML tags through `html`. A hostile name cannot open a tag, a link or a new section.
"""
from __future__ import annotations

import html as _html
import re

from jinja2 import Environment, StrictUndefined

from .. import knowledge
from ..templating import template_text
from ..plan import Plan, owner

_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")
_LINE_START = re.compile(r"^([#+\-=>]|\d+[.)])")


def md(text) -> str:
    """One line of inline Markdown showing text literally: no emphasis, link, image, table cell, HTML or
    block construct can start from it."""
    s = " ".join(str(text).split())
    s = _html.escape(s, quote=False)
    s = _MD_SPECIAL.sub(r"\\\1", s)
    return _LINE_START.sub(r"\\\1", s)


def code(text) -> str:
    s = " ".join(str(text).split())
    longest = max((len(m) for m in re.findall(r"`+", s)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if s.startswith("`") or s.endswith("`") or not s.strip() else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def fence(lines, lang: str = "") -> str:
    body = "\n".join(lines) if isinstance(lines, (list, tuple)) else str(lines).rstrip("\n")
    longest = max((len(m) for m in re.findall(r"`{3,}|~{3,}", body)), default=0)
    f = "`" * max(3, longest + 1)
    return f"{f}{lang}\n{body}\n{f}"


def html(text) -> str:
    return _html.escape(" ".join(str(text).split()), quote=True)


def _env() -> Environment:
    env = Environment(trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True, undefined=StrictUndefined,
                      autoescape=False)
    env.filters.update(md=md, code=code, fence=fence, html=html)
    return env


def render(plan: Plan) -> str:
    src = template_text("runbook.md.j2")
    hop = plan.key or f"{plan.hop_from}->{plan.hop_to}"
    hop_phases = plan.phases
    table = knowledge.load("runbook")
    multi = len(plan.roots) > 1
    roots = [r.path for r in plan.roots] or ["."]
    sections = []
    number = 0
    for root in (roots if multi else [None]):
        phases = []
        for ph in hop_phases:
            name = ph["name"]
            steps = []
            for s in plan.steps:
                if s.phase == name and (root is None or s.root == root):
                    number += 1
                    steps.append({**s.to_json(), "number": number})
            changes = [c for c in plan.changes if root is None or owner(c.path, roots) == root]
            phases.append({"name": name, "intro": ph.get("intro", ""), "steps": steps,
                           "changes": [{"path": c.path, "action": c.action, "diff": c.diff}
                                       for c in changes] if plan.phase == name else []})
        status = next((f"{r.state}; next: {r.next}" for r in plan.roots if r.path == root), "")
        sections.append({"root": root, "status": status, "h": "###" if multi else "##",
                         "phases": phases if plan.steps else []})
    # node-rolling strategies belong to the hop that replaces every node (v1alpha5 -> v1beta1)
    strategies = [{**st, "recommended": st["id"] == "taint-drift"} for st in table.get("strategies", [])
                  if hop in st.get("hops", [hop])]
    ctx = {
        "plan": plan,
        "root": plan.root.name,
        "roots": [r.__dict__ for r in plan.roots],
        "blocking": [f for f in plan.findings if f.severity in ("error", "warning")],
        "sections": sections,
        "strategies": strategies,
        "later": plan.later,
        "drift": knowledge.load("drift").get(hop, []),
    }
    out = _env().from_string(src).render(**ctx)
    return re.sub(r"\n{3,}", "\n\n", out)
