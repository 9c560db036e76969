"""Rule `v1x/crds`: Karpenter CRDs vendored as files (migrator/crdfiles.py) against the chart the root runs once the
plan is applied (or the version a bump moves it to): a set whose fields or kinds are older than that chart needs is
said (MIG-V1X-CRD-001), with the commands that regenerate it at the chart's version in the runbook. migrator does
not write CRD files itself: they come from the chart release, verbatim (`helm show crds`)."""
from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from ... import knowledge
from ...crdfiles import stale, vendored, version_of
from ...model import Finding
from ...path import parse_version
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
    sets = vendored(ctx.repo, ctx.owns)
    if not sets:
        return res
    res.vendored = True
    chart = chart_after(ctx, done)
    if not chart or parse_version(chart) is None:
        return res
    for vs in sets:
        why = stale(vs, chart)
        if not why:
            continue
        first = min(vs.files, key=lambda f: (f.path, f.line))
        at = version_of(vs)
        cmds = regenerate(vs, chart)
        res.commands += cmds + [f"kubectl apply --server-side -f {shlex.quote(p)}" for p in vs.paths]
        res.files += vs.paths
        res.findings.append(Finding(
            "MIG-V1X-CRD-001", "warning", first.path, first.line,
            f"the CRDs vendored in {vs.folder or '.'}/ are older than chart {chart} needs"
            + (f" (their fields are Karpenter {at}'s)" if at else "") + ": " + "; ".join(why)
            + ". The controller would write fields the API server prunes, or watch kinds that do not exist",
            "regenerate them at the chart's version before the controller moves: " + " ; ".join(cmds)
            + " (then commit them; whatever applies them, Flux, Argo CD, kustomize or kubectl, applies the new ones)"))
    return res
