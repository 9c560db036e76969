"""A bounded fuzz run of the source layer: random mutations of real fixture files never raise out of a plan and
never reach a rule as an internal error; whatever migrator cannot read becomes a finding."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from migrator.plan import make_plan

from .conftest import FIXTURES

SOURCES = [FIXTURES / "v1-terraform" / "input" / "karpenter.tf",
           FIXTURES / "v1-raw-yaml" / "input" / "karpenter" / "nodepools.yaml",
           FIXTURES / "terraform-eks" / "input" / "karpenter.tf"]
NOISE = st.lists(st.sampled_from(list(':{}[]"\'$%#-\n\t =<>|&*!,.~') + ["${", "%{", "<<", "EOT", "YAML"]),
                 max_size=6).map("".join)


@st.composite
def mutation(draw):
    src = draw(st.sampled_from(SOURCES))
    text = src.read_text()
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(text)))
        j = min(len(text), i + draw(st.integers(0, 12)))
        text = text[:i] + draw(NOISE) + text[j:]
    return src, text


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow],
          phases=[Phase.explicit, Phase.reuse, Phase.generate])      # bounded: no shrinking in CI
@given(mutation())
def test_mutated_sources_never_raise(m):
    src, text = m
    with tempfile.TemporaryDirectory() as d:
        root = Path(d) / "repo"
        shutil.copytree(src.parents[1] if src.parent.name == "karpenter" else src.parent, root)
        target = root / src.relative_to(src.parents[1] if src.parent.name == "karpenter" else src.parent)
        target.write_text(text)
        for to in (None, "v1"):
            plan = make_plan(root, to=to)
            internal = [f for f in plan.findings if f.code == "MIG-INT-001"]
            assert not internal, internal[0].message
