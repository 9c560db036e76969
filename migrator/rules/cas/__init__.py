"""The Cluster Autoscaler hop: a root with Cluster Autoscaler and node groups moves straight to Karpenter 1.x.

Phases (knowledge/hops.yaml): `install` (Karpenter next to Cluster Autoscaler, NodePools from the node groups),
`cutover` (Cluster Autoscaler to zero, the replaced node groups to zero nodes), `cleanup` (Cluster Autoscaler, its IAM
and the replaced node groups removed). Facts in knowledge/cas.yaml; inventory in migrator/cas.py. As an entry hop the
package also tells orchestration where such roots are (`root_markers`) and how one stands (`standing`, `present`).
"""
from __future__ import annotations

import posixpath

from ...cas import named_clusters, scan
from . import autoscaler, karpenter, nodegroups, workloads
from .convert import inventory
from .runbook import steps  # noqa: F401

RULES = {
    "cas/karpenter": (karpenter, karpenter.run),
    "cas/autoscaler": (autoscaler, autoscaler.run),
    "cas/nodegroups": (nodegroups, nodegroups.run),
    "cas/workloads": (workloads, workloads.run),
}


def root_markers(repo) -> list[str]:
    """Where each Cluster Autoscaler's cluster root is: its install's file; for a plain Deployment manifest (applied by
    kubectl) beside a cluster declared in Terraform, that cluster's file, since Karpenter's charts are written there
    and the root must stay the same one through every phase of the move."""
    inv = scan(repo)
    clusters = sorted({p for p, _ in inv.eks_modules} | {p for p, _ in repo.blocks("resource", "aws_eks_cluster")})
    one = clusters[0] if len({posixpath.dirname(p) for p in clusters}) == 1 and not inv.clusters else None
    if not clusters and inv.clusters:
        # an eksctl cluster: its ClusterConfig's file (the NodePools and chart values are written beside it), when
        # the repository holds that one cluster, or Cluster Autoscaler names exactly one of several
        names = {str((o.get("metadata") or {}).get("name")): p for p, _, o in inv.clusters}
        wanted = set(names) & named_clusters(inv) if len(names) > 1 else set(names)
        paths = {p for p, _, o in inv.clusters if str((o.get("metadata") or {}).get("name")) in wanted}
        one = paths.pop() if len(wanted) == 1 and len(paths) == 1 else None
    return [one if i.kind == "deployment" and one else i.path for i in inv.installs]


def present(ctx) -> bool:
    return inventory(ctx).present


def standing(ctx) -> dict | None:
    inv = inventory(ctx)
    if not inv.present:
        return None
    where = inv.installs[0].address
    return {"state": f"Cluster Autoscaler ({where}), node groups: {', '.join(g.name for g in inv.groups) or 'none found'}",
            "move": "the move to Karpenter",
            "note": ("MIG-CAS-001", f"runs Cluster Autoscaler ({where}) and no Karpenter",
                     "plan the move to Karpenter with `migrator plan <path> --to latest` (or --to 1.<minor>)")}
