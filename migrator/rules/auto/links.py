"""`depends_on` and reads between the blocks a phase of the Auto Mode hop renames or removes (shared by its
nodepools and cleanup rules)."""
from __future__ import annotations

import posixpath
import re

from ... import tfgraph
from ...edits import TextEdit
from ...model import Finding
from ...sources import hcl as hclsrc


def unlink(repo, addresses: dict, rule: str, edits: list, findings: list, dead_values: bool = False):
    """What else in their modules reads blocks that go: a `depends_on` entry is dropped, an output that reads them
    goes too (returned), anything else is an error (None: nothing may be removed). With `dead_values` (the cleanup),
    a pool chart's release that reads them only in values its chart no longer reads loses those values
    (`dead_chart_values`)."""
    outputs, readers = tfgraph.unlink(repo, addresses, rule, edits)
    left = {}
    for a, (p, b, hits) in readers.items():
        got = dead_chart_values(repo, p, b, hits, rule) if dead_values else None
        if got is not None:
            edits.extend(got[0])
            findings.append(Finding("MIG-AUTO-066", "info", p, hclsrc.line_of(repo.text(p), b.start),
                                    f"{a}: its values {', '.join(got[1])} go with {', '.join(hits)}, which this phase "
                                    f"removes: no template of its chart ({got[2]}) reads them any more"))
            continue
        left[a] = (p, b, hits)
        findings.append(Finding("MIG-AUTO-041", "error", p, hclsrc.line_of(repo.text(p), b.start),
                                f"{a} reads {', '.join(hits)}, which this phase removes",
                                f"remove or rewrite {a}'s use of it, then run migrator again"))
    return None if left else outputs


_KEY_LINE = re.compile(r"^([ \t]*)([A-Za-z_][\w-]*)[ \t]*:")


def dead_chart_values(repo, p: str, b: hclsrc.Block, hits: list[str], rule: str):
    """(edits, keys, chart folder) that take out of a `helm_release` of a chart folder of the repository the values
    reading `hits` (blocks the phase removes), with its `depends_on` entries naming them: only when every read of them
    is a top-level value on lines of its own (an entry of a `yamlencode({...})` / `jsonencode({...})` item, a line of a
    YAML heredoc item) whose key no template of the chart reads (`.Values.<key>`), and no template reads the values
    whole. None otherwise: the caller says what still reads them."""
    from ...inventory.terraform import _vendored
    if b.type != "resource" or b.labels[:1] != ["helm_release"]:
        return None
    vendored = _vendored(repo, p, b)
    values = b.attr("values")
    if vendored is None or values is None:
        return None
    chart = posixpath.normpath(vendored[0])
    found_templates = repo.with_prefix(("" if chart == "." else chart + "/") + "templates/")
    if not found_templates:
        return None                         # no template in the files: what reads the values is not known
    templates = "\n".join(repo.text(q) for q in found_templates)
    if re.search(r"\.Values\s*(-?\}\}|\)|\|)|\$\.Values\b(?!\.)|\bindex\s+\$?\.Values\b", templates):
        return None                         # the values read whole (toYaml .Values, range over them): not judged
    text = repo.text(p)
    code = hclsrc.code_of(text)
    found = [(m.start(), m.end()) for a in hits for m in re.finditer(r"\b" + re.escape(a) + r"\b", code, )
             if b.start <= m.start() < b.end]
    spans: dict[tuple[int, int], str] = {}     # line span to remove -> its key
    for item in values.items if values.kind == "tuple" else [values]:
        obj = hclsrc.encoded_object(item)
        lines = []
        if obj is not None:
            lines = [(e.start, e.end, e.key) for e in obj.entries]
        elif item.kind == "heredoc" and item.heredoc is not None:
            h, at = item.heredoc, item.heredoc.body_start
            for line in text[h.body_start:h.body_end].splitlines(True):
                m = _KEY_LINE.match(line)
                if m and len(m.group(1)) <= h.indent:
                    lines.append((at, at + len(line.rstrip("\r\n")), m.group(2)))
                at += len(line)
        for s, e, key in lines:
            if not any(s <= x < e for x, _ in found):
                continue
            ls = text.rfind("\n", 0, s) + 1
            le = text.find("\n", e)
            le = len(text) if le < 0 else le + 1
            if text[ls:s].strip() or text[e:le].strip().rstrip(",").strip():
                return None                 # not alone on its lines
            if re.search(r"\.Values\." + re.escape(key) + r"\b", templates):
                return None                 # a template still reads it
            spans[(ls, le)] = key
    deps = tfgraph.depends_edits(text, code, b.start, b.end, {}, set(hits))
    covered = lambda x: any(ls <= x < le for ls, le in spans) or any(s <= x < e for s, e, _ in deps)
    if not spans or not all(covered(x) for x, _ in found):
        return None
    edits = [TextEdit(p, ls, le, "", rule) for ls, le in sorted(spans)]
    edits += [TextEdit(p, s, e, new, rule) for s, e, new in deps]
    return edits, sorted(set(spans.values())), chart
