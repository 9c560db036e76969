"""The EKS Auto Mode hop: a root on self-managed Karpenter 1.x moves to Amazon EKS Auto Mode, side by side.

Phases (knowledge/hops.yaml): `enable` (Auto Mode on for the cluster, in place), `nodepools` (NodeClasses and new
NodePools next to Karpenter's, under a temporary taint), `workloads` (selectors to Auto Mode's keys, the taint off),
`cutover` (Karpenter's NodePools and EC2NodeClasses removed), `cleanup` (the controller and its AWS side removed, its
CRDs kept). Facts in knowledge/auto_mode.yaml.
"""
from __future__ import annotations

from . import cleanup, cluster, nodepools, workloads
from .runbook import steps  # noqa: F401

RULES = {
    "auto/cluster": (cluster, cluster.run),
    "auto/nodepools": (nodepools, nodepools.run),
    "auto/workloads": (workloads, workloads.run),
    "auto/cleanup": (cleanup, cleanup.run),
}


def state(hop: dict, ctx, base: str) -> str:
    """Where the root stands on the way to Auto Mode, for the status table: Auto Mode on or not, whose objects."""
    from ...standing import auto_mode
    cl = ctx.result(hop, "enable")["auto/cluster"]
    auto = [m for m in ctx.manifests if auto_mode(m)]
    karp = [m for m in ctx.manifests if m.kind in ("NodePool", "EC2NodeClass") and not auto_mode(m)]
    on = "EKS Auto Mode on" if cl.enabled else "EKS Auto Mode not on yet" if cl.installer else \
        "EKS Auto Mode: the cluster is declared elsewhere"
    from ...inventory import poolreleases
    rel = [r for r in poolreleases.scan(ctx.repo) if ctx.owns(r.path) and not r.auto_mode]
    left = f"Karpenter pools of {len(rel)} chart release{'s' if len(rel) != 1 else ''} migrator does not read" \
        if rel else "no Karpenter object left"
    parts = [f"{len(karp)} Karpenter object{'s' if len(karp) != 1 else ''}" if karp else left,
             f"{len(auto)} Auto Mode object{'s' if len(auto) != 1 else ''}" if auto else ""]
    return f"{on}; " + ", ".join(p for p in parts if p) + (f" ({base})" if karp and base not in ("v1", "") else "")


def _class_name(obj) -> str | None:
    """The EC2NodeClass a NodePool's nodeClassRef names, as written (None: it names none)."""
    ref = (((obj.get("spec") or {}).get("template") or {}).get("spec") or {}).get("nodeClassRef") or {} \
        if isinstance(obj, dict) else {}
    return str(ref.get("name")) if isinstance(ref, dict) and ref.get("name") is not None else None


def settled(hop: dict, ctx) -> list[tuple[str, str, int, str]] | None:
    """When no phase has work left but Karpenter objects remain because Auto Mode cannot run them (a hybrid move):
    (what stays, path, line, why) of each, so the plan says the move is as far as it goes; None otherwise."""
    from ...standing import auto_mode
    from . import convert
    karp = [m for m in ctx.manifests if m.kind in ("NodePool", "EC2NodeClass") and not auto_mode(m)]
    if not karp:
        return None
    from .classes import blocked_elsewhere, undeclared
    from .overlays import pinned
    pins = {key: f"as {k} patches it, {why}" for key, (k, _line, why) in pinned(ctx).items()}
    blocked = {str(m.name): convert.blocked_class(m.obj) or pins.get(("EC2NodeClass", str(m.name)))
               for m in karp if m.kind == "EC2NodeClass"}
    twins = {str(m.name) for m in ctx.manifests if auto_mode(m) and m.kind == "NodeClass"}
    computed = convert.computed_classes(ctx)
    whys, pools = {}, {}
    for m in karp:
        if m.kind != "NodePool":
            continue
        cls = _class_name(m.obj)
        elsewhere = blocked_elsewhere(ctx, cls) if cls is not None and cls not in blocked else None
        whys[id(m)] = convert.blocked_pool(m.obj) or pins.get(("NodePool", str(m.name))) or \
            convert.unwritable(m, computed) or \
            (f"its EC2NodeClass {cls} cannot move" if blocked.get(cls) else None) or \
            (f"its EC2NodeClass {cls} ({elsewhere[0]}, another root) cannot move: {elsewhere[1]}" if elsewhere else
             None) or \
            (_undeclared_why(ctx, m.masked.unmask(cls))
             if cls is not None and cls not in blocked and undeclared(ctx, m.masked.unmask(cls)) else None)
        pools[m.masked.unmask(str(m.name))] = cls
    for m in karp:
        if m.kind == "EC2NodeClass":
            users = sorted(p for p, c in pools.items() if c == str(m.name))
            # a class that could move, whose twin is written, stays for the pools that stay on it
            whys[id(m)] = blocked[str(m.name)] or (f"NodePool {', '.join(users)}, which stays, uses it" if users and
                                                   convert.nodeclass_name(str(m.name)) in twins else None)
    if any(w is None for w in whys.values()):
        return None                     # something can still move: the phases say what
    return [(f"{m.kind} {m.masked.unmask(str(m.name))}", m.path, m.line, whys[id(m)]) for m in karp]


def _undeclared_why(ctx, cls: str) -> str:
    """Why a pool stays when its EC2NodeClass is in no file migrator converts (classes.py, MIG-AUTO-068)."""
    from . import convert
    from .classes import kept_in
    kept = kept_in(ctx.repo, cls)
    where = f" (it is kept in {', '.join(kept)})" if kept else ""
    return (f"its EC2NodeClass {cls} is in no file migrator converts{where}: write the Auto Mode NodeClass "
            f"{convert.nodeclass_name(cls)} (eks.amazonaws.com/v1) for it by hand (MIG-AUTO-068)")


def unmovable(hop: dict, ctx) -> list[tuple[str, str, int, str]] | None:
    """Before Auto Mode is turned on: when no Karpenter object of the root can move to it (each stays, `settled`'s
    reasons), no pool is held where migrator does not write twins, and no NodePool of another root could move either,
    turning Auto Mode on would only run it beside Karpenter with no pool of its own: (what stays, path, line, why) of
    each, so the plan says so before the enable phase; None otherwise (the phases go on)."""
    from ...standing import auto_mode
    if any(auto_mode(m) for m in ctx.manifests):
        return None
    if ctx.result(hop, "enable")["auto/cluster"].enabled:
        return None
    kept = settled(hop, ctx)
    if not kept:
        return None
    from .unconverted import objects
    if objects(ctx):
        return None                     # pools migrator cannot read here may move: the phases go on
    from . import convert
    from .classes import blocked_elsewhere
    for o in getattr(ctx, "all_manifests", None) or []:
        path = o.tf_path or o.path
        if o.kind != "NodePool" or o.era != "v1" or auto_mode(o) or ctx.owns(path):
            continue
        cls = _class_name(o.obj)
        if convert.blocked_pool(o.obj) is None and (cls is None or blocked_elsewhere(ctx, cls) is None):
            return None                 # a pool of another root may move on the Auto Mode this root turns on
    return kept


def waits_for(said: list) -> str | None:
    """What comes next for a root `stalled` said is only waiting (MIG-AUTO-070): its cutover, after another root's."""
    if said and all(f.code == "MIG-AUTO-070" for f in said):
        return "phase cutover, once the NodePools of another root that name its EC2NodeClasses are gone (MIG-AUTO-070)"
    return None


def stalled(hop: dict, ctx) -> list | None:
    """Why no phase has work though the move is not over, said; None when nothing is left to say.
    - The cutover keeps EC2NodeClasses that another root's NodePools may run on (MIG-AUTO-070): that root's cutover
      comes first.
    - No Karpenter NodePool or EC2NodeClass is left in the root, yet Karpenter's controller is still installed here and
      the cleanup will not remove it (no Auto Mode NodePool in the root either, MIG-AUTO-042): said (MIG-AUTO-061),
      since the cluster may run pools applied from outside these files."""
    from ...model import Finding
    from ...standing import auto_mode
    cut = ctx.result(hop, "cutover").get("auto/nodepools")
    waits = [f for f in getattr(cut, "findings", []) if f.code == "MIG-AUTO-070"]
    if waits:
        return waits                    # classes another root's pools may run on: its cutover comes first
    if any(m.kind in ("NodePool", "EC2NodeClass") and not auto_mode(m) or m.kind == "NodePool" and auto_mode(m)
           for m in ctx.manifests):
        return None                     # pools to move, or Auto Mode pools: the phases (or the cleanup) decide
    cl = ctx.result(hop, "enable")["auto/cluster"]
    installs = [c for c in ctx.charts if c.chart == "karpenter" and ctx.owns(c.path)]
    if not installs or not cl.enabled:
        return None
    c = installs[0]
    from .unconverted import objects, what_for
    held = objects(ctx)         # pools migrator does not write (a remote pool chart's, a heredoc's): named
    if held:
        return [Finding(
            "MIG-AUTO-059", "warning", o.path, o.line,
            f"{o.what}: no Auto Mode twin is written for {what_for(o)}, so Karpenter's controller ({c.address}) "
            "stays installed", o.fix) for o in held]
    return [Finding(
        "MIG-AUTO-061", "warning", c.path, c.line,
        f"EKS Auto Mode is on and this root holds no Karpenter NodePool or EC2NodeClass and no Auto Mode NodePool, "
        f"but Karpenter's controller is still installed ({c.address}): migrator cannot tell whether pools applied "
        "from outside these files still run on it, so it does not remove it",
        "list the cluster's pools (kubectl get nodepools,ec2nodeclasses): write the Auto Mode twins of any that run "
        "there and delete the old ones, then remove the controller's release and its IAM by hand, or write the "
        "twins in these files and run migrator again")]
