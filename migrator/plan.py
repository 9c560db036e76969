"""Orchestration: discover -> inventory -> rules(hop, phase) -> checked plan."""
from __future__ import annotations

import dataclasses
import posixpath
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from . import cloudformation, evaluate, filters, knowledge, scriptrefs
from .discover import Discovery, SourceFile
from .inventory import poolreleases, programpools, programs
from .sources import hcl as hclsrc
from .edits import DeleteFile, EditConflict, FileChange, NewFile, TextEdit, apply_edits_at, coalesced, newline_of
from .placement import realign_edited
from .inventory import Manifest, Repo, scan_charts, scan_manifests, values_of
from .inventory.outside import modules as outside_modules
from .inventory.repo import JSON_TFVARS
from .rendered import helm_values as rendered_values
from .rendered import scan as scan_rendered
from .rendered import version as rendered_version
from .model import Finding, Step
from . import path as route   # the whole v1alpha5 -> 1.x path
from .path import hop_key
from .options import Options
from . import standing
from .roots import SKIP_KINDS, Fleet, inside, rollout_key, tier_of
from .rules import registry
from .validate import reparse, unbalanced_actions

HOPS = knowledge.load("hops")
ERAS = route.ERAS
DONE = float("inf")
# alpha kind -> the beta kind that succeeds it (knowledge/v1beta1.yaml `kinds`), for where a root stands
SUCCESSOR = {k: v["to"]["kind"] for k, v in knowledge.load("v1beta1")["kinds"].items() if k != "Machine"}


class UsageError(ValueError):
    """Bad command-line input (exit code 1, message on stderr)."""


@dataclass
class RootPlan:
    """One cluster root's plan: where it stands, the hop and phase planned for it now, and what comes after."""
    path: str
    objects: str                                        # "2 Provisioner, 1 AWSNodeTemplate", or "none"
    era: str                                            # the API era it stands in (its objects and chart decide)
    chart: str | None                                   # the controller chart version it pins, when static
    state: str                                          # where it stands, in words
    next: str = ""                                      # what comes after the phase planned now
    hop: dict | None = None                             # the planned hop (knowledge/hops.yaml row); None: done
    hop_from: str = ""
    hop_to: str = ""
    phase: str = ""                                     # "" when nothing is planned for it in this run
    phases: list[dict] = field(default_factory=list)    # its hop's phases (name, intro), in order
    key: str = ""                                       # its hop's key in the knowledge tables (runbook, drift)
    later: list[str] = field(default_factory=list)      # the hops after this one, for the next runs
    findings: list[Finding] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    changes: list[str] = field(default_factory=list)    # paths of the repository's changes made for this root
    held: list[str] = field(default_factory=list)       # shared files whose changes wait for an earlier root
    tier: str = ""                                      # rollout tier from its path (development ... production)
    rank: tuple = (DONE,)                               # its position on the path; shared files move with the least
    edits: list = field(default_factory=list, repr=False)
    only: frozenset | None = None                       # objects behind their chart: the object rules planned
    written: list[str] = field(default_factory=list)    # the hop's phases before its next one: nothing left of them

    def to_json(self) -> dict:
        return {"path": self.path, "objects": self.objects, "era": self.era, "chart": self.chart,
                "tier": self.tier, "state": self.state,
                "hop": {"from": self.hop_from, "to": self.hop_to} if self.hop else None,
                "phase": self.phase, "next": self.next, "later": self.later,
                "changes": self.changes, "held": self.held, "steps": [s.id for s in self.steps],
                "findings": [f.to_json() for f in self.findings]}


@dataclass
class Plan:
    """The repository plan: every selected cluster root's plan, and the changes, findings and steps they make."""
    root: Path
    findings: list[Finding] = field(default_factory=list)
    changes: list[FileChange] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    era_summary: dict[str, int] = field(default_factory=dict)
    roots: list[RootPlan] = field(default_factory=list)
    all_roots: list[str] = field(default_factory=list)      # every cluster root of the repository (for --root)
    every: list[RootPlan] = field(default_factory=list, repr=False)   # every root's plan, selected or not
    inputs: dict[str, str] = field(default_factory=dict)   # every file read: path -> text (saved plans)
    docs_url: str | None = None                         # where the docs site is published (SARIF help links)
    objects: list = field(default_factory=list, repr=False)    # the Karpenter objects its pass read

    @property
    def has_errors(self) -> bool:
        return any(f.severity == "error" and not f.suppressed for f in self.findings)

    @property
    def active(self) -> list[RootPlan]:
        """The roots with a hop planned in this run (a root already at the target has none)."""
        return [r for r in self.roots if r.hop is not None]

    def _shared(self, attr: str, empty):
        values = [getattr(r, attr) for r in self.active]
        if values and all(v == values[0] for v in values):
            return values[0]
        return empty

    @property
    def uniform(self) -> bool:
        """Every selected root that has a hop planned stands on the same hop and phase."""
        return len({(r.key, r.hop_to, r.phase) for r in self.active}) == 1

    # the top-level hop and phase: set only when every selected root shares them (docs/cli.md)
    hop = property(lambda self: self._shared("hop", None) if self.uniform else None)
    hop_from = property(lambda self: self._shared("hop_from", "") if self.uniform else "")
    hop_to = property(lambda self: self._shared("hop_to", "") if self.uniform else "")
    phase = property(lambda self: self._shared("phase", "") if self.uniform else "")
    key = property(lambda self: self._shared("key", "") if self.uniform else "")
    phases = property(lambda self: self._shared("phases", []) if self.uniform else [])
    later = property(lambda self: self._shared("later", []) if self.uniform else [])

    def heading(self) -> str:
        """One line: the shared hop and phase, or how many roots stand at how many steps."""
        if not self.active:
            return "nothing to migrate"
        if self.uniform:
            return f"{self.hop_from} -> {self.hop_to}, phase {self.phase}"
        steps = {(r.key, r.phase) for r in self.active}
        return f"{len(self.active)} cluster roots at {len(steps)} different step{'s' if len(steps) > 1 else ''}"


def state_of(ms: list[Manifest]) -> str:
    """Which generations of objects a root holds, in words."""
    if not ms:
        return "no Karpenter objects in this root"
    eras = {m.era for m in ms}
    beta = {(m.kind, m.masked.unmask(str(m.name))) for m in ms if m.era == "beta"}
    pending = [m for m in ms if m.era == "alpha" and m.kind in SUCCESSOR
               and (SUCCESSOR[m.kind], m.masked.unmask(str(m.name))) not in beta]
    if eras == {"alpha"}:
        return "v1alpha5 only"
    if "alpha" in eras and pending:
        return "v1alpha5 and v1beta1 side by side, some objects not converted yet (" + \
            ", ".join(f"{m.kind} {m.masked.unmask(str(m.name))}" for m in pending) + ")"
    if "alpha" in eras:
        return "v1alpha5 and v1beta1 side by side (prepare has landed): roll the nodes onto the NodePools, " \
               "then run the cleanup phase"
    if eras == {"beta"}:
        return "v1beta1 only"
    if "beta" in eras:
        return "v1beta1 and v1 objects"
    return "v1"


def _objects(ms: list[Manifest]) -> str:
    counts: dict[str, int] = {}
    for m in ms:
        counts[m.kind] = counts.get(m.kind, 0) + 1
    return ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "none"


def _contexts(repo: Repo, fleet: Fleet, manifests: list[Manifest], charts: list, options: Options,
              target: route.Target | None, only: set[str] | None = None,
              earlier: list | None = None) -> list[tuple[str, registry.Context]]:
    """One rule run per cluster root: each cluster resolves its own role, chart, policy and runbook."""
    out = []
    rendered = rendered_values(repo)
    for key, named in (("roots", options.roots), ("node_roles", options.node_roles)):
        for r in sorted(set(named) - set(fleet.roots)):
            said = repo.__dict__.setdefault("_unknown_roots_said", set())
            if (key, r) not in said:
                said.add((key, r))
                repo.findings.append(Finding(
                    "MIG-CFG-001", "warning", "", 0,
                    f"the configuration's {key} names {r!r}, which is not a cluster root: its facts are not used",
                    f"name one of the cluster roots: {', '.join(fleet.roots)}"))
    # what each root owns, found once: a file's users are the roots that own it (Fleet.owns), in the files' order
    by_root: dict[str, tuple[list, list, list]] = {}
    for i, (items, where) in enumerate(((charts, lambda c: c.path), (manifests, lambda m: m.tf_path or m.path),
                                        (rendered, lambda v: v.path))):
        for x in items:
            for u in fleet.users(where(x)):
                by_root.setdefault(u, ([], [], []))[i].append(x)
    for r in fleet.planned:
        if only is not None and r not in only:
            continue
        def owns(p: str, r: str = r) -> bool:
            return fleet.owns(r, p)
        mine, own_manifests, own_rendered = by_root.get(r, ([], [], []))
        opts = options if r not in options.node_roles else dataclasses.replace(options, node_role=options.node_roles[r])
        if r in options.roots:          # .migrator.yaml roots: this cluster's own facts
            opts = dataclasses.replace(opts, **{k: v for k, v in options.roots[r].items() if v})
        base = fleet.base(r)
        ctx = registry.Context(repo=repo.without(fleet.others(r)) if r != base else repo,
                               manifests=list(own_manifests),
                               helm_values=values_of(mine) + list(own_rendered),
                               options=opts, charts=mine, owns=owns, root=base,
                               stages=tuple(sorted(s for s, x in fleet.stages.items() if x == base)),
                               var_file=r if r != base else "", environments=tuple(fleet.split.get(base, ())))
        ctx.target = target
        ctx.all_manifests = manifests
        ctx.users = fleet.users
        ctx.earlier = earlier or []
        # a chart rendered with helm template pins its version in its labels
        ctx.chart_version = route.chart_version(repo, mine, owns) or rendered_version(repo, owns)
        if ctx.chart_version is None:   # the CRD chart moves in lockstep with the controller: its version stands in
            ctx.chart_version = route.chart_version(repo, mine, owns, chart="karpenter-crd")
        if ctx.chart_version is None and opts.chart_version:     # stated by the user: set outside the repository
            ctx.chart_version = str(opts.chart_version).lstrip("v")
            ctx.stated_chart = True
        if options.since_charts:            # --since: it stands where its files said at the ref
            _since(ctx, r, options.since_charts)
        out.append((r, ctx))
    return out


def _has_work(hop: dict, ctx: registry.Context, phases: list[str]) -> bool:
    return any(registry.has_work(ctx.result(hop, p)) for p in phases)


def _has_errors(hop: dict, ctx: registry.Context, phases: list[str]) -> bool:
    """An error a rule of the hop's phases says: the hop cannot be passed over as having nothing to do (an install
    that cannot carry the controller through it, MIG-HELM-027)."""
    return any(f.severity == "error" for p in phases for r in ctx.result(hop, p).values()
               for f in getattr(r, "findings", []))


def _at_goal(ctx: registry.Context, st: standing.Standing, goal) -> bool:
    """Do the controller chart and the karpenter-crd chart this root installs both stand at the target's version (the
    CRDs too: the controller chart never upgrades the CRDs it once installed, so without a karpenter-crd install at the
    target they may lag)? Where CRD URLs own the CRDs instead of a karpenter-crd chart, each must name the target's
    release or a later one."""
    want = route.parse_version(goal.chart) if goal.chart else None
    if want is None or not st.chart or route.parse_version(st.chart) is None or route.parse_version(st.chart) < want:
        return False
    crd = route.chart_version(ctx.repo, ctx.charts, ctx.owns, chart="karpenter-crd")
    if crd is not None:
        return route.parse_version(crd) is not None and route.parse_version(crd) >= want
    # CRDs fetched by URL (crdurls.py) own them instead: at the target when every one names a release at or past it
    from .crdurls import crd_urls
    urls = crd_urls(ctx.repo, ctx.owns)
    if not urls:
        # CRD files kept in the repository are the 1.x hop's own work (stale ones are an edit); with none either,
        # nothing in the files installs them: the run that moved the chart gave the CRD step, and the plan says they
        # are not seen (ctx.crds_unseen, MIG-HOP-001)
        from .crdfiles import vendored
        ctx.crds_unseen = not vendored(ctx.repo, ctx.owns)
        return True
    return all(u.version is not None and route.parse_version(u.version) is not None
               and route.parse_version(u.version) >= want for u in urls)


def make_plan(root: Path, to: str | None = None, phase: str | None = None,
              options: Options | None = None, only: list[str] | None = None) -> Plan:
    """The checked plan: computed, then planned again on the patched files (each root at the same hop and phase),
    which must find nothing more; files a second pass would still change are not written (MIG-EDIT-004).
    `only` selects cluster roots by path (as the status table shows them)."""
    root = Path(root)
    if not root.exists():
        raise UsageError(f"{root}: no such file or directory")
    try:
        target = route.parse_target(to)
    except route.PathError as e:
        raise UsageError(str(e)) from None
    options = options or Options()
    if options.since and not options.since_charts:
        from .since import SinceError, tree_at
        try:
            with tree_at(root, options.since) as old:       # each root's chart version at the ref
                since_charts = {r.path: r.chart for r in make_plan(old, to="latest").every} if old else {}
                since_modules = _module_pins(old) if old else {}
        except SinceError as e:
            raise UsageError(str(e)) from None
        options = dataclasses.replace(options, since_charts={**since_charts, "__target_from_files__": to is None},
                                      since_modules=since_modules)
    repo = Repo(root, exclude=options.exclude)
    plan = _make_plan(repo, target, phase, options, only=only)
    if plan.changes and any(r.phase for r in plan.roots):
        second_pass(repo, plan, target, options, only)
    plan.inputs = {p: f.text for p, f in repo.files.items()}
    plan.findings = filters.select(filters.suppress(plan.findings, plan.inputs), options.select, options.ignore)
    kept = {_key(f): f for f in plan.findings}           # suppressed or filtered out: the same in every root
    for r in plan.roots:
        r.findings = [kept[_key(f)] for f in r.findings if _key(f) in kept]
    return plan


def second_pass(repo: Repo, plan: Plan, target, options: Options, only: list[str] | None) -> None:
    from .links import aliases
    files = dict(repo.files)
    linked: set[str] = set()                # paths that are a changed file through a link: they read the new text
    for c in plan.changes:
        if c.action == "delete":
            files.pop(c.path, None)
        else:
            old = repo.files.get(c.path)
            for p in [c.path] + (aliases(repo.root, repo.files, c.path, repo.discovery.links)
                                 if old is not None and repo.discovery.links else []):
                files[p] = SourceFile(p, repo.root / p, c.new, newline_of(c.new), old.mode if old else 0o644, True)
                linked.add(p)
    patched = Repo(repo.root, Discovery(repo.root, files, [], set(repo.discovery.links)))
    evaluate.share(repo, patched)       # the evaluator reads the files on disk: its answers do not change
    changed = {c.path for c in plan.changes} | linked
    patched.based_on(repo, changed)     # text searches: only the changed files are searched again
    patched._hcl.update({p: f for p, f in repo._hcl.items() if p not in changed})   # unchanged: parsed once
    patched.yaml_docs.update({k: v for k, v in repo.yaml_docs.items() if k[0] not in changed})
    patched.yaml_carried = {(k[0],) + k[2:]: v for k, v in repo.yaml_docs.items() if k[0] in changed}
    texts = [c.new or "" for c in plan.changes] + [repo.files[c.path].text for c in plan.changes if c.path in repo.files]
    patched.__dict__["_kind_docs"] = {k: v for k, v in repo.__dict__.get("_kind_docs", {}).items()
                                      if not any(k[0] in x for x in texts)}     # Argo CD / Flux objects unchanged
    from .inventory.kustomizations import KFILES
    if "_kustomization_values" in repo.__dict__:    # (by text: a changed kustomization is parsed again)
        patched.__dict__["_kustomization_values"] = repo.__dict__["_kustomization_values"]
    kz = repo._kustomizations           # the kustomizations and their patch files: read once when none changed
    if kz is not None and not any(posixpath.basename(p) in KFILES for p in changed) and \
            not any(pt.file in changed for k in kz for pt in k.patches if pt.file):
        patched._kustomizations, patched.patch_paths = kz, repo.patch_paths
        came_or_went = {c.path for c in plan.changes if c.action != "modify"}
        if not any(r in came_or_went for k in kz for r in k.resources):    # what each kustomization builds: the same
            patched._kustomize_includes = repo._kustomize_includes          # (no file it lists added or deleted)
    # only the roots whose files changed are planned again (the others would find what they found); every root keeps
    # its step, so a shared file held back for an earlier root stays held back
    changed_roots = {r.path for r in plan.every if set(r.changes) & changed}
    fixed = {r.path: (r.hop, r.phase, r.rank, r.only) for r in plan.every
             if r.hop is not None and r.phase and r.path in changed_roots}
    ranks = {r.path: r.rank for r in plan.every}
    try:
        again = _make_plan(patched, target, None, options, fixed=fixed, only=only, ranks=ranks, earlier=plan.objects)
    except UsageError:          # the patched files lay the roots out differently: every root is checked
        again = _make_plan(patched, target, None, options, fixed=fixed, only=None, ranks=ranks, earlier=plan.objects)
    if not again.changes:
        return
    bad = {c.path: c.rules for c in again.changes}
    plan.changes = [c for c in plan.changes if c.path not in bad]
    for r in plan.roots:
        r.changes = [p for p in r.changes if p not in bad]
    for p_, rules in sorted(bad.items()):
        f = Finding("MIG-EDIT-004", "error", p_, 0,
                    f"a second pass over the patched files would change {p_} again (rules "
                    f"{', '.join(rules)} did not converge); it is not written",
                    "report this as a bug with the files involved")
        plan.findings.append(f)
        for r in plan.roots:
            if any(p_ in x.changes for x in again.every if x.path == r.path):
                r.findings.append(f)
    plan.findings.sort(key=_finding_order)


def _finding_order(f: Finding):
    return ({"error": 0, "warning": 1, "info": 2}[f.severity], f.path, f.line, f.code)


def _module_pins(tree: Path) -> dict:
    """(file, address) -> the version each terraform-aws-modules karpenter module call pinned (--since: a bump of
    the module itself is a release the bump chose, checked as one the plan moves to)."""
    from .modmajor import is_karpenter_module
    out = {}
    for p, b in Repo(tree).blocks("module", None, "karpenter"):
        src, v = b.attr("source"), b.attr("version")
        if src is not None and v is not None and is_karpenter_module(src.literal()):
            out[f"{p}|{b.address}"] = str(v.literal())
    return out


def _modules_moved(ctx: registry.Context) -> bool:
    """--since: does the change move a terraform-aws-modules karpenter module call of this root (its version, or a
    call the ref did not have)?"""
    from .modmajor import is_karpenter_module
    pins = getattr(ctx.options, "since_modules", None) or {}
    for p, b in ctx.repo.blocks("module", None, "karpenter"):
        src, v = b.attr("source"), b.attr("version")
        if src is None or v is None or not is_karpenter_module(src.literal()) or not ctx.owns(p):
            continue
        if pins.get(f"{p}|{b.address}") != str(v.literal()):
            return True
    return False


def _since(ctx: registry.Context, r: str, charts: dict) -> None:
    """--since: a root whose files bumped the chart inside 1.x stands at the ref's version and goes to the bumped one
    (its companion edits are planned, the bumped version kept); a bump across the v1 migration is said."""
    old, new = charts.get(r), ctx.chart_version
    ctx.since = None
    ctx.untouched = None
    mode = "bump" if charts.get("__target_from_files__") else "to"
    if mode == "bump" and r in charts and old and new and old == new and route.parse_version(new) is not None \
            and not _modules_moved(ctx):
        ctx.untouched = new                 # the change moves neither its chart nor its module: listed, not planned
        return
    if not new or route.parse_version(new) is None:
        return                              # no version stated: planned from its files
    if r not in charts or not old or route.parse_version(old) is None or \
            route.parse_version(old) >= route.parse_version(new):
        # not bumped (or new since the ref): it stays where its files say; only what that version needs is checked
        ctx.since = (new, new, mode) if mode == "bump" and route.parse_version(new) >= (1, 0) else None
        return
    if route.parse_version(old) < (1, 0) <= route.parse_version(new):
        ctx.since = (old, new, "crosses")
        return
    ctx.chart_version = old
    ctx.since = (old, new, mode)


def _standing_of(ctx):
    """Where a root stands from its objects and chart: (its Auto Mode objects, its other Karpenter objects, its chart
    installs, the objects its shell scripts apply, the standing, and the leftovers older than anything the chart serves
    beside objects it does serve: files nothing can apply any more, dropped from the root's manifests)."""
    auto = [m for m in ctx.manifests if standing.auto_mode(m)]
    ms = [m for m in ctx.manifests if m.kind not in SKIP_KINDS and m not in auto]
    installs = [c for c in ctx.charts if c.chart in ("karpenter", "karpenter-crd")]
    from .inventory import shellobjects, valueobjects
    shell = [o for o in shellobjects.scan(ctx.repo) if ctx.owns(o.path)]    # said, never edited: they still count
    shell += [o for o in valueobjects.scan(ctx.repo) if ctx.owns(o.path)]   # so do objects a raw chart is given
    shell += [o for o in valueobjects.rendered(ctx.repo) if ctx.owns(o.path)]   # and a local_file's template holds
    auto += [o for o in shell if o.auto_mode]       # Auto Mode's own pools, wherever they are written
    shell = [o for o in shell if not o.auto_mode]
    majors = _module_majors(ctx)
    st = standing.of(route.objects_era([m for m in ctx.manifests if m not in auto] + shell), ctx.chart_version, majors)
    stale = standing.leftovers(ms + shell, st)
    if not stale and not st.serves and ctx.chart_version is None:     # no chart: what the newest objects' one serves
        stale = standing.unservable(ms + shell)
    stale_shell = [o for o in shell if o in stale]      # an old script's Provisioner beside the NodePools: a leftover
    stale = [m for m in stale if m not in stale_shell]
    shell = [o for o in shell if o not in stale_shell]
    if stale or stale_shell:    # beside objects the chart serves: files nothing can apply any more, not the standing
        ctx.manifests = [m for m in ctx.manifests if m not in stale]
        ms = [m for m in ms if m not in stale]
        st = standing.of(route.objects_era([m for m in ctx.manifests if m not in auto] + shell), ctx.chart_version,
                         majors)
    return auto, ms, installs, shell, st, stale, stale_shell


def _module_majors(ctx) -> tuple[int, ...]:
    """The majors the root's terraform-aws-modules karpenter module calls pin (a call whose pin is not read: none)."""
    calls = ctx.repo.__dict__.get("_karpenter_module_majors")
    if calls is None:                   # every call of the repository once per run; each root takes its own
        from .modmajor import is_karpenter_module
        from .versions import constraint, pinned
        calls = ctx.repo.__dict__["_karpenter_module_majors"] = [
            (p, constraint(pinned(b))[1]) for p, b in ctx.repo.blocks("module", None, "karpenter")
            if b.attr("source") is not None and is_karpenter_module(b.attr("source").literal())]
    mine = [ver for p, ver in calls if ctx.owns(p)]
    return () if any(v is None for v in mine) else tuple(v[0] for v in mine)


def _since_target(ctx, since, target):
    """--since of a bump: the version the files ask for is the target (a patch never to land on: its minor's newest)."""
    if since and since[2] == "bump":        # --since: the version the files ask for is the target
        try:
            target = route.parse_target(since[1])
        except route.PathError:             # a patch never to land on (knowledge/minors.yaml `skip`): its minor's newest
            minor = ".".join(since[1].split(".")[:2])
            try:
                target = route.parse_target(minor)
            except route.PathError:
                target = route.Target("v1", since[1])
        ctx.target = target
    return target


def _said_since_and_leftovers(rp: RootPlan, ctx, since, stale: list, stale_shell: list, st, note) -> None:
    """What --since found (a bump across the v1 migration, or companion edits of the minors in between), and the
    objects older than anything the chart serves, beside objects it does serve (leftovers, not the standing)."""
    if since and since[2] == "crosses":
        note("MIG-SINCE-001", "error",
             f"the files bump the chart from {since[0]} (at {ctx.options.since}) to {since[1]}, across the v1beta1 -> v1 "
             "migration, which moves in phases (the patch release, the controller, the objects, the webhooks)",
             f"set the chart back to {since[0]} and let migrator plan the hop (without --since); bump past 1.0 when "
             "the objects are v1")
    elif since and since[0] != since[1]:
        note("MIG-SINCE-002", "info",
             f"standing at {ctx.options.since}: chart {since[0]}; the files ask for {since[1]}: the companion edits of "
             f"every minor in between are planned, the bumped version kept")
    served = f"chart {st.chart} serves" if st.chart else \
        f"a chart serving its {st.objects_era} objects serves (no chart version in the files)"
    for o in stale_shell:
        heredoc = hasattr(o, "where")       # a shell heredoc's, else a raw chart's values (inventory/valueobjects.py)
        rp.findings.append(Finding(
            "MIG-STAND-002", "warning", o.path, o.line,
            f"{o.kind} ({o.api_version}), " + (f"applied from a shell heredoc in {o.where}" if heredoc else
                                               f"in what {getattr(o, 'release', '?')} renders")
            + f", is older than anything {served}, beside objects it does serve: a leftover nothing "
            "can apply any more; it does not decide where the root stands and is not converted",
            "delete it from the " + ("script" if heredoc else "values or template") +
            " (or convert it by hand if it is still meant to exist)"))
    for m in stale:
        rp.findings.append(Finding(
            "MIG-STAND-002", "warning", m.path, m.line,
            f"{m.kind} {m.masked.unmask(str(m.name))} ({m.api_version}) is older than anything {served}, "
            "beside objects it does serve: a leftover nothing can apply any more; it does not decide where the root "
            "stands and is not converted",
            "delete it (or convert it by hand if it is still meant to exist)"))


def _finishing(chain: list, era: str, ctx, target, st, multi: bool, r: str, note) -> tuple[list, list | None]:
    """A hop that reached this era may still have phases that only run once its objects are there (webhooks-off),
    while the controller is below the version that closes it: (the chain with it first, its phases still to do), or
    the chain as it was and None (said where it is half-way and no target is named)."""
    finish = None
    for finishing in (h for h in HOPS["hops"] if h["to"] == era and h.get("finish_phases") and h.get("implemented")):
        if finishing.get("requires_target") and (target is None or not registry.present(finishing, ctx)):
            if target is None and registry.present(finishing, ctx) and \
                    standing.finishing_applies(finishing, st.chart) and \
                    _has_work(finishing, ctx, finishing["finish_phases"]):
                # planned only when asked for, like its start: said, so a plain plan never hides a half-done move
                note("MIG-HOP-009", "info",
                     f"{'this root' if multi else 'the repository'} is half-way through {finishing['from']} → "
                     f"{finishing['to']} (Karpenter is in): its {', '.join(finishing['finish_phases'])} phases "
                     "remain, planned when a target is named",
                     "migrator plan <repository> " + (f"--root {shlex.quote(r)} " if multi else "") + "--to latest")
            elif target is None and registry.present(finishing, ctx) and \
                    standing.finishing_applies(finishing, st.chart) and \
                    (left := registry.left_beside(finishing, ctx)) is not None:
                note(left[0], "info", left[1], left[2])
            continue
        if not standing.finishing_applies(finishing, st.chart):
            continue
        # its other phases are behind this root (but those it may rejoin, when they have work)
        rejoin = [p for p, rule in finishing.get("rejoin_phases", {}).items()
                  if getattr(ctx.result(finishing, p).get(rule), "done", True) is False]
        if rejoin or _has_work(finishing, ctx, finishing["finish_phases"]):
            chain = [finishing] + chain
            finish = [p for p in registry.phases(finishing) if p in rejoin or p in finishing["finish_phases"]]
            break
        if (left := registry.left_beside(finishing, ctx)) is not None:
            note(left[0], "info", left[1], left[2])   # still there, with no phase to move it: said

    return chain, finish


def _pruned(chain: list, ctx, st, phase: str | None, goal) -> list:
    """The chain without the hops the chart version alone put a root in (its objects are past them) and nothing to do
    there; off self-managed Karpenter, the onward 1.x hop only for a root below the exit's floor; nothing when both
    charts are at the target and the 1.x hop finds nothing to do or say."""
    while len(chain) > 1 and chain[0].get("implemented") and phase not in registry.phases(chain[0]) and \
            not chain[0].get("requires_target") and \
            (st.objects_era is None or ERAS.index(chain[0]["from"]) < ERAS.index(st.objects_era)) and \
            not _has_work(chain[0], ctx, registry.phases(chain[0])) and \
            not _has_errors(chain[0], ctx, registry.phases(chain[0])):
        chain.pop(0)
    if goal.exit_hop is not None:
        # off self-managed Karpenter: the onward 1.x hop only for a root below the exit's floor (or one whose chart is
        # not known and which still has 1.x work)
        floor = route.parse_version(goal.exit_hop["karpenter_floor"])
        cur = route.parse_version(st.chart) if st.chart else None
        chain = [h for h in chain if not (h.get("onward") and (cur >= floor if cur is not None else
                                                               not _has_work(h, ctx, registry.phases(h))))]
    if len(chain) == 1 and chain[0].get("onward") and chain[0].get("implemented") \
            and not getattr(ctx, "since", None) and _at_goal(ctx, st, goal) \
            and not _has_work(chain[0], ctx, registry.phases(chain[0])):
        # both charts at the target and the 1.x hop finds nothing to write: no phase and no step to follow again;
        # what it still says (a statement to add by hand, a leftover) goes with the root's findings
        ctx.reached_notes = [f for p in registry.phases(chain[0]) for r in ctx.result(chain[0], p).values()
                             for f in getattr(r, "findings", []) if f.severity in ("warning", "error")]
        chain = []
    return chain


def _plan_root(r: str, ctx: registry.Context, target, phase: str | None, fixed: dict | None,
               multi: bool) -> RootPlan:
    """Where one root stands (migrator/standing.py) and the hop and phase planned for it now, with its rules' edits
    and findings."""
    since = getattr(ctx, "since", None)
    target = _since_target(ctx, since, target)
    auto, ms, installs, shell, st, stale, stale_shell = _standing_of(ctx)
    era = st.era
    entry = None                # a root with no Karpenter yet that an entry hop (Cluster Autoscaler) starts from
    if not ms and ctx.chart_version is None and not ctx.charts:
        entry = next(((h, st_) for h in registry.entry_hops() if (st_ := registry.standing(h, ctx))), None)
    if entry is not None:
        era = entry[0]["from"]
    rp = RootPlan(r, _objects(ms + shell), era, ctx.chart_version, state_of(ms), tier=tier_of(r)[1])
    from .inventory import shellobjects, valueobjects
    heredocs = [o for o in shell if isinstance(o, shellobjects.ShellObject)]
    given = [o for o in shell if isinstance(o, valueobjects.ValueObject)]
    files = [o for o in shell if isinstance(o, valueobjects.RenderedObject)]
    releases = [x for x in poolreleases.scan(ctx.repo) if ctx.owns(x.path) and not x.auto_mode]
    said = "; ".join(x for x in (
        f"{len(heredocs)} applied from shell heredocs (not converted: MIG-SRC-019)" if heredocs else "",
        f"pools rendered by {len(releases)} chart release{'s' if len(releases) != 1 else ''} from outside the "
        "repository (not read: MIG-SRC-026)" if releases else "",
        f"{len(given)} passed to a chart in its values (not converted: MIG-SRC-025)" if given else "",
        f"{len(files)} in templates a local_file renders (not converted)" if files else "") if x)
    if said:
        rp.state = said if not ms else f"{rp.state}; {said}"
    who = f"cluster root {r}: " if multi else ""

    def note(code: str, severity: str, message: str, manual: str = "") -> None:
        rp.findings.append(Finding(code, severity, "", 0, who + message, manual))

    rp.findings += shellobjects.said(ctx.repo, heredocs, route.ERAS[-1])
    rp.findings += valueobjects.said(given, route.ERAS[-1])
    rp.findings += poolreleases.said(releases, era != route.ERAS[-1] or bool(target is not None and target.exit))
    if getattr(ctx, "untouched", None):     # --since of a bump: a root whose chart the change does not move
        rp.next = f"untouched by this change (chart {ctx.untouched} at {ctx.options.since} and now)"
        note("MIG-SINCE-003", "info", f"the change since {ctx.options.since} does not move this root's chart "
                                      f"({ctx.untouched}): nothing is planned for it")
        return rp

    _said_since_and_leftovers(rp, ctx, since, stale, stale_shell, st, note)

    exit_hop = target.exit_hop if target is not None else None
    controllers = [c for c in installs if c.chart == "karpenter"]
    if auto and not ms and not controllers and (ctx.chart_version is None or installs) and \
            (exit_hop is None or (fixed is None or r not in fixed) and not _exit_left(exit_hop, ctx, target)):
        # the CRD chart alone stays on purpose after a move to Auto Mode (it shares those CRDs)
        rp.era, rp.objects = "auto-mode", _objects(auto) + " (EKS Auto Mode)"
        rp.state, rp.next = "EKS Auto Mode: AWS runs the NodePools' controller", "nothing: EKS Auto Mode"
        note("MIG-HOP-007", "info", f"{'this root' if multi else 'the repository'} holds EKS Auto Mode NodePools "
                                    f"({rp.objects}) and no self-managed Karpenter: nothing is planned")
        return rp
    if auto and not ms and exit_hop is not None and (not controllers and (ctx.chart_version is None or installs)
                                                      or controllers and ctx.chart_version is None):
        # only Auto Mode's objects, and Karpenter's own pieces left to remove (the exit hop's last phases): the
        # controller's version, which the files may not state, is not needed to remove it
        rp.era, rp.objects = exit_hop["from"], _objects(auto) + " (EKS Auto Mode)"
        rp.state = "EKS Auto Mode runs the NodePools; Karpenter's own pieces are still in the files"
        ctx.target = target
        return _plan_hop(rp, [exit_hop], ctx, target, target, fixed[r][1] if fixed is not None and r in fixed else
                         phase, fixed, multi, note, st, among=exit_hop.get("left_with_exit_objects"))
    if entry is not None:
        rp.state = entry[1]["state"]
        if target is None:
            rp.next = f"{entry[1]['move']}: migrator plan <repository> " + \
                (f"--root {shlex.quote(r)} " if multi else "") + "--to latest"
            code, message, manual = entry[1]["note"]
            note(code, "info", f"{'this root' if multi else 'the repository'} {message}", manual)
            return rp

    latest = route.parse_target("latest")
    goal = target or latest
    ctx.target = goal
    if entry is None and fixed is None and st.past(goal):
        rp.next = f"nothing: it runs chart {st.chart}, past {goal}"
        note("MIG-HOP-006", "info", f"{'this root' if multi else 'the repository'} runs Karpenter {st.chart} "
                                    f"(serves {' and '.join(st.serves)}), past the target {goal}: nothing is planned "
                                    "(migrator never plans a step back)")
        return rp
    if entry is None and st.serves and st.objects_era is not None and \
            ERAS.index(st.objects_era) > ERAS.index(st.serves[-1]) and getattr(ctx, "stated_chart", False):
        # the stated chart cannot serve the objects the files hold (they are newer than anything it serves): one of
        # the two facts is wrong, and a plan from either would be a guess. Objects older than the stated chart are
        # the "behind" case, converted as for a chart read from the files (MIG-STAND-001)
        rp.era, rp.state = "unknown", f"stated chart {st.chart} serves {' and '.join(st.serves)} only, but the " \
            f"objects are {st.objects_era}"
        rp.next = "nothing: correct chart_version in .migrator.yaml, then plan again"
        note("MIG-STAND-004", "error",
             f"{'this root' if multi else 'the repository'}: the chart version stated in the configuration "
             f"({st.chart}) serves {' and '.join(st.serves)} only, but the repository's Karpenter objects are "
             f"{st.objects_era}, newer than anything it serves: the two disagree, so nothing is planned",
             "state the chart the cluster really runs (chart_version in .migrator.yaml, per cluster root under "
             "roots:; `helm list -A | grep karpenter` shows it), then run migrator again")
        return rp
    if entry is None and st.behind:
        return _plan_behind(rp, st, ctx, target, phase, fixed, multi, note)
    if entry is None and st.chart is None and st.objects_era is None and (fixed is None or r not in fixed or
                                                                        fixed[r][3] is not None):
        return _plan_unknown(rp, ctx, target, phase, fixed, multi, note, installs)
    chain = route.hops_between(era, goal)
    chain, finish = _finishing(chain, era, ctx, target, st, multi, r, note)
    wanted = phase
    if wanted is None and fixed is None and finish and finish[0] not in chain[0]["finish_phases"]:
        wanted = finish[0]                 # a phase still to do before the rest: the root stands there
    if fixed is not None:                  # the second pass plans each root at the very same hop and phase
        if r in fixed:
            chain, wanted = [fixed[r][0]], fixed[r][1]
            rp.rank, ctx.only_rules = fixed[r][2], fixed[r][3]
    else:
        chain = _pruned(chain, ctx, st, phase, goal)
    if target is None and chain and not chain[0].get("onward"):
        goal = route.Target(chain[0]["to"])
        ctx.target = goal
    if not chain:
        notes = getattr(ctx, "reached_notes", [])
        rp.next = f"nothing: already on {goal}" + (" (see the findings)" if notes else "")
        unseen = f" (no release or URL in these files installs its CRDs: check the cluster's are at {goal.chart} " \
                 "too)" if getattr(ctx, "crds_unseen", False) and goal.chart else ""
        note("MIG-HOP-001", "info", f"{'this root' if multi else 'the repository'} is already on {goal}; "
                                    f"nothing to migrate{unseen}")
        rp.findings += notes
        return rp
    if fixed is not None or (wanted is not None and wanted not in (finish or [])):
        finish = None
    return _plan_hop(rp, chain, ctx, target, goal, wanted, fixed, multi, note, st,
                     among=finish if finish and chain and chain[0].get("finish_phases")
                     and set(chain[0]["finish_phases"]) <= set(finish) else None)


def _module_calls(ctx) -> bool:
    """Does the root call the terraform-aws-modules karpenter module (a module block, or a Terragrunt unit)?"""
    from .rules.v1.terraform_module import modules
    from .rules.v1x.terraform_module import unit_modules
    return any(True for _ in modules(ctx)) or any(True for _ in unit_modules(ctx))


def _exit_left(hop: dict, ctx: registry.Context, target) -> bool:
    """Does an exit hop (Auto Mode) still have work in a root that holds only its objects (its cleanup left)?"""
    ctx.target = target
    return _has_work(hop, ctx, hop.get("left_with_exit_objects") or registry.phases(hop))


UNKNOWN_STATE = "Karpenter is here, but no chart version and no object says which"
UNREAD_SHAPES = (".stack.hcl",)             # Terragrunt stacks: unread where a unit comes from outside the repository
_NAMES_KARPENTER = re.compile(r"karpenter", re.I)


def _unread_karpenter(repo: Repo, root: str) -> list[str]:
    """Files of a root that name Karpenter and that migrator could not read: a file that does not parse (MIG-SRC-001/
    002), a shape it does not read (a Terragrunt stack's `unit` values), a Jinja template holding a Karpenter object
    or a helm command in YAML installing its chart (inventory/unread.py)."""
    from .inventory import unread
    from .inventory.terragrunt import terragrunt
    broken = {f.path for f in repo.findings if f.code in ("MIG-SRC-001", "MIG-SRC-002", "MIG-SRC-021") and f.path}
    candidates = {p for p in broken if p in repo.files} | set(repo.ending(UNREAD_SHAPES))
    return sorted(p for p in candidates if inside(p, root) and _NAMES_KARPENTER.search(repo.text(p))
                  and (p in broken or not terragrunt(repo).stack_read(p))) + unread.files(repo, root)


def _outside(rp: RootPlan, ctx: registry.Context, target, phase: str | None, fixed: dict | None, multi: bool,
             note, outside: list) -> RootPlan:
    """A root whose Karpenter comes from a module outside the repository (MIG-SRC-023). Moving to EKS Auto Mode, what
    the repository holds is planned: Auto Mode turned on for the cluster it declares (the exit hop's first phase);
    the module's NodePools, workloads and controller move in its own repository, in the order the finding gives, and
    this call goes last. Any other target: where the root stands is not known."""
    exit_hop = getattr(target, "exit_hop", None) if target is not None else None
    rp.era, rp.state = "unknown", "Karpenter comes from a module outside the repository"
    rp.next = "nothing: see MIG-SRC-023"
    said = []
    for p, b, src in outside:
        said.append(Finding(
            "MIG-SRC-023", "warning", p, hclsrc.line_of(ctx.repo.text(p), b.start),
            f"{b.address} names Karpenter and calls {src}, a module outside the repository: what it installs (the "
            "chart and its version, NodePools, IAM) is not in these files, so "
            + ("only what the repository holds is planned (Auto Mode turned on for its cluster)" if exit_hop
               else "where this root stands is not known"),
            ("in that module's repository, after Auto Mode is on here: run `migrator plan --to auto-mode` there (its "
             "NodeClasses and NodePools beside Karpenter's, then the workloads, then the cutover), and remove this "
             "call last, once no Karpenter NodePool is left" if exit_hop else
             "state the chart version this module installs (chart_version in .migrator.yaml, per root under "
             "roots:), or run migrator on the module's repository")))
    if exit_hop is None or not exit_hop.get("implemented"):
        rp.findings += said
        return rp
    ctx.target = target
    among = exit_hop.get("outside_phases")
    later = f"the rest moves in the repository of {', '.join(sorted({src for _, _, src in outside}))} (MIG-SRC-023)"
    if fixed is not None and rp.path in fixed or registry.next_phase(exit_hop, ctx, among):
        out = _plan_hop(rp, [exit_hop], ctx, target, target, fixed[rp.path][1] if fixed is not None and
                        rp.path in fixed else phase, fixed, multi, note, standing.of(None, None), among=among)
        out.era, out.state, out.next = "unknown", "Karpenter comes from a module outside the repository", later
        out.findings += said
        return out
    if getattr(ctx.result(exit_hop, among[0]).get("auto/cluster"), "enabled", False):
        rp.next = f"nothing here: EKS Auto Mode is on; {later}"
    else:                                       # no cluster declared here either: nothing can be planned
        for f in said:
            f.severity = "error"
            f.message = f.message.replace("only what the repository holds is planned (Auto Mode turned on for its "
                                          "cluster)", "the move to EKS Auto Mode cannot be planned from them")
    rp.findings += said
    return rp


def _plan_unknown(rp: RootPlan, ctx: registry.Context, target, phase: str | None, fixed: dict | None, multi: bool,
                  note, installs: list) -> RootPlan:
    """No chart version and no object: where the root stands is not known, so nothing that moves the controller, its
    IAM or its values is planned (a policy or a values file of an old era must not send it back). What is right at
    any step still is: the object rules' work (workload keys) of the first hop that has some."""
    st = standing.of(None, None)
    for h in route.hops_between(ERAS[0], target or route.parse_target("latest")):
        only = h.get("objects_only") if h.get("implemented") else None
        # of its object phases, those right at any version (knowledge/hops.yaml `unknown`): never the ones that
        # take away what an older controller still reads
        among = only.get("unknown", only["phases"]) if only else None
        if not among:
            continue
        if h.get("onward") and not _module_calls(ctx):
            continue                        # its object rule checks the karpenter module's calls: none here
        ctx.only_rules = frozenset(only["rules"])
        if fixed is not None and rp.path in fixed:
            if fixed[rp.path][0] is not h:
                continue
        elif not registry.next_phase(h, ctx, among):
            continue
        goal = route.Target(h["to"])
        ctx.target = goal
        out = _plan_hop(rp, [h], ctx, target, goal, phase if fixed is None else fixed[rp.path][1], fixed, multi,
                        note, st, among=among, objects=True)
        # a root whose Karpenter version is not known: said as such
        out.era, out.state = "unknown", UNKNOWN_STATE + " (only what is right at any version is planned)"
        if out.next.startswith("nothing") or not out.later:
            out.next = "state the chart version (chart_version in .migrator.yaml) to plan more"
        return out
    ctx.only_rules = None
    if not installs and not _module_calls(ctx) and not any(_has_work(h, ctx, registry.phases(h)) for h in route.HOPS["hops"]
                                if h.get("implemented") and not h.get("requires_target") and not h.get("exit")):
        progs = [p for p in programs.programs(ctx.repo) if inside(p.dir, rp.path) or inside(rp.path, p.dir)]
        if progs:                           # a CDK app / Pulumi program installs it: said, not planned (MIG-SRC-015)
            tools = " and ".join(sorted({p.tool for p in progs}))
            rp.era, rp.state = "unsupported", f"{tools} program installs " + ", ".join(sorted({p.what for p in progs}))
            rp.next = f"nothing: migrator does not edit {tools} " \
                + ("code" if all(p.tool in programs.FACTS["libraries"] for p in progs) else "programs") + " (MIG-SRC-015)"
            if target is not None and target.exit:      # the pools it declares: said with what to write by hand
                rp.findings += [f for p in progs if p.what == "karpenter"
                                for f in programpools.auto_mode_findings(ctx.repo, p)]
                rp.findings = list({_key(f): f for f in rp.findings}.values())
            return rp
        outside = [(p, b, src) for p, b, src in outside_modules(ctx.repo) if ctx.owns(p)]
        if outside:                         # Karpenter from a module outside the repository: said, never "none"
            return _outside(rp, ctx, target, phase, fixed, multi, note, outside)
        aws = _aws_side(ctx)
        if aws:                             # its roles and pod identity by hand, the chart elsewhere: never "none"
            where = ", ".join(aws[:4]) + (", ..." if len(aws) > 4 else "") + ": its AWS side only"
            return _unknown(rp, multi, note, where)
        unread = _unread_karpenter(ctx.repo, rp.path)
        if unread:                          # "no Karpenter" only where no file that names it was left unread
            rp.era, rp.state = "unknown", "Karpenter is named in files migrator could not read"
            rp.next = "nothing: see MIG-HOP-010"
            note("MIG-HOP-010", "warning",
                 f"no Karpenter install or object was read in {'this root' if multi else 'the repository'}, but "
                 f"{len(unread)} file(s) that name Karpenter could not be read (they do not parse, or hold it where "
                 f"migrator does not read: a Jinja template, a helm command in YAML): {', '.join(unread[:5])}"
                 f"{', ...' if len(unread) > 5 else ''}; nothing is planned",
                 "migrate what those files hold by hand, or state where Karpenter is (chart_version in "
                 ".migrator.yaml, per cluster root under roots:) if it is installed from them")
            return rp
        rp.era, rp.state = "none", "no Karpenter and no Cluster Autoscaler"
        rp.next = "nothing: no Karpenter here"
        from . import cas
        groups = sorted({g.name for g in cas.scan(ctx.repo).groups if ctx.owns(g.path)}) \
            if target is not None and target.exit else []
        note("MIG-HOP-005", "info", f"{'this root' if multi else 'the repository'} has no Karpenter (no chart "
                                    "install, object, IAM policy, module or setting of it) and no Cluster "
                                    "Autoscaler: nothing is planned" + (
                                        f"; its node groups ({', '.join(groups)}) with no autoscaler are not a move "
                                        f"migrator plans to {target.exit}" if groups else ""),
             "AWS documents moving managed node groups to EKS Auto Mode by hand (Auto Mode on with its built-in "
             "pools, then the node groups drained and removed)" if groups else "")
        return rp
    waiting = _waiting_on_version(ctx) if not installs else []
    where = ", ".join(f"{c.address} ({c.path}:{c.line})" for c in installs) or (
        "workloads or objects whose next change depends on the version: " + ", ".join(waiting[:4])
        + (", ..." if len(waiting) > 4 else "") if waiting else
        "no chart install migrator reads (its IAM, values or module only)")
    return _unknown(rp, multi, note, where)


def _waiting_on_version(ctx: registry.Context) -> list[str]:
    """The files an object phase not right at an unknown version (knowledge/hops.yaml `unknown`) would change: a
    cleanup that takes away what an older controller still reads."""
    out: set[str] = set()
    for h in route.HOPS["hops"]:
        only = h.get("objects_only") if h.get("implemented") and not h.get("onward") else None
        if only is None:
            continue
        ctx.only_rules = frozenset(only["rules"])
        for phase in only["phases"]:
            if phase not in only.get("unknown", only["phases"]):
                out.update(e.path for e in registry.run(h, phase, ctx)[0])
    ctx.only_rules = None
    return sorted(out)


def _aws_side(ctx: registry.Context) -> list[str]:
    """Karpenter's AWS side written by hand in this root (knowledge/hops.yaml `aws_side`): `address (file:line)` of
    each resource whose name says Karpenter, or pod identity association binding a `karpenter` service account."""
    facts = HOPS["aws_side"]
    word = facts["word"]
    out = []
    for kind in facts["types"]:
        for p, b in ctx.repo.blocks("resource", kind, mentioning=word):
            if not ctx.owns(p):
                continue
            sa = facts["service_account"].get(kind)
            bound = sa is not None and b.attr(sa) is not None and word in b.attr(sa).source.lower()
            if word in (b.labels[1] if len(b.labels) > 1 else "").lower() or bound:
                out.append(f"{b.address} ({p}:{hclsrc.line_of(ctx.repo.text(p), b.start)})")
    return out


def _unknown(rp: RootPlan, multi: bool, note, where: str) -> RootPlan:
    rp.era, rp.state = "unknown", UNKNOWN_STATE
    rp.next = "state the chart version (chart_version in .migrator.yaml), then plan again"
    note("MIG-STAND-003", "warning",
         f"{'this root' if multi else 'the repository'} holds Karpenter ({where}), but no chart version and no "
         "object says which Karpenter it runs (the version is set outside the repository: a stack, a pipeline, "
         "the caller of a module): nothing that moves the controller, its IAM or its values is planned",
         "state it: chart_version in .migrator.yaml (per cluster root under roots:), then run migrator again")
    return rp


def _plan_behind(rp: RootPlan, st: standing.Standing, ctx: registry.Context, target, phase: str | None,
                 fixed: dict | None, multi: bool, note) -> RootPlan:
    """Objects older than what their controller serves: the object rules of the hops between, nothing else."""
    chain = [h for h in route.hops_between(st.objects_era, route.Target(st.serves[0]))
             if h.get("implemented") and h.get("objects_only")]
    rp.era = st.objects_era
    serves = " and ".join(st.serves)
    rp.state += f"; behind chart {st.chart}, which serves {serves} only: their conversion is planned"
    if fixed is None:
        note("MIG-STAND-001", "warning",
             f"the chart is {st.chart} (it serves {serves} only) but the objects are {st.objects_era}: the chart was "
             f"moved without them; their conversion is planned with no controller or CRD step (those would go back "
             f"from {st.chart})",
             f"apply the object changes this plan shows; the controller stays on {st.chart}")
    wanted = phase
    if fixed is not None and rp.path in fixed:
        chain, wanted = [fixed[rp.path][0]], fixed[rp.path][1]
        rp.rank = fixed[rp.path][2]
    else:
        for h in chain:                     # the first hop whose object rules have work
            ctx.only_rules = frozenset(h["objects_only"]["rules"])
            if registry.next_phase(h, ctx, h["objects_only"]["phases"]):
                chain = chain[chain.index(h):]
                break
    if not chain:
        return rp
    hop = chain[0]
    ctx.only_rules = frozenset(hop["objects_only"]["rules"])
    goal = route.Target(hop["to"]) if target is None else (target if route.ERAS.index(target.era) <=
                                                           route.ERAS.index(hop["to"]) else route.Target(hop["to"]))
    ctx.target = goal
    return _plan_hop(rp, chain, ctx, target, goal, wanted, fixed, multi, note, st,
                     among=hop["objects_only"]["phases"], objects=True)


def _plan_hop(rp: RootPlan, chain: list[dict], ctx: registry.Context, target, goal, wanted: str | None,
              fixed: dict | None, multi: bool, note, st: standing.Standing, among: list[str] | None = None,
              objects: bool = False) -> RootPlan:
    """The hop planned for a root: `among` limits its phases (a finishing hop, objects behind their chart);
    `objects`: only the objects' conversion, the controller stays where it is."""
    r = rp.path
    latest = route.parse_target("latest")
    hop = chain[0]
    rp.hop, rp.key = hop, hop_key(hop)
    asked = goal                # the later hops go on to what was asked
    if hop.get("implemented") and hasattr(registry.hop_package(hop), "goal") and goal is not None:
        goal = ctx.target = registry.hop_package(hop).goal(ctx, goal)    # the chart the hop really installs
    rp.phases = [p for p in hop.get("phases", []) if among is None or p["name"] in among]
    rp.hop_from = hop["from"]
    rp.hop_to = (goal.chart or str(goal)) if hop.get("onward") else hop["to"]
    rp.later = [route.describe(h, latest if target is None else asked)
                for h in (route.hops_between(hop["to"], latest) if target is None and not hop.get("onward")
                          else chain[1:])]
    if objects:                 # objects only: the hops after them start from the chart the root runs
        # (with no version known, nothing after them: the next run asks for it, MIG-STAND-003)
        after = route.hops_between(chain[-1]["to"], target or latest) if st.chart else []
        rp.later = [route.describe(h, target or latest) for h in chain[1:] + after]
    if rp.later:
        stays = f"the controller stays on {st.chart}" if st.chart else "the controller's version is not known: " \
            "nothing moves it"
        now = f"the objects' conversion {hop['from']} → {hop['to']} ({stays})" if objects \
            else f"what is left of {hop['from']} → {hop['to']} ({', '.join(among)})" if among \
            else route.describe(hop, goal)
        note("MIG-HOP-004", "info", f"this run plans {now}; then run migrator again for: "
                                    + "; ".join(rp.later) + " (one hop at a time)")
    exit_hop = next((h for h in chain[1:] if h.get("exit")), None)
    if hop.get("exit_route") and exit_hop is not None and among is None:   # CAS to Auto Mode, before the install
        note("MIG-HOP-011", "info", hop["exit_route"]["message"], hop["exit_route"]["manual_step"])
    position = HOPS["hops"].index(hop)
    if hop.get("implemented") and hasattr(registry.hop_package(hop), "state"):
        rp.state = registry.hop_package(hop).state(hop, ctx, rp.state)      # how the hop reads the root (Auto Mode)
    if not hop.get("implemented", False):
        rp.rank = (position, 0)
        note("MIG-HOP-003", "error", f"the {hop['from']} -> {hop['to']} hop is not implemented in this version of "
                                     "migrator", "follow the upstream migration guide by hand")
        return rp
    names = among or registry.phases(hop)
    found = registry.next_phase(hop, ctx, among) or _blocked_phase(hop, ctx, names)
    natural = _controller_first(hop, names, found, goal, st.chart)
    if natural != found and wanted in (None, natural):
        moves = standing.installs(hop, natural, goal)
        note("MIG-STAND-006", "warning",
             f"{'this root' if multi else 'the repository'} runs chart {st.chart}, below the {moves} that phase "
             f"{natural} installs, and no file migrator writes here moves the controller (it is installed outside "
             f"these files, or where migrator does not write): "
             f"phase {found} and what follows it wait until it runs {moves}",
             f"move the controller as the runbook says, then state the version it runs (chart_version: {moves} in "
             ".migrator.yaml" + (f", under roots: {rp.path}" if multi else "") + ") and run migrator again")
    pkg = registry.hop_package(hop) if hop.get("exit") and hop.get("implemented") else None
    settled = getattr(pkg, "settled", None) if natural is None else None
    kept = settled(hop, ctx) if settled is not None else None
    first = among is None and natural is not None and natural == names[0] and wanted in (None, natural)
    unmovable = getattr(pkg, "unmovable", None) if first else None
    kept_all = unmovable(hop, ctx) if unmovable is not None else None
    if kept or kept_all:        # a hybrid move that has gone as far as it goes, or never can start: what stays, why
        rp.hop, rp.key, rp.hop_from, rp.hop_to, rp.phases, rp.later = None, None, None, None, [], []
        rp.findings = [f for f in rp.findings if f.code != "MIG-HOP-004"]
        n = len(kept or kept_all)
        rp.next = f"nothing: {n} Karpenter object{'s stay' if n > 1 else ' stays'} on Karpenter, with its controller " \
                  "(MIG-AUTO-020)" + (", and EKS Auto Mode is not turned on (MIG-AUTO-067)" if kept_all else "")
        rest = "nothing else of this root could move" if kept_all else "the rest of the cluster runs on EKS Auto " \
            "Mode" if (rp.state or "").startswith("EKS Auto Mode on") else "it needs Karpenter's controller"
        for what, path, line, why in kept or kept_all:
            rp.findings.append(Finding(
                "MIG-AUTO-020", "warning", path, line, f"{what} stays on Karpenter: {why}; Karpenter's controller "
                "stays while it exists", f"keep it on Karpenter ({rest}), or make it movable and run migrator again"
                + (" (the nodepools phase's finding says how)" if kept else "")))
        if kept_all:
            what, path, line, _why = kept_all[0]
            rp.findings.append(Finding(
                "MIG-AUTO-067", "warning", path, line,
                f"EKS Auto Mode is not turned on: none of this root's {n} Karpenter objects can move to it (each "
                "stays on Karpenter: MIG-AUTO-020), and Auto Mode with no pool of its own would run no node",
                "make a pool movable (each MIG-AUTO-020 says why it stays), or write an Auto Mode NodePool by hand, "
                "then run migrator again"))
        return rp
    stalled = getattr(registry.hop_package(hop), "stalled", None) if natural is None and hop.get("exit") else None
    said = stalled(hop, ctx) if stalled is not None else None
    if said:                    # no phase has work, yet the move is not over: said, never an empty phase
        rp.hop, rp.key, rp.hop_from, rp.hop_to, rp.phases, rp.later = None, None, None, None, [], []
        rp.findings = [f for f in rp.findings if f.code != "MIG-HOP-004"] + said
        waits = getattr(registry.hop_package(hop), "waits_for", None)
        rp.next = (waits(said) if waits is not None else None) or f"nothing migrator can plan: see {said[0].code}"
        return rp
    natural = natural or names[0]
    rp.written = names[:names.index(natural)]      # phases with no work left before the first that has some
    every = registry.phases(hop)        # a rank is the phase's place in the whole hop, whatever is left of it
    rp.rank = (position, every.index(natural))
    if wanted is None:
        wanted = natural
    elif wanted not in names:
        rp.next = f"{natural} (not planned in this run: its hop has no phase {wanted})"
        return rp
    back = None if objects else standing.goes_back(hop, wanted, goal, st.chart)
    if back is not None:        # never shown as a step: an internal error, the root planned nothing
        note("MIG-INT-002", "error", f"internal error: phase {wanted} of {hop['from']} -> {hop['to']} would install "
                                     f"Karpenter {back}, below the {st.chart} this root runs; nothing is planned "
                                     "for it", "report this as a bug with the files involved")
        return rp
    rp.phase = wanted
    rp.only = ctx.only_rules
    rp.rank = (position, every.index(wanted))
    if hop.get("onward") and not st.chart and not objects and ctx.only_rules is None and goal.chart:
        # the steps that move the controller are to follow by hand, and nothing in the files says when they are done
        note("MIG-STAND-005", "info",
             f"{'this root' if multi else 'the repository'} holds {hop['from']} objects, but no chart version in its "
             f"files says which Karpenter runs them (installed by hand, or by another root or repository): the "
             f"steps to {goal.chart} are given on every run",
             f"once the cluster runs {goal.chart}, state it (chart_version: {goal.chart} in .migrator.yaml"
             + (f", under roots: {rp.path}" if multi else "") + "): the plan then says the root is there")
    rest = names[names.index(wanted) + 1:]
    rp.next = "; ".join(([f"phase{'s' if len(rest) > 1 else ''} {', '.join(rest)}"] if rest else []) +
                        rp.later) or f"nothing: {goal} is reached"
    edits, findings = registry.run(hop, wanted, ctx)
    reach = registry.hop_package(hop).reach(hop, ctx, wanted) if hasattr(registry.hop_package(hop), "reach") else None
    if hop.get("chart_from_target") and not reach and rp.later and asked is not None and asked.chart and \
            goal.chart == asked.chart:
        # the install is the target's chart itself (nothing holds it below): no onward 1.x hop is left after it
        onward = {route.describe(h, latest if target is None else asked) for h in HOPS["hops"] if h.get("onward")}
        rp.later = [x for x in rp.later if x not in onward]
        told = [f for f in rp.findings if f.code == "MIG-HOP-004"]
        rp.findings = [f for f in rp.findings if f.code != "MIG-HOP-004"]
        if told and rp.later:
            note("MIG-HOP-004", "info", f"this run plans {route.describe(hop, goal)}; then run migrator again for: "
                                        + "; ".join(rp.later) + " (one hop at a time)")
        rp.next = "; ".join(([f"phase{'s' if len(rest) > 1 else ''} {', '.join(rest)}"] if rest else []) +
                            rp.later) or f"nothing: {goal} is reached"
    if reach and reach != rp.hop_to:        # held below the goal: the table says where this run really goes
        rp.hop_to = reach
        rp.next = f"{reach} → {goal.chart or goal}, once what holds it is resolved (see the findings)"
        cur = route.parse_version(st.chart) if st.chart else None
        if not edits and cur is not None and route.parse_version(reach) is not None and \
                route.parse_version(reach) <= cur:
            # already where the hold lets it go: no phase to run and no step to follow, only what holds it
            rp.hop, rp.key, rp.hop_from, rp.hop_to, rp.phase, rp.phases, rp.later = None, None, None, None, "", [], []
            rp.next = f"held at {st.chart}: on to {goal.chart or goal} once what holds it is resolved (see the " \
                      "findings)"
            rp.findings = [f for f in rp.findings + findings if f.code != "MIG-HOP-004"]
            return rp
    errors = [f for f in findings if f.severity == "error"]
    if wanted not in hop.get("atomic_phases", []):      # else only the errors of the rules that hold the phase
        results = registry.selected(hop, wanted, ctx)
        errors = [f for k in hop.get("held_by", {}).get(wanted, []) for f in getattr(results.get(k), "findings", [])
                  if f.severity == "error"]
    if edits and errors:
        # a phase that only works whole (tags, scale-downs, the install): nothing of it is written while an error
        # stands, so the root never stays half-moved
        findings.append(Finding(
            "MIG-HOP-008", "warning", "", 0,
            f"{'this root' if multi else 'the repository'}: phase {wanted} has {len(errors)} error finding"
            f"{'s' if len(errors) > 1 else ''} ({', '.join(sorted({f.code for f in errors}))}), so none of its "
            f"{len({e.path for e in edits})} file change(s) is written: the phase lands whole or not at all",
            "resolve the errors, then run migrator again"))
        edits = []
    rp.edits = [dataclasses.replace(x, root=r) if multi and isinstance(x, TextEdit) else x for x in edits]
    rp.findings.extend(findings)
    kinds = hop["objects_only"]["steps"] if ctx.only_rules is not None else None
    if kinds is not None and not any(m.kind not in SKIP_KINDS for m in ctx.manifests):
        kinds = [k for k in kinds if k in ("workloads", "module")]   # no object to convert, roll or remove
    for step in (registry.steps(hop, ctx) if fixed is None else []):      # the second pass checks edits only
        if kinds is not None and step.kind not in kinds:
            continue
        if hop.get("exit") and among is not None and step.phase not in among:
            continue                        # only what is left of the hop (a root holding only its objects)
        # a step names this root's files only (a shared module's rules also see the other callers' files)
        step.files = [f for f in step.files if ctx.owns(f)]
        step.refs = [x for x in step.refs if ctx.owns(x.rsplit(":", 1)[0])]
        if multi:
            step.root = r
            step.id = f"{r}:{step.id}"
            # migrator's own commands act on this root only
            step.commands = [re.sub(r"^(migrator (?:apply|plan) \S+)", lambda m: f"{m.group(1)} --root {shlex.quote(r)}", c)
                           for c in step.commands]
        if ctx.var_file:            # an environment's root: Terraform runs in its root module with its tfvars
            step.commands = [with_var_file(c, ctx.root, ctx.var_file) for c in step.commands]
            step.verify = [with_var_file(c, ctx.root, ctx.var_file) for c in step.verify]
        rp.steps.append(step)
    return rp


_TERRAFORM_RUN = re.compile(r"\bterraform((?: -chdir=(\S+))?) (plan|apply|destroy|import|refresh)\b")


def with_var_file(command: str, root: str, var_file: str) -> str:
    """A terraform plan / apply (import, destroy) run in an environment's root module, given that environment's tfvars
    (`-var-file`, relative to the folder terraform runs in); runs in other folders stay as they are."""
    def add(m: re.Match) -> str:
        d = (m.group(2) or ".").strip("'\"")
        if posixpath.normpath(d) != posixpath.normpath(root) or "-var-file" in command:
            return m.group(0)
        rel = posixpath.relpath(var_file, root) if root != "." else var_file
        return f"{m.group(0)} -var-file={shlex.quote(rel)}"
    return _TERRAFORM_RUN.sub(add, command)


def _controller_first(hop: dict, names: list[str], natural: str | None, goal, chart: str | None) -> str | None:
    """Never a phase past one that moves the controller (knowledge/hops.yaml `chart_phases`) while the root's stated
    chart is below what that phase installs: a controller installed outside the files (`chart_version` in
    .migrator.yaml) gives the phase no file to change, yet the later phases need it moved (a cleanup on a v1alpha5
    controller takes away what it still reads)."""
    cur = route.parse_version(chart) if chart else None
    if natural is None or cur is None:
        return natural
    for name in names[:names.index(natural)] if natural in names else []:
        new = standing.installs(hop, name, goal)
        if new is not None and route.parse_version(new) is not None and route.parse_version(new) > cur:
            return name
    return natural


def _blocked_phase(hop: dict, ctx: registry.Context, names: list[str]) -> str | None:
    """With no phase left to write: the first whose rules report an error (what stops the root is shown, not a
    phase with nothing to do)."""
    return next((n for n in names if any(f.severity == "error" for res in registry.selected(hop, n, ctx).values()
                                         for f in res.findings)), None)


def _identity(e) -> tuple:
    if isinstance(e, TextEdit):
        return ("text", e.path, e.start, e.end, e.text, e.order, e.rule)
    if isinstance(e, NewFile):
        return ("new", e.path, e.text)
    return ("delete", e.path)


def _combine(rps: list[RootPlan], fleet: Fleet, ranks: dict | None = None) -> list:
    """Every root's edits to the files it uses, as one list. A shared file (a module several roots call, a base several
    clusters build) moves with the earliest of its roots: the edits of roots further along wait, with a finding;
    roots at the same step make the same edits once."""
    by_root = {rp.path: rp for rp in rps}
    per_file: dict[str, dict[str, list]] = {}
    for rp in rps:
        for e in rp.edits:
            if fleet.owns(rp.path, e.path):       # another root's file is planned by its own roots
                per_file.setdefault(e.path, {}).setdefault(rp.path, []).append(e)
            elif not fleet.users(e.path) and e.path not in {f.path for f in rp.findings if f.code == "MIG-ROOT-002"}:
                rp.findings.append(Finding(     # never dropped silently
                    "MIG-ROOT-002", "warning", e.path, 0,
                    f"{rp.path} needs a change in {e.path}, which belongs to another Terraform root module (no "
                    "cluster root of this plan): it is not made",
                    f"make the change by hand, or plan the root that owns {e.path}"))
    out: list = []
    for path in sorted(per_file):
        per = per_file[path]
        users = [u for u in fleet.users(path) if u in by_root or u in (ranks or {})]
        rank = {u: (ranks or {}).get(u, by_root[u].rank if u in by_root else (DONE,)) for u in users}
        earliest = min(rank.values())
        # a root at the same step whose phase writes nothing (its rules stopped it: a finding says why) cannot take
        # its part of the shared file yet (the variable the others' install declares, which its apply would not
        # set): the file waits for it
        stuck = [x for x in users if x in by_root and x not in per and rank[x] == earliest and _stopped(by_root[x])]
        seen: set = set()
        for u, edits in per.items():
            rp = by_root[u]
            wait = _waits(path, users, u, by_root, rank, stuck)
            if wait is not None:
                rp.held.append(path)
                rp.findings.append(wait)
                continue
            rp.changes.append(path)
            for e in edits:
                k = _identity(e)
                if k not in seen:
                    seen.add(k)
                    out.append(e)
    return out


def _waits(path: str, users: list[str], u: str, by_root: dict, rank: dict, stuck: list[str]) -> Finding | None:
    """Why root u's changes to a shared file wait: roots behind it (MIG-ROOT-001), or a root at its step that cannot
    write its phase (MIG-ROOT-004); None when they are made now."""
    earliest = min(rank.values())
    if stuck and rank[u] == earliest:
        return Finding(
            "MIG-ROOT-004", "warning", path, 0,
            f"{path} is shared by the cluster roots {', '.join(users)}; {', '.join(stuck)} "
            f"({_step(by_root[stuck[0]])}) cannot make its part of this phase (its findings say why), so the "
            f"changes {u} needs in it wait: applied with {stuck[0]}'s values, the file would not work there",
            f"resolve what stops {', '.join(stuck)} (migrator plan --root {stuck[0]}), then run migrator "
            "again: the file moves when every root that uses it can")
    if rank[u] == earliest:
        return None
    ahead = [x for x in users if rank[x] == earliest]
    return Finding(
        "MIG-ROOT-001", "warning", path, 0,
        f"{path} is shared by the cluster roots {', '.join(users)}; it moves with the earliest of them "
        f"({', '.join(f'{x} at {_step(by_root[x])}' for x in ahead if x in by_root)}), so the changes {u} "
        f"({_step(by_root[u])}) needs in it wait",
        f"move {', '.join(ahead)} on first (migrator plan --root {ahead[0]}); this file follows when "
        f"every root that uses it has reached {_step(by_root[u])}")


def _stopped(rp: RootPlan) -> bool:
    """A root planned at a phase that lands whole (its hop's `atomic_phases`: the move from Cluster Autoscaler, to
    Auto Mode) and writes nothing while its own rules say something stands in the way (a warning or an error of its
    hop: MIG-CAS-004, no node group for the controller). A phase whose work is done outside the files (a rendered
    chart) is no such phase."""
    return rp.hop is not None and rp.phase in rp.hop.get("atomic_phases", []) and not rp.edits and any(
        f.severity in ("warning", "error") and not f.code.startswith(("MIG-HOP-", "MIG-ROOT-", "MIG-SRC-", "MIG-CFG-"))
        for f in rp.findings)


def _step(rp: RootPlan) -> str:
    if rp.hop is None:
        return "the target"
    return f"{rp.hop_from} -> {rp.hop_to}, phase {rp.phase or '(none)'}"


def _make_plan(repo: Repo, target, phase: str | None, options: Options, fixed: dict | None = None,
               only: list[str] | None = None, ranks: dict | None = None, earlier: list | None = None) -> Plan:
    """One pass. The second pass gives `fixed` (root -> (hop, phase, rank): the roots to plan again, each at its
    step), `ranks` (every root's step in the first pass) and `earlier` (the objects the first pass read: what one
    root waits for in another is judged on the files before this run's changes)."""
    charts = scan_charts(repo)
    manifests = scan_manifests(repo)
    programs.report(repo)
    fleet = Fleet(repo, manifests, charts + scan_rendered(repo), registry.root_markers(repo))
    plan = Plan(root=repo.root, objects=manifests)
    plan.all_roots = sorted(fleet.planned, key=rollout_key)
    selected = _select(plan.all_roots, only)
    for m in manifests:
        if selected is None or any(fleet.owns(r, m.tf_path or m.path) for r in selected):
            k = f"{m.kind} ({m.api_version})"
            plan.era_summary[k] = plan.era_summary.get(k, 0) + 1
    multi = len(fleet.planned) > 1
    contexts = _contexts(repo, fleet, manifests, charts, options, target, None if fixed is None else set(fixed),
                         earlier)
    rps = [_plan_root(r, ctx, target, phase, fixed, multi) for r, ctx in contexts]
    have = {_key(f) for f in repo.findings}
    for _r, ctx in contexts:            # what an environment's root read in its own view of the files
        if ctx.repo is not repo:
            for f in ctx.repo.findings:
                if _key(f) not in have:
                    have.add(_key(f))
                    repo.findings.append(f)
    if phase is not None and fixed is None and any(rp.hop for rp in rps) and not any(rp.phase == phase for rp in rps):
        have = sorted({f"{rp.hop_from} -> {rp.hop_to}: {', '.join(p['name'] for p in rp.phases)}"
                       for rp in rps if rp.hop is not None})
        raise UsageError(f"--phase {phase}: no cluster root stands in a hop with that phase (" +
                         ("; ".join(have) or "every root is already on the target") + ")")
    edits = _combine(rps, fleet, ranks)
    keep = [rp for rp in rps if selected is None or rp.path in selected]
    plan.every = rps
    plan.roots = sorted(keep, key=lambda rp: rollout_key(rp.path))
    mine = {p for rp in plan.roots for p in rp.changes}
    findings: list[Finding] = []
    plan.changes = build_changes(repo, [e for e in edits if e.path in mine], findings)
    plan.changes = _without_cycles(repo, plan.changes, findings)
    plan.changes = _declared_inputs(repo, plan.changes, findings)
    plan.changes = _whole_phases(plan.roots, plan.changes, findings, multi)
    findings += _unevaluated(repo)
    findings += cloudformation.findings(repo, rps, fleet)
    findings += scriptrefs.findings(repo, plan.changes)
    _unrelated_breakage(repo, rps)
    for rp in plan.roots:
        # a finding about a file is reported by the roots that use it, never by another root's rules
        rp.findings = [f for f in rp.findings if not f.path or fleet.owns(rp.path, f.path)]
        rp.findings += [f for f in findings + repo.findings if f.path and fleet.owns(rp.path, f.path)]
        plan.steps.extend(rp.steps)
        plan.findings.extend(rp.findings)
    plan.findings.extend(f for f in findings + repo.findings if not f.path or selected is None)
    plan.findings = sorted({_key(f): f for f in reversed(plan.findings)}.values(), key=_finding_order)
    for f in plan.findings + [f for rp in plan.roots for f in rp.findings]:
        _no_placeholder(f)
    return plan


def _unrelated_breakage(repo: Repo, rps: list) -> None:
    """A file that does not parse (MIG-SRC-001/002) is an error where it may hide what the move reads: in a cluster
    root planned, or naming Karpenter or Cluster Autoscaler. Anywhere else (a legacy Terraform 0.11 module beside the
    clusters, read only because it declares an instance profile) it is a warning: the plan goes on without it, and a
    team's CI is not stopped by a file the move never needs."""
    from .inventory.terragrunt import names_the_move
    from .roots import _module_users
    for i, f in enumerate(repo.findings):
        if f.code not in ("MIG-SRC-001", "MIG-SRC-002") or f.severity != "error" or not f.path or \
                f.path not in repo.files or names_the_move(repo.text(f.path)):
            continue
        d = posixpath.dirname(f.path) or "."
        if any(inside(x, rp.path) for rp in rps for x in {d} | set(_module_users(repo, d))):
            continue                    # in a root's folder, or a module a root calls
        repo.findings[i] = dataclasses.replace(
            f, severity="warning", message=f"{f.message} (this file names neither Karpenter nor Cluster Autoscaler "
                                           "and no cluster root planned holds it: the plan goes on without it)")


def _unevaluated(repo: Repo) -> list[Finding]:
    """The root modules the Terraform evaluator gave no answer for in time (migrator/evaluate.py): said, since their
    values written as expressions are then read as written."""
    out = []
    for d, why in evaluate.unanswered(repo):
        tf = sorted(p for p in repo.tf_in_dir(d) if p.endswith(hclsrc.TF_CODE))
        limit = (f"within {evaluate.LIMIT_S:g} s (MIGRATOR_EVALUATOR_TIMEOUT)" if why == "limit" else
                 "(its process ended on the module: tfparse failed on it)" if why == "failed" else
                 f"once the run had spent {evaluate.BUDGET_S:g} s evaluating (MIGRATOR_EVALUATOR_BUDGET)")
        out.append(Finding(
            "MIG-SRC-016", "info", tf[0] if tf else d, 0,
            f"the Terraform evaluator gave no answer for the root module {d} {limit}: its values written as "
            "expressions are read as written, and a block switched by count or for_each is taken as present",
            "check the plan's reading of that module's switches and values, or raise the limit and run again"))
    return out


def _key(f: Finding) -> tuple:
    return (f.code, f.severity, f.path, f.line, f.message)


def _select(roots: list[str], only: list[str] | None) -> set[str] | None:
    """--root: the roots named (as the status table shows them); a path that is no root is a usage error."""
    if not only:
        return None
    out = set()
    for want in only:
        p = posixpath.normpath(want.strip().replace("\\", "/")).strip("/") or "."
        if p not in roots:
            raise UsageError(f"--root {want}: not a cluster root of this repository; the roots are: "
                             + ", ".join(roots))
        out.add(p)
    return out


PLACEHOLDER = re.compile(r"__MIG_[A-Z0-9_]*__")


def _no_placeholder(f: Finding) -> None:
    """No internal placeholder (a masked template expression) reaches what a finding says: a token left in a message
    by a rule that did not unmask it is said as what it stands for in general, never as `__MIG_59__`."""
    for attr in ("message", "manual_step"):
        text = getattr(f, attr)
        if "__MIG_" in text:
            setattr(f, attr, PLACEHOLDER.sub("<a template expression>", text))


def _placeholder(new: str, old: str) -> str | None:
    """An internal placeholder token (a masked expression) that would reach a file: never written."""
    extra = set(PLACEHOLDER.findall(new)) - set(PLACEHOLDER.findall(old))
    return f"it would contain migrator's internal placeholder {sorted(extra)[0]}" if extra else None


GENERATED = re.compile("|".join(f"(?:{h})" for h in knowledge.load("generated")["headers"]), re.I)


def _generated(old: str) -> str | None:
    """The header line of a file another tool generates (Terramate, codegen): editing it is undone when it is
    generated again."""
    m = GENERATED.search(old[:1500])
    return old[old.rfind("\n", 0, m.start()) + 1:].split("\n", 1)[0].strip()[:100] if m else None


def _whole_phases(roots: list[RootPlan], changes: list[FileChange], findings: list[Finding],
                  multi: bool) -> list[FileChange]:
    """A root in a phase that lands whole (its hop's `atomic_phases`) one of whose files failed its check
    (MIG-EDIT-00x: not written), or waits for roots behind it (a shared file held: MIG-ROOT-001), writes none of its
    other changes either (the subnet tags without the install, the Cluster Autoscaler release removed while the node
    groups stay)."""
    # a file not written: its check failed (an error), or a JSON variable file kept as it is (MIG-EDIT-007)
    failed = {f.path for f in findings if (f.severity == "error" and f.code.startswith("MIG-EDIT-"))
              or f.code == "MIG-EDIT-007"}
    out = changes
    for rp in roots:
        bad = sorted(failed & set(rp.changes))
        if not rp.phase or rp.phase not in (rp.hop or {}).get("atomic_phases", []) or not (bad or rp.held):
            continue
        who = 'root ' + rp.path if multi else 'the repository'
        if bad:
            mine = set(rp.changes)
            code, why, manual = "MIG-HOP-008", f"could not write {', '.join(bad)} (its check failed)", \
                "resolve what the MIG-EDIT findings name, then run migrator again"
        else:
            # a file it shares with roots behind it waits for them (MIG-ROOT-001): so does the rest of the phase
            # (a node group scaled down while the shared module still runs Cluster Autoscaler), but for the files
            # other roots change with it
            mine = set(rp.changes) - {p for x in roots if x is not rp for p in x.changes}
            code, why, manual = "MIG-ROOT-003", f"waits for {', '.join(sorted(set(rp.held)))}, shared with roots " \
                "behind it", "move the roots behind it on first (MIG-ROOT-001 names them), then run migrator again"
        dropped = {c.path for c in out if c.path in mine}
        out = [c for c in out if c.path not in mine]
        if dropped:
            findings.append(Finding(
                code, "warning", "", 0, f"{who}: phase {rp.phase} {why}, so none of its {len(dropped)} other file "
                "change(s) is written: the phase lands whole or not at all", manual))
    return out


def _without_cycles(repo: Repo, changes: list[FileChange], findings: list[Finding]) -> list[FileChange]:
    """A Terraform module the changes would give a dependency cycle (or a self-reference), or leave reading a block
    they remove, keeps its files as they are: none of its changes is written (migrator/tfgraph.py)."""
    from .tfgraph import new_cycles, new_dangling
    bad = {d: "a dependency cycle terraform cannot plan (" + "; ".join(
        " -> ".join(c + [c[0]]) if len(c) > 1 else f"{c[0]} references itself" for c in found) + ")"
        for d, found in new_cycles(repo, changes).items()}
    for d, found in new_dangling(repo, changes).items():
        bad[d] = (bad[d] + " and " if d in bad else "") + "references to what they remove (" + "; ".join(
            f"{n} reads {r}" for n, r in found) + ")"
    for d, why in sorted(bad.items()):
        where = next(c.path for c in changes if posixpath.dirname(c.path) == d and c.path.endswith(hclsrc.TF_CODE))
        findings.append(Finding(
            "MIG-EDIT-006", "error", where, 0,
            f"the changes to the Terraform module {d or '.'} would make {why}: none of them is written",
            "report this as a bug with the module's files attached"))
    return [c for c in changes if posixpath.dirname(c.path) not in bad or not c.path.endswith(hclsrc.TF_CODE)]


def _quoted_reference(findings: list[Finding], path: str, old: str | None, new: str, rules: list[str]) -> bool:
    """Generated HCL is checked against what it came from: a reference carried as a string is not written."""
    from .validate import quoted_references
    err = quoted_references(path, old, new)
    if err:
        findings.append(Finding("MIG-EDIT-008", "error", path, 0,
                                f"the change {', '.join(rules)} make here fails its check: {err}; it is not written",
                                "report this as a bug with the file attached; make the change by hand, with the "
                                "reference written as an expression"))
    return bool(err)


MODULE_META = frozenset({"source", "version", "count", "for_each", "providers", "depends_on"})


def _declared_inputs(repo: Repo, changes: list[FileChange], findings: list[Finding]) -> list[FileChange]:
    """Only inputs a module declares are written into its call: an argument the changes add to a call of a module of
    the repository (relative source) that no `variable` block of that module declares, after the changes, is an
    argument `terraform plan` rejects ("Unsupported argument"): that file is not written (MIG-EDIT-009). A call whose
    module is not in the repository gets no argument migrator cannot check."""
    new_text = {c.path: c.new for c in changes if c.new is not None}

    def parsed(p: str, text: str | None):
        if text is None:
            return None
        try:
            return hclsrc.parse(text)
        except hclsrc.HclParseError:
            return None

    declared: dict[str, set[str] | None] = {}

    def variables(d: str) -> set[str] | None:
        if d not in declared:
            files = set(repo.tf_in_dir(d)) | {p for p in new_text if posixpath.dirname(p) == d
                                              and p.endswith(hclsrc.TF_CODE)}
            names: set[str] = set()
            for p in files:
                f = parsed(p, new_text.get(p, repo.files[p].text if p in repo.files else None))
                names |= {b.labels[0] for b in (f.blocks if f is not None else []) if b.type == "variable" and b.labels}
            declared[d] = names if files else None
        return declared[d]

    bad: dict[str, list[str]] = {}
    for c in changes:
        if c.new is None or not c.path.endswith(hclsrc.TF_CODE) or "module" not in c.new:
            continue
        new, old = parsed(c.path, c.new), parsed(c.path, c.old)
        if new is None:
            continue
        before = {(b.type, tuple(b.labels)): set(b.attributes) for b in (old.blocks if old is not None else [])}
        for b in new.blocks:
            src = b.attr("source")
            lit = src.literal() if b.type == "module" and src is not None else None
            if not isinstance(lit, str) or not lit.startswith(("./", "../")):
                continue
            added = set(b.attributes) - before.get((b.type, tuple(b.labels)), set()) - MODULE_META
            if not added:
                continue
            d = posixpath.normpath(posixpath.join(posixpath.dirname(c.path), lit))
            have = variables(d)
            missing = sorted(added if have is None else added - have)
            if missing:
                where = f"the module in {d} declares no variable" + ("s " if len(missing) > 1 else " ") + \
                    ", ".join(missing) if have is not None else f"its module ({d}) is not in the repository"
                bad.setdefault(c.path, []).append(f"{b.address}: {', '.join(missing)} ({where})")
    for path, why in sorted(bad.items()):
        findings.append(Finding(
            "MIG-EDIT-009", "error", path, 0,
            f"the changes would pass {'; '.join(why)}: terraform plan rejects an argument the module does not "
            "declare, so this file is not written",
            "report this as a bug with the module's files attached; make the change in the module itself"))
    return [c for c in changes if c.path not in bad]


def _clip(s: str, width: int = 40) -> str:
    return f"[{s}]" if len(s) <= width else f"[{s[:width].rstrip()} …]"


def _json_tfvars_kept(path: str, old: str, texts: list, rules: list[str]) -> Finding:
    """A variable file in JSON whose change, as migrator writes it (HCL: an entry removed with its line, an input
    appended), is not JSON: the file is left as it is, and the change is said line by line for the user to make."""
    said = []
    for e in sorted(texts, key=lambda e: e.start)[:4]:
        line, last = hclsrc.line_of(old, e.start), hclsrc.line_of(old, max(e.start, e.end - 1))
        at = f"line {line}" if last == line else f"lines {line}-{last}"
        gone = " ".join(old[e.start:e.end].split())
        put = " ".join(e.text.split())
        said.append(f"{at}: " + (f"replace {_clip(gone)} with {_clip(put)}" if gone and put else
                                 f"remove {_clip(gone)}" if gone else f"add {_clip(put)}"))
    more = f" (and {len(texts) - 4} more)" if len(texts) > 4 else ""
    return Finding("MIG-EDIT-007", "warning", path, hclsrc.line_of(old, min(e.start for e in texts)),
                   f"{path} is a variable file in JSON, and the change {', '.join(rules)} need here would not leave it "
                   "JSON as migrator writes it: it is not written",
                   "make the change in JSON by hand: " + "; ".join(said) + more +
                   " (or write the file as .tfvars, which migrator edits)")


def build_changes(repo: Repo, edits: list, findings: list[Finding]) -> list[FileChange]:
    """Apply edits in memory, file by file; a file whose result fails a check is dropped with a finding."""
    by_path: dict[str, list] = {}
    for e in edits:
        by_path.setdefault(e.path, []).append(e)
    changes: list[FileChange] = []
    for path in sorted(by_path):
        es = by_path[path]
        rules = sorted({e.rule for e in es})
        news = [e for e in es if isinstance(e, NewFile)]
        dels = [e for e in es if isinstance(e, DeleteFile)]
        texts = [e for e in es if isinstance(e, TextEdit)]
        if news:
            if len(news) > 1 or texts or dels or path in repo.files:
                findings.append(Finding("MIG-EDIT-001", "error", path, 0,
                                        f"rules {rules} disagree about creating {path}", "report this as a bug"))
                continue
            new = news[0].text
            err = reparse(path, new) or _placeholder(new, "") or unbalanced_actions(path, new)
            if err:
                findings.append(Finding("MIG-EDIT-002", "error", path, 0,
                                        f"generated file fails its check ({err}); it is not written",
                                        "report this as a bug with the source file attached"))
                continue
            if _quoted_reference(findings, path, None, new, rules):
                continue
            changes.append(FileChange(path, "create", None, new, rules))
            continue
        old = repo.files[path].text
        header = _generated(old)
        if header is not None:
            findings.append(Finding("MIG-EDIT-005", "warning", path, 1,
                                    f"{path} is generated by another tool ({header!r}): the change rules "
                                    f"{', '.join(rules)} need here is not written, as the next generation would "
                                    "undo it",
                                    "make the change in the source it is generated from (Terramate: the stack's "
                                    "globals or generate_hcl block), regenerate, then run migrator again"))
            continue
        if dels:
            changes.append(FileChange(path, "delete", old, None, rules))
            continue
        try:
            new, spans = apply_edits_at(old, coalesced(texts, lambda _: old, touch=False))   # rules' deletions overlapping
            if path.endswith(hclsrc.HCL_FILES):
                new = realign_edited(old, new, spans)
        except EditConflict as e:
            findings.append(Finding("MIG-EDIT-003", "error", path, 0, str(e) + "; no edit is made to this file",
                                    "apply the changes one rule at a time by hand"))
            continue
        if new == old:
            continue
        if path.endswith(JSON_TFVARS) and reparse(path, new) and not _placeholder(new, old):
            findings.append(_json_tfvars_kept(path, old, texts, rules))
            continue
        err = reparse(path, new) or _placeholder(new, old) or \
            (unbalanced_actions(path, new) if unbalanced_actions(path, old) is None else None)
        if err:
            findings.append(Finding("MIG-EDIT-002", "error", path, 0,
                                    f"patched file fails its check ({err}); it is not written",
                                    "report this as a bug with the source file attached"))
            continue
        if _quoted_reference(findings, path, old, new, rules):
            continue
        changes.append(FileChange(path, "modify", old, new, rules))
    from .links import through_links
    return through_links(repo.root, changes, findings, repo.files, repo.discovery.links)
