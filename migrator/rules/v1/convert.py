"""v1beta1 -> v1 object rewrites as key-tree operations (knowledge/v1.yaml), and their effect on the data.

A rewrite is a list of :class:`keytree.Op` on one object's paths, computed from the parsed object and the
facts table. The same list is applied to the text (keytree, span edits in any container) and to a copy of
the data (:func:`apply_ops`), which is what gets validated against the v1 CRD schemas before anything is
shown. Notes carry what the rewrite cannot decide alone (drift, IMDS, AMI pinning, Ubuntu).
"""
from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq

from ... import knowledge
from ...sources.keytree import Op
from ...sources.templates import TOKEN_RE
from ..v1beta1.convert import _get, _has

FACTS = knowledge.load("v1")
NP = FACTS["nodepool"]
NC = FACTS["ec2nodeclass"]


def _path(dotted: str) -> tuple:
    return tuple(dotted.split("."))


@dataclass
class Note:
    code: str
    severity: str
    field: tuple
    message: str
    manual_step: str = ""


@dataclass
class Rewrite:
    ops: list[Op] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    blocked: bool = False        # an error note: the object is not rewritten

    def note(self, code, severity, path, message, manual=""):
        self.notes.append(Note(code, severity, path, message, manual))
        if severity == "error":
            self.blocked = True


get = _get      # the first hop's path helpers: value at a path / whether the path exists
has = _has


def is_templated(v: Any) -> bool:
    return isinstance(v, str) and bool(TOKEN_RE.search(v))


def plain(v: Any) -> Any:
    """Comparable plain structure (kubelet equality across NodePools)."""
    if isinstance(v, dict):
        return {str(k): plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [plain(x) for x in v]
    return v


# -- NodePool --------------------------------------------------------------------------------------
def nodepool_ops(obj: Any, drop_kubelet: bool, repoint: str | None = None) -> Rewrite:
    rw = Rewrite()
    kind = FACTS["kinds"]["NodePool"]
    rw.ops.append(Op("set", ("apiVersion",), value=kind["to"]))
    spec = obj.get("spec") or {}
    dis = spec.get("disruption") if isinstance(spec, dict) else None
    moved_out: set[str] = set()
    for mv in NP["moves"]:
        src, dst = _path(mv["from"]), _path(mv["to"])
        if has(obj, src):
            rw.ops.append(Op("rename", src, dst))
            moved_out.add(src[-1])
            rw.note("MIG-V1-NP-002", "warning", dst, f"{mv['from']} moved to {mv['to']}: {mv['note']}")
    if isinstance(dis, dict):
        policy = dis.get("consolidationPolicy")
        if is_templated(policy):
            rw.note("MIG-V1-NP-001", "error", ("spec", "disruption", "consolidationPolicy"),
                    "consolidationPolicy is templated; migrator cannot tell whether it is WhenUnderutilized",
                    f"render it as one of {', '.join(NP['consolidation_policy'].values())} / WhenEmpty and "
                    f"add consolidateAfter (\"{NP['consolidate_after_default']}\" keeps the v1beta1 behaviour)")
            return rw
        if policy in NP["consolidation_policy"]:
            rw.ops.append(Op("set", ("spec", "disruption", "consolidationPolicy"),
                             value=NP["consolidation_policy"][policy]))
        remaining = [k for k in dis if k not in moved_out]
        if remaining and "consolidateAfter" not in dis:
            after = "consolidationPolicy" if "consolidationPolicy" in dis else None
            rw.ops.append(Op("add", dst=("spec", "disruption", "consolidateAfter"),
                             value=NP["consolidate_after_default"], after=after))
            rw.note("MIG-V1-NP-003", "info", ("spec", "disruption"),
                    f"consolidateAfter: {NP['consolidate_after_default']} added (v1 requires it; "
                    f"{NP['consolidate_after_default']} is what v1beta1 did)")
    ref_path = _path(NP["node_class_ref"]["path"])
    ref = get(obj, ref_path)
    if isinstance(ref, dict):
        rw.ops.extend(_node_class_ref_ops(ref, ref_path, repoint))
    if drop_kubelet and has(obj, _path(NP["kubelet"])):
        rw.ops.append(Op("remove", _path(NP["kubelet"]), reason="moved to the EC2NodeClass"))
    for dotted, why in NP["removed"].items():
        if has(obj, _path(dotted)):
            rw.ops.append(Op("remove", _path(dotted), reason=why))
    rw.ops.extend(_controller_annotation_ops(obj))
    tmpl = get(obj, ("spec", "template", "spec")) or {}
    offers = [why for key, why in NP["offered"].items()
              if (key == "terminationGracePeriod" and "terminationGracePeriod" not in tmpl)
              or (key == "budget_reasons" and isinstance(dis, dict) and dis.get("budgets")
                  and not any(isinstance(b, dict) and b.get("reasons") for b in dis["budgets"]))]
    if offers:
        rw.note("MIG-V1-NP-004", "info", ("spec",), "; ".join(offers) + " (not set by migrator)")
    return rw


def _node_class_ref_ops(ref: dict, ref_path: tuple, repoint: str | None) -> list[Op]:
    facts = NP["node_class_ref"]
    api = ref.get("apiVersion")
    group = str(api).split("/")[0] if api and not is_templated(api) else facts["group"]
    want = CommentedMap()
    want["group"] = ref.get("group", group)
    want["kind"] = ref.get("kind", facts["kind"])
    want["name"] = repoint or ref.get("name")
    if getattr(ref, "fa", None) is not None and ref.fa.flow_style():
        want.fa.set_flow_style()
        return [Op("replace", ref_path, ref_path, value=want)]
    ops = []
    if "apiVersion" in ref and "group" not in ref:
        ops.append(Op("replace", ref_path + ("apiVersion",), ref_path + ("group",), value=group))
    elif "apiVersion" in ref:
        ops.append(Op("remove", ref_path + ("apiVersion",)))
    elif "group" not in ref:
        ops.append(Op("add", dst=ref_path + ("group",), value=group, before=next(iter(ref), None)))
    if "kind" not in ref:
        ops.append(Op("add", dst=ref_path + ("kind",), value=facts["kind"],
                      after="apiVersion" if "apiVersion" in ref else "group",
                      before=None if "apiVersion" in ref or "group" in ref else next(iter(ref), None)))
    if repoint is not None:
        ops.append(Op("set", ref_path + ("name",), value=repoint))
    return ops


def _controller_annotation_ops(obj: Any) -> list[Op]:
    ann = get(obj, ("metadata", "annotations"))
    if not isinstance(ann, dict):
        return []
    return [Op("remove", ("metadata", "annotations", a), reason="controller-owned (KB G.4)")
            for a in FACTS["controller_annotations"] if a in ann]


# -- EC2NodeClass ----------------------------------------------------------------------------------
def nodeclass_ops(obj: Any, kubelet: Any = None, pinned: str | None = None,
                  kubelet_lines: tuple[str, str] | None = None) -> Rewrite:
    rw = Rewrite()
    rw.ops.append(Op("set", ("apiVersion",), value=FACTS["kinds"]["EC2NodeClass"]["to"]))
    spec = obj.get("spec") or {}
    family = spec.get("amiFamily")
    terms = spec.get("amiSelectorTerms")
    if is_templated(family):
        rw.note("MIG-V1-NC-001", "error", ("spec", "amiFamily"),
                "amiFamily is templated; v1 needs amiSelectorTerms (an alias per family) and migrator cannot tell "
                "which family this renders to",
                "add amiSelectorTerms: [{alias: <family>@latest}] (al2, al2023, bottlerocket, windows2019, "
                "windows2022) and remove amiFamily, or keep amiFamily with explicit amiSelectorTerms")
        return rw
    if family in NC["removed_families"]:
        _ubuntu(rw, spec, family)
    elif family in NC["alias_families"] and not terms:
        alias_family = NC["alias_families"][family]
        version = NC["alias_version"]
        seq = CommentedSeq([CommentedMap([("alias", f"{alias_family}@{version}")])])
        rw.ops.append(Op("replace", ("spec", "amiFamily"), ("spec", "amiSelectorTerms"), value=seq))
        if alias_family in NC["latest_only"]:
            rw.note("MIG-V1-NC-002", "info", ("spec", "amiFamily"),
                    f"amiFamily {family} -> amiSelectorTerms alias {alias_family}@latest (Windows aliases are latest-only)")
        else:
            pin = f" This repository pins AMI versions elsewhere ({pinned}): pin the alias too, e.g. " \
                  f"{alias_family}@{pinned}." if pinned else ""
            rw.note("MIG-V1-NC-002", "warning", ("spec", "amiFamily"),
                    f"amiFamily {family} -> amiSelectorTerms [{{alias: {alias_family}@latest}}] (the same AMIs "
                    "v1beta1 resolved, so no drift now); @latest drifts every node whenever a new AMI is "
                    f"released.{pin}",
                    f"to control AMI roll-outs, pin it: {alias_family}@v<YYYYMMDD> (a released AMI version)")
    if not has(obj, ("spec", "metadataOptions")):
        rw.ops.append(Op("add", dst=("spec", "metadataOptions"),
                         value=CommentedMap(NC["metadata_options_v1beta1"].items())))
        rw.note("MIG-V1-NC-003", "info", ("spec",),
                "metadataOptions written out with the v1beta1 defaults (httpPutResponseHopLimit: 2): v1 defaults "
                "to 1 for classes created or replaced without it, which cuts pods without hostNetwork off IMDS and "
                "drifts nodes", "remove it later if you want v1's hop limit 1 (that replaces the nodes)")
    if kubelet is not None:
        after = next((k for k in reversed(NC["kubelet_order_after"]) if k in spec), None)
        rw.ops.append(Op("add", dst=("spec", "kubelet"), value=copy.deepcopy(kubelet), after=after,
                         lines=kubelet_lines))
    rw.ops.extend(_controller_annotation_ops(obj))
    return rw


def _ubuntu(rw: Rewrite, spec: dict, family: str) -> None:
    facts = NC["removed_families"][family]
    if not spec.get("amiSelectorTerms"):
        rw.note("MIG-V1-NC-004", "error", ("spec", "amiFamily"),
                f"amiFamily {family} is not supported by v1 and this class has no amiSelectorTerms: Karpenter's "
                "conversion would mark it incompatible (NotReady) and stop provisioning for its NodePools",
                f"add amiSelectorTerms selecting your {family} AMIs (ids or names) and keep custom userData, or "
                "move to al2023/bottlerocket with an alias; then run migrator again")
        return
    rw.ops.append(Op("set", ("spec", "amiFamily"), value=facts["to"]))
    if "blockDeviceMappings" not in spec:
        rw.ops.append(Op("add", dst=("spec", "blockDeviceMappings"),
                         value=_seq_of_maps(facts["block_device_mappings"]), after="amiSelectorTerms"))
    rw.note("MIG-V1-NC-005", "warning", ("spec", "amiFamily"),
            f"amiFamily {family} -> {facts['to']} with your amiSelectorTerms kept (v1 dropped {family}); "
            "Karpenter now generates AL2 bootstrap userData for these AMIs",
            "check that the selected AMIs boot with AL2-style userData, or use amiFamily: Custom with your own "
            "userData")


def _seq_of_maps(items: list) -> CommentedSeq:
    def conv(v):
        if isinstance(v, dict):
            return CommentedMap((k, conv(x)) for k, x in v.items())
        if isinstance(v, list):
            return CommentedSeq(conv(x) for x in v)
        return v
    return conv(items)


_PINNED = re.compile(NC["pinned_version_pattern"])


def pinned_ami_version(objs: list[Any]) -> str | None:
    """An AMI version the repository pins in amiSelectorTerms names (e.g. v20240213), if any."""
    pat = _PINNED
    for o in objs:
        for t in (get(o, ("spec", "amiSelectorTerms")) or []):
            m = pat.search(str((t or {}).get("name", ""))) if isinstance(t, dict) else None
            if m:
                return m.group(0)
    return None


# -- applying ops to data (for validation) ------------------------------------------------------------
def apply_ops(obj: Any, ops: list[Op]) -> Any:
    out = copy.deepcopy(obj)
    for op in ops:
        if op.kind == "set":
            _put(out, op.src, op.value)
        elif op.kind == "remove":
            _pop(out, op.src)
        elif op.kind == "rename":
            if has(out, op.src):
                v = _pop(out, op.src)
                if not has(out, op.dst):
                    _put(out, op.dst, v)
        elif op.kind == "replace":
            parent = get(out, op.src[:-1])
            if isinstance(parent, dict) and op.src[-1] in parent:
                items = [(op.dst[-1], copy.deepcopy(op.value)) if k == op.src[-1] else (k, v)
                         for k, v in parent.items() if not (k == op.dst[-1] and k != op.src[-1])]
                parent.clear()
                parent.update(items)
        elif op.kind == "add":
            if not has(out, op.dst):
                _put(out, op.dst, copy.deepcopy(op.value))
    _drop_empty(out, ("spec", "disruption"))
    return out


def _put(obj: Any, path: tuple, value: Any) -> None:
    for k in path[:-1]:
        if not isinstance(obj.get(k), dict):
            obj[k] = CommentedMap()
        obj = obj[k]
    obj[path[-1]] = value


def _pop(obj: Any, path: tuple) -> Any:
    parent = get(obj, path[:-1])
    return parent.pop(path[-1]) if isinstance(parent, dict) and path[-1] in parent else None


def _drop_empty(obj: Any, path: tuple) -> None:
    v = get(obj, path)
    if isinstance(v, dict) and not v:
        _pop(obj, path)
