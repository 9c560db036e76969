"""IAM and the terraform-aws-modules karpenter module."""
from __future__ import annotations

import json
import re

import pytest

from migrator.apply import apply_changes
from migrator.inventory import Repo
from migrator.options import Options
from migrator.plan import make_plan
from migrator.policies import scan_policies
from migrator.sources import hcl
from migrator.rules.v1beta1.iam import official

from .conftest import FIXTURES, fixture_options


def _sids(root):
    return {p.path: [s.sid for s in p.statements] for p in scan_policies(Repo(root))}


TRIMMED = "controller-heredoc.tf"      # a hand-trimmed JSON heredoc policy: coverage gaps are expected


def test_every_syntax_is_found():
    pols = scan_policies(Repo(FIXTURES / "iam-policies" / "input"))
    assert sorted(p.syntax for p in pols) == ["document", "hcl", "json", "json"]
    full = [p for p in pols if p.path != TRIMMED]
    assert all(len(p.statements) == 11 for p in full)          # the v0.31.5 policy, in three syntaxes


def test_prepare_twins_adds_and_covers(tree):
    root = tree("iam-policies")
    before = _sids(root)
    plan = make_plan(root, phase="prepare", options=fixture_options("iam-policies"))
    gaps = [f for f in plan.findings if f.code == "MIG-IAM-003"]
    assert [f.path for f in gaps] == [TRIMMED], "full policies are covered once prepare's additions are counted"
    assert "ec2:CreateFleet" in gaps[0].message and "iam:CreateInstanceProfile" not in gaps[0].message
    apply_changes(plan.root, plan.changes)
    after = _sids(root)
    target = {s["Sid"] for s in official("0.32.10")}
    for path, sids in after.items():
        assert set(before[path]) <= set(sids), f"{path}: a statement was dropped in prepare"
        if path == TRIMMED:
            assert "ConditionalEC2TerminationNodePool" in sids
            continue
        twins = {s[: -len("NodePool")] for s in sids if s.endswith("NodePool")}
        assert twins == {"AllowScopedEC2InstanceActionsWithTags", "AllowScopedResourceCreationTagging",
                         "AllowScopedDeletion"}
        assert target <= {s.removesuffix("NodePool") for s in sids}
    for p in root.rglob("*"):
        if p.suffix == ".tf":
            hcl.parse(p.read_text())
        elif p.suffix == ".json":
            json.loads(p.read_text())
    again = make_plan(root, phase="prepare", options=fixture_options("iam-policies"))
    assert not [f for f in again.findings if f.code.startswith("MIG-IAM-00") and f.severity != "info"
                and f.path != TRIMMED]
    assert not [c for c in again.changes if "v1beta1/iam" in c.rules]


def test_cleanup_removes_only_alpha_scoped_statements(tree):
    root = tree("iam-policies")
    opts = fixture_options("iam-policies")
    apply_changes(root, make_plan(root, phase="prepare", options=opts).changes)
    apply_changes(root, make_plan(root, phase="cleanup", options=opts).changes)
    for pol in scan_policies(Repo(root)):
        keys = [c.key for s in pol.statements for c in s.conditions]
        assert not any("provisioner-name" in k or "managed-by" in k for k in keys), pol.path
        if pol.path != TRIMMED:
            assert len(pol.statements) == len(official("0.32.10"))


def test_cleanup_before_prepare_refuses(tree):
    plan = make_plan(tree("iam-policies"), phase="cleanup", options=fixture_options("iam-policies"))
    assert {f.code for f in plan.findings if f.severity == "error"} >= {"MIG-IAM-006"}
    assert not [c for c in plan.changes if "v1beta1/iam" in c.rules]


def test_module_versions():
    v19_16 = make_plan(FIXTURES / "terraform-eks" / "input")
    diff = next(c.diff for c in v19_16.changes if c.path == "karpenter.tf")
    assert '+  version = "19.21.0"' in diff and "+  enable_karpenter_instance_profile_creation = true" in diff
    v19_21 = make_plan(FIXTURES / "module-v19-21" / "input")
    diff = next(c.diff for c in v19_21.changes if c.path == "main.tf")
    assert '-  version = "~> 19.21"' not in diff and "enable_karpenter_instance_profile_creation = true" in diff
    assert any(f.code == "MIG-MOD-005" for f in v19_21.findings), "missing discovery tag is reported"
    v20 = make_plan(FIXTURES / "module-v20" / "input")
    assert any(f.code == "MIG-MOD-002" and f.severity == "error" for f in v20.findings)
    assert "enable_karpenter_instance_profile_creation" not in "".join(c.diff for c in v20.changes)


def test_iam_and_module_steps_come_before_crds_and_chart():
    plan = make_plan(FIXTURES / "iam-policies" / "input", options=fixture_options("iam-policies"))
    kinds = [s.kind for s in plan.steps]
    assert kinds.index("iam") < kinds.index("crds") < kinds.index("chart")
    plan = make_plan(FIXTURES / "terraform-eks" / "input")
    kinds = [s.kind for s in plan.steps]
    assert kinds.index("module") < kinds.index("crds")


def test_v20_move_in_cleanup_is_one_mapping_pass(tmp_path):
    """v19 names reused by v20 with another meaning are mapped from the v19 argument set in one step."""
    (tmp_path / "main.tf").write_text(
        'module "karpenter" {\n'
        '  source  = "terraform-aws-modules/eks/aws//modules/karpenter"\n'
        '  version = "19.21.0"\n\n'
        '  cluster_name           = var.cluster\n'
        '  irsa_name              = "ctrl-role"\n'
        '  iam_role_name          = "node-role"\n'
        '  irsa_path              = "/k/"\n'
        '  irsa_oidc_provider_arn = var.oidc\n'
        '  irsa_tag_key           = "karpenter.sh/discovery"\n'
        '}\n\n'
        'output "controller" {\n  value = module.karpenter.irsa_arn\n}\n'
        'output "node" {\n  value = module.karpenter.role_name\n}\n')
    # the module alone does not say which Karpenter runs: stated (chart_version), as the configuration does
    plan = make_plan(tmp_path, phase="cleanup", options=Options(chart_version="0.32.10"))
    (c,) = plan.changes
    new = c.new
    assert 'version = "20.37.2"' in new
    assert '  iam_role_name          = "ctrl-role"' in new           # controller role, from irsa_name
    assert '  node_iam_role_name     = "node-role"' in new           # node role, from v19 iam_role_name
    assert 'iam_role_path          = "/k/"' in new and 'iam_policy_path        = "/k/"' in new
    assert "irsa_tag_key" not in new and re.search(r"enable_irsa +=  ?true", new)
    assert "module.karpenter.iam_role_arn" in new and "module.karpenter.node_iam_role_name" in new
    assert hcl.parse(new)
    apply_changes(plan.root, plan.changes)
    assert make_plan(tmp_path, phase="cleanup").changes == []


def test_v20_waits_while_alpha_objects_stay():
    plan = make_plan(FIXTURES / "terraform-eks" / "input", phase="cleanup")
    assert any(f.code == "MIG-MOD-007" for f in plan.findings)
    assert not any("v1beta1/terraform_module" in c.rules for c in plan.changes)


def test_unreferenced_instance_profile_is_removed_in_cleanup(tmp_path):
    (tmp_path / "main.tf").write_text(
        'resource "aws_iam_instance_profile" "karpenter" {\n  name = "KarpenterNodeInstanceProfile"\n'
        '  role = aws_iam_role.node.name\n}\n\n'
        'resource "helm_release" "karpenter" {\n  chart   = "karpenter"\n  version = "v0.32.10"\n\n'
        '  set {\n    name  = "settings.aws.defaultInstanceProfile"\n'
        '    value = aws_iam_instance_profile.karpenter.name\n  }\n}\n\n'
        'resource "kubectl_manifest" "node_class" {\n  yaml_body = <<-YAML\n'
        '    apiVersion: karpenter.k8s.aws/v1beta1\n    kind: EC2NodeClass\n    metadata:\n      name: default\n'
        '    spec:\n      amiFamily: AL2\n      role: ${aws_iam_role.node.name}\n'
        '      subnetSelectorTerms:\n        - tags:\n            a: b\n'
        '      securityGroupSelectorTerms:\n        - tags:\n            a: b\n  YAML\n}\n\n'
        'resource "kubectl_manifest" "node_template" {\n  yaml_body = <<-YAML\n'
        '    apiVersion: karpenter.k8s.aws/v1alpha1\n    kind: AWSNodeTemplate\n    metadata:\n      name: default\n'
        '    spec:\n      subnetSelector:\n        a: b\n      securityGroupSelector:\n        a: b\n  YAML\n}\n')
    plan = make_plan(tmp_path, phase="cleanup")
    (c,) = [c for c in plan.changes if c.path == "main.tf"]
    assert "aws_iam_instance_profile" not in c.new and "defaultInstanceProfile" not in c.new
    assert 'resource "helm_release" "karpenter"' in c.new and c.new.startswith('resource "helm_release"')
    assert "AWSNodeTemplate" not in c.new and any(f.code == "MIG-IAM-007" for f in plan.findings)


def test_policy_prefilter_is_exact_on_every_fixture(monkeypatch):
    """Issue 10: the byte-level pre-filter never hides a policy the full scan would find."""
    from migrator import policies
    from migrator.inventory import Repo as _Repo
    from .conftest import FIXTURE_NAMES, FIXTURES as _FX
    found = 0
    for name in FIXTURE_NAMES:
        with_filter = [(p.path, p.line) for p in policies.scan_policies(_Repo(_FX / name / "input"))]
        with monkeypatch.context() as m:
            m.setattr(policies, "may_hold_karpenter_policy", lambda text: True)
            without = [(p.path, p.line) for p in policies.scan_policies(_Repo(_FX / name / "input"))]
        assert with_filter == without, name
        found += len(with_filter)
    assert found > 5


SCOPE_POLICY = {"Version": "2012-10-17", "Statement": [
    {"Sid": "AllowScopedResourceCreationTagging", "Effect": "Allow", "Action": ["ec2:CreateTags"], "Resource": "*",
     "Condition": {"StringEquals": {"ec2:CreateAction": ["RunInstances", "CreateFleet", "CreateLaunchTemplate"]},
                   "StringLike": {"aws:RequestTag/karpenter.sh/nodepool": "*"}}}]}


def test_a_terraform_policy_is_scoped_with_the_modules_own_values(tmp_path):
    """No cluster name or region written in the policy: the chart's clusterName expression and an aws_region data
    source (added, as the terraform-aws-modules module does) scope the v1 statement; no MIG-V1-IAM-003."""
    (tmp_path / "main.tf").write_text(
        'variable "cluster_name" {\n  type = string\n}\n\nresource "helm_release" "karpenter" {\n'
        '  chart   = "karpenter"\n  version = "0.37.8"\n\n  set {\n    name  = "settings.clusterName"\n'
        '    value = var.cluster_name\n  }\n}\n\nresource "aws_iam_policy" "karpenter" {\n'
        '  policy = jsonencode(' + json.dumps(SCOPE_POLICY) + ')\n}\n')
    plan = make_plan(tmp_path, to="v1", phase="patch-upgrade")
    codes = {f.code for f in plan.findings}
    assert "MIG-V1-IAM-003" not in codes and {"MIG-V1-IAM-001", "MIG-IAM-010"} <= codes
    (c,) = plan.changes
    assert 'data "aws_region" "current" {}' in c.new
    assert "eks:eks-cluster-name" in c.new and "${var.cluster_name}" in c.new
    assert "${data.aws_region.current.name}" in c.new
    apply_changes(plan.root, plan.changes)
    assert make_plan(tmp_path, to="v1", phase="patch-upgrade").changes == []


@pytest.mark.parametrize("how", ["flags", "roots"])
def test_a_json_policy_takes_cluster_and_region_from_the_options_or_the_configuration(tmp_path, how):
    import dataclasses

    from migrator.config import resolve
    root = tmp_path / "clusters" / "prod"
    root.mkdir(parents=True)
    (root / "policy.json").write_text(json.dumps(SCOPE_POLICY, indent=2) + "\n")
    (root / "nodepool.yaml").write_text("apiVersion: karpenter.sh/v1beta1\nkind: NodePool\nmetadata:\n  name: a\n"
                                        "spec:\n  template:\n    spec:\n      nodeClassRef:\n        name: a\n")
    assert "MIG-V1-IAM-003" in {f.code for f in make_plan(tmp_path, to="v1", phase="patch-upgrade").findings}
    if how == "flags":
        opts = Options(cluster_name="prod-eu", region="eu-west-1")
    else:
        (tmp_path / ".migrator.yaml").write_text(
            "roots:\n  clusters/prod:\n    cluster_name: prod-eu\n    region: eu-west-1\n")
        s = resolve(tmp_path, {})
        opts = dataclasses.replace(Options(), roots=s["roots"])
    plan = make_plan(tmp_path, to="v1", phase="patch-upgrade", options=opts)
    assert "MIG-V1-IAM-003" not in {f.code for f in plan.findings}
    (c,) = [c for c in plan.changes if c.path.endswith("policy.json")]
    body = json.loads(c.new)
    st = body["Statement"][0]
    assert st["Condition"]["StringEquals"]["aws:RequestTag/eks:eks-cluster-name"] == "prod-eu"
    assert any(":eu-west-1:" in r for r in st["Resource"])


def test_a_configured_root_that_is_not_a_cluster_root_is_reported(tmp_path):
    (tmp_path / "np.yaml").write_text("apiVersion: karpenter.sh/v1beta1\nkind: NodePool\nmetadata:\n  name: a\n"
                                      "spec:\n  template:\n    spec:\n      nodeClassRef:\n        name: a\n")
    plan = make_plan(tmp_path, to="v1", options=Options(roots={"clusters/prd": {"region": "eu-west-1"}}))
    (f,) = [f for f in plan.findings if f.code == "MIG-CFG-001"]
    assert "clusters/prd" in f.message and f.severity == "warning"


def test_a_new_statement_scoped_by_account_reads_the_modules_caller_identity(tmp_path):
    """A Terraform controller policy (chart 1.4) given the newest 1.x statements: AllowAPIServerEndpointDiscovery and
    the interruption queue's are scoped by account, which the module states nowhere - an aws_caller_identity data
    source is added and read (aws-samples/eks-saas-gitops). The statement was written with CloudFormation's
    `${AWS::AccountId}` left in it (invalid Terraform), and the queue's came only on a second run (MIG-EDIT-004)."""
    policy = {"Version": "2012-10-17", "Statement": [
        {"Sid": "Karpenter", "Effect": "Allow", "Resource": "*",
         "Action": ["ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate", "iam:PassRole"]}]}
    (tmp_path / "main.tf").write_text(
        'variable "cluster_name" {\n  type    = string\n  default = "shop"\n}\n\n'
        'resource "helm_release" "karpenter" {\n  chart   = "karpenter"\n  version = "1.4.0"\n\n'
        '  set {\n    name  = "settings.clusterName"\n    value = var.cluster_name\n  }\n\n'
        '  set {\n    name  = "settings.interruptionQueue"\n    value = "shop-karpenter"\n  }\n}\n\n'
        'resource "aws_iam_policy" "karpenter" {\n  policy = jsonencode(' + json.dumps(policy) + ')\n}\n')
    plan = make_plan(tmp_path, to="latest")
    assert not [f for f in plan.findings if f.code in ("MIG-EDIT-004", "MIG-IAM-011")]
    (c,) = [c for c in plan.changes if c.path == "main.tf"]
    assert "AWS::" not in c.new and 'data "aws_caller_identity" "current" {}' in c.new
    assert ":${data.aws_caller_identity.current.account_id}:cluster/${var.cluster_name}" in c.new
    assert ":${data.aws_caller_identity.current.account_id}:shop-karpenter" in c.new
    hcl.parse(c.new)
    apply_changes(plan.root, plan.changes)
    assert [x.path for x in make_plan(tmp_path, to="latest").changes if x.path == "main.tf"] == []


def test_a_json_policy_stating_no_account_scopes_new_statements_to_the_roles_own(tmp_path):
    """A JSON controller policy (aws-cli, antonputra/tutorials lessons/114) with no account anywhere: the new
    statements scoped by account take `*` there - the role's own account, as a role acts in its account only - said
    (MIG-IAM-009). It was written with `${AWS::AccountId}` left in, which IAM rejects."""
    policy = {"Version": "2012-10-17", "Statement": [
        {"Sid": "Karpenter", "Effect": "Allow", "Resource": "*",
         "Action": ["ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate", "iam:PassRole"]}]}
    (tmp_path / "policy.json").write_text(json.dumps(policy, indent=4) + "\n")
    (tmp_path / "main.tf").write_text(
        'provider "aws" {\n  region = "eu-west-1"\n}\n\nresource "helm_release" "karpenter" {\n'
        '  chart   = "karpenter"\n  version = "1.4.0"\n\n  set {\n    name  = "settings.clusterName"\n'
        '    value = "shop"\n  }\n}\n')
    plan = make_plan(tmp_path, to="latest")
    (c,) = [c for c in plan.changes if c.path == "policy.json"]
    assert "${" not in c.new
    discovery = next(s for s in json.loads(c.new)["Statement"] if s["Sid"] == "AllowAPIServerEndpointDiscovery")
    assert discovery["Resource"] == "arn:aws:eks:eu-west-1:*:cluster/shop"
    assert any(f.code == "MIG-IAM-009" and "account for the scoped statements is *" in f.message
               for f in plan.findings)
