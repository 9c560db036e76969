"""Provisioner -> NodePool and AWSNodeTemplate / inline provider -> EC2NodeClass (KB A, B).

Pure functions over parsed objects. Values are moved, not re-typed: a scalar keeps its quoting and a
sequence its flow style. Every move is recorded (source path -> target path) so callers can map
source lines and template directives to the new object. What cannot be converted becomes a
:class:`Note` naming the field; nothing is dropped without one.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq

from ... import knowledge
from ...sources.templates import TOKEN_RE

FACTS = knowledge.load("v1beta1")
# Provisioner -> NodePool, AWSNodeTemplate -> EC2NodeClass (the hop's kind table)
TARGET_KIND = {src: k["to"]["kind"] for src, k in FACTS["kinds"].items() if src != "Machine"}


@dataclass
class Note:
    code: str
    severity: str
    message: str
    manual_step: str = ""
    field: tuple = ()           # source path the note is about (for the line number)


@dataclass
class Converted:
    obj: CommentedMap | None
    kind: str
    name: Any
    moves: list[tuple[tuple, tuple, bool]] = field(default_factory=list)   # (src, dst, verbatim)
    notes: list[Note] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.obj is not None

    def map_path(self, src: tuple) -> tuple | None:
        """Where a source path ended up in the new object (longest recorded prefix)."""
        best = None
        for s, d, _ in self.moves:
            if src[: len(s)] == s and (best is None or len(s) > len(best[0])):
                best = (s, d)
        if best is None:
            return None
        return best[1] + src[len(best[0]):]

    def is_verbatim(self, src: tuple) -> bool:
        best = None
        for s, _, verbatim in self.moves:
            if src[: len(s)] == s and (best is None or len(s) > len(best[0])):
                best = (s, verbatim)
        return bool(best and best[1])


def _path(dotted: str) -> tuple:
    return tuple(dotted.split("."))


def _get(obj: Any, path: tuple) -> Any:
    for p in path:
        if not isinstance(obj, dict) or p not in obj:
            return None
        obj = obj[p]
    return obj


def _has(obj: Any, path: tuple) -> bool:
    for p in path:
        if not isinstance(obj, dict) or p not in obj:
            return False
        obj = obj[p]
    return True


def _set(obj: CommentedMap, path: tuple, value: Any) -> None:
    for p in path[:-1]:
        if p not in obj or not isinstance(obj[p], dict):
            obj[p] = CommentedMap()
        obj = obj[p]
    obj[path[-1]] = value


def _ordered(obj: Any, order: dict, prefix: str = "") -> Any:
    """Reorder maps of a generated object by the data table's canonical order."""
    if not isinstance(obj, CommentedMap):
        return obj
    keys = order.get(prefix, [])
    out = CommentedMap()
    for k in sorted(obj.keys(), key=lambda k: (keys.index(k) if k in keys else len(keys))):
        sub = f"{prefix}.{k}" if prefix else str(k)
        out[k] = _ordered(obj[k], order, sub) if sub in order else obj[k]
    return out


def _like(src: Any, items: list) -> CommentedSeq:
    """A new sequence with the given items and the flow style of src."""
    seq = CommentedSeq(items)
    if isinstance(src, CommentedSeq) and src.fa.flow_style():
        seq.fa.set_flow_style()
    return seq


def is_token(v: Any) -> bool:
    return isinstance(v, str) and TOKEN_RE.fullmatch(v) is not None


def seconds_to_duration(v: Any) -> str | None:
    """Alpha TTL seconds -> Go-style duration accepted by v1beta1 (`^(([0-9]+(s|m|h))+)|(Never)$`).

    A Terraform interpolation stays an interpolation with an `s` suffix (`${var.ttl}s`), which is a
    valid duration whatever number it renders to.
    """
    if isinstance(v, str) and TOKEN_RE.fullmatch(v.strip()):
        return f"{v.strip()}s"
    try:
        n = int(str(v).strip())
    except (TypeError, ValueError):
        return None
    if n < 0:
        return None
    h, rem = divmod(n, 3600)
    m, s = divmod(rem, 60)
    out = (f"{h}h" if h else "") + (f"{m}m" if m else "") + (f"{s}s" if s or n == 0 else "")
    return out


def _metadata(src: Any, notes: list[Note], name: Any = None) -> CommentedMap:
    meta = src.get("metadata") or CommentedMap()
    out = CommentedMap()
    keep = FACTS["metadata"]["keep"]
    for k in keep:
        if k == "name":
            out["name"] = name if name is not None else meta.get("name")
        elif k in meta:
            v = meta[k]
            if k == "annotations" and isinstance(v, dict):
                stripped = {a for a in FACTS["metadata"]["strip_annotations"] if a in v}
                if stripped:
                    v = CommentedMap((a, x) for a, x in v.items() if a not in stripped)
                    notes.append(Note("MIG-META-001", "info",
                                      f"annotation(s) {', '.join(sorted(stripped))} from `kubectl get` output not copied",
                                      field=("metadata", "annotations")))
                if not v:
                    continue
            out[k] = v
    runtime = [k for k in meta if k in FACTS["metadata"]["runtime"]]
    if runtime:
        notes.append(Note("MIG-META-002", "info",
                          f"runtime metadata ({', '.join(runtime)}) is not part of a manifest and is not copied",
                          field=("metadata",)))
    other = [k for k in meta if k not in keep and k not in FACTS["metadata"]["runtime"]]
    for k in other:
        notes.append(Note("MIG-META-003", "warning", f"metadata.{k} is not carried to the new object",
                          f"add metadata.{k} to the new object by hand if it is still needed", ("metadata", k)))
    return out


# --------------------------------------------------------------------------------------------
# Provisioner -> NodePool
# --------------------------------------------------------------------------------------------
def missing_alpha_defaults(requirements: Any) -> list[dict]:
    keys = {r.get("key") for r in (requirements or []) if isinstance(r, dict)}
    out = []
    for rule in FACTS["nodepool"]["alpha_defaults"]:
        if not any(k in keys for k in rule["when_missing"]):
            out.extend(rule["add"])
    return out


def convert_provisioner(src: Any, keep_alpha_defaults: bool = False) -> tuple[Converted, Converted | None]:
    """Return (NodePool, EC2NodeClass from an inline `spec.provider` or None)."""
    facts = FACTS["nodepool"]
    target = FACTS["kinds"]["Provisioner"]["to"]
    spec = src.get("spec") or CommentedMap()
    name = (src.get("metadata") or {}).get("name")
    res = Converted(obj=None, kind="NodePool", name=name)
    notes = res.notes
    out = CommentedMap()
    out["apiVersion"] = target["apiVersion"]
    out["kind"] = target["kind"]
    out["metadata"] = _metadata(src, notes)
    res.moves.append((("metadata",), ("metadata",), True))
    new_spec = CommentedMap()
    out["spec"] = new_spec

    for mv in facts["moves"]:
        s, d = _path(mv["from"]), _path(mv["to"])
        if not _has(src, s):
            continue
        v = original = _get(src, s)
        verbatim = True
        if s == ("spec", "requirements"):
            v = _requirements(v, notes)
            verbatim = v is original
        elif s == ("spec", "taints"):
            v = _taints(v, notes)
            verbatim = v is original
            if v is None:
                continue
        elif s == ("spec", "kubeletConfiguration"):
            v = _kubelet(v, notes)
            verbatim = v is original
        elif s == ("spec", "providerRef"):
            ref = CommentedMap()
            ref.update(facts["nodeClassRef"])
            ref["name"] = v.get("name") if isinstance(v, dict) else v
            other = [k for k in (v or {}) if k not in ("name", "kind", "apiVersion")] if isinstance(v, dict) else []
            for k in other:
                notes.append(Note("MIG-NP-009", "warning", f"spec.providerRef.{k} has no v1beta1 equivalent and is not copied",
                                  field=("spec", "providerRef", k)))
            v, verbatim = ref, False
        _set(out, d, v)
        res.moves.append((s, d, verbatim))

    limits = spec.get("limits")
    if isinstance(limits, dict):
        for k in limits:
            if k != "resources":
                notes.append(Note("MIG-NP-010", "warning", f"spec.limits.{k} has no v1beta1 equivalent and is not copied",
                                  "review the NodePool's spec.limits by hand", ("spec", "limits", k)))

    nodeclass = None
    if "provider" in spec:
        nodeclass = convert_nodeclass(CommentedMap([("metadata", CommentedMap([("name", name)])),
                                                    ("spec", spec["provider"])]), inline=True)
        for i, (s, d, vb) in enumerate(nodeclass.moves):
            if s[:1] == ("spec",):
                nodeclass.moves[i] = (("spec", "provider") + s[1:], d, vb)
        for n in nodeclass.notes:
            if n.field[:1] == ("spec",):
                n.field = ("spec", "provider") + n.field[1:]
        ref = CommentedMap()
        ref.update(facts["nodeClassRef"])
        ref["name"] = name
        _set(out, ("spec", "template", "spec", "nodeClassRef"), ref)
        notes.append(Note("MIG-NP-011", "info",
                          f"inline spec.provider becomes EC2NodeClass {name!s} (named after the Provisioner)",
                          field=("spec", "provider")))
        if "providerRef" in spec:
            notes.append(Note("MIG-NP-012", "error", "both spec.provider and spec.providerRef are set",
                              "keep only one of them before converting", ("spec", "provider")))
            return res, None
    elif "providerRef" not in spec:
        notes.append(Note("MIG-NP-013", "error",
                          "Provisioner has neither spec.providerRef nor spec.provider: a NodePool needs nodeClassRef",
                          "add spec.providerRef naming its AWSNodeTemplate, then re-run", ("spec",)))
        return res, None

    # requirements are required in v1beta1
    reqs = _get(out, ("spec", "template", "spec", "requirements"))
    missing = missing_alpha_defaults(reqs)
    templated = any(isinstance(r, dict) and TOKEN_RE.search(str(r.get("key"))) for r in (reqs or [])) \
        or (reqs is not None and not isinstance(reqs, list))
    if missing and templated:
        notes.append(Note("MIG-NP-005", "info",
                          "requirements are rendered by Terraform; the alpha webhook defaulted kubernetes.io/os, "
                          "kubernetes.io/arch, karpenter.sh/capacity-type (on-demand) and instance category/generation "
                          "when missing, v1beta1 does not", "make sure the rendered requirements set them if needed",
                          ("spec", "requirements")))
    elif missing:
        described = "; ".join(f"{r['key']} {r['operator']} {list(r['values'])}" for r in missing)
        if keep_alpha_defaults:
            seq = reqs if isinstance(reqs, list) else CommentedSeq()
            seq = _like(reqs, list(seq) + [CommentedMap(r) for r in missing])
            _set(out, ("spec", "template", "spec", "requirements"), seq)
            notes.append(Note("MIG-NP-005", "info",
                              f"added the requirements the alpha webhook defaulted (--keep-alpha-defaults): {described}",
                              field=("spec", "requirements")))
        else:
            notes.append(Note("MIG-NP-005", "warning",
                              f"the alpha webhook defaulted {described}; v1beta1 does not, so the NodePool may launch "
                              "other architectures, capacity types (spot) or instance families than the Provisioner did",
                              "add these requirements to the NodePool if the old behaviour is wanted "
                              "(or re-run with --keep-alpha-defaults)", ("spec", "requirements")))
    if not _has(out, ("spec", "template", "spec", "requirements")):
        _set(out, ("spec", "template", "spec", "requirements"), CommentedSeq())

    _disruption(spec, out, res)

    for k in spec:
        known = {m["from"].split(".")[1] for m in facts["moves"]} | set(facts["handled"])
        if k not in known:
            notes.append(Note("MIG-NP-014", "warning", f"spec.{k} is not a v1alpha5 field migrator knows; it is not copied",
                              f"check whether spec.{k} needs a v1beta1 equivalent", ("spec", k)))
    if "status" in src:
        notes.append(Note("MIG-META-004", "info", "status is not copied (the controller writes it)", field=("status",)))
    res.obj = _ordered(out, facts["order"])
    return res, nodeclass


def _requirements(reqs: Any, notes: list[Note]) -> Any:
    dropped = FACTS["nodepool"]["requirement_keys_dropped"]
    if not isinstance(reqs, list):
        return reqs
    kept = []
    for i, r in enumerate(reqs):
        key = r.get("key") if isinstance(r, dict) else None
        if key in dropped:
            notes.append(Note("MIG-NP-001", "warning", f"requirement {key} dropped: {dropped[key]}",
                              "", ("spec", "requirements", i)))
            continue
        kept.append(r)
    return _like(reqs, kept) if len(kept) != len(reqs) else reqs


def _taints(taints: Any, notes: list[Note]) -> Any:
    legacy = FACTS["nodepool"]["legacy_taint_key"]
    if not isinstance(taints, list):
        return taints
    kept = [t for t in taints if not (isinstance(t, dict) and t.get("key") == legacy)]
    if len(kept) != len(taints):
        notes.append(Note("MIG-NP-002", "info",
                          f"taint {legacy} marks the old Provisioner for migration and is not copied to the NodePool",
                          field=("spec", "taints")))
        if not kept:
            return None
        return _like(taints, kept)
    return taints


def _kubelet(kc: Any, notes: list[Note]) -> Any:
    dropped = FACTS["nodepool"]["kubelet_dropped"]
    if not isinstance(kc, dict) or not any(k in kc for k in dropped):
        return kc
    out = CommentedMap()
    for k, v in kc.items():
        if k in dropped:
            notes.append(Note("MIG-NP-003", "warning", f"kubeletConfiguration.{k}={v} dropped: {dropped[k]}",
                              "", ("spec", "kubeletConfiguration", k)))
            continue
        out[k] = v
    return out


def _disruption(spec: Any, out: CommentedMap, res: Converted) -> None:
    d = FACTS["nodepool"]["disruption"]
    notes = res.notes
    disruption = CommentedMap()
    consolidation = spec.get("consolidation")
    enabled = consolidation.get("enabled") if isinstance(consolidation, dict) else None
    empty_ttl = spec.get("ttlSecondsAfterEmpty")
    if is_token(enabled):
        notes.append(Note("MIG-NP-006", "error",
                          "spec.consolidation.enabled is a Terraform expression: the consolidation policy depends on "
                          "its value at apply time and cannot be chosen statically",
                          "set disruption.consolidationPolicy by hand: WhenUnderutilized when consolidation is enabled, "
                          "otherwise WhenEmpty with consolidateAfter (ttlSecondsAfterEmpty in seconds, or Never)",
                          ("spec", "consolidation", "enabled")))
        return
    if enabled is True or type(enabled).__name__ == "ScalarBoolean" and bool(enabled):
        disruption["consolidationPolicy"] = d["when_underutilized"]
        res.moves.append((("spec", "consolidation"), ("spec", "disruption", "consolidationPolicy"), False))
        if empty_ttl is not None:
            notes.append(Note("MIG-NP-007", "warning",
                              "both consolidation.enabled and ttlSecondsAfterEmpty are set; consolidation wins "
                              "(alpha validation rejected the combination)", "", ("spec", "ttlSecondsAfterEmpty")))
    elif empty_ttl is not None:
        dur = seconds_to_duration(empty_ttl)
        if dur is None:
            notes.append(Note("MIG-NP-008", "error", f"ttlSecondsAfterEmpty={empty_ttl!r} is not a number of seconds",
                              "set disruption.consolidateAfter by hand", ("spec", "ttlSecondsAfterEmpty")))
            return
        disruption["consolidationPolicy"] = d["when_empty"]
        disruption["consolidateAfter"] = dur
        res.moves.append((("spec", "ttlSecondsAfterEmpty"), ("spec", "disruption", "consolidateAfter"), False))
    else:
        disruption["consolidationPolicy"] = d["when_empty"]
        disruption["consolidateAfter"] = d["never"]
        notes.append(Note("MIG-NP-004", "info",
                          "no consolidation and no ttlSecondsAfterEmpty: the alpha Provisioner never removed nodes, so "
                          "the NodePool gets consolidationPolicy WhenEmpty + consolidateAfter Never (the v1beta1 default "
                          "WhenUnderutilized would start consolidating)", field=("spec",)))
    ttl = spec.get("ttlSecondsUntilExpired")
    if ttl is not None:
        dur = seconds_to_duration(ttl)
        if dur is None:
            notes.append(Note("MIG-NP-008", "error", f"ttlSecondsUntilExpired={ttl!r} is not a number of seconds",
                              "set disruption.expireAfter by hand", ("spec", "ttlSecondsUntilExpired")))
            return
        disruption["expireAfter"] = dur
        res.moves.append((("spec", "ttlSecondsUntilExpired"), ("spec", "disruption", "expireAfter"), False))
    else:
        disruption["expireAfter"] = d["never"]
    out["spec"]["disruption"] = disruption


# --------------------------------------------------------------------------------------------
# AWSNodeTemplate / inline provider -> EC2NodeClass
# --------------------------------------------------------------------------------------------
def needs_role(src: Any) -> bool:
    spec = src.get("spec") or {}
    return "instanceProfile" not in spec


def _split(v: Any) -> list:
    """Comma list -> values (KB B.2); a single value keeps its original scalar (quoting)."""
    s = str(v)
    if "," not in s:
        return [v]
    return [p.strip() for p in s.split(",")]


def selector_terms(selector: Any, kind: str, path: tuple, notes: list[Note]) -> list[CommentedMap] | None:
    keys = FACTS["ec2nodeclass"]["selector_keys"]
    ids: list = []
    names: list = []
    owners: list = []
    tag_keys: list[tuple[Any, list]] = []
    for k in sorted(selector.keys(), key=str):
        v = selector[k]
        if v is None:
            v = ""
        if k in keys["ids"]:
            ids = _split(v)
        elif kind == "ami" and k in keys["names"]:
            names = _split(v)
        elif kind == "ami" and k in keys["owners"]:
            owners = _split(v)
        else:
            vals = _split(v)
            for x in vals:
                if str(x) == "":
                    notes.append(Note("MIG-NC-004", "error", f"selector tag {k} has an empty value, which v1beta1 rejects",
                                      "use \"*\" to select on the tag key alone, or give the value", path + (k,)))
                    return None
            tag_keys.append((k, vals))
    tag_sets: list[dict] = [{}]
    if tag_keys:
        # cartesian product, earlier-sorted keys vary fastest (KB B.2)
        combos = itertools.product(*[vals for _, vals in reversed(tag_keys)])
        tag_sets = []
        for combo in combos:
            tags = CommentedMap()
            for (k, _), val in zip(tag_keys, reversed(combo)):
                tags[k] = val
            tag_sets.append(tags)
    if ids and (tag_keys or names or owners):
        notes.append(Note("MIG-NC-005", "error",
                          f"{path[-1]} mixes aws-ids with other keys; a v1beta1 term with an id cannot have other fields",
                          "split the selector: either ids only, or tags/names only", path))
        return None
    if kind == "ami" and owners and not (ids or names or tag_keys):
        notes.append(Note("MIG-NC-006", "error",
                          "amiSelector selects by owner only; v1beta1 AMI terms need a name, tags or an id with the owner",
                          "add aws::name (or tags) to narrow the AMIs, or list the AMI ids", path))
        return None
    terms: list[CommentedMap] = []
    for owner in owners or [None]:
        for id_ in ids or [None]:
            for name in names or [None]:
                for tags in tag_sets:
                    t = CommentedMap()
                    if tags:
                        t["tags"] = tags
                    if id_ is not None:
                        t["id"] = id_
                    if name is not None:
                        t["name"] = name
                    if owner is not None:
                        t["owner"] = owner
                    if t:
                        terms.append(t)
    return terms


def convert_nodeclass(src: Any, inline: bool = False, role: Any = None, instance_profile: Any = None) -> Converted:
    """AWSNodeTemplate (or an inline provider wrapped as one) -> EC2NodeClass.

    `role` is the resolved node role (literal or placeholder); it is required when the template has no
    instanceProfile. When the role is unknown but the instance profile the old nodes used is known (the chart's
    defaultInstanceProfile), `instance_profile` is written instead: new nodes get exactly the old identity.
    Without either the result carries no object and the caller reports why.
    """
    facts = FACTS["ec2nodeclass"]
    target = FACTS["kinds"]["AWSNodeTemplate"]["to"]
    spec = src.get("spec") or CommentedMap()
    name = (src.get("metadata") or {}).get("name")
    res = Converted(obj=None, kind="EC2NodeClass", name=name)
    notes = res.notes
    failed = False
    for key, why in facts["unconvertible"].items():
        if key in spec:
            notes.append(Note("MIG-NC-001", "error", f"spec.{key} cannot be converted: {why}",
                              f"remove spec.{key} after moving its settings into the EC2NodeClass", ("spec", key)))
            failed = True
    out = CommentedMap()
    out["apiVersion"] = target["apiVersion"]
    out["kind"] = target["kind"]
    out["metadata"] = _metadata(src, notes) if not inline else CommentedMap([("name", name)])
    res.moves.append((("metadata",), ("metadata",), True))
    new_spec = CommentedMap()
    out["spec"] = new_spec
    if "amiFamily" not in spec:
        new_spec["amiFamily"] = facts["default_ami_family"]
        notes.append(Note("MIG-NC-002", "info",
                          f"amiFamily was not set (alpha default {facts['default_ami_family']}); it is required in v1beta1 "
                          "and is written explicitly", field=("spec",)))
    for mv in facts["moves"]:
        s, d = _path(mv["from"]), _path(mv["to"])
        if _has(src, s):
            v = original = _get(src, s)
            verbatim = True
            if s == ("spec", "tags"):
                v = _tags(v, notes)
                verbatim = v is original
            _set(out, d, v)
            res.moves.append((s, d, verbatim))
    if needs_role(src):
        if role is not None:
            new_spec["role"] = role
        elif instance_profile is not None:
            new_spec["instanceProfile"] = instance_profile
    for sel in facts["selectors"]:
        s = ("spec", sel["from"])
        v = _get(src, s)
        if v is None or (isinstance(v, dict) and not v):
            if sel["kind"] != "ami":
                notes.append(Note("MIG-NC-003", "error",
                                  f"spec.{sel['from']} is missing or empty; v1beta1 requires {sel['to']}",
                                  f"add spec.{sel['from']} (or write {sel['to']} by hand)", ("spec",)))
                failed = True
            continue
        if not isinstance(v, dict):
            notes.append(Note("MIG-NC-007", "error", f"spec.{sel['from']} is not a map and cannot be converted",
                              f"write {sel['to']} by hand", s))
            failed = True
            continue
        terms = selector_terms(v, sel["kind"], s, notes)
        if terms is None:
            failed = True
            continue
        new_spec[sel["to"]] = CommentedSeq(terms)
        res.moves.append((s, ("spec", sel["to"]), False))
        if any("," in str(x) for x in v.values()):
            notes.append(Note("MIG-NC-008", "info",
                              f"comma-separated values in spec.{sel['from']} expanded into {len(terms)} terms "
                              "(v0.33+ no longer splits them)", field=s))
    for k in spec:
        known = {m["from"].split(".")[1] for m in facts["moves"]} | set(facts["handled"])
        if k not in known:
            notes.append(Note("MIG-NC-009", "warning", f"spec.{k} is not a v1alpha1 field migrator knows; it is not copied",
                              f"check whether spec.{k} needs an EC2NodeClass equivalent", ("spec", k)))
    if "status" in src:
        notes.append(Note("MIG-META-004", "info", "status is not copied (the controller writes it)", field=("status",)))
    if failed or (needs_role(src) and role is None and instance_profile is None):
        return res
    res.obj = _ordered(out, {"spec": facts["order"]["spec"]})
    return res


def _tags(tags: Any, notes: list[Note]) -> Any:
    rules = FACTS["ec2nodeclass"]["restricted_tag_keys"]
    if not isinstance(tags, dict):
        return tags
    bad = [k for k in tags if str(k) in rules["exact"] or any(str(k).startswith(p) for p in rules["prefix"])]
    if not bad:
        return tags
    for k in bad:
        notes.append(Note("MIG-NC-010", "warning",
                          f"tag {k} is restricted in v1beta1 (Karpenter sets it itself) and is not copied", "",
                          ("spec", "tags", k)))
    return CommentedMap((k, v) for k, v in tags.items() if k not in bad)
