"""Karpenter NodePools and EC2NodeClasses of a root that the Auto Mode hop does not convert, wherever they are.

Each one keeps running on Karpenter after the move unless a person writes its twin: a document migrator could not
read (a chart template that is no YAML with its actions masked, a file that does not parse: said where it was read,
MIG-SRC-*), an object a shell command applies from a heredoc (a script, a `local-exec` provisioner: migrator does not
edit shell commands, inventory/shellobjects.py), and an object in a template that a `local_file` resource renders
where migrator does not write it (inventory/localfiles.py: its output committed too, or applied with other files by one
command), an object passed to a chart in its values (a "raw" chart, inventory/valueobjects.py), and the pools a
chart from outside the repository renders (inventory/poolreleases.py). The cutover
and the cleanup wait for them (nodepools.py, MIG-AUTO-059): without a twin, the cutover
would remove the EC2NodeClasses they name, and the cleanup the controller that runs them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ...sources import hcl as hclsrc

UNREAD = ("MIG-SRC-002", "MIG-SRC-004", "MIG-SRC-013")     # a document read for Karpenter's kinds that does not parse
_POOL_KIND = re.compile(r"""^[ \t]*["']?kind["']?[ \t]*:[ \t]*["']?(NodePool|EC2NodeClass)["']?[ \t]*$""", re.M)
# a document's own kind (not a nodeClassRef's, indented below it)
_TOP_KIND = re.compile(r"""^["']?kind["']?[ \t]*:[ \t]*["']?(NodePool|EC2NodeClass)["']?[ \t]*$""", re.M)
_KARPENTER_API = re.compile(r"""^[ \t]*["']?apiVersion["']?[ \t]*:[ \t]*["']?karpenter\.(sh|k8s\.aws)/""", re.M)
KINDS = ("NodePool", "EC2NodeClass")


@dataclass(frozen=True)
class Unconverted:
    path: str
    line: int
    kind: str
    what: str           # why it gets no twin, as the finding says it
    fix: str


def what_for(o: Unconverted) -> str:
    """What gets no twin, as a finding says it: `this Karpenter NodePool`, or the pools a release renders."""
    return f"this Karpenter {o.kind}" if o.kind in KINDS else o.kind


def objects(ctx) -> list[Unconverted]:
    """Every NodePool or EC2NodeClass of the root that gets no Auto Mode twin because migrator does not convert it
    where it is written (not one that cannot move: those stay on Karpenter, said by the rule that keeps them)."""
    return _unread(ctx) + _computed(ctx) + _shell(ctx) + _rendered_files(ctx) + _inline_files(ctx) + _values(ctx) + \
        _releases(ctx)


def _inline_files(ctx) -> list[Unconverted]:
    """v1 NodePools and EC2NodeClasses a local_file writes from a heredoc or yamlencode() (MIG-SRC-027)."""
    from ...inventory.localfiles import inline
    return [Unconverted(o.tf, o.line, o.kind,
                        f"{o.block.address} writes this {o.kind} from {o.how} into the file it renders, and migrator "
                        "converts only the templates a local_file renders",
                        "move the object into a template the local_file renders with templatefile() and run migrator "
                        "again, or write its Auto Mode twin by hand and remove the old object yourself")
            for o in inline(ctx.repo) if o.kind in KINDS and o.api.endswith("/v1") and ctx.owns(o.tf)
            and not _example(ctx, o.tf)]


def _computed(ctx) -> list[Unconverted]:
    """v1 NodePools and EC2NodeClasses a structure of which an expression builds (a spec made by `merge(...)`): read,
    said (MIG-SRC-008) and left alone (inventory/objects.py `left_alone`)."""
    from ...inventory.objects import left_alone
    out = []
    for m, where in left_alone(ctx.repo):
        path = m.tf_path or m.path
        if m.kind not in KINDS or m.era != "v1" or not ctx.owns(path) or _example(ctx, path):
            continue
        key = ".".join(map(str, where))
        out.append(Unconverted(
            path, m.line_of(where), m.kind,
            f"{m.kind} {m.masked.unmask(str(m.name))}: its {key} is built by an expression migrator cannot convert",
            f"write its Auto Mode twin by hand (the {key} mapping: docs/hops/auto-mode.md), or write {key} as a map "
            "migrator can read, and run migrator again"))
    return out


def _releases(ctx) -> list[Unconverted]:
    """Releases of charts from outside the repository that render Karpenter's pools (inventory/poolreleases.py):
    migrator renders no remote chart, so it writes no twin for what they make."""
    from ...inventory import poolreleases
    return [Unconverted(
        r.path, r.line, "the NodePools and EC2NodeClasses it renders",
        f"{r.address} installs the chart {r.chart} ({r.source}{', ' + r.version if r.version else ''}), which renders "
        "Karpenter's pools from its values, and migrator does not render charts from outside the repository",
        "write the pools' Auto Mode twins (a NodeClass of eks.amazonaws.com/v1 and NodePools naming it: in YAML files "
        "or kubectl_manifests, which migrator writes the runbook for, or a release of a chart that renders them), "
        "move the workloads to them, then remove this release and run migrator again")
        for r in poolreleases.scan(ctx.repo) if ctx.owns(r.path) and not r.auto_mode and not _example(ctx, r.path)]


def _unread(ctx) -> list[Unconverted]:
    """Documents that do not parse (the reading said so: UNREAD findings) and declare a NodePool or EC2NodeClass; not
    one in an examples or test folder that nothing applies, outside the root's own folder (no cluster's:
    MIG-SRC-022)."""
    from ...sources import yaml as yamlsrc
    out: list[Unconverted] = []
    for f in ctx.repo.findings:
        if f.code not in UNREAD or not f.path or f.path not in ctx.repo.files or not ctx.owns(f.path):
            continue
        if _example(ctx, f.path):
            continue
        text = ctx.repo.text(f.path)
        doc = next((d for d in yamlsrc.split_documents(text)
                    if d.first_line < f.line <= d.first_line + d.text.count("\n") + 1), None)
        m = _POOL_KIND.search(doc.text) if doc is not None else None
        if m is not None and not any((o.path, o.line, o.kind) == (f.path, f.line, m.group(1)) for o in out):
            out.append(Unconverted(
                f.path, f.line, m.group(1), "this document holds a Karpenter object migrator cannot read",
                "make the document readable (a template: keep each action that writes YAML on a line of its own, so "
                "it parses with its actions masked) and run migrator again, or write its Auto Mode twin by hand and "
                "remove the old object yourself"))
    return out


def _shell(ctx) -> list[Unconverted]:
    """v1 NodePools and EC2NodeClasses a shell heredoc applies (an older one beside them is a leftover nothing can
    apply: inventory/shellobjects.py and the standing say so)."""
    from ...inventory import shellobjects
    return _v1_pools(ctx, shellobjects.scan(ctx.repo),
                     lambda o: f"{o.kind} is applied from a shell heredoc in {o.where}, and migrator does not edit "
                               "shell commands",
                     "move the object into a YAML file or a kubectl_manifest (migrator writes the twins of those) and "
                     "run migrator again, or write its Auto Mode twin by hand and remove the old object yourself")


def _values(ctx) -> list[Unconverted]:
    """v1 NodePools and EC2NodeClasses passed to a chart in its values (a raw chart): inventory/valueobjects.py."""
    from ...inventory import valueobjects
    return _v1_pools(ctx, valueobjects.scan(ctx.repo),
                     lambda o: f"{o.kind} {o.name} is passed in the values of {o.release} (chart {o.chart or '?'}), "
                               "which migrator does not render",
                     "write its Auto Mode twin beside it in the same values (a NodeClass of eks.amazonaws.com/v1 and "
                     "a NodePool naming it) and run migrator again once it is applied, or move the objects into a "
                     "YAML file or a kubectl_manifest, which migrator converts")


def _v1_pools(ctx, objs, what, fix: str) -> list[Unconverted]:
    """The root's v1 NodePools and EC2NodeClasses among objects read where migrator does not write."""
    return [Unconverted(o.path, o.line, o.kind, what(o), fix) for o in objs
            if o.kind in KINDS and o.era == "v1" and not o.auto_mode and ctx.owns(o.path) and not _example(ctx, o.path)]


def _example(ctx, path: str) -> bool:
    """In an examples or test folder that nothing applies, outside the root's own folder: no cluster's
    (MIG-SRC-022)."""
    from ...inventory.kustomizations import unused_example
    example = unused_example(ctx.repo, path) if "/" in path else None
    return example is not None and not (ctx.root == example or ctx.root.startswith(example + "/"))


def _rendered_files(ctx) -> list[Unconverted]:
    """NodePools and EC2NodeClasses in a template that a local_file resource renders (`content = templatefile(...)`
    or `file(...)`) and migrator leaves alone (inventory/localfiles.py `why_not`: its rendered file committed too, an
    applier that applies other files, a filename not written literally). Those it reads get twins as any template."""
    from ...inventory.localfiles import scan
    repo = ctx.repo
    out: list[Unconverted] = []
    for target, r in scan(repo).items():
        text = repo.text(target) if target in repo.files else ""
        if not r.why_not or not ctx.owns(r.tf) or not _KARPENTER_API.search(text) or _example(ctx, target):
            continue
        b, dest = r.block, r.block.attr("filename")
        where = f" to {dest.source.strip()}" if dest is not None else ""
        for m in _TOP_KIND.finditer(text):
            if _auto_mode_at(text, m):
                continue                # an Auto Mode pool the team already wrote: AWS runs it
            out.append(Unconverted(
                target, text.count("\n", 0, m.start()) + 1, m.group(1),
                f"{b.address} renders this template{where} (line {hclsrc.line_of(repo.text(r.tf), b.start)} of "
                f"{r.tf}), and migrator leaves it alone: {r.why_not}",
                "write the Auto Mode twins in a template of their own rendered the same way (or in a YAML file "
                "or kubectl_manifest, which migrator converts), apply them, then remove the old objects"))
    return out


def _auto_mode_at(text: str, m: re.Match) -> bool:
    """Is the document holding this top-level kind an EKS Auto Mode NodePool (documents.auto_mode_text)?"""
    from ...inventory.documents import auto_mode_text
    starts = [0] + [d.end() for d in re.finditer(r"^---[ \t]*$", text[:m.start()], re.M)]
    end = re.compile(r"^---[ \t]*$", re.M).search(text, m.end())
    return auto_mode_text(m.group(1), "", text[starts[-1]:end.start() if end else len(text)])
