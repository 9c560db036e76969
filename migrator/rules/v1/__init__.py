"""The v1beta1 -> v1 hop (Karpenter v0.33-v0.37 -> 1.0): its rules, in the order they run, and its runbook.

Phases (knowledge/hops.yaml): patch-upgrade, controller, manifests, webhooks-off. Each rule looks at the
phase it is run for and returns edits only for that phase.
"""
from __future__ import annotations

from . import manifests
from .runbook import steps  # noqa: F401


def _manifests(ctx, phase: str, done: dict):
    return manifests.ManifestsRule(ctx.repo, ctx.manifests, phase).run()


RULES = {
    "v1/manifests": (manifests, _manifests),
}
