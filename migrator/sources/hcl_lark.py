"""The span model of :mod:`migrator.sources.hcl` built from python-hcl2's Lark tree (`propagate_positions`).

The second, independent HCL parser: `validate.reparse` checks every patched file with it, and
tests/test_hcl_parsers.py proves it gives the same model as tree-sitter-hcl on every fixture.
"""
from __future__ import annotations

from lark import Token, Tree

import hcl2

from .hclmodel import Attribute, Block, Expr, HclFile, HclParseError, ObjEntry, _heredoc, _unescape


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
        return Expr("heredoc", s, e, src, heredoc=_heredoc(tok.start_pos, tok.end_pos, text))
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


