"""Rule `v1x/crds`: Karpenter CRDs vendored as files (migrator/crdfiles.py) against the chart the root runs once the
plan is applied (or the version a bump moves it to): a set whose fields or kinds are older than that chart needs is
said (MIG-V1X-CRD-001) and rewritten with that chart's own CRDs, verbatim (the packaged crds/ folder of every release,
rules/v1x/crdwrite.py); the runbook applies them before the controller moves. Where migrator has no such release
packaged, or a rewrite could lose something, the runbook's commands regenerate them from the chart instead
(`helm show crds`)."""
from __future__ import annotations

import posixpath
import shlex
from dataclasses import dataclass, field

from ... import knowledge
from ...edits import TextEdit
from ...crdfiles import chart_crds, home_group, stale, vendored, version_of
from ...crdurls import crd_urls
from ...model import Finding
from ...path import parse_version
from .crdwrite import rewrite
from .fields import dropped
from .plan import stop

RULE = "v1x/crds"
_C = knowledge.load("helm")["chart"]
CHART = f"{_C['repository']}/{_C['controller']}"          # the controller chart (its crds/ folder)


@dataclass
class CrdResult:
    edits: list = field(default_factory=list)
    findings: list = field(default_factory=list)
    commands: list = field(default_factory=list)     # regenerate + apply, per stale set
    files: list = field(default_factory=list)
    vendored: bool = False                            # the root keeps its CRDs as files (fresh or not)
    written: bool = False                             # every stale set is rewritten by the edits (no commands to run)
    url_targets: list = field(default_factory=list)   # (dir, address) applying CRDs fetched by URL
    url_files: list = field(default_factory=list)     # files whose CRD URLs move


def chart_after(ctx, done: dict) -> str | None:
    """The chart version the root runs once the plan is applied."""
    target, _ = stop(ctx, done)
    cur = ctx.chart_version
    if cur and parse_version(cur) and parse_version(cur) >= parse_version(target):
        return cur
    return target


def regenerate(vs, chart: str) -> list[str]:
    """Commands that rewrite a vendored set with the chart's own CRDs: one file gets the whole `helm show crds`
    stream; a folder of one file per CRD gets the chart's crds/ files by name."""
    if len(vs.paths) == 1:
        return [f"helm show crds {CHART} --version {chart} > {shlex.quote(vs.paths[0])}"]
    tmp = "\"$(mktemp -d)\""
    folder = shlex.quote(vs.folder or ".")
    return [f"d={tmp} && helm pull {CHART} --version {chart} --untar --untardir \"$d\" && "
            f"cp \"$d\"/karpenter/crds/*.yaml {folder}/"]


def run(ctx, phase: str, done: dict) -> CrdResult:
    res = CrdResult()
    res.findings += dropped(ctx)            # fields of the root's v1 objects the CRDs drop: said, whatever installs them
    sets = vendored(ctx.repo, ctx.owns)
    urls = crd_urls(ctx.repo, ctx.owns)
    if not sets and not urls:
        return res
    res.vendored = True
    chart = chart_after(ctx, done)
    if not chart or parse_version(chart) is None:
        return res
    if urls:
        _urls(ctx, res, urls, chart, {f.name for vs in sets for f in vs.files})
    crds = chart_crds(chart)
    applied = []
    for vs in sets:
        why = stale(vs, chart)
        if not why:
            continue
        first = min(vs.files, key=lambda f: (f.path, f.line))
        at = version_of(vs)
        said = (f"the CRDs vendored in {vs.folder or '.'}/ are older than chart {chart} needs"
                + (f" (their fields are Karpenter {at}'s)" if at else "") + ": " + "; ".join(why)
                + ". The controller would write fields the API server prunes, or watch kinds that do not exist")
        done_, whynot = rewrite(ctx.repo, sets, vs, crds, RULE) if crds else \
            (None, f"migrator has no CRDs of chart {chart} packaged")
        if done_ is not None:
            res.edits += done_.edits
            applied += done_.paths
            res.files += done_.paths
            extra = ([f"added {', '.join(done_.added)}"] if done_.added else []) + \
                ([f"left as they are, not in chart {chart}: {', '.join(done_.kept)}"] if done_.kept else [])
            res.findings.append(Finding(
                "MIG-V1X-CRD-001", "warning", first.path, first.line,
                said + f". They are rewritten with chart {chart}'s own CRDs, verbatim"
                + (" (" + "; ".join(extra) + ")" if extra else ""),
                "commit them and apply them before the controller moves: kubectl apply --server-side "
                + " ".join(f"-f {shlex.quote(p)}" for p in done_.paths)
                + " (whatever applies them, Flux, Argo CD, kustomize or kubectl, applies the new ones)"))
            if done_.listed:
                res.findings.append(Finding(
                    "MIG-V1X-CRD-002", "warning", done_.listed[0].rsplit(":", 1)[0],
                    int(done_.listed[0].rsplit(":", 1)[1]),
                    f"{', '.join(done_.listed)} name the CRD files of {vs.folder or '.'}/ one by one; the new "
                    f"{', '.join(done_.added)} is not named there",
                    "name the new file there too, next to the others, so that it is applied with them"))
            continue
        cmds = regenerate(vs, chart)
        res.commands += cmds + [f"kubectl apply --server-side -f {shlex.quote(p)}" for p in vs.paths]
        res.files += vs.paths
        res.findings.append(Finding(
            "MIG-V1X-CRD-001", "warning", first.path, first.line,
            said + f" (not rewritten: {whynot})",
            "regenerate them at the chart's version before the controller moves: " + " ; ".join(cmds)
            + " (then commit them; whatever applies them, Flux, Argo CD, kustomize or kubectl, applies the new ones)"))
    res.written = bool(applied) and not res.commands
    if applied:
        res.commands += [f"kubectl apply --server-side -f {shlex.quote(p)}" for p in applied]
    return res


def _urls(ctx, res: CrdResult, urls: list, chart: str, held: set[str]) -> None:
    """CRDs fetched from Karpenter's repository by URL: a pinned release older than the chart moves to it (the
    digits only); a release from a variable or a branch, a file the chart no longer has, and a CRD the chart adds
    that neither a URL nor a file of the root (`held`) holds are said."""
    crds = chart_crds(chart) or {}
    files = {fname for fname, _ in crds.values()}
    moved = []
    for u in urls:
        if u.pinned and parse_version(u.version) < parse_version(chart):
            if crds and u.file in files:
                res.edits.append(TextEdit(u.path, u.span[0], u.span[1], chart, RULE))
                moved.append(u)
                continue
            why = (f"chart {chart} has no {u.file}" if crds else f"migrator has no CRDs of chart {chart} packaged")
            res.findings.append(Finding(
                "MIG-V1X-CRD-005", "warning", u.path, u.line,
                f"{u.url} fetches the {u.name} CRD of Karpenter {u.version}, older than chart {chart}; not moved: {why}",
                f"fetch the chart's own CRDs at {chart} instead (helm show crds {CHART} --version {chart})"))
        elif not u.pinned:
            res.findings.append(Finding(
                "MIG-V1X-CRD-005", "info" if u.variable else "warning", u.path, u.line,
                f"{u.url} fetches the {u.name} CRD " + (
                    f"at the release `{u.ref}` gives; it must be the chart's, {chart}" if u.variable else
                    f"from the branch `{u.ref}`, not from a release: the CRDs change under the controller "
                    "whenever that branch moves"),
                f"make `{u.ref}` the chart's version ({chart}) wherever it is set" if u.variable else
                f"pin the release: v{chart} in place of {u.ref}"))
    if moved:
        res.findings.append(Finding(
            "MIG-V1X-CRD-003", "info", moved[0].path, moved[0].line,
            f"the CRDs fetched from Karpenter's repository move to chart {chart}'s: "
            + ", ".join(sorted({f"{u.file} ({u.path}:{u.line}, was {u.version})" for u in moved})),
            "apply them before the controller moves (the runbook's CRD step)"))
        res.url_files += sorted({u.path for u in moved})
        res.url_targets += sorted({(posixpath.dirname(u.path), a) for u in moved for a in u.users})
    have = {u.file for u in urls}
    fetched = [u for u in urls if u.pinned and u.folder == "pkg/apis/crds"]
    for name, (fname, _) in sorted(crds.items(), key=lambda kv: kv[1][0]):
        group, home = name.split(".", 1)[1], home_group(name)
        like = next((u for u in fetched if u.name.split(".", 1)[1] == group), None) or \
            next((u for u in fetched if u.name.split(".", 1)[1] == home), None)
        if fname in have or name in held or like is None or not _new_in(fname, like.version, chart):
            continue
        url = like.url.replace(like.file, fname).replace(like.ref, like.ref.replace(like.version, chart))
        res.findings.append(Finding(
            "MIG-V1X-CRD-004", "warning", like.path, like.line,
            f"chart {chart} ships the {name} CRD, which no URL here fetches",
            f"fetch and apply {url} the way {like.path}:{like.line} does {like.file}"
            + (f" ({like.data} and {', '.join(like.users)})" if like.data and like.users else "")))

def _new_in(fname: str, since: str | None, chart: str) -> bool:
    """The chart's CRD file is one the release the URLs name did not ship."""
    old = chart_crds(since) if since else None
    return old is not None and fname not in {f for f, _ in old.values()}
