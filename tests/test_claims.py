"""Files that cannot be the version they claim (issue 28 §2, in every plan): a chart pinned at a minor that requires a
value the values do not set (a bot bumped only the version string)."""
from __future__ import annotations

from migrator.plan import make_plan

RELEASE = '''resource "helm_release" "karpenter" {{
  name       = "karpenter"
  repository = "oci://public.ecr.aws/karpenter"
  chart      = "karpenter"
  version    = "{version}"
  namespace  = "kube-system"

  values = [
    <<-EOT
    {values}
    EOT
  ]
}}
'''


def test_a_bumped_pin_gets_the_value_its_minor_requires_from_where_the_repository_states_it(tmp_path):
    (tmp_path / "main.tf").write_text(RELEASE.format(
        version="1.6.0", values="controller:\n      env:\n        - name: CLUSTER_NAME\n          value: demo"))
    plan = make_plan(tmp_path, to="1.6")
    (change,) = plan.changes
    assert "clusterName: demo" in change.new and 'version    = "1.6.8"' in change.new
    assert any(f.code == "MIG-V1X-HELM-006" for f in plan.findings)
    assert not any(f.severity == "error" for f in plan.findings)


def test_a_bumped_pin_whose_required_value_is_nowhere_is_an_error(tmp_path):
    (tmp_path / "main.tf").write_text(RELEASE.format(version="1.6.0", values="replicas: 2"))
    plan = make_plan(tmp_path, to="1.6")
    (f,) = [f for f in plan.findings if f.code == "MIG-V1X-HELM-005"]
    assert f.severity == "error" and "settings.clusterName" in f.message and "1.6.0" in f.message


def test_a_pin_below_the_minor_or_with_the_value_set_is_not_said(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "main.tf").write_text(RELEASE.format(version="1.4.0", values="replicas: 2"))
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "main.tf").write_text(RELEASE.format(version="1.6.0", values="settings:\n      clusterName: b"))
    plan = make_plan(tmp_path, to="1.4")
    assert not any(f.code in ("MIG-V1X-HELM-005", "MIG-V1X-HELM-006") for f in plan.findings)


def test_a_pinned_patch_never_to_land_on_is_said_and_moved(tmp_path):
    (tmp_path / "main.tf").write_text(RELEASE.format(version="1.8.0", values="settings:\n      clusterName: demo"))
    plan = make_plan(tmp_path, to="1.8")
    (f,) = [f for f in plan.findings if f.code == "MIG-V1X-HELM-007"]
    assert "panics" in f.message and f.severity == "warning"
    assert any('version    = "1.8.' in c.new and '"1.8.0"' not in c.new for c in plan.changes)


MODULE = '''module "karpenter" {{
  source  = "terraform-aws-modules/eks/aws//modules/karpenter"
  version = "21.19.0"

  cluster_name = "demo"
{extra}
}}

resource "helm_release" "karpenter" {{
  name       = "karpenter"
  repository = "oci://public.ecr.aws/karpenter"
  chart      = "karpenter"
  version    = "1.14.1"
  namespace  = "kube-system"
  values     = [yamlencode({{ settings = {{ clusterName = "demo" }} }})]
}}
'''


def test_inputs_v21_removed_are_removed_or_said(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "main.tf").write_text(MODULE.format(extra="  enable_v1_permissions = true\n  enable_pod_identity   = true"))
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "main.tf").write_text(MODULE.format(
        extra='  enable_irsa            = true\n  irsa_oidc_provider_arn = "arn:aws:iam::1:oidc-provider/x"'))
    plan = make_plan(tmp_path, to="latest")
    a = next(c for c in plan.changes if c.path == "a/main.tf")
    assert "enable_v1_permissions" not in a.new and "enable_pod_identity" not in a.new
    assert not any(c.path == "b/main.tf" and "enable_irsa" not in c.new for c in plan.changes)   # never dropped
    assert {f.code for f in plan.findings if f.path == "b/main.tf"} >= {"MIG-V1X-MOD-010"}
