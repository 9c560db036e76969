"""Placing text in a repository, shared by every hop: kustomization entries, HCL blocks and spans.

The first hop adds new objects beside the old ones and the v1 hop rewrites objects in place; both find
the exact spans here and write only inside them, in the file's own style.
"""
from __future__ import annotations

import bisect
import posixpath
import re

from .edits import DeleteFile, Edit, TextEdit, comments_above, indent_at, line_end, line_start
from .inventory import Repo
from .sources import hcl as hclsrc
from .sources import yaml as yamlsrc


def _kustomization_in(repo: Repo, d: str):
    """(path, text, parsed object) of the kustomization file of folder d; (None, None, None) when there is none or it
    does not parse."""
    for name in ("kustomization.yaml", "kustomization.yml", "Kustomization"):
        kpath = posixpath.join(d, name) if d else name
        if kpath in repo.files:
            text = repo.text(kpath)
            try:
                return kpath, text, yamlsrc.load(text)
            except yamlsrc.YamlParseError:
                return None, None, None
    return None, None, None


def _kustomization(repo: Repo, old_path: str):
    """(path, text, resources seq, index of old_path) of the kustomization listing old_path, if any: the one of its
    folder, else the closest one above that lists it by a path (`crds/x.yaml`)."""
    d = posixpath.dirname(old_path)
    while True:
        kpath, text, obj = _kustomization_in(repo, d)
        res = obj.get("resources") if isinstance(obj, dict) else None
        if isinstance(res, list):
            idx = next((i for i, x in enumerate(res)
                        if posixpath.normpath(posixpath.join(d, str(x))) == old_path), None)
            if idx is not None:
                return kpath, text, res, idx
        if not d:
            return None
        d = posixpath.dirname(d)


def _listings(repo: Repo, old_path: str) -> list:
    """Every kustomization that lists old_path by a path: the one `_kustomization` finds first, then each other of
    the repository (a sibling environment's `../../production/x.yaml`)."""
    first = _kustomization(repo, old_path)
    out = [first] if first is not None else []
    base = posixpath.basename(old_path)
    for kpath in sorted(repo.named("kustomization.yaml", "kustomization.yml", "Kustomization")):
        if (first is not None and kpath == first[0]) or base not in repo.text(kpath):
            continue
        d = posixpath.dirname(kpath)
        _k, text, obj = _kustomization_in(repo, d)
        res = obj.get("resources") if isinstance(obj, dict) else None
        if not isinstance(res, list):
            continue
        idx = next((i for i, x in enumerate(res) if posixpath.normpath(posixpath.join(d, str(x))) == old_path), None)
        if idx is not None:
            out.append((kpath, text, res, idx))
    return out


def kustomization_insert(repo: Repo, old_path: str, new_path: str, rule: str) -> TextEdit | None:
    """Edit adding new_path to the kustomization.yaml that lists old_path, right after it, same style."""
    found = _kustomization(repo, old_path)
    return _insert(repo, found, old_path, new_path, rule) if found is not None else None


def kustomization_inserts(repo: Repo, old_path: str, new_path: str, rule: str) -> list[TextEdit]:
    """kustomization_insert in every kustomization that lists old_path (each environment that builds it)."""
    return [e for f in _listings(repo, old_path) for e in [_insert(repo, f, old_path, new_path, rule)] if e]


def _insert(repo: Repo, found, old_path: str, new_path: str, rule: str) -> TextEdit | None:
    kpath, text, res, idx = found
    base, new_base = posixpath.basename(old_path), posixpath.basename(new_path)
    kdir = posixpath.dirname(kpath)
    if any(posixpath.normpath(posixpath.join(kdir, str(x))) == posixpath.normpath(new_path) for x in res):
        return None
    lines = text.splitlines(keepends=True)
    ln = res.lc.item(idx)[0]
    off = sum(len(x) for x in lines[: ln + 1])
    nl = repo.files[kpath].newline
    line = lines[ln].rstrip("\r\n").replace(str(res[idx]), str(res[idx]).replace(base, new_base), 1)
    if lines[ln].endswith("\n"):
        return TextEdit(kpath, off, off, line + nl, rule)
    return TextEdit(kpath, off, off, nl + line, rule)


def kustomization_remove(repo: Repo, old_path: str, rule: str) -> TextEdit | None:
    found = _kustomization(repo, old_path)
    return _remove(found, rule) if found is not None else None


def kustomization_removes(repo: Repo, old_path: str, rule: str) -> list[TextEdit]:
    """kustomization_remove in every kustomization that lists old_path."""
    return [_remove(f, rule) for f in _listings(repo, old_path)]


def _remove(found, rule: str) -> TextEdit:
    kpath, text, res, idx = found
    lines = text.splitlines(keepends=True)
    ln = res.lc.item(idx)[0]
    off = sum(len(x) for x in lines[:ln])
    return TextEdit(kpath, off, off + len(lines[ln]), "", rule)


def configmap_generator(repo: Repo, near: str, name: str):
    """(kustomization path, its text, configMapGenerator seq, index) of the generator making ConfigMap `name` in the
    kustomization of `near`'s folder or the closest folder above it that has one; None if none does."""
    d = posixpath.dirname(near)
    while True:
        kpath, text, obj = _kustomization_in(repo, d)
        gens = obj.get("configMapGenerator") if isinstance(obj, dict) else None
        if isinstance(gens, list):
            idx = next((i for i, g in enumerate(gens) if isinstance(g, dict) and g.get("name") == name), None)
            if idx is not None:
                return kpath, text, obj, idx
        if not d:
            return None
        d = posixpath.dirname(d)


def generator_files(kpath: str, gen: dict) -> list[str]:
    """The repository files a configMapGenerator entry reads (`files`, `envs`), relative to the root."""
    out = []
    for f in list(gen.get("files") or []) + list(gen.get("envs") or []):
        rel = str(f).partition("=")[2] if "=" in str(f) else str(f)
        out.append(posixpath.normpath(posixpath.join(posixpath.dirname(kpath), rel)))
    return out


def generator_remove(repo: Repo, kpath: str, text: str, obj, idx: int, rule: str) -> list[TextEdit]:
    """Edits removing entry `idx` of a kustomization's configMapGenerator (its lines, up to the next entry or the next
    top-level key, blank lines and comments after it kept); the `configMapGenerator:` key too when it was the only entry, and
    `generatorOptions:` when no generator is left."""
    gens = obj["configMapGenerator"]
    lines = text.splitlines(keepends=True)
    keys = list(obj)

    def key_lines(key: str) -> tuple[int, int]:
        after = keys.index(key) + 1
        stop = obj.lc.key(keys[after])[0] if after < len(keys) else len(lines)
        return obj.lc.key(key)[0], stop

    spans = []
    if len(gens) == 1:
        spans.append(key_lines("configMapGenerator"))
        if "generatorOptions" in obj and not obj.get("secretGenerator"):
            spans.append(key_lines("generatorOptions"))
    else:
        stop = gens.lc.item(idx + 1)[0] if idx + 1 < len(gens) else key_lines("configMapGenerator")[1]
        spans.append((gens.lc.item(idx)[0], stop))
    out = []
    for first, stop in sorted(spans):
        while stop > first + 1 and (not lines[stop - 1].strip() or lines[stop - 1].startswith("#")):
            stop -= 1           # blank lines and the next key's own comments stay
        s = sum(len(x) for x in lines[:first])
        out.append(TextEdit(kpath, s, s + sum(len(x) for x in lines[first:stop]), "", rule))
    return out


def file_calls(e: hclsrc.Expr):
    if e.kind == "call":
        if e.name in ("templatefile", "file"):
            yield e
        for i in e.items:
            yield from file_calls(i)
    for i in e.items:
        if e.kind != "call":
            yield from file_calls(i)
    for en in e.entries:
        yield from file_calls(en.value)


def splice(text: str, start: int, end: int, repl: list[tuple[int, int, str]]) -> str:
    out, pos = [], start
    for s, e, t in sorted(repl):
        out.append(text[pos:s])
        out.append(t)
        pos = e
    out.append(text[pos:end])
    return "".join(out)


def hcl_step(text: str, b: hclsrc.Block) -> str:
    """Indentation step used inside a block (for nested objects)."""
    first = text[b.body_start:b.body_end]
    for ln in first.splitlines():
        if ln.strip():
            ind = len(ln) - len(ln.lstrip(" "))
            outer = len(indent_at(text, b.start))
            return " " * max(ind - outer, 2)
    return "  "


def block_span(text: str, b: hclsrc.Block) -> tuple[int, int]:
    """Span of a block's lines, with the comment lines directly above it and one blank line."""
    s = comments_above(text, line_start(text, b.start))
    e = line_end(text, b.end)
    nxt = line_end(text, e)
    if e < len(text) and not text[e:nxt].strip():
        e = nxt
    elif s > 0:
        prev = line_start(text, s - 1)
        if not text[prev:s].strip():
            s = prev
    return s, e


_ATTR = re.compile(r'^([ \t]*)("(?:[^"\\]|\\.)*"|[A-Za-z_][A-Za-z0-9_-]*)([ \t]*)=(?!=)')


def align_attributes(text: str) -> str:
    """`terraform fmt` alignment of `=` in runs of consecutive attribute lines at one indentation (used on blocks
    migrator writes, e.g. after dropping an attribute from a copied block)."""
    lines = text.splitlines(keepends=True)
    for run in _attribute_runs(lines):
        for i, ln in zip(run, _aligned(lines, run)):
            lines[i] = ln
    return "".join(lines)


_HEREDOC = re.compile(r"<<-?([A-Za-z_][A-Za-z0-9_]*)\s*$")


def _attribute_runs(lines: list[str]) -> list[list[int]]:
    """Indices of the lines of every run terraform fmt aligns: consecutive one-line attributes at one indentation
    (a value spanning several lines, a blank line, a comment or a block ends a run). An attribute opening a heredoc
    is one of them, and its body neither ends the run nor joins it (`count` aligns with `yaml_body = <<-YAML`)."""
    runs: list[list[int]] = []
    run: list[int] = []
    marker = None
    for i, ln in enumerate(lines):
        if marker is not None:
            if ln.strip() == marker:
                marker = None
            continue
        h = _HEREDOC.search(ln.rstrip("\r\n"))
        m = _ATTR.match(ln)
        rest = ln[m.end():] if m else ""
        single = m is not None and sum(rest.count(c) for c in "{[(") <= sum(rest.count(c) for c in "}])")
        if single and (not run or _ATTR.match(lines[run[0]]).group(1) == m.group(1)):
            run.append(i)
        else:
            if run:
                runs.append(run)
            run = [i] if single else []
        if h is not None:
            marker = h.group(1)
    if run:
        runs.append(run)
    return runs


def _aligned(lines: list[str], run: list[int]) -> list[str]:
    width = max(len(_ATTR.match(lines[i]).group(2)) for i in run)
    out = []
    for i in run:
        m = _ATTR.match(lines[i])
        out.append(m.group(1) + m.group(2).ljust(width) + " =" + lines[i][m.end():])
    return out


def realign_edited(old: str, new: str, spans: list[tuple[int, int]]) -> str:
    """`=` alignment of the attribute runs an edit touched in an HCL file, as terraform fmt writes it, when the file
    was written that way before (its runs all aligned): a renamed, moved or removed key leaves its neighbours'
    padding right. A file whose author aligns otherwise keeps every byte outside the edits."""
    before = old.splitlines(keepends=True)
    lines = new.splitlines(keepends=True)
    starts, pos = [], 0
    for ln in lines:
        starts.append(pos)
        pos += len(ln)
    touched: set[int] = set()
    for a, b in spans:
        first = max(0, bisect.bisect_right(starts, a) - 1)
        last = max(first, bisect.bisect_right(starts, max(a, b - 1)) - 1)
        touched.update(range(max(0, first - 1), last + 2))      # a removed line changes the run above it, a line
                                                                # made multi-line splits the run below it
    runs = _attribute_runs(lines)
    if any(_aligned(before, r) != [before[i] for i in r] for r in _attribute_runs(before)):
        return _author_aligned(lines, runs, touched, spans, starts)
    for run in runs:
        if touched.intersection(run):
            for i, ln in zip(run, _aligned(lines, run)):
                lines[i] = ln
    in_runs = {i for run in runs for i in run}
    for i in sorted(touched):
        m = _ATTR.match(lines[i]) if i < len(lines) and i not in in_runs else None
        if m and m.group(3) != " " and not _HEREDOC.search(lines[i].rstrip("\r\n")):
            lines[i] = m.group(1) + m.group(2) + " =" + lines[i][m.end():]   # a value made multi-line: no run, one space
    return "".join(lines)


def _author_aligned(lines: list[str], runs: list[list[int]], touched: set[int], spans, starts) -> str:
    """A file aligned its author's way: a line an edit wrote whole into a run whose other lines share one `=`
    column takes that column (when its key fits), every other byte as it was."""
    ends = starts[1:] + [sum(len(x) for x in lines)]
    written = {i for a, b in spans for i in range(len(lines)) if a <= starts[i] and ends[i] <= b}   # whole lines
    for run in runs:
        mine = [i for i in run if i in written and i in touched]
        cols = {len(_ATTR.match(lines[i]).group(1)) + len(_ATTR.match(lines[i]).group(2))
                + len(_ATTR.match(lines[i]).group(3)) for i in run if i not in written}
        if not mine or len(cols) != 1:
            continue
        col = cols.pop()
        for i in mine:
            m = _ATTR.match(lines[i])
            width = col - len(m.group(1))
            if len(m.group(2)) < width:
                lines[i] = m.group(1) + m.group(2).ljust(width) + "=" + lines[i][m.end():]
    return "".join(lines)


def relabel(b: hclsrc.Block, label: str) -> tuple[int, int, str]:
    """Replacement giving a copied resource block a new name."""
    return b.label_spans[1][0], b.label_spans[1][1], hclsrc.quote(label)


def heredoc_body(text: str, b: hclsrc.Block, body: str) -> tuple[int, int, str]:
    """Replacement of a kubectl_manifest heredoc body by `body`, indented like the heredoc (`<<-` keeps its pad)."""
    h = b.attr("yaml_body").heredoc
    pad = text[line_start(text, h.body_start): line_start(text, h.body_start) + h.indent] if h.trim else ""
    return h.body_start, h.body_end, "".join((pad + ln if ln.strip() else ln) for ln in body.splitlines(keepends=True))


def manifest_object(text: str, b: hclsrc.Block, expr: hclsrc.Expr, obj, tokens: dict) -> tuple[int, int, str]:
    """Replacement of an HCL object expression (kubernetes_manifest's `manifest`, the yamlencode() argument of a
    kubectl_manifest's `yaml_body`) by `obj` rendered in the block's style."""
    attr = b.attributes.get("manifest") or b.attributes["yaml_body"]
    return expr.start, expr.end, hclsrc.render_value(obj, tokens, indent_at(text, attr.start), hcl_step(text, b))


def _orphan_headers(text: str, spans: list[list[int]]) -> list[list[int]]:
    """The removed spans, with every section header they leave empty (`emptied_headings`)."""
    return _merged(list(spans) + emptied_headings(text, spans))


def emptied_headings(text: str, spans) -> list[list[int]]:
    """The spans of the section headers that removing `spans` leaves empty: a comment run at the top level (after a
    blank line, a block's closing brace or the top) whose section - down to the next comment run or the end - held
    removed blocks and nothing else (with the blank lines under it)."""
    starts, pos = [], 0
    lines = text.splitlines(keepends=True)
    for ln in lines:
        starts.append(pos)
        pos += len(ln)
    gone = [any(s <= a and a + len(ln) <= e for s, e in spans) for a, ln in zip(starts, lines)]
    note = [ln.strip().startswith(("#", "//")) and not g for ln, g in zip(lines, gone)]
    blank = [not ln.strip() for ln in lines]
    out: list[list[int]] = []
    i = 0
    while i < len(lines):
        if not note[i] or (i > 0 and not (blank[i - 1] or gone[i - 1] or lines[i - 1].rstrip() == "}")):
            i += 1
            continue
        j = i
        while j < len(lines) and note[j]:
            j += 1
        k = j
        while k < len(lines) and not note[k] and (blank[k] or gone[k]):
            k += 1
        if (k == len(lines) or note[k]) and any(gone[j:k]):
            first = next(x for x in range(j, k) if gone[x])       # with the blank lines under it
            out.append([starts[i], starts[first]])
        i = j
    return out


def _merged(spans) -> list[list[int]]:
    """Spans sorted, the overlapping and touching ones joined."""
    merged: list[list[int]] = []
    for s, e in sorted(spans):
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    return merged


def remove_blocks(repo, path: str, blocks: list[hclsrc.Block], rule: str) -> list[Edit]:
    """Delete blocks of one file (each with its comment lines); the whole file when nothing else is left in it."""
    text = repo.text(path)
    merged = _orphan_headers(text, _merged(block_span(text, b) for b in blocks))
    rest = "".join(text[a:b] for a, b in zip([0] + [e for _, e in merged], [s for s, _ in merged] + [len(text)]))
    if not "".join(ln for ln in rest.splitlines() if not ln.strip().startswith(("#", "//"))).strip():
        return [DeleteFile(path, rule)]
    return [TextEdit(path, s, e, "", rule) for s, e in merged]
