"""Issue 60: the evaluator runs once per Terraform configuration: its answer is kept on disk and reused by the next
run over the same files, and any edit of a Terraform file asks again."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from migrator import evaluate
from migrator.plan import make_plan

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.mark.skipif(not evaluate._installed(), reason="tfparse is not installed")
def test_the_evaluators_answer_is_reused_until_a_file_changes(tmp_path, monkeypatch):
    monkeypatch.setenv("MIGRATOR_EVALUATOR_CACHE", "on")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES / "evaluated-installs" / "input", tree)
    asked = []
    real = evaluate._evaluate

    def counting(path, limit):
        asked.append(path)
        return real(path, limit)
    monkeypatch.setattr(evaluate, "_evaluate", counting)
    first = make_plan(tree)
    assert asked
    kept = list((tmp_path / "cache" / "migrator").glob("tfparse-*.json"))
    assert kept
    asked.clear()
    second = make_plan(tree)
    assert not asked                                     # every root module's answer came from disk
    assert [(c.path, c.new) for c in second.changes] == [(c.path, c.new) for c in first.changes]
    assert [f.to_json() for f in second.findings] == [f.to_json() for f in first.findings]
    main = next(tree.rglob("*.tf"))
    main.write_text(main.read_text() + "\n# edited\n")
    make_plan(tree)
    assert asked                                         # an edited file: asked again


def test_progress_appears_only_once_a_plan_takes_a_second():
    """Issue 60: a spinner on a terminal for a slow plan, nothing for a fast one."""
    import io
    import time

    from rich.console import Console

    from migrator.cli import _after_a_second
    fast, slow = io.StringIO(), io.StringIO()
    with _after_a_second(Console(file=fast, force_terminal=True), "planning", delay=0.2):
        time.sleep(0.01)
    with _after_a_second(Console(file=slow, force_terminal=True), "planning", delay=0.05):
        time.sleep(0.4)
    assert fast.getvalue() == "" and "planning" in slow.getvalue()
