"""Overlay patches of v1beta1 objects through the v1 hop: every overlay builds the v1 conversion of what it built
before, with the real kustomize where installed and with migrator's emulation everywhere."""
from __future__ import annotations

import pytest

from migrator.inventory import kustomizations as kz
from migrator.inventory import Repo
from migrator.plan import make_plan
from migrator.rules.v1.kustomize import _to_v1
from migrator.sources import yaml as yamlsrc
from migrator.validate import validate_object

from .conftest import FIXTURES
from .test_kustomize import _build, _by_kind, _kustomize, _write

FX = FIXTURES / "v1-kustomize-overlays"
OVERLAYS = ["karpenter/prod", "karpenter/dev"]
KINDS = {"NodePool", "EC2NodeClass"}


def _converted(objs: list[dict]) -> dict:
    return {(o["kind"], o["metadata"]["name"]): _to_v1(o["kind"], o)[0] for o in objs if o.get("kind") in KINDS}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_kustomize_build_gives_the_v1_conversion(overlay):
    cmd = _kustomize()
    if cmd is None:
        pytest.skip("neither kustomize nor kubectl is installed")
    old = _build(cmd, FX / "input" / overlay)
    new = _by_kind(_build(cmd, FX / "expected-manifests" / overlay), KINDS)
    assert new == _converted(old)
    assert all(o["apiVersion"].endswith("/v1") and validate_object(o, "1.0.14") == [] for o in new.values())


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_emulated_build_gives_the_v1_conversion(overlay):
    old_repo, new_repo = Repo(FX / "input"), Repo(FX / "expected-manifests")
    old = kz.build(old_repo, kz.kustomization_in(old_repo, overlay))
    new = kz.build(new_repo, kz.kustomization_in(new_repo, overlay))
    assert _by_kind(new, KINDS) == _converted(old)
    base = kz.build(old_repo, kz.kustomization_in(old_repo, "karpenter/base"))
    assert _converted(base) != _converted(old)          # the overlay really changes something


def test_patches_keep_their_form_and_text():
    text = (FX / "expected-manifests/karpenter/prod/kustomization.yaml").read_text()
    assert "# prod: bigger, and nodes live a week at most" in text
    k = yamlsrc.safe_load(text)
    ops = k["patches"][1]
    assert ops["target"]["version"] == "v1" and "path: /spec/template/spec/expireAfter" in ops["patch"]
    limits = yamlsrc.safe_load((FX / "expected-manifests/karpenter/prod/limits.yaml").read_text())
    assert limits["apiVersion"] == "karpenter.sh/v1" and limits["spec"]["disruption"]["consolidationPolicy"] == "WhenEmpty"
    # the dev ops give the same v1 object unchanged: only the target moves
    assert (FX / "expected-manifests/karpenter/dev/small.json").read_bytes() == \
        (FX / "input/karpenter/dev/small.json").read_bytes()


def test_partial_objects_are_not_broken_objects_in_the_v1_hop():
    plan = make_plan(FX / "input", to="v1", phase="manifests")
    assert not [f for f in plan.findings if f.severity == "error"]
    assert not [f for f in plan.findings if f.path.endswith("limits.yaml") and f.code.startswith("MIG-V1-")]


def test_kubelet_patch_and_remote_base_are_reported(tmp_path):
    _write(tmp_path, {
        "o/kustomization.yaml": "resources:\n  - ../b\n  - https://example.com/remote.yaml\npatches:\n  - path: kl.yaml\n"
                                "  - path: far.yaml\n",
        "o/kl.yaml": "apiVersion: karpenter.sh/v1beta1\nkind: NodePool\nmetadata:\n  name: a\nspec:\n  template:\n"
                     "    spec:\n      kubelet:\n        maxPods: 20\n",
        "o/far.yaml": "apiVersion: karpenter.sh/v1beta1\nkind: NodePool\nmetadata:\n  name: elsewhere\nspec:\n"
                      "  limits:\n    cpu: 5\n",
        "b/kustomization.yaml": "resources:\n  - np.yaml\n",
        "b/np.yaml": "apiVersion: karpenter.sh/v1beta1\nkind: NodePool\nmetadata:\n  name: a\nspec:\n  template:\n"
                     "    spec:\n      nodeClassRef:\n        name: a\n",
    })
    plan = make_plan(tmp_path, to="v1", phase="manifests")
    codes = {(f.code, f.severity) for f in plan.findings}
    assert ("MIG-KUS-007", "error") in codes and ("MIG-KUS-005", "warning") in codes
    assert not [c for c in plan.changes if c.path in ("o/kl.yaml", "o/far.yaml")]


def test_a_family_patch_builds_what_the_manifests_rule_makes(tmp_path):
    """The patch's v1 conversion uses the same inputs as v1/manifests (the AMI version the repository pins, from
    every class): the overlay built after the hop is the v1 conversion of what it built before."""
    from migrator.rules.v1 import convert
    _write(tmp_path, {
        "o/kustomization.yaml": "resources:\n  - ../b\npatches:\n  - path: fam.yaml\n",
        "o/fam.yaml": "apiVersion: karpenter.k8s.aws/v1beta1\nkind: EC2NodeClass\nmetadata:\n  name: a\nspec:\n"
                      "  amiFamily: AL2023\n",
        "b/kustomization.yaml": "resources:\n  - classes.yaml\n",
        "b/classes.yaml": "".join(
            f"---\napiVersion: karpenter.k8s.aws/v1beta1\nkind: EC2NodeClass\nmetadata:\n  name: {n}\nspec:\n"
            f"  amiFamily: AL2\n  role: r\n{terms}  subnetSelectorTerms:\n    - tags: {{k: v}}\n"
            "  securityGroupSelectorTerms:\n    - tags: {k: v}\n"
            for n, terms in (("a", ""), ("pinned", "  amiSelectorTerms:\n    - name: amazon-eks-node-1.29-v20240213\n"))),
    })
    old = kz.build(Repo(tmp_path), "o/kustomization.yaml")
    pinned = convert.pinned_ami_version([o for o in old if o["kind"] == "EC2NodeClass"])
    assert pinned == "v20240213"
    plan = make_plan(tmp_path, to="v1", phase="manifests")
    assert not [f for f in plan.findings if f.severity == "error"]
    for c in plan.changes:
        (tmp_path / c.path).write_text(c.new)
    built = _by_kind(kz.build(Repo(tmp_path), "o/kustomization.yaml"), KINDS)
    want = {(o["kind"], o["metadata"]["name"]): _to_v1(o["kind"], o, pinned)[0] for o in old}
    assert built == want
