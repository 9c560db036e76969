"""Auto Mode twins of pools a module's chart renders from its inputs (container `chart_values`, the eks-data-addons
module's `karpenter_resources_helm_config`: inventory/dataaddons.py).

That chart renders only Karpenter's kinds, so the twins cannot live in the same container: they are written as
Terraform resources of their own in one file beside the module call (`eks-auto-mode-pools.tf`), a `kubectl_manifest`
where the folder already uses that provider, else a `kubernetes_manifest`, with the values' Terraform expressions
kept as expressions. At the cutover, each release whose pool has its twin leaves the input map (its entry's lines);
when none is left, the switch and the map go too.
"""
from __future__ import annotations

import posixpath
import re

from ... import knowledge
from ...edits import NewFile, TextEdit
from ...sources import hcl as hclsrc
from ...sources import yaml as yamlsrc

FACTS = knowledge.load("auto_mode")
DATA = knowledge.load("data_addons")
CONTAINER = "chart_values"


def _provider(repo, d: str) -> str:
    """kubectl_manifest where the folder already uses the kubectl provider, else kubernetes_manifest."""
    for p in repo.files:
        if (posixpath.dirname(p) or ".") == d and p.endswith(".tf"):
            t = repo.text(p)
            if 'resource "kubectl_manifest"' in t or re.search(r"source\s*=\s*\"(gavinbunney|alekc)/kubectl\"", t):
                return "kubectl_manifest"
    return "kubernetes_manifest"


def _label(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", text)


def place(rule, items: list) -> None:
    """Write the twins of `items` ((manifest, converted) pairs) beside their module calls."""
    by_dir: dict[str, list] = {}
    for m, conv in items:
        by_dir.setdefault(posixpath.dirname(m.tf_path) or ".", []).append((m, conv))
    for d, pairs in sorted(by_dir.items()):
        path = posixpath.join(d, FACTS["naming"]["pools_file"]) if d != "." else FACTS["naming"]["pools_file"]
        kind = _provider(rule.repo, d)
        blocks = []
        for m, conv in pairs:
            body = m.masked.unmask(yamlsrc.Emitter(yamlsrc.Style()).emit(conv.obj).text)
            if "\n" not in body.rstrip("\n") or "EOT" in body:
                continue
            label = _label(f"{m.entry_key}_{conv.kind.lower()}{FACTS['naming']['tf_label_suffix']}")
            inner = "".join(("    " + ln if ln.strip() else "") + "\n" for ln in body.rstrip("\n").split("\n"))
            if kind == "kubectl_manifest":
                attr = f"  yaml_body = <<-EOT\n{inner}  EOT\n"
            else:
                attr = f"  manifest = yamldecode(<<-EOT\n{inner}  EOT\n  )\n"
            blocks.append(f'# {conv.kind} {conv.obj["metadata"]["name"]}: the EKS Auto Mode twin of {m.kind} '
                          f'{m.name} ({m.block.address}, release {m.entry_key})\n'
                          f'resource "{kind}" "{label}" {{\n{attr}}}\n')
        if not blocks:
            continue
        nl = "\n"
        if path in rule.repo.files:
            text = rule.repo.text(path)
            nl = rule.repo.files[path].newline
            lead = "" if text.endswith("\n") else "\n"
            rule.res.edits.append(TextEdit(path, len(text), len(text),
                                           (lead + "\n" + "\n".join(blocks)).replace("\n", nl), "auto/nodepools"))
        else:
            head = ("# EKS Auto Mode's NodeClasses and NodePools for the pools the eks-data-addons module renders "
                    "(written by migrator)\n\n")
            rule.res.edits.append(NewFile(path, head + "\n".join(blocks), "auto/nodepools"))


def remove(rule, moved: list) -> None:
    """The cutover: the releases whose pools all have their twins leave the input map; the switch and the map go
    when nothing is left in it."""
    by_block: dict[tuple, list] = {}
    for m in moved:
        by_block.setdefault((m.tf_path, m.block.start), []).append(m)
    for (p, _), ms in sorted(by_block.items()):
        text = rule.repo.text(p)
        b = ms[0].block
        cfg = b.attr(DATA["input"])
        keys = {m.entry_key for m in ms}
        entries = cfg.entries if cfg is not None and cfg.kind == "object" else []
        if not entries:
            continue
        every = {e.key for e in entries}
        # a release stays while one of its objects stays (it renders both)
        staying = {m.entry_key for m in rule.old if m.container == CONTAINER and m.tf_path == p
                   and m.block.start == b.start and m not in moved}
        gone = keys - staying
        if gone == every:
            for name in (DATA["switch"], DATA["input"]):
                a = b.attributes.get(name)
                if a is not None:
                    rule.res.edits.append(TextEdit(p, _line_start(text, a.start), _line_end(text, a.end), "",
                                                   "auto/nodepools"))
            continue
        for e in entries:
            if e.key in gone:
                rule.res.edits.append(TextEdit(p, _line_start(text, e.start), _line_end(text, e.end), "",
                                               "auto/nodepools"))


def _line_start(text: str, at: int) -> int:
    return text.rfind("\n", 0, at) + 1


def _line_end(text: str, at: int) -> int:
    nl = text.find("\n", at)
    return len(text) if nl < 0 else nl + 1


def entry_line(text: str, e: hclsrc.ObjEntry) -> int:
    return hclsrc.line_of(text, e.start)
