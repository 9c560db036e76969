"""Patterns anchored at a line's start or a word's, searched from their first literal characters.

CPython's regular expression engine finds a pattern's literal start at memory-scan speed, but tries a pattern that
opens with `^` (multiline), `\\b` or a lookbehind at every character of the text: over the megabytes of YAML and
Terraform a plan reads, ten to twenty times slower. Each pattern here is compiled without its anchor; a match counts
where the anchor holds, checked by looking back from where it starts.
"""
from __future__ import annotations

import re


def _is_word(c: str) -> bool:
    return c.isalnum() or c == "_"


def word_start(text: str, i: int) -> bool:
    """Does `\\b` hold before a word character at offset i (nothing, or no word character, before it)?"""
    return i == 0 or not _is_word(text[i - 1])


def line_start(text: str, i: int, lead: str | None) -> bool:
    """Is what stands before offset i on its line allowed by `lead`: "" nothing (`^`), " \\t" blanks (`^[ \\t]*`), None
    any whitespace, blank lines too (`^\\s*`: a line starts within the whitespace before i)?"""
    if lead is None:
        j = i
        while j > 0 and text[j - 1].isspace():
            j -= 1
        return j == 0 or "\n" in text[j:i]
    j = text.rfind("\n", 0, i) + 1
    return j == i or (bool(lead) and not text[j:i].strip(lead))


class AtLineStart:
    """`^<lead><body>` (multiline): `body` must open with literal text. `pattern` names it where a cache keys on the
    pattern (the anchored form, as written before)."""

    def __init__(self, body: str, lead: str | None = " \t", flags: int = 0, pattern: str | None = None):
        self.regex = re.compile(body, flags | re.M)
        self.lead = lead
        anchor = "^" + ("" if lead == "" else r"\s*" if lead is None else "[ \\t]*")
        self.pattern = pattern if pattern is not None else anchor + body

    def search(self, text: str, pos: int = 0, endpos: int | None = None) -> re.Match | None:
        """The first match of the body where the anchor holds (its span is the body's, not the line's)."""
        end = len(text) if endpos is None else endpos
        while True:
            m = self.regex.search(text, pos, end)
            if m is None or line_start(text, m.start(), self.lead):
                return m
            pos = m.start() + 1

    def finditer(self, text: str):
        pos = 0
        while True:
            m = self.search(text, pos)
            if m is None:
                return
            yield m
            pos = m.end() if m.end() > m.start() else m.start() + 1


class AtWordStart:
    """`\\b<body>` where `body` opens with a word character and literal text."""

    def __init__(self, body: str, flags: int = 0):
        self.regex = re.compile(body, flags)
        self.pattern = r"\b" + body

    def search(self, text: str, pos: int = 0) -> re.Match | None:
        while True:
            m = self.regex.search(text, pos)
            if m is None or word_start(text, m.start()):
                return m
            pos = m.start() + 1
