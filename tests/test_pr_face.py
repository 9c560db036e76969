"""Issue 59: what a reviewer sees - the runbook rendered as Markdown, a patch `git apply` takes, text that keeps
its lines whole outside a terminal."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from typer.testing import CliRunner

from migrator.apply import apply_changes
from migrator.cli import app
from migrator.plan import make_plan
from migrator.render import diff as diff_render
from migrator.render.markdown import md, render as runbook

from .conftest import fixture_hop, fixture_options

FIXTURES = Path(__file__).parent.parent / "fixtures"
GIT = shutil.which("git")


@pytest.mark.parametrize("text,shown", [
    ("1.4: durations with trailing text are rejected", "1.4: durations with trailing text are rejected"),
    ("1. first", "1. first"), ("# not a heading", "# not a heading"), ("- not a bullet", "- not a bullet"),
    ("a | b", "a | b"), ("--set a=b", "--set a=b"), ("*x* _y_ `z`", "*x* _y_ `z`"), ("<b>x</b>", "<b>x</b>"),
])
def test_inline_text_renders_as_written(text, shown):
    """md() makes text literal for a real Markdown renderer: nothing becomes a list, heading or emphasis, and no
    stray backslash is shown (GitHub showed `\\1.2:` for a note that started with a minor)."""
    html = MarkdownIt("commonmark").enable("table").render(md(text))
    assert html.startswith("<p>") and "\\" not in html
    import html as h
    assert h.unescape(html[3:-5]) == shown


@pytest.mark.parametrize("name", ["terraform-eks", "evaluated-installs", "gitops-flux", "helm-cli-script"])
def test_the_runbook_renders_without_escapes_showing(name):
    plan = make_plan(FIXTURES / name / "input", options=fixture_options(name))
    html = MarkdownIt("commonmark").enable("table").render(runbook(plan))
    text = "".join(html.split("<pre>")[0::2])          # outside code blocks
    assert "\\1." not in text and "\\2." not in text


@pytest.mark.skipif(GIT is None, reason="git is not installed")
@pytest.mark.parametrize("name", ["terraform-eks", "gitops-flux", "evaluated-installs", "kustomize-overlays",
                                  "cas-kustomize"])
def test_format_diff_is_a_patch_git_applies_to_what_apply_writes(tmp_path, name):
    """`--format diff` (new, modified and deleted files: kustomize-overlays' second run deletes) applies with
    `git apply` and gives the same tree as `migrator apply --write`, run after run of the fixture's walk."""
    to, _ = fixture_hop(name)
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(FIXTURES / name / "input", a)
    shutil.copytree(FIXTURES / name / "input", b)
    subprocess.run([GIT, "init", "-q"], cwd=a, check=True)
    actions = set()
    for _ in range(4):
        plan = make_plan(b, to=to, options=fixture_options(name))
        if not plan.changes:
            break
        actions |= {c.action for c in plan.changes}
        (tmp_path / "p.diff").write_text(diff_render.render(make_plan(a, to=to, options=fixture_options(name))))
        subprocess.run([GIT, "apply", "--check", str(tmp_path / "p.diff")], cwd=a, check=True)
        subprocess.run([GIT, "apply", str(tmp_path / "p.diff")], cwd=a, check=True)
        apply_changes(b, plan.changes)
        got = {p.relative_to(a).as_posix(): p.read_bytes() for p in a.rglob("*") if p.is_file() and ".git" not in p.parts}
        assert got == {p.relative_to(b).as_posix(): p.read_bytes() for p in b.rglob("*") if p.is_file()}
    assert "modify" in actions


def test_text_output_is_not_wrapped_outside_a_terminal():
    res = CliRunner().invoke(app, ["plan", str(FIXTURES / "terraform-eks" / "input")])
    line = next(x for x in res.output.splitlines() if "MIG-HELM-009" in x)
    assert "(v0.28 removed settings.aws.nodeNameConvention" in line and len(line) > 200
    res = CliRunner().invoke(app, ["plan", str(FIXTURES / "terraform-eks" / "input"), "--width", "80"])
    assert max(len(x) for x in res.output.splitlines()) <= 80


ROOT = Path(__file__).parent.parent


def test_every_documented_install_works_today_or_says_once_published():
    """karpenter-migrator is not on PyPI yet: an install of it by name is only ever written as what changes once it
    is published (the GitLab recipe and the Renovate preset ran it and failed)."""
    import re
    files = [ROOT / "README.md", ROOT / "action.yml", ROOT / ".pre-commit-hooks.yaml", ROOT / "renovate" / "karpenter.json",
             *sorted((ROOT / "docs").glob("*.md"))]
    for f in files:
        lines = f.read_text().splitlines()
        for i, line in enumerate(lines):
            if re.search(r"(pip|pipx) install (--quiet )?karpenter-migrator", line):
                around = " ".join(lines[max(0, i - 1):i + 1]).lower()
                assert "once" in around, f"{f.name}:{i + 1}: {line.strip()}"


def test_the_renovate_presets_commands_are_the_ones_the_docs_allow():
    import json
    import re
    preset = json.loads((ROOT / "renovate" / "karpenter.json").read_text())
    commands = [c for r in preset["packageRules"] for c in r.get("postUpgradeTasks", {}).get("commands", [])]
    doc = (ROOT / "docs" / "keeping-current.md").read_text()
    allowed = json.loads(re.search(r"allowedPostUpgradeCommands: (\[[^\]]*\])", doc.replace("\n", " ")).group(1))
    assert commands and all(any(re.search(a, c) for a in allowed) for c in commands), (commands, allowed)


def test_the_check_hook_fails_on_errors_not_on_a_phase_that_waits():
    """pre-commit's migrator-check: `--fail-on error` exits 0 while changes are pending (nodes rolling between
    phases), 1 on an error; `--fail-on pending` is the stricter policy."""
    hooks = (ROOT / ".pre-commit-hooks.yaml").read_text()
    import re
    entry = re.search(r"^- id: migrator-check\n(?:  .*\n)*?  entry: (.*)$", hooks, re.M).group(1).split()
    assert entry[:2] == ["migrator", "plan"] and "--detailed-exitcode" not in entry
    pending = str(FIXTURES / "terraform-eks" / "input")
    assert CliRunner().invoke(app, [*entry[1:], pending]).exit_code == 0
    assert CliRunner().invoke(app, [*entry[1:], "--fail-on", "pending", pending]).exit_code == 2
