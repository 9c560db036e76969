"""Mask Terraform template syntax so templated YAML can be parsed, and restore it afterwards.

`${ ... }` interpolations and inline `%{ ... }` directives become placeholder tokens that are valid
plain YAML scalars (`__MIG_3__`); a directive that stands alone on its line (`%{ if x ~}`) becomes a
YAML comment line and is remembered as a :class:`LineDirective` so a converter can carry it to the
place its content moved to. `$${` and `%%{` are Terraform escapes and are left alone.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

TOKEN_RE = re.compile(r"__MIG_(\d+)__")
_DIRECTIVE_WORD = re.compile(r"%\{~?\s*(if|else|endif|for|endfor)\b")


class TemplateError(ValueError):
    """Template text whose interpolations or directives are not balanced."""


@dataclass
class LineDirective:
    index: int          # 0-based line number in the masked text
    text: str           # the directive text, stripped of surrounding whitespace
    word: str           # if / else / endif / for / endfor


@dataclass
class Masked:
    text: str
    tokens: dict[str, str] = field(default_factory=dict)      # token -> original source text
    directives: list[LineDirective] = field(default_factory=list)

    def unmask(self, text: str) -> str:
        return TOKEN_RE.sub(lambda m: self.tokens.get(m.group(0), m.group(0)), text)

    def has_token(self, value: object) -> bool:
        return isinstance(value, str) and bool(TOKEN_RE.search(value))

    def is_token(self, value: object) -> bool:
        return isinstance(value, str) and TOKEN_RE.fullmatch(value) is not None


def _scan_to_close(text: str, i: int) -> int:
    """Given text[i-2:i] == '${' or '%{', return the index just after the matching '}'."""
    depth = 1
    n = len(text)
    while i < n:
        c = text[i]
        if c == '"':
            i += 1
            while i < n and text[i] != '"':
                if text[i] == "\\":
                    i += 1
                elif text.startswith("${", i) or text.startswith("%{", i):
                    i = _scan_to_close(text, i + 2) - 1
                i += 1
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise TemplateError("unterminated template sequence")


def find_sequences(text: str) -> list[tuple[int, int, str]]:
    """Spans of `${...}` and `%{...}` in text, as (start, end, '$' or '%'); escapes skipped."""
    out: list[tuple[int, int, str]] = []
    i, n = 0, len(text)
    while i < n - 1:
        two = text[i : i + 2]
        if two in ("${", "%{"):
            if i > 0 and text[i - 1] == two[0] and (i < 2 or text[i - 2] != two[0]):
                i += 2          # `$${` / `%%{` escape
                continue
            end = _scan_to_close(text, i + 2)
            out.append((i, end, two[0]))
            i = end
            continue
        i += 1
    return out


def mask(text: str) -> Masked:
    """Replace template sequences with placeholder tokens; whole-line directives become comments."""
    m = Masked(text="")
    seqs = find_sequences(text)
    if not seqs:
        m.text = text
        return m
    lines = text.splitlines(keepends=True)
    line_starts = []
    pos = 0
    for ln in lines:
        line_starts.append(pos)
        pos += len(ln)
    whole_line: dict[int, tuple[int, int, str]] = {}
    for s, e, kind in seqs:
        if kind != "%":
            continue
        # which line is it on, and is it the only thing on that line?
        lo, hi = 0, len(lines) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if line_starts[mid] <= s:
                lo = mid
            else:
                hi = mid - 1
        line = lines[lo]
        body = line.rstrip("\r\n")
        if body.strip() == text[s:e] and "\n" not in text[s:e]:
            whole_line[s] = (lo, e, text[s:e])
    out: list[str] = []
    last = 0
    counter = 0
    for s, e, kind in seqs:
        out.append(text[last:s])
        if s in whole_line:
            src = whole_line[s][2]
            word = _DIRECTIVE_WORD.match(src)
            index = sum(chunk.count("\n") for chunk in out)
            m.directives.append(LineDirective(index=index, text=src, word=word.group(1) if word else "other"))
            out.append(f"#__MIGDIR_{len(m.directives) - 1}__")
        else:
            tok = f"__MIG_{counter}__"
            counter += 1
            m.tokens[tok] = text[s:e]
            out.append(tok)
        last = e
    out.append(text[last:])
    m.text = "".join(out)
    return m
