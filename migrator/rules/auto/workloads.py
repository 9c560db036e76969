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
    twins = {convert.pool_key(m) for m in ctx.manifests if m.kind == "NodePool" and auto_mode(m)}
    olds = {convert.pool_key(m) for m in ctx.manifests if m.kind == "NodePool" and not auto_mode(m)}
    if not twins or _waiting(ctx, twins):
        return WorkloadsResult()        # selectors move only once Auto Mode's NodePools are there to match them
    res = WorkloadsRule(ctx.repo, phase, ctx.owns, facts=TABLE, rule=RULE).run()
    moved = {n: convert.nodepool_name(n) for n in olds if convert.nodepool_name(n) in twins}
    by_release, staying, templated = released_pools(ctx)
    moved.update(by_release)
    olds |= staying | set(by_release)
    _keep_staying(ctx, olds - set(moved), res)
    if moved or templated:
        _pool_selectors(ctx, moved, olds, res, templated)
    res.files = sorted(set(res.files))
    return res


def released_pools(ctx) -> tuple[dict[str, str], set[str], list[str]]:
    """The NodePools a pool chart of the repository names per release (`{{ .Values.name }}`): (each name the
    releases give a pool that has its Auto Mode twin template -> the twin's name, the names of such pools that stay
    on Karpenter, the templated names whose releases' names the repository does not state: said, MIG-AUTO-054)."""
    from .poolnames import chart_folder, rendered_names
    twins = {(chart_folder(m.path), m.masked.unmask(str(m.name))) for m in ctx.manifests
             if m.kind == "NodePool" and auto_mode(m) and m.masked.has_token(str(m.name))}
    moved: dict[str, str] = {}
    staying: set[str] = set()
    unknown: set[str] = set()
    for m in ctx.manifests:
        if m.kind != "NodePool" or auto_mode(m) or not m.masked.has_token(str(m.name)):
            continue
        raw = m.masked.unmask(str(m.name))
        names = rendered_names(ctx.repo, m.path, raw)
        if names is None:
            unknown.add(raw)
        elif (chart_folder(m.path), convert.nodepool_name(raw)) in twins:
            moved.update({n: convert.nodepool_name(n) for n in names})
        else:
            staying |= names
    return moved, staying, sorted(unknown)


def _keep_staying(ctx, staying: set[str], res: WorkloadsResult) -> None:
    """A workload that selects a NodePool staying on Karpenter (karpenter.sh/nodepool) keeps its karpenter.k8s.aws/*
    selectors too: it still runs on Karpenter's nodes, which carry those labels (a hybrid move, issue 57)."""
    if not staying:
        return
    spans: dict[str, list[tuple[int, int, int, int]]] = {}
    for p in {e.path for e in res.edits}:
        text = ctx.repo.text(p)
        for doc, _, obj in _parse_yaml_docs(ctx.repo, p, text, 0, 0, p):
            if any(_selects(node, staying) for node in _maps(obj)):
                first = doc.first_line + 1
                spans.setdefault(p, []).append((doc.start, doc.end, first, first + doc.text.count("\n")))
    if not spans:
        return
    inside = lambda path, at: any(s <= at < e for s, e, _a, _b in spans.get(path, []))      # noqa: E731
    on_line = lambda path, ln: any(a <= ln <= b for _s, _e, a, b in spans.get(path, []))   # noqa: E731
    res.edits = [e for e in res.edits if not inside(e.path, getattr(e, "start", -1))]
    res.findings = [f for f in res.findings if not (f.code.startswith("MIG-WL-") and on_line(f.path, f.line))]
    res.files = [p for p in res.files if any(e.path == p for e in res.edits)]
    for p, docs in sorted(spans.items()):
        res.findings.append(Finding(
            "MIG-AUTO-051", "warning", p, docs[0][2],
            f"a workload here selects a NodePool that stays on Karpenter ({', '.join(sorted(staying))}): its "
            "karpenter.k8s.aws/* selectors are kept, so it stays on Karpenter's nodes with its pool",
            "move it to Auto Mode by hand once its pool can move (then its selectors become eks.amazonaws.com/*)"))


def _selects(node, names: set[str]) -> bool:
    if isinstance(node.get(POOL_KEY), str) and node[POOL_KEY] in names:
        return True
    return node.get("key") == POOL_KEY and isinstance(node.get("values"), CommentedSeq) and \
        any(v in names for v in node["values"])


def _waiting(ctx, twins: set[str]) -> list[str]:
    """Karpenter NodePools that can move to Auto Mode and have no twin yet (the nodepools phase has not landed)."""
    from .overlays import pinned
    classes = {convert.name_key(m, m.name): m for m in ctx.manifests
               if m.kind == "EC2NodeClass" and not auto_mode(m)}
    pins = pinned(ctx)                  # movable in the base, not as an overlay patches them
    computed = convert.computed_classes(ctx)
    out = []
    for m in ctx.manifests:
        if m.kind != "NodePool" or auto_mode(m) or not isinstance(m.obj, dict):
            continue
        if convert.unwritable(m, computed):
            continue                    # stays on Karpenter (MIG-AUTO-065, said by the nodepools phase)
        ref = (((m.obj.get("spec") or {}).get("template") or {}).get("spec") or {}).get("nodeClassRef") or {}
        cls = classes.get(convert.name_key(m, ref.get("name"))) if isinstance(ref, dict) else None
        if (cls is not None and (convert.blocked_class(cls.obj) or ("EC2NodeClass", str(cls.name)) in pins)) or \
                ("NodePool", str(m.name)) in pins:
            continue                    # stays on Karpenter (said by the nodepools phase)
        if convert.nodepool_name(convert.pool_key(m)) not in twins:
            out.append(str(m.name))
    return out


def _selector_sites(ctx):
    """Every workload selector of a NodePool by name (`karpenter.sh/nodepool`, a nodeSelector or a node affinity
    term) in this root's YAML: (file, its text, the map or list holding the name, its key or index, its position,
    the document's offset function)."""
    repo = ctx.repo
    for p in repo.yaml_containing(POOL_KEY):
        sf = repo.files[p]
        if not ctx.owns(p) or p in repo.template_paths or "{{" in sf.text:
            continue
        text = sf.text
        for doc, _, obj in _parse_yaml_docs(repo, p, text, 0, 0, p):
            if isinstance(obj, CommentedMap) and (obj.get("apiVersion"), obj.get("kind")) in KARPENTER_KINDS:
                continue
            lines = doc.text.splitlines(keepends=True)

            def at(line: int, col: int, doc=doc, lines=lines) -> int:
                return doc.start + sum(len(x) for x in lines[:line]) + col

            for node in _maps(obj):
                if POOL_KEY in node and isinstance(node[POOL_KEY], str):           # nodeSelector
                    yield p, text, node, POOL_KEY, node.lc.value(POOL_KEY), at
                if node.get("key") == POOL_KEY and isinstance(node.get("values"), CommentedSeq):
                    vals = node["values"]
                    for i, v in enumerate(vals):
                        if isinstance(v, str):
                            yield p, text, vals, i, vals.lc.item(i), at


def _pool_selectors(ctx, moved: dict, olds: set, res: WorkloadsResult, templated: list[str] = ()) -> None:
    for p, text, holder, key, pos, at in _selector_sites(ctx):
        _value(p, text, holder, key, pos, at, moved, olds, res, templated)


def selecting(ctx, names: set[str]) -> list[tuple[str, int, str]]:
    """(file, line, pool) of every workload selector naming one of the NodePools `names`."""
    return [(p, text.count("\n", 0, at(*pos)) + 1, holder[key]) for p, text, holder, key, pos, at in _selector_sites(ctx)
            if holder[key] in names]


def _value(p, text, holder, key, pos, at, moved, olds, res, templated=()) -> None:
    name = holder[key]
    line = text.count("\n", 0, at(*pos)) + 1
    if name not in moved:
        if name in olds:
            res.findings.append(Finding(
                "MIG-AUTO-040", "warning", p, line,
                f"a workload selects nodes by {POOL_KEY} = {name}, a NodePool with no Auto Mode twin: it stays on "
                "Karpenter", "move the workload off that NodePool, or keep Karpenter for it"))
        elif templated and not name.endswith(convert.NAMING["nodepool_suffix"]):
            # pools a template names per release: maybe this one (a name ending as a twin's already is the new pool)
            res.findings.append(Finding(
                "MIG-AUTO-054", "warning", p, line,
                f"a workload selects nodes by {POOL_KEY} = {name}, and the NodePools named {', '.join(templated)} get "
                "their "
                f"names from their releases: if {name} is one of them, its Auto Mode twin is "
                f"{convert.nodepool_name(name)}, which this selector does not match",
                f"change the selector to {POOL_KEY}: {convert.nodepool_name(name)} when the workloads move (before "
                "the cutover removes the old pool)"))
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
