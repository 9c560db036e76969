"""The EKS add-ons Auto Mode makes redundant (knowledge/auto_mode.yaml `redundant_addons`: VPC CNI, kube-proxy,
CoreDNS, the EBS CSI driver, the Pod Identity agent), said at the cleanup, never removed: they stay needed while any
node Auto Mode does not manage runs (a node group, a Karpenter node that has not drained), and Auto Mode's DNS serves
only its own nodes. Teams that removed them in the commit that turned Auto Mode on broke the nodes still running;
the safe order removes them in an apply after the last such node is gone.
"""
from __future__ import annotations

from ... import knowledge
from ...model import Finding
from ...sources import hcl as hclsrc

FACTS = knowledge.load("auto_mode")


def declared(ctx) -> list[tuple[str, str, int]]:
    """(add-on name, path, line) of each redundant add-on this root declares: the eks module's add-on map, an
    `aws_eks_addon`, an eksctl ClusterConfig's `addons`."""
    want = set(FACTS["redundant_addons"])
    inputs = set(FACTS["cluster"]["eks_module"]["addons_input"].values())
    out = []
    for p in sorted(ctx.repo.files):
        if not ctx.owns(p):
            continue
        if p.endswith(".tf"):
            hf = ctx.repo.hcl(p)
            if hf is None:
                continue
            text = ctx.repo.text(p)
            for b in hf.blocks:
                if b.type == "module":
                    for name in inputs & set(b.attributes):
                        expr = b.attr(name)
                        for e in (expr.entries if expr.kind == "object" else []):
                            key = next((x.value.literal() for x in e.value.entries if x.key == "name"), None) \
                                if e.value.kind == "object" else None
                            if str(key or e.key) in want:
                                out.append((str(key or e.key), p, hclsrc.line_of(text, e.start)))
                elif b.type == "resource" and b.labels[:1] == ["aws_eks_addon"]:
                    name = b.attr("addon_name")
                    lit = name.literal() if name is not None else None
                    if lit in want:
                        out.append((lit, p, hclsrc.line_of(text, b.start)))
        elif p.endswith((".yaml", ".yml")) and "kind: ClusterConfig" in ctx.repo.text(p):
            text = ctx.repo.text(p)
            for i, ln in enumerate(text.splitlines(), 1):
                s = ln.strip()
                if s.startswith("- name:") and s.split(":", 1)[1].strip().strip("\"'") in want:
                    out.append((s.split(":", 1)[1].strip().strip("\"'"), p, i))
    return out


def said(ctx, groups: list[str]) -> list[Finding]:
    """One finding at the first add-on: kept while other nodes run, removed in a later apply."""
    found = declared(ctx)
    if not found:
        return []
    names = ", ".join(sorted({n for n, _, _ in found}))
    _, path, line = found[0]
    where = ", ".join(sorted({f"{p}:{ln}" for _, p, ln in found}))
    if groups:
        return [Finding(
            "MIG-AUTO-055", "info", path, line,
            f"the EKS add-ons {names} ({where}) stay: node groups {', '.join(sorted(groups))} still run nodes EKS Auto "
            "Mode does not manage, which need them (Auto Mode's DNS serves only its own nodes); migrator leaves them",
            "remove them only in an apply after the last node group is gone, never in the same one")]
    return [Finding(
        "MIG-AUTO-055", "info", path, line,
        f"the EKS add-ons {names} ({where}) are redundant once only EKS Auto Mode's nodes run; migrator leaves them",
        "remove them in an apply after the last other node has drained: kubectl get nodes -l "
        "'eks.amazonaws.com/compute-type!=auto' must print nothing first")]
