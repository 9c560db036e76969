"""SARIF 2.1.0 output: one run, rule metadata from the finding catalogue (title, severity, help text and a help
URI to the rule's docs page), results with 1-based lines, stable `partialFingerprints`, and suppressions."""
from __future__ import annotations

import hashlib
import json

from .. import knowledge
from ..plan import Plan

LEVEL = {"error": "error", "warning": "warning", "info": "note"}
SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def version() -> str:
    from importlib.metadata import PackageNotFoundError, version as v
    try:
        return v("migrator")
    except PackageNotFoundError:
        return "0"


def fingerprint(f) -> str:
    """Stable across runs and line moves: code, file and message (no line number)."""
    return hashlib.sha256(f"{f.code}\0{f.path}\0{f.message}".encode()).hexdigest()[:32]


def to_dict(plan: Plan, docs_url: str | None = None) -> dict:
    """`docs_url` is where the docs site (mkdocs) is published, e.g. https://example.org/migrator; each rule's
    helpUri is then <docs_url>/rules/<CODE>/. Without it, help points at `migrator explain CODE`."""
    catalogue = knowledge.load("findings")
    used = sorted({f.code for f in plan.findings})
    rules = []
    for code in used:
        meta = catalogue.get(code, {"title": code, "severity": "warning"})
        rule = {
            "id": code, "name": code.replace("-", ""),
            "shortDescription": {"text": meta["title"]},
            "fullDescription": {"text": meta["title"]},
            "help": {"text": f"{meta['title']}. Run `migrator explain {code}`, or see docs/rules/{code}.md."},
            "defaultConfiguration": {"level": LEVEL[meta["severity"]]},
        }
        if docs_url:
            rule["helpUri"] = f"{docs_url.rstrip('/')}/rules/{code}/"
        rules.append(rule)
    index = {code: i for i, code in enumerate(used)}
    results = []
    for f in plan.findings:
        r = {"ruleId": f.code, "ruleIndex": index[f.code], "level": LEVEL[f.severity],
             "message": {"text": f.message + (f" -> {f.manual_step}" if f.manual_step else "")},
             "partialFingerprints": {"migratorFinding/v1": fingerprint(f)}}
        if f.path:
            loc = {"physicalLocation": {"artifactLocation": {"uri": f.path, "uriBaseId": "SRCROOT"}}}
            if f.line > 0:
                loc["physicalLocation"]["region"] = {"startLine": f.line}
            r["locations"] = [loc]
        if f.suppressed:
            r["suppressions"] = [{"kind": "inSource", "justification": f.suppressed}]
        results.append(r)
    return {
        "$schema": SCHEMA, "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "migrator", "version": version(), "rules": rules,
                                **({"informationUri": docs_url} if docs_url else {})}},
            "originalUriBaseIds": {"SRCROOT": {"uri": plan.root.as_uri() + "/"}},
            "results": results,
            "properties": {**({"hop": {"from": plan.hop_from, "to": plan.hop_to}, "phase": plan.phase}
                               if plan.hop is not None else {}),
                           "roots": [{"path": r.path, "hop": {"from": r.hop_from, "to": r.hop_to} if r.hop else None,
                                      "phase": r.phase} for r in plan.roots]},
        }],
    }


def render(plan: Plan, docs_url: str | None = None) -> str:
    return json.dumps(to_dict(plan, docs_url), indent=2, ensure_ascii=False) + "\n"
