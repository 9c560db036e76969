"""The whole path: v1alpha5 -> v1beta1 -> v1 (1.0) -> the newest 1.x, and where a repository stands on it.

Position = the API era of the Karpenter objects (the oldest one present decides) and, for the chart-only view,
the controller chart version. `--to` names a point on the path: an API version (`v1beta1`, `v1`), a chart
version (`1.8`, `1.8.3`) or `latest`. One run plans one hop; the later hops are listed for the next runs.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import knowledge
from .inventory import ChartInstall, Manifest, Repo
from .inventory.sites import definition_sites

HOPS = knowledge.load("hops")
MINORS = knowledge.load("minors")
ERAS = [e["api"] for e in HOPS["eras"]]


from .versions import admits, module_default, parse_version, range_floor, shift_range, version_of, version_range  # noqa: F401,E402


class PathError(ValueError):
    """A --to the path does not know."""


def format_version(target: str, current: str) -> str:
    """Target version spelled like the user's for charts published with a v prefix (< 0.35.0, knowledge/helm.yaml)."""
    before = knowledge.load("helm")["chart"]["v_prefix_before"]
    if parse_version(target) < parse_version(before) and current.strip().startswith("v"):
        return "v" + target
    return target


def newest_patch(minor: str) -> str | None:
    return next((r["newest"] for r in MINORS["minors"] if r["minor"] == minor), None)


EXITS = {h["to"]: h for h in HOPS["hops"] if h.get("exit") and h.get("implemented")}    # `--to auto-mode`


@dataclass(frozen=True)
class Target:
    era: str                    # API version the objects end on
    chart: str | None = None    # chart version for the onward 1.x hop (None: the era's own hop target)
    exit: str | None = None     # a hop off self-managed Karpenter (knowledge/hops.yaml `exit`): its `to`

    def __str__(self) -> str:
        return self.exit or self.chart or self.era

    @property
    def exit_hop(self) -> dict | None:
        return EXITS.get(self.exit) if self.exit else None


def parse_target(to: str | None) -> Target | None:
    if to is None:
        return None
    t = to.strip()
    if t in ERAS:
        return Target(t)
    if t == "latest":
        return Target("v1", MINORS["newest"])
    if t in EXITS:          # off self-managed Karpenter: a root below the hop's floor walks up to the newest 1.x first
        return Target("v1", MINORS["newest"], t)
    v = parse_version(t)
    if v is None or v[0] != 1:
        known = ", ".join(ERAS + ["latest", "1.<minor>[.<patch>]"] + sorted(EXITS))
        raise PathError(f"--to {to}: expected one of {known}")
    minor = f"{v[0]}.{v[1]}"
    newest = newest_patch(minor)
    if newest is None:
        raise PathError(f"--to {to}: Karpenter {minor} is not known to this version of migrator "
                        f"(newest known: {MINORS['newest']})")
    if len(v) == 3:
        exact = ".".join(map(str, v))
        if exact in MINORS["skip"]:
            raise PathError(f"--to {to}: do not install {exact}: {MINORS['skip'][exact]}; use {newest}")
        if parse_version(exact) > parse_version(newest):
            raise PathError(f"--to {to}: newest known {minor} patch is {newest}")
        return Target("v1", exact)
    return Target("v1", newest)


def blueprints_default(ci) -> str | None:
    """The chart version an eks-blueprints-addons call installs when it does not set karpenter.chart_version."""
    from . import knowledge
    facts = knowledge.load("karpenter_module")[ci.family or "blueprints_addons"]
    return module_default(ci.block, facts["default_chart"])


def chart_version(repo: Repo, charts: list[ChartInstall], owns=None, chart: str = "karpenter") -> str | None:
    """The controller chart version the repository (or, with `owns`, one cluster root) pins, when it is written
    statically. A shared module's version passed by each caller is read where this root passes it."""
    for ci in charts:
        if ci.chart != chart:
            continue
        if ci.kind == "argocd":
            v = version_of(ci.source_map.get("targetRevision"))
            if v:
                return v
            if ci.evaluated_version and parse_version(ci.evaluated_version):     # an ApplicationSet's generators
                return ci.evaluated_version.lstrip("v")
        elif ci.kind in ("kustomize", "eksctl", "umbrella", "helmfile"):
            v = version_of(ci.source_map.get("version"))
            if v:
                return v
            if ci.evaluated_version and parse_version(ci.evaluated_version):     # helmfile: its environments' values
                return ci.evaluated_version.lstrip("v")
        elif ci.kind == "flux":
            v = version_of(((((ci.obj.get("spec") or {}).get("chart") or {}).get("spec") or {}).get("version")))
            if v:
                return v
            if ci.evaluated_version and parse_version(ci.evaluated_version):     # an OCIRepository's tag or semver
                return ci.evaluated_version.lstrip("v")
        elif ci.kind in ("helm", "terragrunt"):
            if ci.evaluated_version and parse_version(ci.evaluated_version):
                return ci.evaluated_version.lstrip("v")
        elif ci.kind == "blueprints" and ci.version is None:
            return blueprints_default(ci)
        elif ci.version is None and (ci.attrs or {}).get("module") and ci.evaluated_version:    # the module's default
            return ci.evaluated_version.lstrip("v")
        elif ci.vendored and ci.evaluated_version and parse_version(ci.evaluated_version):
            return ci.evaluated_version.lstrip("v")     # a chart folder of the repository: its Chart.yaml
        elif ci.version is not None:
            sites, _ = definition_sites(repo, ci.path, ci.version,
                                        via=set(ci.shared.calls) if ci.shared is not None else None)
            if owns is not None:
                sites = [s for s in sites if owns(s.path)] or sites
            found = [s.value.lstrip("v") for s in sites if parse_version(s.value)]
            if found:       # set per environment (tfvars): the earliest decides, so no cluster is planned from ahead
                return min(found, key=parse_version)
            if ci.generic:                  # one item of an add-ons list: its entry as written (patched or not)
                from .inventory import item_entry
                found = item_entry(repo, ci, "version")
                if found is not None and parse_version(str(found[1].literal())):
                    return str(found[1].literal()).lstrip("v")
            if ci.evaluated_version and parse_version(ci.evaluated_version):
                return ci.evaluated_version.lstrip("v")
    return None


def served_by(version: str | None) -> dict | None:
    """The row of knowledge/hops.yaml `serves` for a controller chart version: the API eras it serves."""
    v = parse_version(version) if version else None
    if v is None:
        return None
    return next(r for r in HOPS["serves"] if "below" not in r or v < parse_version(r["below"]))


def objects_era(manifests: list[Manifest]) -> str | None:
    """The oldest API era of the objects (None without objects)."""
    eras = {m.era for m in manifests}
    return next((era["api"] for era in HOPS["eras"] if era["name"] in eras), None)


def hop_key(hop: dict) -> str:
    """A hop's name in the tables keyed by hop (knowledge/runbook.yaml, drift.yaml, iam.yaml): `key`, else from->to."""
    return hop.get("key") or f"{hop['from']}->{hop['to']}"


def hops_between(current: str, target: Target) -> list[dict]:
    """The hops from the current era to the target, in order (the onward 1.x hop last, when asked for)."""
    out = []
    era = current
    while era != target.era:
        hop = next((h for h in HOPS["hops"] if h["from"] == era and not h.get("onward") and not h.get("exit")), None)
        if hop is None:
            break
        out.append(hop)
        era = hop["to"]
    if target.chart and target.era == ERAS[-1]:
        onward = next((h for h in HOPS["hops"] if h.get("onward")), None)
        if onward is not None:
            out.append(onward)
    if target.exit_hop is not None:
        out.append(target.exit_hop)
    return out


def describe(hop: dict, target: Target | None = None) -> str:
    if hop.get("exit"):
        return f"{hop['from']} → {hop['to']}"
    to = target.chart if hop.get("onward") and target and target.chart else hop["to"]
    chart = to if hop.get("onward") else hop["chart"]["version"]
    if hop.get("chart_from_target") and target is not None and target.chart:
        chart = target.chart
    return f"{hop['from']} → {to} (chart {chart})"
