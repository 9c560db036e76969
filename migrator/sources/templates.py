"""Mask Terraform template syntax so templated YAML can be parsed, and restore it afterwards.

`${ ... }` interpolations and inline `%{ ... }` directives become placeholder tokens that are valid
plain YAML scalars (`__MIG_3__`); a directive that stands alone on its line (`%{ if x ~}`) becomes a
YAML comment line and is remembered as a :class:`LineDirective` so a converter can carry it to the
place its content moved to. `$${` and `%%{` are Terraform escapes and are left alone.

With `helm=True` (a Helm chart template), `{{ ... }}` actions are masked the same way: in a value or key
position they become tokens; a line holding only actions (`{{- if .Values.x }}`, `{{- end }}`,
`{{- toYaml .Values.labels | nindent 4 }}`) becomes a directive whose word is the action's keyword
(if, with, range, else, end, define, block) or `comment` (`{{/* */}}`), `assign` (`{{ $x := ... }}`) or
`content` (anything that writes YAML there: toYaml, include, tpl, a value).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

TOKEN_RE = re.compile(r"__MIG_(\d+)__")
UNKNOWN = "__MIG_999999999__"      # a value a template writes that nothing can see (validation treats it as a token)
_DIRECTIVE_WORD = re.compile(r"%\{~?\s*(if|else|endif|for|endfor)\b")


class TemplateError(ValueError):
    """Template text whose interpolations or directives are not balanced."""


@dataclass
class LineDirective:
    index: int          # 0-based line number in the masked text
    text: str           # the directive text, stripped of surrounding whitespace
    word: str           # if / else / endif / for / endfor (Terraform); if / with / range / else / end /
                        # define / block / comment / assign / content (Helm)
    lines: int = 1      # how many source lines it covers (a multi-line Helm comment)


@dataclass
class Masked:
    text: str
    tokens: dict[str, str] = field(default_factory=dict)      # token -> original source text
    directives: list[LineDirective] = field(default_factory=list)
    helm: bool = False                                        # `{{ }}` actions were masked
    shifted: dict[str, int] = field(default_factory=dict)     # block token -> columns added before it (`_shift_blocks`)

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


def sequence_end(text: str, i: int) -> int:
    """The index just after the `}` closing the template sequence whose body starts at i (after `${` or `%{`), strings
    and nested sequences followed; TemplateError when it never closes."""
    return _scan_to_close(text, i)


_OPENING = re.compile(r"[$%]\{")


def find_sequences(text: str) -> list[tuple[int, int, str]]:
    """Spans of `${...}` and `%{...}` in text, as (start, end, '$' or '%'); escapes skipped."""
    out: list[tuple[int, int, str]] = []
    i = 0
    while True:
        m = _OPENING.search(text, i)            # the next `${` / `%{` (no walk over every character)
        if m is None:
            return out
        i, c = m.start(), text[m.start()]
        if i > 0 and text[i - 1] == c and (i < 2 or text[i - 2] != c):
            i += 2              # `$${` / `%%{` escape
            continue
        end = _scan_to_close(text, i + 2)
        out.append((i, end, c))
        i = end


_HELM_KEYWORDS = {"if", "with", "range", "else", "end", "define", "block"}
_HELM_HEAD = re.compile(r"\{\{-?\s*(?:(?P<comment>/\*)|(?P<assign>\$\w*\s*:?=)|(?P<word>[A-Za-z_]\w*))?")


def find_helm(text: str) -> list[tuple[int, int, str]]:
    """Spans of Helm/Go-template actions `{{ ... }}` as (start, end, '{'); strings, raw strings and comments
    inside an action may hold `}}`."""
    out: list[tuple[int, int, str]] = []
    i, n = 0, len(text)
    while True:
        i = text.find("{{", i)
        if i < 0:
            return out
        j = i + 2
        while True:
            if j >= n:
                raise TemplateError("unterminated {{ action")
            if text.startswith("}}", j):
                j += 2
                break
            c = text[j]
            if text.startswith("/*", j):
                k = text.find("*/", j + 2)
                j = n if k < 0 else k + 2
            elif c in "\"`":
                k = j + 1
                while k < n and text[k] != c:
                    k += 2 if c == '"' and text[k] == "\\" else 1
                j = k + 1
            else:
                j += 1
        out.append((i, j, "{"))
        i = j


def helm_word(src: str) -> str:
    h = _HELM_HEAD.match(src)
    if h is None:
        return "content"
    if h.group("comment"):
        return "comment"
    if h.group("assign"):
        return "assign"
    w = h.group("word")
    return w if w in _HELM_KEYWORDS else "content"


def mask(text: str, helm: bool = False) -> Masked:
    """Replace template sequences with placeholder tokens; whole-line directives become comments."""
    m = Masked(text="", helm=helm)
    seqs = find_sequences(text)
    if helm:
        actions = find_helm(text)
        # a `${` inside a Helm action belongs to the action
        seqs = sorted(actions + [s for s in seqs if not any(a <= s[0] < b for a, b, _ in actions)])
    if not seqs:
        m.text = text
        return m
    # runs of directives/actions that fill whole lines (only whitespace around and between them)
    whole_line: dict[int, tuple[int, str, str]] = {}     # first start -> (last end, text, word)
    i = 0
    while i < len(seqs):
        s, e, kind = seqs[i]
        line_lo = text.rfind("\n", 0, s) + 1
        if kind == "$" or text[line_lo:s].strip() or (kind == "%" and "\n" in text[s:e]):
            i += 1
            continue
        j = i
        while j + 1 < len(seqs) and seqs[j + 1][2] != "$" and not text[seqs[j][1]:seqs[j + 1][0]].strip() \
                and "\n" not in text[seqs[j][1]:seqs[j + 1][0]]:
            j += 1
        end = seqs[j][1]
        nl = text.find("\n", end)
        if text[end: len(text) if nl < 0 else nl].strip():
            i += 1
            continue
        src = text[s:end]
        if kind == "%":
            word = _DIRECTIVE_WORD.match(src)
            word = word.group(1) if word else "other"
        else:
            word = helm_word(src)
        whole_line[s] = (j, src, word)
        i = j + 1
    out: list[str] = []
    last = 0
    counter = 0
    i = 0
    while i < len(seqs):
        s, e, kind = seqs[i]
        out.append(text[last:s])
        if s in whole_line:
            j, src, word = whole_line[s]
            index = sum(chunk.count("\n") for chunk in out)
            m.directives.append(LineDirective(index=index, text=src.strip(), word=word, lines=src.count("\n") + 1))
            out.append(f"#__MIGDIR_{len(m.directives) - 1}__" + "\n#" * src.count("\n"))
            last = seqs[j][1]
            i = j + 1
            continue
        tok = f"__MIG_{counter}__"
        counter += 1
        m.tokens[tok] = text[s:e]
        out.append(tok)
        last = e
        i += 1
    out.append(text[last:])
    m.text = _shift_blocks(m, "".join(out))
    return m


_SHIFT = 2


def _shift_blocks(m: Masked, text: str) -> str:
    """An interpolation alone on its line at the column of the key above it, that key with no value (`values:` then
    `${local.types_block}`, `budgets:` then `${indent(4, ...)}`), renders a block sequence there (YAML allows one at
    its key's column). Masked, that line is no YAML; it is read indented a little further, a block token like one
    written deeper (`block_tokens`), and put back at its own column when written (`keep_block_tokens`). Only the
    masked text changes: the line keeps its number, its token its place in the line's end."""
    if "__MIG_" not in text:
        return text
    lines = text.split("\n")
    for i, ln in enumerate(lines):
        tok = ln.strip()
        if not TOKEN_RE.fullmatch(tok) or not m.tokens.get(tok, "").startswith("${") or \
                _ONE_LINE.match(m.tokens[tok]):
            continue
        prev = next((p for p in reversed(lines[:i]) if p.strip() and not p.lstrip().startswith("#")), None)
        key = _KEY_ONLY.match(prev) if prev is not None else None
        if key is not None and not prev.lstrip().startswith("-") and indent_of(ln) == indent_of(prev):
            lines[i] = " " * _SHIFT + ln
            m.shifted[tok] = _SHIFT
    return "\n".join(lines)


OPENERS = {"if", "for", "with", "range", "define", "block"}
CLOSERS = {"endif", "endfor", "end"}
FREE = {"comment", "assign"}


@dataclass
class Layout:
    """How a masked document's whole-line directives relate to its YAML content (0-based masked lines)."""
    pairs: list[tuple[int, int | None]] = field(default_factory=list)   # (opener, closer); (else, None)
    lead: list[int] = field(default_factory=list)      # before all content, closed in another document (or never)
    trail: list[int] = field(default_factory=list)     # after all content, closing a block of an earlier document
    whole: list[tuple[int, int]] = field(default_factory=list)   # pairs wrapping the whole object
    content: dict[int, tuple | None] = field(default_factory=dict)   # directive writing YAML -> owning key path
    free: list[int] = field(default_factory=list)       # comments / assignments
    error: tuple[int, str] | None = None                 # (directive, why) when the structure cannot be read

    def region(self, pair: tuple[int, int | None], directives: list[LineDirective]) -> tuple[int, int]:
        lo = directives[pair[0]].index
        return lo, directives[pair[1]].index if pair[1] is not None else lo


def indent_of(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def layout(m: Masked, line_map: dict[int, tuple]) -> Layout:
    out = Layout()
    ds = m.directives
    content_lines = sorted(line_map)
    if not content_lines:
        out.lead = list(range(len(ds)))
        return out
    first, last = content_lines[0], content_lines[-1]
    src = m.text.splitlines()
    stack: list[int] = []
    for i, d in enumerate(ds):
        if d.word in OPENERS:
            stack.append(i)
        elif d.word in CLOSERS:
            if stack:
                o = stack.pop()
                if ds[o].index < first and d.index > last:
                    out.whole.append((o, i))
                else:
                    out.pairs.append((o, i))
            elif d.index > last:
                out.trail.append(i)
            else:
                out.error = (i, "has no opening directive")
                return out
        elif d.word == "else":
            out.pairs.append((i, None))
        elif d.word in FREE:
            out.free.append(i)
        elif d.word == "content" and m.helm:
            ind = indent_of(src[d.index])
            owner = None
            for ln in reversed(content_lines):
                if ln < d.index and indent_of(src[ln]) < ind:
                    owner = line_map[ln]
                    break
            out.content[i] = owner
        else:
            out.error = (i, "is not an if/for directive")
            return out
    for i in stack:
        if ds[i].index < first:
            out.lead.append(i)
        else:
            out.error = (i, "is never closed")
            return out
    return out


_NINDENT = re.compile(r"\b(n?indent)(\s+)(\d+)")


def reindent(text: str, delta: int) -> str:
    """A Helm action's `indent N` / `nindent N` moved by delta columns (its key moved that far)."""
    if not delta:
        return text
    return _NINDENT.sub(lambda x: f"{x.group(1)}{x.group(2)}{max(0, int(x.group(3)) + delta)}", text)


_KEY_ONLY = re.compile(r"^([ \t]*)(?:-[ \t]+)?[^\s#][^#]*:[ \t]*$")
# an interpolation that renders one line wherever it stands (Terraform's jsonencode writes compact JSON)
_ONE_LINE = re.compile(r"^\$\{\s*jsonencode\(.*\)\s*\}$", re.S)
# `${indent(N, ...)}`: the lines after the first are indented by N, the column the first stands at
_INDENT_CALL = re.compile(r"^(\$\{\s*indent\(\s*)(\d+)(\s*,)")


def block_tokens(m: Masked) -> dict[str, tuple[int, int]]:
    """Tokens that stand alone on their line under a key that has no value of its own (`subnetSelectorTerms:` then
    `    ${indent(4, yamlencode(...))}`): an interpolation that renders a block there. token -> (the key's indentation,
    the token's)."""
    out: dict[str, tuple[int, int]] = {}
    lines = m.text.splitlines()
    for i, ln in enumerate(lines):
        tok = ln.strip()
        if not TOKEN_RE.fullmatch(tok) or _ONE_LINE.match(m.tokens.get(tok, "")):
            continue
        prev = next((p for p in reversed(lines[:i]) if p.strip() and not p.lstrip().startswith("#")), None)
        key = _KEY_ONLY.match(prev) if prev is not None else None
        if key is not None and indent_of(ln) > indent_of(prev):
            out[tok] = (indent_of(prev), indent_of(ln) - m.shifted.get(tok, 0))
    return out


def keep_block_tokens(m: Masked, text: str) -> str | None:
    """Masked YAML emitted from a converted object, with each block-rendering token (`block_tokens`) put back on a line
    of its own under its key, at the column it had: a YAML emitter writes `key: __MIG_1__`, which would render the
    block after the key on its line (`subnetSelectorTerms: - id: subnet-1`, no YAML). None when such a key is not at
    its old indentation and the interpolation is not an `indent(N, ...)` whose N can follow it (to the column the key's
    value now stands at), or the token is written elsewhere."""
    blocks = block_tokens(m)
    if not blocks or not any(t in text for t in blocks):
        return text
    out = []
    for ln in text.split("\n"):
        toks = [t for t in TOKEN_RE.findall(ln) for t in [f"__MIG_{t}__"] if t in blocks]
        if not toks:
            out.append(ln)
            continue
        (tok,) = toks if len(toks) == 1 else (None,)
        at = ln.rfind(tok) if tok else -1
        head = ln[:at].rstrip() if at >= 0 else ""
        if tok is None or ln[at + len(tok):].strip() or not head.endswith(":"):
            return None
        key_at, tok_at = blocks[tok]
        delta = indent_of(ln) - key_at
        written = tok
        if delta:                           # the interpolation itself written, its indent() following the key
            src = m.tokens[tok]
            call = _INDENT_CALL.match(src)
            if call is None or int(call.group(2)) != tok_at or tok_at + delta < 0:
                return None
            written = call.group(1) + str(tok_at + delta) + call.group(3) + src[call.end():]
        out += [head, " " * (tok_at + delta) + written]
    return "\n".join(out)
