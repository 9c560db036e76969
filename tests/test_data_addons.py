"""Pools a module's chart renders from its inputs (issue 57, item 1): the eks-data-addons module's
karpenter_resources_helm_config, read as its karpenter-resources chart renders each release, and moved to EKS Auto
Mode as Terraform resources of their own."""
from __future__ import annotations

import pathlib
import shutil

from migrator.inventory.objects import scan_manifests
from migrator.inventory.repo import Repo
from migrator.plan import make_plan

FIXTURE = pathlib.Path(__file__).parent.parent / "fixtures" / "auto-mode-data-addons" / "input"


def _objects(root):
    repo = Repo(root)
    return {(m.kind, m.name): m for m in scan_manifests(repo) if m.container == "chart_values"}, repo


def test_each_release_is_read_as_the_chart_renders_it():
    objs, _ = _objects(FIXTURE)
    assert set(objs) == {("EC2NodeClass", "flink-compute-optimized"), ("NodePool", "flink-compute-optimized"),
                         ("EC2NodeClass", "flink-custom-ami"), ("NodePool", "flink-custom-ami")}
    cls = objs[("EC2NodeClass", "flink-compute-optimized")]
    spec = cls.obj["spec"]
    assert cls.era == "v1" and cls.entry_key == "flink-compute-optimized" and cls.line == 12
    assert spec["amiSelectorTerms"] == [{"alias": "bottlerocket@latest"}]            # the chart's default
    assert cls.masked.unmask(spec["role"]) == "${module.karpenter.node_iam_role_name}"
    assert cls.masked.unmask(spec["subnetSelectorTerms"][0]["tags"]["Name"]) == "${module.eks.cluster_name}-private*"
    assert spec["tags"] == {"Name": "karpenter-flink-compute-optimized"}
    assert spec["blockDeviceMappings"][0]["ebs"]["volumeSize"] == "100Gi"
    pool = objs[("NodePool", "flink-compute-optimized")].obj["spec"]
    # the chart writes NodePool and NodeGroupType from the name, then the list's labels: a repeated key takes its value
    assert pool["template"]["metadata"]["labels"] == {"NodePool": "flink-compute-optimized",
                                                      "NodeGroupType": "FlinkComputeOptimized", "type": "karpenter"}
    assert pool["template"]["spec"]["nodeClassRef"]["name"] == "flink-compute-optimized"
    assert pool["limits"] == {"cpu": 1000, "memory": "1000Gi"} and pool["weight"] == 100
    assert pool["disruption"]["budgets"] == [{"nodes": "10%"}]


def _with(tmp_path, old: str, new: str) -> pathlib.Path:
    root = tmp_path / "r"
    shutil.copytree(FIXTURE, root)
    p = root / "addons.tf"
    assert old in p.read_text()
    p.write_text(p.read_text().replace(old, new, 1))
    return root


def test_a_release_whose_templates_migrator_does_not_know_is_said_and_not_read(tmp_path):
    objs, repo = _objects(_with(tmp_path, 'version = "1.37.1"', 'version = "1.33.2"'))
    assert not objs
    (f,) = [f for f in repo.findings if f.code == "MIG-SRC-024"]
    assert "v1beta1" in f.message and f.path == "addons.tf"


def test_a_release_of_another_chart_is_said_and_the_others_read(tmp_path):
    objs, repo = _objects(_with(tmp_path, "    flink-custom-ami = {\n",
                                "    flink-custom-ami = {\n      chart = \"./charts/pools\"\n"))
    assert {n for _, n in objs} == {"flink-compute-optimized"}
    (f,) = [f for f in repo.findings if f.code == "MIG-SRC-024"]
    assert "flink-custom-ami sets chart" in f.message


def test_the_switch_off_renders_nothing(tmp_path):
    objs, repo = _objects(_with(tmp_path, "enable_karpenter_resources = true", "enable_karpenter_resources = false"))
    assert not objs and not [f for f in repo.findings if f.code == "MIG-SRC-024"]


def test_the_move_keeps_the_selected_label_and_leaves_the_release_that_stays(tmp_path):
    from migrator.apply import apply_changes
    root = tmp_path / "r"
    shutil.copytree(FIXTURE, root)
    for _ in range(5):
        apply_changes(root, make_plan(root, to="auto-mode").changes)
    pools = (root / "eks-auto-mode-pools.tf").read_text()
    assert 'resource "kubectl_manifest" "flink_compute_optimized_nodepool_auto_mode"' in pools
    assert "NodeGroupType: FlinkComputeOptimized" in pools and "role: ${module.eks.node_iam_role_name}" in pools
    assert "flink-custom-ami" not in pools
    addons = (root / "addons.tf").read_text()
    assert "flink-compute-optimized = {" not in addons and "flink-custom-ami = {" in addons
    assert "enable_karpenter_resources = true" in addons
    plan = make_plan(root, to="auto-mode")
    assert not plan.changes and {f.code for f in plan.findings if f.severity == "warning"} == {"MIG-AUTO-020"}
