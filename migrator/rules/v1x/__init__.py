"""The onward hop inside v1: Karpenter 1.0.x -> the chosen 1.x (newest by default), minor by minor as data.

One phase, `upgrade`: the terraform-aws-modules module is checked for the IAM the target needs (and the chart is
held at what the module's policy supports when it falls short), the controller policy is aligned with the official
policy of the target, and both charts move to the target's newest patch with every crossed minor's values changes
(knowledge/minors.yaml). The runbook lists each crossed minor's own checks.
"""
from __future__ import annotations

from . import crds, helm, iam, rendered, terraform_module
from .runbook import steps  # noqa: F401


def _module(ctx, phase: str, done: dict):
    return terraform_module.run(ctx, phase)


def _iam(ctx, phase: str, done: dict):
    return iam.run(ctx, phase, done)


def _helm(ctx, phase: str, done: dict):
    return helm.run(ctx, phase, done)


def _crds(ctx, phase: str, done: dict):
    return crds.run(ctx, phase, done)


def _rendered(ctx, phase: str, done: dict):
    return rendered.run(ctx, phase, done)


def reach(hop: dict, ctx, phase: str) -> str:
    """The chart this run really moves to: the target, or lower where the module's policy or a required value
    nobody states holds it (rules/v1x/plan.py `stop`)."""
    from .plan import stop
    return stop(ctx, ctx.result(hop, phase))[0]


RULES = {
    "v1x/terraform_module": (terraform_module, _module),
    "v1x/iam": (iam, _iam),
    "v1x/helm": (helm, _helm),
    "v1x/rendered": (rendered, _rendered),
    "v1x/crds": (crds, _crds),
}
