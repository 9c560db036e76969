"""A review copy of the controller chart's `helm template` output (migrator/rendercopy.py): a folder the kustomization
leaves out, rendered by a Makefile target to show a chart bump's diff (dfds/platform-apps `apps/karpenter/manifests`).
It is said when the chart moves past it (MIG-RND-002), with the command that makes it again; never edited, never an
install."""
from __future__ import annotations

import shutil

from migrator.plan import make_plan
from migrator.rendercopy import _target

from .conftest import FIXTURES

BASE = FIXTURES / "bump-vendored-crds" / "base"
COPY = "apps/karpenter/manifests/Deployment-karpenter.yml"


def _tree(tmp_path):
    work = tmp_path / "tree"
    shutil.copytree(BASE, work)
    return work


def _said(plan):
    return [f for f in plan.findings if f.code == "MIG-RND-002"]


def test_a_stale_copy_is_said_with_the_makefile_target_that_renders_it(tmp_path):
    plan = make_plan(_tree(tmp_path), to="1.7.1")
    [f] = _said(plan)
    assert (f.path, f.line, f.severity) == (COPY, 2, "warning")
    assert "at 1.6.3" in f.message and "apps/karpenter/kustomization.yaml does not apply" in f.message
    assert "`make -C apps/karpenter manifests`" in f.manual_step
    assert COPY not in {c.path for c in plan.changes}


def test_without_a_makefile_the_fix_is_helm_template(tmp_path):
    work = _tree(tmp_path)
    (work / "apps/karpenter/Makefile").unlink()
    [f] = _said(make_plan(work, to="1.7.1"))
    assert "`helm template` as it was made, at chart 1.7.1" in f.manual_step


def test_a_copy_at_the_target_is_not_said(tmp_path):
    work = _tree(tmp_path)
    p = work / COPY
    p.write_text(p.read_text().replace("controller:1.6.3@", "controller:1.7.1@"))
    assert not _said(make_plan(work, to="1.7.1"))


def test_a_copy_the_kustomization_applies_is_no_review_copy(tmp_path):
    work = _tree(tmp_path)
    k = work / "apps/karpenter/kustomization.yaml"
    k.write_text(k.read_text().rstrip("\n") + "\n  - manifests/Deployment-karpenter.yml\n")
    assert not _said(make_plan(work, to="1.7.1"))


def test_output_labelled_with_the_chart_is_read_as_rendered_not_as_a_copy(tmp_path):
    work = _tree(tmp_path)
    p = work / COPY
    p.write_text(p.read_text().replace("    app.kubernetes.io/managed-by: Helm\n",
                                       "    app.kubernetes.io/managed-by: Helm\n    helm.sh/chart: karpenter-1.6.3\n", 1))
    assert not _said(make_plan(work, to="1.7.1"))


def test_the_makefile_target_is_the_rule_whose_recipe_renders_into_the_folder():
    text = ("VERSION := $(shell yq .spec.ref.tag sources.yaml)\n.PHONY: all manifests\n"
            "crds.yaml: sources.yaml\n\thelm show crds x > $@\n"
            "other:\n\thelm template a b > elsewhere/out.yaml\n"
            "manifests: release.yaml\n\thelm template karpenter x --skip-crds \\\n\t\t| yq -s '\"manifests/\" + .kind'\n")
    assert _target(text, "manifests") == "manifests"
    assert _target(text, "rendered") is None
    assert _target("all:\n\techo helm\n", "manifests") is None


def test_a_copy_a_flux_kustomization_applies_is_no_review_copy(tmp_path):
    """A Flux Kustomization whose path is the folder applies every file there, whatever a kustomization above lists."""
    work = _tree(tmp_path)
    (work / "apps/flux.yaml").write_text(
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: karpenter-rendered\n"
        "spec:\n  path: ./apps/karpenter/manifests\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n")
    assert not _said(make_plan(work, to="1.7.1"))
