"""Key trees: nested maps (YAML block mappings or HCL objects) with the exact lines of every entry.

Chart values live in many shapes (heredoc YAML, values files, Flux `spec.values`, `yamlencode({...})`).
All of them become a :class:`Tree` of :class:`Entry` objects, each knowing the file offsets of its key
token and of its lines, so :func:`rewrite` can rename, move and remove keys with span edits that keep
every other byte, whatever the shape.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml.comments import CommentedMap

from ..edits import line_end, line_start
from . import hcl as hclsrc


@dataclass
class Entry:
    key: str
    path: tuple
    key_start: int = 0
    key_end: int = 0
    start: int = 0              # offset of the entry's first line
    end: int = 0                # offset just after the entry's last line
    indent: str = ""            # file indentation of the key line
    children: dict[str, "Entry"] = field(default_factory=dict)
    is_map: bool = False        # value is a block mapping whose entries are listed in `children`
    editable: bool = True       # False for flow / single-line containers
    value: Any = None           # parsed value (YAML) or Expr (HCL)

    def get(self, path: tuple) -> "Entry | None":
        e = self
        for k in path:
            if not e.is_map or k not in e.children:
                return None
            e = e.children[k]
        return e

    def walk(self):
        yield self
        for c in self.children.values():
            yield from c.walk()


@dataclass
class Tree:
    text: str                   # the whole file text
    root: Entry
    syntax: str                 # yaml | hcl
    path: str                   # file the tree lives in
    step: str = "  "            # indentation step
    base_indent: str = ""       # indentation of root-level entries
    offset: Any = None          # YAML: (line, col) of the parsed document -> file offset
    style: Any = None           # YAML: sources.yaml.Style of the document (indentation of new values)
    unmask: Any = None          # placeholder tokens in parsed values -> their source text (YAML)
    tokens: dict = field(default_factory=dict)      # placeholder token -> HCL expression (HCL)
    assign: str = " = "         # HCL: how the object writes `key = value` (`key: value` in a jsonencode written as JSON)


# -- building ----------------------------------------------------------------------------------
def _trim_end(text: str, start: int, end: int, indent_len: int) -> int:
    """Move `end` back over trailing blank lines and comment lines that are not indented deeper."""
    while end > start:
        prev = line_start(text, end - 1)
        if prev <= start:
            break
        ln = text[prev:end]
        stripped = ln.strip()
        ind = len(ln) - len(ln.lstrip(" \t"))
        if not stripped or (stripped.startswith("#") and ind <= indent_len):
            end = prev
            continue
        break
    return end


def yaml_tree(text: str, path: str, region_start: int, region_end: int, obj: Any, strip: int = 0,
              under: tuple = ()) -> Tree:
    """Tree over a YAML mapping parsed from text[region_start:region_end] with `strip` columns dedented.

    `obj` is the ruamel document (line/column info relative to the dedented region). `under` selects a
    sub-mapping (e.g. ('spec', 'values') of a Flux HelmRelease) as the tree root.
    """
    line_offsets: list[tuple[int, int]] = []    # (file offset of line, chars stripped)
    pos = region_start
    for ln in text[region_start:region_end].splitlines(keepends=True):
        removed = 0
        while removed < strip and removed < len(ln) and ln[removed] in " \t":
            removed += 1
        line_offsets.append((pos, removed))
        pos += len(ln)
    line_offsets.append((pos, 0))

    def off(line: int, col: int) -> int:
        base, removed = line_offsets[min(line, len(line_offsets) - 1)]
        return base + removed + col

    node = obj
    for k in under:
        node = node[k]
    root = Entry(key="", path=(), start=region_start, end=region_end, is_map=isinstance(node, CommentedMap))
    if under:
        parent = obj
        for k in under[:-1]:
            parent = parent[k]
        kl, kc = parent.lc.item(under[-1]) if isinstance(parent, list) else parent.lc.key(under[-1])
        root.start = line_start(text, off(kl, kc))
        # the sub-mapping ends where the next key of it or of any ancestor begins (it may be the last key of its
        # parent, e.g. helm.valuesObject of an Argo CD source followed by spec.destination)
        nxt = None
        for depth in range(len(under), 0, -1):
            anc = obj
            for k in under[:depth - 1]:
                anc = anc[k]
            nxt = _next_key_offset(text, anc, under[depth - 1], off)
            if nxt is not None:
                break
        root.end = nxt if nxt is not None else region_end
    _fill_yaml(root, node, text, off, root.end)
    first = next(iter(root.children.values()), None)
    return Tree(text=text, root=root, syntax="yaml", path=path,
                base_indent=first.indent if first else "", step=_yaml_step(root), offset=off)


def _next_key_offset(text: str, m, key, off) -> int | None:
    """Offset of the line holding the key (or list item) after `key` in mapping (or sequence) m, if any."""
    if isinstance(m, list):
        if isinstance(key, int) and key + 1 < len(m):
            il, ic = m.lc.item(key + 1)
            return line_start(text, off(il, ic))
        return None
    keys = list(m.keys())
    i = keys.index(key)
    if i + 1 < len(keys):
        kl, kc = m.lc.key(keys[i + 1])
        return line_start(text, off(kl, kc))
    return None


def _fill_yaml(parent: Entry, node: Any, text: str, off, parent_end: int) -> None:
    if not isinstance(node, CommentedMap):
        return
    fa = getattr(node, "fa", None)
    if fa is not None and fa.flow_style():
        parent.editable = False
        return
    keys = list(node.keys())
    starts = []
    for k in keys:
        kl, kc = node.lc.key(k)
        ks = off(kl, kc)
        starts.append((k, kl, ks))
    floor = line_end(text, parent.key_start) if parent.path else parent.start
    for i, (k, kl, ks) in enumerate(starts):
        key_line = line_start(text, ks)
        indent = text[key_line:ks]
        ls = _with_comments_above(text, key_line, indent, floor)
        nxt = _with_comments_above(text, line_start(text, starts[i + 1][2]), indent, key_line) \
            if i + 1 < len(starts) else parent_end
        end = _trim_end(text, ls, nxt, len(indent))
        if end <= ls:
            end = line_end(text, ks)
        key_text = text[ks:ks + len(str(k))]
        key_end = ks + len(str(k)) if key_text == str(k) else _key_token_end(text, ks)
        e = Entry(key=str(k), path=parent.path + (str(k),), key_start=ks, key_end=key_end, start=ls, end=end,
                  indent=indent, value=node[k])
        if isinstance(node[k], CommentedMap):
            e.is_map = True
            _fill_yaml(e, node[k], text, off, end)
        parent.children[str(k)] = e


def _with_comments_above(text: str, ls: int, indent: str, floor: int) -> int:
    """Start of the comment lines (same indentation) directly above the line at ls."""
    while ls > floor:
        prev = line_start(text, ls - 1)
        ln = text[prev:ls]
        if prev < floor or not ln.startswith(indent + "#"):
            break
        ls = prev
    return ls


def _key_token_end(text: str, ks: int) -> int:
    """End of a (possibly quoted) YAML key token starting at ks."""
    q = text[ks]
    if q in "\"'":
        i = ks + 1
        while i < len(text) and text[i] != q:
            i += 2 if text[i] == "\\" and q == '"' else 1
        return i + 1
    i = text.find(":", ks)
    return i if i >= 0 else ks


def _yaml_step(root: Entry) -> str:
    for e in root.walk():
        if e.is_map and e.children and e.path:
            c = next(iter(e.children.values()))
            if len(c.indent) > len(e.indent):
                return " " * (len(c.indent) - len(e.indent))
    return "  "


def hcl_tree(text: str, path: str, obj: hclsrc.Expr) -> Tree:
    """Tree over an HCL object expression (e.g. the argument of yamlencode())."""
    root = Entry(key="", path=(), start=obj.start, end=obj.end, is_map=True)
    _fill_hcl(root, obj, text)
    first = next(iter(root.children.values()), None)
    step = "  "
    for e in root.walk():
        if e.is_map and e.children and e.path:
            c = next(iter(e.children.values()))
            if len(c.indent) > len(e.indent):
                step = " " * (len(c.indent) - len(e.indent))
                break
    assign = " = "
    if obj.entries:
        e = obj.entries[0]
        between = text[e.key_end:e.value.start].lstrip('"')
        if between.strip() == ":":
            assign = ": " if not between.startswith((" ", "\t")) else " : "
    return Tree(text=text, root=root, syntax="hcl", path=path, base_indent=first.indent if first else "",
                step=step, assign=assign)


def _fill_hcl(parent: Entry, obj: hclsrc.Expr, text: str) -> None:
    lines = [hclsrc.line_of(text, e.start) for e in obj.entries]
    if len(set(lines)) != len(lines) or (obj.entries and hclsrc.line_of(text, obj.start) == lines[0]):
        parent.editable = False
    for e in obj.entries:
        ls = line_start(text, e.start)
        ent = Entry(key=e.key, path=parent.path + (e.key,), key_start=e.key_start, key_end=e.key_end, start=ls,
                    end=line_end(text, e.end), indent=text[ls:e.start], value=e.value)
        if e.value.kind == "object":
            ent.is_map = True
            _fill_hcl(ent, e.value, text)
        parent.children[e.key] = ent


# -- rewriting ----------------------------------------------------------------------------------
@dataclass
class Op:
    """One change to a key tree.

    rename: move the entry at `src` to `dst` (same value text); remove: delete `src`;
    set: replace the scalar value at `src` with `value`; replace: put `dst[-1]: value` where `src` was;
    add: insert `dst: value` (creating missing parent maps), before the sibling `before` or after the sibling
    `after` when it exists, else after the last entry.
    """
    kind: str                   # rename | remove | set | replace | add
    src: tuple = ()
    dst: tuple = ()
    reason: str = ""
    value: Any = None
    after: str | None = None
    before: str | None = None
    lines: tuple[str, str] | None = None    # add, YAML: (text of the entry in another YAML tree, its indent),
                                            # re-indented as written (comments kept) instead of rendering `value`


@dataclass
class _Value:
    """A value to render (add / replace), as opposed to an existing entry to move."""
    value: Any
    lines: tuple[str, str] | None = None


@dataclass
class Outcome:
    edits: list[tuple[int, int, str]] = field(default_factory=list)
    applied: list[Op] = field(default_factory=list)
    problems: list[tuple[Op, Entry, str]] = field(default_factory=list)   # (op, entry, why not)


def _key_text(tree: Tree, key: str) -> str:
    if tree.syntax == "hcl":
        return hclsrc.object_key(key)
    from .yaml import format_scalar
    return format_scalar(key)


def _moved_lines(tree: Tree, e: Entry, new_key: str, new_indent: str) -> str:
    text = tree.text
    body = text[e.start:e.end]
    rel_s, rel_e = e.key_start - e.start, e.key_end - e.start
    body = body[:rel_s] + _key_text(tree, new_key) + body[rel_e:]
    out = []
    for i, ln in enumerate(body.splitlines(keepends=True)):
        if i == 0:
            out.append(new_indent + ln[len(e.indent):])
            continue
        if ln.startswith(e.indent):
            out.append(new_indent + ln[len(e.indent):])
        else:
            out.append(ln)
    s = "".join(out)
    return s if s.endswith("\n") else s + "\n"


def _open_line(tree: Tree, key: str, indent: str) -> str:
    return f"{indent}{_key_text(tree, key)}:\n" if tree.syntax == "yaml" else f"{indent}{_key_text(tree, key)}{tree.assign}{{\n"


def _close_line(tree: Tree, indent: str) -> str:
    return "" if tree.syntax == "yaml" else f"{indent}}}\n"


def _child_indent(tree: Tree, e: Entry) -> str:
    if e.children:
        return next(iter(e.children.values())).indent
    if not e.path:
        return tree.base_indent
    return e.indent + tree.step


def rewrite(tree: Tree, ops: list[Op]) -> Outcome:
    out = Outcome()
    root = tree.root
    deleted: set[tuple] = set()
    # inserts grouped by anchor: (offset, indent) -> nested {key: (lines | dict)}
    groups: dict[tuple[int, str], dict] = {}
    # (anchor path, the first key a rename opens below it) -> where that new map is written: two renames into one
    # new map (controller.logLevel and webhook.logLevel -> logConfig.logLevel.*) write it once
    opened: dict[tuple[tuple, str], int] = {}
    for op in ops:
        if op.kind == "add":
            _add(tree, op, groups, out)
            continue
        e = root.get(op.src)
        if e is None:
            continue
        parent = root.get(op.src[:-1])
        if not parent.editable:
            out.problems.append((op, e, "the map holding it is written in flow style ({...})"))
            continue
        if op.kind == "remove":
            deleted.add(e.path)
            out.applied.append(op)
            continue
        if op.kind == "set":
            span = value_span(tree, e)
            if span is None:
                out.problems.append((op, e, "its value is not a one-line scalar"))
                continue
            out.edits.append((span[0], span[1], render_scalar(tree, op.value, tree.text[span[0]:span[1]])))
            out.applied.append(op)
            continue
        if op.kind == "replace":
            ls = line_start(tree.text, e.key_start)
            out.edits.append((ls, e.end, _render_group(tree, {op.dst[-1]: _Value(op.value)}, e.indent)))
            out.applied.append(op)
            continue
        existing = root.get(op.dst)
        if existing is not None:
            if _norm(existing.value) == _norm(e.value):
                deleted.add(e.path)
                out.applied.append(op)
            else:
                out.problems.append((op, e, f"{'.'.join(op.dst)} is also set, to a different value"))
            continue
        if op.dst[:-1] == op.src[:-1]:
            out.edits.append((e.key_start, e.key_end, _key_text(tree, op.dst[-1])))
            out.applied.append(op)
            continue
        # deepest existing ancestor of the destination
        depth = len(op.dst) - 1
        while depth > 0 and (root.get(op.dst[:depth]) is None or not root.get(op.dst[:depth]).is_map):
            depth -= 1
        anchor = root.get(op.dst[:depth])
        if not anchor.editable:
            out.problems.append((op, e, f"{'.'.join(op.dst[:depth]) or 'the values'} is written in flow style"))
            continue
        missing = op.dst[depth:-1]
        ind = _child_indent(tree, anchor)
        if missing and (anchor.path, missing[0]) in opened:
            where = opened[(anchor.path, missing[0])]   # a map an earlier rename opens here: into the same one
        elif op.src[:depth] == op.dst[:depth] and len(op.src) > depth + 1 and anchor.children:
            before = anchor.children[op.src[depth]]
            where = before.start
        else:
            where = _end_of_children(tree, anchor)
        if missing:
            opened[(anchor.path, missing[0])] = where
        group = groups.setdefault((where, ind), {})
        node = group
        for k in missing:
            node = node.setdefault(k, {})
        node[op.dst[-1]] = e
        deleted.add(e.path)
        out.applied.append(op)
    # a map whose entries are all removed goes too
    changed = True
    while changed:
        changed = False
        for ent in root.walk():
            if ent.path and ent.is_map and ent.children and ent.path not in deleted \
                    and all(c.path in deleted for c in ent.children.values()) \
                    and not _receives(groups, ent):
                deleted -= {c.path for c in ent.children.values()}
                deleted.add(ent.path)
                changed = True
    for p in deleted:
        if any(p[:i] in deleted for i in range(1, len(p))):
            continue
        ent = root.get(p)
        out.edits.append((ent.start, ent.end, ""))
    for (where, ind), group in groups.items():
        lines = _render_group(tree, group, ind)
        if where > 0 and tree.text[where - 1] != "\n":
            lines = ("\r\n" if "\r\n" in tree.text else "\n") + lines     # the file's last line had no newline
        out.edits.append((where, where, lines))
    return out


def _receives(groups: dict, ent: Entry) -> bool:
    return any(where > ent.start and where < ent.end for where, _ in groups)


def _end_of_children(tree: Tree, anchor: Entry) -> int:
    if anchor.children:
        return max(c.end for c in anchor.children.values())
    return anchor.end


def _add(tree: Tree, op: Op, groups: dict, out: Outcome) -> None:
    root = tree.root
    if root.get(op.dst) is not None:
        return
    depth = len(op.dst) - 1
    while depth > 0 and (root.get(op.dst[:depth]) is None or not root.get(op.dst[:depth]).is_map):
        depth -= 1
    anchor = root.get(op.dst[:depth])
    if depth < len(op.dst) - 1 and root.get(op.dst[:depth + 1]) is not None:
        out.problems.append((op, anchor, f"{'.'.join(op.dst[:depth + 1])} is not a block mapping"))
        return
    if not anchor.editable:
        out.problems.append((op, anchor, f"{'.'.join(op.dst[:depth]) or 'the object'} is written in flow style"))
        return
    ind = _child_indent(tree, anchor)
    last = depth == len(op.dst) - 1
    before = anchor.children.get(op.before) if op.before and last else None
    sibling = anchor.children.get(op.after) if op.after and last else None
    if before is not None:
        where = line_start(tree.text, before.key_start)
    else:
        where = sibling.end if sibling is not None else _end_of_children(tree, anchor)
    node = groups.setdefault((where, ind), {})
    for k in op.dst[depth:-1]:
        node = node.setdefault(k, {})
    node[op.dst[-1]] = _Value(op.value, op.lines if tree.syntax == "yaml" else None)
    out.applied.append(op)


def value_span(tree: Tree, e: Entry) -> tuple[int, int] | None:
    """Span of a one-line scalar value (YAML: after `key:` up to a comment; HCL: the expression)."""
    if tree.syntax == "hcl":
        v = e.value
        return (v.start, v.end) if isinstance(v, hclsrc.Expr) and v.kind in ("string", "number", "bool") else None
    if e.is_map or isinstance(e.value, (dict, list)):
        return None
    text = tree.text
    i = text.find(":", e.key_end)
    if i < 0:
        return None
    i += 1
    eol = line_end(text, i)
    line = text[i:eol].rstrip("\r\n")
    start = i + len(line) - len(line.lstrip(" \t"))
    body = text[start:i + len(line)]
    cut = body.find(" #")
    if cut >= 0:
        body = body[:cut]
    body = body.rstrip(" \t")
    if not body or body[0] in "|>&*!{[":
        return None
    return start, start + len(body)


def render_scalar(tree: Tree, value: Any, old: str = "") -> str:
    """A scalar in the tree's syntax, keeping the quote style of the value it replaces."""
    if tree.syntax == "hcl":
        return hclsrc.render_value(value, tree.tokens)
    from .yaml import _double, _single, format_scalar
    if isinstance(value, str) and old[:1] == '"':
        return _double(value)
    if isinstance(value, str) and old[:1] == "'":
        return _single(value)
    return format_scalar(value)


def _render_value_lines(tree: Tree, key: str, value: Any, indent: str) -> str:
    if tree.syntax == "hcl":
        return f"{indent}{_key_text(tree, key)}{tree.assign}{hclsrc.render_value(value, tree.tokens, indent, tree.step)}\n"
    from .yaml import Emitter, Style
    style = tree.style or Style(indent=len(tree.step))
    text = Emitter(style).emit({key: value}, base_indent=len(indent)).text
    return tree.unmask(text) if tree.unmask else text


def _reindent(text: str, old: str, new: str) -> str:
    out = [new + ln[len(old):] if ln.startswith(old) else ln for ln in text.splitlines(keepends=True)]
    s = "".join(out)
    return s if s.endswith("\n") else s + "\n"


def _render_group(tree: Tree, group: dict, indent: str) -> str:
    out = []
    for k, v in group.items():
        if isinstance(v, _Value) and v.lines is not None:
            out.append(_reindent(v.lines[0], v.lines[1], indent))
        elif isinstance(v, _Value):
            out.append(_render_value_lines(tree, k, v.value, indent))
        elif isinstance(v, Entry):
            out.append(_moved_lines(tree, v, k, indent))
        else:
            out.append(_open_line(tree, k, indent))
            out.append(_render_group(tree, v, indent + tree.step))
            out.append(_close_line(tree, indent))
    return "".join(out)


def _norm(v: Any) -> Any:
    if isinstance(v, hclsrc.Expr):
        return v.source
    if isinstance(v, dict):
        return {str(k): _norm(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_norm(x) for x in v]
    return str(v)
