"""Runbook steps of the EKS Auto Mode hop (knowledge/runbook.yaml `v1->auto-mode`)."""
from __future__ import annotations

import shlex

from ...model import Step
from ..v1.runbook import build
from ..v1beta1.runbook import manifest_deployers
from . import convert


def _eksctl_role(cl, cluster: str) -> dict:
    """aws-cli commands that create the NodeClasses' node role and its EC2 access entry (eksctl creates none with no
    built-in pool)."""
    if cl.installer != "eksctl" or cl.enabled or not cl.role_literal:
        return {"eksctl_role": ""}
    role = shlex.quote(cl.role_literal)
    trust = ('{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"ec2.amazonaws.com"},'
             '"Action":["sts:AssumeRole","sts:TagSession"]}]}')
    cmds = [f"aws iam create-role --role-name {role} --assume-role-policy-document '{trust}'"]
    cmds += [f"aws iam attach-role-policy --role-name {role} --policy-arn arn:{cl.partition}:iam::aws:policy/{p}"
             for p in convert.FACTS["cluster"]["node_role_policies"]]
    arn = f"\"$(aws iam get-role --role-name {role} --query Role.Arn --output text)\""
    cmds += [f"aws eks create-access-entry --cluster-name {cluster} --principal-arn {arn} --type EC2",
             f"aws eks associate-access-policy --cluster-name {cluster} --principal-arn {arn} --policy-arn "
             f"{convert.FACTS['cluster']['access_policy'].replace('arn:aws:', f'arn:{cl.partition}:', 1)} "
             "--access-scope type=cluster"]
    return {"eksctl_role": " && ".join(cmds)}


def _flux_run(repo, d: str) -> bool:
    """Flux reconciles a kustomization folder: a Flux Kustomization's path covers it, or it holds Flux objects
    itself (a HelmRelease beside the NodePools): its changes land by a commit and `flux reconcile`, not kubectl."""
    from ...inventory.kustomizations import flux_paths
    d = "" if d == "." else d
    if any(fd == "" or d == fd or d.startswith(fd + "/") for fd in flux_paths(repo)):
        return True
    return any(p.endswith((".yaml", ".yml")) and (p.rsplit("/", 1)[0] if "/" in p else "") == d
               and ".toolkit.fluxcd.io/" in repo.files[p].text for p in repo.files)


def _chart_targets(repo, files: list[str]) -> dict[str, tuple[str, str]]:
    """Template files of a chart of the repository that Terraform helm_release blocks install -> (module, address) of
    the release: they reach the cluster when the release renders them again (terraform apply), never by kubectl."""
    import posixpath

    from .poolnames import chart_folder, chart_releases
    out: dict[str, tuple[str, str]] = {}
    for f in files:
        chart = chart_folder(f)
        for p, b in chart_releases(repo, chart) if chart is not None else []:
            out.setdefault(f, (posixpath.dirname(p) or ".", b.address))
    return out


def _flux_charted(repo, files: list[str]) -> list[str]:
    """Template files of a chart of the repository that a Flux HelmRelease installs from its GitRepository: they
    reach the cluster when Flux renders them again (a reconcile), never by kubectl."""
    from .poolnames import chart_folder, flux_releases
    return [f for f in files if (c := chart_folder(f)) is not None and flux_releases(repo, c)]


def _rendered(repo, res) -> list[str]:
    """Files local_files render that nothing in Terraform applies, of a phase's objects: the new ones (their
    local_file is written in this phase) and those of the templates the phase edits (inventory/localfiles.py)."""
    from ...inventory.localfiles import applied_by
    return sorted(set(res.rendered) | set(applied_by(repo, res.files)[1]))


def steps(hop: dict, ctx) -> list[Step]:
    res = {p["name"]: ctx.result(hop, p["name"]) for p in hop["phases"]}
    cl = res["enable"]["auto/cluster"]
    made, untaint = res["nodepools"]["auto/nodepools"], res["workloads"]["auto/nodepools"]
    wl, cut = res["workloads"]["auto/workloads"], res["cutover"]["auto/nodepools"]
    cln = res["cleanup"]["auto/cleanup"]
    named = cl.cluster_literal or ctx.options.cluster_name      # the repository's, else the one the user gave
    cluster = shlex.quote(named) if named else '"${CLUSTER_NAME}"'
    taint = convert.FACTS["temporary_taint"]
    # the YAML files kubectl (or GitOps) applies: not a template Terraform renders (templatefile, file, local_file)
    yaml_files = sorted({f for r in (made, untaint, cut) for f in r.files if f.endswith((".yaml", ".yml"))
                         and f not in ctx.repo.template_paths and f not in made.templates})
    charted = _chart_targets(ctx.repo, yaml_files)      # templates of a pool chart a helm_release renders
    fluxed = _flux_charted(ctx.repo, [f for f in yaml_files if f not in charted])   # ... or a Flux HelmRelease
    applied = manifest_deployers(ctx.repo, [f for f in yaml_files if f not in charted and f not in fluxed])
    # each phase applies what it changes (the workloads phase the twins it untaints, not the old pools)
    phase_targets = {k: sorted(set(r.tf_targets) | {charted[f] for f in r.files if f in charted})
                     for k, r in (("new_targets", made), ("twin_targets", untaint), ("removed_targets", cut))}
    tf_objects = sorted({t for ts in phase_targets.values() for t in ts})
    yaml_deletes = [f"kubectl delete {k} {shlex.quote(n)}" for k, n in cut.deletes
                    if not any(n in a for _, a in cut.tf_targets) and "{{" not in n] \
        if applied["yaml"] or applied["kustomize"] else []
    # objects of a file a local_file renders: Terraform removes the file, not what it put in the cluster
    yaml_deletes += [c for c in (f"kubectl delete {k} {shlex.quote(n)} --ignore-not-found"
                                 for k, n in cut.rendered_deletes) if c not in yaml_deletes]
    rendered_new, rendered_edit = _rendered(ctx.repo, made), _rendered(ctx.repo, untaint)
    ns = next((str(((c.obj or {}).get("spec") or {}).get("targetNamespace") or "karpenter") for c in ctx.charts
               if c.chart == "karpenter" and c.obj), None)
    tf_ns = next((str(c.block.attr("namespace").literal()) for c in ctx.charts
                  if c.chart == "karpenter" and c.block is not None and c.block.attr("namespace") is not None
                  and c.block.attr("namespace").literal()), None)
    values = {
        "cluster": cluster,
        "enable_notes": "; ".join(cl.notes) or f"{cl.address or 'the cluster'} gets Auto Mode's settings",
        "eksctl_enable": ((f"eksctl update addon -f {shlex.quote(cl.eksctl_file)} && " if cl.eksctl_addons else "")
                          + f"eksctl update auto-mode-config -f {shlex.quote(cl.eksctl_file)}") if cl.eksctl_file else "",
        **_eksctl_role(cl, cluster),
        "created": ", ".join(made.created) or "none",
        "taint": f"{taint['key']}={taint['value']}:{taint['effect']}",
        "workload_note": f"; selectors in {', '.join(sorted(set(wl.files)))}" if wl.files else "",
        "removed": ", ".join(r.split(" (")[0] for r in cut.removed) or "none",
        "delete_commands": " && ".join(yaml_deletes),
        "removed_controller": ("" if any(c.chart == "karpenter" for c in ctx.charts) else
                               "Karpenter's controller is not installed from these files: uninstall its release where "
                               "it is installed (helm uninstall karpenter -n <namespace>) before applying this step. ")
        + "Removed: " + (", ".join(cln.removed) or "nothing in the files"),
        "kept": ", ".join(cln.kept) or "it is not in this repository: keep it wherever it is installed",
        "groups_note": ("The node group that hosted Karpenter's controller"
                        + (f" ({', '.join(cln.groups)})" if cln.groups else "")
                        + " can go once nothing else runs on it (Auto Mode's nodes serve the rest); keep coredns and "
                        "the other add-ons while any non-Auto Mode node remains."),
        "release_commands": " && ".join(
            ([f"kubectl annotate crd {' '.join(convert.FACTS['cleanup']['shared_crds'])} "
              "argocd.argoproj.io/sync-options=Delete=false --overwrite"] if cln.guard_crds else []) + [
                "flux reconcile kustomization flux-system --with-source" if k == "HelmRelease" else
                f"argocd app delete {shlex.quote(n)} --cascade" for k, _, n in cln.releases]),
        "namespace": shlex.quote(tf_ns or ns or "kube-system"),
    }
    flags = {"enable": bool(cl.edits) or (not cl.enabled and cl.installer == "eksctl"),
             "nodepools": bool(made.edits), "workloads": bool(untaint.edits or wl.edits),
             "cutover": bool(cut.edits), "cleanup": bool(cln.edits)}
    flux = [d for d in applied["kustomize"] if _flux_run(ctx.repo, d)] + sorted(fluxed)
    applied["kustomize"] = [d for d in applied["kustomize"] if d not in flux]
    objects = [f for f, ok in (("terraform", bool(tf_objects)), ("rendered", bool(rendered_new or rendered_edit)),
                               ("yaml", bool(applied["yaml"])),
                               ("kustomize", bool(applied["kustomize"] or applied["kustomize_helm"])),
                               ("argocd", bool(applied["argocd"])), ("flux", bool(flux))) if ok] or ["yaml"]
    flavours = {"chart": ["terraform"], "cluster": ["eksctl"] if cl.installer == "eksctl" else ["terraform"],
                "objects": objects, "cleanup": ["terraform"] if cln.targets else []}
    targets = {"cluster_targets": cl.targets, **phase_targets, "cleanup_targets": cln.targets}
    lists = {"rendered_new": rendered_new, "rendered_edit": rendered_edit, "object_file": applied["yaml"],
             "object_kustomization": applied["kustomize"] + applied["kustomize_helm"],
             "object_app": applied["argocd"], "workload_file": sorted(set(wl.files))}
    files = {"enable": [e.path for e in cl.edits], "nodepools": made.files,
             "workloads": sorted(set(untaint.files) | set(wl.files)), "cutover": cut.files, "cleanup": cln.files}
    refs = {"objects": [f"{f.path}:{f.line}" for f in made.findings if f.path]}
    return build("v1->auto-mode", hop, values, flags, flavours, targets, lists, files, refs, ctx.repo, ctx.owns)
