"""Rule `v1/kustomize`: overlay patches of v1beta1 NodePools/EC2NodeClasses, rewritten to v1 with their objects.

A patch is a partial object (strategic merge) or a list of JSON 6902 ops; after the manifests phase rewrites the
base objects to v1, a patch still naming v1beta1 no longer matches anything and `kustomize build` fails. In the
manifests phase each such patch is rewritten in place: the base (found in the repository) and the base as patched
are both converted to v1, and the patch must take the one to the other.

- strategic merge: the v1 rewrite of the partial object itself (apiVersion, consolidation policy, expireAfter
  moved into the template, nodeClassRef group/kind) as span edits, when it is proven; else the patch made from the
  difference of the two converted objects, in the file's style (MIG-KUS-006);
- JSON 6902: the ops unchanged when they give the same v1 object (only `target.version` moves), else ops derived
  from the two converted objects (MIG-KUS-006);
- a patch that changes a NodePool's kubelet cannot follow it (v1 moves kubelet to the EC2NodeClass) and a patch
  of an object that is not in the repository is not proven: both are reported, nothing is written for them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...inventory import kustomizations as kz
from ...edits import TextEdit, to_newline
from ...inventory import Repo, _parse_yaml_docs
from ...model import Finding
from ...sources import keytree
from ...validate import validate_object
from ..v1beta1.kustomize import KustomizeRule as FirstHop
from ..v1beta1.kustomize import NewPatch, entry_span
from . import convert
from .convert import FACTS, apply_ops

RULE = "v1/kustomize"
PHASE = "manifests"
SCHEMAS = FACTS["validate_against"]
KUBELET = ("spec", "template", "spec", "kubelet")


@dataclass
class Result:
    edits: list = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    files: list[str] = field(default_factory=list)


def _to_v1(kind: str, obj: Any, pinned: str | None = None) -> tuple[dict | None, convert.Rewrite]:
    """The v1 object the manifests rule makes (`pinned`: the AMI version it pins aliases to, from all classes)."""
    rw = convert.nodepool_ops(obj, drop_kubelet=True) if kind == "NodePool" else \
        convert.nodeclass_ops(obj, pinned=pinned if pinned is not None else convert.pinned_ami_version([obj]))
    if any(n.severity == "error" for n in rw.notes) or rw.blocked:
        return None, rw
    return kz.plain(apply_ops(obj, rw.ops)), rw


class KustomizeV1Rule:
    def __init__(self, repo: Repo, phase: str, owns=lambda p: True, manifests: list | None = None):
        self.repo = repo
        self.phase = phase
        self.owns = owns
        # the same pinned AMI version v1/manifests gives every class's alias
        self.pinned = convert.pinned_ami_version([m.obj for m in manifests or [] if m.kind == "EC2NodeClass"])
        self.res = Result()
        self.first = FirstHop(repo, phase, owns)      # its entry/render helpers write in the kustomization's style

    def finding(self, code, severity, path, line, message, manual=""):
        self.res.findings.append(Finding(code, severity, path, line, message, manual))

    def run(self) -> Result:
        if self.phase != PHASE:
            return self.res
        for k in kz.scan(self.repo):
            if any(pt.era() == "beta" for pt in k.patches) and self.owns(k.path):
                for pt in k.patches:
                    if pt.era() == "beta":
                        self.patch(k, pt)
        return self.res

    def patch(self, k: kz.Kustomization, pt: kz.Patch) -> None:
        aims = pt.aims()
        if len(aims) != 1 or aims[0][2] is None:
            self.finding("MIG-KUS-003", "warning", pt.kpath, pt.line,
                         f"patch {pt.where} targets several or unnamed v1beta1 objects; migrator rewrites patches "
                         "of one named object", "rewrite it for v1 by hand (apiVersion/target version v1, the "
                         "v1 field names)")
            return
        api, kind, name = aims[0]
        base = kz.find_base(self.repo, pt, api, kind, name)
        if base is None:
            self.finding("MIG-KUS-005", "warning", pt.kpath, pt.line,
                         f"the {kind} {name} patched by {pt.where} is not in this repository (remote base?): the "
                         "patch cannot be proven against it and is left as it is",
                         "rewrite it for v1 by hand; `kustomize build` fails on a v1beta1 patch once the base is v1")
            return
        try:
            eff = kz.apply_patch(pt, base, api, kind)
        except kz.PatchError as e:
            self.finding("MIG-KUS-002", "error", pt.kpath, pt.line, f"patch {pt.where} does not apply to {kind} "
                         f"{name}: {e}", "fix the patch (kustomize build fails on it too); it is left untouched")
            return
        if kind == "NodePool" and convert.get(kz.plain(base), KUBELET) != convert.get(kz.plain(eff), KUBELET):
            self.finding("MIG-KUS-007", "error", pt.kpath, pt.line,
                         f"patch {pt.where} changes the kubelet of NodePool {name}, which v1 moves to the "
                         "EC2NodeClass: the patch cannot follow it",
                         "patch spec.kubelet of an EC2NodeClass used only by this NodePool in this overlay instead")
            return
        before, _ = _to_v1(kind, base, self.pinned)
        after, _ = _to_v1(kind, eff, self.pinned)
        if before is None or after is None:
            self.finding("MIG-KUS-002", "error", pt.kpath, pt.line,
                         f"{kind} {name} as patched by {pt.where} cannot be converted to v1", "see the object's findings")
            return
        errs = [f"{e} (CRD of Karpenter {rel})" for rel in SCHEMAS for e in validate_object(after, rel)]
        if errs:
            self.finding("MIG-VAL-001", "error", pt.kpath, pt.line,
                         f"{kind} {name} as patched by {pt.where} fails the v1 CRD: {'; '.join(errs[:3])}",
                         "fix the overlay's patch; it is not rewritten")
            return
        if pt.form == "smp" and pt.file is not None and self.in_place(pt, kind, before, after):
            self.retarget(k, pt)
            return
        new = self.new_patch(pt, kind, before, after)
        if new is None:
            return
        self.write(k, pt, new)

    # -- strategic merge patch files: the partial object's own rewrite, as span edits -------------------------
    def in_place(self, pt: kz.Patch, kind: str, before: dict, after: dict) -> bool:
        text = self.repo.text(pt.file)
        docs = list(_parse_yaml_docs(self.repo, pt.file, text, 0, 0, pt.file))
        karp = [(d, m, o) for d, m, o in docs if isinstance(o, dict) and o.get("kind") == kind]
        if len(karp) != 1:
            return False
        doc, masked, obj = karp[0]
        rw = convert.nodepool_ops(obj, drop_kubelet=True) if kind == "NodePool" else convert.nodeclass_ops(obj)
        rw.ops = [op for op in rw.ops if not (op.kind == "add" and op.dst[:2] == ("spec", "metadataOptions"))]
        if rw.blocked:
            return False
        try:
            ok = kz.merge_patch(before, kz.plain(apply_ops(obj, rw.ops))) == after
        except Exception:  # noqa: BLE001 - a partial the rewrite cannot take: fall back to the derived patch
            ok = False
        if not ok:
            return False
        tree = keytree.yaml_tree(text, pt.file, doc.start, doc.end, obj)
        tree.unmask = masked.unmask
        out = keytree.rewrite(tree, rw.ops)
        if out.problems:
            return False
        nl = self.repo.files[pt.file].newline
        for s, e, t in out.edits:
            self.res.edits.append(TextEdit(pt.file, s, e, to_newline(t, nl), RULE))
        self.res.files.append(pt.file)
        self.finding("MIG-KUS-001", "info", pt.file, doc.first_line + 1,
                     f"patch {pt.where} ({kind} {pt.aims()[0][2]}): rewritten to v1 in place")
        return True

    def retarget(self, k: kz.Kustomization, pt: kz.Patch) -> None:
        """`target.version: v1beta1` of the entry -> v1."""
        tgt = pt.entry(k).get("target") if isinstance(pt.item, dict) else None     # positions: the round-trip entry
        if not isinstance(tgt, dict) or str(tgt.get("version", "")) != "v1beta1":
            return
        pos = kz.value_pos(k.text, tgt, "version")
        if pos is not None:
            s, e = kz.scalar_span(k.text, pos)
            self.res.edits.append(TextEdit(k.path, s, e, kz.quoted_like(k.text[s:e], "v1"), RULE))

    # -- everything else: the patch that takes the converted base to the converted patched object ---------------
    def new_patch(self, pt: kz.Patch, kind: str, before: dict, after: dict) -> NewPatch | None:
        api = after["apiVersion"]
        target = self.target(pt)
        if pt.form == "smp":
            diff = kz.merge_diff(before, after)
            meta = {"name": after["metadata"]["name"]}
            for d in pt.docs:
                ns = (d.get("metadata") or {}).get("namespace") if isinstance(d, dict) else None
                if ns is not None:
                    meta["namespace"] = ns
            extra = diff.pop("metadata", None) or {}
            meta.update({k: v for k, v in extra.items() if k != "name"})
            diff.pop("apiVersion", None)
            diff.pop("kind", None)
            doc = {"apiVersion": api, "kind": kind, "metadata": meta, **diff}
            if kz.merge_patch(before, doc) != after:
                self.finding("MIG-KUS-002", "error", pt.kpath, pt.line,
                             f"the v1 patch made from {pt.where} does not reproduce the converted patched object; "
                             "it is not written", "rewrite the patch for v1 by hand")
                return None
            self.finding("MIG-KUS-006", "info", pt.kpath, pt.line,
                         f"patch {pt.where} rewritten for v1 from the converted objects (same result)")
            return NewPatch(kind, api, [doc], target)
        ops = kz.plain(pt.docs[0])
        try:
            same = kz.json_patch(before, ops) == after
        except kz.PatchError:
            same = False
        if same:
            return NewPatch(kind, api, [ops], target, [])
        import jsonpatch
        derived = jsonpatch.make_patch(before, after).patch
        self.finding("MIG-KUS-006", "info", pt.kpath, pt.line,
                     f"the ops of {pt.where} do not give the same v1 object: replaced by ops derived from the "
                     "converted objects (same result)")
        return NewPatch(kind, api, [derived], target)

    @staticmethod
    def target(pt: kz.Patch) -> Any:
        t = pt.target
        if not isinstance(t, dict):
            return None
        return {**t, "version": "v1"} if str(t.get("version", "")) == "v1beta1" else dict(t)

    def write(self, k: kz.Kustomization, pt: kz.Patch, new: NewPatch) -> None:
        body = self.first.render(pt, [new])
        if pt.file is not None:
            text = self.repo.text(pt.file)
            if body.replace("\n", self.repo.files[pt.file].newline) != text:
                self.res.edits.append(TextEdit(pt.file, 0, len(text),
                                               to_newline(body, self.repo.files[pt.file].newline), RULE))
                self.res.files.append(pt.file)
            self.retarget(k, pt)
            return
        start, end = entry_span(k.text, k.obj[pt.field], pt.index)
        entry = self.first.entry(k, pt, [new], body, start, end)
        if entry is None:
            self.finding("MIG-KUS-002", "error", pt.kpath, pt.line, f"the entry {pt.where} cannot be edited in place",
                         "rewrite the patch for v1 by hand")
            return
        if entry != k.text[start:end]:
            self.res.edits.append(TextEdit(k.path, start, end, entry, RULE))
            self.res.files.append(k.path)


def run(ctx, phase: str) -> Result:
    return KustomizeV1Rule(ctx.repo, phase, ctx.owns, ctx.manifests).run()
