"""The Cluster Autoscaler hop: a root with Cluster Autoscaler and node groups moves straight to Karpenter 1.x.

Phases (knowledge/hops.yaml): `install` (Karpenter next to Cluster Autoscaler, NodePools from the node groups),
`cutover` (Cluster Autoscaler to zero, the replaced node groups to zero nodes), `cleanup` (Cluster Autoscaler, its IAM
and the replaced node groups removed). Facts in knowledge/cas.yaml; inventory in migrator/cas.py. As an entry hop the
package also tells orchestration where such roots are (`root_markers`) and how one stands (`standing`, `present`).
"""
from __future__ import annotations

import posixpath
import re

from ...cas import named_clusters, scan
from ...roots import inside
from .convert import inventory


def __getattr__(name: str):
    """`RULES` and `steps`, imported when something asks for them: every plan asks where Cluster Autoscaler's roots
    are and how each root stands (below), only a root that moves from Cluster Autoscaler runs the rules, and their
    modules (the installs, the cutover, the runbook) cost 25-50 ms of a plan's imports."""
    if name == "RULES":
        from . import autoscaler, karpenter, nodegroups, workloads
        value: object = {
            "cas/karpenter": (karpenter, karpenter.run),
            "cas/autoscaler": (autoscaler, autoscaler.run),
            "cas/nodegroups": (nodegroups, nodegroups.run),
            "cas/workloads": (workloads, workloads.run),
        }
    elif name == "steps":
        from .runbook import steps as value
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def goal(ctx, target):
    """The hop's goal as the install will put it in: the chart of the karpenter module matched to the eks module's
    provider range when that is below the target's (karpenter.Installer.match_module), else the target."""
    import dataclasses
    from . import karpenter
    if not getattr(target, "chart", None) or not ctx.repo.files:
        return target
    chart = karpenter.Installer(ctx).matched_chart()
    return dataclasses.replace(target, chart=chart) if chart and chart != target.chart else target


def root_markers(repo) -> list[str]:
    """Where each Cluster Autoscaler's cluster root is: its install's file; for a plain Deployment manifest (applied by
    kubectl) or an install by a script, its cluster's file when that is plain to see - the eksctl ClusterConfig in its
    folder or a folder above, else the one Terraform cluster of the repository - since Karpenter's files are written
    beside the cluster and the root must stay the same one through every phase of the move."""
    inv = scan(repo)
    clusters = sorted({p for p, _ in inv.eks_modules} | {p for p, _ in repo.blocks("resource", "aws_eks_cluster")})
    one = clusters[0] if len({posixpath.dirname(p) for p in clusters}) == 1 and not inv.clusters else None
    return [(_eksctl_above(repo, inv, i) or one or i.path) if i.kind in ("deployment", "script") else i.path
            for i in inv.installs]


_KARPENTER = re.compile(r"karpenter\.(sh|k8s\.aws)/|chart:\s*[\"']?karpenter\b|/karpenter/karpenter\b")


def _eksctl_above(repo, inv, install) -> str | None:
    """The ClusterConfig file of a Deployment's cluster: the nearest folder at or above the Deployment's holding
    ClusterConfigs, when they are one cluster (or Cluster Autoscaler names exactly one of them) in one file, and
    nothing below that folder is another cluster's (another ClusterConfig deeper down, Karpenter already there)."""
    d = posixpath.dirname(install.path) or "."
    while True:
        here = [(p, o) for p, _, o in inv.clusters if (posixpath.dirname(p) or ".") == d]
        if here:
            break
        if d == ".":
            return _eksctl_named(repo, inv, install)
        d = posixpath.dirname(d) or "."
    names = {str((o.get("metadata") or {}).get("name")) for _, o in here}
    wanted = names & named_clusters(inv) if len(names) > 1 else names
    paths = {p for p, o in here if str((o.get("metadata") or {}).get("name")) in wanted}
    if len(wanted) != 1 or len(paths) != 1:
        return None
    mine = posixpath.dirname(install.path) or "."
    for p, _, _ in inv.clusters:
        if inside(posixpath.dirname(p) or ".", d) and (posixpath.dirname(p) or ".") != d:
            return None             # another cluster's ClusterConfig below: the folder is not this cluster's alone
    for p in repo.containing("karpenter"):          # every match of _KARPENTER names it
        pd = posixpath.dirname(p) or "."
        if inside(pd, d) and not inside(pd, mine) and _KARPENTER.search(repo.text(p)):
            return None             # Karpenter of another cluster (or of this one, rooted there already)
    return paths.pop()


def _eksctl_named(repo, inv, install) -> str | None:
    """A script outside every ClusterConfig's folder (a CI workflow under .github/): the ClusterConfig file of the one
    cluster (name + region) of the repository that bears the name the install gives Cluster Autoscaler, when no
    Terraform cluster bears it too (which one makes the cluster would be a guess)."""
    from ...cas import install_clusters
    from .install.clusters import terraform_clusters_named
    names = install_clusters(install)
    if install.kind != "script" or len(names) != 1:
        return None
    mine = [(p, o) for p, _, o in inv.clusters if str((o.get("metadata") or {}).get("name")) in names]
    if len({str((o.get("metadata") or {}).get("region")) for _, o in mine}) != 1 or \
            len({posixpath.dirname(p) for p, _ in mine}) != 1 or \
            terraform_clusters_named(repo, names, {str((o.get("metadata") or {}).get("region")) for _, o in mine}):
        return None
    return sorted(p for p, _ in mine)[0]


def present(ctx) -> bool:
    return inventory(ctx).present


def left_beside(ctx) -> tuple[str, str, str] | None:
    """Cluster Autoscaler still installed beside Karpenter while no NodePool takes over a node group of this root
    (none declared here, or none with its NodePool): no cutover or cleanup is planned for it, said."""
    from .install.common import MARK
    inv = inventory(ctx)
    if not inv.present or any(MARK in ctx.repo.text(c.path) for c in ctx.charts):
        return None                 # migrator's own install waiting for its NodePools says so itself
    where = ", ".join(sorted({i.address for i in inv.installs}))
    groups = ", ".join(g.name for g in inv.groups)
    return ("MIG-CAS-065", f"Cluster Autoscaler ({where}) still runs beside Karpenter, and no NodePool of this root "
            "takes over " + (f"its node groups ({groups})" if groups else "a node group declared in the repository")
            + ": migrator plans no cutover or cleanup of it, so both may scale this cluster",
            "when Karpenter's NodePools carry the workloads, scale Cluster Autoscaler to zero and remove it (and its "
            "IAM) by hand - or keep it on purpose for groups Karpenter does not replace")


def standing(ctx) -> dict | None:
    inv = inventory(ctx)
    if not inv.present:
        return None
    where = inv.installs[0].address
    return {"state": f"Cluster Autoscaler ({where}), node groups: {', '.join(g.name for g in inv.groups) or 'none found'}",
            "move": "the move to Karpenter",
            "note": ("MIG-CAS-001", f"runs Cluster Autoscaler ({where}) and no Karpenter",
                     "plan the move to Karpenter with `migrator plan <path> --to latest` (or --to 1.<minor>)")}
