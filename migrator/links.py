"""Changes to files a symbolic link of the repository points at.

A folder may link a file it shares with others (`var-karpenter-version.tf -> ../../common-files/...`). migrator reads
the link's path like any file, so a rule's change can name the link. Written there, the link would be replaced by a
copy that no longer follows the shared file (and the other links would keep the old text). So a change to a link is
a change to the file it points at: written there once, said with the paths that share it; two changes of one file
through different paths that disagree are not written at all.
"""
from __future__ import annotations

import os
from pathlib import Path

from .edits import FileChange
from .model import Finding


def _real(root: Path, rel: str) -> str:
    """The repository path a path resolves to (itself unless a link on the way points elsewhere inside the root)."""
    p = root / rel
    if not os.path.lexists(p):
        return rel
    try:
        return Path(os.path.realpath(p)).relative_to(root).as_posix()
    except ValueError:                  # outside the root: discovery skipped it, apply refuses it
        return rel


def through_links(root, changes: list[FileChange], findings: list[Finding], files: dict | None = None,
                  links=()) -> list[FileChange]:
    """The changes with each one to a link's path moved to the file it points at (one change per real file); `files`
    and `links` (the discovered files, those read through a link): to name every path that links to it."""
    root = Path(root).resolve()
    links = set(links)
    by_real: dict[str, list[FileChange]] = {}
    for c in changes:
        # deleting a link removes the link only; a path no link is on is itself
        real = _real(root, c.path) if c.action != "delete" and c.path in links else c.path
        by_real.setdefault(real, []).append(c)
    out: list[FileChange] = []
    for real, cs in by_real.items():
        if len(cs) == 1 and cs[0].path == real:
            out.append(cs[0])
            continue
        paths = sorted({c.path for c in cs})
        if len({c.new for c in cs}) > 1:
            findings.append(Finding(
                "MIG-EDIT-012", "error", real, 0,
                f"{real} is changed through several paths that link to it ({', '.join(paths)}), and the changes "
                "differ: none of them is written",
                "make the change in the file itself by hand (it is shared by every path that links to it), then run "
                "migrator again"))
            continue
        first = cs[0]
        rules = sorted({r for c in cs for r in c.rules})
        kept = next((c for c in cs if c.path == real), None)
        change = FileChange(real, first.action, first.old, first.new, rules)
        for attr, value in vars(kept or first).items():     # what the plan added to it (the roots it was made for)
            if attr not in ("path", "rules"):
                setattr(change, attr, value)
        out.append(change)
        linking = sorted({p for p in paths if p != real} | set(aliases(root, files, real, links) if files and
                                                               real in files else []))
        findings.append(Finding(
            "MIG-EDIT-012", "info", real, 0,
            f"{', '.join(linking)} {'is a link' if len(linking) == 1 else 'are links'} to {real}: the change is written "
            f"there (never over a link), and every path that links to it shares it"))
    return out


def aliases(root, files: dict, path: str, links) -> list[str]:
    """The discovered paths read through a link (`links`) that are `path` (the same file read twice)."""
    root = Path(root).resolve()
    sf = files.get(path)
    if sf is None:
        return []
    return [q for q in links if q != path and q in files and files[q].text == sf.text and _real(root, q) == path]
