"""Kustomize overlays: every overlay yields the same effective settings on the new objects as on the old ones.

Built two ways: with the real kustomize (`kustomize build` or `kubectl kustomize`, skipped when neither is
installed) and with migrator's own emulation (kustomize.build), which also runs on machines without it."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from migrator.inventory import kustomizations as kz
from migrator.inventory import Repo
from migrator.plan import make_plan
from migrator.rules.v1beta1.convert import convert_nodeclass, convert_provisioner
from migrator.sources import yaml as yamlsrc
from migrator.validate import validate_object

from .conftest import FIXTURES

FX = FIXTURES / "kustomize-overlays"
OVERLAYS = ["karpenter/overlays/prod", "karpenter/overlays/dev"]
NEW = {"Provisioner": "NodePool", "AWSNodeTemplate": "EC2NodeClass"}


def _converted(objs: list[dict]) -> dict[tuple[str, str], dict]:
    """The v1beta1 objects migrator makes from built alpha objects."""
    out = {}
    for o in objs:
        if o["kind"] == "Provisioner":
            np_, _ = convert_provisioner(o)
            out[("NodePool", o["metadata"]["name"])] = kz.plain(np_.obj)
        elif o["kind"] == "AWSNodeTemplate":
            out[("EC2NodeClass", o["metadata"]["name"])] = kz.plain(convert_nodeclass(o).obj)
    return out


def _by_kind(objs: list[dict], kinds: set[str]) -> dict[tuple[str, str], dict]:
    return {(o["kind"], o["metadata"]["name"]): o for o in objs if o.get("kind") in kinds}


def _kustomize() -> list[str] | None:
    if shutil.which("kustomize"):
        return ["kustomize", "build"]
    if shutil.which("kubectl"):
        return ["kubectl", "kustomize"]
    return None


def _build(cmd: list[str], d: Path) -> list[dict]:
    out = subprocess.run(cmd + [str(d)], capture_output=True, text=True, check=True).stdout
    return [kz.plain(x) for x in yamlsrc.load_all_safe(out) if isinstance(x, dict)]


@pytest.mark.parametrize("overlay", OVERLAYS)
@pytest.mark.parametrize("tree", ["expected", "expected-cleanup"])
def test_kustomize_build_gives_the_new_objects_the_old_settings(overlay, tree):
    cmd = _kustomize()
    if cmd is None:
        pytest.skip("neither kustomize nor kubectl is installed")
    old = _build(cmd, FX / "input" / overlay)
    new = _build(cmd, FX / tree / overlay)
    want = _converted(old)
    got = _by_kind(new, {"NodePool", "EC2NodeClass"})
    assert want and got == want
    for o in got.values():
        assert validate_object(o) == [], o
    if tree == "expected-cleanup":
        assert not _by_kind(new, {"Provisioner", "AWSNodeTemplate"})


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_emulated_build_matches(overlay):
    old_repo, new_repo = Repo(FX / "input"), Repo(FX / "expected-cleanup")
    old = kz.build(old_repo, kz.kustomization_in(old_repo, overlay))
    new = kz.build(new_repo, kz.kustomization_in(new_repo, overlay))
    assert _by_kind(new, {"NodePool", "EC2NodeClass"}) == _converted(old)
    # and the overlay really changes something (the test would be empty otherwise)
    base = kz.build(old_repo, kz.kustomization_in(old_repo, "karpenter/base"))
    assert _converted(base) != _converted(old)


def test_patch_structure():
    """The new patches are the old ones with their fields mapped (not a rewrite of the whole object)."""
    prod = yamlsrc.safe_load((FX / "expected/karpenter/overlays/prod/nodepool-limits.yaml").read_text())
    assert prod["spec"] == {"disruption": {"expireAfter": "168h"}, "limits": {"cpu": 1000}}
    ops = json.loads((FX / "expected/karpenter/overlays/dev/small-nodepool.json").read_text())
    assert [o["path"] for o in ops] == ["/spec/limits/cpu", "/spec/limits/memory"]
    k = yamlsrc.safe_load((FX / "expected/karpenter/overlays/prod/kustomization.yaml").read_text())
    inline = [p for p in k["patches"] if p.get("target", {}).get("kind") == "NodePool"][0]
    assert inline["target"] == {"group": "karpenter.sh", "version": "v1beta1", "kind": "NodePool", "name": "default"}
    assert "/spec/template/spec/requirements/-" in inline["patch"]
    dev = yamlsrc.safe_load((FX / "expected/karpenter/overlays/dev/empty-only-nodepool.yaml").read_text())
    assert dev["spec"]["disruption"] == {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "1m"}


def test_partial_objects_are_not_broken_objects():
    plan = make_plan(FX / "input")
    codes = {f.code for f in plan.findings}
    assert "MIG-NP-013" not in codes and "MIG-NC-003" not in codes
    assert not [f for f in plan.findings if f.severity == "error"]


def _write(root: Path, files: dict[str, str]) -> None:
    for p, t in files.items():
        (root / p).parent.mkdir(parents=True, exist_ok=True)
        (root / p).write_text(t)


def test_remote_base_is_converted_field_by_field_and_flagged(tmp_path):
    _write(tmp_path, {
        "overlay/kustomization.yaml": "resources:\n  - github.com/acme/karpenter//base?ref=v1\n"
                                      "patches:\n  - path: limits.yaml\n",
        "overlay/limits.yaml": "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata:\n  name: default\n"
                               "spec:\n  limits:\n    resources:\n      cpu: 64\n",
    })
    plan = make_plan(tmp_path)
    assert "MIG-KUS-005" in {f.code for f in plan.findings}
    new = next(c for c in plan.changes if c.path == "overlay/limits-nodepool.yaml")
    assert yamlsrc.safe_load(new.new)["spec"] == {"limits": {"cpu": 64}}


def test_unnamed_target_and_broken_patch_are_findings(tmp_path):
    _write(tmp_path, {
        "base/kustomization.yaml": "resources: [p.yaml]\n",
        "base/p.yaml": "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata:\n  name: a\n"
                       "spec:\n  providerRef:\n    name: a\n",
        "o/kustomization.yaml": "resources: [../base]\npatches:\n"
                                "  - target: {group: karpenter.sh, version: v1alpha5, kind: Provisioner}\n"
                                "    patch: |-\n      - op: add\n        path: /spec/weight\n        value: 5\n"
                                "  - target: {kind: Provisioner, name: a}\n"
                                "    patch: |-\n      - op: replace\n        path: /spec/nothere/x\n        value: 5\n",
    })
    plan = make_plan(tmp_path)
    codes = [f.code for f in plan.findings]
    assert "MIG-KUS-003" in codes and "MIG-KUS-002" in codes
    assert not [c for c in plan.changes if c.path == "o/kustomization.yaml"]


def test_second_run_finds_nothing_more(tmp_path):
    work = tmp_path / "t"
    shutil.copytree(FX / "expected", work)
    plan = make_plan(work, phase="prepare")
    assert not plan.changes


plain_json = st.recursive(st.none() | st.booleans() | st.integers(-5, 5) | st.text("ab", max_size=2),
                          lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text("abc", max_size=2), c, max_size=3),
                          max_leaves=12)
objects = st.dictionaries(st.text("abc", max_size=2), plain_json, max_size=4)


@settings(max_examples=200, deadline=None)
@given(objects, objects)
def test_merge_diff_is_the_patch_between_two_objects(a, b):
    def no_nulls(v):
        if isinstance(v, dict):
            return {k: no_nulls(x) for k, x in v.items() if x is not None}
        return v
    a, b = no_nulls(a), no_nulls(b)       # a merge patch cannot set a key to null
    assert kz.merge_patch(a, kz.merge_diff(a, b)) == b


def test_json_pointer_round_trip():
    for p in [(), ("spec", "a/b", "c~d", "-"), ("0",)]:
        assert kz.pointer(kz.to_pointer(p)) == p


def test_the_kustomization_of_a_folder_is_found_as_a_lookup_of_each_name_would():
    """Issue 60: `kustomization_in` reads an index of the kustomization files by folder; it answers as trying each
    name of KFILES in the folder does, for any way the folder is written."""
    import posixpath
    from migrator.discover import Discovery, SourceFile
    paths = ["kustomization.yaml", "Kustomization", "a/Kustomization", "a/kustomization.yml", "b/c/kustomization.yaml",
             "b/c/kustomization.yml", "x/y.yaml"]
    root = Path("/nonexistent")
    repo = Repo(root, Discovery(root, {p: SourceFile(p, root / p, "") for p in paths}, []))
    for d in ["", ".", "a", "a/", "./a", "b/c", "b", "b/c/", "x", "zz", "a/../b/c", "b//c"]:
        tried = next((p for n in kz.KFILES if (p := posixpath.join(d, n) if d else n) in repo.files), None)
        assert kz.kustomization_in(repo, d) == tried, d


@pytest.mark.parametrize("text, field", [
    ("patchesJson6902:\n- target:\n    kind: Deployment\n    name: x\n  path: p.json\n", "patchesJson6902"),
    # a `*` in a comment's prose or a quoted string is no alias (kubeflow's kustomizations)
    ("# * this does not include the server\npatches:\n- patch: |\n    metadata:\n      name: \"*\"\n  target:\n"
     "    kind: RoleBinding\n- path: b.yaml\n", "patches"),
    ("patches: []\nresources: []\n", "patches"),
    ("patchesStrategicMerge:\n  - a.yaml   # first\n\n  # between\n  - b.yaml\nresources:\n- x\n", "patchesStrategicMerge"),
])
def test_patch_item_lines_read_from_the_text_are_the_round_trip_trees(text, field):
    from migrator.inventory.kustomizations import _item_lines
    from migrator.sources import yaml as yamlsrc
    tree = yamlsrc.load(text)[field]
    assert _item_lines(text, field, len(tree)) == [tree.lc.item(i)[0] + 1 for i in range(len(tree))]


def test_patch_item_lines_are_left_to_the_round_trip_parse_where_an_alias_may_stand():
    from migrator.inventory.kustomizations import _item_lines
    text = "common: &t {kind: Deployment}\npatches:\n- target: *t\n  path: a.yaml\n"
    assert _item_lines(text, "patches", 1) is None
