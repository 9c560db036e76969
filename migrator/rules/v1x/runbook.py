"""Runbook steps of the onward 1.x hop: module, IAM, each crossed minor's checks, CRDs, controller."""
from __future__ import annotations

import shlex

from ...model import Step
from ...rendered import RenderResult, runbook_values
from ..v1.runbook import build, chart_flavours, common_values, crd_flavours
from ..v1beta1.runbook import adopts_crds
from .plan import crossed, stop


ID_NOTES = {
    "irsa": "IRSA is kept: the trust statement v20 wrote is now a data.aws_iam_policy_document the root owns, passed "
            "through iam_role_source_assume_policy_documents, and create_pod_identity_association = false.",
    "pod-identity": "The controller moves to EKS Pod Identity: the association is created for the chart's namespace "
                    "and service account, the role-arn annotation leaves the chart values, and the EKS Pod Identity "
                    "Agent add-on must run on every node before the controller restarts.",
    "none": "The controller role is not the module's (create_iam_role = false): its trust policy is yours and stays "
            "as it is; no Pod Identity association is created.",
}


ROLE_ANNOTATION = ("serviceAccount", "annotations", "eks.amazonaws.com/role-arn")


def iam_added(current: str | None, rows: list[dict]) -> list[tuple[str, str]]:
    """(minor, action) of every action the official controller policy of a crossed minor grants that the policy of the
    current minor does not (knowledge/iam/<version>.json), in the order the minors add them."""
    from .plan import MINORS, minor_of
    from ..v1beta1.iam import official

    def actions(version: str) -> set[str]:
        return {a for st in official(version) for a in ([st["Action"]] if isinstance(st["Action"], str)
                                                         else st["Action"])}
    own = next((r for r in MINORS["minors"] if r["minor"] == minor_of(current)), None)
    have = actions(own["iam"]) if own else set()
    out = []
    for r in rows:
        for a in sorted(actions(r["iam"]) - have):
            out.append((r["minor"], a))
            have.add(a)
    return out


def _role_arn(ctx) -> str:
    """The controller role as the chart values name it (the IRSA annotation), else a shell input to set."""
    got = next((v.value for v in ctx.helm_values if tuple(v.keys) == ROLE_ANNOTATION and v.expression is None
                and isinstance(v.value, str) and v.value.startswith("arn:")), None)
    return shlex.quote(got) if got else '"${KARPENTER_CONTROLLER_ROLE_ARN}"'


def steps(hop: dict, ctx) -> list[Step]:
    res = ctx.result(hop, "upgrade")
    helm, iam, mod = res["v1x/helm"], res["v1x/iam"], res["v1x/terraform_module"]
    rnd = res.get("v1x/rendered") or RenderResult()
    crd_files = res.get("v1x/crds")
    target, why = stop(ctx, res)
    rows = crossed(ctx.chart_version, target)
    table = [{"minor": r["minor"], "note": n} for r in rows
             for n in [*r.get("notes", []), *r.get("require", {}).values(), *r.get("values", {}).get("defaults", {}).values()]]
    k8s = rows[-1]["k8s"] if rows else None
    if k8s:
        table.append({"minor": target, "note": f"Karpenter {target} supports Kubernetes {k8s[0]} to {k8s[1]}"})
    notes = [f"{n['minor']}: {n['note']}" for n in table]
    values = {**common_values(ctx, [helm], [rnd]), **runbook_values(rnd), "chart_version": target,
              "minors": ", ".join(r["minor"] for r in rows) or "none",
              "minor_notes": "; ".join(notes) or "No minor in between asks for anything.",
              "module_note": why or "The module's policy covers the target.",
              "policy_file": shlex.quote(iam.files[0]) if iam.files else "policy.json",
              "vendored_crd_files": ", ".join(crd_files.files) if crd_files else ""}
    # the controller's IAM is not in this repository (no policy, no karpenter module): what the crossed minors add to
    # the official policy is checked against the role itself, one action per minor
    added = iam_added(ctx.chart_version, rows) if not (iam.policies or iam.edits or mod.modules) else []
    values.update(iam_added=", ".join(f"{a} ({m})" for m, a in added),
                  iam_added_args=" ".join(a for _, a in added), controller_role_arn=_role_arn(ctx))
    idents = sorted({i for _, i in getattr(mod, "to_v21", [])})
    values.update(identity=" and ".join(idents) or "none",
                  identity_note=" ".join(ID_NOTES[i] for i in idents),
                  association_line=", an aws_eks_pod_identity_association created" if "pod-identity" in idents else "")
    flags = {"module": bool(mod.modules) and not idents, "module_v21": bool(idents), "iam": bool(iam.edits), "minors": bool(rows), "chart": True,
             "iam_outside": bool(added),
             "vendored_crds": bool(crd_files and crd_files.commands and not crd_files.written),
             "vendored_crds_written": bool(crd_files and crd_files.written),
             "crd_urls": bool(crd_files and crd_files.url_files),
             "crd_chart": not (crd_files and crd_files.vendored)}
    fl = chart_flavours([helm], [rnd])
    flags["adopt_crds"] = flags["crd_chart"] and adopts_crds([helm], crd_flavours([helm], fl))
    flavours = {"chart": fl, "crds": crd_flavours([helm], fl), "iam": [f for f, ok in (("terraform", bool(iam.targets)),
                                                                ("json", bool(iam.files))) if ok]}
    targets = {"chart_targets": helm.chart_tf, "crd_targets": helm.crd_tf, "iam_targets": iam.targets,
               "crd_url_targets": crd_files.url_targets if crd_files else [],
               "module_targets": mod.tf_targets}
    files = {"module": [e.path for e in mod.edits], "module-v21": [e.path for e in mod.edits], "iam": [e.path for e in iam.edits],
             "crds": [e.path for e in helm.edits], "controller": [e.path for e in helm.edits]}
    refs = {"chart": helm.refs, "crds": helm.refs, "iam": iam.policies, "module": mod.refs}
    lists = {"vendored_crd_commands": crd_files.commands if crd_files else []}
    files["crds-files"] = crd_files.files if crd_files else []
    files["crds-urls"] = crd_files.url_files if crd_files else []
    values["crd_url_files"] = ", ".join(crd_files.url_files) if crd_files else ""
    out = build("v1->1.x", hop, values, flags, flavours, targets, lists, files, refs, ctx.repo, ctx.owns)
    for st in out:
        if st.id.endswith("minors"):        # one row per change, in the order of the minors (a table in the runbook)
            st.notes = table
    return out
