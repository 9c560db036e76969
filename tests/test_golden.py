"""apply --write on every fixture, phase by phase, gives exactly its expected trees; each phase re-plans clean."""
from __future__ import annotations

import difflib
import re

import pytest

from migrator.apply import apply_changes
from migrator.plan import make_plan

from .conftest import FIXTURE_NAMES, FIXTURES, fixture_hop, fixture_options, fixture_walk, read_tree

FIRST_HOP = [n for n in FIXTURE_NAMES if fixture_hop(n)[0] == "v1beta1"]


def _apply(root, phase, opts, to=None):
    plan = make_plan(root, to=to, phase=phase, options=opts)
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
def test_phases_match_expected_trees(name, tree):
    root = tree(name)
    opts = fixture_options(name)
    to, phases = fixture_hop(name)
    for phase, folder in phases:
        plan = _apply(root, phase, opts, to)
        expected = FIXTURES / name / folder
        if expected.is_dir():
            _assert_same_tree(read_tree(root), read_tree(expected))
        else:
            assert plan.changes == [], f"{phase} changes files but {folder} is missing"
        if phase is not None:                   # a walk's next run has the next phase's changes
            again = make_plan(root, to=to, phase=phase, options=opts)
            assert again.changes == [], f"{phase} is not idempotent"
    if fixture_walk(name) is not None:          # walked to the end: nothing is left to write (a stop writes nothing)
        assert make_plan(root, to=to, options=opts).changes == [], f"the walk of {name} goes on after its last run"


@pytest.mark.parametrize("name", FIRST_HOP)
def test_new_objects_only_insert_into_existing_files(name, tree):
    """Lossless: placing new objects only adds text; every original byte survives in order."""
    root = tree(name)
    plan = make_plan(root, phase="prepare", options=fixture_options(name))
    for c in plan.changes:
        if c.action != "modify" or c.rules != ["v1beta1/manifests"]:
            continue
        ops = difflib.SequenceMatcher(None, c.old, c.new, autojunk=False).get_opcodes()
        assert all(tag in ("equal", "insert") for tag, *_ in ops), f"{c.path}: prepare removed or replaced text"


def rerender_by_hand(root, plan) -> bool:
    """What the user does by hand for a chart rendered with `helm template` (MIG-RND-001): re-render it at the
    version the finding names. Stands in for helm: only the chart labels move, which is what migrator reads."""
    done = False
    for f in plan.findings:
        if f.code != "MIG-RND-001":
            continue
        version = re.search(r"--version (\S+) .*> " + re.escape(f.path), f.manual_step).group(1)
        p = root / f.path
        text = p.read_text()
        p.write_text(re.sub(r"(helm\.sh/chart: karpenter)-v?\d+\.\d+\.\d+", rf"\g<1>-{version}", text))
        done = done or p.read_text() != text
    return done


# a walk fixture plans each root's own phase run after run: test_phases_match_expected_trees walks it
@pytest.mark.parametrize("name", [n for n in FIXTURE_NAMES if fixture_walk(n) is None])
def test_default_phase_is_the_next_phase_with_work(name, tree):
    root = tree(name)
    opts = fixture_options(name)
    to, phases = fixture_hop(name)
    with_work = [p for p, folder in phases if (FIXTURES / name / folder).is_dir()]
    for i, phase in enumerate(with_work):
        plan = make_plan(root, to=to, options=opts)
        while not plan.changes and rerender_by_hand(root, plan):    # a phase whose work is a re-render only
            plan = make_plan(root, to=to, options=opts)
        assert plan.phase == phase and plan.changes, f"default phase should be {phase}"
        apply_changes(plan.root, plan.changes)
        rerender_by_hand(root, plan)
    assert make_plan(root, to=to, options=opts).changes == []
