"""The v1beta1 -> v1 hop (Karpenter v0.33-v0.37 -> 1.0): its rules, in the order they run, and its runbook.

Phases (knowledge/hops.yaml): patch-upgrade, controller, manifests, webhooks-off. Each rule looks at the
phase it is run for and returns edits only for that phase.
"""
from __future__ import annotations

from . import helm, iam, kustomize, manifests, rendered, terraform_module, workloads
from .runbook import steps  # noqa: F401


def _manifests(ctx, phase: str, done: dict):
    return manifests.ManifestsRule(ctx.repo, ctx.manifests, phase).run()


def _kustomize(ctx, phase: str, done: dict):
    return kustomize.run(ctx, phase)


def _helm(ctx, phase: str, done: dict):
    return helm.run(ctx, phase)


def _rendered(ctx, phase: str, done: dict):
    return rendered.run(ctx, phase)


def _iam(ctx, phase: str, done: dict):
    return iam.run(ctx, phase)


def _module(ctx, phase: str, done: dict):
    return terraform_module.run(ctx, phase)


def _workloads(ctx, phase: str, done: dict):
    return workloads.run(ctx, phase)


RULES = {
    "v1/helm": (helm, _helm),
    "v1/rendered": (rendered, _rendered),
    "v1/iam": (iam, _iam),
    "v1/terraform_module": (terraform_module, _module),
    "v1/manifests": (manifests, _manifests),
    "v1/kustomize": (kustomize, _kustomize),
    "v1/workloads": (workloads, _workloads),
}
