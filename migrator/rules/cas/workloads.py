"""Rule `cas/workloads`: what Cluster Autoscaler read on pods, as Karpenter reads it (phase `install`).

`cluster-autoscaler.kubernetes.io/safe-to-evict: "false"` gets its Karpenter twin `karpenter.sh/do-not-disrupt:
"true"` beside it (Karpenter does not read Cluster Autoscaler's annotation); a pin to a node group Karpenter takes
over (`eks.amazonaws.com/nodegroup`, `alpha.eksctl.io/nodegroup-name` in a nodeSelector) is reported with the
NodePool that replaces the group (the pin would keep the pod Pending once the group is gone)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ...cas import FACTS
from ...edits import Edit, TextEdit, to_newline
from ...inventory import _parse_yaml_docs
from ...inventory.documents import Words
from ...model import Finding
from . import convert

RULE = "cas/workloads"
WL = FACTS["workloads"]
_ANY = Words(list(WL["annotations"]) + WL["node_group_labels"], whole=False)


@dataclass
class WorkloadsResult:
    edits: list[Edit] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    files: list[str] = field(default_factory=list)


def _walk(node, path=()):
    if isinstance(node, dict):
        yield path, node
        for k, v in node.items():
            yield from _walk(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _walk(v, path + (i,))


def run(ctx, phase: str, done: dict | None = None) -> WorkloadsResult:
    res = WorkloadsResult()
    cas = convert.inventory(ctx)
    if phase != "install" or cas is None or not cas.present:
        return res
    installed = (done or {}).get("cas/karpenter")
    if installed is not None and not installed.edits and not getattr(installed, "done", False):
        return res                  # Karpenter cannot be installed here: the pods keep what they have
    replaced = {g.name for g in cas.groups}
    pool_of = convert.pool_names([g.name for g in cas.groups])
    installed = (done or {}).get("cas/karpenter")
    kept = getattr(installed, "kept", "") if installed is not None else ""
    own = {(i.path, i.doc.start) for i in cas.installs if i.doc is not None}     # Cluster Autoscaler's own pods
    for p, sf in ctx.repo.files.items():
        if not p.endswith((".yaml", ".yml")) or not _ANY.search(sf.text) or not ctx.owns(p):
            continue
        nl = sf.newline
        for doc, m, obj in _parse_yaml_docs(ctx.repo, p, sf.text, 0, 0, p, only=_ANY):
            if (p, doc.start) in own:
                continue            # it goes at the cleanup: its own safe-to-evict is not a workload's
            for path, node in _walk(obj):
                if path[-1:] == ("annotations",):
                    for key, rows in WL["annotations"].items():
                        val = node.get(key)
                        twin = rows.get(str(val)) if val is not None else None
                        if twin is None or twin["key"] in node:
                            continue
                        kl, kc = node.lc.key(key)
                        text = sf.text
                        ls = doc.start + sum(len(x) for x in text[doc.start:].splitlines(keepends=True)[:kl])
                        ind = text[ls:ls + kc]
                        res.edits.append(TextEdit(p, ls, ls, to_newline(f'{ind}{twin["key"]}: "{twin["value"]}"\n', nl),
                                                  RULE))
                        res.files.append(p)
                        res.findings.append(Finding("MIG-CAS-030", "info", p, doc.first_line + kl + 1,
                                                    f"{key}: \"{val}\" -> {twin['key']}: \"{twin['value']}\" added "
                                                    "beside it (Karpenter does not read Cluster Autoscaler's key)"))
                if path[-1:] == ("nodeSelector",):
                    for label in WL["node_group_labels"]:
                        group = node.get(label)
                        if group is None or str(group) not in replaced:
                            continue
                        kl, kc = node.lc.key(label)
                        if str(group) == kept:
                            continue            # the group stays: the pin still holds
                        text = sf.text
                        ls = doc.start + sum(len(x) for x in text[doc.start:].splitlines(keepends=True)[:kl])
                        pool = pool_of[str(group)]
                        vl, vc = node.lc.value(label)
                        vs = doc.start + sum(len(x) for x in text[doc.start:].splitlines(keepends=True)[:vl]) + vc
                        same_line = vl == kl and text.startswith(str(group), vs)
                        if text.startswith(label, ls + kc) and WL["nodepool_label"] not in node and \
                                (pool == str(group) or same_line):
                            res.edits.append(TextEdit(p, ls + kc, ls + kc + len(label), WL["nodepool_label"], RULE))
                            if pool != str(group):
                                res.edits.append(TextEdit(p, vs, vs + len(str(group)), pool, RULE))
                            res.files.append(p)
                            res.findings.append(Finding(
                                "MIG-CAS-031", "info", p, doc.first_line + kl + 1,
                                f"nodeSelector {label}: {group} -> {WL['nodepool_label']}: {pool} (the NodePool that "
                                "replaces the group; the group is removed at the cleanup)",
                                "if the pin was to the group's own nodes on purpose, keep a group for it and choose it "
                                "with --node-group-keep"))
                        else:
                            res.findings.append(Finding(
                                "MIG-CAS-031", "warning", p, doc.first_line + kl + 1,
                                f"nodeSelector {label}: {group} pins pods to a node group Karpenter takes over",
                                f"select {WL['nodepool_label']}: {pool_of[str(group)]} instead (the NodePool that replaces the "
                                "group) before the cutover, unless the pin is deliberate and the group stays"))
    return res
