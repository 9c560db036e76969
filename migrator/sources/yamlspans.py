"""Spans of block-style YAML list items and keys in a document's text (ruamel's line/column marks), so an item can be
removed with the comments that are its own, or an item appended as the list writes its items."""
from __future__ import annotations

from ..edits import comments_above, line_end, line_start


def yaml_item_span(text: str, doc_start: int, seq, index: int) -> tuple[int, int]:
    """Span of a block-style YAML list item (ruamel's `seq` of the document starting at doc_start): from the comments
    directly above its `- ` line (and the blank line before them) to the next item's comments, or to the end of the
    list (the next line no deeper than the dash)."""
    lines = text[doc_start:].splitlines(keepends=True)

    def offset(line: int) -> int:
        return doc_start + sum(len(x) for x in lines[:line])
    first = seq.lc.item(index)[0]
    start = comments_above(text, offset(first))
    prev_blank = doc_start < start and not text[line_start(text, start - 1):start].strip()
    absorbed = prev_blank and start < offset(first)
    if absorbed:
        start = line_start(text, start - 1)
    if index + 1 < len(seq):
        end = comments_above(text, offset(seq.lc.item(index + 1)[0]))
        while end > offset(first + 1) and not text[line_start(text, end - 1):end].strip():
            end = line_start(text, end - 1)
        if not absorbed and end < len(text) and not text[end:line_end(text, end)].strip():
            if prev_blank:                  # blank lines around it: one goes with it
                start = line_start(text, start - 1)
            else:
                end = line_end(text, end)
        return start, end
    ind = len(lines[first]) - len(lines[first].lstrip(" "))
    end = first + 1
    while end < len(lines) and (not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip(" ")) > ind):
        end += 1
    while end > first + 1 and not lines[end - 1].strip():
        end -= 1
    return start, offset(end)


def yaml_entry_span(text: str, doc_start: int, mapping, key: str, index: int) -> tuple[int, int]:
    """Span of item `index` of the block list under `mapping[key]`; the key's own line with it when the item is the
    list's only one (an empty key would be read as null)."""
    seq = mapping[key]
    if len(seq) > 1:
        return yaml_item_span(text, doc_start, seq, index)
    return yaml_key_start(text, doc_start, mapping, key), yaml_item_span(text, doc_start, seq, 0)[1]


def yaml_key_start(text: str, doc_start: int, mapping, key: str) -> int:
    """Offset of the line holding `key:` of a block mapping."""
    lines = text[doc_start:].splitlines(keepends=True)
    return doc_start + sum(len(x) for x in lines[:mapping.lc.key(key)[0]])


def yaml_list_end(text: str, doc_start: int, seq) -> tuple[int, int]:
    """(offset just after the last item of a block-style YAML list, the column of its dashes): where an item is
    appended as the list writes its items."""
    lines = text[doc_start:].splitlines(keepends=True)
    last = len(seq) - 1
    first_line = seq.lc.item(0)[0]
    col = len(lines[first_line]) - len(lines[first_line].lstrip(" "))
    end = seq.lc.item(last)[0] + 1
    while end < len(lines) and (not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip(" ")) > col):
        end += 1
    while end > seq.lc.item(last)[0] + 1 and not lines[end - 1].strip():
        end -= 1
    return doc_start + sum(len(x) for x in lines[:end]), col
