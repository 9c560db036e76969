"""Rule registry: which rules a hop runs, in which phase, and the runbook steps they imply.

Hop-generic: a hop (knowledge/hops.yaml) names its rules package (`migrator/rules/<package>/`), its rules in
order and its phases. The package exposes `RULES` (name -> (module documenting the rule, runner)) and
`steps(hop, ctx)`. Adding a hop touches the table and a new package, never this module.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from functools import lru_cache
from types import ModuleType
from typing import Any

from .. import knowledge
from ..inventory import HelmValue, Manifest, Repo
from ..model import Finding, Step
from ..options import Options

HOPS = knowledge.load("hops")


@lru_cache(maxsize=None)
def package(name: str) -> ModuleType:
    return importlib.import_module(f"{__package__}.{name}")


def hop_package(hop: dict) -> ModuleType:
    return package(hop["package"])


def all_rules() -> dict[str, tuple[ModuleType, Any]]:
    """Every rule of every implemented hop (for `explain` and the generated docs)."""
    out: dict = {}
    for hop in HOPS["hops"]:
        if hop.get("implemented"):
            out.update(hop_package(hop).RULES)
    return out


def phases(hop: dict) -> list[str]:
    return [p["name"] for p in hop.get("phases", [])]


@dataclass
class Failed:
    """The result of a rule that raised: no edits, one error finding; any other attribute reads as empty."""
    edits: list = field(default_factory=list)
    findings: list = field(default_factory=list)

    @classmethod
    def of(cls, rule: str, e: Exception) -> "Failed":
        import traceback
        where = traceback.extract_tb(e.__traceback__)[-1] if e.__traceback__ else None
        at = f" at {where.filename.rsplit('/migrator/', 1)[-1]}:{where.lineno}" if where else ""
        return cls(findings=[Finding("MIG-INT-001", "error", "", 0,
                                     f"internal error in rule {rule}: {type(e).__name__}: {e}{at}; its changes "
                                     "are left out, the rest of the plan stands",
                                     "report this with `migrator plan --debug` output and the files involved")])

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return []


@dataclass
class Context:
    repo: Repo
    manifests: list[Manifest]
    helm_values: list[HelmValue]
    options: Options
    charts: list = field(default_factory=list)
    owns: Any = lambda path: True          # does a file belong to this cluster root?
    results: dict[str, dict[str, Any]] = field(default_factory=dict)   # hop:phase -> rule -> result
    target: Any = None                     # path.Target this run moves towards
    all_manifests: list = field(default_factory=list)   # every root's objects (a chart-only root's fallback)
    chart_version: str | None = None       # the controller chart version this root pins, if static
    entry: dict = field(default_factory=dict)   # an entry hop's own view of the root, kept by its package
    only_rules: frozenset | None = None    # objects behind their controller: the hop's object rules only
    root: str = "."                        # the cluster root's folder
    stages: tuple = ()                     # Terraform stages of its cluster outside it (migrator/stages.py)
    var_file: str = ""                     # one environment of a root module applied per tfvars: that tfvars
    environments: tuple = ()               # then every environment's tfvars of the root module
    users: Any = lambda path: ()           # the cluster roots a file belongs to (Fleet.users)
    earlier: list = field(default_factory=list)     # the second pass: the objects before this run's changes

    def result(self, hop: dict, phase: str) -> dict[str, Any]:
        key = f"{hop['from']}->{hop['to']}:{phase}"
        if key not in self.results:
            rules = hop_package(hop).RULES
            out: dict = {}
            for name in hop["rules"]:
                try:
                    out[name] = rules[name][1](self, phase, out)
                except Exception as e:  # noqa: BLE001 - one rule's bug must not stop the plan
                    out[name] = Failed.of(name, e)
            self.results[key] = out
        return self.results[key]


def selected(hop: dict, phase: str, ctx: Context) -> dict[str, Any]:
    """The results of the rules planned for this root (all of them, or its object rules only)."""
    return {k: v for k, v in ctx.result(hop, phase).items() if ctx.only_rules is None or k in ctx.only_rules}


def run(hop: dict, phase: str, ctx: Context) -> tuple[list, list[Finding]]:
    edits, findings = [], []
    for res in selected(hop, phase, ctx).values():
        edits.extend(res.edits)
        findings.extend(res.findings)
    return edits, findings


def has_work(results: dict[str, Any]) -> bool:
    """Edits, or work the user does outside the files (a rendered chart to re-render: `work_outside`)."""
    return any(r.edits or getattr(r, "work_outside", False) for r in results.values())


def next_phase(hop: dict, ctx: Context, among: list[str] | None = None) -> str | None:
    """The next phase with work in this cluster root, in the hop's order; None when no phase has any."""
    return next((name for name in among or phases(hop) if has_work(selected(hop, name, ctx))), None)


def steps(hop: dict, ctx: Context) -> list[Step]:
    """The whole ordered runbook of the hop (the hop package builds it from its step table). A hop one of whose
    rules failed (its MIG-INT-001 error says so) may have no runbook: the rest of the plan stands."""
    try:
        return hop_package(hop).steps(hop, ctx)
    except Exception:  # noqa: BLE001
        prefix = f"{hop['from']}->{hop['to']}:"
        if any(isinstance(r, Failed) for k, rs in ctx.results.items() if k.startswith(prefix) for r in rs.values()):
            return []
        raise


def entry_hops() -> list[dict]:
    """Hops that start before any Karpenter (knowledge/hops.yaml `requires_target`): planned only when asked for."""
    return [h for h in HOPS["hops"] if h.get("requires_target") and h.get("implemented")]


def standing(hop: dict, ctx: Context) -> dict | None:
    """How a root stands at an entry hop's start (its package's `standing`): {state, note} or None."""
    return hop_package(hop).standing(ctx)


def left_beside(hop: dict, ctx: Context) -> tuple[str, str, str] | None:
    """(code, message, manual step) when what an entry hop moves away from stays beside Karpenter with no phase of
    the hop to move it (its package's `left_beside`), else None."""
    fn = getattr(hop_package(hop), "left_beside", None)
    return fn(ctx) if fn is not None else None


def present(hop: dict, ctx: Context) -> bool:
    """Whether what an entry hop moves away from is still in the root (its last phases still have a reason to run)."""
    return hop_package(hop).present(ctx)


def root_markers(repo: Repo) -> list[str]:
    """Files that make a folder a cluster root before any Karpenter is there (each entry hop's package)."""
    return [p for h in entry_hops() for p in hop_package(h).root_markers(repo)]
