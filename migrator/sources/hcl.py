"""HCL with exact character spans.

This module is the only place that knows the HCL parsers. Everything else sees :class:`HclFile`,
:class:`Block`, :class:`Attribute` and :class:`Expr`, each carrying `start`/`end` offsets into the file text.

Two parsers build that model: tree-sitter-hcl (:func:`parse`, used for every file read; a C parser, about
20 times faster than the pure-Python one on large trees, exact byte spans) and python-hcl2's Lark tree
(`hcl_lark.parse`, an independent second parser: the re-parse check of every patched file, see
`validate.reparse`). The model both build is in `hclmodel`. tests/test_hcl_parsers.py proves both give the same model on every HCL file of the
fixtures.
"""
from __future__ import annotations

import bisect

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from .hclmodel import (Attribute, Block, Expr, Heredoc, HclFile, HclParseError, ObjEntry,  # noqa: F401
                       _heredoc, _unescape)


# the files written in HCL's native syntax: Terraform, its variable files, Terragrunt configuration
HCL_FILES = (".tf", ".tofu", ".tfvars", ".hcl")
# Terraform code (OpenTofu reads .tofu files as it reads .tf)
TF_CODE = (".tf", ".tofu")


# functions that turn an HCL object into YAML or JSON text (JSON is YAML too): chart values, a kubectl_manifest body
ENCODERS = ("yamlencode", "jsonencode")


def encoded_object(e: Expr | None) -> Expr | None:
    """The object literal of a `yamlencode({...})` / `jsonencode({...})` call, else None."""
    if e is not None and e.kind == "call" and e.name in ENCODERS and e.items and e.items[0].kind == "object":
        return e.items[0]
    return None


def list_items(e: Expr | None) -> list[Expr]:
    """The elements of a list as written, in order: a tuple's items, through `concat()` of lists; a part that is not
    written as a list (`var.extra_values`) is one element of its own (the reader sees an expression it cannot read)."""
    if e is None:
        return []
    if e.kind == "tuple":
        return list(e.items)
    if e.kind == "call" and e.name == "concat":
        return [x for a in e.items for x in list_items(a)]
    return [e]


def text_of(text: str, e: Expr | None) -> str | None:
    """The text an HCL string or heredoc holds, as Terraform reads it (a `<<-` heredoc without its common indent;
    interpolations in a heredoc left as written); None for other expressions and interpolated quoted strings."""
    if e is not None and e.kind == "heredoc" and e.heredoc is not None:
        h = e.heredoc
        lines = text[h.body_start:h.body_end].splitlines(keepends=True)
        return "".join(ln[h.indent:] if h.trim else ln for ln in lines)
    return e.value if e is not None and e.kind == "string" and e.value is not None else None


def yaml_in(text: str, e: Expr | None) -> dict | None:
    """The YAML map an HCL string or heredoc holds (helm values written as text), its interpolations masked so they
    read as scalars; None when it is no YAML map."""
    from .templates import TemplateError, mask
    from .yaml import YamlParseError, load
    body = text_of(text, e)
    if body is None:
        return None
    try:
        got = load(mask(body).text)
    except (TemplateError, YamlParseError):
        return None
    return got if isinstance(got, dict) else None


def at_path(b: Block, path: str) -> Expr | None:
    """The expression a block writes at an input path (`karpenter.enabled`: the key `enabled` of its object input
    `karpenter`), None when it does not write one there."""
    e = b.attr(path.split(".")[0])
    for key in path.split(".")[1:]:
        e = next((x.value for x in e.entries if x.key == key), None) if e is not None and e.kind == "object" else None
    return e


def line_of(text: str, offset: int) -> int:
    """1-based line number of an offset."""
    return text.count("\n", 0, offset) + 1


def parse(text: str) -> HclFile:
    """The span model of an HCL file (tree-sitter-hcl); HclParseError if the file does not parse. The model is never
    changed by its readers, so the same text is parsed once: a plan reads a patched file again in its checks, its
    cycle test and its second pass."""
    return _parse(text)


@lru_cache(maxsize=512)
def _parse(text: str) -> HclFile:
    return _TreeSitter(text).file()


def conditional(e: Expr | None) -> tuple[Expr, Expr, Expr] | None:
    """The condition and the two results of a conditional expression (`c ? a : b`), as the parser splits it (never a
    pattern cut: `var.a && (var.b ? 1 : 0) > 0 ? 1 : 0` has one top-level condition); spans are the file's."""
    if e is None or e.kind != "other" or "?" not in e.source:
        return None
    prefix = "x = "
    ts = _TreeSitter(prefix + e.source + "\n")
    node = _top_expression(ts)
    if node is None:
        return None
    while node.type == "expression" and len(node.named_children) == 1 and node.children[0].type != "(":
        node = node.named_children[0]
    if node.type != "conditional":
        return None
    parts = [ts.expr(c) for c in node.named_children if c.type == "expression"]
    if len(parts) != 3:
        return None
    shift = e.start - len(prefix)
    return tuple(_shifted(p, shift) for p in parts)          # type: ignore[return-value]


@dataclass(frozen=True)
class ForExpr:
    """A `for` expression as the parser splits it: `[for v in c : value]` (key None) or `{for k, v in c : key =>
    value}`; `index` is the first name where two are written (`for k, v`), `item` the element's."""
    index: str | None
    item: str
    collection: Expr
    key: Expr | None
    value: Expr
    grouped: bool           # `value...`: each key holds the list of its values
    condition: Expr | None


def for_expr(e: Expr | None) -> ForExpr | None:
    """The parts of a `for` expression (spans are the file's); None for anything else."""
    if e is None or e.kind != "other" or not e.source.lstrip().startswith(("[", "{")) or "for" not in e.source:
        return None
    prefix = "x = "
    ts = _TreeSitter(prefix + e.source + "\n")
    node = _top_expression(ts)
    while node is not None and node.type in ("expression", "for_expr") and len(node.named_children) == 1:
        node = node.named_children[0]
    if node is None or node.type not in ("for_tuple_expr", "for_object_expr"):
        return None
    intro = next(c for c in node.named_children if c.type == "for_intro")
    names = [ts.src(c) for c in intro.named_children if c.type == "identifier"]
    collection = next(c for c in intro.named_children if c.type == "expression")
    parts = [c for c in node.named_children if c.type == "expression"]
    cond = next((c for c in node.named_children if c.type == "for_cond"), None)
    cond_expr = next((c for c in cond.named_children if c.type == "expression"), None) if cond is not None else None
    shift = e.start - len(prefix)
    key = _shifted(ts.expr(parts[0]), shift) if node.type == "for_object_expr" else None
    return ForExpr(index=names[0] if len(names) == 2 else None, item=names[-1],
                   collection=_shifted(ts.expr(collection), shift), key=key,
                   value=_shifted(ts.expr(parts[-1]), shift),
                   grouped=any(c.type == "ellipsis" for c in node.children),
                   condition=_shifted(ts.expr(cond_expr), shift) if cond_expr is not None else None)


def binary(source: str) -> tuple[str, str, str] | None:
    """(left, operator, right) of an expression whose top level is a binary operation, as the parser splits it
    (`var.a && var.b || var.c`: `var.a && var.b`, `||`, `var.c`; precedence and parentheses are the parser's);
    parentheses around the whole expression are looked through. None for anything else."""
    ts = _TreeSitter("x = " + source + "\n")
    node = _top_expression(ts)
    if node is None:
        return None
    while node.type in ("expression", "operation") and len(node.named_children) == 1:
        node = node.named_children[0]           # `(a && b)`: the parenthesised expression's own
    if node.type != "binary_operation":
        return None
    op = next((c for c in node.children if not c.is_named and c.type not in ("(", ")")), None)   # not an operand's
    if op is None:
        return None
    start, end = ts.span(node)
    at, after = ts.span(op)
    return ts.text[start:at].strip(), ts.text[at:after], ts.text[after:end].strip()


def _top_expression(ts: "_TreeSitter"):
    """The value node of the one attribute `x = <expression>` a _TreeSitter holds; None where it does not parse."""
    root = _ts_parser().parse(ts.data).root_node
    if root.has_error:
        return None
    node = root
    for t in ("body", "attribute"):
        node = next((c for c in node.named_children if c.type == t), None)
        if node is None:
            return None
    return [c for c in node.named_children if c.type == "expression"][-1]


def _shifted(e: Expr, by: int) -> Expr:
    import dataclasses
    heredoc = e.heredoc and dataclasses.replace(e.heredoc, body_start=e.heredoc.body_start + by,
                                                body_end=e.heredoc.body_end + by)
    return dataclasses.replace(e, start=e.start + by, end=e.end + by, heredoc=heredoc,
                               items=[_shifted(i, by) for i in e.items],
                               entries=[dataclasses.replace(x, key_start=x.key_start + by, key_end=x.key_end + by,
                                                            start=x.start + by, end=x.end + by,
                                                            value=_shifted(x.value, by)) for x in e.entries])


# --------------------------------------------------------------------------------------------- tree-sitter
@lru_cache(maxsize=1)
def _ts_parser():
    import tree_sitter
    import tree_sitter_hcl
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_hcl.language()))


@lru_cache(maxsize=8)
def code_of(text: str) -> str:
    """The text with every comment (`#`, `//`, `/* */`) blanked to spaces, line breaks kept: the same offsets, for a
    search of what the code reads (a comment naming `module.karpenter` reads nothing). tree-sitter-hcl finds the
    comments, so `#` inside a string or a heredoc stays."""
    import tree_sitter
    import tree_sitter_hcl
    ts = _TreeSitter(text)
    root = _ts_parser().parse(ts.data).root_node
    lang = tree_sitter.Language(tree_sitter_hcl.language())
    query = tree_sitter.Query(lang, "(comment) @c")
    cursor = getattr(tree_sitter, "QueryCursor", None)
    caps = cursor(query).captures(root) if cursor is not None else query.captures(root)
    nodes = caps.get("c", []) if isinstance(caps, dict) else [n for n, _ in caps]
    out = list(text)
    for n in nodes:
        a, b = ts.span(n)
        for i in range(a, b):
            if out[i] not in "\r\n":
                out[i] = " "
    return "".join(out)


_TRAILERS = frozenset(("get_attr", "index", "splat"))
_CONTINUATION = re.compile(rb"[\x80-\xbf]")
_SKIP = frozenset(("comment",))


class _TreeSitter:
    """tree-sitter-hcl's concrete syntax tree to the span model (byte offsets mapped to str offsets)."""

    def __init__(self, text: str):
        self.text = text
        self.data = text.encode("utf-8", "surrogatepass")
        self.ascii = len(self.data) == len(text)
        self._chars: list[int] | None = None

    def off(self, b: int) -> int:
        if self.ascii:
            return b
        if self._chars is None:        # the UTF-8 continuation bytes of a non-ASCII file, found once
            self._chars = [m.start() for m in _CONTINUATION.finditer(self.data)]
        # a character starts at byte b: b less the continuation bytes before it is its str offset
        return b - bisect.bisect_left(self._chars, b)

    def span(self, n) -> tuple[int, int]:
        if self.ascii:
            return n.start_byte, n.end_byte
        return self.off(n.start_byte), self.off(n.end_byte)

    def src(self, n) -> str:
        s, e = self.span(n)
        return self.text[s:e]

    def file(self) -> HclFile:
        root = _ts_parser().parse(self.data).root_node
        if root.has_error:
            bad = _first_error(root)
            line = bad.start_point[0] + 1
            col = bad.start_point[1] + 1
            what = (f"missing {bad.type!r}" if bad.is_missing
                    else f"unexpected {self.src(bad).strip().splitlines()[0][:40]!r}" if self.src(bad).strip()
                    else "unexpected input")
            raise HclParseError(f"HCL does not parse: {what} at line {line}, column {col}", line)
        body = next((c for c in root.named_children if c.type == "body"), None)
        top = Block(type="", labels=[], label_spans=[], start=0, end=0, body_start=0, body_end=0)
        if body is not None:
            top.start, top.end = top.body_start, top.body_end = self.span(body)
            self.fill(top, body)
        return HclFile(text=self.text, blocks=top.blocks, attributes=top.attributes)

    def fill(self, blk: Block, body) -> None:
        for c in body.named_children:
            if c.type == "attribute":
                name = self.src(c.named_children[0])
                s, e = self.span(c)
                value = [x for x in c.named_children if x.type == "expression"][-1]
                blk.attributes[name] = _LazyAttribute(name, s, max(e, self.value_end(value)), self, value)
            elif c.type == "block":
                blk.blocks.append(self.block(c))

    def value_end(self, n) -> int:
        """Where an attribute's value ends, as its expression's model has it (a heredoc after its closing marker's
        line break), without building that model."""
        while True:
            kids = [c for c in n.named_children if c.type not in _SKIP]
            if n.type == "heredoc_template":
                e = self.span(n)[1]
                return e + (2 if self.text.startswith("\r\n", e) else 1 if self.text.startswith("\n", e) else 0)
            if len(kids) != 1 or n.type not in ("expression", "literal_value", "template_expr", "collection_value") \
                    or (n.type == "expression" and (kids[0].type in _TRAILERS or
                                                    (n.child_count and n.children[0].type == "("))):
                return self.span(n)[1]
            n = kids[0]

    def block(self, n) -> Block:
        type_ = ""
        labels: list[str] = []
        spans: list[tuple[int, int]] = []
        body = None
        start, end = self.span(n)
        body_start, body_end = start, end
        for c in n.named_children:
            t = c.type
            if t == "block_start":
                body_start = self.span(c)[1]
            elif t == "block_end":
                body_end = self.span(c)[0]
            elif t == "body":
                body = c
            elif t in _SKIP:
                continue
            elif not type_:
                type_ = self.src(c)
            else:
                s, e = self.span(c)
                labels.append(self.text[s + 1:e - 1] if t == "string_lit" else self.text[s:e])
                spans.append((s, e))
        blk = Block(type=type_, labels=labels, label_spans=spans, start=start, end=end,
                    body_start=body_start, body_end=body_end)
        if body is not None:
            self.fill(blk, body)
        return blk

    def expr(self, n) -> Expr:
        s, e = self.span(n)
        src = self.text[s:e]
        t = n.type
        kids = [c for c in n.named_children if c.type not in _SKIP]
        if t == "expression":
            if any(c.type in _TRAILERS for c in kids):
                return Expr("ref", s, e, src, name=src)
            if n.child_count and n.children[0].type == "(":
                return Expr("other", s, e, src, items=[self.expr(c) for c in kids])
            if len(kids) == 1:
                return self.expr(kids[0])
            return Expr("other", s, e, src)
        if t in ("literal_value", "template_expr", "collection_value") and len(kids) == 1:
            return self.expr(kids[0])
        if t == "variable_expr":
            return Expr("ref", s, e, src, name=src)
        if t == "numeric_lit":
            return Expr("number", s, e, src, value=_number(src))
        if t == "bool_lit":
            return Expr("bool", s, e, src, value=src == "true")
        if t == "null_lit":
            return Expr("null", s, e, src)
        if t in ("string_lit", "quoted_template"):
            # the literal text is what lies between the interpolations (tree-sitter's template_literal nodes leave
            # out the blanks before a `${`: "kubectl apply -f ${x}")
            parts: list[tuple[bool, str]] = []
            at = s + 1 if src.startswith('"') else s
            end = e - 1 if src.endswith('"') and e - 1 >= at else e
            for c in kids:
                if c.type in ("quoted_template_start", "quoted_template_end", "template_literal"):
                    continue
                cs, ce = self.span(c)
                if cs > at:
                    parts.append((False, self.text[at:cs]))
                parts.append((True, self.text[cs:ce]))
                at = ce
            if end > at:
                parts.append((False, self.text[at:end]))
            literal = not any(interp for interp, _ in parts)
            value = _unescape("".join(x for _, x in parts)) if literal else None
            return Expr("string", s, e, src, value=value, parts=parts)
        if t == "heredoc_template":
            # the expression ends after the closing marker's line break (as the model always had it)
            e += 2 if self.text.startswith("\r\n", e) else 1 if self.text.startswith("\n", e) else 0
            return Expr("heredoc", s, e, self.text[s:e], heredoc=_heredoc(s, e, self.text))
        if t == "tuple":
            return Expr("tuple", s, e, src, items=[self.expr(c) for c in kids if c.type == "expression"])
        if t == "object":
            entries = []
            for c in kids:
                if c.type != "object_elem":
                    continue
                key_node, val_node = [x for x in c.named_children if x.type == "expression"][:2]
                ks, ke = self.span(key_node)
                ktext = self.text[ks:ke]
                quoted = ktext.startswith('"')
                key = _unescape(ktext[1:-1]) if quoted else ktext
                cs, ce = self.span(c)
                value = self.expr(val_node)         # a heredoc value ends after its closing line break: so does
                entries.append(ObjEntry(key, ks, ke, quoted, value, cs, max(ce, value.end)))     # the entry
            return Expr("object", s, e, src, entries=entries)
        if t == "function_call":
            args = next((c for c in kids if c.type == "function_arguments"), None)
            items = [self.expr(c) for c in args.named_children if c.type == "expression"] if args else []
            return Expr("call", s, e, src, name=self.src(kids[0]), items=items)
        return Expr("other", s, e, src)


class _LazyAttribute(Attribute):
    """An attribute whose expression model is built when it is first read: on a large tree most attributes never are
    (a third of a plan's time went to building them)."""

    def __init__(self, name: str, start: int, end: int, ts: _TreeSitter, node):
        self.name, self.start, self.end = name, start, end
        self._from: tuple | None = (ts, node)
        self._expr: Expr | None = None

    @property
    def expr(self) -> Expr:             # type: ignore[override]
        if self._expr is None:
            ts, node = self._from
            self._expr, self._from = ts.expr(node), None
        return self._expr


def _first_error(n):
    stack = [n]
    while stack:
        x = stack.pop()
        if x.is_error or x.is_missing:
            return x
        stack.extend(reversed([c for c in x.children if c.has_error or c.is_missing]))
    return n


def _number(src: str) -> int | float:
    try:
        return int(src)
    except ValueError:
        return float(src)


def quote(s: str) -> str:
    """An HCL string literal for s (template sequences escaped)."""
    out = s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    out = out.replace("${", "$${").replace("%{", "%%{")
    return '"' + out + '"'


def quote_template(s: str) -> str:
    """An HCL string literal for s in which `${...}` stays an interpolation, written as it is (an expression's own
    quotes and braces kept), the other text escaped."""
    def esc(t: str) -> str:
        return t.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    from .templates import TemplateError, sequence_end
    out, i = [], 0
    while (j := s.find("${", i)) >= 0:
        try:
            end = sequence_end(s, j + 2)
        except TemplateError:
            break
        out += [esc(s[i:j]), s[j:end]]
        i = end
    out.append(esc(s[i:]))
    return '"' + "".join(out) + '"'


_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


def object_key(key: str) -> str:
    return key if _IDENT.match(key) else quote(key)


_TOKEN = re.compile(r"__MIG_(\d+)__")


def _hcl_string(s: str, tokens: dict[str, str]) -> str:
    """A string value; placeholder tokens become interpolations of their expressions."""
    whole = _TOKEN.fullmatch(s)
    if whole:
        return tokens.get(s, quote(s))
    if not _TOKEN.search(s):
        return quote(s)
    out = []
    pos = 0
    for m in _TOKEN.finditer(s):
        out.append(quote(s[pos:m.start()])[1:-1])
        src = tokens.get(m.group(0), m.group(0))
        out.append(src[1:-1] if src.startswith('"') and src.endswith('"') else "${" + src + "}")
        pos = m.end()
    out.append(quote(s[pos:])[1:-1])
    return '"' + "".join(out) + '"'


def render_value(v: Any, tokens: dict[str, str], indent: str = "", step: str = "  ",
                 template_strings: bool = False) -> str:
    """HCL text for a Python structure, in `terraform fmt` style (aligned `=` in objects)."""
    if isinstance(v, dict):
        if not v:
            return "{}"
        inner = indent + step
        rendered = []
        for k, x in v.items():
            ks = tokens.get(k, None) if isinstance(k, str) and _TOKEN.fullmatch(k) else None
            key = f"({ks})" if ks is not None else (
                quote_template(str(k)) if template_strings and "${" in str(k) else object_key(str(k)))
            rendered.append((key, render_value(x, tokens, inner, step, template_strings)))
        lines = []
        group: list[tuple[str, str]] = []

        def flush():
            width = max((len(k) for k, _ in group), default=0)
            for k, val in group:
                lines.append(f"{inner}{k.ljust(width)} = {val}")
            group.clear()

        for k, val in rendered:
            if "\n" in val:
                flush()
                lines.append(f"{inner}{k} = {val}")
            else:
                group.append((k, val))
        flush()
        return "{\n" + "\n".join(lines) + "\n" + indent + "}"
    if isinstance(v, list):
        if not v:
            return "[]"
        items = [render_value(x, tokens, indent + step, step, template_strings) for x in v]
        if all("\n" not in i for i in items) and not any(isinstance(x, dict) for x in v):
            one = "[" + ", ".join(items) + "]"
            if len(one) + len(indent) < 100:
                return one
        return "[\n" + "".join(f"{indent}{step}{i},\n" for i in items) + indent + "]"
    if v is None:
        return "null"
    if isinstance(v, bool) or type(v).__name__ == "ScalarBoolean":
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    if template_strings:
        return quote_template(str(v))
    return _hcl_string(str(v), tokens)
