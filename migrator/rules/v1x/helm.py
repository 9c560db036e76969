"""Rule `v1x/helm`: both charts to the target's newest patch, with every crossed minor's values changes.

Removed keys are removed in every values shape (the first hop's Helm machinery); keys a minor's chart refuses
to install without (1.5: settings.clusterName) are errors when the repository does not set them; defaults that
change behaviour (1.6: reservedCapacity on) are warnings unless the repository sets the key itself.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ...inventory.charts import UNREADABLE
from ...model import Finding
from ...path import MINORS, parse_version
from ..v1beta1.helm import HelmResult, HelmRule
from .plan import crossed, stop

RULE = "v1x/helm"
HOP = "v1->1.x"


def _stated(ctx, key: str):
    """A value the repository states for a required chart key elsewhere (knowledge/minors.yaml `require_from`)."""
    for src in MINORS.get("require_from", {}).get(key, []):
        for v in ctx.helm_values:
            if v.key == src["key"] and isinstance(v.value, list):
                for item in v.value:
                    if isinstance(item, dict) and item.get(src["match"]) == src["name"] and item.get("value"):
                        return str(item["value"]), f"{src['key']} {src['name']} ({v.path}:{v.line})"
    return None, None


@dataclass
class Values:
    """Where the onward hop takes one chart install and what its values need on the way."""
    target: str
    why: str | None
    rows: list[dict]                                  # controller chart value rows (remove / add)
    crd_rows: list[dict]                              # karpenter-crd value rows
    held: list = field(default_factory=list)          # (minor row, key, reason): required keys nobody states
    crossed: list[dict] = field(default_factory=list)
    unseen: list = field(default_factory=list)        # (minor row, key, reason, values source): required, not read


def values_plan(ctx, done: dict, installed: str | None) -> Values | None:
    """The target, value rows and held keys for the install named `installed` (None: no install to check
    required keys on); None when the chart is already at the target."""
    target, why = stop(ctx, done)
    current = ctx.chart_version
    if current and parse_version(current) >= parse_version(target):
        return None
    keys = {v.key for v in ctx.helm_values}
    # a leftover key renamed on the way states the one it becomes, where migrator writes the rename: never a script's
    # --set, which is said (MIG-HELM-037) and left as it is
    scripted = {prm.name for c in ctx.charts if c.chart == "karpenter" for vs in c.values if vs.kind == "cli_set"
                for prm in vs.params}
    keys |= {spec["to"] for r in crossed(None, target) for k, spec in r.get("values", {}).get("rename", {}).items()
             if k in keys and k not in scripted}
    adds, held, unseen = [], [], []
    hidden = [vs for c in ctx.charts if c.chart == "karpenter" for vs in c.values if vs.kind in UNREADABLE]
    for r in crossed(current, target):
        for key, reason in r.get("require", {}).items():
            if installed is None or key in keys:
                continue
            value, source = _stated(ctx, key)
            if value is not None:
                adds.append({"key": key, "add": value, "why": f"{reason}; taken from {source}"})
            elif hidden:            # it may be in values migrator cannot read: said, not held
                unseen.append((r, key, reason, hidden[0]))
            else:
                held.append((r, key, reason))
    if held and not _bump(ctx):     # the chart would refuse to install: stay below the first minor that requires it
        r, key, reason = held[0]
        below = [m for m in MINORS["minors"] if parse_version(m["minor"]) < parse_version(r["minor"])][-1]
        target, why = below["newest"], f"{reason}, and {installed} does not set {key}"
    rows = crossed(current, target)
    # keys removed by minors the chart already passed are leftovers: removed too (they never pull the root back)
    done_rows = [r for r in crossed(None, target) if r not in rows]

    def removals(key: str) -> list[dict]:
        return [{"key": k, "remove": True, "why": w} for r in rows for k, w in r.get(key, {}).get("remove", {}).items()] + \
            [{"key": k, "remove": True, "why": f"{w} (a leftover: the chart already runs {current})"}
             for r in done_rows for k, w in r.get(key, {}).get("remove", {}).items()]
    renames = [{"key": k, "rename": spec["to"], "why": spec["why"]} for r in rows + done_rows
               for k, spec in r.get("values", {}).get("rename", {}).items()]
    return Values(target, why, removals("values") + renames + adds, removals("crd_values"), held, rows, unseen)


def claimed(ctx, installed: str | None) -> tuple[list[dict], list[tuple[dict, str, str]]]:
    """What the chart version the files pin already requires (a bumped version string: `1.4.0` -> `1.6.0` by a bot):
    (value rows that add a required key the repository states elsewhere, (minor row, key, reason) it states nowhere).
    Only where every values source is readable: a key that may be in values migrator cannot read is never a gap."""
    current = ctx.chart_version
    if installed is None or not current or parse_version(current) is None:
        return [], []
    keys = {v.key for v in ctx.helm_values}
    if any(vs.kind in UNREADABLE for c in ctx.charts if c.chart == "karpenter" for vs in c.values):
        return [], []
    adds, gaps = [], []
    for r in crossed(None, current):
        for key, reason in r.get("require", {}).items():
            if key in keys:
                continue
            value, source = _stated(ctx, key)
            if value is not None:
                adds.append({"key": key, "add": value, "why": f"{reason}; taken from {source}"})
            else:
                gaps.append((r, key, reason))
    return adds, gaps


def run(ctx, phase: str, done: dict) -> HelmResult:
    ci = next((c for c in ctx.charts if c.chart == "karpenter"), None)
    from ...inventory.blueprints import stuck as stuck_at
    stuck = ci is not None and bool(ci.family) and bool(stuck_at(ctx.repo, ci))   # MIG-HELM-027
    vp = values_plan(ctx, done, ci.address if ci and not stuck else None)
    extra = getattr(done.get("v1x/terraform_module"), "value_rows", [])    # what the module move needs
    fixes, gaps = claimed(ctx, ci.address if ci and not stuck else None)
    said = [Finding("MIG-V1X-HELM-005", "error", ci.path, ci.line,
                    f"the files pin chart {ctx.chart_version}, and chart {r['minor']} on: {reason}; {ci.address} does "
                    f"not set {key}, so this version cannot be installed as written",
                    f"set {key} in the chart values (the cluster's name), or pin the chart below {r['minor']}")
            for r, key, reason in gaps] if ci else []
    pinned = (getattr(ctx, "since", None) or (None, ctx.chart_version))[1]
    if ci and pinned in MINORS["skip"]:     # a patch never to land on, already in the files
        said.append(Finding("MIG-V1X-HELM-007", "warning", ci.path, ci.line,
                            f"the files pin chart {pinned}: {MINORS['skip'][pinned]}",
                            "move to the newest patch of its minor (planned here) or past it"))
    said += [Finding("MIG-V1X-HELM-006", "info", ci.path, ci.line,
                     f"the files pin chart {ctx.chart_version}, which requires {row['key']}: added ({row['why']})")
             for row in fixes] if ci else []
    if vp is None:
        if not extra and not fixes:
            res = HelmResult()
            res.findings += said
            return res
        res = HelmRule(ctx.repo, ctx.manifests, ctx.charts, phase, hop=HOP, rule=RULE, targets={}, rows=extra + fixes,
                       bump=False, add_crd_release=False, owns=ctx.owns).run()
        res.findings += said
        return res
    target, values, crd = vp.target, vp.rows + extra + fixes, vp.crd_rows
    from ...crdfiles import owners
    # CRDs kept as files, or fetched from Karpenter's repository by URL: they are the CRDs' owner, not a new release
    files = any(owners(ctx.repo, ctx.owns))
    res = HelmRule(ctx.repo, ctx.manifests, ctx.charts, phase, hop=HOP, rule=RULE,
                   targets={"karpenter": target, "karpenter-crd": target}, rows=values, crd_rows=crd,
                   bump=True, add_crd_release=not files and not _patch_bump(ctx, target), owns=ctx.owns).run()
    res.findings += findings(ctx, vp, (ci.path, ci.line) if ci else ("", 0), ci.address if ci else None) + said
    if vp.held and not _bump(ctx):          # the chart stays below a minor that requires a value nobody states
        res.held = (target, vp.why)
    return res


def _bump(ctx) -> str | None:
    """--since over a bump: the version the pull request's files ask for (kept, never set back), else None."""
    since = getattr(ctx, "since", None)
    return since[1] if since and since[2] == "bump" else None


def _patch_bump(ctx, target: str) -> bool:
    """A bump (--since) within one minor: the CRDs' fields stay, so no CRD release and no ordering is added
    (a bump that needs nothing changes nothing)."""
    from .plan import minor_of
    return bool(getattr(ctx, "since", None)) and minor_of(ctx.chart_version) == minor_of(target)


def findings(ctx, vp: Values, where: tuple[str, int], installed: str | None) -> list[Finding]:
    """What the onward hop says about one install: required keys nobody states, defaults that change, a held target."""
    out = []
    keys = {v.key for v in ctx.helm_values}
    bump = _bump(ctx)
    for r, key, reason in vp.held:
        if bump:                # a bot's bump: the version is the pull request's, never set back; it cannot install
            out.append(Finding("MIG-V1X-HELM-005", "error", *where,
                               f"the files pin chart {bump}, and chart {r['minor']} on: {reason}; {installed} does not "
                               f"set {key}, so this version cannot be installed as written",
                               f"set {key} in the chart values (the cluster's name), or pin the chart below "
                               f"{r['minor']}"))
            continue
        out.append(Finding("MIG-V1X-HELM-001", "error", *where,
                           f"chart {r['minor']}: {reason}; {installed} does not set {key}, so the chart "
                           f"is held at {vp.target}", f"set {key} in the chart values, then run migrator again"))
    for r, key, reason, vs in vp.unseen:
        out.append(Finding("MIG-V1X-HELM-004", "warning", vs.path, vs.line,
                           f"chart {r['minor']}: {reason}; {installed} passes values migrator cannot read here, so "
                           f"whether they set {key} is not known",
                           f"make sure the values set {key} before the chart moves to {vp.target}"))
    for r in vp.crossed:
        for key, note in r.get("values", {}).get("defaults", {}).items():
            if installed is not None and key not in keys:
                out.append(Finding("MIG-V1X-HELM-002", "warning", *where, f"chart {r['minor']}: {note}",
                                   f"decide, and set {key} explicitly"))
    if vp.why and not bump:
        out.append(Finding("MIG-V1X-HELM-003", "warning", *where,
                           f"the chart goes to {vp.target}, not {ctx.target.chart}: {vp.why}",
                           "see the module finding for the ways on"))
    return out
