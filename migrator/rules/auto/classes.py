"""Where a NodePool's EC2NodeClass is, for the Auto Mode hop: in this root, in another root of the repository, only as
text (a template a script fills), or nowhere; and which other roots' NodePools lean on a class of this root. The
nodepools phase, the cutover and the hop's `settled` / `unmovable` read a class by name only through these.
"""
from __future__ import annotations

import re

from ...standing import auto_mode
from ..v1beta1.manifests import _name_key
from . import convert


def classes_named(ctx, cls: str, kind: str = "EC2NodeClass", every: bool = True) -> list:
    """The objects of `kind` (Karpenter's EC2NodeClass, or an Auto Mode NodeClass) named `cls` in every root of the
    repository (`every`), else in this root: the one reader of a class by name for undeclared, declared_elsewhere and
    blocked_elsewhere."""
    pool = (getattr(ctx, "all_manifests", None) or ctx.manifests) if every else ctx.manifests
    auto = kind == "NodeClass"
    return [o for o in pool if o.kind == kind and auto_mode(o) == auto and _name_key(o, o.name) == cls]


def undeclared(ctx, cls: str) -> bool:
    """Is the EC2NodeClass a NodePool names declared in no file of the repository migrator reads (this root's, another
    root's, whose twin is written there), with no Auto Mode twin of it there either? Then a twin pool would run on a
    NodeClass nothing writes (MIG-AUTO-068)."""
    return not classes_named(ctx, cls) and not classes_named(ctx, convert.nodeclass_name(cls), "NodeClass")


def _in_another_root(ctx, name: str, kind: str) -> str | None:
    """file:line of the first object of `kind` named `name` that a root other than this one holds."""
    return next((f"{o.tf_path or o.path}:{o.line}" for o in classes_named(ctx, name, kind)
                 if not ctx.owns(o.tf_path or o.path)), None)


def declared_elsewhere(ctx, cls: str) -> str | None:
    """file:line of an EC2NodeClass named `cls` that only another root of the repository declares (its Auto Mode twin is
    written there), when no twin of it is in this root; None otherwise."""
    if classes_named(ctx, convert.nodeclass_name(cls), "NodeClass", every=False):
        return None
    return _in_another_root(ctx, cls, "EC2NodeClass")


def written_elsewhere(ctx, cls: str) -> str | None:
    """file:line of the Auto Mode NodeClass named `cls` that only another root of the repository writes (where the
    EC2NodeClass a twin's old pool named was declared, MIG-AUTO-069), when this root holds none; None otherwise."""
    if classes_named(ctx, cls, "NodeClass", every=False):
        return None
    return _in_another_root(ctx, cls, "NodeClass")


def leaning_pools(ctx, cls: str) -> list:
    """Karpenter NodePools of other roots that name the EC2NodeClass `cls` while their own roots hold none of that
    name (a folder of pools beside the cluster's Terraform that declares the classes): they may run on this root's
    class, so it stays until they are gone (MIG-AUTO-070). A root with a class of its own of that name (another
    cluster's `default`) is never waited for."""
    seen = {(o.tf_path or o.path, o.line) for o in ctx.all_manifests}
    objects = list(ctx.all_manifests) + [o for o in ctx.earlier if (o.tf_path or o.path, o.line) not in seen]
    classes = [o for o in objects if o.kind == "EC2NodeClass" and not auto_mode(o) and _name_key(o, o.name) == cls]
    out = []
    for o in objects:                   # the files before this run's changes too: a pool another root's cutover
        path = o.tf_path or o.path      # removes in this run is waited for until the next one
        if o.kind != "NodePool" or auto_mode(o) or ctx.owns(path):
            continue
        ref = (((o.obj.get("spec") or {}).get("template") or {}).get("spec") or {}).get("nodeClassRef") \
            if isinstance(o.obj, dict) else None
        if not isinstance(ref, dict) or _name_key(o, str(ref.get("name"))) != cls:
            continue
        roots = ctx.users(path)
        if roots and not any(r in ctx.users(c.tf_path or c.path) for c in classes for r in roots):
            out.append(o)
    return list({(o.tf_path or o.path, _name_key(o, o.name)): o for o in out}.values())


def twinned(ctx, pools: list) -> bool:
    """Has each of these NodePools its Auto Mode twin in the repository (so its cutover removes it in time)?"""
    twins = {_name_key(o, o.name) for o in ctx.all_manifests if o.kind == "NodePool" and auto_mode(o)}
    return all(convert.nodepool_name(convert.pool_key(o)) in twins for o in pools)


def waits_message(cls: str, pools: list, twins: bool = True) -> str:
    named = ", ".join(f"{_name_key(o, o.name)} ({o.tf_path or o.path}:{o.line})" for o in pools[:3])
    many = len(pools) > 1
    return (f"EC2NodeClass {cls} stays for now: NodePool{'s' if many else ''} {named} of another root "
            f"name{'' if many else 's'} it and {'their roots hold' if many else 'its root holds'} no EC2NodeClass of "
            f"that name, so {'they' if many else 'it'} may run on this one; it goes at this root's cutover once "
            f"{'they are' if many else 'it is'} removed"
            + ("" if twins else " (not every one has an Auto Mode twin: one that stays on Karpenter keeps this class, "
               "and Karpenter's controller, for as long as it stays)"))


def waits_step(cls: str, pools: list) -> str:
    return (f"apply the cutover of the root{'s' if len(pools) > 1 else ''} holding "
            f"{', '.join(sorted({o.tf_path or o.path for o in pools})[:3])} first, then run migrator again: this "
            f"root's cutover removes EC2NodeClass {cls}")


_DOC_SUFFIXES = (".md", ".markdown", ".rst", ".txt", ".adoc", ".html")


def kept_in(repo, cls: str) -> list[str]:
    """Files that are not documentation and hold a document of kind EC2NodeClass (its own top-level kind, never a
    pool's nodeClassRef) named `cls`, as text migrator does not read as an object (an envsubst template, a Go template,
    a script): where the team keeps it, named so the NodeClass to write by hand is found."""
    name = re.compile(r"""^[ \t]+name[ \t]*:[ \t]*["']?""" + re.escape(cls) + r"""["']?[ \t]*(#.*)?$""", re.M)
    kind = re.compile(r"""^["']?kind["']?[ \t]*:[ \t]*["']?EC2NodeClass["']?[ \t]*(#.*)?$""", re.M)
    out = []
    for p in repo.containing("EC2NodeClass"):
        if p.lower().endswith(_DOC_SUFFIXES):
            continue
        if any(kind.search(doc) and name.search(doc) for doc in re.split(r"^---", repo.text(p), flags=re.M)):
            out.append(p)
    return out[:3]


def blocked_elsewhere(ctx, cls: str) -> tuple[str, str] | None:
    """(file:line, why) of an EC2NodeClass named `cls` that another root of the repository declares (a cluster module
    beside the folder of NodePools) and that cannot move to Auto Mode: a NodePool of this root naming it would get a
    twin on a NodeClass never written. Any such class counts (two clusters' classes may share the name: the pool
    stays rather than name a class that may never be made)."""
    for o in classes_named(ctx, cls):
        if o.era != "v1":
            continue
        why = convert.blocked_class(o.obj)
        if why is not None:
            return f"{o.tf_path or o.path}:{o.line}", why
    return None
