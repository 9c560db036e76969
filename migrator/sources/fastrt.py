"""ruamel's round-trip tree of a YAML document, scanned and parsed by libyaml (C) instead of ruamel's Python scanner.

ruamel's scanner is most of the cost of a plan on YAML-heavy repositories (about 10 ms for a NodePool). Here libyaml
produces the event stream; its events are composed into ruamel's own nodes, tags resolved by ruamel's (YAML 1.2)
resolver, and ruamel's round-trip constructor builds the tree: the same CommentedMap/CommentedSeq, the same scalar
types (quoted, block, ScalarFloat, ...), the same key and item positions (`lc`) and flow styles. Comments are not
kept (nothing reads them from the tree: edits are made on the text).

Documents this path does not reproduce exactly are left to ruamel: explicit tags, anchors and aliases (merge keys),
and anything libyaml refuses or ruamel's constructor raises on (duplicate keys), so that every error is ruamel's own.
`load` returns None for those; the caller then loads with ruamel.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from ruamel.yaml.nodes import MappingNode, ScalarNode, SequenceNode


@lru_cache(maxsize=1)
def _events():
    """libyaml's event types and parser, or None where PyYAML was built without it."""
    try:
        import yaml as pyyaml
        from yaml.cyaml import CParser
    except (ImportError, AttributeError):
        return None
    pyyaml.CParser = CParser
    return pyyaml


class _Fallback(Exception):
    pass


# where libyaml is laxer than ruamel (a tab inside a plain scalar, `"key":value` with no space in a flow mapping):
# such a text goes to ruamel, which says what is wrong. An escaped quote is inside a double-quoted scalar, where both
# read the same (`listen-ports: "[{\"HTTPS\":443}]"`, an ingress annotation: a 40 KB values file went to ruamel)
_LAX = re.compile(r"\t|(?<!\\)[\"'][ \t]*:[^\s]")
_BREAK = re.compile(r"\r\n|\r|\n")


def _lax(text: str) -> bool:
    """Does the text hold what libyaml reads more laxly than ruamel, outside lines that are whole comments and outside
    block scalars? (A chart's values file documents JSON like `"title_link":"..."` in its comments, an Argo CD
    notifications template writes it in a `|` block, a pipeline's script indents with tabs there: both scanners take
    those as text.)"""
    for m in _LAX.finditer(text):
        line = text.rfind("\n", 0, m.start()) + 1
        if not text[line:m.start()].lstrip(" ").startswith("#") and not _in_block_scalar(text, line):
            return True
    return False


# a line that opens a block scalar: `key: |`, `- >-`, `key: |2 # note`
_BLOCK_HEAD = re.compile(r"(?:^|[ \t:-])[|>][-+0-9]*[ \t]*(?:#.*)?\r?$")


def _in_block_scalar(text: str, start: int) -> bool:
    """Is the line at `start` inside a block scalar: does a line above it, less indented than every line between them,
    open one? (Inside, both scanners take everything after the indentation as text.)"""
    end = text.find("\n", start)
    line = text[start:end if end >= 0 else len(text)]
    indent = len(line) - len(line.lstrip(" "))
    at = start
    while indent > 0 and at > 0:
        prev_start = text.rfind("\n", 0, at - 1) + 1
        prev = text[prev_start:at - 1]
        body = prev.lstrip(" ")
        if body.strip() and not body.startswith("#") and len(prev) - len(body) < indent:
            if _BLOCK_HEAD.search(body):
                return True
            indent = len(prev) - len(body)
        at = prev_start
    return False
# the tag ruamel's resolver gives a scalar depends on its text and quoting only (YAML 1.2, no path resolvers, no
# directive: a document with one goes to ruamel): resolved once per process
_TAGS: dict = {}
_TAGS_MAX = 50_000


def load(text: str, yaml) -> Any:
    """The round-trip tree ruamel's `yaml` (a YAML(typ="rt") instance) would load from `text`, or None where only
    ruamel can say (see the module docstring)."""
    py = _events()
    if py is None or not isinstance(text, str) or _lax(text):
        return None
    try:
        events = py.CParser(str(text))          # a str subclass (a ruamel block scalar) as the plain str
        try:
            node = _compose(events, py, yaml.resolver, text)
        finally:
            events.dispose()
    except (_Fallback, py.YAMLError):
        return None
    if node is None:
        return None
    try:
        return yaml.constructor.construct_document(node)
    except Exception:  # noqa: BLE001 - ruamel says it again, with its own message and line
        return None


class _Mark:
    """A position as ruamel's marks give it (line and column, 0-based)."""
    __slots__ = ("line", "column", "index", "name")

    def __init__(self, line: int, column: int):
        self.line, self.column, self.index, self.name = line, column, 0, "<unicode string>"


def _empty_mark(text: str, lines: list[str], empty, nxt, end_of_mapping: bool):
    """Where ruamel places an empty value (`key:` and nothing): right after the colon (libyaml's own place) when a
    comment follows on its line and another key of the same mapping comes next (ruamel keeps the comment on the
    colon then); else where the next token ends, which at the end of a text with no final line break is the end of
    its last line (libyaml puts it on the line after)."""
    at = empty.start_mark
    rest = lines[at.line][at.column:] if at.line < len(lines) else ""
    if not end_of_mapping and rest.lstrip(" \t").startswith("#"):
        return at
    m = nxt.start_mark
    if m.line >= len(lines):
        return _Mark(len(lines) - 1, len(lines[-1]))
    return m


def _compose(parser, py, resolver, text: str):
    ScalarEvent, SequenceStartEvent, MappingStartEvent = py.ScalarEvent, py.SequenceStartEvent, py.MappingStartEvent
    SequenceEndEvent, MappingEndEvent = py.SequenceEndEvent, py.MappingEndEvent
    get = parser.get_event
    get()                                           # StreamStart
    ev = get()
    if isinstance(ev, py.StreamEndEvent):
        return None
    if not isinstance(ev, py.DocumentStartEvent) or ev.version is not None or ev.tags:
        raise _Fallback                             # a %YAML / %TAG directive: ruamel's reading
    root = None
    stack: list = []                                # open collection nodes; a mapping's pending key

    def add(node):
        nonlocal root
        if not stack:
            root = node
            return
        top = stack[-1]
        if top[0] is None:                          # a sequence
            top[1].value.append(node)
        elif top[2] is None:                        # a mapping waiting for its key
            top[2] = node
        else:
            top[1].value.append((top[2], node))
            top[2] = None
    empty = None            # an empty plain value: ruamel places it by the token after it (_empty_mark)
    lines: list[str] | None = None
    while True:
        ev = get()
        cls = type(ev)
        if empty is not None:
            if lines is None:
                lines = _BREAK.split(text)
            empty.start_mark = empty.end_mark = _empty_mark(text, lines, empty, ev, cls is MappingEndEvent)
            empty = None
        if cls is ScalarEvent:
            if ev.anchor is not None or ev.tag not in (None, "!"):
                raise _Fallback
            style = ev.style or None                # libyaml says '' for plain, ruamel None
            key = (ev.value, ev.implicit)
            tag = _TAGS.get(key)
            if tag is None:
                if len(_TAGS) > _TAGS_MAX:
                    _TAGS.clear()
                tag = _TAGS[key] = resolver.resolve(ScalarNode, ev.value, ev.implicit)
            node = ScalarNode(tag, ev.value, ev.start_mark, ev.end_mark, style=style)
            if not ev.value and style is None:
                top = stack[-1] if stack else None
                if top is None or top[0] is None or top[2] is None or top[1].flow_style:
                    raise _Fallback                 # an empty item, key, document or flow value: ruamel's reading
                empty = node
            add(node)
        elif cls is MappingStartEvent or cls is SequenceStartEvent:
            if ev.anchor is not None or ev.tag is not None:
                raise _Fallback
            kind = MappingNode if cls is MappingStartEvent else SequenceNode
            key = (kind, ev.implicit)
            tag = _TAGS.get(key)
            if tag is None:
                tag = _TAGS[key] = resolver.resolve(kind, None, ev.implicit)
            node = kind(tag, [], ev.start_mark, None, flow_style=ev.flow_style)
            add(node)
            stack.append([True if kind is MappingNode else None, node, None])
        elif cls is SequenceEndEvent or cls is MappingEndEvent:
            stack.pop()[1].end_mark = ev.end_mark
        elif cls is py.DocumentEndEvent:
            break
        else:                                       # an alias
            raise _Fallback
    if not isinstance(get(), py.StreamEndEvent):
        raise _Fallback                             # a second document: ruamel's error
    return root
