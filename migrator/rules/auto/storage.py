"""EBS StorageClasses and alternate CNIs on the way to EKS Auto Mode (nodepools phase, with the new NodePools).

Auto Mode's nodes mount EBS volumes through its own driver, `ebs.csi.eks.amazonaws.com`; a StorageClass cannot
change its provisioner in place, so each class of the EBS CSI driver (`ebs.csi.aws.com`, or the in-tree
`kubernetes.io/aws-ebs`) gets a twin `<name>-auto` appended to its own file (applied with it): same parameters,
reclaim policy, binding mode and expansion, never a second default. Existing volumes keep their driver (moved with
eks-auto-mode-ebs-migration-tool, with downtime: said). A `kubernetes_storage_class(_v1)` block gets its twin block
after it, copied from its own text; one migrator cannot copy (a computed name, count or for_each) is said.
An alternate CNI (Cilium, Calico) does not run on Auto Mode's nodes: said where it is installed.
Facts: knowledge/auto_mode.yaml `storage` and `cni` (karpenter-to-auto-mode.md §4.4, §8, S3, S12, S29).
"""
from __future__ import annotations

import posixpath
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
    """kubernetes_storage_class(_v1) of the EBS CSI driver: its twin block is written after it in the same file (the
    block's own text, with the twin's label and name, the Auto Mode provisioner and the default annotation "false";
    every other value as written, expressions included). A class whose name is not a literal, that is made by count or
    for_each, or whose annotations are no object written out, is said with the twin to write; so is a StorageClass in a
    manifest resource's YAML (kubectl_manifest, kubernetes_manifest)."""
    from ...roots import _module_users
    from ...sources import hcl as hclsrc
    said = set()
    blocks = [(p, b) for kind in FACTS["terraform_types"] for p, b in ctx.repo.blocks("resource", kind)
              if ctx.owns(p) and len(b.labels) == 2]
    taken = {n for _, b in blocks for n in (_tf_name(b), b.labels[1]) if n}
    for p, b in blocks:
        prov = b.attr("storage_provisioner")
        if prov is None or prov.literal() not in FACTS["old_provisioners"]:
            continue
        said.add(p)
        name, line = _tf_name(b), hclsrc.line_of(ctx.repo.text(p), b.start)
        if name and name + FACTS["suffix"] in taken or b.labels[1] + _LABEL_SUFFIX in taken:
            continue                                    # its twin is there
        d = posixpath.dirname(p)
        twin = None if _module_users(ctx.repo, d) else _tf_twin(ctx.repo.text(p), b, name)
        if twin is None:
            res.findings.append(Finding(
                "MIG-AUTO-052", "warning", p, line,
                f"{b.address} is a StorageClass of {prov.literal()}: Auto Mode's nodes mount only volumes of "
                f"{FACTS['provisioner']}, and a class cannot change its provisioner in place; migrator writes its twin "
                "only for a class of a root module (not a module other configurations call) with a literal name, made "
                "once (no count or for_each), whose annotations are written out",
                f"add a second {b.labels[0]} beside it with the same parameters, storage_provisioner = "
                f"\"{FACTS['provisioner']}\" and a name ending in {FACTS['suffix']} (not a second default); volumes in "
                "use move with eks-auto-mode-ebs-migration-tool"))
            continue
        text, default, dropped = twin
        sf = ctx.repo.files[p]
        res.edits.append(TextEdit(p, b.end, b.end, to_newline(text, sf.newline), RULE))
        res.files.append(p)
        res.created.append(f"StorageClass {name + FACTS['suffix']}")
        res.tf_targets.append((posixpath.dirname(p) or ".", f"{b.labels[0]}.{b.labels[1]}{_LABEL_SUFFIX}"))
        res.findings.append(Finding(
            "MIG-AUTO-052", "warning" if default else "info", p, line,
            f"{b.address} (StorageClass {name}, {prov.literal()}): its Auto Mode twin "
            f"{b.labels[0]}.{b.labels[1]}{_LABEL_SUFFIX} (StorageClass {name + FACTS['suffix']}, "
            f"{FACTS['provisioner']}) is added after it; Auto Mode's nodes mount only volumes of their own driver, and "
            "volumes already made keep theirs" + (f"; {name} is the default class, and the twin is not made a second "
                                                  "default" if default else "")
            + "".join(f"; its {k} is not copied (write the twin's own for Auto Mode's nodes)" for k in dropped),
            ("give new claims storageClassName " + name + FACTS["suffix"] + (
                f", and move the default annotation to {name + FACTS['suffix']} when the workloads move" if default
                else "") + "; a volume in use moves with eks-auto-mode-ebs-migration-tool (the pod stops while it is "
             "detached), or stays on a node group that keeps the EBS CSI driver")))
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


_LABEL_SUFFIX = FACTS["suffix"].replace("-", "_")


def _tf_name(b) -> str | None:
    meta = b.sub("metadata")
    name = meta[0].attr("name") if meta else None
    value = name.literal() if name is not None else None
    return value if isinstance(value, str) and value else None


def _tf_twin(text: str, b, name: str | None):
    """(the twin block's text to insert after `b`, whether `b` is the default class, the keys not carried), or None
    when the block is not one migrator copies: its own text with span edits, so every value keeps its expression."""
    from ...sources import hcl as hclsrc
    if name is None or b.attr("count") is not None or b.attr("for_each") is not None:
        return None
    meta = b.sub("metadata")[0]
    edits = [(b.label_spans[1], hclsrc.quote(b.labels[1] + _LABEL_SUFFIX)),
             ((meta.attr("name").start, meta.attr("name").end), hclsrc.quote(name + FACTS["suffix"])),
             ((b.attr("storage_provisioner").start, b.attr("storage_provisioner").end), hclsrc.quote(FACTS["provisioner"]))]
    default = False
    notes = meta.attributes.get("annotations")
    if notes is not None:
        if notes.expr.kind != "object":
            return None
        marks = [en for en in notes.expr.entries if en.key == FACTS["default_annotation"]]
        default = any(str(en.value.literal()).lower() == "true" for en in marks)
        if marks and len(marks) == len(notes.expr.entries):      # the default was its only note: it goes whole
            edits.append((_lines(text, notes.start, notes.end), ""))
        else:
            edits += [(_lines(text, en.start, en.end), "") for en in marks]
    dropped = []
    for key in FACTS["not_carried"]:
        for sub in b.sub(FACTS["terraform_keys"].get(key, key)):
            edits.append((_lines(text, sub.start, sub.end), ""))
            dropped.append(key)
    out = text[b.start:b.end]
    for (s, e), new in sorted(edits, key=lambda x: -x[0][0]):
        out = out[:s - b.start] + new + out[e - b.start:]
    head = f"# EKS Auto Mode's twin of StorageClass {name} (added by migrator: {FACTS['provisioner']})\n"
    return "\n\n" + head + out, default, sorted(set(dropped))


def _lines(text: str, start: int, end: int) -> tuple[int, int]:
    """The whole lines of text[start:end], with the comment lines just above them, and one blank line above them
    when a blank line or the block's end follows (so the copy keeps the layout `terraform fmt` leaves)."""
    s = text.rfind("\n", 0, start) + 1
    e = text.find("\n", end)
    e = len(text) if e < 0 else e + 1
    while s > 0:
        prev = text.rfind("\n", 0, s - 1) + 1
        if not text[prev:s].strip().startswith(("#", "//")):
            break
        s = prev
    nxt = text[e:text.find("\n", e) + 1 if text.find("\n", e) >= 0 else len(text)].strip()
    prev = text.rfind("\n", 0, s - 1) + 1 if s > 0 else s
    if s > 0 and not text[prev:s].strip() and (not nxt or nxt.startswith("}")):
        s = prev
    return s, e


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
