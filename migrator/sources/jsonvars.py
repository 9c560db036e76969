"""Terraform variable files written in JSON (`*.tfvars.json`), read into the HCL model with exact spans.

Terraform reads them as it reads `.tfvars` (`-var-file`, `terraform.tfvars.json`, `*.auto.tfvars.json`): one JSON
object whose members set variables, every value literal (a string in a variable file is never a template). The
JSON is read by `jsonspan` (spans of every node); this module gives it the model `hcl.parse` gives a `.tfvars` file:
`HclFile.attributes`, each value an :class:`Expr` whose `start`/`end` are offsets into the text and whose `source` is
the JSON text (a JSON scalar or array is written the same way in HCL). So every reader of variable values reads
these files too; an edit is only written where the result is still JSON (plan.build_changes).
"""
from __future__ import annotations

from .hclmodel import Attribute, Expr, HclFile, HclParseError, ObjEntry
from .jsonspan import JNode, JsonSpanError
from .jsonspan import parse as parse_json


def parse(text: str) -> HclFile:
    """The variables a JSON variable file sets; HclParseError (with its line) when it is not one JSON object."""
    try:
        top = parse_json(text)
    except JsonSpanError as e:
        raise HclParseError(f"JSON: {e}", text.count("\n", 0, e.offset) + 1) from None
    except IndexError:                  # the text ends inside an object or array
        raise HclParseError("JSON: unexpected end of the file", text.count("\n") + 1) from None
    if top.kind != "object":
        raise HclParseError("JSON: a variable file in JSON is one object", text.count("\n", 0, top.start) + 1)
    attributes = {}
    for k, v in top.entries:
        e = _expr(text, v)
        attributes[k.value] = Attribute(name=k.value, start=k.start, end=e.end, expr=e)
    return HclFile(text=text, blocks=[], attributes=attributes)


def _expr(text: str, n: JNode) -> Expr:
    src = text[n.start:n.end]
    if n.kind == "object":
        return Expr("object", n.start, n.end, src, entries=[
            ObjEntry(str(k.value), k.start, k.end, True, _expr(text, v), k.start, v.end) for k, v in n.entries])
    if n.kind == "array":
        return Expr("tuple", n.start, n.end, src, items=[_expr(text, i) for i in n.items])
    if n.kind == "string":
        return Expr("string", n.start, n.end, src, value=n.value, parts=[(False, src[1:-1])])
    if n.kind == "number":
        return Expr("number", n.start, n.end, src, value=n.value)
    if src in ("true", "false"):
        return Expr("bool", n.start, n.end, src, value=src == "true")
    if src == "null":
        return Expr("null", n.start, n.end, src)
    raise HclParseError(f"JSON: not a JSON value: {src}", text.count("\n", 0, n.start) + 1)


def entry_span(text: str, e: ObjEntry) -> tuple[int, int]:
    """What goes when a member of a JSON object is removed and the object stays JSON: the comma before it with the
    member (`, "b": 2`), or for the first member the member with the comma after it up to the next one's key; the
    only member leaves `{}`."""
    before = len(text[:e.start].rstrip())
    if text[before - 1:before] == ",":
        return before - 1, e.end
    after = len(text) - len(text[e.end:].lstrip())
    if text[after:after + 1] == ",":
        following = len(text) - len(text[after + 1:].lstrip())
        return e.start, following
    return before, after                 # the only member: from after `{` to before `}`
