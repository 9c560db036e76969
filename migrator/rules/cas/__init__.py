"""The Cluster Autoscaler hop: a root with Cluster Autoscaler and node groups moves straight to Karpenter 1.x.

Phases (knowledge/hops.yaml): `install` (Karpenter next to Cluster Autoscaler, NodePools from the node groups),
`cutover` (Cluster Autoscaler to zero, the replaced node groups to zero nodes), `cleanup` (Cluster Autoscaler, its IAM
and the replaced node groups removed). Facts in knowledge/cas.yaml; inventory in migrator/cas.py.
"""
from __future__ import annotations

from . import autoscaler, karpenter, nodegroups, workloads
from .runbook import steps  # noqa: F401


def _karpenter(ctx, phase: str, done: dict):
    return karpenter.run(ctx, phase)


def _autoscaler(ctx, phase: str, done: dict):
    return autoscaler.run(ctx, phase)


def _nodegroups(ctx, phase: str, done: dict):
    return nodegroups.run(ctx, phase)


def _workloads(ctx, phase: str, done: dict):
    return workloads.run(ctx, phase, done)


RULES = {
    "cas/karpenter": (karpenter, _karpenter),
    "cas/autoscaler": (autoscaler, _autoscaler),
    "cas/nodegroups": (nodegroups, _nodegroups),
    "cas/workloads": (workloads, _workloads),
}
