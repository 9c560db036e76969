"""Rule `cas/karpenter`: Karpenter installed next to Cluster Autoscaler (phase `install`), and its NodePools file
listed in Flux's kustomization at the cutover.

What the install writes is in `install/`, one room per installer shape (docs/design.md has the layout):
`installer.py` decides where the cluster and Cluster Autoscaler are and which shape writes; `terraform.py` the
karpenter.tf beside the cluster; `stages.py`, `terragrunt.py` and `tfvars.py` the installs over two Terraform stages,
Terragrunt units and per-environment tfvars; `eksctl.py`, `gitops.py` (Flux, Argo CD, kustomize), `helmfile.py` the
installs outside Terraform and `values.py` their chart values; `nodepools.py` the NodePools from the node groups,
`tags.py` the discovery tags, `access.py` the node role's access; `clusters.py` and `common.py` what they share.
Every object validates against the target's CRDs before it is written.
"""
from __future__ import annotations

import posixpath

from ...placement import kustomization_insert
from . import convert
from .install.clusters import _oidc_provider, _subnet_set, terraform_clusters_named, zone_pinned  # noqa: F401
from .install.common import MARK, NODE_MAPPING, PHASE, RULE, InstallResult  # noqa: F401
from .install.installer import Installer


def run(ctx, phase: str, done: dict | None = None) -> InstallResult:
    if phase == "cutover":
        return _list_nodepools(ctx)
    if phase != PHASE:
        res = InstallResult()
        res.done = bool(ctx.charts)
        return res
    return Installer(ctx).run()


def _list_nodepools(ctx) -> InstallResult:
    """Cutover, Flux: the NodePools file written at install joins the kustomization beside Cluster Autoscaler's."""
    res = InstallResult(done=True)
    cas = convert.inventory(ctx)
    for ci in (cas.installs if cas is not None else []):
        if ci.kind != "flux":
            continue
        pools = posixpath.join(posixpath.dirname(ci.path), "karpenter-nodepools.yaml")
        if pools in ctx.repo.files:
            e = kustomization_insert(ctx.repo, ci.path, pools, RULE)
            if e is not None:
                res.edits.append(e)
                res.objects_file = pools
                res.flux = ["listed"]
    return res
