"""`depends_on` and reads between the blocks a phase of the Auto Mode hop renames or removes (shared by its
nodepools and cleanup rules)."""
from __future__ import annotations

import posixpath
import re

from ...edits import TextEdit
from ...model import Finding
from ...sources import hcl as hclsrc

_DEPENDS = re.compile(r"^([ \t]*)depends_on\s*=\s*\[([^\]]*)\][ \t]*\r?\n", re.M)


def relink(text: str, renamed: dict, dropped: set) -> str:
    """`depends_on` lists of a block's text with addresses renamed or dropped (the attribute goes when empty)."""
    def one(mt: re.Match) -> str:
        items = [x.strip() for x in mt.group(2).split(",") if x.strip()]
        new = [renamed.get(x, x) for x in items if x not in dropped]
        if new == items:
            return mt.group(0)
        if not new:
            return ""
        nl = "\r\n" if mt.group(0).endswith("\r\n") else "\n"
        return f"{mt.group(1)}depends_on = [{', '.join(new)}]{nl}"
    out = _DEPENDS.sub(one, text)
    return re.sub(r"\n[ \t]*\n(\s*\})\s*$", r"\n\1", out) if out != text else out


def unlink(repo, addresses: dict, rule: str, edits: list, findings: list):
    """What else in their modules reads blocks that go: a `depends_on` entry is dropped, an output that reads them
    goes too (returned), anything else is an error (None: nothing may be removed)."""
    dirs = {posixpath.dirname(p) or "." for p, _ in addresses.values()}
    outputs, bad = [], False
    for d in sorted(dirs):
        for p in repo.tf_in_dir("" if d == "." else d):
            f = repo.hcl(p)
            text = repo.text(p)
            for b in (f.blocks if f else []):
                if b.address in addresses:
                    continue
                body = text[b.start:b.end]
                hits = [a for a in addresses if re.search(r"\b" + re.escape(a) + r"\b", body)]
                if not hits:
                    continue
                if b.type == "output":
                    outputs.append((p, b))
                    continue
                fixed = relink(body, {}, set(hits))
                if not any(re.search(r"\b" + re.escape(a) + r"\b", fixed) for a in hits):
                    edits.append(TextEdit(p, b.start, b.end, fixed, rule))
                    continue
                bad = True
                findings.append(Finding("MIG-AUTO-041", "error", p, hclsrc.line_of(text, b.start),
                                        f"{b.address} reads {', '.join(hits)}, which this phase removes",
                                        f"remove or rewrite {b.address}'s use of it, then run migrator again"))
    return None if bad else outputs
