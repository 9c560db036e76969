from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from migrator.options import Options

# the evaluator's answers are kept on disk between runs (migrator/evaluate.py): the suite asks the evaluator every time
# (tests of the evaluator's limits replace its worker), except tests/test_evaluator_cache.py, which turns it on
os.environ.setdefault("MIGRATOR_EVALUATOR_CACHE", "off")

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
FIXTURE_NAMES = sorted(p.name for p in FIXTURES.iterdir() if (p / "input").is_dir())


def fixture_walk(name: str) -> dict | None:
    """fixtures/<name>/walk.json {"to", "runs"}: a repository walked run by run (each run applies every cluster root's
    own next phase, no --phase) to the end; expected-run-<n> is the tree after run n, runbook-run-<n>.md the runbook
    planned after it."""
    f = FIXTURES / name / "walk.json"
    return json.loads(f.read_text()) if f.exists() else None


def fixture_hop(name: str) -> tuple[str, list[tuple[str | None, str]]]:
    """(target, [(phase, expected tree folder)]) of a fixture: fixtures/<name>/hop.json, else the first hop. A walk
    fixture's phases are None (each root's own next phase), one per run."""
    walk = fixture_walk(name)
    if walk is not None:
        return walk["to"], [(None, f"expected-run-{i}") for i in range(1, walk["runs"] + 1)]
    f = FIXTURES / name / "hop.json"
    if not f.exists():
        return "v1beta1", [("prepare", "expected"), ("cleanup", "expected-cleanup")]
    d = json.loads(f.read_text())
    return d["to"], [(p, f"expected-{p}") for p in d["phases"]]


def fixture_options(name: str) -> Options:
    f = FIXTURES / name / "options.json"
    return Options(**json.loads(f.read_text())) if f.exists() else Options()


def read_tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def tree(tmp_path):
    """Copy a fixture's input tree to a temporary directory."""
    def make(name: str) -> Path:
        dest = tmp_path / name
        shutil.copytree(FIXTURES / name / "input", dest, symlinks=True)
        return dest
    return make

