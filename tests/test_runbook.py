"""The Markdown runbook: golden file per fixture, the docs example, hostile names, order, completeness."""
from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from migrator.cli import app
from migrator.plan import make_plan
from migrator.render.markdown import code, fence, md, render

from .conftest import FIXTURE_NAMES, FIXTURES, ROOT, fixture_options


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_runbook_matches_golden(name):
    got = render(make_plan(FIXTURES / name / "input", options=fixture_options(name)))
    assert got == (FIXTURES / name / "runbook.md").read_bytes().decode("utf-8"), \
        f"fixtures/{name}/runbook.md is stale: python scripts/update_fixtures.py {name}"


@pytest.mark.parametrize("name", [n for n in FIXTURE_NAMES if (FIXTURES / n / "walk.json").exists()])
def test_walk_starts_with_the_golden_runbook(name, tmp_path):
    """A walk fixture's first plan (--to as the walk) is runbook-run-0.md: the steps run 1 applies."""
    import json
    import shutil
    to = json.loads((FIXTURES / name / "walk.json").read_text())["to"]
    root = tmp_path / "tree"
    shutil.copytree(FIXTURES / name / "input", root, symlinks=True)
    got = render(make_plan(root, to=to, options=fixture_options(name))).replace(str(root), "tree")
    assert got == (FIXTURES / name / "runbook-run-0.md").read_bytes().decode("utf-8"), \
        f"fixtures/{name}/runbook-run-0.md is stale: python scripts/update_fixtures.py {name}"


def test_docs_example_runbook_is_current():
    got = render(make_plan(FIXTURES / "terraform-eks" / "input"))
    assert got == (ROOT / "docs" / "example-runbook.md").read_bytes().decode("utf-8")


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_every_step_has_command_check_and_rollback(name):
    plan = make_plan(FIXTURES / name / "input", options=fixture_options(name))
    for s in plan.steps:
        assert s.commands and s.verify and s.rollback, s.id
    firsts = {(r.path if len(plan.roots) > 1 else ""): r.phases[0]["name"] for r in plan.roots if r.phases}
    for root in {s.root for s in plan.steps}:            # the order holds within each cluster root and phase
        first = firsts[root]                             # each root's own hop
        for phase in {s.phase for s in plan.steps if s.root == root}:
            kinds = [s.kind for s in plan.steps if s.root == root and s.phase == phase]
            crds = [i for i, k in enumerate(kinds) if k == "crds"]
            charts = [i for i, k in enumerate(kinds) if k == "chart"]
            iam = [i for i, k in enumerate(kinds) if k in ("iam", "module")]
            assert not crds or not charts or max(crds) < min(charts), "chart before CRDs"
            if phase == first:
                assert not iam or not charts or min(iam) < min(charts), "chart before IAM"
        kinds = [s.kind for s in plan.steps if s.root == root]
        if "roll-nodes" in kinds:          # within the rollout's phase (cleanup may re-render the chart after it)
            roll_phase = next(s.phase for s in plan.steps if s.root == root and s.kind == "roll-nodes")
            steps = [s for s in plan.steps if s.root == root and s.phase == roll_phase]
            kinds = [s.kind for s in steps]
            assert kinds.index("roll-nodes") > max(i for i, k in enumerate(kinds) if k in ("manifests", "chart"))


HOSTILE = '<script>alert(1)</script> [x](javascript:alert(1)) `x` | # h ** _ ![i](http://e)'


def test_filters_neutralise_markdown_and_html():
    out = md(HOSTILE)
    assert "<" not in out and "](" not in out.replace("\\](", "") and "\n" not in out
    assert code("a``b").startswith("```") and code("x\ny") == "`x y`"
    assert fence(["```", "x"]).startswith("````")


def test_hostile_names_cannot_inject(tmp_path):
    name = "evil<img src=x onerror=alert(1)>"
    (tmp_path / "p.yaml").write_text(
        "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata:\n"
        f"  name: '{name} [click](http://x) ```'\nspec:\n  providerRef:\n    name: '</details><h1>x'\n")
    doc = render(make_plan(tmp_path))
    # render as GitHub would (CommonMark + tables, raw HTML allowed) and look at the HTML it produces
    from markdown_it import MarkdownIt
    out = MarkdownIt("commonmark", {"html": True}).enable("table").render(doc)
    assert "<img" not in out and "<h1>x" not in out and "<a " not in out and "<script" not in out
    assert out.count("<details>") == out.count("</details>")
    assert name.replace("<", "&lt;").replace(">", "&gt;") in out      # shown, as text
    fences = re.findall(r"(?m)^(`{3,})", doc)
    assert len(fences) % 2 == 0


def test_runbook_command_and_markdown_format(tmp_path):
    runner = CliRunner()
    out = tmp_path / "RUNBOOK.md"
    r = runner.invoke(app, ["runbook", str(FIXTURES / "gitops-flux" / "input"), "-o", str(out)])
    assert r.exit_code == 0 and out.read_text().startswith("# Karpenter migration runbook")
    r = runner.invoke(app, ["plan", str(FIXTURES / "gitops-flux" / "input"), "--format", "markdown"])
    assert r.stdout == out.read_text()


def test_progress_after_prepare(tree):
    """On a repository where prepare has landed, plan reports the roll as next and cleanup has edits."""
    from migrator.apply import apply_changes
    root = tree("gitops-flux")
    p = make_plan(root)
    apply_changes(p.root, p.changes)
    again = make_plan(root)
    assert again.phase == "cleanup" and again.changes
    (status,) = again.roots
    assert "prepare has landed" in status.state and "roll the nodes" in status.state
    assert (status.hop_from, status.phase) == ("v1alpha5", "cleanup") and status.next.startswith("v1beta1 → v1")


def test_phases_before_the_planned_one_are_never_asked_for_again(tree):
    """Once a phase has nothing left in the files, the runbook of a later run says so; only the phases after the
    planned one are 'computed when the previous phase has landed'."""
    from migrator.apply import apply_changes
    root = tree("gitops-flux")
    p = make_plan(root)
    apply_changes(p.root, p.changes)
    again = make_plan(root)
    (status,) = again.roots
    assert status.written == ["prepare"] and again.phase == "cleanup"
    text = render(again)
    prepare = text.split("Phase 1: prepare", 1)[1].split("Phase 2:", 1)[0]
    assert "Nothing of this phase is left to change in the files" in prepare
    assert "computed when the previous phase has landed" not in prepare
    assert "Nothing of this phase is left" not in render(make_plan(FIXTURES / "gitops-flux" / "input"))


def test_terraform_commands_run_per_root_module(tmp_path):
    """In a monorepo, -target addresses of different root modules never share one terraform command."""
    import shutil
    for env in ("dev", "prod"):
        shutil.copytree(FIXTURES / "helm-values-files" / "input", tmp_path / "envs" / env)
    plan = make_plan(tmp_path)
    assert [r.path for r in plan.roots] == ["envs/dev", "envs/prod"]
    charts = [s for s in plan.steps if s.kind == "chart"]
    assert [s.root for s in charts] == ["envs/dev", "envs/prod"]
    assert "terraform -chdir=envs/dev plan -target=helm_release.karpenter" in charts[0].commands[0]
    assert charts[1].commands[0].startswith("terraform -chdir=envs/prod plan")
    assert not any("envs/dev" in c and "envs/prod" in c for s in plan.steps for c in s.commands)


def test_monorepo_has_one_section_per_cluster_root():
    plan = make_plan(FIXTURES / "monorepo" / "input")
    assert [r.path for r in plan.roots] == ["clusters/dev/karpenter", "clusters/prod/karpenter"]
    doc = render(plan)
    assert doc.count("## Cluster root `clusters/") == 2
    dev, prod = doc.split("## Cluster root `clusters/prod/karpenter`")
    assert "### Phase 1: prepare" in dev and "### Phase 1: prepare" in prod
    assert "role: node-karpenter-dev" in dev and "role: node-karpenter-prod" in prod
    assert "node-karpenter-prod" not in dev.split("## Cluster root")[1]
