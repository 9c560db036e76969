"""HCL with exact character spans.

This module is the only place that knows the HCL parser (python-hcl2's Lark tree with
`propagate_positions`). Everything else sees :class:`HclFile`, :class:`Block`, :class:`Attribute`
and :class:`Expr`, each carrying `start`/`end` offsets into the file text, so the parser can be
swapped (tree-sitter-hcl) without touching rules.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterator

from lark import Token, Tree

import hcl2


class HclParseError(ValueError):
    def __init__(self, message: str, line: int):
        super().__init__(message)
        self.line = line


@dataclass
class Expr:
    kind: str               # string, heredoc, number, bool, null, tuple, object, call, ref, other
    start: int
    end: int
    source: str             # exact source text of the expression
    # string: literal value (None if it contains interpolations); number/bool: python value
    value: Any = None
    parts: list = field(default_factory=list)          # string: list of (is_interp, text)
    items: list["Expr"] = field(default_factory=list)  # tuple items / call args
    entries: list["ObjEntry"] = field(default_factory=list)   # object entries
    name: str = ""          # call: function name; ref: dotted reference text
    heredoc: "Heredoc | None" = None

    def literal(self) -> Any:
        """Python value if the expression is a plain literal (no references), else None."""
        if self.kind in ("number", "bool"):
            return self.value
        if self.kind == "string" and self.value is not None:
            return self.value
        return None


@dataclass
class ObjEntry:
    key: str                # unquoted key text
    key_start: int
    key_end: int
    key_quoted: bool
    value: Expr
    start: int
    end: int


@dataclass
class Heredoc:
    marker: str             # e.g. YAML
    trim: bool              # <<- form
    body_start: int         # offset of the first body char
    body_end: int           # offset just after the last body newline (start of closing line)
    indent: int             # common indentation of body lines (stripped by Terraform for <<-)


@dataclass
class Attribute:
    name: str
    start: int
    end: int
    expr: Expr


@dataclass
class Block:
    type: str
    labels: list[str]
    label_spans: list[tuple[int, int]]
    start: int
    end: int
    body_start: int         # offset just after `{`
    body_end: int           # offset of `}`
    attributes: dict[str, Attribute] = field(default_factory=dict)
    blocks: list["Block"] = field(default_factory=list)

    def attr(self, name: str) -> Expr | None:
        a = self.attributes.get(name)
        return a.expr if a else None

    def sub(self, type_: str) -> list["Block"]:
        return [b for b in self.blocks if b.type == type_]

    @property
    def address(self) -> str:
        """Terraform address: `kubectl_manifest.x`, `data.aws_iam_policy_document.y`, `module.z`."""
        if self.type == "resource":
            return ".".join(self.labels)
        return ".".join([self.type, *self.labels])


@dataclass
class HclFile:
    text: str
    blocks: list[Block]
    attributes: dict[str, Attribute] = field(default_factory=dict)   # top level (tfvars)

    def walk(self) -> Iterator[Block]:
        stack = list(reversed(self.blocks))
        while stack:
            b = stack.pop()
            yield b
            stack.extend(reversed(b.blocks))

    def resources(self, rtype: str) -> list[Block]:
        return [b for b in self.blocks if b.type == "resource" and b.labels[:1] == [rtype]]


def line_of(text: str, offset: int) -> int:
    """1-based line number of an offset."""
    return text.count("\n", 0, offset) + 1


def parse(text: str) -> HclFile:
    try:
        tree = hcl2.parses_to_tree(text if text.endswith("\n") else text + "\n")
    except Exception as e:  # noqa: BLE001 - lark raises many exception types
        line = getattr(e, "line", None) or 1
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise HclParseError(f"HCL does not parse: {msg}", int(line)) from None
    body = _child(tree, "body")
    if body is None:
        return HclFile(text=text, blocks=[])
    top = _block_from_body(body, text)
    return HclFile(text=text, blocks=top.blocks, attributes=top.attributes)


# ---------------------------------------------------------------------------------------------
def _child(t: Tree, name: str) -> Tree | None:
    for c in t.children:
        if isinstance(c, Tree) and c.data == name:
            return c
    return None


def _span(n: Tree | Token) -> tuple[int, int]:
    if isinstance(n, Token):
        return n.start_pos, n.end_pos
    return n.meta.start_pos, n.meta.end_pos


def _name_of(n: Tree | Token) -> str:
    if isinstance(n, Token):
        return str(n)
    if n.data in ("identifier", "keyword", "literal_value"):
        return str(n.children[0])
    return ""


def _block_from_body(body: Tree, text: str) -> Block:
    s, e = _span(body) if not body.meta.empty else (0, 0)
    blk = Block(type="", labels=[], label_spans=[], start=s, end=e, body_start=s, body_end=e)
    _fill(blk, body, text)
    return blk


def _fill(blk: Block, body: Tree, text: str) -> None:
    for c in body.children:
        if not isinstance(c, Tree):
            continue
        if c.data == "attribute":
            name = _name_of(c.children[0])
            s, e = _span(c)
            blk.attributes[name] = Attribute(name=name, start=s, end=e, expr=to_expr(c.children[-1], text))
        elif c.data == "block":
            blk.blocks.append(_block(c, text))


def _block(t: Tree, text: str) -> Block:
    labels: list[str] = []
    spans: list[tuple[int, int]] = []
    type_ = ""
    lbrace = rbrace = None
    body = None
    for c in t.children:
        if isinstance(c, Token):
            if c.type == "LBRACE":
                lbrace = c
            elif c.type == "RBRACE":
                rbrace = c
            continue
        if c.data == "body":
            body = c
        elif c.data == "new_line_or_comment":
            continue
        elif not type_:
            type_ = _name_of(c)
        elif c.data == "string":
            s, e = _span(c)
            labels.append(text[s + 1 : e - 1])
            spans.append((s, e))
        else:
            s, e = _span(c)
            labels.append(text[s:e])
            spans.append((s, e))
    start, end = _span(t)
    blk = Block(type=type_, labels=labels, label_spans=spans, start=start, end=end,
                body_start=lbrace.end_pos if lbrace else start, body_end=rbrace.start_pos if rbrace else end)
    if body is not None:
        _fill(blk, body, text)
    return blk


_HEREDOC_HEAD = re.compile(r"<<(-?)([A-Za-z_][A-Za-z0-9_-]*)[ \t]*\r?\n")


def _heredoc(tok: Token, text: str) -> Heredoc:
    s, e = tok.start_pos, tok.end_pos
    src = text[s:e]
    m = _HEREDOC_HEAD.match(src)
    assert m, src
    body_start = s + m.end()
    # closing marker is the last line of the token
    close_line_start = text.rfind("\n", s, e - len(m.group(2))) + 1
    body_end = max(close_line_start, body_start)
    body = text[body_start:body_end]
    indents = [len(ln) - len(ln.lstrip(" \t")) for ln in body.splitlines() if ln.strip()]
    return Heredoc(marker=m.group(2), trim=m.group(1) == "-", body_start=body_start, body_end=body_end,
                   indent=min(indents) if indents else 0)


def _unescape(s: str) -> str:
    out = []
    i = 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            n = s[i + 1]
            out.append({"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"}.get(n, "\\" + n))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out).replace("$${", "${").replace("%%{", "%{")


def to_expr(n: Tree | Token, text: str) -> Expr:
    s, e = _span(n)
    src = text[s:e]
    if isinstance(n, Token):
        return Expr("other", s, e, src)
    d = n.data
    if d == "expr_term" and len(n.children) == 1:
        return to_expr(n.children[0], text)
    if d == "expr_term":
        # parenthesised
        inner = [c for c in n.children if isinstance(c, Tree) and c.data != "new_line_or_comment"]
        return Expr("other", s, e, src, items=[to_expr(c, text) for c in inner])
    if d == "string":
        parts = []
        literal = True
        for c in n.children:
            if isinstance(c, Tree) and c.data == "string_part":
                for pc in c.children:
                    if isinstance(pc, Token):
                        parts.append((False, str(pc)))
                    else:
                        ps, pe = _span(pc)
                        parts.append((True, text[ps:pe]))
                        literal = False
        value = _unescape("".join(t for _, t in parts)) if literal else None
        return Expr("string", s, e, src, value=value, parts=parts)
    if d in ("heredoc_template", "heredoc_template_trim"):
        tok = n.children[0]
        return Expr("heredoc", s, e, src, heredoc=_heredoc(tok, text))
    if d == "int_lit":
        return Expr("number", s, e, src, value=int(str(n.children[0])))
    if d == "float_lit":
        return Expr("number", s, e, src, value=float(str(n.children[0])))
    if d == "literal_value":
        v = str(n.children[0])
        if v == "null":
            return Expr("null", s, e, src)
        return Expr("bool", s, e, src, value=(v == "true"))
    if d == "tuple":
        items = [to_expr(c, text) for c in n.children if isinstance(c, Tree) and c.data != "new_line_or_comment"]
        return Expr("tuple", s, e, src, items=items)
    if d == "object":
        entries = []
        for c in n.children:
            if isinstance(c, Tree) and c.data == "object_elem":
                key_node = c.children[0]
                ks, ke = _span(key_node)
                ktext = text[ks:ke]
                quoted = ktext.startswith('"')
                key = _unescape(ktext[1:-1]) if quoted else ktext
                val = to_expr(c.children[-1], text)
                cs, ce = _span(c)
                entries.append(ObjEntry(key, ks, ke, quoted, val, cs, ce))
        return Expr("object", s, e, src, entries=entries)
    if d == "function_call":
        name = _name_of(n.children[0])
        args = _child(n, "arguments")
        items = []
        if args is not None:
            items = [to_expr(c, text) for c in args.children if isinstance(c, Tree) and c.data != "new_line_or_comment"]
        return Expr("call", s, e, src, name=name, items=items)
    if d in ("identifier", "get_attr_expr_term", "index_expr_term", "attr_splat_expr_term", "full_splat_expr_term"):
        return Expr("ref", s, e, src, name=src)
    return Expr("other", s, e, src)


def quote(s: str) -> str:
    """An HCL string literal for s (template sequences escaped)."""
    out = s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    out = out.replace("${", "$${").replace("%{", "%%{")
    return '"' + out + '"'


def quote_template(s: str) -> str:
    """An HCL string literal for s in which `${...}` stays an interpolation (other text escaped)."""
    out = s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return '"' + out + '"'


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
