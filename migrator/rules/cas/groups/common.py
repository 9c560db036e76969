"""What the node-group rooms share: the rule's name, the result the runbook reads, a group's EKS name, and small
readers of HCL text (spans of entries and lines, what a block reads)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ....cas import FACTS, NodeGroup
from ....edits import Edit, TextEdit, comments_above, line_end, line_start
from ....model import Finding
from ....sources import hcl as hclsrc


RULE = "cas/nodegroups"


KEEP_MIN = FACTS["install"]["kept_group_min"]


@dataclass
class GroupsResult:
    edits: list[Edit] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    drained: list[tuple[str, object, object, object]] = field(default_factory=list)   # (group, min, desired, max) before
    eks_names: dict = field(default_factory=dict)   # group -> (EKS node group name or part, how) for aws-cli
    kept: str = ""
    kept_sizes: tuple = ()
    kept_to: tuple = ()                    # (min, desired, max) the kept group is raised to, when it is
    kept_self: bool = False                # the kept group is self-managed (an Auto Scaling group, not EKS's)
    removed: list[str] = field(default_factory=list)
    targets: list[tuple[str, str]] = field(default_factory=list)
    eksctl: list[str] = field(default_factory=list)      # eksctl groups removed (the runbook deletes them)


def _entries(e: hclsrc.Expr) -> dict[str, hclsrc.ObjEntry]:
    return {x.key: x for x in e.entries} if e is not None and e.kind == "object" else {}


def _tuple_without(text: str, path: str, lst: hclsrc.Expr, items: list) -> list[TextEdit]:
    """A list literal without some items: on one line, the list written again from its other items; over several
    lines, each item's line goes (with the comments above it)."""
    if "\n" not in text[lst.start:lst.end]:
        rest = [i.source.strip() for i in lst.items if not any(i is x for x in items)]
        return [TextEdit(path, lst.start, lst.end, "[" + ", ".join(rest) + "]", RULE)]
    return [TextEdit(path, comments_above(text, line_start(text, i.start)), line_end(text, i.end), "", RULE)
            for i in items]


def _named_as(g: NodeGroup) -> list[str]:
    """How other blocks of its module name a node group: its resource (with its instance key when the block makes
    several), or its item of the eks module's group map."""
    if g.source == "module" and g.block is not None and g.entry is not None:
        return [f'{g.block.address}.{g.attr}["{g.entry.key}"]']
    if g.source == "resource" and g.block is not None:
        return [g.address] if g.instance else [g.block.address]
    return []


def _uncommented(text: str) -> str:
    """HCL text without its comments (a `#` or `//` inside a string stays)."""
    return _STRING_OR_COMMENT.sub(lambda m: m.group(1) or "", text)


def _code(text: str) -> str:
    """HCL text without its comments and plain strings (an index key like `["spot"]` stays): a group named in a
    description or a comment is not read."""
    return _PLAIN_STRING.sub('""', _uncommented(text))


def _reads(text: str, name: str) -> bool:
    return re.search(re.escape(name) + (r"(?![\w-])" if not name.endswith("]") else ""), text) is not None


def _locals_read(body: str, locals_: dict, repo, depth: int = 2) -> dict:
    """The locals a block's text reads, and the locals those read (two levels): {name: (file, Attribute)}."""
    out: dict = {}
    frontier = body
    for _ in range(depth):
        found = {n: locals_[n] for n in re.findall(r"\blocal\.([\w-]+)", frontier) if n in locals_ and n not in out}
        out.update(found)
        frontier = "".join(repo.text(p)[a.start:a.end] for p, a in found.values())
    return out


def _entry_span(text: str, e: hclsrc.ObjEntry) -> tuple[int, int]:
    """A map item's lines with the comments above it (and one blank line before them)."""
    return _lines_span(text, e.start, e.end)


def _lines_span(text: str, start: int, end: int) -> tuple[int, int]:
    """The lines of an item (a map entry, an argument) with the comments above it and one blank line before them."""
    s = comments_above(text, line_start(text, start))
    if s > 0 and not text[line_start(text, s - 1):s].strip():
        s = line_start(text, s - 1)
    return s, line_end(text, end)


def _objects(f) -> list[hclsrc.Expr]:
    """Every object expression of a file (in blocks, nested blocks and top-level attributes, at any depth)."""
    out, stack = [], [a.expr for a in f.attributes.values()] + [a.expr for b in f.walk() for a in b.attributes.values()]
    while stack:
        e = stack.pop()
        if e.kind in ("object", "tuple"):
            out.append(e)
        stack.extend(e.items)
        stack.extend(en.value for en in e.entries)
    return out


def _plain(b: hclsrc.Block) -> dict:
    return {k: a.expr for k, a in b.attributes.items()}


def _known_ends(e, key) -> tuple[str, str]:
    """What a name template is known to start and end with: its literal text, and `each.key` where the group is a
    for_each instance, up to the first part that is an expression read elsewhere."""
    if e is None or e.kind != "string" or not e.parts:
        return "", ""

    def known(part: tuple[bool, str]) -> str | None:
        interp, text = part
        if not interp:
            return text
        return str(key) if key is not None and re.fullmatch(r"\$\{\s*each\.key\s*\}", text) else None

    ends = []
    for parts in (e.parts, list(reversed(e.parts))):
        out = []
        for part in parts:
            k = known(part)
            if k is None:
                break
            out.append(k)
        ends.append("".join(out if parts is e.parts else reversed(out)))
    return ends[0], ends[1]


def eks_name(g) -> tuple[str, str]:
    """The name EKS knows a Terraform node group by, for aws-cli, and how it is known: ("exact") where the root fixes
    it (aws_eks_node_group node_group_name, a module group with use_name_prefix = false); ("prefix") what the name
    starts with (the terraform-aws-modules groups are named "<name>-<suffix>" by default); ("suffix") what it ends
    with, where only its head is an expression (`"${local.prefix}-ng-${each.key}"`)."""
    if g.source == "resource" and g.block is not None:
        n = g.literal("name")           # node_group_name as the module (or the for_each item) states it
        if g.block.attr("node_group_name") is not None and isinstance(n, str) and n:
            return n, "exact"
        head, tail = _known_ends(g.block.attr("node_group_name"), g.key)
        if head:
            return head, "prefix"
        if len(tail) > 1:
            return tail, "suffix"
        pre = g.block.attr("node_group_name_prefix")
        if pre is not None and pre.literal():
            return str(pre.literal()), "prefix"
        return g.name, "prefix"
    if g.source == "module":
        name = g.literal("name") if isinstance(g.literal("name"), str) else g.name
        entries = {x.key: x.value for x in g.entry.value.entries} if g.entry is not None else {}
        prefix = entries.get("use_name_prefix")
        if prefix is not None and prefix.literal() is False:
            return name, "exact"
        return f"{name}-", "prefix"
    return g.name, "exact"


_STRING_OR_COMMENT = re.compile(r'("(?:[^"\\\n]|\\.)*")|#[^\n]*|//[^\n]*|/\*.*?\*/', re.S)


_PLAIN_STRING = re.compile(r'(?<!\[)"(?:[^"\\$\n]|\\.|\$(?!\{))*"')
