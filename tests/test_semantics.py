"""Generated objects compared by meaning: the seeds' hand-written after-states, and the v1beta1 CRD."""
from __future__ import annotations

from deepdiff import DeepDiff

from migrator.inventory import kustomizations as kz
from migrator.inventory import Repo
from migrator.sources import yaml as yamlsrc
from migrator.sources.templates import mask
from migrator.validate import to_plain, validate_object

from .conftest import FIXTURE_NAMES, FIXTURES


def _objects(path):
    text = path.read_text()
    return [to_plain(yamlsrc.load(mask(d.text).text)) for d in yamlsrc.split_documents(text)]


def _generated(name):
    """New whole objects (kustomize patches are partial: tests/test_kustomize.py validates what they build)."""
    exp, inp = FIXTURES / name / "expected", FIXTURES / name / "input"
    patches = kz.patch_files(Repo(exp))
    for p in sorted(exp.rglob("*")):
        rel = p.relative_to(exp)
        if rel.as_posix() in patches:
            continue
        if p.is_file() and not (inp / rel).exists() and p.suffix in (".yaml", ".yml", ".tmpl"):
            yield rel.as_posix(), _objects(p)


def test_every_generated_object_validates_against_the_v1beta1_crd():
    seen = 0
    for name in FIXTURE_NAMES:
        for rel, objs in _generated(name):
            for o in objs:
                if o.get("kind") not in ("NodePool", "EC2NodeClass"):
                    continue
                assert validate_object(o) == [], f"{name}/{rel}: {o.get('kind')}"
                seen += 1
    assert seen >= 5


def test_seed_000_after_state():
    """Seed 000 (Flux, hand-migrated): NodePool/EC2NodeClass 'apps' as the author wrote them, minus choices
    the author made on purpose (different instance types, tags renamed, detailedMonitoring added)."""
    objs = {o["kind"]: o for o in _objects(FIXTURES / "gitops-flux/expected/clusters/dev/karpenter/nodepool.yaml")}
    np, nc = objs["NodePool"], objs["EC2NodeClass"]
    assert np["spec"]["template"]["spec"]["nodeClassRef"] == {
        "apiVersion": "karpenter.k8s.aws/v1beta1", "kind": "EC2NodeClass", "name": "apps"}
    assert np["spec"]["template"]["spec"]["kubelet"] == {"clusterDNS": ["10.150.0.10"], "maxPods": 58}
    assert np["spec"]["limits"] == {"cpu": 128, "memory": "512Gi"}
    assert np["spec"]["disruption"]["expireAfter"] == "1440h"
    assert np["spec"]["template"]["metadata"]["labels"] == {"intent": "apps"}
    assert nc["spec"]["role"] == "node-karpenter-dev"
    assert nc["spec"]["amiFamily"] == "AL2"
    assert not DeepDiff(nc["spec"]["subnetSelectorTerms"], [{"tags": {"karpenter.sh/discovery": "dev"}}])
    assert nc["spec"]["blockDeviceMappings"][0]["ebs"]["volumeSize"] == "100Gi"


def test_seed_002_after_state():
    """Seed 002 (Terraform): the EC2NodeClass the author wrote, role from the node group's iam_role_name."""
    tf = (FIXTURES / "terraform-eks/expected/karpenter.tf").read_text()
    assert 'role: ${module.eks.eks_managed_node_groups["${local.env_name_short}-default"].iam_role_name}' in tf
    tmpl = _objects(FIXTURES / "terraform-eks/expected/configs/karpenter-nodepool.yaml.tmpl")[0]
    assert tmpl["spec"]["disruption"]["consolidationPolicy"] == "WhenEmpty"
    assert tmpl["spec"]["disruption"]["consolidateAfter"] == "30s"
    assert tmpl["spec"]["limits"] == {"cpu": 1000, "memory": "1000Gi"}
    text = (FIXTURES / "terraform-eks/expected/configs/karpenter-nodepool.yaml.tmpl").read_text()
    # the directives wrap the moved fields, at the fields' new indentation
    assert "    metadata:\n      %{ if labels != null ~}\n      labels:\n        %{ for k, v in labels ~}\n" in text
    assert "      %{ if taints != null ~}\n      taints:\n" in text


def test_raw_yaml_keeps_crlf_and_unrelated_documents():
    exp = FIXTURES / "raw-yaml-edge/expected/karpenter"
    new = (exp / "batch-v1beta1.yaml").read_bytes()
    assert b"\r\n" in new and b"\n" not in new.replace(b"\r\n", b"")
    assert (exp / "batch.yaml").read_bytes() == (FIXTURES / "raw-yaml-edge/input/karpenter/batch.yaml").read_bytes()
    cleaned = (FIXTURES / "raw-yaml-edge/expected-cleanup/karpenter/batch.yaml").read_bytes()
    assert cleaned.startswith(b"apiVersion: v1\r\nkind: ConfigMap")
