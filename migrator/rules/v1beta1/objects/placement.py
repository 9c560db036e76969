"""Where the new objects are written: beside the old ones in their YAML file (comments and Helm or Jinja directives
carried), in a new file listed by every kustomization that lists the old one, or as a kubectl_manifest or
kubernetes_manifest beside the old resource (a template beside the old template)."""
from __future__ import annotations

import posixpath
import re
from typing import Any


from ....edits import NewFile, to_newline
from ....inventory import Manifest
from ....sources import templates
from ....sources import yaml as yamlsrc
from ..convert import Converted

from ....placement import kustomization_inserts, kustomization_removes
from .hclplace import TerraformPlacement


def _comment_target(c: Converted, path: tuple) -> tuple | None:
    q = c.map_path(path)
    if q is not None:
        return q
    below = [d for s, d, _ in c.moves if s[: len(path)] == path]
    return below[0] if len(below) == 1 else None


def _eol_comment(obj: Any, path: tuple, src: list[str]) -> str | None:
    """The end-of-line comment of a scalar entry in the source (`expireAfter: 1440h # 60 days`), read from the text
    at the scalar's position (the parsed tree's positions are the masked text's, `src`); None if there is none."""
    parent = obj
    for p in path[:-1]:
        try:
            parent = parent[p]
        except (KeyError, IndexError, TypeError):
            return None
    key = path[-1]
    try:
        value = parent[key]
        line, col = parent.lc.value(key) if isinstance(parent, dict) else parent.lc.item(key)
    except (KeyError, IndexError, TypeError, AttributeError):
        return None
    if isinstance(value, (dict, list)) or value is None or line >= len(src):
        return None
    rest = _after_scalar(src[line][col:])
    if rest is None:
        return None
    m = re.match(r"[ \t]+(#.*)$", rest)
    return m.group(1).strip() if m else None


def _after_scalar(text: str) -> str | None:
    """What follows a one-line scalar at the start of `text`: after its closing quote, or after a plain scalar (which
    a ` #` ends); None for a quoted scalar that goes on to the next line."""
    if text[:1] == "'":
        i = 1
        while True:
            j = text.find("'", i)
            if j < 0:
                return None
            if text[j + 1:j + 2] == "'":
                i = j + 2
                continue
            return text[j + 1:]
    if text[:1] == '"':
        i = 1
        while i < len(text):
            if text[i] == "\\":
                i += 2
                continue
            if text[i] == '"':
                return text[i + 1:]
            i += 1
        return None
    m = re.search(r"[ \t]#", text)
    return text[m.start():] if m else ""


class ObjectPlacement(TerraformPlacement):
    """Where the new objects are written: beside the old ones in their YAML file (comments and directives carried),
    a new file listed in the kustomization, or a kubectl_manifest/kubernetes_manifest beside the old resource."""

    # a copied templatefile() call passes only the variables its new template reads (the Auto Mode hop: a twin that
    # still passed the node role of Karpenter's module would keep that module from ever being removed)
    unused_template_variables_go = False

    # -- rendering -------------------------------------------------------------------------------
    def yaml_text(self, m: Manifest, c: Converted) -> str | None:
        em = yamlsrc.Emitter(m.style).emit(c.obj)
        lines = self.carry_comments(m, c, em, em.text.splitlines())
        if m.masked.directives:
            placed = self.place_directives(m, c, em, lines)
            if placed is None:
                return None
            lines = placed
        if m.masked.helm:
            lines = self.reindent_tokens(m, lines)
        text = templates.keep_block_tokens(m.masked, "\n".join(lines) + "\n")
        if text is None:
            src = ", ".join(f"`{m.masked.tokens[t]}`" for t in templates.block_tokens(m.masked))
            self.finding("MIG-TPL-001", "error", m.path, m.line,
                         f"{src} renders a block on the lines under its key, and in the converted object that key is "
                         "not where it was: migrator cannot keep it rendering valid YAML there",
                         "write the new template by hand from the plan's other objects; nothing was generated for it")
            return None
        return m.masked.unmask(text)

    def carry_comments(self, m: Manifest, c: Converted, em: yamlsrc.Emitted, lines: list[str]) -> list[str]:
        """Full-line comments go above the field they described; end-of-line comments follow their scalar."""
        src = m.masked.text.splitlines()
        lines = list(lines)
        above: dict[int, list[str]] = {}
        for ln, path in sorted(m.line_map.items()):
            q = _comment_target(c, path)
            if q is None or q not in em.ranges:
                continue
            first, last = em.ranges[q]
            block = []
            i = ln - 1
            while i >= 0 and src[i].strip().startswith("#") and not src[i].strip().startswith("#__MIGDIR_"):
                block.insert(0, src[i].strip())
                i -= 1
            if block:
                ind = lines[first][: len(lines[first]) - len(lines[first].lstrip())]
                above.setdefault(first, []).extend(ind + b for b in block)
            eol = _eol_comment(m.obj, path, src)
            if eol and first == last and "#" not in lines[first] and not lines[first].rstrip().endswith((":", "|", "|-")):
                lines[first] = f"{lines[first]} {eol}"
        if not above:
            return lines
        out = []
        for i, ln in enumerate(lines):
            out.extend(above.get(i, []))
            out.append(ln)
        # emitted ranges shift; recompute them for directive placement
        shift = 0
        starts = {}
        for i in range(len(lines)):
            shift += len(above.get(i, []))
            starts[i] = i + shift
        em.ranges.update({p: (starts[a], starts[b]) for p, (a, b) in em.ranges.items()})
        return out

    def place_directives(self, m: Manifest, c: Converted, em: yamlsrc.Emitted, lines: list[str]) -> list[str] | None:
        """Carry whole-line template directives (%{ if }, %{ for }; Helm's {{- if }}, {{- range }}, {{- with }},
        {{ toYaml ... | nindent N }}) to where their content moved."""
        ds = m.masked.directives
        src = m.masked.text.splitlines()
        lay = templates.layout(m.masked, m.line_map)
        if lay.error is not None:
            return self._directive_fail(m, ds[lay.error[0]].text, lay.error[1])
        content_lines = sorted(m.line_map)
        before: dict[int, list[str]] = {}
        after: dict[int, list[str]] = {}

        def mapped_range(p: tuple, text: str) -> tuple[int, int] | None:
            q = c.map_path(p)
            if q is None or not c.is_verbatim(p) or q not in em.ranges:
                self._directive_fail(m, text, f"wraps {'.'.join(map(str, p))}, which is converted into a different "
                                              "shape")
                return None
            return em.ranges[q]

        def delta_of(p: tuple) -> int:
            """How far the key at p moved right (negative: left) in the converted object."""
            old = next((ln for ln, q in m.line_map.items() if q == p), None)
            new = em.ranges.get(c.map_path(p))
            return 0 if old is None or new is None else \
                templates.indent_of(lines[new[0]]) - templates.indent_of(src[old])

        def moved(i: int, delta: int) -> str:
            ind = max(0, templates.indent_of(src[ds[i].index]) + delta)
            return " " * ind + templates.reindent(ds[i].text, delta)

        # directives that write YAML: after their owner's previous child (or its key line), re-indented
        anchor: dict[int, tuple[int, int]] = {}          # directive -> (line to insert after, delta)
        for i, owner in lay.content.items():
            if owner is None:
                return self._directive_fail(m, ds[i].text, "writes keys at the top of the object, where the hop "
                                                           "renames and moves fields")
            rng = mapped_range(owner, ds[i].text)
            if rng is None:
                return None
            prev = [m.line_map[ln] for ln in content_lines if ln < ds[i].index
                    and len(m.line_map[ln]) == len(owner) + 1 and m.line_map[ln][:len(owner)] == owner]
            at = rng[0]
            if prev and c.map_path(prev[-1]) in em.ranges:
                at = em.ranges[c.map_path(prev[-1])][1]
            anchor[i] = (at, delta_of(owner))
            if m.value_at(owner) is None:          # `labels:` filled only by the action
                lines[rng[0]] = re.sub(r":\s*(null|~)?\s*$", ":", lines[rng[0]])
        groups: dict[int, list[int]] = {}                # content directive -> the directives placed with it
        for oi, ci in sorted(lay.pairs, key=lambda p: p[0]):
            lo, hi = lay.region((oi, ci), ds)
            hi = hi if ci is not None else lo + 10 ** 9
            inside = [ln for ln in content_lines if lo < ln < hi]
            if ci is None:
                inside = inside[:1]
            if not inside:
                inner = [i for i in anchor if lo < ds[i].index < hi]
                if not inner:
                    return self._directive_fail(m, ds[oi].text, "wraps no YAML content")
                groups.setdefault(inner[0], []).insert(0, oi)
                if ci is not None:
                    groups.setdefault(inner[-1], []).append(ci)
                continue
            paths = [m.line_map[ln] for ln in inside]
            depth = min(len(p) for p in paths)
            mapped = []
            for p in [p for p in paths if len(p) == depth]:
                r = mapped_range(p, ds[oi].text)
                if r is None:
                    return None
                mapped.append(r)
            mapped.sort()
            for (a1, b1), (a2, _) in zip(mapped, mapped[1:]):
                if a2 != b1 + 1:
                    return self._directive_fail(m, ds[oi].text, "wraps fields that are no longer next to each other")
            first, last = mapped[0][0], mapped[-1][1]
            ind = lines[first][: len(lines[first]) - len(lines[first].lstrip())]
            before.setdefault(first, []).append(ind + ds[oi].text)
            if ci is not None:
                after.setdefault(last, []).insert(0, ind + ds[ci].text)
        for i, (at, delta) in sorted(anchor.items()):
            own = groups.get(i, [])
            openers = [j for j in own if ds[j].index < ds[i].index]
            closers = [j for j in own if ds[j].index > ds[i].index]
            after.setdefault(at, []).extend(moved(j, delta) for j in openers + [i] + closers)
        head = [ds[i].text for i in lay.lead] + [ds[o].text for o, _ in lay.whole]
        for i in lay.free:                   # comments and assignments: where they stood, else at the top
            nxt = next((ln for ln in content_lines if ln > ds[i].index), None)
            q = c.map_path(m.line_map[nxt]) if nxt is not None else None
            if nxt is not None and ds[i].index > content_lines[0] and q in em.ranges:
                first = em.ranges[q][0]
                before.setdefault(first, []).insert(0, moved(i, templates.indent_of(lines[first])
                                                             - templates.indent_of(src[nxt])))
            else:
                head.append(ds[i].text)
        tail = [ds[c_].text for _, c_ in reversed(lay.whole)] + [ds[i].text for i in lay.trail]
        around = self.enclosing(m, len(lay.trail), len(lay.lead))
        if around is None:
            d = ds[(lay.trail or lay.lead or [0])[0]]
            return self._directive_fail(m, d.text, "belongs to a block that spans other documents of its file (a "
                                                   "range over several objects, or one with other YAML inside it)")
        out = list(around[0]) + head
        for i, ln in enumerate(lines):
            out.extend(before.get(i, []))
            out.append(ln)
            out.extend(after.get(i, []))
        return out + tail + around[1]

    def enclosing(self, m: Manifest, closed_here: int, opened_here: int) -> tuple[list[str], list[str]] | None:
        """The blocks of the source file that enclose the object's document (a `{{- range .Values.pools }}` opened
        before its `---`): the new object goes in a file of its own, so they must enclose it there too, or the new
        template renders once, outside the range, or not at all (an `{{- end }}` without its opener).

        Returns (the source lines from the first such opener to the document, the `{{- end }}` lines that close what
        is left open after the document's own trailing closers); ([], []) when no block encloses it; None when those
        lines hold anything but directives, separators and comments (another object's YAML), or when the file is a
        Terraform template (whose closers are not written here)."""
        text = self.repo.files[m.path].text if m.path in self.repo.files and m.container == "yaml" else None
        if text is None or not m.doc_end:
            return ([], []) if not closed_here and not opened_here else None
        try:
            pre = templates.mask(text[:m.doc_start], helm=m.masked.helm)
        except templates.TemplateError:
            return None
        stack: list[int] = []
        for d in pre.directives:
            if d.word in templates.OPENERS:
                stack.append(d.index)
            elif d.word in templates.CLOSERS and stack:
                stack.pop()
        if not stack and not closed_here and not opened_here:
            return [], []
        if not m.masked.helm or len(stack) < closed_here:
            return None
        src = text[:m.doc_start].splitlines()
        marks = {d.index + k for d in pre.directives for k in range(d.lines)}
        first = stack[0] if stack else len(src)
        for i in range(first, len(src)):
            s = src[i].strip()
            if i not in marks and s not in ("", "---") and not s.startswith("#"):
                return None
        # what the document leaves open (its own openers) and what still encloses it after its trailing closers
        closers = ["{{- end }}"] * (len(stack) - closed_here + opened_here)
        return src[first:], closers

    def reindent_tokens(self, m: Manifest, lines: list[str]) -> list[str]:
        """Helm values written with `| nindent N` inline (`labels: {{ toYaml . | nindent 4 }}`) follow their key."""
        src = m.masked.text.splitlines()
        moved = {tok: orig for tok, orig in m.masked.tokens.items() if "indent" in orig}
        if not moved:
            return lines
        where = {tok: templates.indent_of(ln) for ln in src for tok in templates.TOKEN_RE.findall(ln)
                 for tok in [f"__MIG_{tok}__"] if tok in moved}
        out = []
        for ln in lines:
            for tok in {f"__MIG_{t}__" for t in templates.TOKEN_RE.findall(ln)} & moved.keys():
                ln = ln.replace(tok, templates.reindent(moved[tok], templates.indent_of(ln) - where.get(tok, 0)))
            out.append(ln)
        return out

    def _directive_fail(self, m: Manifest, text: str, why: str) -> None:
        self.finding("MIG-TPL-001", "error", m.path, m.line,
                     f"template directive `{text}` {why}; migrator cannot place it in the converted object",
                     "write the new template by hand from the plan's other objects; nothing was generated for it")
        return None

    # -- placement: raw YAML -------------------------------------------------------------------
    def place_yaml_file(self, path: str, items: list[tuple[Manifest, list[Converted]]]) -> None:
        sf = self.repo.files[path]
        docs = []
        for m, convs in items:
            for c in convs:
                t = self.yaml_text(m, c)
                if t is None:
                    return
                docs.append(t)
        d, base = posixpath.split(path)
        stem, ext = posixpath.splitext(base)
        new_base = self.file_stem(stem, [m.kind for m, _ in items])
        new_path = posixpath.join(d, new_base + ext) if d else new_base + ext
        spare = self.spare_stem(stem)
        if (new_path in self.repo.files or new_path in self._new_files) and spare is not None:
            # the name is another file's (a NodePool written by hand as nodepool.yaml): the spare name, if free
            other = posixpath.join(d, spare + ext) if d else spare + ext
            if other not in self.repo.files and other not in self._new_files:
                self.finding("MIG-MAN-003", "info", path, items[0][0].line,
                             f"{new_path} is another file's: the converted objects of {path} go to {other}")
                new_path = other
        if new_path in self.repo.files or new_path in self._new_files:
            self.finding("MIG-MAN-002", "warning", path, items[0][0].line,
                         f"{new_path} already exists, but does not hold the converted objects of {path}",
                         f"move the converted objects into {new_path} by hand, or rename that file and re-run")
            return
        lead = "---\n" if sf.text.lstrip().startswith("---") else ""
        text = lead + "---\n".join(docs)
        self._new_files.add(new_path)
        self.res.edits.append(NewFile(new_path, to_newline(text, sf.newline), self.rule))
        self.res.new_files.append(new_path)
        self.kustomization_entry(path, new_path, add=True)

    def kustomization_entry(self, old_path: str, new_path: str | None, add: bool) -> None:
        # every kustomization that lists the file: each environment that builds it gets the new one, loses the old
        self.res.edits += kustomization_inserts(self.repo, old_path, new_path, self.rule) if add else \
            kustomization_removes(self.repo, old_path, self.rule)
