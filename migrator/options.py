"""Run options shared by every hop (set from the command line)."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Options:
    keep_alpha_defaults: bool = False       # v1alpha5 -> v1beta1: add the requirements the alpha webhook defaulted
    node_role: str | None = None            # node IAM role when the repository does not say it
    node_roles: dict[str, str] = field(default_factory=dict)   # per cluster root (configuration file)
    select: list[str] = field(default_factory=list)            # finding codes / prefixes to report (all if empty)
    ignore: list[str] = field(default_factory=list)            # finding codes / prefixes not to report
    exclude: list[str] = field(default_factory=list)           # path globs discovery skips
    identity: str | None = None             # irsa | pod-identity: the controller's identity on module v21
    cluster_name: str | None = None         # facts for policies outside Terraform when the repository lacks them
    region: str | None = None
    account_id: str | None = None
    roots: dict[str, dict] = field(default_factory=dict)   # per cluster root: cluster_name/region/account_id/node_role
    node_group_keep: str | None = None      # Cluster Autoscaler hop: the node group that stays for the controller
    auto_mode_node_role: str | None = None  # EKS Auto Mode hop: the NodeClasses' node role where the root cannot say
    widen_instance_types: bool = False      # Cluster Autoscaler hop: instance family/size requirements, not exact types
    chart_version: str | None = None        # the chart a root runs when the repository does not say (set elsewhere)
    since: str | None = None                # a git ref: each root's standing is read there, its target in the files
    since_charts: dict = field(default_factory=dict)    # --since: root -> the chart version it pinned at the ref
    since_modules: dict = field(default_factory=dict)   # --since: "file|address" -> the karpenter module pin at the ref
