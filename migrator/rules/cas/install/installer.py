"""The install's decisions: which cluster Cluster Autoscaler scales, whether Karpenter can be written beside it,
the node group that stays, and the layout the installer shape writes in (the rooms beside this one write it)."""
from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Any

from .... import knowledge
from ....cas import CasInventory, scan
from ....edits import NewFile, to_newline
from ....sources import yaml as yamlsrc
from .. import convert
from .clusters import (_agent, _cluster_units, _connection, _helm_provider, _kubectl_block, _kubectl_provider,
                       _nearest_first, _remote_cluster_unit, _shared_by, cluster_expr, terraform_clusters_named)
from .access import NodeAccess
from .common import INSTALL, RULE, InstallResult, _find
from .eksctl import Eksctl
from .gitops import GitOps
from .helmfile import Helmfile
from .nodepools import NodePools
from .stages import StageSplit
from .tags import DiscoveryTags
from .terraform import TerraformFile
from .terragrunt import TerragruntUnits, UnitSplit, _unit_split
from .tfvars import TfvarsEnvironments
from .values import ChartValues


@dataclass
class Layout:
    """Where the install writes (Installer.layout)."""
    style: str                  # terraform | flux | argocd | kustomize | helmfile: how Cluster Autoscaler is installed
    split: Any                  # Split | UnitSplit | None: the charts and NodePools in another stage or unit
    at: str                     # the folder of the charts and the NodePools
    by_env: Any                 # TfvarsInputs | None: a root module applied once per environment
    kubectl: bool               # the NodePools as kubectl_manifest resources
    literal: str | None         # the cluster's name as one literal
    head: list[str]             # the lines karpenter.tf starts with (providers it adds)
    nl: str                     # the newline of Cluster Autoscaler's file


class Installer(TerraformFile, StageSplit, TerragruntUnits, TfvarsEnvironments, NodePools, DiscoveryTags, NodeAccess,
                Eksctl, GitOps, Helmfile, ChartValues):
    """Karpenter installed next to Cluster Autoscaler: run() decides, the mixins write each installer shape."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.repo = ctx.repo
        self.cas: CasInventory = convert.inventory(ctx)
        self.res = InstallResult()
        self.zoned: set[str] = set()        # groups whose NodePool keeps to their zones (zones())
        self.target = ctx.target.chart if ctx.target is not None and ctx.target.chart else knowledge.load("minors")["newest"]
        self.module_version = INSTALL["module_version"]
        self.matched = None     # (file, eks module call, its release, module_coverage row, the chart's Kubernetes
                                # range): the v20 module matched to it
        self.shared: list[str] = []     # the units of every environment applying the modules written (UnitSplit)
        self.unit = ""                  # then this environment's unit that takes the inputs
        self.ours: dict[str, str] = {}  # the install's files already written in modules shared with other
                                        # environments, which this one has yet to give its inputs: path -> text

    def run(self) -> InstallResult:
        res = self.res
        if self.ctx.charts or any(m.kind in ("NodePool", "EC2NodeClass") for m in self.ctx.manifests):
            self.ours = self.awaited()
            if not self.ours:
                res.done = True
                return res
        if not self.cas.present:
            return res
        cas0 = self.cas.installs[0]
        if not self.one_cluster(cas0):
            return res
        d = self.terraform_dir(cas0)
        expr, eks = cluster_expr(self.repo, self.cas, d)
        if expr is None and self.cas.clusters:
            return self.eksctl(cas0)
        # Terragrunt units: Cluster Autoscaler's unit and the unit that makes its cluster are two states
        units = _cluster_units(self.repo, cas0, self.ctx.owns) if cas0.kind in ("terraform", "module", "wrapper") \
            else []
        usplit = _unit_split(self.repo, cas0, units) if units else None
        if usplit is not None and self.ours:    # what the install already wrote is written again, the same
            usplit.existing = {k: v for k, v in usplit.existing.items() if v[0] not in self.ours}
            usplit.declared = {k: v for k, v in usplit.declared.items() if v not in self.ours}
        if usplit is not None and (not _helm_provider(self.repo, usplit.dir) or not any(
                posixpath.dirname(g.home or g.path) == usplit.cluster_dir for g in self.cas.groups)):
            usplit = None                       # no chart installs there, or no node group of the cluster's unit read
        if usplit is not None:
            d = usplit.cluster_dir              # the karpenter module goes beside the cluster, in its unit's module
            expr, eks = cluster_expr(self.repo, self.cas, d)
            units = [] if expr is not None else units
        if not self.placeable(cas0, d, expr, units):
            return res
        res.cluster = expr
        shapes = [convert.shape(g) for g in self.cas.groups]
        if not shapes:
            elsewhere = _nearest_first(posixpath.dirname(cas0.path) or ".",
                                       {posixpath.dirname(g.path) or "." for g in scan(self.repo).groups
                                        if not self.ctx.owns(g.path)}, near=True)
            _find(res, "MIG-CAS-003", "warning", cas0.path, cas0.line,
                  f"{cas0.address}: no node group found in this root; migrator writes NodePools from node groups"
                  + (f" (node groups are declared in {', '.join(elsewhere[:3])}: another Terraform root module, "
                     "planned as another cluster's)" if elsewhere else "")
                  + "".join(f"; {what} ({p}:{line})"
                            for p, line, what in self.cas.unread[:2]),
                  "write the NodePools by hand (docs/from-cluster-autoscaler.md), or declare the node groups in the "
                  "cluster's own root module")
            return res
        self.match_module(d, shapes)
        kept, ok = self.settle(shapes, cas0, fargate=convert.on_fargate(self.ctx))
        if not ok:
            return res
        res.identity = "pod-identity" if _agent(self.repo, self.cas, self.ctx.owns) else "irsa"
        path = posixpath.join(d, "karpenter.tf") if d != "." else "karpenter.tf"
        if path in self.repo.files and path not in self.ours:
            _find(res, "MIG-CAS-006", "error", path, 1, f"{path} already exists; migrator writes the Karpenter "
                  "installation there", "rename that file, then run migrator again")
            return res
        res.file = path
        lay = self.layout(cas0, d, expr, kept, usplit)
        if lay is None or not self.write(cas0, d, expr, eks, kept, shapes, path, lay):
            return res
        literal = lay.literal
        value = self.tag_value(d, literal)
        if value is not None:
            self.tags(d, value)
        else:
            self.res.sg_by_cli = self.res.subnets_by_cli = True
            _find(res, "MIG-CAS-036", "info", cas0.path, cas0.line,
                  f"the cluster's name comes from an output ({expr}) of the blocks that make its subnets and node "
                  f"security group: a {INSTALL['discovery_tag']} tag written there would make a dependency cycle "
                  "terraform cannot plan, so the runbook tags them with aws-cli",
                  "or name the cluster from a local or a variable, then run migrator again to tag them in Terraform")
        self.provider_pin(d)
        if self.ours:
            self.join_written(res)
        return res


    def one_cluster(self, cas0) -> bool:
        """Does Cluster Autoscaler scale one cluster migrator can tell? Said where it is not (several ClusterConfigs
        of one folder, a ClusterConfig and a Terraform cluster of the same name)."""
        res = self.res
        if self.cas.others:
            from ....cas import named_clusters
            named = sorted(named_clusters(self.cas))
            configs = ", ".join(f"{n} ({p}:{line})" for p, line, n in self.cas.others)
            if self.cas.ambiguous:
                _find(res, "MIG-CAS-045", "warning", cas0.path, cas0.line,
                      f"this folder holds several eksctl ClusterConfigs ({configs}) and Cluster Autoscaler is given "
                      + (f"the cluster name(s) {', '.join(named)}" if named else "no cluster name of them")
                      + ": migrator cannot tell which cluster it scales, so nothing is written for this root",
                      "keep each ClusterConfig in a folder of its own with its Cluster Autoscaler manifests (or give "
                      "Cluster Autoscaler its cluster's auto-discovery tag), then run migrator again")
                return False
            _find(res, "MIG-CAS-044", "info", cas0.path, cas0.line,
                  f"Cluster Autoscaler here scales {named[0]}; the other ClusterConfigs of this folder ({configs}) are "
                  "other clusters: their node groups are not planned with it")
        from ....roots import inside
        if self.cas.clusters and not any(inside(posixpath.dirname(p) or ".", self.ctx.root) for p, _, _ in self.cas.clusters):
            # a root lent a ClusterConfig from elsewhere: a Terraform cluster of the same name may be the real one
            named = {str((o.get("metadata") or {}).get("name")) for _, _, o in self.cas.clusters}
            twins = terraform_clusters_named(self.repo, named, {str((o.get("metadata") or {}).get("region"))
                                                                 for _, _, o in self.cas.clusters})
            if twins:
                # a ClusterConfig and a Terraform cluster of the same name (one of them a leftover or a copy): which
                # one makes the cluster Cluster Autoscaler scales is not in the files
                _find(res, "MIG-CAS-002", "warning", cas0.path, cas0.line,
                      f"{cas0.address}: the cluster it scales ({', '.join(sorted(named))}) is declared both by an eksctl "
                      f"ClusterConfig ({', '.join(sorted({p for p, _, _ in self.cas.clusters}))}) and in Terraform "
                      f"({', '.join(twins[:3])}): migrator cannot tell which one makes it; nothing is written for this "
                      "root",
                      "remove (or move out of the repository) the declaration that no longer makes the cluster, or keep "
                      "Cluster Autoscaler's install beside the one that does, then run migrator again")
                return False
        return True

    def placeable(self, cas0, d: str, expr: str | None, units: list) -> bool:
        """Can Karpenter be written beside the cluster? Said where it cannot (a module other roots call, a
        cluster in another state or unit, no cluster in the repository)."""
        res = self.res
        shared, without = _shared_by(self.repo, d, cas0.path) if expr is not None and not units else ([], [])
        if without:
            # a module several root modules call: Karpenter written there would reach clusters without Cluster Autoscaler
            _find(res, "MIG-CAS-002", "warning", cas0.path, cas0.line,
                  f"{cas0.address}: the cluster is made in the module {d}, which {len(shared)} root modules call "
                  f"({', '.join(shared[:4])}), and {', '.join(without[:4])} runs no Cluster Autoscaler from it: "
                  "Karpenter written there would be installed in that cluster too; nothing is written for this root",
                  "give the module outputs for the cluster's name, endpoint and OIDC provider and its node role, and "
                  "install Karpenter in this root reading them (or behind a switch of the module this root turns on), "
                  "or follow the Karpenter guide 'Migrating from Cluster Autoscaler' by hand")
            return False
        if expr is None or units:
            others = _nearest_first(posixpath.dirname(cas0.path) or ".",
                                    {posixpath.dirname(p) or "." for p, _ in scan(self.repo).eks_modules}
                                    | {posixpath.dirname(p) or "." for p, _ in self.repo.blocks("resource", "aws_eks_cluster")})
            from ....cas import named_clusters
            named = named_clusters(self.cas)
            configs = [(p, d, o) for p, d, o in scan(self.repo).clusters
                       if str((o.get("metadata") or {}).get("name")) in named] if not others else []
            called = [(o, cb) for o in others for cp, cb in self.repo.callers(o) if (posixpath.dirname(cp) or ".") == d]
            remote = _remote_cluster_unit(self.repo, cas0, self.ctx.owns) if not units and not others else None
            if remote is not None:
                _find(res, "MIG-CAS-002", "warning", cas0.path, cas0.line,
                      f"{cas0.address}: it is installed by Terragrunt unit {remote[0]} and the cluster is made by unit "
                      f"{remote[1]}, which applies {remote[2]}, a module outside the repository: a unit applies one "
                      "module, so Karpenter's module cannot be written beside that cluster; nothing is written for this "
                      "root",
                      f"add a unit applying terraform-aws-modules/eks/aws//modules/karpenter (at the eks module's "
                      f"major) with a dependency on {remote[1]}, and the karpenter-crd and karpenter charts "
                      + ("in a unit of their own (a module of the repository with a helm provider, as "
                         f"{remote[0]} applies a module from outside it too)" if remote[3] else
                         f"beside Cluster Autoscaler's in {remote[0]}")
                      + ", given its outputs (docs/from-cluster-autoscaler.md), then run migrator again")
                return False
            where = (f"it is installed by Terragrunt unit {units[0][0]} and the cluster is made by unit "
                     f"{units[0][1]} (module {units[0][2]}), another state" if units else
                     f"the cluster is made inside {called[0][1].address} ({called[0][0]}), a module this root calls: "
                     "migrator does not write Karpenter's install across a module boundary" if called else
                     f"the repository declares its clusters in {', '.join(others[:3])}, outside this root module "
                     "(another state, or a module another root calls)" if others else
                     "the eksctl ClusterConfig of the cluster it names (" + ", ".join(
                         f"{(o.get('metadata') or {}).get('name')} in {p}" for p, _, o in configs[:3])
                     + ") is outside this root's folder; keep Cluster Autoscaler's manifests in the ClusterConfig's "
                     "folder (or the ClusterConfig beside them) to have them planned together" if configs else
                     "no terraform-aws-modules/eks module, aws_eks_cluster or eksctl ClusterConfig of it in the "
                     "repository")
            _find(res, "MIG-CAS-002", "warning", cas0.path, cas0.line,
                  f"{cas0.address}: {where}" + (
                      ", and migrator cannot write Karpenter across these units (it needs a `dependency` on the cluster's "
                      "unit and an `inputs` object to give the charts the cluster's outputs, modules no other unit (another "
                      "environment) applies, a helm provider in the installing unit, and the cluster unit's node "
                      "groups read)" if units
                      else "" if called else ", so migrator cannot tell which cluster to install Karpenter into, nor "
                      "write it beside the cluster"),
                  ("give the module outputs for the cluster's name, endpoint and OIDC provider and its node role, and "
                   "install Karpenter here reading them (or install it inside the module)" if called else
                   f"write the karpenter module in {units[0][2]} with outputs for its queue name, service account and "
                   f"node role name (the outputs migrator writes for stages, docs/from-cluster-autoscaler.md), and the "
                   f"karpenter-crd and karpenter charts beside Cluster Autoscaler's, given those outputs as inputs from "
                   f"the dependency on {units[0][1]} in {units[0][0]}'s terragrunt.hcl" if units else
                   "install Karpenter in the cluster's own root module (the karpenter module and charts next to the "
                   "cluster, or its charts here reading the cluster's outputs)")
                  + ", or follow the Karpenter guide 'Migrating from Cluster Autoscaler' by hand; nothing is written "
                  "for this root")
            return False
        return True

    def layout(self, cas0, d: str, expr: str, kept, usplit) -> "Layout | None":
        """Where the install writes: the split over stages, units or tfvars, the folder of the charts and NodePools,
        the kubectl provider and the cluster's literal name. None when nothing can be written (said)."""
        res = self.res
        nl = self.repo.files[cas0.path].newline
        style = cas0.kind if cas0.kind in ("flux", "argocd", "kustomize", "helmfile") else "terraform"
        split = self.unit_split(usplit, cas0) if usplit is not None else \
            self.stage_split(d, cas0, expr) if style == "terraform" and not _helm_provider(self.repo, d) else None
        if split is not None and not split.dir:
            return None                              # said (a file or an output name already there)
        if style == "terraform" and not _helm_provider(self.repo, d) and split is None:
            from ....roots import _module_users
            cas_dir = posixpath.dirname(cas0.path) or "."
            users = sorted(_module_users(self.repo, d)) if d != "." else []   # a child module takes its caller's
            there = cas0.kind in ("terraform", "module", "wrapper", "tfdeployment", "kubectl") and cas_dir != d
            _find(res, "MIG-CAS-041", "warning", cas0.path, cas0.line,
                  f"the cluster's Terraform ({d}) has no helm provider, so Karpenter's charts cannot be installed there"
                  + (f"; Cluster Autoscaler's chart is installed from {cas_dir}, another module or stage, which would "
                     "need the karpenter module's outputs (queue, role) passed to it" if there else "")
                  + ": nothing is written for this root",
                  (f"install the karpenter-crd and karpenter charts beside Cluster Autoscaler's in {cas_dir}, with the "
                   "karpenter module next to the cluster in " + d if there else
                   "add a helm provider configured for the cluster to " + (
                       f"the root module that calls {d} ({', '.join(users[:3])})" if users else d))
                  + ", then run migrator again (or follow "
                  "docs/from-cluster-autoscaler.md by hand)")
            return None
        at = split.dir if split is not None else d          # where the charts and the NodePools are written
        self.shared = split.shared if isinstance(split, UnitSplit) else []
        self.unit = split.unit if self.shared else ""
        by_env = self.by_tfvars(d, kept, split, style)
        if by_env is not None and not by_env.var_file:
            return None                              # said (the variable is taken, or the cluster is elsewhere)
        if by_env is not None:
            self.shared, self.unit = by_env.environments, by_env.var_file
        # modules several environments apply hold what is the same for all: each environment's NodePools go in a
        # file of its own unit, with its own names
        kubectl = style == "terraform" and _kubectl_provider(self.repo, at) and not self.shared
        literal = self.cluster_literal(d, cas0) if not kubectl else None
        res.cluster_literal = literal or ""
        head: list[str] = []
        conn = _connection(self.repo, at) if style == "terraform" and not kubectl and literal is None \
            and not self.shared else None
        required = self.require_kubectl(at) if conn is not None else None
        if required is not None:        # the name is known at apply only: the NodePools go through a kubectl provider
            kubectl = True
            head = required + _kubectl_block(self.repo, conn)
            conf = INSTALL["kubectl_provider"]
            _find(res, "MIG-CAS-061", "info", conn.path, conn.line,
                  f"the root states the cluster's name ({expr}) as no one literal, so the NodePools and "
                  f"EC2NodeClasses are written as kubectl_manifest resources, which name it as Terraform resolves "
                  f"it: the {conf['source']} provider is added to the root, "
                  f"connected as its {conn.what} is",
                  "terraform init -upgrade installs the provider (the install step's first command)")
        elif style == "terraform" and not kubectl and literal is None and at != "." and not self.shared:
            added = self.kubectl_from_callers(at, expr)
            if added is not None:
                kubectl, head = True, added
        if style != "terraform" and literal is None:
            _find(res, "MIG-CAS-018", "warning", cas0.path, cas0.line,
                  f"{cas0.address}: migrator cannot tell the cluster's name as one literal (the chart values and the "
                  "NodePools outside Terraform need it); nothing is written for this root",
                  "set autoDiscovery.clusterName in Cluster Autoscaler's values (or the cluster's name in Terraform), "
                  "then run again")
            return None
        return Layout(style, split, at, by_env, kubectl, literal, head, nl)

    def write(self, cas0, d: str, expr: str, eks: str, kept, shapes: list, path: str, lay: "Layout") -> bool:
        """The install's files in their layout: karpenter.tf (and the other stage's or unit's file), the charts
        as the installer shape installs Cluster Autoscaler, the NodePools. False when nothing is written (said)."""
        res = self.res
        style, split, at, by_env, kubectl, literal, head, nl = (lay.style, lay.split, lay.at, lay.by_env, lay.kubectl,
                                                                lay.literal, lay.head, lay.nl)
        names = self.fixed_names(expr, literal)
        self.zones(shapes)
        refs = split.refs(expr, kept, eks, res.identity == "irsa", literal is not None) if split is not None \
            else self.module_refs(expr, kept, eks)
        if by_env is not None and by_env.literals:
            refs["group"] = by_env.group_ref(kept.group, eks) or refs.get("group")
            head = head + by_env.declarations()
        if split is not None and split.conflicts:
            _find(res, "MIG-CAS-006", "error", split.conflicts[0], 1,
                  f"{split.conflicts[0]} already declares an output (or a variable) of a name migrator gives the "
                  f"Karpenter install's outputs (karpenter_*), with another value", "rename it, then run migrator again")
            return False
        pools, classes = self.objects(shapes, refs, literal, names)
        if pools is None:
            return False
        if by_env is not None:              # the module names what the cluster's name makes as Terraform resolves it
            names = self.fixed_names(expr, None)
            _find(res, "MIG-CAS-074", "info", by_env.var_file, 1,
                  f"the root module {d} is applied once per environment with its own tfvars "
                  f"({', '.join(by_env.environments)}): Karpenter is written in it once, the same for every environment, "
                  f"and what is this environment's own in its files: "
                  + (f"the controller's node group in {by_env.var_file}, " if by_env.literals else "")
                  + f"its NodePools in {by_env.objects_file()}",
                  "plan every environment with the same migrator run (or each with --root, the earliest first): the "
                  "root module moves when they all do; each environment applies it with its own -var-file")
        elif self.shared:                   # the modules name what the cluster's name makes as Terraform resolves it
            names = self.fixed_names(expr, None)
            _find(res, "MIG-CAS-071", "info", split.source, 1,
                  f"the modules {split.stage} and {split.dir} are applied by the units of {len(self.shared)} "
                  f"environments ({', '.join(self.shared)}): Karpenter is written in them once, the same for every "
                  "environment, and what is this environment's own (the controller's node group, the NodePools) in "
                  f"its units ({split.unit})",
                  "plan every environment with the same migrator run (or each with --root, the earliest first): a "
                  "module shared by the environments moves when they all do; each environment applies its units "
                  "itself")
        text = self.terraform(d, expr, eks, kept, kubectl, pools, classes, style, names, head, refs, split)
        if by_env is not None and by_env.literals:
            res.edits.append(by_env.tfvars_edit(self.repo))
        if split is not None:
            text, charts = text
            res.charts_file = split.path
            res.edits.append(NewFile(split.path, to_newline(charts, self.repo.files[split.source].newline), RULE))
            if isinstance(split, UnitSplit) and split.inputs_edit(self.repo) is not None:
                res.edits.append(split.inputs_edit(self.repo))
            forward = split.forward_file()
            if forward is not None:
                res.edits.append(NewFile(forward[0], to_newline(forward[1], nl), RULE))
        res.edits.append(NewFile(path, to_newline(text, nl), RULE))
        if style == "flux":
            self.flux(cas0, kept, literal, names, classes + pools)
        elif style == "argocd":
            self.argocd(cas0, kept, literal, names, classes + pools)
        elif style == "kustomize":
            self.kustomize(cas0, kept, literal, names, classes + pools)
        elif style == "helmfile":
            if self.helmfile(cas0, self.chart_values(kept, literal, names, annotate=False), names["controller_role"]):
                self.objects_beside(cas0, classes + pools)
        elif not kubectl and literal is None:
            res.pools.clear()
            _find(res, "MIG-CAS-007", "warning", path, 1,
                  "the root has no kubectl provider and does not state the cluster's name as one literal, so the "
                  "NodePools and EC2NodeClasses have no place to be written with real names: none is written (and no "
                  "node group is drained until they exist)",
                  "add the kubectl provider (alekc/kubectl) to the root's required_providers, or give the cluster "
                  "a literal name (or variable default), then run migrator again")
        elif not kubectl:
            home = split.unit if self.shared and split is not None else at
            res.objects_file = by_env.objects_file() if by_env is not None else \
                posixpath.join(home, "karpenter-nodepools.yaml") if home != "." else "karpenter-nodepools.yaml"
            body = "---\n".join(yamlsrc.Emitter().emit(o).text for o in classes + pools)
            res.edits.append(NewFile(res.objects_file, to_newline(body, nl), RULE))
        return True

    def matched_chart(self) -> str | None:
        """The chart the install would put in beside an eks module that caps the AWS provider (match_module), read
        before the rules run (the hop's goal); None where nothing is matched."""
        if not self.cas.present or not self.cas.groups:
            return None
        self.match_module(self.terraform_dir(self.cas.installs[0]), [convert.shape(g) for g in self.cas.groups])
        return self.target if self.matched is not None else None
