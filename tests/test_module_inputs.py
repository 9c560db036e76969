"""Module inputs per release (issue 32 §1): an input the release a call runs does not have is planned away (or
said), never left for terraform plan to find. knowledge/karpenter_module_inputs.yaml is generated from the module's
variables.tf at every tag (scripts/module_inputs.py)."""
from __future__ import annotations

from migrator import knowledge
from migrator.plan import make_plan

CALL = '''module "karpenter" {{
  source  = "terraform-aws-modules/eks/aws//modules/karpenter"
  version = "{version}"

  cluster_name = "demo"
{extra}}}

resource "helm_release" "karpenter" {{
  name       = "karpenter"
  repository = "oci://public.ecr.aws/karpenter"
  chart      = "karpenter"
  version    = "{chart}"
  namespace  = "kube-system"
  values     = [yamlencode({{ settings = {{ clusterName = "demo" }} }})]
}}
'''


def plan_of(tmp_path, version, extra, chart="1.14.1", **kw):
    (tmp_path / "main.tf").write_text(CALL.format(version=version, extra=extra, chart=chart))
    return make_plan(tmp_path, **kw)


def test_the_table_knows_when_each_input_came_and_went():
    inputs = knowledge.load("karpenter_module_inputs")["inputs"]
    assert inputs["enable_inline_policy"] == ["21.8.0", None]
    assert inputs["enable_v1_permissions"] == ["20.24.0", "20.37.2"]
    assert inputs["irsa_name"][1] == "19.21.0" and inputs["create_node_iam_role"][0] == "20.0.0"


def test_an_input_a_later_release_added_raises_the_version_to_that_release(tmp_path):
    plan = plan_of(tmp_path, "21.3.1", "  enable_inline_policy = true\n", chart="1.9.2", to="1.9")
    (f,) = [f for f in plan.findings if f.code == "MIG-V1X-MOD-019"]
    assert "21.8.0" in f.message and "enable_inline_policy" in f.message
    (change,) = plan.changes
    assert 'version = "21.8.0"' in change.new and "enable_inline_policy = true" in change.new


def test_a_constraint_whose_newest_match_has_the_input_is_left_alone(tmp_path):
    plan = plan_of(tmp_path, "~> 21.3", "  enable_inline_policy = true\n")
    assert not [f for f in plan.findings if f.code in ("MIG-V1X-MOD-012", "MIG-V1X-MOD-019")]
    assert all("enable_inline_policy = true" in c.new for c in plan.changes)


def test_v19_inputs_on_a_v20_pin_get_the_mapping_pass_with_the_bumped_version_kept(tmp_path):
    extra = ('  irsa_oidc_provider_arn = "arn:aws:iam::111111111111:oidc-provider/x"\n'
             '  irsa_name              = "karpenter-controller"\n'
             '  iam_role_name          = "karpenter-node"\n')
    plan = plan_of(tmp_path, "20.37.2", extra, chart="1.2.3", to="1.2")
    assert any(f.code == "MIG-V1X-MOD-017" for f in plan.findings)
    (change,) = [c for c in plan.changes if c.path == "main.tf"]
    assert 'version = "20.37.2"' in change.new
    # one pass: v19's node-role iam_role_name becomes node_iam_role_name, v19's irsa_name the controller's
    assert 'node_iam_role_name     = "karpenter-node"' in change.new
    assert 'iam_role_name          = "karpenter-controller"' in change.new
    assert "enable_irsa" in change.new and "irsa_name" not in change.new


def test_v19_inputs_beyond_what_one_run_can_check_are_an_error_that_lists_the_renames(tmp_path):
    plan = plan_of(tmp_path, "21.19.0", '  irsa_name     = "karpenter-controller"\n  iam_role_name = "karpenter-node"\n')
    (f,) = [f for f in plan.findings if f.code == "MIG-V1X-MOD-018"]
    assert f.severity == "error" and "irsa_name -> iam_role_name" in f.manual_step
    assert "iam_role_name -> node_iam_role_name" in f.manual_step
    assert not plan.changes or all("irsa_name" in c.new for c in plan.changes if c.path == "main.tf")


def test_an_input_no_release_has_is_said(tmp_path):
    plan = plan_of(tmp_path, "21.19.0", "  enable_karpenter_magic = true\n")
    (f,) = [f for f in plan.findings if f.code == "MIG-V1X-MOD-012"]
    assert "enable_karpenter_magic" in f.message
