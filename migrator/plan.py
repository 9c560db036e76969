"""Orchestration: discover -> inventory -> rules(hop, phase) -> checked plan."""
from __future__ import annotations

import dataclasses
import posixpath
from dataclasses import dataclass, field
from pathlib import Path

from . import filters, knowledge
from .discover import Discovery, SourceFile
from .edits import DeleteFile, EditConflict, FileChange, NewFile, TextEdit, apply_edits, newline_of
from .inventory import Manifest, Repo, scan_charts, scan_manifests, values_of
from .rendered import helm_values as rendered_values
from .rendered import scan as scan_rendered
from .rendered import version as rendered_version
from .model import Finding, Step
from . import path as route   # the whole v1alpha5 -> 1.x path
from .options import Options
from .rules import registry
from .validate import reparse

HOPS = knowledge.load("hops")
# alpha kind -> the beta kind that succeeds it (knowledge/v1beta1.yaml `kinds`), for where a root stands
SUCCESSOR = {k: v["to"]["kind"] for k, v in knowledge.load("v1beta1")["kinds"].items() if k != "Machine"}


class UsageError(ValueError):
    """Bad command-line input (exit code 1, message on stderr)."""


@dataclass
class RootStatus:
    """Where one cluster root (a Terraform root module or a GitOps folder) stands in the migration."""
    path: str
    objects: str
    state: str
    next: str


@dataclass
class Plan:
    root: Path
    hop_from: str
    hop_to: str
    phase: str
    findings: list[Finding] = field(default_factory=list)
    changes: list[FileChange] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    era_summary: dict[str, int] = field(default_factory=dict)
    roots: list[RootStatus] = field(default_factory=list)
    later: list[str] = field(default_factory=list)      # the hops after this one, for the next runs
    phases: list[dict] = field(default_factory=list)    # the planned hop's phases (name, intro), in order
    key: str = ""                                       # the hop's key in the knowledge tables (runbook, drift)
    hop: dict | None = None                             # the planned hop (knowledge/hops.yaml row)
    inputs: dict[str, str] = field(default_factory=dict)   # every file read: path -> text (saved plans)
    docs_url: str | None = None                         # where the docs site is published (SARIF help links)

    @property
    def has_errors(self) -> bool:
        return any(f.severity == "error" and not f.suppressed for f in self.findings)


def root_of(m: Manifest) -> str:
    return posixpath.dirname(m.tf_path or m.path) or "."


def cluster_roots(manifests: list[Manifest], charts: list) -> list[str]:
    """Directories that each stand for one cluster: where the Karpenter chart is installed or Karpenter objects
    are kept (Terraform root module / GitOps folder); a directory inside another root belongs to it."""
    objects = {root_of(m) for m in manifests if m.kind not in ("Machine", "NodeClaim")}
    installs = {posixpath.dirname(c.path) or "." for c in charts if c.chart == "karpenter"}
    dirs = objects | installs
    roots = sorted(d for d in dirs if not any(a != d and (a == "." or d.startswith(a + "/")) for a in dirs))
    if len(installs) == 1 and len(roots) > 1:
        # one chart install for the whole repository (GitOps: apps/ beside the manifests' folders): one cluster,
        # rooted where its folders meet
        common = posixpath.commonpath(roots) if "." not in roots else "."
        return [common or "."]
    return roots or ["."]


def owner(path: str, roots: list[str]) -> str:
    """The cluster root a file belongs to: its nearest root ancestor, else the root sharing most of its path."""
    d = posixpath.dirname(path) or "."
    above = [r for r in roots if r == "." or d == r or d.startswith(r + "/")]
    if above:
        return max(above, key=len)

    def shared(r: str) -> int:
        n = 0
        for a, b in zip(d.split("/"), r.split("/")):
            if a != b:
                break
            n += 1
        return n
    return max(roots, key=lambda r: (shared(r), -roots.index(r)))


def tied_roots(repo: Repo, roots: list[str], manifests: list[Manifest]) -> dict[str, str]:
    """Folders of objects that an Argo CD Application kept in another cluster root syncs (its `path:`, directly or
    through the kustomizations that build them): folder root -> the Application's root, when that is one root."""
    from .kustomize import app_files, deployers
    files = app_files(repo)
    if not files:
        return {}
    found: dict[str, set[str]] = {}
    for m in manifests:
        if m.tf_path or m.kind in ("Machine", "NodeClaim"):
            continue
        r = owner(m.path, roots)
        for how, what in deployers(repo, m.path):
            if how == "argocd" and what in files and owner(files[what], roots) != r:
                found.setdefault(r, set()).add(owner(files[what], roots))
    return {r: next(iter(t)) for r, t in found.items() if len(t) == 1}


def root_of_path(path: str, roots: list[str], tied: dict[str, str]) -> str:
    r = owner(path, roots)
    return tied.get(r, r)


def root_statuses(manifests: list[Manifest], roots: list[str] | None = None,
                  tied: dict[str, str] | None = None) -> list[RootStatus]:
    """Per cluster root: which generations of objects it holds and the next action."""
    roots = roots or cluster_roots(manifests, [])
    tied = tied or {}
    by_root: dict[str, list[Manifest]] = {r: [] for r in roots if r not in tied}
    for m in manifests:
        if m.kind in ("Machine", "NodeClaim"):
            continue
        by_root.setdefault(root_of_path(m.tf_path or m.path, roots, tied), []).append(m)
    out = []
    for root, ms in sorted(by_root.items()):
        if not ms:
            out.append(RootStatus(root, "none", "no Karpenter objects in this root",
                                  "chart, IAM and module changes only"))
            continue
        eras = {m.era for m in ms}
        counts: dict[str, int] = {}
        for m in ms:
            counts[m.kind] = counts.get(m.kind, 0) + 1
        objects = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
        beta = {(m.kind, m.masked.unmask(str(m.name))) for m in ms if m.era == "beta"}
        pending = [m for m in ms if m.era == "alpha" and m.kind in SUCCESSOR
                   and (SUCCESSOR[m.kind], m.masked.unmask(str(m.name))) not in beta]
        if eras == {"alpha"}:
            state, nxt = "v1alpha5 only", "prepare: add NodePools/EC2NodeClasses next to the Provisioners"
        elif "alpha" in eras and pending:
            state = "v1alpha5 and v1beta1 side by side, some objects not converted yet"
            nxt = "prepare: convert " + ", ".join(f"{m.kind} {m.masked.unmask(str(m.name))}" for m in pending)
        elif "alpha" in eras:
            state = "v1alpha5 and v1beta1 side by side (prepare has landed)"
            nxt = "roll the nodes onto the NodePools, then run the cleanup phase"
        elif eras == {"beta"}:
            state, nxt = "v1beta1 only", "the v1 hop: newest patch and v1 IAM, then CRDs and controller 1.0, then " \
                                         "the manifests (migrator plan --to v1)"
        elif "beta" in eras:
            state, nxt = "v1beta1 and v1 objects", "finish the v1 hop: rewrite the remaining v1beta1 objects"
        else:
            state, nxt = "v1", "the 1.1 gate (stored versions, webhook settings), then the newest 1.x " \
                               "(migrator plan --to latest)"
        out.append(RootStatus(root, objects, state, nxt))
    return out


def detect_era(manifests: list[Manifest], chart: str | None = None) -> str:
    return route.current_era(manifests, chart)


def _contexts(repo: Repo, roots: list[str], manifests: list[Manifest], charts: list, options: Options,
              target: route.Target | None, tied: dict[str, str] | None = None) -> list[tuple[str, registry.Context]]:
    """One rule run per cluster root: each cluster resolves its own role, chart, policy and runbook."""
    out = []
    owners: dict[str, str] = {}          # path -> its root, computed once per run for every root's rules
    tied = tied or {}

    for r in [r for r in roots if r not in tied]:
        def owns(p: str, r: str = r) -> bool:
            o = owners.get(p)
            if o is None:
                o = owners[p] = root_of_path(p, roots, tied)
            return o == r
        mine = [c for c in charts if owns(c.path)]
        opts = options if r not in options.node_roles else dataclasses.replace(options, node_role=options.node_roles[r])
        ctx = registry.Context(repo=repo, manifests=[m for m in manifests if owns(m.tf_path or m.path)],
                               helm_values=values_of(mine) + [v for v in rendered_values(repo) if owns(v.path)],
                               options=opts, charts=mine, owns=owns)
        ctx.target = target
        ctx.all_manifests = manifests
        # a chart rendered with helm template pins its version in its labels
        ctx.chart_version = route.chart_version(repo, mine) or rendered_version(repo, owns)
        out.append((r, ctx))
    return out


def hop_key(hop: dict) -> str:
    return hop.get("key") or f"{hop['from']}->{hop['to']}"


def _has_work(hop: dict, contexts, phases: list[str]) -> bool:
    return any(registry.has_work(ctx.result(hop, p)) for _, ctx in contexts for p in phases)


def make_plan(root: Path, to: str | None = None, phase: str | None = None,
              options: Options | None = None) -> Plan:
    """The checked plan: computed, then planned again on the patched files (same hop and phase), which must
    find nothing more; files a second pass would still change are not written (MIG-EDIT-004)."""
    root = Path(root)
    if not root.exists():
        raise UsageError(f"{root}: no such file or directory")
    try:
        target = route.parse_target(to)
    except route.PathError as e:
        raise UsageError(str(e)) from None
    options = options or Options()
    repo = Repo(root, exclude=options.exclude)
    plan = _make_plan(repo, target, phase, options)
    if plan.changes and plan.phase:
        second_pass(repo, plan, target, options)
    plan.inputs = {p: f.text for p, f in repo.files.items()}
    plan.findings = filters.select(filters.suppress(plan.findings, plan.inputs), options.select, options.ignore)
    return plan


def second_pass(repo: Repo, plan: Plan, target, options: Options) -> None:
    files = dict(repo.files)
    for c in plan.changes:
        if c.action == "delete":
            files.pop(c.path, None)
        else:
            old = repo.files.get(c.path)
            files[c.path] = SourceFile(c.path, repo.root / c.path, c.new, newline_of(c.new),
                                       old.mode if old else 0o644, True)
    patched = Repo(repo.root, Discovery(repo.root, files, []))
    changed = {c.path for c in plan.changes}
    patched._hcl.update({p: f for p, f in repo._hcl.items() if p not in changed})   # unchanged: parsed once
    patched.yaml_docs.update({k: v for k, v in repo.yaml_docs.items() if k[0] not in changed})
    again = _make_plan(patched, target, plan.phase, options, hop=plan.hop)
    if not again.changes:
        return
    bad = {c.path: c.rules for c in again.changes}
    plan.changes = [c for c in plan.changes if c.path not in bad]
    for p_, rules in sorted(bad.items()):
        plan.findings.append(Finding("MIG-EDIT-004", "error", p_, 0,
                                     f"a second pass over the patched files would change {p_} again (rules "
                                     f"{', '.join(rules)} did not converge); it is not written",
                                     "report this as a bug with the files involved"))
    plan.findings.sort(key=lambda f: ({"error": 0, "warning": 1, "info": 2}[f.severity], f.path, f.line, f.code))


def _make_plan(repo: Repo, target, phase: str | None, options: Options, hop: dict | None = None) -> Plan:
    charts = scan_charts(repo)
    manifests = scan_manifests(repo)
    current = detect_era(manifests, route.chart_version(repo, charts) or rendered_version(repo))
    roots = cluster_roots(manifests, charts + scan_rendered(repo))
    tied = tied_roots(repo, roots, manifests)
    plan = Plan(root=repo.root, hop_from=current, hop_to=str(target or current), phase=phase or "")
    plan.roots = root_statuses(manifests, roots, tied)
    for m in manifests:
        plan.era_summary[f"{m.kind} ({m.api_version})"] = plan.era_summary.get(f"{m.kind} ({m.api_version})", 0) + 1

    # the hops from here to the target (with no --to: to the newest 1.x, planning only the first)
    latest = route.parse_target("latest")
    goal = target or latest
    chain = route.hops_between(current, goal)
    contexts = _contexts(repo, roots, manifests, charts, options, goal, tied)
    # a hop that reached this era may still have phases that only run once its objects are there (webhooks-off)
    finishing = next((h for h in HOPS["hops"] if h["to"] == current and h.get("finish_phases")
                      and h.get("implemented")), None)
    if finishing is not None and _has_work(finishing, contexts, finishing["finish_phases"]):
        chain = [finishing] + chain
    if hop is not None:                    # the second pass plans the very same hop
        chain = [hop]
    elif phase is not None and chain:
        # an explicit phase names its hop (e.g. re-checking a finished hop's cleanup)
        chain = chain[next((i for i, h in enumerate(chain) if phase in registry.phases(h)), 0):]
    elif not any(m.kind != "NodeClaim" for m in manifests):
        # no Karpenter objects: the era comes from the chart version alone; skip hops with nothing left to do
        while len(chain) > 1 and chain[0].get("implemented") and \
                not _has_work(chain[0], contexts, registry.phases(chain[0])):
            chain.pop(0)
    if target is None and chain and not chain[0].get("onward"):
        goal = route.Target(chain[0]["to"])
        for _, ctx in contexts:
            ctx.target = goal
    if not chain:
        plan.findings.append(Finding("MIG-HOP-001", "info", "", 0,
                                     f"the repository is already on {goal}; nothing to migrate"))
        plan.findings.extend(repo.findings)
        return plan
    hop = chain[0]
    plan.hop = hop
    plan.phases = hop.get("phases", [])
    plan.key = hop_key(hop)
    plan.hop_from = hop["from"]
    plan.hop_to = str(goal) if hop.get("onward") else hop["to"]
    plan.later = [route.describe(h, latest if target is None else goal)
                  for h in (route.hops_between(hop["to"], latest) if target is None and not hop.get("onward")
                            else chain[1:])]
    if plan.later:
        plan.findings.append(Finding("MIG-HOP-004", "info", "", 0,
                                     f"this run plans {route.describe(hop, goal)}; then run migrator again for: "
                                     + "; ".join(plan.later) + " (one hop at a time)"))
    if not hop.get("implemented", False):
        plan.findings.append(Finding("MIG-HOP-003", "error", "", 0,
                                     f"the {hop['from']} -> {hop['to']} hop is not implemented in this version of migrator",
                                     "follow the upstream migration guide by hand"))
        plan.findings.extend(repo.findings)
        return plan
    names = registry.phases(hop)
    if phase is None:
        # the earliest phase, in the hop's order, that some cluster root still has work in
        chosen = {registry.next_phase(hop, ctx) for _, ctx in contexts}
        plan.phase = next((n for n in names if n in chosen), names[0])
    elif phase not in names:
        raise UsageError(f"--phase {phase}: the {hop['from']} -> {plan.hop_to} hop has the phases {', '.join(names)}")
    edits: list = []
    for r, ctx in contexts:
        e, f = registry.run(hop, plan.phase, ctx)
        if len(contexts) > 1:          # a conflict between roots then names them (MIG-EDIT-003)
            e = [dataclasses.replace(x, root=r) if isinstance(x, TextEdit) else x for x in e]
        edits.extend(e)
        plan.findings.extend(f)
        for st in registry.steps(hop, ctx):
            if len(contexts) > 1:
                st.root = r
                st.id = f"{r}:{st.id}"
            plan.steps.append(st)
    plan.changes = build_changes(repo, edits, plan.findings)
    plan.findings.extend(repo.findings)
    order = {"error": 0, "warning": 1, "info": 2}
    seen = set()
    unique = []
    for f in plan.findings:
        key = (f.code, f.severity, f.path, f.line, f.message)
        if key not in seen:
            seen.add(key)
            unique.append(f)
    plan.findings = sorted(unique, key=lambda f: (order[f.severity], f.path, f.line, f.code))
    return plan


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
            err = reparse(path, new)
            if err:
                findings.append(Finding("MIG-EDIT-002", "error", path, 0,
                                        f"generated file does not parse ({err}); it is not written",
                                        "report this as a bug with the source file attached"))
                continue
            changes.append(FileChange(path, "create", None, new, rules))
            continue
        old = repo.files[path].text
        if dels:
            changes.append(FileChange(path, "delete", old, None, rules))
            continue
        try:
            new = apply_edits(old, texts)
        except EditConflict as e:
            findings.append(Finding("MIG-EDIT-003", "error", path, 0, str(e) + "; no edit is made to this file",
                                    "apply the changes one rule at a time by hand"))
            continue
        if new == old:
            continue
        err = reparse(path, new)
        if err:
            findings.append(Finding("MIG-EDIT-002", "error", path, 0,
                                    f"patched file does not parse ({err}); it is not written",
                                    "report this as a bug with the source file attached"))
            continue
        changes.append(FileChange(path, "modify", old, new, rules))
    return changes
