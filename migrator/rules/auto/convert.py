"""EC2NodeClass -> EKS Auto Mode NodeClass and NodePool -> a new NodePool on it (knowledge/auto_mode.yaml).

Pure functions over parsed objects. Every field Auto Mode cannot carry is a note (a finding with its manual step);
an object that cannot move at all (Windows) converts to nothing, with the reason: it stays on Karpenter.
"""
from __future__ import annotations

import copy
import re
from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq

from ... import knowledge
from ...sources.templates import TOKEN_RE
from ..v1beta1.convert import Converted, Note

FACTS = knowledge.load("auto_mode")
NC = FACTS["node_class"]
NP = FACTS["node_pool"]
NAMING = FACTS["naming"]


def nodeclass_name(old: str) -> str:
    """A NodeClass keeps its EC2NodeClass's name, unless the name is reserved; a name a template gives (a Helm chart's
    `{{ .Values.name }}`, each release its own) may be any of them: it gets the suffix too."""
    templated = "{{" in old or TOKEN_RE.search(old) is not None
    return old + NAMING["nodeclass_suffix"] if old in NAMING["nodeclass_reserved"] or templated else old


def nodepool_name(old: str) -> str:
    return old + NAMING["nodepool_suffix"]


def karpenter_labels_in(text: str) -> list[str]:
    """Karpenter's own label keys (knowledge/auto_mode.yaml `node_pool.labels`, each with its Auto Mode key) that a
    text names."""
    return [k for k in NP["labels"] if k in text]


_INTERPOLATED = re.compile(r'^"\$\{([^{}"]+)\}([^"${}]*)"$')


def name_key(m, value) -> str:
    """An object's name (or the class a pool names) as the names of the pools it moves from read: a template's name
    unmasked, and an HCL twin written as the template `"${each.key}-auto"` (from a pool named `each.key`) read as
    `each.key-auto`, what nodepool_name gives for that name. The nodepools, workloads and cutover phases compare
    names this way."""
    key = m.masked.unmask(str(value)) if value is not None else ""
    got = _INTERPOLATED.match(key.strip()) if getattr(m, "hcl", False) else None
    return got.group(1).strip() + got.group(2) if got else key


def computed_classes(ctx) -> set[str]:
    """The name keys of the root's EC2NodeClasses an expression builds, which migrator leaves alone (MIG-SRC-008)."""
    from ...inventory.objects import left_alone
    return {name_key(m, m.name) for m, _ in left_alone(ctx.repo)
            if m.kind == "EC2NodeClass" and ctx.owns(m.tf_path or m.path)}


def unwritable(pool, computed: set[str]) -> str | None:
    """Why a NodePool's twin cannot be written as it should be: its EC2NodeClass is one an expression builds
    (`computed`: no NodeClass twin would exist for it), or its requirements are an expression that names Karpenter's
    own labels (which Auto Mode's nodes do not carry). Such a pool stays on Karpenter (MIG-AUTO-065)."""
    tspec = ((pool.obj.get("spec") or {}).get("template") or {}).get("spec") or {}
    ref = tspec.get("nodeClassRef") or {}
    cls = ref.get("name") if isinstance(ref, dict) else None
    if cls is not None and name_key(pool, cls) in computed:
        return f"its EC2NodeClass {pool.masked.unmask(str(cls))} is built by an expression migrator cannot convert"
    reqs = tspec.get("requirements")
    named = karpenter_labels_in(pool.masked.unmask(reqs)) if pool.masked.is_token(reqs) else []
    if named:
        return (f"its requirements are built by an expression naming Karpenter's labels ({', '.join(named)}), "
                "which migrator cannot rewrite to Auto Mode's keys")
    return None


def pool_key(m) -> str:
    """A NodePool's name key (name_key), tied to its Terraform resource where an expression names it: two
    `for_each` resources both named `each.key` make different pools, and a twin resource is its pool's resource with
    the twin suffix (`kubernetes_manifest.pool` -> `pool_auto_mode`)."""
    key = name_key(m, m.name)
    block = getattr(m, "block", None)
    if not getattr(m, "hcl", False) or block is None or len(block.labels) < 2 or not m.masked.is_token(m.name):
        return key
    label = block.labels[1].removesuffix(NAMING["tf_label_suffix"])
    return f"{block.labels[0]}.{label}/{key}"


def _hours(duration: Any) -> float | None:
    """A Go duration ("720h", "30d" is not Go) in hours; None when it is not one."""
    if not isinstance(duration, str):
        return None
    parts = re.findall(r"(\d+(?:\.\d+)?)(h|m|s)", duration)
    if not parts or "".join(a + b for a, b in parts) != duration:
        return None
    return sum(float(a) * {"h": 1, "m": 1 / 60, "s": 1 / 3600}[u] for a, u in parts)


WINDOWS_MANUAL = "keep these nodes on Karpenter (or a managed node group), or rebuild the pool for Linux by hand"


def blocked_class(obj: Any) -> str | None:
    """Why an EC2NodeClass cannot move to Auto Mode at all (None: it can)."""
    got = blocked_why(obj)
    return got[0] if got else None


def blocked_why(obj: Any) -> tuple[str, str] | None:
    """(why an EC2NodeClass stays on Karpenter, what a team does to move it anyway); None: it can move."""
    spec = obj.get("spec") if isinstance(obj, dict) else None
    if not isinstance(spec, dict):
        return "it has no spec", WINDOWS_MANUAL
    fam = spec.get("amiFamily")
    if fam in NC["blocking_ami_families"]:
        return f"its amiFamily {fam} runs Windows nodes, and Auto Mode runs Linux only", WINDOWS_MANUAL
    terms = spec.get("amiSelectorTerms") or []
    for t in terms:
        alias = t.get("alias") if isinstance(t, dict) else None
        if isinstance(alias, str) and alias.lower().startswith("windows"):
            return f"its AMI alias {alias} runs Windows nodes, and Auto Mode runs Linux only", WINDOWS_MANUAL
    rows = NC["blocking_fields"]
    if spec.get("userData"):
        return tuple(rows["userData"])
    kubelet = spec.get("kubelet")
    if isinstance(kubelet, dict) and kubelet:
        why, manual = rows["kubelet"]
        return why.format(keys=", ".join(str(k) for k in kubelet)), manual
    if any(not (isinstance(t, dict) and set(t) == {"alias"}) for t in terms):
        return tuple(rows["amiSelectorTerms"])
    if isinstance(fam, str) and fam in rows["amiFamily"]:
        return tuple(rows["amiFamily"][fam])
    return None


def _stays(conv: Converted, what: str, why: str, stays: str, exists: str, manual: str) -> None:
    """An object Auto Mode cannot run: it stays on Karpenter, and so does the controller (MIG-AUTO-020)."""
    conv.notes.append(Note("MIG-AUTO-020", "warning", f"{what} cannot move to EKS Auto Mode: {why}; {stays} on "
                           f"Karpenter, whose controller stays while {exists}", manual))


def convert_nodeclass(obj: Any, name: str, role: Any) -> Converted:
    """The NodeClass for an EC2NodeClass, on the cluster's Auto Mode node role `role` (a literal or a token)."""
    old = str(obj["metadata"]["name"])
    conv = Converted(None, "NodeClass", name)
    blocked = blocked_why(obj)
    if blocked:
        why, manual = blocked
        _stays(conv, f"EC2NodeClass {old}", why, "it and its NodePools stay", "they exist", manual)
        return conv
    spec = obj["spec"]
    new_spec = CommentedMap()
    if role is not None:
        new_spec["role"] = role
    for key in spec:
        if key in NC["same"]:
            value = copy.deepcopy(spec[key])
            if key == "tags" and isinstance(value, dict):
                value = _allowed_tags(value, old, conv)
                if not value:
                    continue
            new_spec[key] = value
            conv.moves.append((("spec", key), ("spec", key), True))
        elif key == "capacityReservationSelectorTerms":
            terms = CommentedSeq()
            for t in spec[key] or []:
                t2 = CommentedMap((NC["reservation_renames"].get(k, k), v) for k, v in (t or {}).items())
                dropped = [k for k in t2 if k not in ("id", "tags", "owner")]
                for k in dropped:
                    del t2[k]
                    conv.notes.append(Note("MIG-AUTO-021", "warning",
                                           f"EC2NodeClass {old}: capacityReservationSelectorTerms {k} has no Auto Mode "
                                           "equivalent (unconfirmed); the term is kept without it",
                                           "check the reservations the NodeClass selects", (("spec", key))))
                terms.append(t2)
            new_spec[key] = terms
            conv.moves.append((("spec", key), ("spec", key), False))
            conv.notes.append(Note("MIG-AUTO-022", "info",
                                   f"EC2NodeClass {old}: capacity reservations carried (ownerID -> owner); selecting "
                                   "reservations on any NodeClass stops Auto Mode using open reservations cluster-wide",
                                   "", ("spec", key)))
        elif key == "associatePublicIPAddress":
            new_spec.setdefault("advancedNetworking", CommentedMap())["associatePublicIPAddress"] = spec[key]
            conv.moves.append((("spec", key), ("spec", "advancedNetworking", "associatePublicIPAddress"), True))
            msg, _ = NC["dropped"][key]
            conv.notes.append(Note("MIG-AUTO-023", "info", f"EC2NodeClass {old}: associatePublicIPAddress {msg}", "",
                                   ("spec", key)))
        elif key == "blockDeviceMappings":
            eph = _ephemeral(spec[key], old, conv)
            if eph:
                new_spec["ephemeralStorage"] = eph
        elif key in NC["dropped"]:
            msg, manual = NC["dropped"][key]
            if key == "role" and role is None:
                continue
            aliases = key == "amiSelectorTerms" and all(isinstance(t, dict) and set(t) == {"alias"}
                                                       for t in spec[key] or [])
            if aliases:                 # AWS's own image by alias (al2023@latest): nothing custom is lost
                msg, manual = NC["dropped"]["amiFamily"]
            standard = key == "amiFamily" and spec[key] in NC["standard_ami_families"]
            sev = "info" if key in ("instanceStorePolicy", "instanceProfile", "role") or aliases or standard \
                else "warning"
            conv.notes.append(Note("MIG-AUTO-024", sev, f"EC2NodeClass {old}: {key} is not carried: {msg}", manual,
                                   ("spec", key)))
        else:
            conv.notes.append(Note("MIG-AUTO-024", "warning",
                                   f"EC2NodeClass {old}: {key} has no known EKS Auto Mode equivalent; not carried",
                                   "check whether the NodeClass needs an equivalent by hand", ("spec", key)))
    out = CommentedMap([("apiVersion", NC["apiVersion"]), ("kind", NC["kind"])])
    out["metadata"] = _metadata(obj, name)
    out["spec"] = _ordered(new_spec)
    conv.obj = out
    conv.moves.insert(0, (("metadata",), ("metadata",), False))
    return conv


def _metadata(obj: Any, name: str) -> CommentedMap:
    """The twin's metadata: its new name, the source's labels and annotations."""
    meta = CommentedMap([("name", name)])
    for k in ("labels", "annotations"):
        v = (obj.get("metadata") or {}).get(k)
        if isinstance(v, dict) and v:
            meta[k] = copy.deepcopy(v)
    return meta


ORDER = ["role", "instanceProfile", "subnetSelectorTerms", "securityGroupSelectorTerms",
         "capacityReservationSelectorTerms", "ephemeralStorage", "advancedNetworking", "tags"]


def _ordered(spec: CommentedMap) -> CommentedMap:
    return CommentedMap(sorted(spec.items(), key=lambda kv: ORDER.index(kv[0]) if kv[0] in ORDER else len(ORDER)))


def _allowed_tags(tags: dict, old: str, conv: Converted) -> CommentedMap:
    out = CommentedMap()
    for k, v in tags.items():
        if any(str(k).startswith(r) if r.endswith("/") else str(k) == r for r in NC["restricted_tags"]):
            conv.notes.append(Note("MIG-AUTO-025", "warning",
                                   f"EC2NodeClass {old}: tag {k} is reserved in EKS Auto Mode and is not carried",
                                   "tag the nodes another way if something selects them by it", ("spec", "tags", k)))
            continue
        out[k] = v
    if out:
        conv.notes.append(Note("MIG-AUTO-026", "info",
                               f"EC2NodeClass {old}: tags carried; Auto Mode needs the cluster role's custom-tag "
                               "permissions to set them (terraform-aws-modules/eks: enable_auto_mode_custom_tags, on "
                               "by default)", "", ("spec", "tags")))
    return out


def _ephemeral(mappings: Any, old: str, conv: Converted) -> CommentedMap | None:
    """The root volume's size, IOPS, throughput and KMS key as ephemeralStorage; any other volume or setting said."""
    if not isinstance(mappings, list) or not mappings:
        return None
    root = next((m for m in mappings if isinstance(m, dict) and m.get("rootVolume")), None) or \
        (mappings[0] if len(mappings) == 1 else None)
    where = ("spec", "blockDeviceMappings")
    if root is None:
        conv.notes.append(Note("MIG-AUTO-027", "warning",
                               f"EC2NodeClass {old}: {len(mappings)} block device mappings and none marked rootVolume: "
                               "Auto Mode has one ephemeral volume; none is carried",
                               "set spec.ephemeralStorage on the NodeClass by hand (size, iops, throughput)", where))
        return None
    if len(mappings) > 1:
        conv.notes.append(Note("MIG-AUTO-027", "warning",
                               f"EC2NodeClass {old}: {len(mappings) - 1} block device mapping(s) besides the root "
                               "volume are not carried: Auto Mode nodes have one ephemeral volume",
                               "move data that needed the extra volumes to the ephemeral volume or to persistent "
                               "volumes", where))
    ebs = root.get("ebs") or {}
    out = CommentedMap()
    for src, dst in NC["ephemeral_storage"].items():
        if src in ebs:
            out[dst] = copy.deepcopy(ebs[src])
            lo_hi = NC["ephemeral_bounds"].get(dst)
            if lo_hi and isinstance(out[dst], int) and not lo_hi[0] <= out[dst] <= lo_hi[1]:
                clamped = min(max(out[dst], lo_hi[0]), lo_hi[1])
                conv.notes.append(Note("MIG-AUTO-028", "warning",
                                       f"EC2NodeClass {old}: {src} {out[dst]} is outside Auto Mode's {lo_hi[0]}-"
                                       f"{lo_hi[1]}: written as {clamped}", "", where))
                out[dst] = clamped
    dropped = [f"{k}: {ebs[k]}" for k in NC["volume_fields_dropped"] if k in ebs and
               not (k == "volumeType" and ebs[k] == "gp3") and not (k in ("encrypted", "deleteOnTermination")
                                                                    and ebs[k] is True)]
    if dropped:
        conv.notes.append(Note("MIG-AUTO-027", "warning",
                               f"EC2NodeClass {old}: root volume settings not carried ({', '.join(dropped)}): Auto "
                               "Mode's ephemeral volume is an encrypted gp3 volume deleted with the node",
                               "check nothing depends on them", where))
    if out:
        conv.moves.append((where, ("spec", "ephemeralStorage"), False))
    return out or None


def blocked_pool(obj: Any) -> str | None:
    reqs = ((((obj.get("spec") or {}).get("template") or {}).get("spec") or {}).get("requirements") or [])
    for r in reqs:
        if isinstance(r, dict) and r.get("key") == NP["os_key"] and r.get("operator") == "In" and \
                any(str(v) in NP["blocking_os"] for v in r.get("values") or []):
            return f"it asks for {NP['os_key']} In {list(r.get('values'))}, and Auto Mode runs Linux only"
    return None


def _drop_pruned(out: Any, old: str, conv: Converted) -> None:
    """Fields of the NodePool as written that no release's CRD defines (a taint's `operator`, v1beta1's `kubelet`, a
    key misspelled; the newest release's CRD is the judge, so a field a later release added stays): the API server
    drops them when it stores the object, so the cluster's NodePool never had them, and the twin goes without them,
    said. A key written as a template action is left to the chart."""
    from ...validate import unknown_fields
    newest = knowledge.load("minors")["newest"]         # a field a later release added (`replicas`) is kept
    for path in sorted(unknown_fields(out, newest), key=lambda p: [str(k) for k in p], reverse=True):
        if any(TOKEN_RE.search(str(k)) for k in path):
            continue
        *up, last = path
        parent = out
        for k in up:
            parent = parent[k]
        del parent[last]
        field = ".".join(f"[{k}]" if isinstance(k, int) else str(k) for k in path).replace(".[", "[")
        conv.notes.append(Note("MIG-AUTO-063", "warning",
                               f"NodePool {old}: {field} is not a field of NodePool (the API server drops it when it "
                               "stores the object, so the cluster's NodePool never had it): not carried to its twin",
                               f"if {field} was meant to do something, find the NodePool field that does it and set it "
                               "on the twin", path))


def convert_nodepool(obj: Any, name: str, class_name: str) -> Converted:
    """A new NodePool on the Auto Mode NodeClass `class_name`, under the temporary taint of the side-by-side move."""
    old = str(obj["metadata"]["name"])
    conv = Converted(None, "NodePool", name)
    why = blocked_pool(obj)
    if why:
        _stays(conv, f"NodePool {old}", why, "it stays", "it exists", "keep it on Karpenter (or a managed node group)")
        return conv
    out = copy.deepcopy(obj)
    out["metadata"] = _metadata(obj, name)
    conv.moves += [(("metadata",), ("metadata",), False), (("spec",), ("spec",), True)]
    _drop_pruned(out, old, conv)
    tspec = out["spec"]["template"]["spec"]
    tspec["nodeClassRef"] = CommentedMap([("group", knowledge.load("hops")["auto_mode_node_class_group"]),
                                          ("kind", NC["kind"]), ("name", class_name)])
    conv.moves.append((("spec", "template", "spec", "nodeClassRef"), ("spec", "template", "spec", "nodeClassRef"),
                       False))
    reqs = tspec.get("requirements")
    if isinstance(reqs, list):
        kept = CommentedSeq()
        for i, r in enumerate(reqs):
            r2 = _requirement(r, old, conv, ("spec", "template", "spec", "requirements", i))
            if r2 is not None:
                kept.append(r2)
        if not kept:
            kept.append(CommentedMap([("key", "kubernetes.io/arch"), ("operator", "Exists")]))
            conv.notes.append(Note("MIG-AUTO-031", "info",
                                   f"NodePool {name}: Auto Mode needs at least one requirement; "
                                   "kubernetes.io/arch Exists is written", ""))
        tspec["requirements"] = kept
    exp = tspec.get("expireAfter")
    hours = _hours(exp)
    limit = _hours(NP["max_expire_after"])
    if exp == "Never" or (hours is not None and hours > limit):
        tspec["expireAfter"] = NP["max_expire_after"]
        conv.notes.append(Note("MIG-AUTO-032", "warning",
                               f"NodePool {old}: expireAfter {exp} becomes {NP['max_expire_after']}: an Auto Mode node "
                               "lives at most 21 days", "make sure the workloads tolerate a node replaced every 21 "
                               "days (PodDisruptionBudgets, terminationGracePeriod)",
                               ("spec", "template", "spec", "expireAfter")))
    taint = CommentedMap((k, v) for k, v in FACTS["temporary_taint"].items())
    taints = tspec.get("taints")
    if not isinstance(taints, list):
        taints = CommentedSeq()
        tspec["taints"] = taints
        # keep the template spec's field order readable: taints after requirements
        keys = list(tspec.keys())
        if "requirements" in keys:
            ordered = CommentedMap()
            for k in keys:
                if k != "taints":
                    ordered[k] = tspec[k]
                if k == "requirements":
                    ordered["taints"] = taints
            out["spec"]["template"]["spec"] = ordered
    taints.append(taint)
    if (tspec.get("kubelet") if isinstance(tspec, dict) else None) is not None:
        msg, manual = NC["dropped"]["kubelet"]
        del out["spec"]["template"]["spec"]["kubelet"]
        conv.notes.append(Note("MIG-AUTO-024", "warning", f"NodePool {old}: kubelet is not carried: {msg}", manual,
                               ("spec", "template", "spec", "kubelet")))
    conv.obj = out
    return conv


def _requirement(r: Any, old: str, conv: Converted, where: tuple) -> Any:
    if not isinstance(r, dict):
        return r
    key = r.get("key")
    r2 = copy.deepcopy(r)
    if key in NP["labels"]:
        r2["key"] = NP["labels"][key]
    elif isinstance(key, str) and key.startswith(NP["unmapped_prefix"]):
        conv.notes.append(Note("MIG-AUTO-030", "warning",
                               f"NodePool {old}: requirement {key} has no confirmed EKS Auto Mode label; it is not "
                               "carried", "check the instance types the new NodePool may launch", where))
        return None
    if key == NP["size_key"] and r2.get("operator") == "In" and isinstance(r2.get("values"), list):
        small = [v for v in r2["values"] if v in NP["small_sizes"]]
        if small:
            for i in reversed(range(len(r2["values"]))):      # in place: the list keeps its flow or block style
                if r2["values"][i] in NP["small_sizes"]:
                    del r2["values"][i]
            conv.notes.append(Note("MIG-AUTO-033", "warning",
                                   f"NodePool {old}: instance sizes {', '.join(small)} dropped: Auto Mode launches "
                                   "medium and larger only", "", where))
            if not r2["values"]:
                return None
    return r2
