"""Bump fixtures (issue 58 item 7): a dependency bot's bump of Karpenter in each GitOps shape, replayed in a git
repository; `apply --since HEAD~1 --write` gives expected/ byte for byte, the plan's runbook is runbook.md, and a
second plan over the result has nothing left to do."""
from __future__ import annotations

import pytest

from migrator.apply import apply_changes
from migrator.options import Options
from migrator.plan import make_plan
from migrator.render.markdown import render as render_markdown

from .bumps import names, repository
from .conftest import FIXTURES, read_tree

BUMPS = names(FIXTURES)


@pytest.mark.parametrize("name", BUMPS)
def test_a_bots_bump_gets_its_companion_edits(name, tmp_path):
    fx = FIXTURES / name
    work = repository(fx, tmp_path / "tree")
    plan = make_plan(work, options=Options(since="HEAD~1"))
    assert render_markdown(plan).replace(str(work), "tree") == (fx / "runbook.md").read_text()
    assert not [f for f in plan.findings if f.code.startswith("MIG-INT")]
    apply_changes(plan.root, plan.changes)
    got = {k: v for k, v in read_tree(work).items() if not k.startswith(".git/")}
    assert got == read_tree(fx / "expected")
    again = make_plan(work, options=Options(since="HEAD~1"))
    assert not again.changes, [c.path for c in again.changes]


def test_there_are_bump_fixtures_of_every_gitops_shape():
    assert {"bump-argocd-umbrellas", "bump-argocd-multisource", "bump-kustomize-helmcharts", "bump-flux-oci",
            "bump-helmfile", "bump-quiet-patch"} <= set(BUMPS)


def test_a_quiet_bump_changes_nothing():
    """Both charts bumped together inside one minor: no companion edit and nothing to stop for."""
    fx = FIXTURES / "bump-quiet-patch"
    assert read_tree(fx / "expected") == read_tree(fx / "bumped")
    assert "error" not in (fx / "runbook.md").read_text().split("## ")[1]
