"""Saved plans: `plan --out FILE` records the changes and the SHA-256 of every input the plan read;
`apply FILE --write` writes exactly those changes, and refuses if any input changed since.

The file is JSON (kind `migrator-saved-plan`, version 2): the root, `roots` (each cluster root's hop and phase),
the migrator version that made it, `inputs` (POSIX path -> SHA-256 of the text migrator read) and `changes` (path,
action, SHA-256 of the old text, new text). A root moves only when its files change or migrator's knowledge does:
apply refuses both (changed inputs; a plan made by another migrator version), so it never writes a change made
for a step a root has left. Version 1 files (one hop and phase for the repository) still apply.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from .apply import ApplyError, read_text
from .edits import FileChange

KIND = "migrator-saved-plan"
VERSION = 2
READS = (1, 2)


def migrator_version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("karpenter-migrator")          # the distribution's name (the command stays `migrator`)
    except PackageNotFoundError:
        return "0"


def digest(text: str | None) -> str | None:
    return None if text is None else hashlib.sha256(text.encode("utf-8")).hexdigest()


def dump(plan, inputs: dict[str, str]) -> str:
    doc = {
        "kind": KIND, "version": VERSION, "root": plan.root.as_posix(),
        "migrator": migrator_version(),
        "roots": [{"path": r.path, "hop": {"from": r.hop_from, "to": r.hop_to} if r.hop else None, "phase": r.phase,
                   "changes": r.changes} for r in plan.roots],
        "errors": sum(1 for f in plan.findings if f.severity == "error"),
        "inputs": {p: digest(t) for p, t in sorted(inputs.items())},
        "changes": [{"path": c.path, "action": c.action, "old_sha256": digest(c.old), "new": c.new, "rules": c.rules}
                    for c in plan.changes],
    }
    return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"


def is_saved_plan(p: Path) -> bool:
    """Whether a file is a plan `plan --out` saved, whatever its name (`-out tfplan`, as Terraform users write)."""
    if not p.is_file():
        return False
    try:
        with p.open("rb") as fh:
            if fh.read(1).lstrip() not in (b"{", b""):
                return False
        head = json.loads(p.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError, OSError):
        return False
    return isinstance(head, dict) and head.get("kind") == KIND


def load(p: Path) -> tuple[Path, list[FileChange], dict]:
    """The saved plan's root and changes, after checking that no input changed since it was made."""
    doc = json.loads(Path(p).read_text(encoding="utf-8"))
    if doc.get("kind") != KIND or doc.get("version") not in READS:
        raise ApplyError(f"{p}: not a migrator saved plan of version {' or '.join(map(str, READS))}")
    if doc.get("version", 1) >= 2 and doc.get("migrator") != migrator_version():
        raise ApplyError(f"{p} was made by migrator {doc.get('migrator')}, this is {migrator_version()}: where each "
                         "cluster root stands may be judged differently; run migrator plan again")
    root = Path(doc["root"])
    changed = [rel for rel, sha in doc["inputs"].items() if digest(read_text(root / rel)) != sha]
    changed += [c["path"] for c in doc["changes"] if c["path"] not in doc["inputs"]
                and digest(read_text(root / c["path"])) != c["old_sha256"]]
    if changed:
        raise ApplyError(f"{len(changed)} input(s) changed since the plan was saved ({', '.join(sorted(changed)[:5])}"
                         f"{', ...' if len(changed) > 5 else ''}); run migrator plan again")
    changes = []
    for c in doc["changes"]:
        old = read_text(root / c["path"])
        changes.append(FileChange(c["path"], c["action"], old, c["new"], c.get("rules", [])))
    return root, changes, doc


def describe(doc: dict) -> list[str]:
    """One line per cluster root of a saved plan (version 1: one line for the repository)."""
    if "roots" not in doc:
        return [f"{doc['hop']['from']} -> {doc['hop']['to']}, phase {doc['phase']}"]
    return [f"{r['path']}: " + (f"{r['hop']['from']} -> {r['hop']['to']}, phase {r['phase']}" if r.get("phase")
                                else "nothing planned") + f", {len(r.get('changes', []))} file(s)"
            for r in doc["roots"]]
