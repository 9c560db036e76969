"""Runbook steps of the Cluster Autoscaler hop (knowledge/runbook.yaml `cas->v1`)."""
from __future__ import annotations

import shlex

from ...cas import FACTS
from ...model import Step
from ..v1.runbook import build


def steps(hop: dict, ctx) -> list[Step]:
    res = {p["name"]: ctx.result(hop, p["name"]) for p in hop["phases"]}
    inst = res["install"]["cas/karpenter"]
    cut_cas, cut_groups = res["cutover"]["cas/autoscaler"], res["cutover"]["cas/nodegroups"]
    cln_cas, cln_groups = res["cleanup"]["cas/autoscaler"], res["cleanup"]["cas/nodegroups"]
    wl = res["install"]["cas/workloads"]
    ns = FACTS["install"]["namespace"]
    kept = inst.kept or cut_groups.kept or cln_groups.kept
    aws = [t for t in inst.targets if t[1].startswith("module.")] + \
        [(d, a.rsplit(".", 1)[0]) for d, a in ((inst.file.rsplit("/", 1)[0] if "/" in inst.file else ".", x)
                                               for x in inst.tagged)]
    charts = [t for t in inst.targets if t[1].startswith("helm_release.")]
    objects = [t for t in inst.targets if t[1].startswith("kubectl_manifest.")]
    cas_ns = next((n for _, n, _ in cut_cas.scaled), ns)
    cas0 = ctx.cas.installs[0] if ctx.cas is not None and ctx.cas.installs else None
    cas_kind = cas0.kind if cas0 else "terraform"
    values = {
        "module_version": FACTS["install"]["module_version"], "identity": {"pod-identity": "EKS Pod Identity",
                                                                            "irsa": "IRSA"}.get(inst.identity, "?"),
        "node_role": "<cluster>-karpenter-node", "tagged": ", ".join(inst.tagged) or "the subnets and security group (by hand)",
        "chart_version": ctx.target.chart if ctx.target is not None and ctx.target.chart else "",
        "kept": kept or "?", "kept_why": inst.kept_why or "chosen before", "namespace": ns,
        "pools": ", ".join(p for p, _ in inst.pools) or "none",
        "objects_apply": f"kubectl apply -f {shlex.quote(inst.objects_file)}" if inst.objects_file else "",
        "workload_files": ", ".join(sorted(set(wl.files))),
        "workload_apply": " && ".join(f"kubectl apply -f {shlex.quote(f)}" for f in sorted(set(wl.files))),
        "cas_namespace": cas_ns,
        "cas_replicas": ", ".join(f"{a}: {r}" for a, _, r in cut_cas.scaled) or "as before",
        "cas_scale": " && ".join(f"kubectl -n {shlex.quote(n)} scale deployment/{shlex.quote(name)} --replicas=0"
                                 for n, name in cut_cas.deployments),
        "drained": ", ".join(g for g, *_ in cut_groups.drained) or "none",
        "group_scale": " && ".join(
            "aws eks update-nodegroup-config --cluster-name \"${CLUSTER_NAME}\" --nodegroup-name "
            f"\"$(aws eks list-nodegroups --cluster-name \"${{CLUSTER_NAME}}\" --query \"nodegroups[?starts_with(@, '{g}')] | [0]\" --output text)\" "
            f"--scaling-config minSize=0,desiredSize=0,maxSize={mx if isinstance(mx, int) else 1}"
            for g, _, _, mx in cut_groups.drained),
        "sizes_before": "; ".join(f"{g}: min {a}, desired {b}, max {c}" for g, a, b, c in cut_groups.drained) or "as before",
        "removed": ", ".join(cln_cas.removed + cln_groups.removed) or "nothing",
        "cleanup_apply": " && ".join(f"kubectl -n {shlex.quote(n)} delete deployment/{shlex.quote(name)}"
                                     for n, name in cln_cas.deployments)
                         or ("flux reconcile kustomization flux-system --with-source" if cas_kind == "flux" else ""),
        "sg_note": " and, by the aws-cli command below, the cluster security group" if inst.sg_by_cli else "",
        "sg_tag": ("aws ec2 create-tags --resources \"$(aws eks describe-cluster --name \"${CLUSTER_NAME}\" --query "
                   "cluster.resourcesVpcConfig.clusterSecurityGroupId --output text)\" --tags "
                   "Key=karpenter.sh/discovery,Value=\"${CLUSTER_NAME}\"") if inst.sg_by_cli else "",
        "flux_pools_note": f" {res['cutover']['cas/karpenter'].objects_file} joins the kustomization, so Flux manages "
                           "the NodePools from now on." if res["cutover"]["cas/karpenter"].objects_file else "",
        "flux_namespace": inst.flux[0].split("/")[1] if inst.flux else ns,
        "cas_release": cas0.name if cas0 else "cluster-autoscaler",
        "cas_flux_namespace": shlex.quote(str(((cas0.obj or {}).get("metadata") or {}).get("namespace", "flux-system")))
        if cas0 else "flux-system",
    }
    flags = {"install": bool(inst.edits), "workloads": bool(wl.edits),
             "cutover": bool(cut_cas.edits or cut_groups.edits), "cleanup": bool(cln_cas.edits or cln_groups.edits)}
    targets = {"aws_targets": aws, "chart_targets": charts, "object_targets": objects,
               "cas_targets": cut_cas.targets, "group_targets": cut_groups.targets,
               "cleanup_targets": cln_cas.targets + cln_groups.targets}
    files = {"karpenter-aws": [e.path for e in inst.edits], "workloads": sorted(set(wl.files)),
             "cas-zero": [e.path for e in cut_cas.edits], "drain-groups": [e.path for e in cut_groups.edits],
             "remove-cas": [e.path for e in cln_cas.edits + cln_groups.edits]}
    chart = ["flux"] if inst.flux else ["terraform"]
    kept_as = ["yaml"] if inst.objects_file else ["terraform"]
    flavours = {"chart": chart, "objects": kept_as,
                "autoscaler": {"flux": ["flux"], "deployment": ["yaml"]}.get(cas_kind, ["terraform"])}
    return build("cas->v1", hop, values, flags, flavours, targets, {}, files, {}, ctx.repo, ctx.owns)
