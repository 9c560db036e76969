"""The v1beta1 -> v1 hop and the onward 1.x hop: targeted behaviours beyond the golden trees."""
from __future__ import annotations

import pytest

from migrator.apply import apply_changes
from migrator.inventory import Repo, scan_manifests
from migrator.plan import make_plan
from migrator.sources.yaml import safe_load
from migrator.validate import validate_object

from .conftest import FIXTURE_NAMES, FIXTURES, fixture_hop

# a fixture that stops (walk.json "runs": 0: it writes nothing, said) has no object to check
V1_FIXTURES = [n for n in FIXTURE_NAMES if fixture_hop(n)[0] != "v1beta1" and fixture_hop(n)[1]]
# walked, but no object is in the files before or after (a chart from a registry renders them; the root's objects
# live outside the repository)
NO_POOLS_IN_FILES = {"auto-mode-pool-release", "alpha-bare-module-v20", "v1x-leftover-keys", "script-leftover-keys",
                     "locals-object-version", "cloudformation-template"}
# objects written with fields no v1 CRD defines, on purpose: said (MIG-V1X-OBJ-001), never edited, so they stay as
# invalid as they were written (tests/test_dropped_fields.py checks what is said)
AS_WRITTEN = {"v1-dropped-fields"}
# walks that stop before v1 on purpose, an error saying why (the objects stay as they were)
STOPS_BEFORE_V1 = {"alpha-provisioner-class-name-taken"}

HELM_ONLY = ('resource "helm_release" "karpenter" {{\n  name    = "karpenter"\n  chart   = "karpenter"\n'
             '  version = "{version}"\n  values = [<<-EOT\n    settings:\n      interruptionQueue: q\n  EOT\n  ]\n}}\n')


@pytest.mark.parametrize("name", V1_FIXTURES)
def test_every_v1_object_after_the_hop_validates_against_the_1_0_and_newest_crds(name, tree):
    root = tree(name)
    to, phases = fixture_hop(name)
    for phase, _ in phases:
        apply_changes(root, make_plan(root, to=to, phase=phase).changes)
    objs = [m for m in scan_manifests(Repo(root)) if m.kind in ("NodePool", "EC2NodeClass")]
    if not objs and name in NO_POOLS_IN_FILES:
        pytest.skip("its pools are not in the files")
    if name in AS_WRITTEN:
        pytest.skip("its objects are left as written, with fields the API server drops (said)")
    if name in STOPS_BEFORE_V1:
        assert make_plan(root, to=to).has_errors, name
        pytest.skip("the walk stops before v1, an error says why")
    assert objs and all(m.era == "v1" for m in objs), name
    for m in objs:
        for release in ("1.0.14", "1.14.1"):
            assert validate_object(m.checked_obj(), release) == [], (m.path, m.line, release)


def test_onward_hop_holds_the_chart_below_a_minor_whose_required_value_is_unknown(tmp_path):
    (tmp_path / "main.tf").write_text(HELM_ONLY.format(version="1.0.14"))
    plan = make_plan(tmp_path)
    # the hop says where this run really goes, and the runbook's steps install that, never the goal (issue 55)
    assert plan.hop_to == "1.4.4" and plan.phase == "upgrade"
    assert plan.roots[0].next.startswith("1.4.4 → 1.14.1")
    (c,) = plan.changes
    assert 'version = "1.4.4"' in c.new
    titles = " ".join(s.title for s in plan.steps)
    assert "1.4.4" in titles and "1.14.1" not in titles
    (f,) = [f for f in plan.findings if f.code == "MIG-V1X-HELM-001"]
    assert "settings.clusterName" in f.message and f.severity == "error"


def test_to_a_minor_moves_to_its_newest_patch_and_a_bad_patch_is_refused(tmp_path):
    (tmp_path / "main.tf").write_text(HELM_ONLY.format(version="1.0.14"))
    plan = make_plan(tmp_path, to="1.3")
    assert 'version = "1.3.8"' in plan.changes[0].new
    from migrator.plan import UsageError
    with pytest.raises(UsageError, match="1.8.4"):
        make_plan(tmp_path, to="1.8.4")


def test_a_repository_on_0_3x_without_objects_starts_the_v1_hop_with_the_newest_patch(tmp_path):
    (tmp_path / "main.tf").write_text(HELM_ONLY.format(version="0.34.1"))
    plan = make_plan(tmp_path)
    assert (plan.hop_from, plan.hop_to, plan.phase) == ("v1beta1", "v1", "patch-upgrade")
    assert any('version = "0.34.13"' in c.new for c in plan.changes)


def test_ubuntu_without_ami_terms_is_an_error_and_left_alone(tmp_path):
    (tmp_path / "nc.yaml").write_text(
        "apiVersion: karpenter.k8s.aws/v1beta1\nkind: EC2NodeClass\nmetadata:\n  name: u\nspec:\n"
        "  amiFamily: Ubuntu\n  role: r\n  subnetSelectorTerms:\n    - tags: {a: b}\n"
        "  securityGroupSelectorTerms:\n    - tags: {a: b}\n")
    plan = make_plan(tmp_path, to="v1", phase="manifests")
    assert plan.changes == []
    assert any(f.code == "MIG-V1-NC-004" and f.line == 6 for f in plan.findings)


def test_split_class_in_kubectl_manifest_gets_its_own_block(tmp_path):
    pool = ("resource \"kubectl_manifest\" \"{n}\" {{\n  yaml_body = <<-YAML\n    apiVersion: karpenter.sh/v1beta1\n"
            "    kind: NodePool\n    metadata:\n      name: {n}\n    spec:\n      template:\n        spec:\n"
            "          nodeClassRef:\n            name: default\n          requirements: []\n"
            "          kubelet:\n            maxPods: {p}\n  YAML\n}}\n")
    (tmp_path / "main.tf").write_text(
        pool.format(n="a", p=110) + "\n" + pool.format(n="b", p=58) + "\n"
        "resource \"kubectl_manifest\" \"nodeclass\" {\n  yaml_body = <<-YAML\n"
        "    apiVersion: karpenter.k8s.aws/v1beta1\n    kind: EC2NodeClass\n    metadata:\n      name: default\n"
        "    spec:\n      amiFamily: AL2023\n      role: r\n      subnetSelectorTerms:\n        - tags: {a: b}\n"
        "      securityGroupSelectorTerms:\n        - tags: {a: b}\n  YAML\n}\n")
    plan = make_plan(tmp_path, to="v1", phase="manifests")
    (c,) = plan.changes
    assert 'resource "kubectl_manifest" "nodeclass_default_b"' in c.new
    assert "name: default-b" in c.new and "maxPods: 58" in c.new
    assert c.new.count("maxPods: 110") == 1 and "kubelet:\n        maxPods: 110" in c.new
    assert any(f.code == "MIG-V1-KL-002" for f in plan.findings)
    apply_changes(plan.root, plan.changes)
    assert make_plan(tmp_path, to="v1", phase="manifests").changes == []


@pytest.mark.parametrize("name, final", [("v1-gitops-flux", "1.14.1"), ("v1-terraform", "1.14.1")])
def test_a_v1beta1_repository_walks_the_documented_phases_to_the_newest_1x(name, final, tree):
    """Default runs only: each run plans the next phase with work; the last hop ends on the newest 1.x (a
    terraform-aws-modules module on IRSA moves to v21 keeping IRSA through a trust document)."""
    root = tree(name)
    seen = []
    for _ in range(10):
        plan = make_plan(root)
        if not plan.changes:
            break
        seen.append((plan.hop_to, plan.phase))
        apply_changes(plan.root, plan.changes)
    assert seen[-1] == ("1.14.1", "upgrade")
    assert [p for _, p in seen if _ == "v1"] == [p for p in ("patch-upgrade", "controller", "manifests", "webhooks-off")
                                                 if p in [x for _, x in seen]]
    text = "".join(p.read_text() for p in root.rglob("*") if p.is_file() and p.suffix in (".tf", ".tfvars", ".yaml"))
    assert f'"{final}"' in text


def test_crd_release_in_another_namespace_needs_the_webhook_service_namespace(tmp_path):
    (tmp_path / "main.tf").write_text(
        'resource "helm_release" "karpenter_crd" {\n  name      = "karpenter-crd"\n  chart     = "karpenter-crd"\n'
        '  namespace = "default"\n  version   = "0.37.8"\n}\n'
        'resource "helm_release" "karpenter" {\n  name      = "karpenter"\n  chart     = "karpenter"\n'
        '  namespace = "karpenter"\n  version   = "0.37.8"\n}\n')
    plan = make_plan(tmp_path, to="v1", phase="controller")
    (f,) = [f for f in plan.findings if f.code == "MIG-V1-HELM-003"]
    assert "webhook.serviceNamespace=karpenter" in f.manual_step


def test_a_kubelet_field_v1_lacks_is_dropped_with_a_finding_and_the_hop_converges(tmp_path):
    """A hand-edited v1beta1 NodePool still carrying kubelet.containerRuntime (knowledge/v1.yaml kubelet_dropped):
    the EC2NodeClass it moves into validates, and a second plan finds nothing more."""
    (tmp_path / "np.yaml").write_text(
        "apiVersion: karpenter.sh/v1beta1\nkind: NodePool\nmetadata:\n  name: default\nspec:\n  template:\n"
        "    spec:\n      nodeClassRef:\n        name: default\n      requirements:\n        - key: kubernetes.io/arch\n"
        "          operator: In\n          values: [amd64]\n      kubelet:\n        containerRuntime: containerd\n"
        "        maxPods: 110\n---\napiVersion: karpenter.k8s.aws/v1beta1\nkind: EC2NodeClass\nmetadata:\n"
        "  name: default\nspec:\n  amiFamily: AL2\n  role: R\n  subnetSelectorTerms:\n    - tags:\n        a: b\n"
        "  securityGroupSelectorTerms:\n    - tags:\n        a: b\n")
    plan = make_plan(tmp_path, to="v1", phase="manifests")
    assert not [f for f in plan.findings if f.severity == "error"]
    (dropped,) = [f for f in plan.findings if f.code == "MIG-V1-KL-008"]
    assert "containerRuntime" in dropped.message and dropped.line == 14
    apply_changes(plan.root, plan.changes)
    objs = {m.kind: m for m in scan_manifests(Repo(tmp_path))}
    assert objs["EC2NodeClass"].obj["spec"]["kubelet"] == {"maxPods": 110}
    assert validate_object(objs["EC2NodeClass"].obj, "1.14.1") == []
    assert make_plan(tmp_path, to="v1", phase="manifests").changes == []


def test_an_unresolvable_role_with_a_known_instance_profile_keeps_the_profile(tree):
    """fixtures/instance-profile-only: no MIG-NC-011 error; the EC2NodeClass carries spec.instanceProfile."""
    plan = make_plan(tree("instance-profile-only"), phase="prepare")
    codes = {f.code for f in plan.findings}
    assert "MIG-NC-011" not in codes and "MIG-NC-017" in codes
    apply_changes(plan.root, plan.changes)
    (nc,) = [m for m in scan_manifests(Repo(plan.root)) if m.kind == "EC2NodeClass"]
    assert nc.obj["spec"]["instanceProfile"] == "KarpenterNodeInstanceProfile-prod-eu" and "role" not in nc.obj["spec"]
    assert validate_object(nc.obj) == []


def test_a_template_no_terraform_call_renders_is_reported_never_skipped(tmp_path):
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "nodeclass.yaml.tftpl").write_text(
        "apiVersion: karpenter.k8s.aws/v1beta1\nkind: EC2NodeClass\nmetadata:\n  name: ${name}\nspec:\n"
        "  amiFamily: AL2023\n  role: ${role}\n---\napiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata:\n  name: b\n")
    (tmp_path / "main.tf").write_text(
        'locals {\n  nc = templatefile("${path.module}/templates/${var.kind}.yaml.tftpl", { name = "a" })\n}\n')
    plan = make_plan(tmp_path, to="v1")
    (f,) = [f for f in plan.findings if f.code == "MIG-SRC-010"]         # the v1 NodePool needs nothing
    assert (f.path, f.line, f.severity) == ("templates/nodeclass.yaml.tftpl", 1, "warning")
    assert "EC2NodeClass" in f.message and plan.changes == []


def test_a_class_whose_file_ends_without_a_newline_gets_its_added_keys_on_lines_of_their_own(tmp_path):
    """vettom/aws-eks-terraform EKS-Cluster-karpenter: the EC2NodeClass's last line has no newline; the v1 keys
    added at the end of spec must not be glued to it (the patched file failed its check, nothing was written)."""
    (tmp_path / "nc.yaml").write_text(
        "apiVersion: karpenter.k8s.aws/v1beta1\nkind: EC2NodeClass\nmetadata:\n  name: d\nspec:\n"
        "  amiFamily: Bottlerocket\n  role: r\n  subnetSelectorTerms:\n    - tags: {a: b}\n"
        "  securityGroupSelectorTerms:\n    - tags: {a: b}\n  tags:\n    Name: x")
    plan = make_plan(tmp_path, to="v1", phase="manifests")
    assert not [f for f in plan.findings if f.severity == "error"]
    (change,) = plan.changes
    assert "    Name: x\n  metadataOptions:\n" in change.new
    obj = safe_load(change.new)
    assert obj["spec"]["tags"] == {"Name": "x"} and validate_object(obj) == []


def test_a_field_neither_version_defines_is_dropped_with_a_warning_not_an_error(tmp_path):
    """The API server prunes a field its CRD lacks (nodeClassRef.namespace, an EC2NodeClass spec.template copied
    from a NodePool: PipeOpsHQ/nova-templates), so the live object never had it: the v1 object goes without it, said
    (MIG-V1-005), and the hop is not stopped. A field a later v1beta1 release and v1 define is kept."""
    (tmp_path / "np.yaml").write_text(
        "apiVersion: karpenter.sh/v1beta1\nkind: NodePool\nmetadata:\n  name: default\nspec:\n  template:\n"
        "    spec:\n      nodeClassRef:\n        name: default\n        namespace: kube-system\n      requirements:\n"
        "        - key: kubernetes.io/arch\n          operator: In\n          values: [amd64]\n---\n"
        "apiVersion: karpenter.k8s.aws/v1beta1\nkind: EC2NodeClass\nmetadata:\n  name: default\nspec:\n"
        "  template:\n    metadata:\n      labels:\n        a: b\n  amiFamily: AL2\n  role: R\n"
        "  instanceStorePolicy: RAID0\n  subnetSelectorTerms:\n    - tags:\n        a: b\n"
        "  securityGroupSelectorTerms:\n    - tags:\n        a: b\n")
    plan = make_plan(tmp_path, to="v1", phase="manifests")
    assert not [f for f in plan.findings if f.severity == "error"]
    got = sorted((f.line, f.message.split(":")[1].split()[0]) for f in plan.findings if f.code == "MIG-V1-005")
    assert got == [(10, "spec.template.spec.nodeClassRef.namespace"), (21, "spec.template")]
    apply_changes(plan.root, plan.changes)
    objs = {m.kind: m for m in scan_manifests(Repo(tmp_path))}
    assert "namespace" not in objs["NodePool"].obj["spec"]["template"]["spec"]["nodeClassRef"]
    assert "template" not in objs["EC2NodeClass"].obj["spec"]
    assert objs["EC2NodeClass"].obj["spec"]["instanceStorePolicy"] == "RAID0"
    assert make_plan(tmp_path, to="v1", phase="manifests").changes == []
