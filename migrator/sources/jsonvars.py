"""Terraform variable files written in JSON (`*.tfvars.json`), read into the HCL model with exact spans.

Terraform reads them as it reads `.tfvars` (`-var-file`, `terraform.tfvars.json`, `*.auto.tfvars.json`): one JSON
object whose members set variables, every value literal (a string in a variable file is never a template). The
model is the one `hcl.parse` gives a `.tfvars` file: `HclFile.attributes`, each value an :class:`Expr` whose
`start`/`end` are offsets into the text and whose `source` is the JSON text (a JSON scalar or array is written the
same way in HCL). So every reader of variable values reads these files too; an edit is only written where the
result is still JSON (plan.build_changes).
"""
from __future__ import annotations

import json
import re

from .hclmodel import Attribute, Expr, HclFile, HclParseError, ObjEntry

_WS = re.compile(r"[ \t\r\n]*")
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_STRING = re.compile(r'"(?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"')


def parse(text: str) -> HclFile:
    """The variables a JSON variable file sets; HclParseError (with its line) when it is not one JSON object."""
    r = _Reader(text)
    r.ws()
    if not text.startswith("{", r.i):
        r.fail("a variable file in JSON is one object")
    top = r.value()
    r.ws()
    if r.i != len(text):
        r.fail("text after the object")
    return HclFile(text=text, blocks=[], attributes={
        e.key: Attribute(name=e.key, start=e.start, end=e.end, expr=e.value) for e in top.entries})


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0

    def fail(self, why: str) -> None:
        line = self.text.count("\n", 0, self.i) + 1
        raise HclParseError(f"JSON: {why} at line {line}", line)

    def ws(self) -> None:
        self.i = _WS.match(self.text, self.i).end()

    def value(self) -> Expr:
        t, s = self.text, self.i
        c = t[s:s + 1]
        if c == "{":
            return self._object()
        if c == "[":
            return self._array()
        if c == '"':
            m = _STRING.match(t, s)
            if not m:
                self.fail("a string that does not end")
            self.i = m.end()
            raw = m.group(0)
            value = json.loads(raw)
            return Expr("string", s, self.i, raw, value=value, parts=[(False, raw[1:-1])])
        for word, kind, v in (("true", "bool", True), ("false", "bool", False), ("null", "null", None)):
            if t.startswith(word, s):
                self.i = s + len(word)
                return Expr(kind, s, self.i, word, value=v)
        m = _NUMBER.match(t, s)
        if not m or not m.group(0):
            self.fail("not a JSON value")
        self.i = m.end()
        return Expr("number", s, self.i, m.group(0), value=json.loads(m.group(0)))

    def _members(self, close: str, one) -> list:
        """The comma-separated items up to `close` (the reader after it)."""
        self.i += 1
        out = []
        self.ws()
        if self.text.startswith(close, self.i):
            self.i += 1
            return out
        while True:
            self.ws()
            out.append(one())
            self.ws()
            if self.text.startswith(",", self.i):
                self.i += 1
                continue
            if self.text.startswith(close, self.i):
                self.i += 1
                return out
            self.fail(f"',' or '{close}' expected")

    def _array(self) -> Expr:
        s = self.i
        items = self._members("]", self.value)
        return Expr("tuple", s, self.i, self.text[s:self.i], items=items)

    def _object(self) -> Expr:
        s = self.i

        def member() -> ObjEntry:
            ks = self.i
            key = self.value()
            if key.kind != "string":
                self.fail("an object's key is a string")
            self.ws()
            if not self.text.startswith(":", self.i):
                self.fail("':' expected")
            self.i += 1
            self.ws()
            v = self.value()
            return ObjEntry(key.value, ks, key.end, True, v, ks, v.end)
        entries = self._members("}", member)
        return Expr("object", s, self.i, self.text[s:self.i], entries=entries)
