"""Rule `v1/helm`: both charts through the v1 rollout, in every values shape the Helm capability supports.

patch-upgrade  controller and karpenter-crd to the newest patch of the current minor (the rollback-capable
               release with conversion webhooks, knowledge/helm.yaml `patch_first`); `webhook.enabled: false`
               turned on; a karpenter-crd release added when there is none (it templates the conversion config).
controller     both charts to 1.0.x; the v1 values table (assumeRole*, drift gate, logConfig.* removed or renamed;
               metrics port and spread defaults reported).
webhooks-off   the webhook values 1.1 no longer has, removed from both charts (knowledge/minors.yaml, 1.1 row),
               once every object is v1.
The version is edited where it is defined (literal, variable default, tfvars, local, Flux) by the shared
machinery of the first hop's Helm rule.
"""
from __future__ import annotations

from ... import knowledge
from ...path import MINORS, parse_version
from ...model import Finding
from ..v1beta1.helm import HelmResult, HelmRule

RULE = "v1/helm"
HOP = "v1beta1->v1"
FACTS = knowledge.load("helm")


def gate_rows(chart: str) -> list[dict]:
    """Values the 1.1 chart removed (the minors table), as removal rows for the webhooks-off phase."""
    gate = next(r for r in MINORS["minors"] if r.get("gate"))
    table = gate.get("values" if chart == "karpenter" else "crd_values", {}).get("remove", {})
    return [{"key": k, "remove": True, "why": why} for k, why in table.items()]


def targets(phase: str, current: str | None) -> dict[str, str]:
    """Chart versions this phase moves to (only charts that need moving)."""
    if phase == "controller":
        v = FACTS["hops"][HOP]["version"]
        return {"karpenter": v, "karpenter-crd": v}
    if phase == "patch-upgrade" and current:
        cur = parse_version(current)
        if cur is not None and cur < (1, 0):
            minor = f"{cur[0]}.{cur[1]}"
            patch = FACTS["hops"][HOP]["patch_first"].get(minor)
            if patch:
                return {"karpenter": patch, "karpenter-crd": patch}
    return {}


def stale_alpha_rows() -> list[dict]:
    """settings.aws.* keys the first hop renames or drops: 0.33+ ignores them, so a repository that still has
    them runs without them (an interruption queue it names is not used). Renamed or removed with the newest patch."""
    out = []
    for r in FACTS["values"]["v1alpha5->v1beta1"]:
        if not r["key"].startswith("settings.aws."):
            continue
        why = "ignored since chart 0.33"
        out.append({"key": r["key"], "rename": r["rename"], "phase": "patch-upgrade", "why": why} if "rename" in r
                   else {"key": r["key"], "remove": True, "phase": "patch-upgrade", "why": f"{why} ({r.get('why', '')})"})
    return out


def run(ctx, phase: str) -> HelmResult:
    rows = [r for r in FACTS["values"][HOP] if r["phase"] == phase]
    cur = parse_version(ctx.chart_version) if ctx.chart_version else None
    if phase == "patch-upgrade":
        # already on 1.x: the patch release and its webhook switch are behind this repository
        rows = stale_alpha_rows() + ([] if cur is not None and cur >= (1, 0) else rows)
    crd_rows = [r for r in rows if r["key"].startswith("webhook.")]
    if phase == "webhooks-off":
        rows, crd_rows = gate_rows("karpenter"), gate_rows("karpenter-crd")
    tgt = targets(phase, ctx.chart_version)
    from ...crdfiles import owners
    files, urls = owners(ctx.repo, ctx.owns)        # CRDs kept as files or fetched by URL: no second owner
    res = HelmRule(ctx.repo, ctx.manifests, ctx.charts, phase, hop=HOP, rule=RULE, targets=tgt, rows=rows,
                   crd_rows=crd_rows, bump=bool(tgt), add_crd_release=bool(tgt) and not (files or urls),
                   owns=ctx.owns).run()
    if tgt and phase == "patch-upgrade" and (files or urls):
        res.findings += _owned_crds(files, urls)
    ci = next((c for c in ctx.charts if c.chart == "karpenter"), None)
    beta = [m for m in ctx.manifests if m.era == "beta" and m.kind in ("NodePool", "EC2NodeClass")]
    if phase == "manifests" and cur is not None and cur >= (1, 1) and beta and ci is not None:
        res.findings.append(Finding("MIG-V1-HELM-002", "warning", ci.path, ci.line,
                                    f"chart {ctx.chart_version} no longer serves v1beta1: the {len(beta)} v1beta1 "
                                    "objects in this cluster root fail to apply until this phase rewrites them",
                                    "apply this phase's changes before anything else touches these objects"))
    crd = next((c for c in ctx.charts if c.chart == "karpenter-crd"), None)
    if phase == "controller" and ci is not None and crd is not None:
        ns, crd_ns = _namespace(ci), _namespace(crd)
        crd_keys = {".".join(e.path) for vs in crd.values if vs.tree is not None for e in vs.tree.root.walk()} | \
                   {s_.key for vs in crd.values for s_ in vs.sets}
        if ns and crd_ns and ns != crd_ns and "webhook.serviceNamespace" not in crd_keys:
            res.findings.append(Finding("MIG-V1-HELM-003", "warning", crd.path, crd.line,
                                        f"{crd.address} is installed in namespace {crd_ns} but the controller runs in "
                                        f"{ns}: the CRDs' conversion webhook would call a service that is not there "
                                        "(karpenter-crd defaults webhook.serviceNamespace to its own namespace)",
                                        f"set webhook.serviceNamespace={ns} on {crd.address}"))
    if phase == "patch-upgrade" and ctx.chart_version and tgt:
        minor = ".".join(ctx.chart_version.split(".")[:2])
        note = FACTS["hops"][HOP].get("patch_notes", {}).get(minor)
        if note and ci is not None:
            res.findings.append(Finding("MIG-V1-HELM-001", "warning", ci.path, ci.line,
                                        f"chart {ctx.chart_version} -> {tgt['karpenter']}: {note}",
                                        "read the upgrade guide sections of the minors you cross"))
    return res


def _namespace(ci) -> str | None:
    if ci.kind == "terraform":
        ns = ci.block.attr("namespace")
        lit = ns.literal() if ns is not None else None
        return str(lit) if lit else None
    obj = ci.obj or {}
    return (obj.get("spec") or {}).get("targetNamespace") or (obj.get("metadata") or {}).get("namespace")


def _owned_crds(files: list, urls: list) -> list[Finding]:
    """The CRDs are owned by files or URLs: they move in the runbook's own steps, with the conversion webhook the
    v1 hop needs; a URL cannot name the controller's namespace (the controller chart's CRDs say kube-system)."""
    out = []
    for vs in files:
        f = min(vs.files, key=lambda x: (x.path, x.line))
        out.append(Finding(
            "MIG-V1-CRD-001", "warning", f.path, f.line,
            f"the CRDs kept as files in {vs.folder or '.'}/ own the cluster's CRDs: no karpenter-crd release is added "
            "beside them. Through the v1 hop they must name the controller's conversion webhook Service",
            "render them from the karpenter-crd chart at each step with the runbook's crds-files commands (the patch "
            "release, then 1.0), commit and apply them before the controller moves"))
    for u in urls[:1]:
        out.append(Finding(
            "MIG-V1-CRD-001", "warning", u.path, u.line,
            f"{u.url} and the other CRD URLs own the cluster's CRDs: no karpenter-crd release is added beside them. "
            "The v1 hop's CRDs must name the controller's conversion webhook Service, and the files at those URLs "
            "name kube-system/karpenter",
            "where the controller runs in kube-system, move the URLs to the patch release, then to 1.0; else render "
            "the CRDs from the karpenter-crd chart (helm template ... --set webhook.serviceNamespace=<namespace>) "
            "and apply those instead"))
    return out
