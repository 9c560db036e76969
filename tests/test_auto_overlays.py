"""Kustomize overlays of pools that move to EKS Auto Mode (rules/auto/overlays.py, fixture auto-mode-kustomize-overlays):
each overlay's build gives the Auto Mode twins exactly what it gives the old objects, converted as the twins are; every
overlay builds after every run of the walk; the old objects' patches leave with them at the cutover. Judged with
`kustomize build` / `kubectl kustomize` where installed, and with migrator's own build emulation everywhere."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from migrator.inventory import kustomizations as kz
from migrator.inventory.repo import Repo
from migrator.rules.auto import convert
from migrator.sources import yaml as yamlsrc

from .conftest import FIXTURES

FX = FIXTURES / "auto-mode-kustomize-overlays"
OVERLAYS = ["karpenter/overlays/prod", "karpenter/overlays/staging"]
RUNS = sorted(p.name for p in FX.glob("expected-run-*"))


def _kustomize() -> list[str] | None:
    if shutil.which("kustomize"):
        return ["kustomize", "build"]
    if shutil.which("kubectl"):
        return ["kubectl", "kustomize"]
    return None


def _real(tree: Path, overlay: str) -> list[dict]:
    cmd = _kustomize()
    out = subprocess.run(cmd + [str(tree / overlay)], capture_output=True, text=True, check=True).stdout
    return [kz.plain(x) for x in yamlsrc.load_all_safe(out) if isinstance(x, dict)]


def _ours(tree: Path, overlay: str) -> list[dict]:
    return kz.build(Repo(tree), f"{overlay}/kustomization.yaml")


def _named(objs, kind, name):
    return next((o for o in objs if o.get("kind") == kind and o["metadata"]["name"] == name), None)


def _twins_match(objs: list[dict]) -> None:
    old_pool, old_class = _named(objs, "NodePool", "transcode"), _named(objs, "EC2NodeClass", "bottlerocket")
    pool, cls = _named(objs, "NodePool", "transcode-auto"), _named(objs, "NodeClass", "bottlerocket")
    assert pool is not None and cls is not None
    if old_pool is not None:            # before the cutover: the twin is the overlay's pool, converted
        assert pool == kz.plain(convert.convert_nodepool(old_pool, "transcode-auto", "bottlerocket").obj)
    if old_class is not None:
        want = kz.plain(convert.convert_nodeclass(old_class, "bottlerocket", cls["spec"]["role"]).obj)
        assert cls == want


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_each_overlay_gives_the_twins_what_it_gives_the_old_pools(overlay):
    tree = FX / "expected-run-2"        # the nodepools phase: old and new side by side
    objs = _ours(tree, overlay)
    _twins_match(objs)
    if _kustomize() is not None:
        real = _real(tree, overlay)
        _twins_match(real)
        kinds = ("NodePool", "EC2NodeClass", "NodeClass")
        assert sorted((o["kind"], o["metadata"]["name"]) for o in real if o["kind"] in kinds) == \
            sorted((o["kind"], o["metadata"]["name"]) for o in objs if o["kind"] in kinds)


def test_prod_keeps_its_limit_and_label_and_staging_its_subnets_and_families():
    prod = _ours(FX / "expected-run-2", "karpenter/overlays/prod")
    pool = _named(prod, "NodePool", "transcode-auto")
    assert pool["spec"]["limits"] == {"cpu": 2048}
    assert pool["spec"]["template"]["metadata"]["labels"] == {"env": "prod"}
    staging = _ours(FX / "expected-run-2", "karpenter/overlays/staging")
    assert _named(staging, "NodeClass", "bottlerocket")["spec"]["subnetSelectorTerms"] == \
        [{"tags": {"karpenter.sh/discovery": "media-staging"}}]
    reqs = _named(staging, "NodePool", "transcode-auto")["spec"]["template"]["spec"]["requirements"]
    assert reqs[0] == {"key": "eks.amazonaws.com/instance-family", "operator": "In", "values": ["c6i", "c7i"]}


@pytest.mark.parametrize("run", RUNS)
@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_overlay_builds_after_every_run(run, overlay):
    cmd = _kustomize()
    if cmd is None:
        pytest.skip("neither kustomize nor kubectl is installed")
    _real(FX / run, overlay)


def test_the_old_pools_patches_leave_with_them():
    last = FX / RUNS[-1]
    for overlay in OVERLAYS:
        objs = _ours(last, overlay)
        assert not [o for o in objs if o["kind"] in ("EC2NodeClass",) or o["metadata"]["name"] == "transcode"]
        assert _named(objs, "NodePool", "transcode-auto") is not None
    assert not (last / "karpenter/overlays/prod/nodepool-prod.yaml").exists()
    text = (last / "karpenter/overlays/staging/kustomization.yaml").read_text()
    assert "name: transcode\n" not in text and "kind: EC2NodeClass" not in text


def _at_nodepools(tmp_path, edit):
    """The fixture after its enable run (the nodepools phase comes next), with one overlay changed."""
    from migrator.plan import make_plan
    work = tmp_path / "tree"
    shutil.copytree(FX / "expected-run-1", work)
    edit(work / "karpenter/overlays/staging/kustomization.yaml")
    plan = make_plan(work, to="auto-mode")
    assert plan.phase == "nodepools"
    return plan


def _append(text: str):
    def edit(p: Path):
        p.write_text(p.read_text().rstrip("\n") + "\n" + text)
    return edit


def test_a_patch_of_every_nodepool_is_said(tmp_path):
    plan = _at_nodepools(tmp_path, _append("  - target:\n      kind: NodePool\n    patch: |-\n      - op: add\n"
                                           "        path: /spec/weight\n        value: 10\n"))
    [f] = [f for f in plan.findings if f.code == "MIG-AUTO-057"]
    assert f.path == "karpenter/overlays/staging/kustomization.yaml" and "every NodePool" in f.message


def test_a_class_an_overlay_makes_unable_to_move_stays_on_karpenter_everywhere(tmp_path):
    """Staging adds user data to the base's class: Auto Mode cannot run it there, so the class and its pool stay on
    Karpenter in every environment (no twin, which would reach staging without the user data, and no cutover, which
    would remove the pool staging needs); said with the overlay named, and the move is as far as it goes."""
    from migrator.plan import make_plan
    work = tmp_path / "tree"
    shutil.copytree(FX / "expected-run-1", work)
    _append("  - target:\n      kind: EC2NodeClass\n      name: bottlerocket\n    patch: |-\n      - op: add\n"
            "        path: /spec/userData\n        value: echo hi\n")(work / "karpenter/overlays/staging/kustomization.yaml")
    plan = make_plan(work, to="auto-mode")
    assert not plan.changes
    said = {f.message.split(":")[0] for f in plan.findings if f.code == "MIG-AUTO-020"}
    assert said == {"EC2NodeClass bottlerocket stays on Karpenter", "NodePool transcode stays on Karpenter"}
    assert any("karpenter/overlays/staging/kustomization.yaml patches it" in f.message for f in plan.findings)


def test_a_patch_of_the_taints_is_said_not_patched(tmp_path):
    plan = _at_nodepools(tmp_path, _append(
        "  - target:\n      kind: NodePool\n      name: transcode\n    patch: |-\n      - op: add\n"
        "        path: /spec/template/spec/taints\n        value: [{key: team, value: media, effect: NoSchedule}]\n"))
    said = [f for f in plan.findings if f.code == "MIG-AUTO-058"]
    assert said and "taints" in said[0].message
    staging = [c for c in plan.changes if c.path == "karpenter/overlays/staging/transcode-auto-nodepool-patch.yaml"]
    assert not staging


def test_an_environment_listing_the_base_files_gets_the_twins_and_loses_the_old_ones(tmp_path):
    """spack/spack-infrastructure's shape: staging's kustomization lists production's pool files one by one (not a
    base folder) and patches them by requirement index. Every kustomization that lists a file gets its twin file next
    to it, and loses it with the old objects; its twin patches then build."""
    from migrator.apply import apply_changes
    from migrator.plan import make_plan
    work = tmp_path / "tree"
    shutil.copytree(FX / "input", work)
    dev = work / "karpenter/envs/dev"
    dev.mkdir(parents=True)
    (dev / "kustomization.yaml").write_text(
        "resources:\n- ../../base/nodes.yaml\npatches:\n  - target:\n      kind: NodePool\n      name: transcode\n"
        "    patch: |-\n      - op: replace\n        path: /spec/template/spec/requirements/0/values\n"
        "        value: [\"m\"]\n")
    seen_twins = False
    for _ in range(8):
        plan = make_plan(work, to="auto-mode")
        if not plan.changes:
            break
        apply_changes(plan.root, plan.changes)
        objs = kz.build(Repo(work), "karpenter/envs/dev/kustomization.yaml")
        assert objs is not None
        twin = _named(objs, "NodePool", "transcode-auto")
        old = _named(objs, "NodePool", "transcode")
        if twin is not None and old is not None:
            seen_twins = True
            want = kz.plain(convert.convert_nodepool(old, "transcode-auto", "bottlerocket").obj)
            if "taints" not in twin["spec"]["template"]["spec"]:     # the workloads phase took the taint off
                del want["spec"]["template"]["spec"]["taints"]
            assert twin == want
            assert twin["spec"]["template"]["spec"]["requirements"][0]["values"] == ["m"]
    text = (dev / "kustomization.yaml").read_text()
    assert seen_twins and "nodes-auto-mode.yaml" in text and "- ../../base/nodes.yaml\n" not in text
    cmd = _kustomize()
    if cmd is not None:
        subprocess.run(cmd + ["--load-restrictor", "LoadRestrictionsNone", str(dev)], check=True, capture_output=True)


def test_a_pool_an_overlay_makes_unable_to_move_stays_while_its_class_moves(tmp_path):
    plan = _at_nodepools(tmp_path, _append(
        "  - target:\n      kind: NodePool\n      name: transcode\n    patch: |-\n      - op: add\n"
        "        path: /spec/template/spec/requirements/-\n"
        "        value: {key: kubernetes.io/os, operator: In, values: [windows]}\n"))
    [f] = [f for f in plan.findings if f.code == "MIG-AUTO-020"]
    assert f.path == "karpenter/overlays/staging/kustomization.yaml" and "NodePool transcode stays" in f.message
    made = "".join(c.new or "" for c in plan.changes if c.path == "karpenter/base/nodes-auto-mode.yaml")
    assert "kind: NodeClass" in made and "transcode-auto" not in made


def test_a_walk_with_a_pool_an_overlay_pins_ends_with_it_and_its_class_on_karpenter(tmp_path):
    from migrator.apply import apply_changes
    from migrator.plan import make_plan
    work = tmp_path / "tree"
    shutil.copytree(FX / "input", work)
    _append("  - target:\n      kind: NodePool\n      name: transcode\n    patch: |-\n      - op: add\n"
            "        path: /spec/template/spec/requirements/-\n"
            "        value: {key: kubernetes.io/os, operator: In, values: [windows]}\n")(
        work / "karpenter/overlays/staging/kustomization.yaml")
    for _ in range(8):
        plan = make_plan(work, to="auto-mode")
        if not plan.changes:
            break
        apply_changes(plan.root, plan.changes)
    assert not plan.changes and plan.hop is None
    said = {f.message.split(":")[0] for f in plan.findings if f.code == "MIG-AUTO-020"}
    assert said == {"EC2NodeClass bottlerocket stays on Karpenter", "NodePool transcode stays on Karpenter"}
    staging = _ours(work, "karpenter/overlays/staging")
    assert _named(staging, "NodePool", "transcode") is not None and _named(staging, "NodePool", "transcode-auto") is None


def test_an_overlay_with_the_older_patches_field_gets_its_entry_there(tmp_path):
    """`patchesStrategicMerge` (kustomize's older field) lists the twin's patch file in the same field."""
    from migrator.apply import apply_changes
    from migrator.plan import make_plan
    work = tmp_path / "tree"
    shutil.copytree(FX / "expected-run-1", work)
    prod = work / "karpenter/overlays/prod"
    (prod / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ../../base\n"
        "patchesStrategicMerge:\n  - nodepool-prod.yaml\n")
    plan = make_plan(work, to="auto-mode")
    apply_changes(plan.root, plan.changes)
    assert (prod / "kustomization.yaml").read_text().endswith(
        "patchesStrategicMerge:\n  - nodepool-prod.yaml\n  - transcode-auto-nodepool-patch.yaml\n")
    pool = _named(_ours(work, "karpenter/overlays/prod"), "NodePool", "transcode-auto")
    assert pool["spec"]["template"]["metadata"]["labels"] == {"env": "prod"}
