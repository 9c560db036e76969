"""Runbook steps of the v1beta1 -> v1 hop."""
from __future__ import annotations

from ...model import Step


def steps(hop: dict, ctx) -> list[Step]:
    return []
