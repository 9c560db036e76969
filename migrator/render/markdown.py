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
from ..plan import Plan

_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")
# what starts a block at the beginning of a line (CommonMark): an ATX heading, a bullet, a thematic break or setext
# underline, a blockquote; an ordered-list marker is `1.` / `1)` followed by a space (its punctuation is escaped)
_LINE_START = re.compile(r"^(#{1,6}(?=\s|$)|[+\-](?=\s|$)|[-=](?=[-=\s]*$)|>)")
_ORDERED = re.compile(r"^(\d{1,9})([.)])(?=\s|$)")


def md(text) -> str:
    """One line of inline Markdown showing text literally: no emphasis, link, image, table cell, HTML or
    block construct can start from it."""
    s = " ".join(str(text).split())
    s = _html.escape(s, quote=False)
    s = _MD_SPECIAL.sub(r"\\\1", s)
    s = _ORDERED.sub(r"\1\\\2", s)
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


ORDER_NOTE = ("Cluster roots are listed in the order to roll them out: development first, then staging, then the "
              "roots whose path names no environment, production last (from the words in each root's path). Each "
              "change is then seen on a less critical cluster before it reaches production. Each root moves at its "
              "own pace: finish a phase on one root, check it, then move the next root.")


def _section(plan: Plan, r, multi: bool, number: int) -> tuple[dict, int]:
    phases = []
    for ph in r.phases:
        name = ph["name"]
        steps = []
        for s in r.steps:
            if s.phase == name:
                number += 1
                steps.append({**s.to_json(), "number": number})
        changes = [c for c in plan.changes if c.path in r.changes] if r.phase == name else []
        phases.append({"name": name, "intro": ph.get("intro", ""), "steps": steps,
                       "changes": [{"path": c.path, "action": c.action, "diff": c.diff} for c in changes],
                       "planned": r.phase == name, "written": name in r.written})
    now = f"planned now: {r.hop_from} → {r.hop_to}, phase {r.phase}" if r.phase else \
        "nothing planned now" if r.hop is None else f"{r.hop_from} → {r.hop_to} (its next phase is not in this run)"
    status = f"{r.state}; {now}" + (f"; after it: {r.next}" if r.phase else "")
    summary = (f"{r.hop_from} → {r.hop_to}, phase {r.phase}" if r.phase else "nothing planned now") + \
        (f", {len(r.changes)} file(s)" if r.changes else "")
    return {"root": r.path if multi else None, "tier": r.tier, "status": status, "h": "###" if multi else "##",
            "summary": summary,
            "phases": phases if r.steps else [], "later": r.later, "held": r.held}, number


def render(plan: Plan) -> str:
    src = template_text("runbook.md.j2")
    table = knowledge.load("runbook")
    multi = len(plan.roots) > 1
    sections = []
    number = 0
    for r in (plan.roots if multi else plan.roots[:1]):
        section, number = _section(plan, r, multi, number)
        sections.append(section)
    keys = list(dict.fromkeys(r.key for r in plan.roots if r.key))
    # node-rolling strategies belong to the hop that replaces every node (v1alpha5 -> v1beta1)
    strategies = [{**st, "recommended": st["id"] == "taint-drift"} for st in table.get("strategies", [])
                  if any(k in st.get("hops", [k]) for k in keys)]
    drift = knowledge.load("drift")
    if plan.uniform:
        title = f"{plan.hop_from} → {plan.hop_to}"
    elif plan.active:
        title = f"{len(plan.roots)} cluster roots, each at its own step"
    else:
        title = "nothing to migrate"
    ctx = {
        "plan": plan,
        "title": title,
        "root": plan.root.name,
        "roots": plan.roots,
        "multi": multi,
        "order_note": ORDER_NOTE,
        "blocking": [f for f in plan.findings if f.severity in ("error", "warning")],
        "sections": sections,
        "strategies": strategies,
        "later": plan.roots[0].later if len(plan.roots) == 1 else [],
        "drift": [{"key": k, "rows": drift.get(k, [])} for k in keys if drift.get(k)],
    }
    out = _env().from_string(src).render(**ctx)
    return re.sub(r"\n{3,}", "\n\n", out)


COMMENT_LIMIT = 65_536          # GitHub's limit for one issue or pull-request comment, in characters


def comment(plan: Plan, limit: int = COMMENT_LIMIT, link: str | None = None, reserve: int = 200) -> str:
    """The runbook as one pull-request comment: whole when it fits GitHub's limit (with `reserve` characters left for
    the caller's marker); else its summary (where each root stands, what to resolve first) and where the full
    runbook is (`link`: the job summary or an artifact)."""
    full = render(plan)
    budget = limit - reserve
    if len(full) <= budget:
        return full
    cut = [i for i in (full.find("\n<details><summary>Cluster root"), full.find("\n## Phase ")) if i > 0]
    head = full[:min(cut)] if cut else full
    where = f"[the full runbook]({link})" if link else "the full runbook (this run's job summary, or `migrator runbook`)"
    note = (f"\n\n---\n\nThe runbook is {len(full):,} characters, over the {limit:,} a comment can hold: the steps of "
            f"each cluster root are in {where}.\n")
    if len(head) + len(note) > budget:          # the summary alone is too long: whole lines, then the note
        head = head[:budget - len(note) - 80]
        head = head[:head.rfind("\n")] + "\n\n(cut here: the rest of the summary is in the full runbook)"
    return head.rstrip("\n") + note
