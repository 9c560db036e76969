"""Docs that are generated stay current; every finding code is catalogued."""
from __future__ import annotations

import re

from migrator import knowledge
from migrator.docs import rules_markdown

from .conftest import ROOT


def test_rules_reference_is_current():
    assert (ROOT / "docs" / "rules.md").read_text() == rules_markdown(), \
        "docs/rules.md is stale: python -m migrator.docs > docs/rules.md"


def test_every_emitted_finding_code_is_catalogued():
    used = set()
    for p in (ROOT / "migrator").rglob("*.py"):
        used |= set(re.findall(r'"(MIG-[A-Z0-9]+(?:-[A-Z0-9]+)*-\d{3})"', p.read_text()))
    catalogue = set(knowledge.load("findings"))
    assert used - catalogue == set(), "add these codes to migrator/knowledge/findings.yaml"
