"""Runbook steps of the v1beta1 -> v1 hop, and the table-driven step builder the onward 1.x hop shares.

Rows come from knowledge/runbook.yaml. `{x_targets}` placeholders expand to one `terraform -chdir=...` command per
root module; list placeholders (`{state_moves}`, `{manifest_file}`, `{workload_file}`) to one command per item;
`commands` split by how the charts are installed (terraform / flux / helm) and how the manifests are kept
(terraform / yaml / flux), so every command fits the setup.
"""
from __future__ import annotations

import shlex

from ... import knowledge
from ...model import Step
from ...rendered import RenderResult, runbook_values
from ..v1beta1.helm import HelmResult
from ..v1beta1.runbook import (_by_dir, _terraform, plain_terraform, argo_names, chart_flavours, crd_flavours, guarded,
                               adopts_crds, crd_release_name,
                               manifest_deployers, root_targets, umbrella_values)


def build(table: str, hop: dict, values: dict, flags: dict, flavours: dict[str, list[str]],
          targets: dict[str, list[tuple[str, str]]], lists: dict[str, list[str]],
          files: dict[str, list[str]], refs: dict[str, list[str]], repo=None, owns=None) -> list[Step]:
    rows = knowledge.load("runbook")[table]
    groups = {k: _by_dir(v, repo, owns) for k, v in targets.items()}
    out: list[Step] = []

    def expand(lines: list[str]) -> list[str]:
        res: list[str] = []
        for c in lines:
            key = next((k for k in groups if "{" + k + "}" in c), None)
            lst = next((k for k in lists if "{" + k + "}" in c), None)
            if key is not None:
                res.extend(_terraform(c, key, groups[key], values, repo))
            elif lst is not None:
                if c.strip() == "{" + lst + "}":
                    res.extend(lists[lst])
                else:
                    res.extend(c.format(**{**values, lst: shlex.quote(x)}) for x in lists[lst])
            else:
                res.extend(plain_terraform(c, groups, values, repo))
        return res

    for row in rows:
        if row.get("when") and not flags.get(row["when"]):
            continue
        raw = row.get("commands", [])
        if isinstance(raw, dict):
            raw = raw.get("first", []) + [c for f in flavours.get(row["kind"], flavours["chart"])
                                           for c in raw.get(f, [])] + raw.get("all", [])
        commands = [c for c in dict.fromkeys(expand(raw)) if c.strip()]     # one umbrella for both charts: once
        verify = [c for c in expand(row.get("verify", [])) if c.strip()]
        out.append(Step(id=f"{hop['to']}-{len(out) + 1:02d}-{row['id']}", phase=row["phase"], kind=row["kind"],
                        title=row["title"].format(**values), detail=str(row.get("detail", "")).format(**values).strip(),
                        commands=guarded(commands) if commands else [], files=sorted(set(files.get(row["id"], []))),
                        verify=guarded(verify) if not commands else verify,
                        rollback=str(row.get("rollback", "")).format(**values).strip(),
                        refs=sorted(set(refs.get(row["kind"], [])))))
    return out




def common_values(ctx, helm_results: list, rendered: list | None = None) -> dict:
    ns = sorted(set().union(*(r.namespaces for r in helm_results))) if helm_results else []
    ns = ns or sorted({r.namespace for r in rendered or [] if r.namespace})
    crd = next((a.split("/", 1)[1] for r in helm_results for a in r.crd_releases if a.startswith("HelmRelease/")),
               "karpenter-crd")
    merged = HelmResult()
    for r in helm_results:
        merged.controllers += r.controllers
        merged.crd_releases += r.crd_releases
    kdirs = [d for r in helm_results for d in r.kustomizations]
    return {"namespace": shlex.quote(ns[0]) if ns else '"${KARPENTER_NAMESPACE}"', "crd_release": shlex.quote(crd),
            "crd_release_name": shlex.quote(crd_release_name(helm_results)) if helm_results else "karpenter-crd",
            "chart_kustomization": shlex.quote(kdirs[0]) if kdirs else ".", **argo_names(merged),
            **umbrella_values(helm_results)}


def steps(hop: dict, ctx) -> list[Step]:
    from . import helm as helm_rule
    res = {p["name"]: ctx.result(hop, p["name"]) for p in hop["phases"]}
    helms = [res[p]["v1/helm"] for p in res]
    rnd = {p: res[p].get("v1/rendered") or RenderResult() for p in res}
    man = res["manifests"]["v1/manifests"]
    wl = res["manifests"]["v1/workloads"]
    iam = res["patch-upgrade"]["v1/iam"]
    mod = res["patch-upgrade"]["v1/terraform_module"]
    patch = helm_rule.targets("patch-upgrade", ctx.chart_version).get("karpenter")
    values = {**common_values(ctx, helms, list(rnd.values())), "chart_version": hop["chart"]["version"],
              **runbook_values(rnd["webhooks-off"], "gate"), **runbook_values(rnd["patch-upgrade"], "patch"),
              **runbook_values(rnd["controller"]),
              "patch_version": patch or '"${KARPENTER_PATCH_VERSION}"',
              "policy_file": shlex.quote(iam.files[0]) if iam.files else "policy.json",
              "rewritten": ", ".join(f"{k} {n}" for k, n, _ in man.rewritten) or "none in this repository",
              "flux_kustomization": "flux-system"}
    moves = []
    for o in man.tf_objects:
        for d, address in root_targets(ctx.repo, "" if o["dir"] == "." else o["dir"], o["address"], owns=ctx.owns):
            chdir = "" if d in ("", ".") else f"-chdir={shlex.quote(d)} "
            if o["templated"]:
                moves.append(f"# {address}: the instances are not known statically; run the two commands below "
                             "once per instance, with its key and the object's name")
            moves.append(f"terraform {chdir}state rm {shlex.quote(address)}")
            moves.append(f"terraform {chdir}import {shlex.quote(address)} {shlex.quote(o['import_id'])}")
    yaml_files = sorted({f for f in man.files if f.endswith((".yaml", ".yml"))})
    from ...inventory.localfiles import applied_by
    lf_targets, lf_outputs = applied_by(ctx.repo, man.files, "--server-side ")    # templates local_files render
    tf_manifests = sorted({(o["dir"], o["address"].split("[")[0]) for o in man.tf_objects} | set(lf_targets))
    v20 = any(f.code == "MIG-V1-MOD-006" for f in mod.findings)
    flags = {"module": bool(mod.edits) and not v20, "module_v20": v20, "iam": bool(iam.edits), "patch": bool(patch) or not ctx.charts,
             "webhook_values": bool(res["webhooks-off"]["v1/helm"].edits or rnd["webhooks-off"].findings),
             "chart": True, "tf_objects": bool(man.tf_objects),
             "manifests": bool(man.rewritten or man.pending), "workloads": bool(wl.files)}
    from ...crdfiles import owners, render_commands
    files, urls = owners(ctx.repo, ctx.owns)       # the CRDs kept as files or fetched by URL: their own steps
    flags["crd_files"] = bool(files or urls)
    flags["crd_chart"] = not flags["crd_files"]
    ns = values["namespace"]
    patch_to = patch or '"${KARPENTER_PATCH_VERSION}"'
    values["crd_owner_files"] = ", ".join([p for vs in files for p in vs.paths] + sorted({u.path for u in urls}))
    chart_fl = chart_flavours(helms, list(rnd.values()))
    flags["adopt_crds"] = adopts_crds(helms, crd_flavours(helms, chart_fl)) and not flags["crd_files"]
    applied = manifest_deployers(ctx.repo, yaml_files)
    man_fl = [f for f, ok in (("terraform", bool(tf_manifests)), ("rendered", bool(lf_outputs)),
                              ("yaml", bool(applied["yaml"])),
                              ("kustomize", bool(applied["kustomize"])),
                              ("kustomize_helm", bool(applied["kustomize_helm"])), ("argocd", bool(applied["argocd"])))
              if ok] or ["yaml"]
    flavours = {"chart": chart_fl, "crds": crd_flavours(helms, chart_fl), "iam": [f for f, ok in (("terraform", bool(iam.targets)),
                                                                                 ("json", bool(iam.files))) if ok],
                "manifests": man_fl}
    targets = {"chart_targets": [x for h in helms for x in h.chart_tf], "crd_targets": [x for h in helms for x in h.crd_tf],
               "iam_targets": iam.targets, "module_targets": mod.tf_targets, "manifest_targets": tf_manifests}
    applies = [f"kubectl apply --server-side -f {shlex.quote(p)}" for vs in files for p in vs.paths]
    lists = {"flux_crd_patch": [] if flags["crd_files"] else
             [f"flux reconcile helmrelease {values['crd_release']} -n {ns} --with-source"],
             "v1_crd_patch_commands": [c for vs in files for c in render_commands(vs, patch_to, ns)] + applies,
             "v1_crd_commands": [c for vs in files for c in render_commands(vs, hop["chart"]["version"], ns)] + applies,
             "state_moves": moves, "manifest_file": applied["yaml"], "workload_file": sorted(wl.files),
             "local_file_output": lf_outputs,
             "manifest_kustomization": applied["kustomize"], "manifest_app": applied["argocd"],
             "manifest_helm_kustomization": applied["kustomize_helm"]}
    owned = sorted({p for vs in files for p in vs.paths} | {u.path for u in urls})
    files = {"module": [e.path for e in mod.edits], "module-v20": [e.path for e in mod.edits], "crds-files": owned,
             "iam": [e.path for e in iam.edits], "patch": [e.path for e in res["patch-upgrade"]["v1/helm"].edits],
             "crds": [e.path for e in res["controller"]["v1/helm"].edits],
             "controller": [e.path for e in res["controller"]["v1/helm"].edits],
             "manifests": man.files, "state-moves": [o["where"].split(":")[0] for o in man.tf_objects],
             "workloads": wl.files, "webhooks-off": [e.path for e in res["webhooks-off"]["v1/helm"].edits]}
    refs = {"chart": [r for h in helms for r in h.refs], "crds": [r for h in helms for r in h.refs],
            "iam": iam.policies, "module": mod.refs, "manifests": [w for _, _, w in man.pending],
            "workloads": [f"{f.path}:{f.line}" for f in wl.findings]}
    return build("v1beta1->v1", hop, values, flags, flavours, targets, lists, files, refs, ctx.repo, ctx.owns)
