"""Node group -> NodePool and EC2NodeClass, behaviour kept (knowledge/cas.yaml; every mapping a row there)."""
from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml.comments import CommentedMap

from ... import knowledge
from ...cas import CasInventory, NodeGroup, one_cluster, scan
from ...model import Finding

FACTS = knowledge.load("cas")
GROUP_LABEL = "eks.amazonaws.com/nodegroup"


@dataclass
class Shape:
    """What one node group launches, as Karpenter reads it."""
    group: NodeGroup
    instance_types: list[str]
    capacity: str
    alias: str
    arch: str
    labels: dict
    taints: list[dict]
    disk_gib: int | None
    limits: dict | None
    notes: list[Finding] = field(default_factory=list)

    default_disk: int | None = None
    unsure: list[str] = field(default_factory=list)     # fields whose value is not known (never a controller home)
    zones: list[str] = field(default_factory=list)      # the zones its subnets lie in, where fewer than the cluster's
    selector: dict | None = None                       # eksctl instanceSelector: {"cpu": vCPUs, "memory": GiB}

    @property
    def carried(self) -> bool:
        """Whether a NodePool can say what this group launches (its instance types are known)."""
        return "instance types" not in self.unsure

    @property
    def class_key(self) -> tuple:
        return (self.alias, self.disk_gib or self.default_disk)


def k8s_name(name: str) -> str:
    """A node group's name as a Kubernetes object name that is also a label value (karpenter.sh/nodepool): lower
    case letters, digits and '-', starting and ending with a letter or digit, at most 63 characters."""
    out = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")[:63].strip("-")
    return out or "nodegroup"


def pool_names(names: list[str]) -> dict[str, str]:
    """Node group name -> the name of the NodePool that replaces it: valid (k8s_name) and unique within the root
    (a name two groups would share gets -2, -3 ... in the order the groups are read)."""
    out: dict[str, str] = {}
    used: set[str] = set()
    for n in names:
        if n in out:
            continue
        base = k8s_name(n)
        cand, i = base, 2
        while cand in used:
            suffix = f"-{i}"
            cand, i = base[:63 - len(suffix)].rstrip("-") + suffix, i + 1
        used.add(cand)
        out[n] = cand
    return out


def pool_name_notes(groups: list[NodeGroup], names: dict[str, str]) -> list[Finding]:
    """One finding per node group whose NodePool cannot carry its name as written."""
    out = []
    for g in groups:
        new = names.get(g.name)
        if new is None or new == g.name:
            continue
        why = "another group's name became the same" if k8s_name(g.name) != new else \
            "Kubernetes names allow only lower case letters, digits and '-'"
        out.append(_note(g, "MIG-CAS-035", "info", f"its NodePool is named {new} ({why})",
                         f"refer to the NodePool as {new} (karpenter.sh/nodepool: {new})"))
    return out


def _restricted_label(key: str) -> bool:
    """A label the NodePool CRD forbids in template.metadata.labels (knowledge/cas.yaml `nodepool_labels`)."""
    row = FACTS["nodepool_labels"]
    domain = key.split("/", 1)[0] if "/" in key else ""
    return key in row["keys"] or (key not in row["allowed"] and any(domain.endswith(d) for d in row["domains"]))


def _note(g: NodeGroup, code: str, severity: str, message: str, manual: str = "") -> Finding:
    return Finding(code, severity, g.path, g.line, f"node group {g.name}: {message}", manual)


def capacity_of(itype: str) -> tuple[int, int] | None:
    """(vCPUs, memory GiB) of an instance type from the cited table, None when unknown."""
    cap = FACTS["capacity"]
    if itype in cap["listed"]:
        row = cap["listed"][itype]
        return row["cpu"], row["memory_gib"]
    m = re.match(cap["pattern"], itype)
    if not m:
        return None
    size = m.group("size")
    cpu = cap["vcpus"].get(size) or 4 * int(size[:-len("xlarge")])
    return cpu, cpu * cap["memory_per_vcpu_gib"][m.group("family")]


def shape(g: NodeGroup) -> Shape:
    """What a node group runs, as a NodePool and EC2NodeClass will: its instance types (or selector), capacity, AMI
    alias and architecture, labels, taints, disk and limits; with the notes of what cannot be carried."""
    spec = FACTS["node_groups"]["eksctl" if g.source == "eksctl" else "terraform_module"]
    notes: list[Finding] = []
    unsure: list[str] = []
    types = _instance_types(g, spec, notes, unsure)
    selector = _instance_selector(g, spec, notes, unsure) if g.source == "eksctl" else None
    if selector is not None:
        types = []                          # the selector decides the types, as eksctl did
    if g.source == "eksctl":
        types, capacity, alias, arch = _eksctl_image(g, types, selector, notes, unsure)
    else:
        capacity, alias, arch = _terraform_image(g, notes, unsure)
    labels = _labels(g, notes)
    raw = g.fields.get("taints")
    taints = _taints(g, raw, notes, unsure)
    disk = g.literal("disk_size")
    limits = _limits(g, types, selector, notes)
    _not_carried(g, spec, notes)
    if isinstance(raw, str) and g.masked.has_token(raw):
        notes.append(_note(g, "MIG-CAS-013", "warning", "the taints are computed", "add them to the NodePool by hand"))
        unsure.append("taints")
    return Shape(g, types, capacity, alias, arch, labels, taints, int(disk) if isinstance(disk, int) else None,
                 limits, notes, spec.get("default_disk_size"), unsure, selector=selector)


def _instance_types(g: NodeGroup, spec: dict, notes: list, unsure: list) -> list[str]:
    """The group's instance types as written (the installer's default where none is written; none, said, where the
    root does not state them)."""
    types = g.literal("instance_types")
    if types is None and g.literal("instance_type"):
        types = [g.literal("instance_type")]
    if types is None:
        if g.fields.get("instance_types") is not None or g.fields.get("instance_type") is not None:
            key = "instance_types" if g.fields.get("instance_types") is not None else "instance_type"
            notes.append(_note(g, "MIG-CAS-010", "warning",
                               f"{key} is {_source(g, key)}, whose value the root does not state: no NodePool is "
                               "written for this group (one that does not restrict the types would launch other "
                               "nodes), and the group is not drained",
                               "give the variable a default or a tfvars value (then run migrator again), or write "
                               "this group's NodePool by hand with its instance types"))
            unsure.append("instance types")
            types = []
        else:
            types = list(spec.get("default_instance_types", []))
    return [str(t) for t in types]


def _eksctl_image(g: NodeGroup, types: list, selector, notes: list, unsure: list) -> tuple[list, str, str, str]:
    """An eksctl group's (instance types, capacity, AMI alias, architecture): a mixed-instances group's types and
    on-demand share, its amiFamily (eksctl's default assumed where none is set)."""
    capacity = "spot" if g.literal("spot") else "on-demand"
    dist = g.literal("instances_distribution")
    if isinstance(dist, dict):          # a mixed-instances group: its types and its on-demand share
        if isinstance(dist.get("instanceTypes"), list) and dist["instanceTypes"]:
            types = [str(t) for t in dist["instanceTypes"]]
        pct = dist.get("onDemandPercentageAboveBaseCapacity", 100)
        base = dist.get("onDemandBaseCapacity", 0)
        if not isinstance(pct, int) or not isinstance(base, int):
            unsure.append("capacity")
        elif pct < 100:
            capacity = "spot" if pct == 0 and base == 0 else "spot+on-demand"
    elif g.fields.get("instances_distribution") is not None:
        unsure.append("capacity")
    arch = "arm64" if any(re.match(r"^[a-z]+\d+g", t) for t in types) else "amd64"
    if selector and selector.get("arch"):
        arch = selector["arch"]
    named = g.literal("ami_family")
    if named is None and not _unread(g, "ami_family"):
        at, sure = default_ami_type(g.cluster_version)
        named = FACTS["eksctl_default_ami_family"][FACTS["ami_type"][at]["alias"]]
        notes.append(_note(g, "MIG-CAS-011", "info" if sure else "warning",
                           f"amiFamily not set: eksctl's default {named} is assumed"
                           + (f" (Kubernetes {g.cluster_version})" if sure else
                              " (the default of groups created on Kubernetes 1.30 or newer)"),
                           "" if sure else "check the group's AMI (aws eks describe-nodegroup --query "
                           "nodegroup.amiType, or the launch template's image); if it is Amazon Linux 2, set "
                           "the EC2NodeClass alias to al2@latest"))
    family = FACTS["eksctl_ami_family"].get(str(named))
    if family is None:
        notes.append(_note(g, "MIG-CAS-012", "warning", f"amiFamily {_source(g, 'ami_family')} has no Karpenter "
                           "AMI alias; the EC2NodeClass uses AL2023", "set amiSelectorTerms for this AMI by hand"))
    alias = family or "al2023"
    return types, capacity, alias, arch


def _terraform_image(g: NodeGroup, notes: list, unsure: list) -> tuple[str, str, str]:
    """A Terraform group's (capacity, AMI alias, architecture): its capacity_type and ami_type, the eks module's or
    EKS's default where none is set."""
    ct = str(g.literal("capacity_type") or FACTS["node_groups"]["terraform_module"]["default_capacity_type"])
    capacity = FACTS["capacity_type"].get(ct, "on-demand")
    if _unread(g, "capacity_type"):
        unsure.append("capacity")
        notes.append(_note(g, "MIG-CAS-038", "warning",
                           f"capacity_type is {_source(g, 'capacity_type')}, whose value the root does not state: "
                           f"the NodePool is written {capacity}",
                           "set karpenter.sh/capacity-type in the NodePool to what the group runs (spot or "
                           "on-demand) before the cutover"))
    at = g.literal("ami_type")
    if at is None and _unread(g, "ami_type"):
        notes.append(_note(g, "MIG-CAS-038", "warning",
                           f"ami_type is {_source(g, 'ami_type')}, whose value the root does not state: the "
                           "EC2NodeClass takes EKS's default for the cluster version",
                           "set the EC2NodeClass amiSelectorTerms alias to the group's AMI family before the "
                           "cutover"))
    if at is None and not _unread(g, "ami_type") and (by_module := module_ami_type(g)):
        at = by_module
        notes.append(_note(g, "MIG-CAS-011", "info", f"ami_type not set: the eks module's default for "
                           f"{'managed' if g.flavour == 'managed' else 'self-managed'} groups ({at}) is taken"))
    if at is None and not _unread(g, "ami_type"):
        at, sure = default_ami_type(g.cluster_version)
        notes.append(_note(g, "MIG-CAS-011", "info" if sure else "warning",
                           f"ami_type not set: EKS's default {at} is assumed"
                           + ("" if sure else " (the default of groups created on Kubernetes 1.30 or newer)"),
                           "" if sure else "check with aws eks describe-nodegroup --query nodegroup.amiType; if "
                           "it says AL2_x86_64, set the EC2NodeClass alias to al2@latest"))
    if at is None:
        at, _ = default_ami_type(g.cluster_version)
    row = FACTS["ami_type"].get(str(at))
    if row is None:
        notes.append(_note(g, "MIG-CAS-012", "warning", f"ami_type {at} has no Karpenter AMI alias; the "
                           "EC2NodeClass uses AL2023", "set amiSelectorTerms for this AMI by hand"))
        row = {"alias": "al2023", "arch": "amd64"}
    alias, arch = row["alias"], row["arch"]
    return capacity, alias, arch


def _labels(g: NodeGroup, notes: list) -> dict:
    """The group's labels a NodePool may carry (a restricted domain's are said, not carried)."""
    labels = g.literal("labels") if isinstance(g.literal("labels"), dict) else {}
    if _unread(g, "labels"):
        notes.append(_note(g, "MIG-CAS-038", "warning",
                           f"labels are {_source(g, 'labels')}, whose value the root does not state: the NodePool "
                           "carries none of them", "add the group's labels to the NodePool's template.metadata.labels "
                           "before the cutover (pods select nodes by them)"))
        labels = {}
    restricted = sorted(k for k in labels if _restricted_label(str(k)))
    if restricted:
        controller = FACTS["install"]["controller_label"]["key"]
        notes.append(_note(g, "MIG-CAS-068", "info" if restricted == [controller] else "warning",
                           f"label(s) {', '.join(restricted)} are in a domain a NodePool may not set (the NodePool CRD "
                           "restricts karpenter.sh and karpenter.k8s.aws, and kubernetes.io/hostname): not carried"
                           + (f" ({controller} marks the nodes the controller runs on, never Karpenter's)"
                              if controller in restricted else ""),
                           "" if restricted == [controller] else
                           "select these nodes by another label, or by the ones Karpenter sets itself "
                           "(karpenter.sh/nodepool, its well-known labels)"))
        labels = {k: v for k, v in labels.items() if k not in restricted}
    return labels


def _taints(g: NodeGroup, raw, notes: list, unsure: list) -> list[dict]:
    """The group's taints as a NodePool writes them (a computed one is said)."""
    taints = []
    raw = g.fields.get("taints")
    for t in (raw.values() if isinstance(raw, dict) else raw or []):
        if not isinstance(t, dict) or g.masked.has_token(str(t)):
            notes.append(_note(g, "MIG-CAS-013", "warning", "a taint is computed", "add it to the NodePool by hand"))
            unsure.append("taints")
            continue
        taint = {"key": str(t["key"])}
        if t.get("value") not in (None, ""):
            taint["value"] = as_string(t["value"])
        taint["effect"] = FACTS["taint_effect"].get(str(t.get("effect")), "NoSchedule")
        taints.append(taint)
    return taints


def _limits(g: NodeGroup, types: list, selector, notes: list) -> dict | None:
    """The NodePool's limits: what max_size nodes of the group's largest type add up to (said where not known)."""
    limits = None
    max_size = g.size("max_size")
    caps = [capacity_of(t) for t in types] if selector is None else [(selector["cpu"], selector["memory"])]
    if isinstance(max_size, int) and caps and all(caps):
        cpu = max(c[0] for c in caps) * max_size
        mem = max(c[1] for c in caps) * max_size
        limits = {"cpu": cpu, "memory": f"{int(mem)}Gi" if mem == int(mem) else f"{int(round(mem * 1024))}Mi"}
    elif types:
        unknown = [t for t, c in zip(types, caps) if c is None]
        notes.append(_note(g, "MIG-CAS-014", "warning",
                           f"no limit written: {('max_size is not a number' if 'max_size' in g.fields else 'max_size is not stated') if not isinstance(max_size, int) else 'capacity of ' + ', '.join(unknown) + ' is not in the table'}",
                           "set spec.limits (cpu, memory) to what max_size nodes of this group add up to"))
    return limits


def _not_carried(g: NodeGroup, spec: dict, notes: list) -> None:
    """What the group sets that an EC2NodeClass does not carry (a launch template, user data), said."""
    for k in g.manual:
        lt = next(iter(g.template.items()), None) if k == "launch_template" else None
        notes.append(_note(g, "MIG-CAS-015", "warning", f"{k} is not carried to the EC2NodeClass" + (
            f" ({lt[0]} sets {', '.join(lt[1])})" if lt and lt[1] else ""),
            f"move what {k} does into the EC2NodeClass by hand ("
            + ("; ".join(f"{a}: {b}" for a, b in lt[1].items()) if lt and lt[1] else
               spec.get("manual_to", {}).get(k, "userData, blockDeviceMappings, amiSelectorTerms"))
            + ") before the cutover; nodes Karpenter launches go without it"))


def _instance_selector(g: NodeGroup, spec: dict, notes: list, unsure: list) -> dict | None:
    """An eksctl group's instanceSelector as {"cpu", "memory" (GiB), "arch"} when it names no instance types; None
    when it has none. A selector migrator cannot read whole makes the group's types unknown (no NodePool)."""
    sel = g.literal("instance_selector")
    if sel is None or g.fields.get("instance_types") is not None or g.fields.get("instance_type") is not None:
        return None
    keys = spec["instance_selector"]
    cpu = sel.get(keys["cpu"]) if isinstance(sel, dict) else None
    mem = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(?:GiB|Gi|G)?\s*", str(sel.get(keys["memory"]))) \
        if isinstance(sel, dict) else None
    arch = spec["instance_selector"]["arch_names"].get(str(sel.get(keys["arch"]) or "x86_64")) \
        if isinstance(sel, dict) else None
    if not isinstance(cpu, int) or isinstance(cpu, bool) or mem is None or arch is None:
        notes.append(_note(g, "MIG-CAS-010", "warning",
                           f"instanceSelector {sel!r} is not read whole (vCPUs and memory, both stated): no NodePool "
                           "is written for this group, and the group is not drained",
                           "write this group's NodePool by hand with karpenter.k8s.aws/instance-cpu and "
                           "instance-memory requirements for its selector"))
        unsure.append("instance types")
        return None
    memory = float(mem.group(1))
    return {"cpu": cpu, "memory": int(memory) if memory == int(memory) else memory, "arch": arch}


def as_string(v: Any) -> str:
    """A label or taint value as EKS receives it: Terraform turns a bool of a map(string) into "true"/"false"
    (Python's str() would write "True", which no selector of the node's real label matches)."""
    return ("true" if v else "false") if isinstance(v, bool) else str(v)


def _unread(g: NodeGroup, key: str) -> bool:
    """A field the group sets as an expression the root does not state (a placeholder is left in it)."""
    v = g.fields.get(key)
    return v is not None and g.masked.has_token(str(v))


def _source(g: NodeGroup, key: str) -> str:
    """The field as the root writes it (a list's items joined as Terraform writes them)."""
    v = g.fields.get(key)
    if isinstance(v, list):
        return "[" + ", ".join(g.masked.unmask(str(x)) for x in v)[:78] + "]"
    return g.masked.unmask(str(v))[:80]


def module_ami_type(g: NodeGroup) -> str | None:
    """The ami_type a terraform-aws-modules/eks call gives a group that names none (by the major its version
    pins), None where EKS's own default applies or the major is not stated."""
    if g.source != "module" or g.block is None:
        return None
    from ...modmajor import constraint
    v = g.block.attr("version")
    ver = constraint(str(v.literal()))[1] if v is not None and v.literal() else None
    if ver is None:
        return None
    for row in FACTS["node_groups"]["terraform_module"]["module_ami_type"]:
        if ver[0] >= row["from"]:
            return row.get(g.flavour)
    return None


def default_ami_type(version: str | None) -> tuple[str, bool]:
    """(EKS's default ami_type for a managed node group, whether the cluster version makes it certain)."""
    from ...path import parse_version
    v = parse_version(version) if version else None
    for row in FACTS["default_ami_type"]:
        if "below" not in row:
            return row["ami"], False
        if v is not None and v < parse_version(row["below"]):
            return row["ami"], True
    return FACTS["default_ami_type"][-1]["ami"], False


def consolidate_after(extra_args: dict | None) -> str:
    d = FACTS["disruption"]
    v = (extra_args or {}).get(d["consolidate_after_arg"])
    return str(v) if v else d["consolidate_after_default"]


def weight(g: NodeGroup, priorities: dict[int, list[str]]) -> int | None:
    """The NodePool weight the priority expander's order gives a node group (None: no priority names it)."""
    if not priorities:
        return None
    top = max(priorities)
    for prio in sorted(priorities, reverse=True):
        if any(re.search(rx, g.name) for rx in priorities[prio] if _valid(rx)):
            return max(1, round(prio * FACTS["priority_expander"]["weight_max"] / top)) if top > 0 else None
    return None


def _valid(rx: str) -> bool:
    try:
        re.compile(rx)
        return True
    except re.error:
        return False


def nodepool(s: Shape, name: str, class_name: str, after: str, weight_: int | None = None,
             widen: bool = False) -> CommentedMap:
    req = []
    parts = [t.split(".", 1) for t in s.instance_types]
    if s.instance_types and widen and all(len(p) == 2 for p in parts):
        # --widen-instance-types: the groups' families and sizes, so Karpenter may pick any of their combinations
        req.append({"key": "karpenter.k8s.aws/instance-family", "operator": "In",
                    "values": list(dict.fromkeys(p[0] for p in parts))})
        req.append({"key": "karpenter.k8s.aws/instance-size", "operator": "In",
                    "values": list(dict.fromkeys(p[1] for p in parts))})
    elif s.instance_types:
        req.append({"key": "node.kubernetes.io/instance-type", "operator": "In", "values": s.instance_types})
    if s.selector:                          # eksctl's instanceSelector: the same vCPUs and memory
        req.append({"key": "karpenter.k8s.aws/instance-cpu", "operator": "In", "values": [str(s.selector["cpu"])]})
        req.append({"key": "karpenter.k8s.aws/instance-memory", "operator": "In",
                    "values": [str(int(round(s.selector["memory"] * 1024)))]})
    req.append({"key": "karpenter.sh/capacity-type", "operator": "In", "values": s.capacity.split("+")})
    req.append({"key": "kubernetes.io/arch", "operator": "In", "values": [s.arch]})
    if s.zones:
        req.append({"key": FACTS["install"]["zone_label"], "operator": "In", "values": s.zones})
    tspec: dict[str, Any] = {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": class_name},
                             "requirements": req}
    if s.taints:
        tspec["taints"] = s.taints
    tspec["expireAfter"] = FACTS["disruption"]["expire_after"]
    template: dict[str, Any] = {}
    if s.labels:
        template["metadata"] = {"labels": {str(k): as_string(v) for k, v in s.labels.items()}}
    template["spec"] = tspec
    spec: dict[str, Any] = {"template": template}
    if weight_ is not None:
        spec["weight"] = weight_
    if s.limits:
        spec["limits"] = s.limits
    spec["disruption"] = {"consolidationPolicy": FACTS["disruption"]["consolidation_policy"], "consolidateAfter": after}
    return _cm({"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name}, "spec": spec})


def nodeclass(s: Shape, name: str, role: str, discovery: str) -> CommentedMap:
    tag = FACTS["install"]["discovery_tag"]
    spec: dict[str, Any] = {"role": role, "amiSelectorTerms": [{"alias": f"{s.alias}@latest"}],
                            "subnetSelectorTerms": [{"tags": {tag: discovery}}],
                            "securityGroupSelectorTerms": [{"tags": {tag: discovery}}]}
    disk = s.disk_gib or s.default_disk
    if disk and disk != FACTS["karpenter_default_disk_gib"]:
        spec["blockDeviceMappings"] = [{"deviceName": FACTS["root_device"][s.alias],
                                        "ebs": {"volumeSize": f"{disk}Gi", **FACTS["default_volume"]}}]
    return _cm({"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": name},
                "spec": spec})


def _cm(v: Any) -> Any:
    if isinstance(v, dict):
        out = CommentedMap()
        for k, x in v.items():
            out[k] = _cm(x)
        return out
    if isinstance(v, list):
        return [_cm(x) for x in v]
    return v


def tolerations(kept: Shape | None) -> list[dict] | None:
    """The controller's tolerations on the group that stays: None (the chart's own) for an untainted group; its
    taints, beside the chart's own, for a tainted group named with --node-group-keep."""
    if kept is None or not kept.taints:
        return None
    out = [dict(t) for t in FACTS["install"]["chart_tolerations"]]
    for t in kept.taints:
        out.append({"key": t["key"], "operator": "Equal" if "value" in t else "Exists",
                    **({"value": t["value"]} if "value" in t else {}), "effect": t["effect"]})
    return out


def kept_group(shapes: list[Shape], chosen: str | None, zoned: set[str] = frozenset()) -> tuple[Shape | None, str]:
    """The node group that stays for the controller, and why. A tainted group is only kept when named with
    --node-group-keep: the controller is then given its taints as tolerations (`tolerations`)."""
    def unfit(s: Shape, named: bool = False) -> str | None:
        if s.capacity != "on-demand":
            return f"it runs {s.capacity.replace('+', ' and ')} capacity (a reclaimed node takes the controller along)"
        if s.taints and not named:
            return "it is tainted " + ", ".join(t["key"] for t in s.taints) + " and the controller tolerates no taint"
        if s.unsure:
            return "its " + " and ".join(s.unsure) + " cannot be read"
        if s.group.size("min_size") == 0 and s.group.size("desired_size") == 0:
            return "it has no node"
        return None
    if chosen:
        for s in shapes:
            if s.group.name == chosen:
                why = unfit(s, named=True)
                if why:
                    return None, f"--node-group-keep {chosen} cannot host the controller: {why}"
                return s, f"chosen with --node-group-keep {chosen}" + (
                    "; the controller tolerates its taints (" + ", ".join(t["key"] for t in s.taints) + ")"
                    if s.taints else "")
        return None, f"--node-group-keep {chosen} names no node group of this root"
    # a group at zero nodes cannot host the controller (and a group the cutover drained must not win the next run)
    cands = [s for s in shapes if unfit(s) is None]
    if not cands:
        return None, ("no on-demand node group without taints can host the controller" +
                      ("; a tainted on-demand group can, named with --node-group-keep (" +
                       ", ".join(s.group.name for s in tainted) + "): the controller then tolerates its taints"
                       if (tainted := [s for s in shapes if s.taints and unfit(s, named=True) is None]) else ""))
    # a group with a block of its own first: an instance of a count / for_each block cannot stay while the others go
    # then the least capacity kept running for the controller (its nodes, at least kept_group_min, of its smallest
    # type), then the smallest min_size; on a tie, a group that spans every zone over one kept to some (`zoned`)
    cands.sort(key=lambda s: (bool(s.group.made_by and sum(x.group.block is s.group.block for x in shapes) > 1),
                              _kept_cpu(s)[0],
                              s.group.size("min_size") if isinstance(s.group.size("min_size"), int) else 10 ** 6,
                              s.group.name in zoned, s.group.name))
    s = cands[0]
    cpu, nodes, itype = _kept_cpu(s)
    low = s.group.size("min_size")
    return s, ("the on-demand node group without taints that keeps the least capacity running for the controller "
               + (f"({nodes} x {itype})" if itype else
                  f"(min_size {low if low is not None else _source(s.group, 'min_size') or 'unset'})")
               + " and has nodes")


def _kept_cpu(s: Shape) -> tuple[int, int, str | None]:
    """(vCPUs, nodes, instance type) a group keeps running once it hosts the controller: its min_size nodes, at least
    kept_group_min, of its smallest instance type; unknown types sort after every known one."""
    low = s.group.size("min_size")
    nodes = max(low if isinstance(low, int) and not isinstance(low, bool) else 0, FACTS["install"]["kept_group_min"])
    known = sorted((c[0], t) for t in s.instance_types if (c := capacity_of(t)) is not None)
    return (nodes * known[0][0], nodes, known[0][1]) if known else (10 ** 6, nodes, None)


def taken_over(ctx) -> set[str]:
    """The node groups a NodePool of the same name replaces (the install phase names them so)."""
    pools = {str((m.obj.get("metadata") or {}).get("name")) for m in ctx.manifests if m.kind == "NodePool"}
    groups = inventory(ctx).groups
    names = pool_names([g.name for g in groups])
    return {g.name for g in groups if names[g.name] in pools}


def on_fargate(ctx) -> bool:
    """The controller runs on a Fargate profile (the root already uses Fargate and no group is chosen to stay):
    every node group is then taken over."""
    return bool(inventory(ctx).fargate) and not ctx.options.node_group_keep


def inventory(ctx) -> CasInventory:
    """This root's Cluster Autoscaler, node groups and their IAM (scanned once per run, kept on the context)."""
    if "cas" not in ctx.entry:
        ctx.entry["cas"] = one_cluster(_own_cluster(ctx, scan(ctx.repo).owned(ctx.owns)))
    return ctx.entry["cas"]


def _own_cluster(ctx, inv: CasInventory) -> CasInventory:
    """A root that declares its cluster inside its own folder (an eksctl ClusterConfig, an eks module, an
    aws_eks_cluster) is that cluster's: clusters and node groups of folders outside it that the root was lent (a
    Terraform folder beside a GitOps folder) are another cluster's, never merged into this one."""
    from ...roots import _module_users, inside

    def home(p: str) -> bool:                   # in the root, a module it calls, a stage of its cluster (or its modules)
        d = posixpath.dirname(p) or "."
        return any(inside(x, ctx.root) or x in ctx.stages for x in {d} | _module_users(ctx.repo, d))
    own = [p for p, _, _ in inv.clusters] + [p for p, _ in inv.eks_modules] + \
        [p for p, _ in ctx.repo.blocks("resource", "aws_eks_cluster") if ctx.owns(p)]
    if ctx.root == "." or not any(home(p) for p in own):
        return inv
    inv.clusters = [x for x in inv.clusters if home(x[0])]
    inv.eks_modules = [x for x in inv.eks_modules if home(x[0])]
    inv.vpc_modules = [x for x in inv.vpc_modules if home(x[0])]
    inv.groups = [g for g in inv.groups if home(g.path)]
    inv.unread = [x for x in inv.unread if home(x[0])]
    inv.fargate = [x for x in inv.fargate if home(x[0])]
    return inv
