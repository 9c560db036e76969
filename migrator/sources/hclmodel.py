"""The span model of an HCL file, built by both parsers (`hcl` with tree-sitter-hcl, `hcl_lark` with python-hcl2):
blocks, attributes and expressions, each with `start`/`end` offsets into the file text."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterator


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

    def brief(self, width: int = 60) -> str:
        """The expression's source for a message: on one line, cut at a word with an ellipsis when longer than width
        (a message never ends inside a token, as `... : [` did)."""
        one = " ".join(self.source.split())
        if len(one) <= width:
            return one
        cut = one[:width] if one[width] == " " or " " not in one[:width] else one[:width].rsplit(" ", 1)[0]
        return cut.rstrip() + " …"

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


_HEREDOC_HEAD = re.compile(r"<<(-?)([A-Za-z_][A-Za-z0-9_-]*)[ \t]*\r?\n")


def _heredoc(s: int, e: int, text: str) -> Heredoc:
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
