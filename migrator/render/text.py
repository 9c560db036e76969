"""Terminal output: summary table, findings with file:line, coloured unified diffs."""
from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ..plan import Plan

_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def _diff_text(diff: str) -> Text:
    out = Text()
    for line in diff.splitlines(keepends=True):
        if line.startswith(("+++", "---")):
            out.append(line, style="bold")
        elif line.startswith("@@"):
            out.append(line, style="cyan")
        elif line.startswith("+"):
            out.append(line, style="green")
        elif line.startswith("-"):
            out.append(line, style="red")
        else:
            out.append(line)
    return out


def status_table(plan: Plan) -> Table:
    """Where each cluster root stands and what this run plans for it."""
    table = Table(title="Cluster roots", show_header=True)
    for col in ("root", "objects", "era", "chart", "planned now", "then"):
        table.add_column(col)
    for r in plan.roots:
        now = f"{r.hop_from} -> {r.hop_to}, phase {r.phase}" if r.phase else \
            "nothing" if r.hop is None else f"{r.hop_from} -> {r.hop_to} (not in this run)"
        era = "Cluster Autoscaler" if r.era == "cas" else r.era
        table.add_row(escape(r.path), escape(r.objects), era, escape(r.chart or "?"), escape(now), escape(r.next))
    return table


def render(plan: Plan, console: Console, show_diff: bool = True, quiet: bool = False, command: str = "plan") -> None:
    """The terminal view; `quiet` prints only the error findings and a one-line summary; `command` names the command
    that shows it (plan, apply)."""
    if quiet:
        for f in plan.findings:
            if f.severity == "error" and not f.suppressed:
                where = f"{f.path}:{f.line}" if f.path else "(repository)"
                console.print(f"error {escape(f.code)} {escape(where)}: {escape(f.message)}")
        console.print(f"{escape(plan.heading())}: {len(plan.changes)} file(s) to change")
        return
    heading = plan.heading()
    if plan.uniform:
        heading = f"{plan.hop_from} -> {plan.hop_to}, phase [bold]{plan.phase}[/bold]"
    console.print(f"[bold]migrator {command}[/bold] {escape(str(plan.root))}: {heading if plan.uniform else escape(heading)}")
    console.print(status_table(plan))
    table = Table(title="Summary", show_header=True)
    table.add_column("item")
    table.add_column("count", justify="right")
    for k, v in sorted(plan.era_summary.items()):
        table.add_row(escape(k), str(v))
    for sev in ("error", "warning", "info"):
        table.add_row(f"findings ({sev})", str(sum(1 for f in plan.findings if f.severity == sev)))
    for action in ("create", "modify", "delete"):
        table.add_row(f"files to {action}", str(sum(1 for c in plan.changes if c.action == action)))
    console.print(table)
    if plan.findings:
        console.print("[bold]Findings[/bold]")
        for f in plan.findings:
            where = f"{f.path}:{f.line}" if f.path else "(repository)"
            if f.suppressed:
                console.print(f"  [dim]suppressed {escape(f.code)} {escape(where)} ({escape(f.suppressed)})[/dim]")
                continue
            console.print(f"  [{_STYLE[f.severity]}]{f.severity:7}[/] {escape(f.code)} {escape(where)}: "
                          f"{escape(f.message)}")
            if f.manual_step:
                console.print(f"          [dim]-> {escape(f.manual_step)}[/dim]")
    if show_diff and plan.changes:
        console.print("[bold]Changes[/bold]")
        for c in plan.changes:
            console.print(f"[bold]{c.action}[/bold] {escape(c.path)}  [dim]({', '.join(c.rules)})[/dim]")
            console.print(_diff_text(c.diff), end="")
    if plan.steps:
        console.print("[bold]Runbook[/bold] (migrator runbook for the full document)")
        for i, s in enumerate(plan.steps, 1):
            console.print(f"  {i:2}. [{s.phase}/{s.kind}] {escape(s.title)}")
