"""Regenerate fixtures/<name>/expected (after `prepare`), expected-cleanup (after `cleanup`) and runbook.md
(the Markdown runbook of the input; the bundled example's is also docs/example-runbook.md).

Review the diff of the expected trees before committing: they are the golden outputs the tests compare
byte for byte. Per-fixture CLI options live in fixtures/<name>/options.json (e.g. {"node_role": "x"}).
Usage: python scripts/update_fixtures.py [name ...]
"""
from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))     # this checkout's migrator, never an installed copy

from migrator.apply import apply_changes  # noqa: E402
from migrator.plan import make_plan  # noqa: E402
from migrator.render.markdown import render as render_markdown  # noqa: E402
from migrator.options import Options  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def options_for(fixture: Path) -> Options:
    f = fixture / "options.json"
    return Options(**json.loads(f.read_text())) if f.exists() else Options()


def walk(fx: Path, opts: Options) -> None:
    """A walk fixture (walk.json {"to"}): `apply --to <to>` run after run until nothing changes; the tree after run n
    is expected-run-<n>, the runbook planned after it runbook-run-<n>.md (runbook-run-0.md: planned on the input);
    walk.json records the number of runs."""
    spec = json.loads((fx / "walk.json").read_text())
    for old in list(fx.glob("expected-run-*")) + list(fx.glob("runbook-run-*.md")):
        shutil.rmtree(old) if old.is_dir() else old.unlink()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "tree"
        shutil.copytree(fx / "input", work, symlinks=True)
        runbook = render_markdown(make_plan(work, to=spec["to"], options=opts)).replace(str(work), "tree")
        (fx / "runbook-run-0.md").write_text(runbook, newline="")      # the walk's first plan: what run 1 applies
        runs = 0
        while run_phase(work, None, opts, spec["to"]):
            runs += 1
            shutil.copytree(work, fx / f"expected-run-{runs}", symlinks=True)
            runbook = render_markdown(make_plan(work, to=spec["to"], options=opts)).replace(str(work), "tree")
            (fx / f"runbook-run-{runs}.md").write_text(runbook, newline="")
            if runs > 20:
                raise SystemExit(f"{fx.name}: the walk does not end")
    spec["runs"] = runs
    (fx / "walk.json").write_text(json.dumps(spec) + "\n")


def hop_of(fixture: Path) -> tuple[str, list[tuple[str, str]]]:
    """Same layout as tests/conftest.py fixture_hop: hop.json {"to", "phases"}, else the first hop."""
    f = fixture / "hop.json"
    if not f.exists():
        return "v1beta1", [("prepare", "expected"), ("cleanup", "expected-cleanup")]
    d = json.loads(f.read_text())
    return d["to"], [(p, f"expected-{p}") for p in d["phases"]]


def run_phase(tree: Path, phase: str | None, opts: Options, to: str | None = None) -> bool:
    plan = make_plan(tree, to=to, phase=phase, options=opts)
    apply_changes(plan.root, plan.changes)
    return bool(plan.changes)


def bump(fx: Path) -> None:
    """A bump fixture (bump.json): expected/ after `apply --since HEAD~1` over the bot's commit, runbook.md its plan."""
    from tests.bumps import repository
    from migrator.options import Options
    with tempfile.TemporaryDirectory() as tmp:
        work = repository(fx, Path(tmp) / "tree")
        plan = make_plan(work, options=Options(since="HEAD~1"))
        (fx / "runbook.md").write_text(render_markdown(plan).replace(str(work), "tree"), newline="")
        apply_changes(plan.root, plan.changes)
        shutil.rmtree(work / ".git")
        if (fx / "expected").exists():
            shutil.rmtree(fx / "expected")
        shutil.copytree(work, fx / "expected", symlinks=True)


def main(names: list[str]) -> None:
    from tests.bumps import names as bump_names
    for name in bump_names(FIXTURES):
        if not names or name in names:
            bump(FIXTURES / name)
            print(f"updated {name}")
    for fx in sorted(p for p in FIXTURES.iterdir() if (p / "input").is_dir()):
        if names and fx.name not in names:
            continue
        opts = options_for(fx)
        runbook = render_markdown(make_plan(fx / "input", options=opts))
        (fx / "runbook.md").write_text(runbook, newline="")
        if fx.name == "terraform-eks":
            (FIXTURES.parent / "docs" / "example-runbook.md").write_text(runbook, newline="")
        if (fx / "walk.json").exists():
            walk(fx, opts)
            print(f"updated {fx.name}")
            continue
        to, phases = hop_of(fx)
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp) / "tree"
            shutil.copytree(fx / "input", work, symlinks=True)
            first_hop = not (fx / "hop.json").exists()
            for phase, name in phases:
                changed = run_phase(work, phase, opts, to)
                dest = fx / name
                if dest.exists():
                    shutil.rmtree(dest)
                if changed or first_hop:
                    shutil.copytree(work, dest, symlinks=True)
        print(f"updated {fx.name}")


if __name__ == "__main__":
    main(sys.argv[1:])
