"""Saved plans: `plan --out FILE` records the changes and the SHA-256 of every input the plan read;
`apply FILE --write` writes exactly those changes, and refuses if any input changed since.

The file is JSON (kind `migrator-saved-plan`): the root, the hop and phase, the options, `inputs`
(POSIX path -> SHA-256 of the text migrator read) and `changes` (path, action, SHA-256 of the old text, new text).
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from .apply import ApplyError, read_text
from .edits import FileChange

KIND = "migrator-saved-plan"
VERSION = 1


def digest(text: str | None) -> str | None:
    return None if text is None else hashlib.sha256(text.encode("utf-8")).hexdigest()


def dump(plan, inputs: dict[str, str]) -> str:
    doc = {
        "kind": KIND, "version": VERSION, "root": plan.root.as_posix(),
        "hop": {"from": plan.hop_from, "to": plan.hop_to}, "phase": plan.phase,
        "errors": sum(1 for f in plan.findings if f.severity == "error"),
        "inputs": {p: digest(t) for p, t in sorted(inputs.items())},
        "changes": [{"path": c.path, "action": c.action, "old_sha256": digest(c.old), "new": c.new, "rules": c.rules}
                    for c in plan.changes],
    }
    return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"


def is_saved_plan(p: Path) -> bool:
    if not p.is_file() or p.suffix != ".json":
        return False
    try:
        head = json.loads(p.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError):
        return False
    return isinstance(head, dict) and head.get("kind") == KIND


def load(p: Path) -> tuple[Path, list[FileChange], dict]:
    """The saved plan's root and changes, after checking that no input changed since it was made."""
    doc = json.loads(Path(p).read_text(encoding="utf-8"))
    if doc.get("kind") != KIND or doc.get("version") != VERSION:
        raise ApplyError(f"{p}: not a migrator saved plan of version {VERSION}")
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
