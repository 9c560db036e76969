"""apply --write on every fixture gives exactly its expected trees, and a second run has nothing to do."""
from __future__ import annotations

import difflib

import pytest

from migrator.apply import apply_changes
from migrator.plan import make_plan

from .conftest import FIXTURE_NAMES, FIXTURES, fixture_options, read_tree


def _apply(root, phase, opts):
    plan = make_plan(root, phase=phase, options=opts)
    apply_changes(plan.root, plan.changes)
    return plan


def _assert_same_tree(got, want):
    assert sorted(got) == sorted(want), "files differ"
    for path in want:
        if got[path] != want[path]:
            diff = "".join(difflib.unified_diff(want[path].decode().splitlines(True),
                                                got[path].decode().splitlines(True), "expected", "got"))
            pytest.fail(f"{path} differs from the expected tree:\n{diff}")


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_prepare_then_cleanup_match_expected_trees(name, tree):
    root = tree(name)
    opts = fixture_options(name)
    _apply(root, "prepare", opts)
    _assert_same_tree(read_tree(root), read_tree(FIXTURES / name / "expected"))
    again = make_plan(root, phase="prepare", options=opts)
    assert again.changes == [], "prepare is not idempotent"
    _apply(root, "cleanup", opts)
    _assert_same_tree(read_tree(root), read_tree(FIXTURES / name / "expected-cleanup"))
    assert make_plan(root, phase="cleanup", options=opts).changes == [], "cleanup is not idempotent"


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_new_objects_only_insert_into_existing_files(name, tree):
    """Lossless: placing new objects only adds text; every original byte survives in order."""
    root = tree(name)
    plan = make_plan(root, phase="prepare", options=fixture_options(name))
    for c in plan.changes:
        if c.action != "modify" or c.rules != ["v1beta1/manifests"]:
            continue
        ops = difflib.SequenceMatcher(None, c.old, c.new, autojunk=False).get_opcodes()
        assert all(tag in ("equal", "insert") for tag, *_ in ops), f"{c.path}: prepare removed or replaced text"


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_default_phase_moves_on_after_prepare(name, tree):
    root = tree(name)
    opts = fixture_options(name)
    assert make_plan(root, options=opts).phase == "prepare"
    _apply(root, "prepare", opts)
    after = make_plan(root, options=opts)
    assert after.phase == "cleanup"
    assert after.changes, "cleanup has work once prepare has landed"
