"""Rule `auto/workloads`: workloads' node selectors move to Auto Mode's label keys and NodePools (phase `workloads`).

Every nodeSelector key and node-affinity expression key of the `karpenter.k8s.aws/*` labels moves to its
`eks.amazonaws.com/*` twin (knowledge/auto_mode.yaml `node_pool.labels`), in every YAML file migrator reads
(manifests, values files of other charts, patches): the v1beta1 hop's workload rule with this hop's table. A selector
on `karpenter.sh/nodepool` that names a NodePool with an Auto Mode twin names the twin.
"""
from __future__ import annotations

from ruamel.yaml.comments import CommentedMap, CommentedSeq

from ...edits import TextEdit
from ...inventory import KARPENTER_KINDS, _parse_yaml_docs
from ...model import Finding
from ...standing import auto_mode
from ..v1beta1.workloads import WorkloadsResult, WorkloadsRule
from . import convert

RULE = "auto/workloads"
TABLE = {"annotations": {}, "selector_labels": dict(convert.NP["labels"])}
POOL_KEY = "karpenter.sh/nodepool"


def run(ctx, phase: str, done: dict | None = None) -> WorkloadsResult:
    if phase != "workloads":
        return WorkloadsResult()
    cluster = (done or {}).get("auto/cluster")
    if cluster is None or not (getattr(cluster, "enabled", False) or getattr(cluster, "installer", None) == ""):
        return WorkloadsResult()
    twins = {str(m.name) for m in ctx.manifests if m.kind == "NodePool" and auto_mode(m)}
    olds = {str(m.name) for m in ctx.manifests if m.kind == "NodePool" and not auto_mode(m)}
    if not twins or _waiting(ctx, twins):
        return WorkloadsResult()        # selectors move only once Auto Mode's NodePools are there to match them
    res = WorkloadsRule(ctx.repo, phase, ctx.owns, facts=TABLE, rule=RULE).run()
    moved = {n: convert.nodepool_name(n) for n in olds if convert.nodepool_name(n) in twins}
    if moved:
        _pool_selectors(ctx, moved, olds, res)
    res.files = sorted(set(res.files))
    return res


def _waiting(ctx, twins: set[str]) -> list[str]:
    """Karpenter NodePools that can move to Auto Mode and have no twin yet (the nodepools phase has not landed)."""
    classes = {str(m.name): m for m in ctx.manifests if m.kind == "EC2NodeClass" and not auto_mode(m)}
    out = []
    for m in ctx.manifests:
        if m.kind != "NodePool" or auto_mode(m) or not isinstance(m.obj, dict):
            continue
        ref = (((m.obj.get("spec") or {}).get("template") or {}).get("spec") or {}).get("nodeClassRef") or {}
        cls = classes.get(str(ref.get("name"))) if isinstance(ref, dict) else None
        if cls is not None and convert.blocked_class(cls.obj):
            continue                    # stays on Karpenter (said by the nodepools phase)
        if convert.nodepool_name(str(m.name)) not in twins:
            out.append(str(m.name))
    return out


def _pool_selectors(ctx, moved: dict, olds: set, res: WorkloadsResult) -> None:
    repo = ctx.repo
    for p, sf in repo.files.items():
        if not p.endswith((".yaml", ".yml")) or POOL_KEY not in sf.text or not ctx.owns(p) \
                or p in repo.template_paths or "{{" in sf.text:
            continue
        text = sf.text
        for doc, _, obj in _parse_yaml_docs(repo, p, text, 0, 0, p):
            if isinstance(obj, CommentedMap) and (obj.get("apiVersion"), obj.get("kind")) in KARPENTER_KINDS:
                continue
            lines = doc.text.splitlines(keepends=True)

            def at(line: int, col: int) -> int:
                return doc.start + sum(len(x) for x in lines[:line]) + col

            for node in _maps(obj):
                if POOL_KEY in node and isinstance(node[POOL_KEY], str):           # nodeSelector
                    _value(p, text, node, POOL_KEY, node.lc.value(POOL_KEY), at, moved, olds, res)
                if node.get("key") == POOL_KEY and isinstance(node.get("values"), CommentedSeq):
                    vals = node["values"]
                    for i, v in enumerate(vals):
                        if isinstance(v, str):
                            _value(p, text, vals, i, vals.lc.item(i), at, moved, olds, res)


def _value(p, text, holder, key, pos, at, moved, olds, res) -> None:
    name = holder[key]
    line = text.count("\n", 0, at(*pos)) + 1
    if name not in moved:
        if name in olds:
            res.findings.append(Finding(
                "MIG-AUTO-040", "warning", p, line,
                f"a workload selects nodes by {POOL_KEY} = {name}, a NodePool with no Auto Mode twin: it stays on "
                "Karpenter", "move the workload off that NodePool, or keep Karpenter for it"))
        return
    s = at(*pos)
    raw = text[s:s + len(name) + 2]
    q = raw[0] if raw[:1] in "\"'" else ""
    e = s + len(name) + 2 * len(q)
    res.edits.append(TextEdit(p, s, e, f"{q}{moved[name]}{q}", RULE))
    res.files.append(p)
    res.findings.append(Finding("MIG-WL-002", "info", p, line, f"selector {POOL_KEY} {name} -> {moved[name]}", ""))


def _maps(node):
    if isinstance(node, CommentedMap):
        yield node
        for v in node.values():
            yield from _maps(v)
    elif isinstance(node, CommentedSeq):
        for v in node:
            yield from _maps(v)
