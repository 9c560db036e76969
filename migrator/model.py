"""Findings and runbook steps: what rules report besides edits (part of the JSON contract)."""
from __future__ import annotations

from dataclasses import dataclass, field

SEVERITIES = ("error", "warning", "info")
STEP_KINDS = ("module", "iam", "crds", "chart", "manifests", "workloads", "roll-nodes", "verify", "cleanup")
PHASES = ("prepare", "cleanup")   # the first hop's; every hop lists its own in knowledge/hops.yaml


@dataclass
class Finding:
    code: str               # stable id, e.g. MIG-NP-003
    severity: str           # error | warning | info
    path: str               # POSIX, relative to the root
    line: int               # 1-based; 0 when the finding is about the whole repository
    message: str
    manual_step: str = ""
    suppressed: str = ""    # the reason of an inline suppression; in JSON only when set (addition to schema 1)

    def to_json(self) -> dict:
        d = {"code": self.code, "severity": self.severity, "path": self.path, "line": self.line,
             "message": self.message, "manual_step": self.manual_step}
        if self.suppressed:
            d["suppressed"] = self.suppressed
        return d


@dataclass
class Step:
    id: str
    phase: str              # prepare | cleanup
    kind: str               # one of STEP_KINDS
    title: str
    detail: str = ""
    commands: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    # additions to schema 1 (issue 5): how to check the step, how to undo it, where it comes from
    verify: list[str] = field(default_factory=list)
    rollback: str = ""
    refs: list[str] = field(default_factory=list)      # "path:line" of the repository lines the step is about
    root: str = ""          # the cluster root the step belongs to, when the repository holds several
    notes: list = field(default_factory=list)          # [{"minor", "note"}]: what each crossed minor changes

    def to_json(self) -> dict:
        return {"id": self.id, "phase": self.phase, "kind": self.kind, "title": self.title, "detail": self.detail,
                "commands": list(self.commands), "files": list(self.files), "verify": list(self.verify),
                "rollback": self.rollback, "refs": list(self.refs), "root": self.root,
                "notes": [dict(n) if isinstance(n, dict) else n for n in self.notes]}
