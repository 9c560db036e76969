"""JSON with spans: every object, array and scalar knows its [start, end) offsets in the text.

Used for IAM policies in JSON files and heredocs, which may contain Terraform placeholder tokens
(`__MIG_3__`) where an interpolation stood outside a string; those parse as bare values.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

_WS = re.compile(r"[ \t\r\n]*")
_NUM = re.compile(r"-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?")
_BARE = re.compile(r"__MIG_\d+__|true|false|null")


class JsonSpanError(ValueError):
    def __init__(self, message: str, offset: int):
        super().__init__(message)
        self.offset = offset


@dataclass
class JNode:
    kind: str                       # object | array | string | number | bare
    start: int
    end: int
    value: Any = None               # python value for scalars
    items: list["JNode"] = field(default_factory=list)                    # array
    entries: list[tuple["JNode", "JNode"]] = field(default_factory=list)  # object (key node, value node)

    def get(self, key: str) -> "JNode | None":
        for k, v in self.entries:
            if k.value == key:
                return v
        return None

    def plain(self) -> Any:
        if self.kind == "object":
            return {k.value: v.plain() for k, v in self.entries}
        if self.kind == "array":
            return [i.plain() for i in self.items]
        return self.value


def parse(text: str, start: int = 0, end: int | None = None) -> JNode:
    p = _Parser(text, start, len(text) if end is None else end)
    node = p.value()
    p.ws()
    if p.i != p.end:
        raise JsonSpanError("trailing text after the JSON value", p.i)
    return node


class _Parser:
    def __init__(self, text: str, start: int, end: int):
        self.t, self.i, self.end = text, start, end

    def ws(self) -> None:
        self.i = _WS.match(self.t, self.i, self.end).end()

    def value(self) -> JNode:
        self.ws()
        if self.i >= self.end:
            raise JsonSpanError("unexpected end of JSON", self.i)
        c = self.t[self.i]
        if c == "{":
            return self.obj()
        if c == "[":
            return self.arr()
        if c == '"':
            return self.string()
        m = _NUM.match(self.t, self.i, self.end)
        if m and m.end() > self.i:
            s = self.i
            self.i = m.end()
            return JNode("number", s, self.i, json.loads(m.group(0)))
        m = _BARE.match(self.t, self.i, self.end)
        if m:
            s = self.i
            self.i = m.end()
            word = m.group(0)
            return JNode("bare", s, self.i, {"true": True, "false": False, "null": None}.get(word, word))
        raise JsonSpanError(f"unexpected character {c!r}", self.i)

    def string(self) -> JNode:
        s = self.i
        i = s + 1
        while i < self.end:
            if self.t[i] == "\\":
                i += 2
                continue
            if self.t[i] == '"':
                break
            i += 1
        else:
            raise JsonSpanError("unterminated string", s)
        self.i = i + 1
        raw = self.t[s:self.i]
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw[1:-1]
        return JNode("string", s, self.i, value)

    def obj(self) -> JNode:
        node = JNode("object", self.i, self.i)
        self.i += 1
        self.ws()
        if self.t[self.i] == "}":
            self.i += 1
            node.end = self.i
            return node
        while True:
            self.ws()
            if self.t[self.i] != '"':
                raise JsonSpanError("expected a quoted key", self.i)
            k = self.string()
            self.ws()
            if self.t[self.i] != ":":
                raise JsonSpanError("expected ':'", self.i)
            self.i += 1
            v = self.value()
            node.entries.append((k, v))
            self.ws()
            if self.t[self.i] == ",":
                self.i += 1
                continue
            if self.t[self.i] == "}":
                self.i += 1
                node.end = self.i
                return node
            raise JsonSpanError("expected ',' or '}'", self.i)

    def arr(self) -> JNode:
        node = JNode("array", self.i, self.i)
        self.i += 1
        self.ws()
        if self.t[self.i] == "]":
            self.i += 1
            node.end = self.i
            return node
        while True:
            node.items.append(self.value())
            self.ws()
            if self.t[self.i] == ",":
                self.i += 1
                continue
            if self.t[self.i] == "]":
                self.i += 1
                node.end = self.i
                return node
            raise JsonSpanError("expected ',' or ']'", self.i)
