"""Which findings a run reports: `--select` / `--ignore` by code or prefix, and inline suppressions.

An inline suppression is a comment on the finding's line or the line above it:
`# migrator: ignore[MIG-V1-NC-002] we pin AMIs with a separate pipeline` (HCL and YAML; `//` works in HCL too).
The reason is required: without one the suppression does not apply and MIG-CFG-002 says so. Suppressed findings
stay in the JSON and SARIF output, marked with their reason, and no longer count for the exit code.
"""
from __future__ import annotations

import re

from .model import Finding

_SUPPRESS = re.compile(r"(?:#|//)\s*migrator:\s*ignore\[([A-Za-z0-9_,\s-]+)\]\s*(.*)$")


def matches(code: str, patterns: list[str]) -> bool:
    """A code matches a pattern when equal to it or when the pattern is a prefix ending at a '-' boundary."""
    return any(code == p or code.startswith(p.rstrip("-") + "-") for p in patterns)


def select(findings: list[Finding], select_: list[str] | None, ignore: list[str] | None) -> list[Finding]:
    out = findings
    if select_:
        out = [f for f in out if matches(f.code, select_)]
    if ignore:
        out = [f for f in out if not matches(f.code, ignore)]
    return out


def suppress(findings: list[Finding], texts: dict[str, str]) -> list[Finding]:
    """Mark findings suppressed by an inline comment; report suppressions that give no reason."""
    extra: list[Finding] = []
    for f in findings:
        text = texts.get(f.path)
        if not text or f.line <= 0:
            continue
        lines = text.splitlines()
        for ln in (f.line, f.line - 1):
            if not 1 <= ln <= len(lines):
                continue
            m = _SUPPRESS.search(lines[ln - 1])
            if not m:
                continue
            codes = [c.strip() for c in m.group(1).split(",") if c.strip()]
            if not matches(f.code, codes):
                continue
            reason = m.group(2).strip()
            if not reason:
                extra.append(Finding("MIG-CFG-002", "warning", f.path, ln,
                                     f"suppression of {f.code} without a reason is not applied",
                                     f"write the reason after the bracket: # migrator: ignore[{f.code}] <why>"))
                continue
            f.suppressed = reason
            break
    return findings + extra
