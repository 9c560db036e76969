"""The official interruption-queue statement (AllowInterruptionQueueActions, scoped to ${KarpenterInterruptionQueue.Arn}
in the CloudFormation): added only when the chart names a queue, scoped to that queue, never written as the
CloudFormation placeholder (issue 19 §2)."""
from __future__ import annotations

import shutil
from pathlib import Path

from migrator.apply import apply_changes
from migrator.plan import make_plan

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "v1-iam" / "input"

CHART = '''
resource "aws_sqs_queue" "interruption" {
  name = "prod-karpenter"
}

resource "helm_release" "karpenter" {
  name       = "karpenter"
  chart      = "karpenter"
  repository = "oci://public.ecr.aws/karpenter"
  version    = "0.37.5"
  values = [yamlencode({
    settings = {
      clusterName = "prod"%s
    }
  })]
}
'''


def _root(tmp_path, queue_line: str) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    text = (FIXTURE / "controller-jsonencode.tf").read_text()
    a = text.index('      {\n        Sid      = "AllowInterruptionQueueActions"')
    b = text.index('      {\n        Sid      = "AllowPassingInstanceRole"')
    (root / "controller.tf").write_text(text[:a] + text[b:] + CHART % queue_line)
    shutil.copy(FIXTURE / "nodes-v1beta1.yaml", root)
    return root


def _walk(root: Path) -> list:
    findings = []
    for _ in range(8):
        plan = make_plan(root, to="latest")
        findings += plan.findings
        if not plan.changes:
            break
        apply_changes(plan.root, plan.changes)
    return findings


def test_queue_named_by_terraform_attribute_is_scoped_to_its_arn(tmp_path):
    root = _root(tmp_path, "\n      interruptionQueue = aws_sqs_queue.interruption.name")
    _walk(root)
    text = (root / "controller.tf").read_text()
    assert "KarpenterInterruptionQueue" not in text
    i = text.index('Sid      = "AllowInterruptionQueueActions"')
    assert 'Resource = "${aws_sqs_queue.interruption.arn}"' in text[i:i + 200]


def test_literal_queue_name_gets_the_arn_in_the_policy_region_and_account(tmp_path):
    root = _root(tmp_path, '\n      interruptionQueue = "prod-karpenter"')
    findings = _walk(root)
    text = (root / "controller.tf").read_text()
    assert "KarpenterInterruptionQueue" not in text
    i = text.index('Sid      = "AllowInterruptionQueueActions"')
    assert ":sqs:" in text[i:i + 250] and ":prod-karpenter" in text[i:i + 250]
    assert not [f for f in findings if f.code == "MIG-IAM-011"]


def test_no_queue_no_statement_and_an_info(tmp_path):
    root = _root(tmp_path, "")
    findings = _walk(root)
    text = (root / "controller.tf").read_text()
    assert "AllowInterruptionQueueActions" not in text and "KarpenterInterruptionQueue" not in text
    assert [f for f in findings if f.code == "MIG-IAM-012" and f.severity == "info"]
    assert not [f for f in findings if f.code == "MIG-IAM-003" and "sqs:" in f.message]


def test_queue_from_another_module_is_a_warning_not_a_placeholder(tmp_path):
    root = _root(tmp_path, "\n      interruptionQueue = var.queue_name")
    findings = _walk(root)
    assert "KarpenterInterruptionQueue" not in (root / "controller.tf").read_text()
    (f, *_) = [f for f in findings if f.code == "MIG-IAM-011"]
    assert f.severity == "warning" and "settings.interruptionQueue" in f.message


def test_statements_the_running_chart_lacks_too_are_said_not_stopped_for(tmp_path):
    """A controller policy without statements the chart the cluster runs uses too (instance profile actions when the
    EC2NodeClass names its instance profile, eks:DescribeCluster when the endpoint is given): a 1.x move does not depend
    on them, so when they cannot be scoped they are a warning (MIG-V1X-IAM-006), not a stop (MIG-IAM-004). With the
    chart version unknown the gap cannot be told from a new need: it stays a stop. fixtures/v1x-policy-gaps-of-the-
    running-chart."""
    import shutil
    from migrator.plan import make_plan
    from .conftest import FIXTURES
    src = FIXTURES / "v1x-policy-gaps-of-the-running-chart" / "input"
    shutil.copytree(src, tmp_path / "t")
    plan = make_plan(tmp_path / "t")
    iam = sorted((f.code, f.severity) for f in plan.findings if "IAM" in f.code and f.severity != "info")
    assert iam == [("MIG-V1X-IAM-006", "warning")]
    assert [c.path for c in plan.changes] == ["karpenter.tf"]
    tf = tmp_path / "t" / "karpenter.tf"
    tf.write_text(tf.read_text().replace('version          = "1.8.1"', 'version          = var.crd_version')
                  .replace('version   = "1.8.1"', "version   = var.karpenter_version"))
    plan = make_plan(tmp_path / "t")
    assert not [f for f in plan.findings if f.code == "MIG-V1X-IAM-006"]


def test_an_action_is_allowed_as_iam_reads_wildcards():
    from migrator.rules.v1beta1.iam import _allows
    allowed = {"ec2:describe*", "iam:passrole", "sqs:*message"}
    assert _allows(allowed, "ec2:DescribeImages") and _allows(allowed, "iam:PassRole")
    assert _allows(allowed, "sqs:DeleteMessage") and not _allows(allowed, "sqs:DeleteQueue")
    assert not _allows(allowed, "ec2:RunInstances") and not _allows(allowed, "xec2:describeimages")
    assert _allows({"*"}, "pricing:GetProducts") and not _allows(set(), "pricing:GetProducts")
    assert not _allows({"ec2:describe.*"}, "ec2:describeXimages")       # a dot is a dot, never a pattern
