"""The v1alpha5 -> v1beta1 hop (Karpenter v0.31 -> v0.32): its rules, in the order they run, and its runbook.

A hop package exposes `RULES` (rule name -> (module documenting it, runner)) and `steps(hop, ctx)`; the
orchestration reads which package a hop uses, and its phases, from knowledge/hops.yaml.
"""
from __future__ import annotations

from . import helm, iam, kustomize, manifests, rendered, terraform_module, workloads
from .helm import HelmResult, HelmRule
from .iam import IamResult, IamRule
from .kustomize import KustomizeResult, KustomizeRule
from .manifests import ManifestsRule, Result
from .runbook import steps  # noqa: F401
from .terraform_module import ModuleResult, ModuleRule
from .workloads import WorkloadsResult, WorkloadsRule


def _manifests(ctx, phase: str, done: dict) -> Result:
    rule = ManifestsRule(ctx.repo, ctx.manifests, ctx.helm_values, ctx.options, ctx.owns)
    return rule.prepare() if phase == "prepare" else rule.cleanup()


def _kustomize(ctx, phase: str, done: dict) -> KustomizeResult:
    return KustomizeRule(ctx.repo, phase, ctx.owns, ctx.options.keep_alpha_defaults).run()


def _rendered(ctx, phase: str, done: dict):
    from ..registry import HOPS
    hop = next(h for h in HOPS["hops"] if h.get("package") == "v1beta1")
    return rendered.run(ctx, hop, phase)


def _helm(ctx, phase: str, done: dict) -> HelmResult:
    # a root that only installs the chart (GitOps: apps/ beside the manifests' folder) keeps the values the
    # repository's alpha objects still rely on
    manifests = ctx.manifests or ctx.all_manifests
    return HelmRule(ctx.repo, manifests, ctx.charts, phase, _blocked(done), owns=ctx.owns).run()


def _deleted(done: dict) -> list[tuple[str, int, int]]:
    """Spans the rules before this one delete in this phase."""
    return [(e.path, e.start, e.end) for r in done.values() for e in r.edits
            if getattr(e, "text", None) == "" and e.end > e.start]


def _iam(ctx, phase: str, done: dict) -> IamResult:
    return IamRule(ctx.repo, ctx.manifests, phase, ctx.helm_values, _deleted(done), ctx.owns,
                   options=ctx.options).run()


def _blocked(done: dict) -> set[tuple[str, int]]:
    """Alpha objects the manifests rule could not remove in this cleanup (their successors are missing)."""
    m = done.get("v1beta1/manifests")
    return {(f.path, f.line) for f in m.findings if f.code == "MIG-CLN-001"} if m is not None else set()


def _module(ctx, phase: str, done: dict) -> ModuleResult:
    uses_role = IamRule(ctx.repo, ctx.manifests, phase).uses_role()
    return ModuleRule(ctx.repo, ctx.manifests, phase, uses_role, _blocked(done), _deleted(done), ctx.owns).run()


def _workloads(ctx, phase: str, done: dict) -> WorkloadsResult:
    return WorkloadsRule(ctx.repo, phase, ctx.owns).run()


RULES = {
    "v1beta1/manifests": (manifests, _manifests),
    "v1beta1/kustomize": (kustomize, _kustomize),
    "v1beta1/helm": (helm, _helm),
    "v1beta1/rendered": (rendered, _rendered),
    "v1beta1/iam": (iam, _iam),
    "v1beta1/terraform_module": (terraform_module, _module),
    "v1beta1/workloads": (workloads, _workloads),
}
