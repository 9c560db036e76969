"""Run options shared by every hop (set from the command line)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Options:
    keep_alpha_defaults: bool = False       # v1alpha5 -> v1beta1: add the requirements the alpha webhook defaulted
    node_role: str | None = None            # node IAM role when the repository does not say it
