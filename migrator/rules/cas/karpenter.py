"""Rule `cas/karpenter`: Karpenter installed next to Cluster Autoscaler (phase `install`).

Terraform roots (a terraform-aws-modules/eks cluster or an `aws_eks_cluster`): a new `karpenter.tf` beside the
cluster holds the terraform-aws-modules karpenter module (controller role and policy, interruption queue, node role
with a fixed name, access entry), the `karpenter-crd` and `karpenter` releases at the target, the controller kept
on the node group that stays (node affinity), and an EC2NodeClass plus one NodePool per node group, as
`kubectl_manifest` resources when the root uses the kubectl provider, else in `karpenter-nodepools.yaml` applied by
the runbook. The discovery tag goes on the private subnets (module vpc `private_subnet_tags`) and the node security
group (module eks `node_security_group_tags`). The controller's identity is EKS Pod Identity when the cluster runs
the agent add-on, else IRSA through the cluster's OIDC provider.
Every object validates against the target's CRDs before it is written.
"""
# What the install writes is in install/, one room per installer shape (install/__init__.py, docs/design.md).
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
