"""Karpenter's getting-started CloudFormation template kept in a repository (bcocbo/karpenter-gitops,
jlui70/lab-eks-keda-karpenter, melodyyangaws/karpenter-emr-on-eks, dijeesh/eks-karpenter-workshop): migrator does
not edit it, and says so, with what to deploy in its place and when (MIG-IAM-013)."""
from __future__ import annotations

from migrator.plan import make_plan

TEMPLATE = ('AWSTemplateFormatVersion: "2010-09-09"\nDescription: Resources used by https://github.com/aws/karpenter\n'
            'Parameters:\n  ClusterName:\n    Type: String\nResources:\n  KarpenterControllerPolicy:\n'
            '    Type: AWS::IAM::ManagedPolicy\n    Properties:\n'
            '      ManagedPolicyName: !Sub "KarpenterControllerPolicy-${ClusterName}"\n')
RELEASE = ('resource "helm_release" "karpenter" {{\n  name       = "karpenter"\n  namespace  = "kube-system"\n'
           '  repository = "oci://public.ecr.aws/karpenter"\n  chart      = "karpenter"\n  version    = "{v}"\n}}\n')


def _said(plan):
    return [f for f in plan.findings if f.code == "MIG-IAM-013"]


def test_the_template_is_named_with_the_targets_template_and_never_edited(tmp_path):
    (tmp_path / "main.tf").write_text(RELEASE.format(v="1.8.2"))
    (tmp_path / "cloudformation.yaml").write_text(TEMPLATE)
    plan = make_plan(tmp_path)
    (f,) = _said(plan)
    assert f.severity == "warning" and f.path == "cloudformation.yaml"
    assert "moves the controller to 1.14.1" in f.message and "several managed policies" in f.message   # crosses 1.9
    assert "/v1.14.1/website/content/en/preview/getting-started/getting-started-with-karpenter/cloudformation.yaml" \
        in f.manual_step and "aws cloudformation deploy" in f.manual_step
    assert all(c.path != "cloudformation.yaml" for c in plan.changes)


def test_past_1_9_the_split_is_not_said_again(tmp_path):
    (tmp_path / "main.tf").write_text(RELEASE.format(v="1.10.0"))
    (tmp_path / "cloudformation.yaml").write_text(TEMPLATE)
    (f,) = _said(make_plan(tmp_path))
    assert "several managed policies" not in f.message


def test_across_an_api_change_the_guides_order_is_said(tmp_path):
    (tmp_path / "main.tf").write_text(RELEASE.format(v="0.31.4"))
    (tmp_path / "cfn").mkdir()
    (tmp_path / "cfn" / "karpenter.yaml").write_text(TEMPLATE)
    (f,) = _said(make_plan(tmp_path))
    assert "karpenter.sh/provisioner-name" in f.message and "at cleanup, once no Machine is left" in f.message
    (tmp_path / "main.tf").write_text(RELEASE.format(v="0.37.2"))
    (f,) = _said(make_plan(tmp_path))
    assert "KarpenterControllerPolicy-<cluster name>-v1" in f.message and "1.0.14" in f.message


def test_a_teams_own_template_is_named_to_align_by_hand_never_replaced(tmp_path):
    """suyashg89/aws-eks-karpenter-boilerplate's eks-karpenter-prereqs.yml: parameters and resources of its own."""
    (tmp_path / "main.tf").write_text(RELEASE.format(v="1.8.2"))
    (tmp_path / "prereqs.yml").write_text(TEMPLATE.replace("Resources used by https://github.com/aws/karpenter",
                                                            "Pre-requisite resources used by Karpenter"))
    (f,) = _said(make_plan(tmp_path))
    assert "a CloudFormation template that makes Karpenter's controller policy;" in f.message
    assert "align the template's controller policy with the official one of 1.14.1 by hand" in f.message
    assert "curl" not in f.manual_step and "cloudformation.yaml" in f.manual_step


def test_on_the_way_to_auto_mode_the_stack_goes_with_karpenter(tmp_path):
    (tmp_path / "main.tf").write_text(RELEASE.format(v="1.8.2"))
    (tmp_path / "cloudformation.yaml").write_text(TEMPLATE)
    (f,) = _said(make_plan(tmp_path, to="auto-mode"))
    assert "EKS Auto Mode" in f.message and "delete-stack" in f.manual_step


def test_another_cloudformation_template_is_not_named(tmp_path):
    (tmp_path / "main.tf").write_text(RELEASE.format(v="1.8.2"))
    (tmp_path / "cdk.out").mkdir()                  # a CDK app's synthesized output: generated, not a source
    (tmp_path / "cdk.out" / "Cluster.template.json").write_text(TEMPLATE)
    (tmp_path / "vpc.yaml").write_text('AWSTemplateFormatVersion: "2010-09-09"\nDescription: a VPC\nResources: {}\n')
    assert _said(make_plan(tmp_path)) == []
