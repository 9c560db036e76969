"""Runbook steps of the Cluster Autoscaler hop (knowledge/runbook.yaml `cas->v1`)."""
from __future__ import annotations

import posixpath
import shlex

from ...cas import FACTS
from ...inventory import value_at
from ...model import Step
from ..v1.runbook import build
from . import convert
from .install.common import NODE_MAPPING


def steps(hop: dict, ctx) -> list[Step]:
    res = {p["name"]: ctx.result(hop, p["name"]) for p in hop["phases"]}
    inst = res["install"]["cas/karpenter"]
    cut_cas, cut_groups = res["cutover"]["cas/autoscaler"], res["cutover"]["cas/nodegroups"]
    cln_cas, cln_groups = res["cleanup"]["cas/autoscaler"], res["cleanup"]["cas/nodegroups"]
    wl = res["install"]["cas/workloads"]
    ns = FACTS["install"]["namespace"]
    kept = inst.kept or cut_groups.kept or cln_groups.kept
    aws = [t for t in inst.targets if t[1].startswith("module.")] + inst.labelled + \
        [(d, a.rsplit(".", 1)[0]) for d, a in ((inst.file.rsplit("/", 1)[0] if "/" in inst.file else ".", x)
                                               for x in inst.tagged)]
    charts = [t for t in inst.targets if t[1].startswith("helm_release.")]
    objects = [t for t in inst.targets if t[1].startswith("kubectl_manifest.")]
    inv = convert.inventory(ctx)
    cas0 = inv.installs[0] if inv.installs else None
    cas_kind = cas0.kind if cas0 else "terraform"
    values = _values(ctx, res, kept, inv, cas0)
    flags = {"install": bool(inst.edits), "workloads": bool(wl.edits),
             "cutover": bool(cut_cas.edits or cut_groups.edits), "cleanup": bool(cln_cas.edits or cln_groups.edits),
             "drain": bool(cut_groups.drained), "keep_only": bool(cut_groups.kept_sizes and not cut_groups.drained)}
    targets = {"aws_targets": aws, "chart_targets": charts, "object_targets": objects,
               "cas_targets": cut_cas.targets, "group_targets": cut_groups.targets,
               "cleanup_targets": cln_cas.targets + cln_groups.targets}
    files = {"karpenter-aws": [e.path for e in inst.edits], "workloads": sorted(set(wl.files)),
             "cas-zero": [e.path for e in cut_cas.edits], "drain-groups": [e.path for e in cut_groups.edits], "keep-group": [e.path for e in cut_groups.edits],
             "remove-cas": [e.path for e in cln_cas.edits + cln_groups.edits]}
    literal = _cluster_literal(ctx, inst, inv, cas0)
    values.update(_commands(res, inv, literal, values["chart_version"]))
    eksctl = inst.style == "eksctl" or bool(cln_groups.eksctl or cln_cas.eksctl_sas) or \
        bool(inv.clusters and not inv.eks_modules)
    _details(values, inst, cut_groups, inv, literal, eksctl, ns)
    _argocd_values(values, ctx, inst, cln_cas, cas0)
    chart = ["flux"] if inst.flux else ["argocd"] if inst.argocd else ["kustomize"] if inst.kustomize else \
        ["helmfile"] if inst.helmfile else ["helm"] if inst.style == "eksctl" else ["terraform"]
    kept_as = ["argocd"] if inst.argocd else ["yaml"] if inst.objects_file else ["terraform"]
    aws_flavour = ["eksctl"] if eksctl else ["terraform"]
    flavours = {"chart": chart, "objects": kept_as, "aws": aws_flavour,
                "autoscaler": ["terraform"] if cas0 is not None and any(b.type == "resource" for _, b in cas0.readers)
                else {"flux": ["flux"], "deployment": ["yaml"], "argocd": ["argocd"],
                      "kustomize": ["kustomize"], "script": ["script"],
                      "helmfile": ["helmfile"]}.get(cas_kind, ["terraform"])}
    return build("cas->v1", hop, values, flags, flavours, targets, {}, files, {}, ctx.repo, ctx.owns)



def _values(ctx, res: dict, kept: str, inv, cas0) -> dict:
    """The runbook's values read from the install's, cutover's and cleanup's results."""
    inst = res["install"]["cas/karpenter"]
    cut_cas, cut_groups = res["cutover"]["cas/autoscaler"], res["cutover"]["cas/nodegroups"]
    cln_cas, cln_groups = res["cleanup"]["cas/autoscaler"], res["cleanup"]["cas/nodegroups"]
    wl = res["install"]["cas/workloads"]
    ns = FACTS["install"]["namespace"]
    cas_ns = next((n for _, n, _ in cut_cas.scaled), ns)
    cas_kind = cas0.kind if cas0 else "terraform"
    values = {
        "module_version": inst.module_version or FACTS["install"]["module_version"], "identity": {"pod-identity": "EKS Pod Identity",
                                                                            "irsa": "IRSA"}.get(inst.identity, "?"),
"tagged": ", ".join(inst.tagged) or "the subnets and security group (by hand)",
        "chart_version": inst.chart or (ctx.target.chart if ctx.target is not None and ctx.target.chart else ""),
        "kept": kept or "?", "kept_why": inst.kept_why or "chosen before", "namespace": ns,
        "pools": ", ".join(p for p, _ in inst.pools) or "none",
        "objects_apply": f"kubectl apply -f {shlex.quote(inst.objects_file)}" if inst.objects_file else "",
        "workload_files": ", ".join(sorted(set(wl.files))),
        "workload_apply": " && ".join(f"kubectl apply -f {shlex.quote(f)}" for f in sorted(set(wl.files))),
        "cas_namespace": cas_ns,
        "cas_replicas": ", ".join(f"{a}: {r}" for a, _, r in cut_cas.scaled) or "as before",
        "cas_scale": " && ".join(sorted({f"kubectl apply -f {shlex.quote(i.path)}" for i in inv.installs
                                         if i.kind == "deployment"})),
        "drained": ", ".join(g for g, *_ in cut_groups.drained) or "none",
        "sizes_before": "; ".join(f"{g}: min {a}, desired {b}, max {c}" for g, a, b, c in cut_groups.drained) or "as before",
        "removed": ", ".join(cln_cas.removed + cln_groups.removed) or "nothing",
        "cas_script_zero": " && ".join(cut_cas.script_zero),
        "cleanup_apply": " && ".join([f"kubectl -n {shlex.quote(n)} delete deployment/{shlex.quote(name)}"
                                      for n, name in cln_cas.deployments] + cln_cas.script_remove)
                         or ("flux reconcile kustomization flux-system --with-source" if cas_kind == "flux" else
                             _by_label({cas0.name}) if cas_kind == "kustomize" else ""),
        "sg_note": (" and, by the aws-cli commands below, " + ("the node groups' subnets and " if inst.subnets_by_cli
                                                                 and inst.style != "eksctl" else "")
                    + "the cluster security group") if inst.sg_by_cli else "",
        "sg_tag": "",
        "flux_pools_note": f" {res['cutover']['cas/karpenter'].objects_file} joins the kustomization, so Flux manages "
                           "the NodePools from now on." if res["cutover"]["cas/karpenter"].objects_file else "",
        "flux_namespace": inst.flux[0].split("/")[1] if inst.flux else ns,
        "cas_release": cas0.name if cas0 else "cluster-autoscaler",
        "cas_flux_namespace": shlex.quote(str(((cas0.obj or {}).get("metadata") or {}).get("namespace", "flux-system")))
        if cas0 else "flux-system",
    }
    return values


def _cluster_literal(ctx, inst, inv, cas0) -> str:
    """The cluster's name as the install read it (the repository's), else the name the user gave; "" if neither."""
    literal = inst.cluster_literal or next((str((o.get("metadata") or {}).get("name")) for _, _, o in
                                            inv.clusters if (o.get("metadata") or {}).get("name")), "")
    if not literal and cas0 is not None and inv.clusters == [] and (inv.eks_modules or inv.groups):
        from .install.installer import Installer    # past the install (its rule is done): the name as it read it
        installer = Installer(ctx)
        literal = installer.cluster_literal(installer.terraform_dir(cas0), cas0) or ""
    literal = literal or ctx.options.cluster_name or ""      # the repository's, else the name the user gave
    return literal


def _commands(res: dict, inv, literal: str, chart_version: str) -> dict:
    """The runbook's aws-cli, eksctl and kubectl commands for the cluster (by its name, or ${CLUSTER_NAME})."""
    inst = res["install"]["cas/karpenter"]
    cut_groups = res["cutover"]["cas/nodegroups"]
    cln_cas, cln_groups = res["cleanup"]["cas/autoscaler"], res["cleanup"]["cas/nodegroups"]
    ns = FACTS["install"]["namespace"]
    eks = FACTS["install"]["eksctl"]
    cluster = shlex.quote(literal) if literal else '"${CLUSTER_NAME}"'
    acct = "${AWS_ACCOUNT_ID}"
    node_role_arn = f"arn:aws:iam::{acct}:role/" + eks["node_role"].format(cluster=literal or "${CLUSTER_NAME}")
    policy_arn = f"arn:aws:iam::{acct}:policy/" + eks["controller_policy"].format(cluster=literal)
    role = eks["controller_role"].format(cluster=literal)
    groups = inst.groups or [g for g, *_ in cut_groups.drained]
    unmanaged = {g.name for g in inv.groups if g.source == "eksctl" and g.flavour == "self"}
    return {
        "group_scale": " && ".join(
            f"aws eks update-nodegroup-config --cluster-name {cluster} --nodegroup-name "
            + _nodegroup(*cut_groups.eks_names.get(g, (g, "prefix")), cluster)
            + f" --scaling-config minSize=0,desiredSize=0,maxSize={mx if isinstance(mx, int) else 1}"
            for g, _, _, mx in cut_groups.drained),
        "kept_scale": _kept_scale(cut_groups, cluster, eksctl=False),
        # the drained groups' nodes, by the label EKS gives a managed group's nodes (exact names only): none is left
        "removed_drain": " && ".join(
            f"kubectl drain -l eks.amazonaws.com/nodegroup={shlex.quote(cut_groups.eks_names.get(g, (g, 'prefix'))[0])} "
            "--ignore-daemonsets --delete-emptydir-data --timeout=15m"
            for g, *_ in cut_groups.drained if cut_groups.eks_names.get(g, (g, "prefix"))[1] == "exact"
            and g not in unmanaged),
        "kept_eksctl_scale": _kept_scale(cut_groups, cluster, eksctl=True),
        "kept_scale_note": ("The aws-cli command raises the desired size first: EKS refuses a minimum above it, and "
                            "Terraform leaves a desired size it is told to ignore unchanged." if cut_groups.kept_to and
                            not cut_groups.kept_self else
                            "If the apply fails because the new minimum is above the group's desired size, raise the "
                            "desired size first (aws eks update-nodegroup-config --scaling-config desiredSize=N, or "
                            "aws autoscaling update-auto-scaling-group --desired-capacity N for a self-managed group): "
                            "Terraform leaves a desired size it is told to ignore unchanged."),
        "kept_to": ", ".join(f"{k} {v}" for k, v in zip(("min", "desired", "max"), cut_groups.kept_to)
                             if isinstance(v, int)) or f"at least {FACTS['install']['kept_group_min']} nodes",
        "kept_before": ", ".join(f"{k} {v}" for k, v in zip(("min", "desired", "max"), cut_groups.kept_sizes))
                       if all(isinstance(v, int) for v in cut_groups.kept_sizes) else "as they were",
        "cluster": cluster, "cfn_stack": shlex.quote(eks["stack"].format(cluster=literal)),
        "cfn_template": eks["template"].format(version=chart_version),
        "values_file": shlex.quote(inst.values_file) if inst.values_file else "",
        "node_access": (f"aws eks create-access-entry --cluster-name {cluster} --principal-arn \"{node_role_arn}\" "
                        "--type EC2_LINUX") if inst.access == "entry" else
                       (f"eksctl create iamidentitymapping --cluster {cluster} --arn \"{node_role_arn}\" --username "
                        f"{shlex.quote(NODE_MAPPING['username'])} "
                        + " ".join(f"--group {g}" for g in NODE_MAPPING["groups"])),
        "controller_identity": (f"eksctl create podidentityassociation --cluster {cluster} --namespace {ns} "
                                f"--service-account-name karpenter --role-name {role} --permission-policy-arns "
                                f"\"{policy_arn}\"") if inst.identity == "pod-identity" else
                               (f"eksctl utils associate-iam-oidc-provider --cluster {cluster} --approve && "
                                f"eksctl create iamserviceaccount --cluster {cluster} --namespace {ns} --name karpenter "
                                f"--role-name {role} --attach-policy-arn \"{policy_arn}\" --role-only --approve"),
        "irsa_set": (f" --set serviceAccount.annotations.eks\\.amazonaws\\.com/role-arn=arn:aws:iam::{acct}:role/{role}"
                     if inst.identity == "irsa" and inst.style == "eksctl" else ""),
        "subnet_tag": (f"for ng in $(aws eks list-nodegroups --cluster-name {cluster} --query 'nodegroups' "
                       "--output text); do aws ec2 create-tags --tags \"Key=karpenter.sh/discovery,Value="
                       f"{literal or '${CLUSTER_NAME}'}\" --resources $(aws eks describe-nodegroup --cluster-name "
                       f"{cluster} --nodegroup-name \"$ng\" --query 'nodegroup.subnets' --output text); done") if inst.subnets_by_cli and inst.style != "eksctl" else "",
        "group_tags": " && ".join(
            f"aws ec2 create-tags --tags Key=karpenter.sh/discovery,Value={cluster} --resources "
            + (_asg_subnets(eks["unmanaged_stack"].format(cluster=literal or "${CLUSTER_NAME}", group=g))
               if g in unmanaged else
               f"$(aws eks describe-nodegroup --cluster-name {cluster} --nodegroup-name {shlex.quote(g)} --query "
               "'nodegroup.subnets' --output text)") for g in groups) if inst.style == "eksctl" else "",
        "aws_verify": (f"aws cloudformation describe-stacks --stack-name "
                       f"{shlex.quote(eks['stack'].format(cluster=literal))} --query "
                       "'Stacks[0].StackStatus'") if inst.style == "eksctl" else "",
        "aws_rollback": (f"Delete the stack (aws cloudformation delete-stack --stack-name "
                         f"{eks['stack'].format(cluster=literal)}), the access entry and the discovery tags; "
                         "nothing else depends on them yet.") if inst.style == "eksctl" else
                        (f"Remove {inst.charts_file} (apply its stage), then {inst.file} and the discovery tags "
                         "(apply the cluster's stage); nothing else depends on them yet." if inst.charts_file.endswith(".tf")
                         else "Remove karpenter.tf and the discovery tags and apply; nothing else depends on them yet."),
        "eksctl_scale": " && ".join(f"eksctl scale nodegroup --cluster {cluster} --name {shlex.quote(g)} --nodes 0 "
                                    "--nodes-min 0" for g, *_ in cut_groups.drained),
        "eksctl_delete": " && ".join([f"eksctl delete nodegroup --cluster {cluster} --name {shlex.quote(g)}"
                                      for g in cln_groups.eksctl] +
                                     [f"eksctl delete iamserviceaccount --cluster {cluster} --namespace "
                                      f"{shlex.quote(n)} --name {shlex.quote(s)}" for n, s in cln_cas.eksctl_sas]),
    }


def _details(values: dict, inst, cut_groups, inv, literal: str, eksctl: bool, ns: str) -> None:
    """The prose of the AWS step and the drain step, eksctl's or Terraform's; the cluster security group's tag."""
    eks = FACTS["install"]["eksctl"]
    cluster = values["cluster"]
    if eksctl:
        values["aws_detail"] = (
            f"The getting-started CloudFormation stack of Karpenter {values['chart_version']} creates the node role "
            f"{eks['node_role'].format(cluster=literal)}, the controller policy, the interruption queue and "
            f"its EventBridge rules; the node role joins the cluster ({'an access entry' if inst.access == 'entry' else 'aws-auth'}) "
            f"and the controller gets its role ({values['identity']}), as the guide does it.")
        values["tagged"] = "the node groups' subnets"
        values["drain_detail"] = "eksctl scales each group to zero; the ClusterConfig says so too, for the next eksctl run."
    else:
        values["aws_detail"] = (
            f"The terraform-aws-modules karpenter module {values['module_version']} creates the controller role and "
            f"policy ({values['identity']}), the interruption queue and its EventBridge rules, and the node role"
            + {"entry": " with an access entry, so Karpenter's nodes can join.",
               "aws-auth": "; the cluster authenticates through aws-auth only, so the node role is mapped there, "
                           "beside the roles the root maps.",
               "aws-auth-by-hand": "; the cluster authenticates through aws-auth only and the root does not manage "
                                   "it: map the node role there by hand before the NodePools launch nodes "
                                   "(MIG-CAS-028)."}[inst.access])
        drained = {g for g, *_ in cut_groups.drained}
        env = "" if literal else " (with CLUSTER_NAME set to the cluster's name)"
        if any(g.source == "module" and g.name in drained for g in inv.groups):
            values["drain_detail"] = ("terraform-aws-modules ignores desired_size after a group is created, so the aws "
                                      f"eks commands set it{env}.")
        else:
            values["drain_detail"] = ("Terraform applies the new sizes; the aws eks commands set them too, for a group "
                                      f"whose desired_size Terraform is told to ignore{env}.")
    if inst.sg_by_cli or inst.style == "eksctl":
        values["sg_tag"] = ("aws ec2 create-tags --resources \"$(aws eks describe-cluster --name "
                            f"{cluster} --query cluster.resourcesVpcConfig.clusterSecurityGroupId --output text)\" "
                            f"--tags Key=karpenter.sh/discovery,Value={cluster}")


def _argocd_values(values: dict, ctx, inst, cln_cas, cas0) -> None:
    """Argo CD's commands: the syncs that apply the charts, objects and Cluster Autoscaler's scale, and its removal."""
    argo = cas0 is not None and cas0.kind == "argocd"
    if argo and cln_cas.apps:
        # the Application goes with its objects: pruned by the Application that syncs its folder, or deleted with
        # --cascade where it was applied by hand; objects an Application without Argo CD's resources finalizer
        # leaves behind go by the chart's instance label (its release name, or the Application's name, Argo CD's
        # tracking label)
        gone = _delivered(ctx.repo, cas0.path, cas0.path)
        gone = gone + " --prune" if gone.startswith("argocd app sync") else \
            " && ".join(f"argocd app delete {shlex.quote(a)} --cascade --yes" for a in cln_cas.apps)
        release = value_at(cas0.obj, ("spec",) + tuple(cas0.source) + ("helm", "releaseName"))
        values["cleanup_apply"] = " && ".join(x for x in [values["cleanup_apply"], gone, _by_label(
            {cas0.name} | ({str(release)} if release else set()))] if x)
    values["argo_cas_apply"] = _delivered(ctx.repo, cas0.path, cas0.path) if argo else ""
    values["argo_charts_apply"] = _delivered(ctx.repo, cas0.path, inst.charts_file or cas0.path) if argo else ""
    values["argo_objects_apply"] = _delivered(ctx.repo, cas0.path, inst.objects_file or cas0.path) if argo else ""
    values["cas_kustomization"] = shlex.quote(posixpath.dirname(cas0.path) or ".") if cas0 is not None else "."
    values["cas_helmfile"] = shlex.quote(cas0.path) if cas0 is not None and cas0.kind == "helmfile" else ""


def _by_label(names: set[str]) -> str:
    """kubectl delete of the objects a Helm chart installed under these release names (its instance label)."""
    sel = f"app.kubernetes.io/instance={next(iter(names))}" if len(names) == 1 else \
        f"app.kubernetes.io/instance in ({','.join(sorted(names))})"
    return f"kubectl delete {','.join(FACTS['install']['chart_objects'])} -A -l {shlex.quote(sel)}"


def _delivered(repo, path: str, file: str) -> str:
    """The command that puts an Argo CD Application folder's change in the cluster: the sync of the Application that
    syncs the folder (app of apps), `kubectl apply -k` of the kustomization that lists it, or, when nothing in the
    repository applies the folder, `kubectl apply -f` of the file (Applications applied by hand)."""
    from ...inventory.kustomizations import deployers
    how, what = next(iter(deployers(repo, path)), ("yaml", path))
    if how == "argocd":
        return f"argocd app sync {shlex.quote(what)}"
    if how == "kustomize":
        return f"kubectl apply -k {shlex.quote(what or '.')}"
    return f"kubectl apply -f {shlex.quote(file)}"


def _asg_subnets(stack: str) -> str:
    """The subnets of an eksctl unmanaged group, from the Auto Scaling group of its CloudFormation stack."""
    return ("$(aws autoscaling describe-auto-scaling-groups --auto-scaling-group-names \"$(aws cloudformation "
            f"describe-stack-resources --stack-name \"{stack}\" --query \"StackResources[?ResourceType=="
            "'AWS::AutoScaling::AutoScalingGroup'].PhysicalResourceId\" --output text)\" --query "
            "'AutoScalingGroups[0].VPCZoneIdentifier' --output text | tr ',' ' ')")


def _kept_scale(groups, cluster: str, eksctl: bool) -> str:
    """The command that raises the kept group's sizes before Terraform does: EKS refuses a minimum above the
    desired size, and Terraform does not change desired_size where it is told to ignore it (terraform-aws-modules
    groups; knowledge/cas.yaml `kept_group_min`). Empty when the group is not raised or is self-managed."""
    if not groups.kept_to or (groups.kept_self and not eksctl):     # eksctl scales its unmanaged groups too
        return ""
    low, desired, high = groups.kept_to
    if eksctl:
        return (f"eksctl scale nodegroup --cluster {cluster} --name {shlex.quote(groups.kept)} --nodes {desired} "
                f"--nodes-min {low}" + (f" --nodes-max {high}" if isinstance(high, int) else ""))
    return (f"aws eks update-nodegroup-config --cluster-name {cluster} --nodegroup-name "
            + _nodegroup(*groups.eks_names.get(groups.kept, (groups.kept, "prefix")), cluster)
            + f" --scaling-config minSize={low},desiredSize={desired}"
            + (f",maxSize={high}" if isinstance(high, int) else ""))


def _nodegroup(name: str, how: str, cluster: str) -> str:
    """The --nodegroup-name argument: the name itself, or the one node group whose name starts (ends) with it."""
    if how == "exact":
        return shlex.quote(name)
    test = "starts_with" if how == "prefix" else "ends_with"
    return (f"\"$(aws eks list-nodegroups --cluster-name {cluster} --query \"nodegroups[?{test}(@, "
            f"'{name}')] | [0]\" --output text)\"")
