"""Nothing that takes away what an older controller still reads is planned before the controller is known to run a
version that no longer needs it.

- A root whose Karpenter version nothing states (only workloads name it) plans the v1alpha5 -> v1beta1 prepare work,
  which is right at any version (karpenter.sh/do-not-disrupt beside do-not-evict), and then stops (MIG-STAND-003,
  naming the files): never the cleanup, which removes do-not-evict and renames provisioner-name selectors that a
  v1alpha5 controller's nodes still need.
- A root whose stated chart is below what an earlier phase installs, where no file moves the controller, plans that
  phase first (MIG-STAND-006): a chart 0.31 root gets prepare, not cleanup; a chart 0.36 root gets the controller
  phase, not v1 manifests its CRDs cannot take.
"""
from __future__ import annotations

import shutil
from pathlib import Path

from migrator.apply import apply_changes
from migrator.options import Options
from migrator.plan import make_plan

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    metadata:
      annotations:
        karpenter.sh/do-not-evict: "true"
{disrupt}    spec:
      nodeSelector:
        karpenter.sh/provisioner-name: default
      containers:
        - name: web
          image: nginx
"""

NODEPOOL = """apiVersion: karpenter.sh/v1beta1
kind: NodePool
metadata:
  name: default
spec:
  template:
    spec:
      nodeClassRef:
        name: default
  disruption:
    consolidationPolicy: WhenUnderutilized
---
apiVersion: karpenter.k8s.aws/v1beta1
kind: EC2NodeClass
metadata:
  name: default
spec:
  amiFamily: AL2
  role: KarpenterNodeRole
  subnetSelectorTerms:
    - tags:
        karpenter.sh/discovery: demo
  securityGroupSelectorTerms:
    - tags:
        karpenter.sh/discovery: demo
"""


def _workloads(tmp_path: Path, disrupt: bool = False) -> Path:
    (tmp_path / "apps").mkdir()
    (tmp_path / "apps" / "web.yaml").write_text(DEPLOYMENT.format(
        disrupt='        karpenter.sh/do-not-disrupt: "true"\n' if disrupt else ""))
    return tmp_path


def _codes(plan) -> list[str]:
    return [f.code for f in plan.findings]


def test_unknown_version_plans_only_what_is_right_at_any_version(tmp_path):
    root = _workloads(tmp_path)
    plan = make_plan(root)
    assert plan.phase == "prepare" and plan.changes
    (rp,) = plan.every
    assert rp.era == "unknown" and rp.later == [] and rp.next.startswith("state the chart version")
    assert "MIG-HOP-004" not in _codes(plan)           # never "then run migrator again for v1beta1 -> v1"
    (change,) = plan.changes
    assert "karpenter.sh/do-not-disrupt" in change.new and "nodepool" not in change.new
    apply_changes(plan.root, plan.changes)
    after = (root / "apps" / "web.yaml").read_text()
    assert "karpenter.sh/do-not-evict" in after and "karpenter.sh/provisioner-name: default" in after

    again = make_plan(root)
    assert again.changes == []
    (stop,) = [f for f in again.findings if f.code == "MIG-STAND-003"]
    assert "apps/web.yaml" in stop.message and "chart_version" in stop.manual_step
    assert make_plan(root, phase="cleanup").changes == []       # asked for: still not without the version


def test_unknown_version_never_removes_do_not_evict(tmp_path):
    root = _workloads(tmp_path, disrupt=True)
    before = (root / "apps" / "web.yaml").read_bytes()
    plan = make_plan(root)
    assert plan.changes == [] and "MIG-STAND-003" in _codes(plan)
    assert (root / "apps" / "web.yaml").read_bytes() == before


def test_the_workloads_fixture_with_its_version_stated_still_reaches_cleanup(tmp_path):
    root = tmp_path / "w"
    shutil.copytree(FIXTURES / "workloads" / "input", root)
    opts = Options(chart_version="0.32.10")
    first = make_plan(root, options=opts)
    assert first.phase == "prepare"
    apply_changes(first.root, first.changes)
    second = make_plan(root, options=opts)
    assert second.phase == "cleanup" and second.changes


def test_a_stated_chart_below_prepare_gets_prepare_not_cleanup(tmp_path):
    root = _workloads(tmp_path, disrupt=True)       # prepare has nothing to write, cleanup has
    plan = make_plan(root, options=Options(chart_version="0.31.4"))
    assert plan.phase == "prepare" and plan.changes == []
    (held,) = [f for f in plan.findings if f.code == "MIG-STAND-006"]
    assert "0.31.4" in held.message and "0.32.10" in held.message and "cleanup" in held.message
    # once it runs 0.32, cleanup follows
    assert make_plan(root, options=Options(chart_version="0.32.10")).phase == "cleanup"


def test_a_stated_chart_below_1_0_gets_the_controller_phase_not_v1_manifests(tmp_path):
    (tmp_path / "nodepool.yaml").write_text(NODEPOOL)
    plan = make_plan(tmp_path, options=Options(chart_version="0.36.2"))
    assert plan.phase == "controller" and plan.changes == []
    assert "MIG-STAND-006" in _codes(plan)
    on_1_0 = make_plan(tmp_path, options=Options(chart_version="1.0.14"))
    assert on_1_0.phase == "manifests" and on_1_0.changes
    assert "MIG-STAND-006" not in _codes(on_1_0)
