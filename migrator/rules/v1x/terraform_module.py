"""Rule `v1x/terraform_module`: can the terraform-aws-modules karpenter module give the target its IAM?

The module's policy covers Karpenter up to a minor (knowledge/minors.yaml `module_coverage`). When the target is
beyond it: a v21 module moves to the newest v21 (same major, no input changes); a module that uses IRSA stays on
v20 (v21 removed IRSA), so the chart is held at the newest minor its policy covers and the finding offers the
two ways on (move to v21 with Pod Identity, or add the missing statements with `iam_policy_statements`).
"""
from __future__ import annotations

from dataclasses import dataclass

from ...edits import TextEdit
from ...model import Finding
from ...path import newest_patch, parse_version
from ...sources import hcl as hclsrc
from ..v1 import terraform_module as v1mod
from .plan import minor_of

RULE = "v1x/terraform_module"


@dataclass
class ModuleResult(v1mod.ModuleResult):
    cap: str | None = None              # newest chart version the module's IAM allows, when below the target
    cap_reason: str | None = None


def run(ctx, phase: str) -> ModuleResult:
    res = ModuleResult()
    base = v1mod.run(ctx, phase)
    for k in ("modules", "refs", "tf_targets", "findings"):
        getattr(res, k).extend(getattr(base, k))
    target = ctx.target.chart
    want = minor_of(target)
    for p, b, ver in v1mod.modules(ctx):
        text = ctx.repo.text(p)
        line = hclsrc.line_of(text, b.start)
        version = ver[1] if ver else None
        covered = v1mod.covers(version, b)
        if covered is None or parse_version(covered) >= parse_version(want):
            continue
        newest = v1mod.V1["newest"]
        if version[0] >= 21 and not v1mod.uses_irsa(b):
            v = b.attr("version")
            op = ver[0]
            new = newest if op in ("", "=") else ".".join(newest.split(".")[:2])
            rendered = f"{op} {new}".strip() if op and op != "=" else (f"= {new}" if op == "=" else new)
            res.edits.append(TextEdit(p, v.start, v.end, hclsrc.quote(rendered), RULE))
            res.findings.append(Finding("MIG-V1X-MOD-001", "info", p, hclsrc.line_of(text, v.start),
                                        f"{b.address}: version {v.literal()} -> {rendered}: its controller policy "
                                        f"covers Karpenter {covered} only; {newest} covers {want}"))
            continue
        cap = newest_patch(covered) if parse_version(covered) >= (1, 0) else None
        why = (f"{b.address} ({'.'.join(map(str, version))}) gives the controller the IAM of Karpenter {covered} at "
               f"most; {want} needs more")
        res.cap = cap if res.cap is None or (cap and parse_version(cap) < parse_version(res.cap)) else res.cap
        res.cap_reason = why
        irsa = v1mod.uses_irsa(b)
        res.findings.append(Finding(
            "MIG-V1X-MOD-002", "warning", p, line,
            why + (f": the chart is held at {cap}" if cap else "") + (" (it uses IRSA, which v21 removed)" if irsa else ""),
            f"either move the module to {newest} with EKS Pod Identity (v21 has no IRSA: set "
            "create_pod_identity_association = true, drop enable_irsa/irsa_* and enable_v1_permissions, remove the "
            "role-arn service-account annotation, AWS provider >= 6), or keep it and add the missing statements of "
            f"the official {want} policy through iam_policy_statements; then run migrator again"))
    return res
