"""Text edits by span: the only way migrator changes a file.

A rule returns :class:`TextEdit` (replace `[start, end)` of an existing file; `start == end` inserts),
:class:`NewFile` or :class:`DeleteFile`. :func:`apply_edits` applies the edits of one file in memory
and refuses overlapping spans, so bytes outside edits stay identical by construction.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field


@dataclass(frozen=True)
class TextEdit:
    path: str               # POSIX, relative to the root
    start: int
    end: int
    text: str
    rule: str
    order: int = 0          # tie-break for several inserts at the same offset
    root: str = ""          # the cluster root whose rules made it (set when a plan has several roots)


@dataclass(frozen=True)
class NewFile:
    path: str
    text: str
    rule: str


@dataclass(frozen=True)
class DeleteFile:
    path: str
    rule: str


Edit = TextEdit | NewFile | DeleteFile


class EditConflict(ValueError):
    def __init__(self, path: str, a: TextEdit, b: TextEdit):
        roots = f" for cluster roots {a.root!r} and {b.root!r}" if a.root and b.root and a.root != b.root else ""
        super().__init__(f"{path}: edits from rules {a.rule!r} and {b.rule!r}{roots} overlap "
                         f"([{a.start},{a.end}) and [{b.start},{b.end}))")
        self.path, self.a, self.b = path, a, b


def apply_edits(text: str, edits: list[TextEdit]) -> str:
    return apply_edits_at(text, edits)[0]


def apply_edits_at(text: str, edits: list[TextEdit]) -> tuple[str, list[tuple[int, int]]]:
    """The edited text and, for every edit, the span its text occupies in it."""
    ordered = sorted(edits, key=lambda e: (e.start, e.end, e.order))
    for a, b in zip(ordered, ordered[1:]):
        if b.start < a.end or (a.start == b.start and a.end > a.start and b.end > b.start):
            raise EditConflict(a.path, a, b)
    out = []
    spans = []
    pos = 0
    size = 0
    for e in ordered:
        out.append(text[pos:e.start])
        size += e.start - pos
        out.append(e.text)
        spans.append((size, size + len(e.text)))
        size += len(e.text)
        pos = e.end
    out.append(text[pos:])
    return "".join(out), spans


def unified_diff(path: str, old: str | None, new: str | None) -> str:
    a = [] if old is None else old.splitlines(keepends=True)
    b = [] if new is None else new.splitlines(keepends=True)
    for lines in (a, b):
        if lines and not lines[-1].endswith(("\n", "\r")):
            lines[-1] += "\n\\ No newline at end of file\n"
    return "".join(difflib.unified_diff(
        a, b,
        fromfile="/dev/null" if old is None else f"a/{path}",
        tofile="/dev/null" if new is None else f"b/{path}",
    ))


def newline_of(text: str) -> str:
    """The file's line ending style."""
    crlf = text.count("\r\n")
    lf = text.count("\n") - crlf
    return "\r\n" if crlf > lf else "\n"


def to_newline(text: str, nl: str) -> str:
    """Convert generated text (always `\\n`) to the file's line endings."""
    return text.replace("\r\n", "\n").replace("\n", nl) if nl != "\n" else text


def line_start(text: str, offset: int) -> int:
    return text.rfind("\n", 0, offset) + 1


def line_end(text: str, offset: int) -> int:
    """Offset just after the newline ending the line that contains offset (or len(text))."""
    i = text.find("\n", offset)
    return len(text) if i < 0 else i + 1


def comments_above(text: str, ls: int) -> int:
    """Start of the comment lines (`#`, `//`) directly above the line starting at ls."""
    while ls > 0:
        prev = line_start(text, ls - 1)
        if text[prev:ls].lstrip().startswith(("#", "//")):
            ls = prev
        else:
            break
    return ls


def indent_at(text: str, offset: int) -> str:
    ls = line_start(text, offset)
    line = text[ls:offset]
    return line[: len(line) - len(line.lstrip(" \t"))]


@dataclass
class FileChange:
    path: str
    action: str             # modify | create | delete
    old: str | None
    new: str | None
    rules: list[str] = field(default_factory=list)

    @property
    def diff(self) -> str:
        return unified_diff(self.path, self.old, self.new)


def coalesced(edits: list, text_of=None, touch: bool = True) -> list:
    """Deletions of one file that overlap or touch (two removed items both taking the blank line between them) as one
    deletion; every other edit as it is. With `text_of` (path -> text), a deletion of the first items below an
    opening bracket also takes the blank line that separated them from the next (it would open the block), and the
    last blocks of a file the blank line above them. Without `touch`, only deletions that overlap are one (an insert
    where two meet stays between them)."""
    out, dels = [], {}
    for e in edits:
        if isinstance(e, TextEdit) and not e.text and e.start < e.end:
            dels.setdefault(e.path, []).append(e)
        else:
            out.append(e)
    for es in dels.values():
        merged = _merged(es, touch)
        while text_of is not None:                  # a gap taken may join two deletions, which may take another
            again = _merged([_first_gap(e, text_of) for e in merged], touch)
            if again == merged:
                break
            merged = again
        out += merged
    return out


def _merged(es: list, touch: bool) -> list:
    es = sorted(es, key=lambda e: e.start)
    out, cur = [], es[0]
    for e in es[1:]:
        if e.start < cur.end or (touch and e.start == cur.end):
            cur = TextEdit(cur.path, cur.start, max(cur.end, e.end), "", cur.rule)
        else:
            out.append(cur)
            cur = e
    return out + [cur]


def _first_gap(e: TextEdit, text_of) -> TextEdit:
    if text_of is None:
        return e
    text = text_of(e.path)
    if e.end == len(text) and e.start > 1 and text[e.start - 1] == "\n":
        s = e.start                                 # the last blocks of a file: no blank line left at its end
        while s > 1 and text[s - 1] == "\n" and not text[line_start(text, s - 1):s - 1].strip() and \
                text[line_start(text, s - 1) - 1:line_start(text, s - 1)] == "\n":
            s = line_start(text, s - 1)
        return TextEdit(e.path, s, e.end, "", e.rule) if s < e.start else e
    if e.start == 0 or text[e.start - 1] != "\n" or \
            not text[line_start(text, e.start - 1):e.start].rstrip().endswith(("{", "[")):
        return e
    nxt = line_end(text, e.end)
    if e.end < len(text) and not text[e.end:nxt].strip() and text[e.end:nxt].endswith("\n") and \
            text[nxt:line_end(text, nxt)].strip() not in ("}", "]"):
        return TextEdit(e.path, e.start, nxt, "", e.rule)
    return e
