"""Kustomize overlays of the pools that move to EKS Auto Mode (issue 57, item 1).

An overlay patches a base's NodePool or EC2NodeClass per environment (prod's limits, its labels, its subnets). The
Auto Mode twin is written beside the base object, so without its own patch every environment would get the base's
twin: prod's twin with the base's limits, without the labels prod's workloads select. So, at the nodepools phase,
each kustomization that patches an object that gets a twin gets one patch of the twin: the object as that
kustomization receives it (its resources and inner overlays applied) and as it leaves it (its own patches too) are
both converted as the twin is, and the difference is written as a merge patch of the twin (how kustomize applies a
strategic-merge patch to a custom resource), in a file of its own listed in `patches`. It is proved by applying it.
A pool an overlay makes unable to move (it adds userData, kubelet settings), a patch of the temporary taint, or a
patch that aims at every NodePool is said, never guessed.

At the cutover, the patches of the objects that go are removed with them (a strategic-merge patch of an object that
no longer exists fails the build), and their files when nothing else uses them.
"""
from __future__ import annotations

import posixpath

from ... import knowledge
from ...edits import DeleteFile, NewFile, TextEdit, comments_above
from ...inventory import kustomizations as kz
from ...sources import yaml as yamlsrc
from ...validate import validate_object
from ..v1beta1.kustomize import _dash_col, _yaml_ready, entry_span, key_span
from . import convert

TAINT_KEY = convert.FACTS["temporary_taint"]["key"]


def _convert(kind: str, obj: dict, new: str, arg):
    return convert.convert_nodepool(obj, new, arg) if kind == "NodePool" else convert.convert_nodeclass(obj, new, arg)


def _object(objs, kind: str, name: str) -> dict | None:
    return next((o for o in objs or [] if o.get("kind") == kind and
                 str((o.get("metadata") or {}).get("name")) == name), None)


def _diff(a, b):
    """The JSON merge patch taking a to b (None: nothing to patch)."""
    if not (isinstance(a, dict) and isinstance(b, dict)):
        return b
    out = {}
    for k, v in b.items():
        if k not in a:
            out[k] = v
        elif a[k] != v:
            out[k] = _diff(a[k], v) if isinstance(a[k], dict) and isinstance(v, dict) else v
    for k in a:
        if k not in b:
            out[k] = None
    return out or None


def _taints(patch) -> bool:
    spec = (((patch.get("spec") or {}).get("template") or {}).get("spec") or {}) if isinstance(patch, dict) else {}
    return isinstance(spec, dict) and "taints" in spec


def pinned(ctx, old: list | None = None) -> dict[tuple[str, str], tuple[str, int, str]]:
    """The objects some kustomization makes unable to move (it adds user data, kubelet settings, Windows):
    (kind, name) -> (kustomization, line of its patch, why). Such an object stays on Karpenter in every environment
    (no twin, never removed at the cutover), as one that cannot move in its base does: the base's twin would reach
    that environment without what the overlay adds, and the cutover would remove the pool it needs."""
    from ...standing import auto_mode
    if old is None:
        old = [m for m in ctx.manifests if m.era == "v1" and not auto_mode(m)]
    names = {(m.kind, str(m.name)) for m in old if m.kind in ("NodePool", "EC2NodeClass") and m.container == "yaml"}
    out: dict = {}
    if not names:
        return out
    repo = ctx.repo
    for k in kz.scan(repo):
        if not k.patches or not ctx.owns(k.path):
            continue
        aimed = {(kind, str(name)): pt for pt in k.patches for _a, kind, name in pt.aims() if (kind, str(name)) in names}
        if not aimed:
            continue
        try:
            built = kz.build(repo, k.path)
        except kz.PatchError:
            continue
        for (kind, name), pt in sorted(aimed.items()):
            obj = _object(built, kind, name)
            why = (convert.blocked_class(obj) if kind == "EC2NodeClass" else convert.blocked_pool(obj)) \
                if obj is not None else None
            if why and (kind, name) not in out:
                out[(kind, name)] = (pt.kpath, pt.line, why)
    return out


def twins(rule) -> None:
    """At the nodepools phase: a patch of each twin in every kustomization that patches its source object."""
    made = rule.made                # (kind, old name) -> (manifest, twin name, class name or role)
    if not made:
        return
    repo, res = rule.repo, rule.res
    for k in kz.scan(repo):
        if not k.patches or not rule.ctx.owns(k.path):
            continue
        aimed: dict[tuple[str, str], kz.Patch] = {}
        for pt in k.patches:
            for _api, kind, name in pt.aims():
                if name is None and kind in ("NodePool", "EC2NodeClass") and any(kd == kind for kd, _ in made):
                    rule.finding("MIG-AUTO-057", "warning", pt.kpath, pt.line,
                                 f"the patch {pt.where} applies to every {kind} (its target names none), so it applies "
                                 "to the Auto Mode twins too",
                                 f"check that what it sets suits the Auto Mode {kind}s, or give its target a name")
                elif (kind, str(name)) in made:
                    aimed.setdefault((kind, str(name)), pt)
        if not aimed:
            continue
        try:
            before_all = kz.build(repo, k.path, k.patches[0])
            after_all = kz.build(repo, k.path)
        except kz.PatchError:
            before_all = after_all = None
        entries = []
        for (kind, old), pt in sorted(aimed.items()):
            m, new, arg = made[(kind, old)]
            entry = _twin_patch(rule, k, pt, kind, old, new, arg, _object(before_all, kind, old),
                                _object(after_all, kind, old), m)
            if entry is not None:
                entries.append(entry)
        if entries:
            _list(rule, k, entries)
    res.files = sorted({e.path for e in res.edits})


def _twin_patch(rule, k, pt, kind, old, new, arg, before, after, m) -> str | None:
    """The path (relative to the kustomization) of the twin's patch file, written when new; None when there is none
    to list (said where that is a problem)."""
    repo = rule.repo
    if before is None or after is None:
        rule.finding("MIG-AUTO-058", "warning", pt.kpath, pt.line,
                     f"{k.path} patches {kind} {old}, and migrator cannot build what the kustomization makes of it, "
                     f"so its Auto Mode twin {new} gets no patch of its own here",
                     f"patch {new} in {k.path} as {old} is patched (the Auto Mode fields: see {m.path})")
        return None
    if before == after:
        return None
    was, now = _convert(kind, before, new, arg), _convert(kind, after, new, arg)
    if now.obj is None or was.obj is None:
        why = "; ".join(n.message for n in now.notes if n.severity != "info") or "it cannot move"
        rule.finding("MIG-AUTO-058", "warning", pt.kpath, pt.line,
                     f"{kind} {old} as {k.path} patches it cannot move to Auto Mode ({why}); its twin {new} is not "
                     "patched here, and in this overlay the pool must stay on Karpenter",
                     "keep this environment's pool (and Karpenter) until what the overlay adds can go")
        return None
    seen = {n.message for n in was.notes}
    for n in now.notes:
        if n.message not in seen:
            rule.finding(n.code, n.severity, pt.kpath, pt.line, f"{k.path}: {m.masked.unmask(n.message)}",
                         m.masked.unmask(n.manual_step))
    base, full = kz.plain(was.obj), kz.plain(now.obj)
    d = _diff(base, full)
    if d is None:
        return None
    if _taints(d):
        rule.finding("MIG-AUTO-058", "warning", pt.kpath, pt.line,
                     f"{k.path} patches the taints of NodePool {old}; its twin {new} carries the temporary taint "
                     f"{TAINT_KEY} until its workloads move, so its patch is not written",
                     f"patch the taints of {new} in {k.path} by hand, keeping {TAINT_KEY} until the workloads phase")
        return None
    patch = {"apiVersion": full["apiVersion"], "kind": full["kind"],
             "metadata": {"name": new, **(d.pop("metadata", None) or {})}}
    patch.update({key: v for key, v in d.items() if key not in ("apiVersion", "kind")})
    if kz.merge_patch(base, patch) != full:
        rule.finding("MIG-AUTO-058", "warning", pt.kpath, pt.line,
                     f"the patch of {new} in {k.path} does not rebuild what {k.path} makes of {old}; not written",
                     f"patch {new} in {k.path} by hand")
        return None
    errs = validate_object(full, knowledge.load("minors")["newest"] if kind == "NodePool" else "")
    if errs:
        rule.finding("MIG-VAL-001", "error", pt.kpath, pt.line,
                     f"{full['kind']} {new} as {k.path} patches it does not validate against its schema: "
                     + "; ".join(errs), "fix the overlay's patch and re-run; nothing was written")
        return None
    name = convert.NAMING["overlay_patch_file"].format(twin=new, kind=full["kind"].lower())
    path = posixpath.join(k.dir, name) if k.dir else name
    nl = repo.files[k.path].newline
    body = yamlsrc.Emitter(yamlsrc.detect_style(repo.text(pt.file) if pt.file else k.text)).emit(
        _yaml_ready(patch)).text.replace("\n", nl)
    if path in repo.files:
        if repo.text(path) != body:
            rule.finding("MIG-MAN-002", "warning", path, 1,
                         f"{path} exists with other content; the patch of {new} for {k.path} is not written",
                         "move that file away or write the patch by hand")
            return None
    else:
        rule.res.edits.append(NewFile(path, body, _rule(rule)))
        rule.res.created.append(f"patch of {full['kind']} {new} in {k.path}")
    rule.finding("MIG-AUTO-056", "info", pt.kpath, pt.line,
                 f"{k.path} patches {kind} {old}: its Auto Mode twin {new} gets the same change in {path}, listed in "
                 "the kustomization's patches (what the overlay makes of the pool, converted as the twin is)")
    return name


def _rule(rule) -> str:
    return rule.place.rule


def _list(rule, k, names: list[str]) -> None:
    """The new patch files in the kustomization's patches (after its last entry, in its style); those listed stay."""
    vals = k.values if isinstance(k.values, dict) else {}
    listed = {str(x.get("path") if isinstance(x, dict) else x).lstrip("./")
              for f in ("patches", "patchesStrategicMerge") for x in (vals.get(f) or [])}
    names = [n for n in names if n not in listed]
    if not names:
        return
    text, nl = k.text, rule.repo.files[k.path].newline
    field = "patches" if isinstance(vals.get("patches"), list) or not isinstance(vals.get("patchesStrategicMerge"),
                                                                                  list) else "patchesStrategicMerge"
    item = (lambda n: f"- path: {n}") if field == "patches" else (lambda n: f"- {n}")
    items = k.obj.get(field) if isinstance(vals.get(field), list) and vals.get(field) else None
    if items:
        s, e = entry_span(text, items, len(items) - 1)
        pad = " " * _dash_col(text, s)
        add = "".join(pad + item(n) + nl for n in names)
        if not text[:e].endswith("\n"):
            add = nl + add.rstrip("\r\n")
        rule.res.edits.append(TextEdit(k.path, e, e, add, _rule(rule)))
        return
    add = f"{field}:{nl}" + "".join(f"  {item(n)}{nl}" for n in names)
    lead = "" if not text or text.endswith("\n") else nl
    rule.res.edits.append(TextEdit(k.path, len(text), len(text), lead + add, _rule(rule)))


def drop(rule, going: set[tuple[str, str]]) -> None:
    """At the cutover: the patches of the objects that go leave the kustomizations with them."""
    repo, res = rule.repo, rule.res
    for k in kz.scan(repo):
        if not k.patches or not rule.ctx.owns(k.path):
            continue
        gone: dict[str, list[int]] = {}
        for pt in k.patches:
            aims = [(kind, str(name)) for _a, kind, name in pt.aims()]
            if not aims or not all(a in going for a in aims):
                continue
            gone.setdefault(pt.field, []).append(pt.index)
            if pt.file and not kz.file_used_elsewhere(repo, pt, lambda other: other.kpath != pt.kpath):
                res.edits.append(DeleteFile(pt.file, _rule(rule)))
        for fld, idxs in gone.items():
            items = k.obj[fld]
            if len(idxs) == len(items):
                ks, _ = key_span(k.text, k.obj, fld)
                _, end = entry_span(k.text, items, len(items) - 1)
                res.edits.append(TextEdit(k.path, ks, end, "", _rule(rule)))
            else:
                for i in idxs:             # with the comment lines that are the entry's own (just above it)
                    s, e = entry_span(k.text, items, i)
                    res.edits.append(TextEdit(k.path, comments_above(k.text, s), e, "", _rule(rule)))
            res.removed.append(f"{len(idxs)} patch(es) of the old pools in {k.path}")
    res.files = sorted({e.path for e in res.edits})
