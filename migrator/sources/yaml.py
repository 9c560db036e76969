"""YAML with spans: split multi-document text, load documents round-trip, emit new objects.

Existing documents are never re-serialised. New objects (converted NodePools, EC2NodeClasses) are
emitted by :class:`Emitter`, which keeps the quoting and flow style of scalars copied from the
source (ruamel round-trip types), follows the source file's indentation, and records the output
lines of every path so template directives can be re-attached.
"""
from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError
from ruamel.yaml.scalarstring import (
    DoubleQuotedScalarString,
    FoldedScalarString,
    LiteralScalarString,
    SingleQuotedScalarString,
)

from . import fastrt
from .anchored import AtLineStart

Path = tuple  # tuple of str keys / int indexes

_DOC_SEP = re.compile(r"^---[ \t]*(?:#.*)?$|^\.\.\.[ \t]*$")


class YamlParseError(ValueError):
    def __init__(self, message: str, line: int):
        super().__init__(message)
        self.line = line   # 1-based, relative to the parsed text


@dataclass
class DocSpan:
    start: int          # char offset of the document body in the file text
    end: int
    text: str
    first_line: int     # 0-based line of `start`


# a separator line of a text whose only line break is \n (the common case: found by one search, not line by line)
# (each searched from its literal start: sources/anchored.py)
_DASH_LINES = AtLineStart(r"---[ \t]*(?:#.*)?$", lead="")
_DOT_LINES = AtLineStart(r"\.\.\.[ \t]*$", lead="")
# every other character str.splitlines() breaks at
_OTHER_BREAKS = re.compile("[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_ASCII_BREAKS = "\r\x0b\x0c\x1c\x1d\x1e"


def _other_breaks(text: str) -> bool:
    """Does str.splitlines() break the text anywhere but at \\n? (An ASCII text, as most are, is searched for its six
    such characters at memory-scan speed; a character class is tried at every character.)"""
    if text.isascii():
        return any(c in text for c in _ASCII_BREAKS)
    return _OTHER_BREAKS.search(text) is not None


def _separator_lines(text: str) -> list[re.Match]:
    """The `---` / `...` lines of a text whose lines end at \\n only, in order."""
    found = list(_DASH_LINES.finditer(text))
    if "..." in text:
        found = sorted([*found, *_DOT_LINES.finditer(text)], key=lambda m: m.start())
    return found


def split_documents(text: str) -> list[DocSpan]:
    """Split a YAML stream at `---` / `...` lines. Separator lines are not part of any document."""
    docs: list[DocSpan] = []
    start = 0
    start_line = 0
    plain = not _other_breaks(text)
    if plain:
        line, counted = 0, 0
        for m in _separator_lines(text):
            line += text.count("\n", counted, m.start())
            counted = m.start()
            docs.append(DocSpan(start, m.start(), text[start:m.start()], start_line))
            start = m.end() + 1 if m.end() < len(text) else m.end()
            start_line = line + 1
    else:
        pos = 0
        for lineno, ln in enumerate(text.splitlines(keepends=True)):
            if _DOC_SEP.match(ln.rstrip("\r\n")):
                docs.append(DocSpan(start, pos, text[start:pos], start_line))
                start = pos + len(ln)
                start_line = lineno + 1
            pos += len(ln)
    docs.append(DocSpan(start, len(text), text[start:], start_line))
    if plain:                                       # lines end at \n only: one search finds a line of content
        return [d for d in docs if _CONTENT_LINE.search(d.text)]
    return [d for d in docs if d.text.strip() and not all(
        ln.strip().startswith("#") or not ln.strip() for ln in d.text.splitlines())]


# a line that is neither blank nor a comment (what makes a document more than comments)
_CONTENT_LINE = re.compile(r"^\s*[^#\s]", re.M)


# one round-trip loader, reused (ruamel's constructor forgets a document once it is built; a YAML() costs a search
# of ruamel's folder for plug-ins); dropped whenever a load did not finish, so no half-built state is carried over
_RT: list[YAML] = []


def _rt() -> YAML:
    if not _RT:
        y = YAML(typ="rt")
        y.preserve_quotes = True
        _RT.append(y)
    return _RT[0]


# the tree of each YAML text read in this process, by its exact text: the same document in another file (an
# environment's copy), in the plan's second pass, or checked after a write is parsed once. Shared, never copied:
# no reader changes a tree (edits are made on the text; the trees
# after whole plans: tests/test_shared_trees.py)
_TREES: dict[str, Any] = {}
_TREES_MAX = 4096


def load(text: str) -> Any:
    """The round-trip tree of one YAML document (YamlParseError with its line), parsed once per text and process."""
    got = _TREES.get(text)
    if got is not None:
        return got
    try:
        obj = fastrt.load(text, _rt())            # libyaml's scan, ruamel's tree; None: ruamel reads it
        if obj is None:
            _RT.clear()
            obj = _rt().load(text)
        if len(_TREES) >= _TREES_MAX:
            del _TREES[next(iter(_TREES))]          # the oldest: a process that reads more runs on
        _TREES[text] = obj
        return obj
    except YAMLError as e:
        _RT.clear()
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        line = (mark.line + 1) if mark is not None else 1
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise YamlParseError(f"YAML does not parse: {problem}", line) from None
    except BaseException:
        _RT.clear()
        raise


def safe_load(text: str) -> Any:
    return YAML(typ="safe", pure=True).load(text)


@lru_cache(maxsize=1)
def _fast_loader():
    """PyYAML's C loader (libyaml) with YAML 1.2's booleans only (`on`, `yes` stay strings), for reading values where
    no position is needed: about twenty times faster than the round-trip loader. None where libyaml is missing."""
    try:
        import yaml as pyyaml
        base = pyyaml.CSafeLoader
    except (ImportError, AttributeError):
        return None

    class Loader(base):     # type: ignore[misc, valid-type]
        pass
    bool_tag = "tag:yaml.org,2002:bool"
    Loader.yaml_implicit_resolvers = {k: [(t, rx) for t, rx in v if t != bool_tag]
                                      for k, v in base.yaml_implicit_resolvers.items()}
    Loader.add_implicit_resolver(bool_tag, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))
    return Loader


def values(text: str) -> Any:
    """The plain values of one YAML document (dicts, lists, scalars; no positions, no comments): libyaml where it is
    installed, else the pure-Python safe loader. YamlParseError as load()."""
    loader = _fast_loader()
    try:
        if loader is not None:
            import yaml as pyyaml
            return pyyaml.load(text, Loader=loader)    # noqa: S506 - a SafeLoader subclass
        return _safe_yaml().load(text)
    except Exception as e:     # noqa: BLE001 - both loaders' errors become one
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        raise YamlParseError(f"YAML does not parse: {getattr(e, 'problem', None) or e}",
                             (mark.line + 1) if mark is not None else 1) from None


def load_all_safe(text: str) -> list[Any]:
    return [d for d in YAML(typ="safe", pure=True).load_all(text) if d is not None]


def line_paths(node: Any, path: Path = ()) -> dict[int, Path]:
    """Map 0-based source line -> path of the map key / sequence item starting on that line."""
    out: dict[int, Path] = {}
    if isinstance(node, CommentedMap):
        for k, v in node.items():
            try:
                line = node.lc.key(k)[0]
            except Exception:  # noqa: BLE001 - keys without position info (merged keys)
                continue
            out.setdefault(line, path + (k,))
            out.update({ln: p for ln, p in line_paths(v, path + (k,)).items() if ln not in out})
    elif isinstance(node, CommentedSeq):
        for i, v in enumerate(node):
            try:
                line = node.lc.item(i)[0]
            except Exception:  # noqa: BLE001
                continue
            out.setdefault(line, path + (i,))
            out.update({ln: p for ln, p in line_paths(v, path + (i,)).items() if ln not in out})
    return out


@dataclass
class Style:
    indent: int = 2
    indent_sequences: bool = True    # `key:\n  - item` (True) or `key:\n- item` (False)


def detect_style(text: str) -> Style:
    """Indentation width and sequence style used by an existing YAML text."""
    lines = [ln.rstrip() for ln in text.splitlines()]
    widths: list[int] = []
    seq: bool | None = None
    prev = None
    for ln in lines:
        if not ln.strip() or ln.lstrip().startswith("#"):
            continue
        ind = len(ln) - len(ln.lstrip(" "))
        if prev is not None:
            pind, ptext = prev
            if ptext.endswith(":"):
                if ln.lstrip().startswith("- "):
                    if seq is None:
                        seq = ind > pind
                    if ind > pind:
                        widths.append(ind - pind)
                elif ind > pind:
                    widths.append(ind - pind)
        prev = (ind, ln.strip())
    indent = min(widths) if widths else 2
    return Style(indent=indent if indent in (2, 3, 4) else 2, indent_sequences=True if seq is None else seq)


# a word of letters, digits and `-_./` that starts with a letter is a plain string in YAML unless it is one of
# the words a resolver reads as a bool or null; YAML 1.1's words (yes, no, on, off, y, n) included, because
# Kubernetes' YAML parser (go-yaml v2 under sigs.k8s.io/yaml) reads them as bools: such strings are quoted
_PLAIN_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_./-]*")
_RESOLVED_WORDS = frozenset("true false yes no on off y n null".split())


@lru_cache(maxsize=1)
def _safe_yaml() -> YAML:
    return YAML(typ="safe", pure=True)


@lru_cache(maxsize=4096)
def _plain_ok(s: str, flow: bool) -> bool:
    if not s or s != s.strip() or "\n" in s or "\r" in s or "\t" in s:
        return False
    if flow and any(c in s for c in ",[]{}"):
        return False
    if s.lower() in _RESOLVED_WORDS:
        return False
    if _PLAIN_WORD.fullmatch(s):
        return True
    try:
        got = _safe_yaml().load(f"k: {s}\n")
    except Exception:  # noqa: BLE001
        return False
    return isinstance(got, dict) and got.get("k") == s and isinstance(got.get("k"), str)


def _double(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


def _single(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def format_scalar(v: Any, flow: bool = False) -> str:
    """One-line representation of a scalar, keeping the source's quoting when known."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if type(v).__name__ == "ScalarBoolean":
        return "true" if v else "false"
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return str(v) if not isinstance(v, float) else repr(float(v))
    s = str(v)
    if isinstance(v, DoubleQuotedScalarString):
        return _double(s)
    if isinstance(v, SingleQuotedScalarString):
        return _single(s) if "\n" not in s else _double(s)
    if _plain_ok(s, flow):
        return s
    return _double(s)


def _is_scalar(v: Any) -> bool:
    return not isinstance(v, (dict, list))


@dataclass
class Emitted:
    text: str
    ranges: dict[Path, tuple[int, int]] = field(default_factory=dict)   # path -> (first, last) line


class Emitter:
    def __init__(self, style: Style | None = None):
        self.style = style or Style()
        self.lines: list[str] = []
        self.ranges: dict[Path, tuple[int, int]] = {}

    def emit(self, obj: Any, base_indent: int = 0) -> Emitted:
        self.lines = []
        self.ranges = {}
        self._map(obj, base_indent, ())
        return Emitted("".join(ln + "\n" for ln in self.lines), dict(self.ranges))

    # -- helpers -------------------------------------------------------------------------
    def _flow(self, v: Any) -> str | None:
        """Flow text for a value that was flow-styled in the source and holds only scalars."""
        fa = getattr(v, "fa", None)
        if fa is None or not fa.flow_style():
            return None
        if isinstance(v, list) and all(_is_scalar(x) for x in v):
            return "[" + ", ".join(format_scalar(x, flow=True) for x in v) + "]"
        if isinstance(v, dict) and all(_is_scalar(x) for x in v.values()):
            inner = ", ".join(f"{format_scalar(k, flow=True)}: {format_scalar(x, flow=True)}" for k, x in v.items())
            return "{" + inner + "}" if inner else "{}"
        return None

    def _block_scalar(self, key_prefix: str, v: str, indent: int) -> None:
        chomp = "-" if not v.endswith("\n") else ("+" if v.endswith("\n\n") else "")
        body = v[:-1] if v.endswith("\n") and chomp == "" else v
        if chomp == "+":
            body = v[:-1]
        ind = " " * (indent + self.style.indent)
        indicator = str(self.style.indent) if body[:1] in (" ", "\t") else ""
        self.lines.append(f"{key_prefix}|{indicator}{chomp}")
        for ln in body.split("\n"):
            self.lines.append(ind + ln if ln else "")

    def _value_after_key(self, prefix: str, v: Any, indent: int, path: Path) -> None:
        """Emit `prefix` (e.g. `key:` or `- key:`) followed by value v."""
        flow = self._flow(v)
        if flow is not None:
            self.lines.append(f"{prefix} {flow}")
        elif isinstance(v, dict):
            if not v:
                self.lines.append(f"{prefix} {{}}")
            else:
                self.lines.append(prefix)
                self._map(v, indent + self.style.indent, path)
        elif isinstance(v, list):
            if not v:
                self.lines.append(f"{prefix} []")
            else:
                self.lines.append(prefix)
                seq_indent = indent + (self.style.indent if self.style.indent_sequences else 0)
                self._seq(v, seq_indent, path)
        elif isinstance(v, (LiteralScalarString, FoldedScalarString)) or (
            isinstance(v, str) and "\n" in v.rstrip("\n") and not isinstance(v, (DoubleQuotedScalarString, SingleQuotedScalarString))
        ):
            self._block_scalar(prefix + " ", str(v), indent)
        else:
            self.lines.append(f"{prefix} {format_scalar(v)}")

    def _map(self, m: dict, indent: int, path: Path) -> None:
        pad = " " * indent
        for k, v in m.items():
            start = len(self.lines)
            self._value_after_key(f"{pad}{format_scalar(k)}:", v, indent, path + (k,))
            self.ranges[path + (k,)] = (start, len(self.lines) - 1)

    def _seq(self, s: list, indent: int, path: Path) -> None:
        pad = " " * indent
        for i, v in enumerate(s):
            start = len(self.lines)
            if isinstance(v, dict) and v and self._flow(v) is None:
                # first key on the dash line, the rest aligned under it
                items = list(v.items())
                inner = indent + 2
                k0, v0 = items[0]
                sub_start = len(self.lines)
                self._value_after_key(f"{pad}- {format_scalar(k0)}:", v0, inner, path + (i, k0))
                self.ranges[path + (i, k0)] = (sub_start, len(self.lines) - 1)
                rest = type(v)() if isinstance(v, CommentedMap) else {}
                for k, x in items[1:]:
                    rest[k] = x
                self._map(rest, inner, path + (i,))
            elif isinstance(v, list) and v and self._flow(v) is None:
                self.lines.append(f"{pad}-")
                self._seq(v, indent + self.style.indent, path + (i,))
            else:
                self._value_after_key(f"{pad}-", v, indent, path + (i,))
            self.ranges[path + (i,)] = (start, len(self.lines) - 1)


def dump_plain(obj: Any) -> str:
    """Plain YAML dump for messages and debugging."""
    buf = io.StringIO()
    y = YAML()
    y.dump(obj, buf)
    return buf.getvalue()
