"""Vendored CRDs (issue 32 §4): Karpenter CRD files kept in the repository are read as the releases their fields
match, and said when older than the chart the root runs or moves to."""
from __future__ import annotations

import pathlib
import shutil

from ruamel.yaml import YAML

from migrator.crdfiles import fingerprint, stale, vendored
from migrator.inventory.repo import Repo
from migrator.plan import make_plan

FIXTURES = pathlib.Path(__file__).parent.parent / "fixtures"
CRDS = FIXTURES / "flux-vendored-crds" / "input" / "clusters" / "prod" / "karpenter" / "crds"   # Karpenter 1.7.6's


def test_descriptions_and_layout_do_not_change_the_fingerprint():
    doc = YAML(typ="safe").load((CRDS / "karpenter.sh_nodepools.yaml").read_text())
    edited = YAML(typ="safe").load((CRDS / "karpenter.sh_nodepools.yaml").read_text())
    edited["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["description"] = "changed"
    assert fingerprint(doc) == fingerprint(edited)
    edited["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["replicas"] = {}
    assert fingerprint(doc) != fingerprint(edited)


def test_a_set_serves_its_own_minor_and_is_stale_for_a_later_one(tmp_path):
    shutil.copytree(CRDS, tmp_path / "crds")
    (vs,) = vendored(Repo(tmp_path))
    assert not stale(vs, "1.6.8") and not stale(vs, "1.6.2")
    assert stale(vs, "1.7.6") == ["nodeoverlays.karpenter.sh (new in 1.7) is missing"]
    why = stale(vs, "1.8.1")
    assert any("nodepools.karpenter.sh" in w for w in why) and any("nodeoverlays.karpenter.sh" in w for w in why)


def test_crds_of_a_vendored_chart_and_other_groups_are_not_read(tmp_path):
    shutil.copytree(CRDS, tmp_path / "charts" / "karpenter" / "crds")
    (tmp_path / "charts" / "karpenter" / "Chart.yaml").write_text("name: karpenter\nversion: 1.7.6\n")
    (tmp_path / "other.yaml").write_text("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
                                         "spec:\n  group: cert-manager.io\n  names: {plural: certificates}\n")
    assert vendored(Repo(tmp_path)) == []


def test_no_crd_release_is_added_beside_vendored_crds_and_the_runbook_regenerates_them(tmp_path):
    root = tmp_path / "r"
    shutil.copytree(FIXTURES / "flux-vendored-crds" / "input", root)
    plan = make_plan(root, to="1.8")
    assert not any("karpenter-crd" in c.new for c in plan.changes)
    (f,) = [f for f in plan.findings if f.code == "MIG-V1X-CRD-001"]
    assert "--version 1.8." in f.manual_step and f.severity == "warning"
    steps = [s for s in plan.steps if s.id.endswith("crds-files")]
    assert steps and any("helm pull oci://public.ecr.aws/karpenter/karpenter --version 1.8." in c for c in steps[0].commands)
