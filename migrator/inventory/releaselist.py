"""A generic `helm_release` whose add-ons list is a YAML (or JSON) file of the repository:

    locals { releases = yamldecode(file("${path.module}/helm-releases.yaml")) }
    resource "helm_release" "this" {
      for_each = { for r in local.releases.releases : r.name => r }
      version  = each.value.version
      values   = [yamlencode(try(each.value.values, {}))]
    }

The Karpenter item is found in the file (its chart entry names the chart); its version is a scalar of that file and
its values a subtree of it, edited there like any values file, so the release's HCL is never touched.
"""
from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq

from ..sources import hcl as hclsrc
from .documents import value_at
from .repo import Repo

_STEPS = r'((?:\.[A-Za-z_][\w-]*|\["[^"]*"\]|\[\d+\])*)'
# `{ for r in local.x.releases : r.name => r }` / `{ for k, v in local.x : k => v }` (the item itself is each.value)
_FOR = re.compile(r'^\s*\{\s*for\s+(?:[A-Za-z_]\w*\s*,\s*)?([A-Za-z_]\w*)\s+in\s+local\.([A-Za-z_][\w-]*)' + _STEPS +
                  r'\s*:\s*[^}]*?=>\s*\1\s*\}\s*$', re.S)
_REF = re.compile(r'^\s*local\.([A-Za-z_][\w-]*)' + _STEPS + r'\s*$')
_ENCODED = re.compile(r'^\s*(?:yamlencode|jsonencode)\(\s*(.*)\)\s*$', re.S)


@dataclass
class DecodedItem:
    """The add-ons item of one chart in a decoded YAML file."""
    path: str                   # the YAML file
    doc: Any                    # its DocSpan
    masked: Any
    obj: Any                    # the parsed document
    steps: tuple                # the item's keys / indexes from the document's root
    item: CommentedMap


def collection(repo: Repo, tf_path: str, for_each: hclsrc.Expr) -> tuple[str, Any, Any, Any, tuple] | None:
    """(file, DocSpan, Masked, document, steps) of the list or map a for_each takes from a decoded YAML/JSON file."""
    from .documents import _parse_yaml_docs
    from .sites import path_steps
    m = _FOR.match(for_each.source) or _REF.match(for_each.source)
    if m is None:
        return None
    name, tail = (m.group(2), m.group(3)) if m.re is _FOR else (m.group(1), m.group(2))
    for tp in repo.tf_in_dir(posixpath.dirname(tf_path)):
        f = repo.hcl(tp) if name in repo.text(tp) else None
        for blk in f.blocks if f else []:
            if blk.type != "locals" or name not in blk.attributes:
                continue
            e = blk.attributes[name].expr
            if e.kind != "call" or e.name not in ("yamldecode", "jsondecode") or len(e.items) != 1:
                return None
            inner = e.items[0]      # file(), or templatefile() (its `${ }` are masked, like any template)
            if inner.kind != "call" or inner.name not in ("file", "templatefile") or not inner.items:
                return None
            target = repo.resolve_file_arg(tp, inner.items[0])
            if target is None or target not in repo.files:
                return None
            docs = list(_parse_yaml_docs(repo, target, repo.text(target), 0, 0, target))
            if len(docs) != 1:
                return None
            doc, masked, obj = docs[0]
            return target, doc, masked, obj, tuple(path_steps(tail))
    return None


def items(repo: Repo, tf_path: str, for_each: hclsrc.Expr) -> list | None:
    """Every item of the decoded list or map (None: the for_each is no such file)."""
    got = collection(repo, tf_path, for_each)
    if got is None:
        return None
    path, doc, masked, obj, steps = got
    node = obj
    for k in steps:
        try:
            node = node[k]
        except (KeyError, IndexError, TypeError):
            return None
    pairs = list(enumerate(node)) if isinstance(node, CommentedSeq) else \
        list(node.items()) if isinstance(node, CommentedMap) else None
    if pairs is None:
        return None
    return [DecodedItem(path, doc, masked, obj, steps + (k,), item) for k, item in pairs
            if isinstance(item, CommentedMap)]


def charts(repo: Repo, tf_path: str, b: hclsrc.Block) -> list[tuple[str, str | None]] | None:
    """[(karpenter | karpenter-crd, its version as written)] the items of a decoded release list install, read
    from the file (no evaluator); None where the release's for_each is no such list or its chart is not an item key."""
    from .charts import _chart_name
    from .sites import item_path
    fe, chart, version = b.attr("for_each"), b.attr("chart"), b.attr("version")
    ck = item_path(chart.source) if chart is not None else None
    found = items(repo, tf_path, fe) if fe is not None and ck else None
    if found is None:
        return None
    vk = item_path(version.source) if version is not None else None
    out: dict[str, str | None] = {}
    for it in found:
        name = value_at(it.item, ck)
        name = _chart_name(name) if isinstance(name, str) and not it.masked.has_token(name) else None
        if name is not None and name not in out:
            v = value_at(it.item, vk) if vk else None
            out[name] = str(v) if isinstance(v, (str, int, float)) and not isinstance(v, bool) else None
    return sorted(out.items())


def karpenter_item(repo: Repo, tf_path: str, for_each: hclsrc.Expr, chart_keys: list, chart: str
                   ) -> DecodedItem | None:
    """The item of the decoded list whose chart entry names `chart`."""
    from .charts import _chart_name
    for it in items(repo, tf_path, for_each) or []:
        name = value_at(it.item, chart_keys)
        if isinstance(name, str) and _chart_name(name) == chart:
            return it
    return None


def scalar(repo: Repo, it: DecodedItem, keys: list) -> hclsrc.Expr | None:
    """A plain scalar of the item (its version) as a string literal spanning its bytes in the YAML file."""
    from .documents import scalar_at
    value = value_at(it.item, keys)
    if not isinstance(value, (str, int, float)) or isinstance(value, bool) or it.masked.has_token(value):
        return None
    got = scalar_at(repo.text(it.path), it.doc.start, it.doc.text, it.item, tuple(keys))
    if got is None:
        return None
    s, e, _ = got
    return hclsrc.Expr("string", s, e, repo.text(it.path)[s:e], value=str(value))


def values_keys(source: str) -> list | None:
    """The item keys a `values` list item reads whole: `yamlencode(try(each.value.values, {}))`,
    `yamlencode(lookup(each.value, "values", {}))`, `each.value.values` (as YAML text)."""
    from .sites import item_path
    m = _ENCODED.match(source)
    return item_path(m.group(1) if m else source)


def values_source(repo: Repo, it: DecodedItem, keys: list):
    """The item's values subtree as a values source of its YAML file; None where the item has none."""
    from ..sources import keytree
    from .charts import ValuesSource
    node = value_at(it.item, keys)
    if not isinstance(node, CommentedMap):
        return None
    parent = value_at(it.item, keys[:-1])
    line = it.doc.first_line + parent.lc.key(keys[-1])[0] + 1
    repo.template_paths.add(it.path)
    tree = keytree.yaml_tree(repo.text(it.path), it.path, it.doc.start, it.doc.end, it.obj,
                             under=it.steps + tuple(keys))
    return ValuesSource("file", it.path, line, tree=tree, masked=it.masked)
