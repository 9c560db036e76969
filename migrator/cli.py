"""Command-line interface: `migrator plan`, `migrator apply` (the public contract, see docs/cli.md)."""
from __future__ import annotations

import os
import sys
from enum import Enum
from pathlib import Path
from typing import Optional

import typer

from .options import Options


def Console(*args, **kwargs):       # noqa: N802 - rich's Console, imported when something is printed through it
    """rich's Console with its emoji codes off: text taken from the repository (`a:warning:b`) is shown as written,
    never turned into an emoji (and rich's table of codes is never loaded)."""
    from rich.console import Console as RichConsole
    kwargs.setdefault("emoji", False)
    return RichConsole(*args, **kwargs)

# parsers, schemas and Jinja2 load only when a command needs them (`--help` and `explain` stay fast)

# A usage error (an unknown option, `--format xml`) exits 1, as docs/cli.md says: click's own code for it is 2, the code
# `--detailed-exitcode` gives pending changes, so CI testing `$? -eq 2` would pass on a typo.
def _usage_errors_exit_1() -> None:
    import importlib
    for name in ("typer._click.exceptions", "click.exceptions"):     # typer 0.28 vendors click; before, click itself
        try:
            importlib.import_module(name).UsageError.exit_code = 1
        except (ImportError, AttributeError):
            pass


_usage_errors_exit_1()

app = typer.Typer(no_args_is_help=True, pretty_exceptions_enable=False, rich_markup_mode=None)


class FailOn(str, Enum):
    error = "error"
    pending = "pending"


class Format(str, Enum):
    text = "text"
    json = "json"
    markdown = "markdown"
    sarif = "sarif"
    github = "github"
    gitlab = "gitlab"
    diff = "diff"
    comment = "comment"


PathArg = typer.Argument(Path("."), help="Repository root (or one file) to migrate.", show_default=True)
SinceOpt = typer.Option(None, "--since", help="A git ref (the base branch of a pull request): each cluster root "
                        "stands where its files say at that ref, and moves to the version its files say now (--to "
                        "overrides): the companion edits of every minor crossed are planned, the bumped versions kept.")
ToOpt = typer.Option(None, "--to", help="Where to go: v1beta1, v1, a Karpenter version (1.8, 1.8.3), latest, or "
                                         "auto-mode (EKS Auto Mode, from Karpenter 1.x or Cluster Autoscaler); "
                                         "default: each root's next hop after its era. One hop per root per run.")
PhaseOpt = typer.Option(None, "--phase", help="Plan this phase in the roots whose hop has it (v1alpha5->v1beta1: "
                                              "prepare, cleanup; v1beta1->v1: patch-upgrade, controller, manifests, "
                                              "webhooks-off; 1.x: upgrade); default: each root's next phase with work.")
KeepDefaults = typer.Option(False, "--keep-alpha-defaults",
                            help="Add the requirements the alpha webhook defaulted (os, arch, capacity-type, "
                                 "instance category/generation) to new NodePools.")
NodeRole = typer.Option(None, "--node-role", help="Node IAM role name for EC2NodeClass.spec.role when the "
                                                  "repository does not say it.")
SelectOpt = typer.Option(None, "--select", help="Report only these finding codes or prefixes (repeatable, or "
                                                "comma-separated), e.g. MIG-V1.")
IgnoreOpt = typer.Option(None, "--ignore", help="Do not report these finding codes or prefixes (repeatable, or "
                                                "comma-separated).")
QuietOpt = typer.Option(False, "--quiet", "-q", help="Print only errors (text output).")
WidthOpt = typer.Option(None, "--width", min=40, help="Columns of the text output (default: the terminal's; when "
                        "the output is not a terminal, a pipe or a CI log, lines are never wrapped).")


def _console(width: Optional[int] = None) -> "Console":
    """The text output: the terminal's width on a terminal; elsewhere (a file, a pipe, a CI log) no line is wrapped
    or cut, so findings and diff lines stay whole and can be searched."""
    if width:
        return Console(width=width)
    if sys.stdout.isatty():
        return Console()
    return Console(width=100_000, soft_wrap=True)
ClusterNameOpt = typer.Option(None, "--cluster-name", help="EKS cluster name for controller policies the repository "
                                                           "does not scope (JSON files outside Terraform).")
RegionOpt = typer.Option(None, "--region", help="AWS region for controller policies the repository does not scope.")
AccountOpt = typer.Option(None, "--account-id", help="AWS account ID for controller policies the repository does not "
                                                     "scope.")
IdentityOpt = typer.Option(None, "--identity", help="The Karpenter controller's AWS identity when the 1.x hop moves "
                                                  "the terraform-aws-modules karpenter module to v21: irsa or "
                                                  "pod-identity. Default: what each root uses today.")
KeepGroupOpt = typer.Option(None, "--node-group-keep", help="Moving from Cluster Autoscaler: the node group that stays "
                                                           "for the Karpenter controller. Default: the on-demand group "
                                                           "without taints that keeps the least capacity running.")
AutoRoleOpt = typer.Option(None, "--auto-mode-node-role", help="Moving to EKS Auto Mode: the node IAM role name the "
                                                                "NodeClasses use, where the repository cannot say it "
                                                                "(its cluster is declared elsewhere).")
WidenOpt = typer.Option(False, "--widen-instance-types", help="Moving from Cluster Autoscaler: NodePools require the "
                                                              "node groups' instance families and sizes instead of "
                                                              "their exact instance types.")
RootOpt = typer.Option(None, "--root", help="Plan only this cluster root (a path as the status table shows it; "
                                            "repeatable). Default: every root, each at its own step.")


IDENTITIES = ("irsa", "pod-identity")


def _split(values: Optional[list[str]]) -> list[str]:
    return [x.strip() for v in values or [] for x in v.split(",") if x.strip()]


def _version(value: bool) -> None:
    if value:
        from .saved import migrator_version
        v = migrator_version()
        typer.echo(f"migrator {v if v != '0' else '0 (not installed)'}")
        raise typer.Exit(0)


@app.callback()
def _main(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print the version and exit."),
          no_color: bool = typer.Option(False, "--no-color", help="No colours (also: the NO_COLOR variable).")) -> None:
    """Plan and apply Karpenter migrations in a repository, hop by hop: v1alpha5 -> v1beta1 -> v1 -> the newest 1.x.

    Settings come from .migrator.yaml (or [tool.migrator] in pyproject.toml), then MIGRATOR_* variables, then flags.
    """
    if no_color:
        os.environ["NO_COLOR"] = "1"


def _settings(path: Path, **flags):
    """Configuration file < environment < flags; a configuration error is a usage error naming the file."""
    from .config import ConfigError, resolve
    try:
        s = resolve(path if path.exists() else Path("."), flags)
    except ConfigError as e:
        from rich.markup import escape
        Console(stderr=True, soft_wrap=True).print(f"[red]error:[/red] {escape(str(e))}")
        raise typer.Exit(1) from None
    return s


def _not_a_source(path: Path, command: str) -> None:
    """A file given as PATH is planned as one source file only when migrator reads its kind; a saved plan is applied,
    never planned; anything else is a usage error (a repository is never read from a stray file)."""
    from . import saved
    from .discover import CANDIDATE_SUFFIXES
    if not path.is_file():
        return
    if saved.is_saved_plan(path):
        why = f"{path} is a saved plan: apply it with `migrator apply {path} --write`"
    elif path.name.endswith(CANDIDATE_SUFFIXES):
        return
    else:
        why = (f"{path} is neither a saved plan (`migrator plan --out FILE`) nor a file migrator reads "
               f"({', '.join(CANDIDATE_SUFFIXES)})")
    Console(stderr=True, soft_wrap=True).print(
        f"[red]error:[/red] {why}; nothing was {'written' if command == 'apply' else 'planned'}", highlight=False)
    raise typer.Exit(1)


class _after_a_second:
    """A spinner on the terminal that appears only once the work has taken a second (a fast plan stays silent)."""

    def __init__(self, console: "Console", what: str, delay: float = 1.0):
        import threading
        self.status = console.status(what)
        self.lock = threading.Lock()
        self.shown = self.done = False
        self.timer = threading.Timer(delay, self._show)
        self.timer.daemon = True

    def _show(self) -> None:
        with self.lock:
            if not self.done:
                self.status.start()
                self.shown = True

    def __enter__(self):
        self.timer.start()
        return self

    def __exit__(self, *exc) -> None:
        self.timer.cancel()
        with self.lock:
            self.done = True
            if self.shown:
                self.status.stop()


def _plan(path: Path, to: Optional[str], phase: Optional[str], keep: bool, role: Optional[str],
          select: Optional[list[str]] = None, ignore: Optional[list[str]] = None, quiet: bool = False,
          roots: Optional[list[str]] = None, identity: Optional[str] = None, facts: Optional[dict] = None):
    from .plan import UsageError, make_plan
    _not_a_source(path, "plan")
    s = _settings(path, to=to, phase=phase, keep_alpha_defaults=keep, node_role=role, select=_split(select),
                  ignore=_split(ignore), identity=identity, **(facts or {}))
    if s.get("identity") not in (None, *IDENTITIES):
        Console(stderr=True).print(f"[red]error:[/red] identity must be one of {', '.join(IDENTITIES)}, "
                                   f"not {s.get('identity')!r}")
        raise typer.Exit(1)
    opts = Options(keep_alpha_defaults=bool(s.get("keep_alpha_defaults")), node_role=s.get("node_role"),
                   node_roles=s.get("node_roles", {}), select=s.get("select", []), ignore=s.get("ignore", []),
                   exclude=s.get("exclude", []), identity=s.get("identity"), cluster_name=s.get("cluster_name"),
                   region=s.get("region"), account_id=s.get("account_id"), roots=s.get("roots", {}),
                   node_group_keep=s.get("node_group_keep"), chart_version=s.get("chart_version"),
                   widen_instance_types=bool(s.get("widen_instance_types")), since=s.get("since"),
                   auto_mode_node_role=s.get("auto_mode_node_role"))
    try:
        err = Console(stderr=True) if sys.stderr.isatty() and not quiet else None
        if err is not None and err.is_terminal:     # progress only for people, never in pipes or CI logs
            with _after_a_second(err, "planning: reading the repository, running the rules, checking the result"):
                p = make_plan(path, to=s.get("to"), phase=s.get("phase"), options=opts, only=roots)
        else:
            p = make_plan(path, to=s.get("to"), phase=s.get("phase"), options=opts, only=roots)
    except UsageError as e:
        Console(stderr=True).print(f"[red]error:[/red] {e}")
        raise typer.Exit(1) from None
    p.docs_url = s.get("docs_url")
    return p


def _render(p, fmt: "Format") -> str:
    if fmt is Format.json:
        from .render import json as r
        return r.render(p)
    if fmt is Format.markdown:
        from .render import markdown as r
        return r.render(p)
    if fmt is Format.sarif:
        from .render import sarif as r
        return r.render(p, getattr(p, "docs_url", None))
    if fmt is Format.gitlab:
        from .render import gitlab as r
        return r.render(p)
    if fmt is Format.diff:
        from .render import diff as r
        return r.render(p)
    if fmt is Format.comment:           # the runbook within GitHub's comment limit (MIGRATOR_RUNBOOK_URL: the full one)
        import os
        from .render import markdown as r
        return r.comment(p, link=os.environ.get("MIGRATOR_RUNBOOK_URL") or None)
    from .render import github as r
    return r.render(p)


def _outputs(p, outs: Optional[list[str]]) -> None:
    """`-o FORMAT=FILE` (repeatable): each format written to its file, beside what is shown on the terminal."""
    from .apply import write_file
    for spec in outs or []:
        fmt, sep, file = spec.partition("=")
        try:
            f = Format(fmt)
        except ValueError:
            f = None
        if not sep or not file or f is None or f is Format.text:
            Console(stderr=True).print(f"[red]error:[/red] -o {spec}: expected FORMAT=FILE with FORMAT one of "
                                       "json, markdown, sarif, github, gitlab, diff, comment")
            raise typer.Exit(1)
        write_file(Path(file), _render(p, f))
        Console(stderr=True).print(f"wrote {f.value} to {file}")


@app.command()
def plan(path: Path = PathArg, to: Optional[str] = ToOpt, phase: Optional[str] = PhaseOpt,
         format: Format = typer.Option(Format.text, "--format",
                                       help="text, json (one JSON object on stdout), markdown (the runbook), sarif "
                                            "(2.1.0), github (workflow annotations), gitlab (code quality report) "
                                            "diff (one patch of every change, for git apply) or comment (the runbook within a "
                                            "pull-request comment's size limit)."),
         output: Optional[list[str]] = typer.Option(None, "-o", "--output",
                                                    help="FORMAT=FILE: also write that format to FILE (repeatable), "
                                                         "e.g. -o sarif=results.sarif -o markdown=RUNBOOK.md."),
         detailed_exitcode: bool = typer.Option(False, "--detailed-exitcode",
                                                help="Exit 0 when nothing changes, 2 when changes are pending, "
                                                     "1 on error."),
         fail_on: Optional[FailOn] = typer.Option(None, "--fail-on",
                                                  help="A check's policy: error (exit 1 on an error finding, else 0, "
                                                       "also while a phase waits for nodes to roll) or pending (also "
                                                       "exit 2 while changes are pending, as --detailed-exitcode)."),
         keep_alpha_defaults: bool = KeepDefaults, node_role: Optional[str] = NodeRole,
         select: Optional[list[str]] = SelectOpt, ignore: Optional[list[str]] = IgnoreOpt, quiet: bool = QuietOpt,
         root: Optional[list[str]] = RootOpt, identity: Optional[str] = IdentityOpt,
         cluster_name: Optional[str] = ClusterNameOpt, region: Optional[str] = RegionOpt,
         account_id: Optional[str] = AccountOpt,
         node_group_keep: Optional[str] = KeepGroupOpt, widen_instance_types: bool = WidenOpt,
         auto_mode_node_role: Optional[str] = AutoRoleOpt,
         since: Optional[str] = SinceOpt, width: Optional[int] = WidthOpt,
         out: Optional[Path] = typer.Option(None, "-out", "--out",
                                            help="Save the plan (changes + SHA-256 of every input) for "
                                                 "`migrator apply FILE --write`.")) -> None:
    """Show what must change: findings, a diff of every file, and the ordered runbook."""
    p = _plan(path, to, phase, keep_alpha_defaults, node_role, select, ignore, quiet, root, identity,
              dict(cluster_name=cluster_name, region=region, account_id=account_id, node_group_keep=node_group_keep,
                   auto_mode_node_role=auto_mode_node_role, widen_instance_types=widen_instance_types or None, since=since))
    if out is not None:
        from . import saved
        from .apply import write_file
        write_file(out, saved.dump(p, p.inputs))
        Console(stderr=True).print(f"saved the plan to {out}; apply it with: migrator apply {out} --write")
    _outputs(p, output)
    if format is Format.text:
        from .render import text as text_render
        text_render.render(p, _console(width), quiet=quiet)
    else:
        sys.stdout.write(_render(p, format))
    raise typer.Exit(_exit_code(p, detailed_exitcode if fail_on is None else fail_on is FailOn.pending))


@app.command()
def apply(path: Path = PathArg, to: Optional[str] = ToOpt, phase: Optional[str] = PhaseOpt,
          write: bool = typer.Option(False, "--write", help="Write the changes (otherwise only show the diff)."),
          backup: bool = typer.Option(False, "--backup", help="Keep a <file>.orig copy of every file changed."),
          keep_alpha_defaults: bool = KeepDefaults, node_role: Optional[str] = NodeRole,
          select: Optional[list[str]] = SelectOpt, ignore: Optional[list[str]] = IgnoreOpt,
          quiet: bool = QuietOpt, root: Optional[list[str]] = RootOpt,
          identity: Optional[str] = IdentityOpt, cluster_name: Optional[str] = ClusterNameOpt,
          region: Optional[str] = RegionOpt, account_id: Optional[str] = AccountOpt,
         node_group_keep: Optional[str] = KeepGroupOpt, widen_instance_types: bool = WidenOpt,
         auto_mode_node_role: Optional[str] = AutoRoleOpt,
         since: Optional[str] = SinceOpt, width: Optional[int] = WidthOpt) -> None:
    """Write the patched files (with --write); without --write only show the diff. PATH may be a plan saved
    with `plan --out FILE`: its changes are written only if no input changed since."""
    from . import saved
    from .apply import ApplyError, apply_changes
    from .render import text as text_render
    if saved.is_saved_plan(path):
        _apply_saved(path, write, backup)
        return
    _not_a_source(path, "apply")
    p = _plan(path, to, phase, keep_alpha_defaults, node_role, select, ignore, quiet, root, identity,
              dict(cluster_name=cluster_name, region=region, account_id=account_id, node_group_keep=node_group_keep,
                   auto_mode_node_role=auto_mode_node_role, widen_instance_types=widen_instance_types or None, since=since))
    console = _console(width)
    text_render.render(p, console, quiet=quiet, command="apply")
    if not write:
        if p.changes:
            console.print("[dim]dry run: nothing written (add --write)[/dim]")
        raise typer.Exit(1 if p.has_errors else 0)
    try:
        written = apply_changes(p.root, p.changes, backup=backup)
    except (ApplyError, OSError) as e:
        Console(stderr=True).print(f"[red]error:[/red] {e}; nothing was written")
        raise typer.Exit(1) from None
    from .apply import done
    for line in done(p.changes, written):
        console.print(line, markup=False, highlight=False)
    raise typer.Exit(1 if p.has_errors else 0)


def _apply_saved(path: Path, write: bool, backup: bool) -> None:
    from . import saved
    from .apply import ApplyError, apply_changes
    console = Console()
    try:
        root, changes, doc = saved.load(path)
        console.print(f"saved plan {path}: {len(changes)} file(s)", markup=False, highlight=False)
        for line in saved.describe(doc):
            console.print(f"  {line}", markup=False, highlight=False)
        for c in changes:
            console.print(c.diff, markup=False, highlight=False)
        if not write:
            console.print("[dim]dry run: nothing written (add --write)[/dim]")
            raise typer.Exit(0)
        written = apply_changes(root, changes, backup=backup)
    except (ApplyError, OSError, ValueError, KeyError) as e:
        Console(stderr=True).print(f"[red]error:[/red] {e}; nothing was written")
        raise typer.Exit(1) from None
    from .apply import done
    for line in done(changes, written):
        console.print(line, markup=False, highlight=False)
    raise typer.Exit(1 if doc.get("errors") else 0)


@app.command()
def runbook(path: Path = PathArg, to: Optional[str] = ToOpt, phase: Optional[str] = PhaseOpt,
            output: Optional[Path] = typer.Option(None, "-o", "--output", help="Write the Markdown to this file."),
            keep_alpha_defaults: bool = KeepDefaults, node_role: Optional[str] = NodeRole,
            root: Optional[list[str]] = RootOpt, identity: Optional[str] = IdentityOpt,
            cluster_name: Optional[str] = ClusterNameOpt, region: Optional[str] = RegionOpt,
            account_id: Optional[str] = AccountOpt,
         node_group_keep: Optional[str] = KeepGroupOpt, widen_instance_types: bool = WidenOpt,
         auto_mode_node_role: Optional[str] = AutoRoleOpt,
         since: Optional[str] = SinceOpt) -> None:
    """Print the ordered migration runbook as Markdown (paste it into the pull request)."""
    from .render import markdown as markdown_render
    p = _plan(path, to, phase, keep_alpha_defaults, node_role, roots=root, identity=identity,
              facts=dict(cluster_name=cluster_name, region=region, account_id=account_id, node_group_keep=node_group_keep,
                   auto_mode_node_role=auto_mode_node_role, widen_instance_types=widen_instance_types or None, since=since))
    doc = markdown_render.render(p)
    if output is None:
        sys.stdout.write(doc)
    else:
        from .apply import write_file
        write_file(output, doc)
        Console(stderr=True).print(f"wrote {output}")
    raise typer.Exit(1 if p.has_errors else 0)


@app.command()
def rules(format: Format = typer.Option(Format.text, "--format", help="text or json.")) -> None:
    """List every finding code (severity, whether migrator fixes it or it is a manual step) and every rule."""
    from . import knowledge
    from .rules.registry import all_rules
    catalogue = knowledge.load("findings")
    items = [{"code": code, "severity": f["severity"], "title": f["title"],
              "fix": "manual" if f["severity"] in ("error", "warning") else "automatic"}
             for code, f in catalogue.items()]
    rule_docs = [{"rule": name, "summary": (mod.__doc__ or "").strip().splitlines()[0]}
                 for name, (mod, _) in all_rules().items()]
    if format is Format.json:
        import json
        sys.stdout.write(json.dumps({"findings": items, "rules": rule_docs}, indent=2) + "\n")
        raise typer.Exit(0)
    if format is not Format.text:
        Console(stderr=True).print("[red]error:[/red] migrator rules supports --format text or json")
        raise typer.Exit(1)
    console = Console()
    for r in rule_docs:
        console.print(f"[bold]{r['rule']}[/bold]  {r['summary']}", highlight=False)
    for i in items:
        console.print(f"{i['code']:17} {i['severity']:7} {i['fix']:9} {i['title']}", markup=False, highlight=False)
    raise typer.Exit(0)


@app.command()
def explain(what: str = typer.Argument(..., help="A finding code (MIG-NP-005) or a rule name (v1beta1/helm).")) -> None:
    """Explain a finding code or a rule."""
    from . import knowledge
    catalogue = knowledge.load("findings")
    console = Console()
    if what.upper() in catalogue:       # what it means, why it matters, how to fix it, a real before/after
        from .explain import text
        sys.stdout.write(text(what))
        raise typer.Exit(0)
    from .rules.registry import all_rules       # rule docs: imports every hop's rules
    RULES = all_rules()
    if what in RULES:
        console.print(f"[bold]{what}[/bold]\n{(RULES[what][0].__doc__ or '').strip()}")
        raise typer.Exit(0)
    Console(stderr=True).print(f"[red]error:[/red] unknown finding code or rule {what!r}; rules: {', '.join(RULES)}")
    raise typer.Exit(1)


def _exit_code(p, detailed: bool) -> int:
    if p.has_errors:
        return 1
    if detailed and p.changes:
        return 2
    return 0


def _quiet_collector() -> None:
    """One short process builds many small objects and few cycles: the cyclic collector's default (a young
    collection every 700 allocations) spent 0.05-0.14 s of a large plan walking the same live trees, and every
    20,000 still 25-150 ms; collect the young generation once per million new objects (no plan of the real
    repositories or of the 100-root synthetic tree makes that many: none runs; a cycle still holds no more than
    that), and leave what the imports built out of every collection. Peak memory measured the same
    (docs/performance.md)."""
    import gc
    gc.freeze()
    gc.set_threshold(1_000_000, 50, 1_000)


def main() -> None:
    """Entry point: no traceback reaches the user unless --debug is given."""
    debug = "--debug" in sys.argv[1:]
    if debug:
        sys.argv.remove("--debug")
    _quiet_collector()
    try:
        app()
    except Exception as e:  # noqa: BLE001
        if debug:
            raise
        Console(stderr=True).print(f"[red]internal error:[/red] {type(e).__name__}: {e}\n"
                                   "nothing was written; run again with --debug for the traceback and report it")
        sys.exit(1)


def run() -> None:
    """The `migrator` command (and `python -m migrator`): main(), then the process ends at once. Its exit handlers run
    (the evaluator's worker is stopped) and its output is flushed, but the objects a plan built are not torn down one
    by one: on a large repository that took a tenth of a second after the last line was written. Every file is written
    and closed before (migrator/apply.py). In-process callers use main(), which returns or raises as before."""
    import atexit
    try:
        main()
        code = 0
    except SystemExit as e:
        code = e.code
    if (code is not None and not isinstance(code, int)) or sys.getprofile() is not None or sys.gettrace() is not None:
        sys.exit(code)                  # a message (Python prints it), or a profiler or tracer that reports at exit
    atexit._run_exitfuncs()
    code = code or 0
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):            # a reader that went away (`| head`): Python's own status then
            code = code or 120
    os._exit(code)


if __name__ == "__main__":
    run()
