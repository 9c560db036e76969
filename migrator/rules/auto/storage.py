"""EBS StorageClasses and alternate CNIs on the way to EKS Auto Mode (nodepools phase, with the new NodePools).

Auto Mode's nodes mount EBS volumes through its own driver, `ebs.csi.eks.amazonaws.com`; a StorageClass cannot
change its provisioner in place, so each class of the EBS CSI driver (`ebs.csi.aws.com`, or the in-tree
`kubernetes.io/aws-ebs`) gets a twin `<name>-auto` appended to its own file (applied with it): same parameters,
reclaim policy, binding mode and expansion, never a second default. Existing volumes keep their driver (moved with
eks-auto-mode-ebs-migration-tool, with downtime: said). A StorageClass written in Terraform is said, not written.
An alternate CNI (Cilium, Calico) does not run on Auto Mode's nodes: said where it is installed.
Facts: knowledge/auto_mode.yaml `storage` and `cni` (karpenter-to-auto-mode.md §4.4, §8, S3, S12, S29).
"""
from __future__ import annotations

import re

from ruamel.yaml.comments import CommentedMap

from ...edits import TextEdit, to_newline
from ...inventory import _parse_yaml_docs
from ...model import Finding
from ...sources import yaml as yamlsrc
from . import convert

RULE = "auto/nodepools"
FACTS = convert.FACTS["storage"]
CNI = convert.FACTS["cni"]
_SC = re.compile(r"^kind:\s*StorageClass\s*$", re.M)


def _classes(ctx):
    """(path, doc, masked, obj) of every StorageClass document of this root's YAML files."""
    repo = ctx.repo
    for p, sf in sorted(repo.files.items()):
        if not p.endswith((".yaml", ".yml")) or not ctx.owns(p) or not _SC.search(sf.text) or p in repo.template_paths:
            continue
        for doc, m, obj in _parse_yaml_docs(repo, p, sf.text, 0, 0, p, only=_SC):
            if isinstance(obj, CommentedMap) and obj.get("kind") == "StorageClass" and \
                    str(obj.get("apiVersion", "")).startswith("storage.k8s.io/"):
                yield p, doc, m, obj


def twins(ctx, res) -> None:
    """Append the Auto Mode twin of every EBS StorageClass of the root (once: a twin already there is kept)."""
    found = list(_classes(ctx))
    names = {str((o.get("metadata") or {}).get("name")) for _, _, _, o in found}
    appended: dict[str, list[str]] = {}
    for p, doc, m, obj in found:
        meta = obj.get("metadata") or {}
        name = str(meta.get("name"))
        if obj.get("provisioner") not in FACTS["old_provisioners"] or m.has_token(name) or \
                any(m.has_token(v) for v in (obj.get("parameters") or {}).values()):
            continue
        twin = name + FACTS["suffix"]
        if twin in names:
            continue
        line = doc.first_line + 1
        default = str((meta.get("annotations") or {}).get(FACTS["default_annotation"], "")).lower() == "true"
        appended.setdefault(p, []).append(_twin_text(obj, twin, yamlsrc.detect_style(ctx.repo.text(p))))
        res.created.append(f"StorageClass {twin}")
        res.findings.append(Finding(
            "MIG-AUTO-052", "warning" if default else "info", p, line,
            f"StorageClass {name} ({obj.get('provisioner')}): its Auto Mode twin {twin} ({FACTS['provisioner']}) is "
            "added to the same file; Auto Mode's nodes mount only volumes of their own driver, and volumes already made "
            "keep theirs" + (f"; {name} is the default class, and {twin} is not made a second default" if default
            else "") + "".join(f"; its {k} is not copied (write the twin's own for Auto Mode's nodes)"
                               for k in FACTS["not_carried"] if k in obj),
            ("give new claims storageClassName " + twin + (f", and move the default annotation to {twin} when the "
             "workloads move" if default else "") + "; a volume in use moves with eks-auto-mode-ebs-migration-tool "
             "(the pod stops while it is detached), or stays on a node group that keeps the EBS CSI driver")))
    for p, texts in appended.items():
        text = ctx.repo.text(p)
        add = ("" if text.endswith("\n") or not text else "\n") + "".join("---\n" + t for t in texts)
        res.edits.append(TextEdit(p, len(text), len(text), to_newline(add, ctx.repo.files[p].newline), RULE))
        res.files.append(p)
    _terraform_classes(ctx, res)
    _cnis(ctx, res)


def _twin_text(obj: CommentedMap, twin: str, style) -> str:
    meta = obj.get("metadata") or {}
    out = CommentedMap([("apiVersion", obj["apiVersion"]), ("kind", "StorageClass")])
    md = CommentedMap([("name", twin)])
    if meta.get("labels"):
        md["labels"] = dict(meta["labels"])
    notes = {k: v for k, v in (meta.get("annotations") or {}).items() if k != FACTS["default_annotation"]}
    if notes:
        md["annotations"] = notes
    out["metadata"] = md
    out["provisioner"] = FACTS["provisioner"]
    for key in FACTS["carried"]:
        if key in obj:
            out[key] = obj[key]
    head = f"# EKS Auto Mode's twin of StorageClass {meta.get('name')} (added by migrator: {FACTS['provisioner']})\n"
    return head + yamlsrc.Emitter(style).emit(out).text


def _terraform_classes(ctx, res) -> None:
    """kubernetes_storage_class(_v1) of the EBS CSI driver, or a StorageClass in a manifest resource's YAML
    (kubectl_manifest, kubernetes_manifest): said with the twin to write (not generated in HCL)."""
    from ...sources import hcl as hclsrc
    said = set()
    for kind in FACTS["terraform_types"]:
        for p, b in ctx.repo.blocks("resource", kind):
            if not ctx.owns(p):
                continue
            prov = b.attr("storage_provisioner")
            if prov is None or prov.literal() not in FACTS["old_provisioners"]:
                continue
            said.add(p)
            res.findings.append(Finding(
                "MIG-AUTO-052", "warning", p, hclsrc.line_of(ctx.repo.text(p), b.start),
                f"{b.address} is a StorageClass of {prov.literal()}: Auto Mode's nodes mount only volumes of "
                f"{FACTS['provisioner']}, and a class cannot change its provisioner in place",
                f"add a second {kind} beside it with the same parameters, storage_provisioner = "
                f"\"{FACTS['provisioner']}\" and a name ending in {FACTS['suffix']} (not a second default); volumes in "
                "use move with eks-auto-mode-ebs-migration-tool"))
    pat = re.compile("|".join(re.escape(x) for x in FACTS["old_provisioners"]))
    for p in ctx.repo.tf_files():
        text = ctx.repo.text(p)
        m = pat.search(text) if p not in said and ctx.owns(p) and "StorageClass" in text else None
        if m is None:
            continue
        res.findings.append(Finding(
            "MIG-AUTO-052", "warning", p, hclsrc.line_of(text, m.start()),
            f"a StorageClass of {m.group(0)} is written here: Auto Mode's nodes mount only volumes of "
            f"{FACTS['provisioner']}, and a class cannot change its provisioner in place",
            f"add its twin beside it (a name ending in {FACTS['suffix']}, provisioner {FACTS['provisioner']}, the same "
            "parameters, not a second default); volumes in use move with eks-auto-mode-ebs-migration-tool"))


def _cnis(ctx, res) -> None:
    """An alternate CNI installed by the repository (a chart of knowledge/auto_mode.yaml `cni`): said once each."""
    pat = re.compile(r"""(?m)^\s*chart\s*[:=]\s*["']?(?:[\w.-]+/)?(""" + "|".join(map(re.escape, CNI["charts"])) +
                     r""")["']?\s*(?:#.*)?$""")
    for p, sf in sorted(ctx.repo.files.items()):
        if not p.endswith((".tf", ".yaml", ".yml")) or not ctx.owns(p):
            continue
        m = pat.search(sf.text)
        if m is None:
            continue
        line = sf.text.count("\n", 0, m.start()) + 1
        res.findings.append(Finding(
            "MIG-AUTO-053", "warning", p, line,
            f"{m.group(1)} is installed here: {CNI['why']}",
            CNI["manual"]))
