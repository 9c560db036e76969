"""Rule registry: which rules a hop runs, in which phase, and the runbook steps they imply."""
from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any

from .. import knowledge
from ..inventory import HelmValue, Manifest, Repo
from ..model import Finding, Step
from .v1beta1 import helm, manifests
from .v1beta1.helm import HelmResult, HelmRule
from .v1beta1.manifests import ManifestsRule, Options, Result


def _manifests(ctx: "Context", phase: str, done: dict) -> Result:
    rule = ManifestsRule(ctx.repo, ctx.manifests, ctx.helm_values, ctx.options)
    return rule.prepare() if phase == "prepare" else rule.cleanup()


def _helm(ctx: "Context", phase: str, done: dict) -> HelmResult:
    blocked = set()
    m = done.get("v1beta1/manifests")
    if m is not None:
        blocked = {(f.path, f.line) for f in m.findings if f.code == "MIG-CLN-001"}
    return HelmRule(ctx.repo, ctx.manifests, ctx.charts, phase, blocked).run()


# name -> (module documenting the rule, runner). Runners get the results of the rules before them.
RULES = {
    "v1beta1/manifests": (manifests, _manifests),
    "v1beta1/helm": (helm, _helm),
}


@dataclass
class Context:
    repo: Repo
    manifests: list[Manifest]
    helm_values: list[HelmValue]
    options: Options
    charts: list = field(default_factory=list)
    results: dict[str, dict[str, Result]] = field(default_factory=dict)   # phase -> rule -> result

    def result(self, hop: dict, phase: str) -> dict[str, Result]:
        if phase not in self.results:
            out: dict = {}
            for name in hop["rules"]:
                out[name] = RULES[name][1](self, phase, out)
            self.results[phase] = out
        return self.results[phase]


def run(hop: dict, phase: str, ctx: Context) -> tuple[list, list[Finding]]:
    edits, findings = [], []
    for res in ctx.result(hop, phase).values():
        edits.extend(res.edits)
        findings.extend(res.findings)
    return edits, findings


def default_phase(hop: dict, ctx: Context) -> str:
    """The next phase with work: prepare until the new objects exist, then cleanup."""
    prep = ctx.result(hop, "prepare")
    if any(r.edits for r in prep.values()):
        return "prepare"
    clean = ctx.result(hop, "cleanup")
    if any(r.edits for r in clean.values()):
        return "cleanup"
    return "prepare"


def _fill(s: str, values: dict[str, Any]) -> str:
    return s.format(**values)


def steps(hop: dict, ctx: Context) -> list[Step]:
    """The whole ordered runbook of the hop, from the step table and what the rules found."""
    table = knowledge.load("runbook")[f"{hop['from']}->{hop['to']}"]
    prep = ctx.result(hop, "prepare").get("v1beta1/manifests") or Result()
    clean = ctx.result(hop, "cleanup").get("v1beta1/manifests") or Result()
    old = prep.old_objects or []
    provisioners = sorted({n for k, n, _ in old if k == "Provisioner"})
    templates = sorted({n for k, n, _ in old if k == "AWSNodeTemplate"})
    targets = " ".join(f"-target={shlex.quote(a)}" for a in prep.new_addresses)
    values = {
        "chart_version": hop["chart"]["version"],
        "rollback_version": hop["chart"].get("rollback_to", ""),
        "provisioners": ", ".join(provisioners) or "(none found)",
        "new_files": ", ".join(prep.new_files) or "(none)",
        "targets": targets,
    }
    out: list[Step] = []
    for i, row in enumerate(table, start=1):
        if row.get("when") == "terraform" and not prep.new_addresses:
            continue
        if row.get("when") == "yaml" and not [f for f in prep.new_files if f.endswith((".yaml", ".yml"))]:
            continue
        cmds = []
        for c in row.get("commands", []):
            if "{provisioner}" in c:
                cmds.extend(c.format(provisioner=shlex.quote(p), **values) for p in provisioners)
            elif "{nodetemplate}" in c:
                cmds.extend(c.format(nodetemplate=shlex.quote(t), **values) for t in templates)
            elif "{new_file}" in c:
                cmds.extend(c.format(new_file=shlex.quote(f), **values) for f in prep.new_files
                            if f.endswith((".yaml", ".yml")))
            else:
                cmds.append(_fill(c, values))
        files = []
        if row["kind"] == "manifests":
            files = sorted(set(prep.new_files) | {e.path for e in prep.edits})
        elif row["kind"] == "cleanup":
            files = sorted({e.path for e in clean.edits})
        out.append(Step(id=f"{hop['to']}-{len(out) + 1:02d}-{row['id']}", phase=row["phase"], kind=row["kind"],
                        title=_fill(row["title"], values), detail=_fill(row.get("detail", ""), values).strip(),
                        commands=cmds, files=files))
    return out
