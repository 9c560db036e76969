"""Never confidently wrong (issue 55): every generated text is checked against what it came from, modules are what
their source says, unknown is a stop, files are left as an editor leaves them."""
from __future__ import annotations

import json
import re

from migrator.apply import apply_changes
from migrator.options import Options
from migrator.plan import make_plan
from migrator.validate import quoted_references

import pytest

from .conftest import FIXTURE_NAMES, fixture_hop, fixture_options


def test_a_reference_written_as_a_string_fails_the_check():
    old = 'locals {\n  region = var.aws_region\n}\n'
    assert quoted_references("main.tf", old, old + 'x = "var.aws_region"\n')
    assert quoted_references("main.tf", None, 'x = ["module.eks.cluster_name"]\n')
    assert quoted_references("main.tf", old, old + 'x = "${var.aws_region}"\n') is None
    assert quoted_references("main.tf", old, old + 'x = var.aws_region\n') is None
    # a string the file already had quoted, as often, is the user's own
    quoted = 'x = "var.aws_region"\n'
    assert quoted_references("main.tf", quoted, quoted + "y = 1\n") is None
    # a resource-like string is suspect only where the file reads it as a reference
    assert quoted_references("main.tf", "", 'x = "aws_iam_role.node.arn"\n') is None
    assert quoted_references("main.tf", "r = aws_iam_role.node.arn\n", 'r = aws_iam_role.node.arn\nx = "aws_iam_role.node.arn"\n')
    assert quoted_references("values.yaml", "", 'x: "var.aws_region"\n') is None


def test_a_region_condition_written_as_an_expression_stays_an_expression(tree):
    """A hand-written jsonencode policy whose region condition is `var.aws_region`/`local.region` (no quotes) and
    whose ARNs name no region: the statements added read the region as the expression, never as the text
    "local.region" (every Describe call denied)."""
    root = tree("iam-policies")
    f = root / "controller-jsonencode.tf"
    text = f.read_text()
    text = text.replace('"aws:RequestedRegion" = "${local.region}"', '"aws:RequestedRegion" = local.region')
    text = text.replace("arn:aws:ec2:${local.region}:", "arn:aws:ec2:*:")
    f.write_text(text)
    plan = make_plan(root, options=fixture_options("iam-policies"))
    assert not [x for x in plan.findings if x.code.startswith("MIG-EDIT")]
    (c,) = [c for c in plan.changes if c.path == "controller-jsonencode.tf"]
    added = "".join(line for line in c.diff.splitlines(keepends=True) if line.startswith("+"))
    assert "${local.region}" in added
    assert not re.search(r'"[^"$]*local\.region', added)


def test_a_document_condition_over_a_list_variable_gives_no_region(tree):
    """`values = var.regions` in a policy document is a whole list: none of its items is taken for the region."""
    from migrator.inventory import Repo
    from migrator.policies import scan_policies
    root = tree("iam-policies")
    f = root / "controller-document.tf"
    f.write_text(f.read_text().replace('values   = ["${var.region}"]', "values   = var.regions"))
    (pol,) = [p for p in scan_policies(Repo(root)) if p.path == "controller-document.tf"]
    conds = [c for s in pol.statements for c in s.conditions if c.key == "aws:RequestedRegion"]
    assert conds and all(c.values == [] for c in conds)


# -- files and exits: as an editor leaves them ----------------------------------------------------------------------
from typer.testing import CliRunner  # noqa: E402

from migrator.cli import app  # noqa: E402

runner = CliRunner()


def test_new_files_get_the_umasks_mode_and_rewritten_files_keep_theirs(tree):
    import os
    root = tree("terraform-eks")
    (root / "karpenter.tf").chmod(0o640)
    old = os.umask(0o022)
    try:
        plan = make_plan(root)
        created = [c.path for c in plan.changes if c.action == "create"]
        assert created
        apply_changes(plan.root, plan.changes)
    finally:
        os.umask(old)
    assert (root / "karpenter.tf").stat().st_mode & 0o777 == 0o640
    for rel in created:
        assert (root / rel).stat().st_mode & 0o777 == 0o644, rel


def test_apply_says_what_it_did_to_each_file(tree):
    root = tree("terraform-eks")
    plan = make_plan(root)
    r = runner.invoke(app, ["apply", str(root), "--write"])
    assert r.exit_code == 0, r.output
    assert r.output.splitlines()[0].startswith("migrator apply")
    for c in plan.changes:
        verb = {"create": "created", "modify": "wrote", "delete": "deleted"}[c.action]
        assert f"{verb} {c.path}" in r.output
    assert "created configs/karpenter-nodepool.yaml.tmpl" in r.output
    from migrator.apply import done
    from migrator.edits import FileChange
    gone = FileChange("old.yaml", "delete", "x: 1\n", None, [])
    assert done([gone], ["old.yaml"]) == ["deleted old.yaml"]


def test_a_plan_saved_under_any_name_is_applied_and_a_stray_file_is_refused(tree, tmp_path):
    root = tree("terraform-eks")
    saved = tmp_path / "tfplan"
    r = runner.invoke(app, ["plan", str(root), "-out", str(saved)])
    assert r.exit_code == 0 and saved.exists()
    assert saved.stat().st_mode & 0o777 == 0o666 & ~_umask()
    r = runner.invoke(app, ["apply", str(saved), "--write"])
    assert r.exit_code == 0, r.output
    assert "wrote karpenter.tf" in r.output and "no Karpenter" not in r.output
    # applied: the same file again refuses (its inputs changed), never read as a repository
    r = runner.invoke(app, ["apply", str(saved), "--write"])
    assert r.exit_code == 1 and "changed since" in r.output
    stray = tmp_path / "notes.txt"
    stray.write_text("not a plan\n")
    r = runner.invoke(app, ["apply", str(stray), "--write"])
    assert r.exit_code == 1 and "neither a saved plan" in r.output
    r = runner.invoke(app, ["plan", str(saved)])
    assert r.exit_code == 1 and "is a saved plan" in r.output


def _umask() -> int:
    import os
    m = os.umask(0o022)
    os.umask(m)
    return m


def test_a_usage_error_exits_1_not_the_pending_changes_code(tree):
    root = tree("terraform-eks")
    assert runner.invoke(app, ["plan", str(root), "--format", "xml"]).exit_code == 1
    assert runner.invoke(app, ["plan", str(root), "--no-such-flag"]).exit_code == 1
    assert runner.invoke(app, ["plan", str(root), "--detailed-exitcode"]).exit_code == 2


# -- modules are what their source says ---------------------------------------------------------------------------
def _own_karpenter_module(root, chart="0.32.1"):
    (root / "modules" / "karpenter").mkdir(parents=True)
    (root / "main.tf").write_text(
        'module "karpenter" {\n  source = "./modules/karpenter"\n\n'
        '  cluster_name  = "a-rather-long-production-cluster-name-for-payments-eu"\n'
        f'  chart_version = "{chart}"\n}}\n')
    (root / "modules" / "karpenter" / "variables.tf").write_text(
        'variable "cluster_name" {\n  type = string\n}\n\nvariable "chart_version" {\n  type = string\n}\n')
    (root / "modules" / "karpenter" / "main.tf").write_text(
        'resource "helm_release" "karpenter" {\n  namespace  = "karpenter"\n  name       = "karpenter"\n'
        '  repository = "oci://public.ecr.aws/karpenter"\n  chart      = "karpenter"\n  version    = var.chart_version\n\n'
        '  set {\n    name  = "settings.clusterName"\n    value = var.cluster_name\n  }\n}\n')


def test_a_local_karpenter_module_is_the_teams_own_not_the_registry_module(tmp_path):
    """A local ./modules/karpenter (the team's helm_release) is not terraform-aws-modules' karpenter module: no
    registry input is written into its call, no step speaks of that module, no pin to a v19 release is asked."""
    _own_karpenter_module(tmp_path, "1.0.8")
    for to in ("latest", "v1beta1"):
        plan = make_plan(tmp_path, to=to)
        said = " ".join(f.message + " " + f.manual_step for f in plan.findings) + \
            " ".join(s.title + " " + s.detail for s in plan.steps)
        assert "terraform-aws-modules" not in said and "19.21.0" not in said
        assert not [f for f in plan.findings if f.code.startswith(("MIG-MOD-", "MIG-V1X-MOD-", "MIG-V1-MOD-"))]
        for c in plan.changes:
            if c.path == "main.tf":
                assert "enable_inline_policy" not in c.new and "enable_v1_permissions" not in c.new


def test_the_registry_module_is_known_by_its_registry_or_git_source():
    from migrator.modmajor import is_karpenter_module
    assert is_karpenter_module("terraform-aws-modules/eks/aws//modules/karpenter")
    assert is_karpenter_module("tfr:///terraform-aws-modules/eks/aws//modules/karpenter?version=20.8.4")
    assert is_karpenter_module("git::https://github.com/terraform-aws-modules/terraform-aws-eks.git//modules/karpenter?ref=v20.1.0")
    assert not is_karpenter_module("./modules/karpenter")
    assert not is_karpenter_module("../../modules/karpenter")
    assert not is_karpenter_module("git::git@github.com:acme/infra.git//modules/karpenter?ref=v1")
    assert not is_karpenter_module(None)


def test_an_argument_a_local_module_does_not_declare_is_never_written(tmp_path):
    from migrator.edits import FileChange
    from migrator.inventory import Repo
    from migrator.plan import _declared_inputs
    _own_karpenter_module(tmp_path)
    repo = Repo(tmp_path)
    old = repo.text("main.tf")
    bad = FileChange("main.tf", "modify", old, old.replace("  cluster_name", "  enable_inline_policy = true\n  cluster_name"), [])
    findings = []
    assert _declared_inputs(repo, [bad], findings) == []
    (f,) = findings
    assert f.code == "MIG-EDIT-009" and "enable_inline_policy" in f.message
    # declared by the same plan in the module's own files: fine
    var = FileChange("modules/karpenter/variables.tf", "modify", repo.text("modules/karpenter/variables.tf"),
                     repo.text("modules/karpenter/variables.tf") + '\nvariable "enable_inline_policy" {\n  type = bool\n}\n', [])
    findings = []
    assert len(_declared_inputs(repo, [bad, var], findings)) == 2 and findings == []
    # a call of a module that is not in the repository gets no argument migrator cannot check
    gone = FileChange("main.tf", "modify", old, old.replace("./modules/karpenter", "./modules/absent")
                      .replace("  cluster_name", "  extra = 1\n  cluster_name"), [])
    findings = []
    assert _declared_inputs(repo, [gone], findings) == [] and "not in the repository" in findings[0].message


# -- runbooks that keep the cluster up -----------------------------------------------------------------------------
HELM_ONLY = ('resource "helm_release" "karpenter" {{\n  namespace = "karpenter"\n  name      = "karpenter"\n'
             '  chart     = "karpenter"\n  version   = "{version}"\n  values = [<<-EOT\n    settings:\n'
             '      clusterName: prod\n  EOT\n  ]\n}}\n')


def test_every_hop_that_adds_a_crd_release_hands_the_crds_to_it_first(tmp_path):
    """The karpenter chart installed the CRDs (no karpenter-crd release): the CRD release the hop adds would fail
    with "invalid ownership metadata" unless the CRDs are labelled and annotated for it first, in the same phase."""
    for version, to, phase, before in (("0.37.2", "v1", "patch-upgrade", "patch"), ("1.2.0", "latest", "upgrade", "crds")):
        (tmp_path / "main.tf").write_text(HELM_ONLY.format(version=version))
        plan = make_plan(tmp_path, to=to)
        ids = [s.id.split("-", 2)[-1] for s in plan.steps]
        assert "crds-adopt" in ids, (version, ids)
        adopt = next(s for s in plan.steps if s.id.endswith("crds-adopt"))
        assert adopt.phase == phase and ids.index("crds-adopt") < ids.index(before)
        assert any("meta.helm.sh/release-name=karpenter-crd" in c and "meta.helm.sh/release-namespace=karpenter" in c
                   for c in adopt.commands)
    # a repository that already installs the CRD chart hands nothing over
    (tmp_path / "main.tf").write_text(HELM_ONLY.format(version="1.2.0") + HELM_ONLY.format(version="1.2.0")
                                      .replace('"karpenter"', '"karpenter-crd"').replace('"karpenter-crd"\n  name',
                                                                                        '"karpenter"\n  name'))
    plan = make_plan(tmp_path, to="latest")
    assert not [s for s in plan.steps if s.id.endswith("crds-adopt")]


# -- walks converge ---------------------------------------------------------------------------------------------------
ALPHA_DEPENDS_ON = '''resource "helm_release" "karpenter" {
  namespace  = "karpenter"
  name       = "karpenter"
  repository = "oci://public.ecr.aws/karpenter"
  chart      = "karpenter"
  version    = "v0.31.4"

  set {
    name  = "settings.aws.clusterName"
    value = "prod"
  }
}

resource "kubectl_manifest" "node_template" {
  yaml_body = <<-YAML
    apiVersion: karpenter.k8s.aws/v1alpha1
    kind: AWSNodeTemplate
    metadata:
      name: default
    spec:
      subnetSelector:
        karpenter.sh/discovery: prod
      securityGroupSelector:
        karpenter.sh/discovery: prod
  YAML

  depends_on = [helm_release.karpenter]
}

resource "kubectl_manifest" "provisioner" {
  yaml_body = <<-YAML
    apiVersion: karpenter.sh/v1alpha5
    kind: Provisioner
    metadata:
      name: default
    spec:
      providerRef:
        name: default
      ttlSecondsAfterEmpty: 30
  YAML

  depends_on = [
    helm_release.karpenter,
    kubectl_manifest.node_template,
  ]
}
'''


def test_a_copied_depends_on_follows_what_it_names_so_the_walk_ends(tmp_path):
    """The NodePool twin of a Provisioner that depends on its AWSNodeTemplate depends on the EC2NodeClass twin, so
    the cleanup can remove the AWSNodeTemplate (before: MIG-EDIT-006 every run, the walk never ended)."""
    (tmp_path / "main.tf").write_text(ALPHA_DEPENDS_ON)
    opts = Options(node_role="KarpenterNodeRole-prod")
    for _ in range(4):
        plan = make_plan(tmp_path, to="v1beta1", options=opts)
        assert not [f for f in plan.findings if f.severity == "error"], [f.message for f in plan.findings]
        if not plan.changes:
            break
        apply_changes(plan.root, plan.changes)
    else:
        raise AssertionError("the walk does not end")
    text = (tmp_path / "main.tf").read_text()
    assert "AWSNodeTemplate" not in text and "Provisioner" not in text
    assert "kubectl_manifest.node_class," in text and "kubectl_manifest.node_template" not in text


def test_a_longer_count_condition_is_split_by_the_parser_not_cut_by_a_pattern(tmp_path):
    """`count = var.a && (var.b ? 1 : 0) > 0 ? 1 : 0`: its condition is read whole (a cut at the first `?` is not
    HCL: the plan ended with "internal error ... nothing was written")."""
    from migrator.inventory import Repo
    from migrator.inventory.sites import stated_count
    from migrator.sources import hcl
    (tmp_path / "main.tf").write_text(
        'variable "a" {\n  default = true\n}\n\nvariable "b" {\n  default = false\n}\n\n'
        'resource "null_resource" "x" {\n  count = var.a && (var.b ? 1 : 0) == 0 ? 1 : 0\n}\n'
        'resource "null_resource" "y" {\n  count = var.a ? (var.b ? 2 : 3) : 0\n}\n')
    repo = Repo(tmp_path)
    blocks = {b.labels[1]: b for b in repo.hcl("main.tf").blocks if b.type == "resource"}
    cond, a, b = hcl.conditional(blocks["x"].attr("count"))
    assert cond.source == "var.a && (var.b ? 1 : 0) == 0" and a.literal() == 1 and b.literal() == 0
    assert repo.text("main.tf")[cond.start:cond.end] == cond.source
    assert stated_count(repo, "", blocks["x"]) is None or stated_count(repo, "", blocks["x"]) in (0, 1)
    assert hcl.conditional(blocks["y"].attr("count"))[1].source == "(var.b ? 2 : 3)"
    assert hcl.conditional(hcl.parse('z = var.q\n').attributes["z"].expr) is None


# -- unknown is a stop, never a guess --------------------------------------------------------------------------------
V1_NODEPOOL = ('apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata:\n  name: default\nspec:\n  template:\n'
               '    spec:\n      nodeClassRef:\n        group: karpenter.k8s.aws\n        kind: EC2NodeClass\n'
               '        name: default\n      requirements: []\n')


def test_a_stated_chart_that_cannot_serve_the_objects_is_an_error_and_plans_nothing(tmp_path):
    (tmp_path / "nodepool.yaml").write_text(V1_NODEPOOL)
    for stated in ("0.32.1", "0.37.0"):
        plan = make_plan(tmp_path, options=Options(chart_version=stated))
        (f,) = [f for f in plan.findings if f.code == "MIG-STAND-004"]
        assert f.severity == "error" and stated in f.message and "v1" in f.message
        assert plan.changes == [] and not plan.steps and plan.roots[0].era == "unknown"
    plan = make_plan(tmp_path, options=Options(chart_version="1.2.0"))        # it serves v1: planned as before
    assert not [f for f in plan.findings if f.code == "MIG-STAND-004"]


def test_objects_a_shell_heredoc_applies_are_read_for_the_standing_and_said(tmp_path):
    from migrator.inventory import Repo
    from migrator.inventory.shellobjects import scan
    (tmp_path / "setup.sh").write_text(
        "#!/bin/bash\n# karpenter\ncat <<EOF | kubectl apply -f -\napiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\n"
        "metadata:\n  name: default\n---\napiVersion: karpenter.k8s.aws/v1alpha1\nkind: AWSNodeTemplate\n"
        "metadata:\n  name: default\nEOF\ncat <<EOF > notes.yaml\napiVersion: karpenter.sh/v1beta1\nkind: NodePool\nEOF\n")
    objs = scan(Repo(tmp_path))
    assert [(o.path, o.line, o.kind, o.era) for o in objs] == [("setup.sh", 4, "Provisioner", "alpha"),
                                                               ("setup.sh", 9, "AWSNodeTemplate", "alpha")]


def test_no_internal_placeholder_reaches_a_finding():
    from migrator.model import Finding
    from migrator.plan import _no_placeholder
    f = Finding("MIG-X-001", "warning", "a.yaml", 1, "name __MIG_59__ is templated", "set __MIG_3__ by hand")
    _no_placeholder(f)
    assert "__MIG_" not in f.message + f.manual_step and "<a template expression>" in f.message


def test_no_karpenter_is_said_only_when_no_file_naming_it_was_left_unread(tmp_path):
    stack = tmp_path / "live" / "prod" / "terragrunt.stack.hcl"
    stack.parent.mkdir(parents=True)
    stack.write_text('unit "karpenter" {\n  source = "git::https://github.com/acme/catalog.git//units/karpenter"\n'
                     '  path   = "karpenter"\n  values = {\n    chart_version = "1.13.0"\n  }\n}\n')
    plan = make_plan(tmp_path)
    assert not [f for f in plan.findings if f.code == "MIG-HOP-005"]
    (f,) = [f for f in plan.findings if f.code == "MIG-HOP-010"]
    assert "live/prod/terragrunt.stack.hcl" in f.message and plan.roots[0].era == "unknown"
    stack.write_text(stack.read_text().replace("karpenter", "external-dns"))
    assert [f.code for f in make_plan(tmp_path).findings if f.code.startswith("MIG-HOP")] == ["MIG-HOP-005"]


def test_a_trust_policy_is_never_taken_for_the_controller_policy(tmp_path):
    """An aws_iam_policy_document used as a role's assume_role_policy (sts:AssumeRoleWithWebIdentity for the
    controller's service account) gets no controller statement: IAM rejects a trust policy holding such actions."""
    from migrator.inventory import Repo
    from migrator.policies import scan_policies
    (tmp_path / "iam.tf").write_text(
        'data "aws_iam_policy_document" "karpenter_controller_trust" {\n  statement {\n'
        '    sid     = "KarpenterControllerAssume"\n    actions = ["sts:AssumeRoleWithWebIdentity"]\n\n'
        '    principals {\n      type        = "Federated"\n      identifiers = [var.oidc_provider_arn]\n    }\n\n'
        '    condition {\n      test     = "StringEquals"\n      variable = "oidc:sub"\n'
        '      values   = ["system:serviceaccount:karpenter:karpenter"]\n    }\n  }\n}\n\n'
        'resource "aws_iam_role" "karpenter_controller" {\n  name               = "karpenter-controller"\n'
        '  assume_role_policy = data.aws_iam_policy_document.karpenter_controller_trust.json\n}\n')
    assert scan_policies(Repo(tmp_path)) == []


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_no_fixture_plan_writes_a_reference_as_a_string_or_an_undeclared_input(name, tree):
    """Every fixture, planned as its walk or hop starts: the checks of generated text against its source find
    nothing (MIG-EDIT-008: a reference written as a string; MIG-EDIT-009: an argument the module does not declare),
    and no internal placeholder reaches any finding."""
    to, phases = fixture_hop(name)
    plan = make_plan(tree(name), to=to, phase=phases[0][0] if phases else None, options=fixture_options(name))
    assert not [f for f in plan.findings if f.code in ("MIG-EDIT-008", "MIG-EDIT-009")], name
    assert not [f for f in plan.findings if "__MIG_" in f.message + f.manual_step], name


# -- false stops: facts read where they are ---------------------------------------------------------------------------
OPTIONAL_DEFAULT = '''variable "karpenter" {
  type = object({
    enabled       = optional(bool, true)
    chart_version = optional(string, "1.8.2")
  })
  default = {}
}

resource "helm_release" "karpenter" {
  count      = var.karpenter.enabled ? 1 : 0
  namespace  = "karpenter"
  name       = "karpenter"
  repository = "oci://public.ecr.aws/karpenter"
  chart      = "karpenter"
  version    = var.karpenter.chart_version

  values = [<<-EOT
    settings:
      clusterName: prod
  EOT
  ]
}
'''


def test_a_chart_version_in_an_optional_default_of_an_object_type_is_read_and_moved(tmp_path):
    (tmp_path / "main.tf").write_text(OPTIONAL_DEFAULT)
    plan = make_plan(tmp_path)
    assert plan.roots[0].era == "v1" and plan.roots[0].chart == "1.8.2"
    assert not [f for f in plan.findings if f.severity == "error"]
    (c,) = [c for c in plan.changes if c.path == "main.tf"]
    assert 'chart_version = optional(string, "1.14.1")' in c.new
    # a tfvars that sets the object decides instead: its value, never the type's default
    (tmp_path / "terraform.tfvars").write_text('karpenter = {\n  chart_version = "1.9.0"\n}\n')
    plan = make_plan(tmp_path)
    assert plan.roots[0].chart == "1.9.0"
    assert 'optional(string, "1.8.2")' in next(c.new for c in plan.changes if c.path == "main.tf")


def test_a_json_policy_takes_its_region_from_the_roots_tfvars(tree):
    """A policy file for aws-cli that names no region, in a root whose provider reads `region = var.region` and whose
    terraform.tfvars sets it: the region is read there (before: MIG-IAM-004, "cannot tell the region")."""
    root = tree("iam-policies")
    for p in root.glob("controller-*.tf"):
        p.unlink()
    pol = root / "policies" / "karpenter-controller-prod.json"
    doc = json.loads(re.sub(r"arn:aws:(\w+):[a-z0-9-]+:", r"arn:aws:\1:*:", pol.read_text()))
    doc["Statement"] = [s for s in doc["Statement"] if s.get("Sid") != "AllowRegionalReadActions"]
    pol.write_text(json.dumps(doc, indent=2) + "\n")
    assert "eu-west-1" not in pol.read_text()
    (root / "main.tf").write_text(
        'provider "aws" {\n  region = var.region\n}\n\nvariable "region" {\n  type = string\n}\n\n'
        'resource "helm_release" "karpenter" {\n  namespace  = "karpenter"\n  name       = "karpenter"\n'
        '  repository = "oci://public.ecr.aws/karpenter"\n  chart      = "karpenter"\n  version    = "v0.31.4"\n}\n')
    (root / "terraform.tfvars").write_text('region = "eu-west-1"\n')
    plan = make_plan(root, options=fixture_options("iam-policies"))
    assert not [f for f in plan.findings if f.code == "MIG-IAM-004"]
    (f,) = [f for f in plan.findings if f.code == "MIG-IAM-009" and "region" in f.message]
    assert "terraform.tfvars:1" in f.message
    (c,) = [c for c in plan.changes if c.path.endswith(".json")]
    assert '"aws:RequestTag/topology.kubernetes.io/region": "eu-west-1"' in c.new


def test_an_old_script_beside_served_objects_is_a_leftover_not_the_standing(tmp_path):
    """A getting-started script's v1alpha5 Provisioner beside v1 NodePools and chart 1.2: a leftover (MIG-STAND-002),
    never a reason to plan the root from v1alpha5."""
    (tmp_path / "nodepool.yaml").write_text(V1_NODEPOOL)
    (tmp_path / "main.tf").write_text(HELM_ONLY.format(version="1.2.0"))
    (tmp_path / "step11.sh").write_text("cat <<EOF | kubectl apply -f -\napiVersion: karpenter.sh/v1alpha5\n"
                                        "kind: Provisioner\nmetadata:\n  name: default\nEOF\n")
    plan = make_plan(tmp_path)
    assert plan.roots[0].era == "v1" and plan.roots[0].hop_from == "v1"
    assert [f.path for f in plan.findings if f.code == "MIG-STAND-002"] == ["step11.sh"]
    assert not [f for f in plan.findings if f.code in ("MIG-SRC-019", "MIG-STAND-001")]


def test_objects_older_than_a_stated_chart_are_converted_not_stopped(tmp_path):
    beta = V1_NODEPOOL.replace("karpenter.sh/v1\n", "karpenter.sh/v1beta1\n").replace(
        "        group: karpenter.k8s.aws\n        kind: EC2NodeClass\n", "")
    (tmp_path / "nodepool.yaml").write_text(beta)
    plan = make_plan(tmp_path, options=Options(chart_version="1.2.0"))       # serves v1 only: the objects are behind
    assert not [f for f in plan.findings if f.code == "MIG-STAND-004"]
    assert [f.code for f in plan.findings if f.code == "MIG-STAND-001"] == ["MIG-STAND-001"]


def test_a_local_karpenter_modules_outputs_are_not_read_as_the_registry_modules(tmp_path):
    """The node role of an instance profile a local ./modules/karpenter outputs is not the registry module's
    `role_name` output (which the local module may not have): it is followed in the module's own code or said."""
    (tmp_path / "modules" / "karpenter").mkdir(parents=True)
    (tmp_path / "modules" / "karpenter" / "main.tf").write_text(
        'resource "aws_iam_instance_profile" "nodes" {\n  name = "karpenter-nodes"\n  role = "KarpenterNodeRole-x"\n}\n\n'
        'output "instance_profile_name" {\n  value = aws_iam_instance_profile.nodes.name\n}\n')
    (tmp_path / "main.tf").write_text(
        'module "karpenter" {\n  source = "./modules/karpenter"\n}\n\n'
        'resource "helm_release" "karpenter" {\n  name    = "karpenter"\n  chart   = "karpenter"\n  version = "v0.31.4"\n\n'
        '  set {\n    name  = "settings.aws.defaultInstanceProfile"\n    value = module.karpenter.instance_profile_name\n  }\n}\n\n'
        'resource "kubectl_manifest" "node_template" {\n  yaml_body = <<-YAML\n    apiVersion: karpenter.k8s.aws/v1alpha1\n'
        '    kind: AWSNodeTemplate\n    metadata:\n      name: default\n    spec:\n      subnetSelector:\n'
        '        karpenter.sh/discovery: x\n      securityGroupSelector:\n        karpenter.sh/discovery: x\n  YAML\n}\n')
    plan = make_plan(tmp_path, to="v1beta1")
    assert not any("module.karpenter.role_name" in c.new for c in plan.changes if c.new)


ADDONS_MODULE = '''variable "addons" {
  type = any
}

resource "helm_release" "addon" {
  for_each   = var.addons
  name       = each.key
  repository = lookup(each.value, "repository", null)
  chart      = lookup(each.value, "chart", each.key)
  version    = lookup(each.value, "chart_version", null)
  namespace  = lookup(each.value, "namespace", "kube-system")
  values     = [lookup(each.value, "values", "")]
}
'''

ADDONS_CALL = '''module "addons" {
  source = "../modules/addons"
  addons = {
    karpenter = {
      repository    = "oci://public.ecr.aws/karpenter"
      chart         = "karpenter"
      chart_version = "0.37.0"
      namespace     = "karpenter"
      values        = <<-EOT
        settings:
          aws:
            enablePodENI: true
          clusterName: prod
      EOT
    }
    metrics-server = {
      chart         = "metrics-server"
      chart_version = "3.12.1"
    }
  }
}
'''


def test_a_chart_version_and_values_in_the_callers_add_ons_item_are_read_and_moved(tmp_path):
    """`version = lookup(each.value, "chart_version", null)` over `for_each = var.addons` that the one call of the
    module gives: the Karpenter item's chart_version and values are where they are written (issue 55, a false stop)."""
    (tmp_path / "modules" / "addons").mkdir(parents=True)
    (tmp_path / "modules" / "addons" / "main.tf").write_text(ADDONS_MODULE)
    (tmp_path / "live").mkdir()
    (tmp_path / "live" / "main.tf").write_text(ADDONS_CALL)
    plan = make_plan(tmp_path)
    assert plan.roots[0].chart == "0.37.0"
    assert not [f for f in plan.findings if f.severity == "error" or f.code == "MIG-HELM-001"]
    (c,) = [c for c in plan.changes if c.path == "live/main.tf"]
    assert 'chart_version = "0.37.8"' in c.new and "enablePodENI" not in c.new
    assert '"3.12.1"' in c.new and "clusterName: prod" in c.new       # the other add-on and the kept value stay
    assert not [c for c in plan.changes if c.path.startswith("modules/")]


def test_a_vendored_charts_own_values_give_the_instance_profile_and_are_named_for_the_new_folder(tmp_path):
    """A chart installed from a folder of the repository (`${path.module}/helm_karpenter_chart`, named by its
    Chart.yaml) whose values.yaml sets the instance profile: the node role is read there, and replacing the folder
    says what the team's values.yaml set (issue 55, a false stop)."""
    (tmp_path / "helm_karpenter_chart").mkdir()
    (tmp_path / "helm_karpenter_chart" / "Chart.yaml").write_text("apiVersion: v2\nname: karpenter\nversion: 0.31.4\n")
    (tmp_path / "helm_karpenter_chart" / "values.yaml").write_text(
        "settings:\n  aws:\n    clusterName: demo\n    defaultInstanceProfile: KarpenterNodeInstanceProfile-demo\n")
    (tmp_path / "main.tf").write_text(
        'resource "helm_release" "karpenter" {\n  name  = "karpenter"\n  chart = "${path.module}/helm_karpenter_chart"\n}\n\n'
        'resource "kubectl_manifest" "node_template" {\n  yaml_body = <<-YAML\n    apiVersion: karpenter.k8s.aws/v1alpha1\n'
        '    kind: AWSNodeTemplate\n    metadata:\n      name: default\n    spec:\n      subnetSelector:\n'
        '        karpenter.sh/discovery: demo\n      securityGroupSelector:\n        karpenter.sh/discovery: demo\n  YAML\n}\n')
    plan = make_plan(tmp_path)
    assert plan.roots[0].chart == "0.31.4"
    assert not [f for f in plan.findings if f.code == "MIG-NC-011"]
    (f,) = [f for f in plan.findings if f.code == "MIG-HELM-026"]
    assert "mv karpenter helm_karpenter_chart" in f.manual_step
    assert "settings.aws.defaultInstanceProfile" in f.manual_step
    assert not [c for c in plan.changes if c.path.startswith("helm_karpenter_chart/")]


def test_a_karpenter_values_file_beside_the_manifests_gives_the_instance_profile(tmp_path):
    (tmp_path / "karpenter").mkdir()
    (tmp_path / "karpenter" / "values.yaml").write_text(
        "settings:\n  aws:\n    clusterName: demo\n    defaultInstanceProfile: KarpenterNodeInstanceProfile-demo\n")
    (tmp_path / "karpenter" / "nodes.yaml").write_text(
        "apiVersion: karpenter.k8s.aws/v1alpha1\nkind: AWSNodeTemplate\nmetadata:\n  name: default\nspec:\n"
        "  subnetSelector:\n    karpenter.sh/discovery: demo\n  securityGroupSelector:\n    karpenter.sh/discovery: demo\n")
    plan = make_plan(tmp_path)
    assert not [f for f in plan.findings if f.code == "MIG-NC-011"]
    (c,) = [c for c in plan.changes if c.action == "create"]
    assert "KarpenterNodeInstanceProfile-demo" in c.new
    assert not [c for c in plan.changes if c.path == "karpenter/values.yaml"]      # no installer says whose it is


HELMFILE = '''environments:
  dev:
    values:
      - environments/dev.yaml
---
releases:
  - name: karpenter
    namespace: karpenter
    chart: oci://public.ecr.aws/karpenter/karpenter
    version: 1.3.3
    values:
      - values/karpenter.yaml.gotmpl
'''


def test_a_helmfile_gotmpl_values_file_is_read_as_a_template(tmp_path):
    """settings.clusterName: {{ .Values.clusterName }} in a .gotmpl values file is set (issue 55, a false stop)."""
    (tmp_path / "helmfile.yaml").write_text(HELMFILE)
    (tmp_path / "environments").mkdir()
    (tmp_path / "environments" / "dev.yaml").write_text("clusterName: dev\n")
    (tmp_path / "values").mkdir()
    (tmp_path / "values" / "karpenter.yaml.gotmpl").write_text(
        "settings:\n  clusterName: {{ .Values.clusterName }}\n  interruptionQueue: {{ .Values.clusterName }}\n")
    plan = make_plan(tmp_path)
    assert not [f for f in plan.findings if f.severity == "error"]
    assert plan.hop_to == "1.14.1"
    assert "version: 1.14.1" in next(c.new for c in plan.changes if c.path == "helmfile.yaml")


def test_values_are_not_renamed_for_a_chart_whose_version_cannot_move(tmp_path):
    """A chart version set outside the repository (or in a file that could not be read): the old chart would read
    renamed values as unknown keys, so none is written (MIG-HELM-036) and the reason names the unread file."""
    (tmp_path / "main.tf").write_text(
        'variable "karpenter_version" {}\n\nresource "helm_release" "karpenter" {\n  name    = "karpenter"\n'
        '  chart   = "karpenter"\n  version = var.karpenter_version\n\n  set {\n    name  = "clusterName"\n'
        '    value = "demo"\n  }\n}\n\n'
        'resource "kubectl_manifest" "p" {\n  yaml_body = <<-YAML\n    apiVersion: karpenter.sh/v1alpha5\n'
        '    kind: Provisioner\n    metadata:\n      name: default\n    spec:\n      providerRef:\n        name: default\n  YAML\n}\n')
    (tmp_path / "versions.tf").symlink_to(tmp_path / "missing.tf")
    plan = make_plan(tmp_path)
    (f,) = [f for f in plan.findings if f.code == "MIG-HELM-006"]
    assert "versions.tf could not be read" in f.message
    assert [f.code for f in plan.findings if f.code == "MIG-HELM-036"] == ["MIG-HELM-036"]
    assert not any('"settings.clusterName"' in (c.new or "") for c in plan.changes)


def test_an_unscoped_official_statement_is_added_where_the_region_is_not_stated(tmp_path):
    """A hand-made controller policy (aws-cli JSON, every read on "*", no region anywhere: aleck31/eks-karpenter-deployment)
    lacking iam:ListInstanceProfiles and 1.x's regional reads: the statement the official policy scopes by nothing is
    added; only the region-scoped one is held (MIG-IAM-004 used to hold both)."""
    root = tmp_path / "r"
    (root / "karpenter").mkdir(parents=True)
    reads = ["ec2:CreateFleet", "ec2:CreateLaunchTemplate", "ec2:CreateTags", "ec2:DescribeAvailabilityZones",
             "ec2:DescribeImages", "ec2:DescribeInstances", "ec2:DescribeInstanceTypeOfferings",
             "ec2:DescribeInstanceTypes", "ec2:DescribeLaunchTemplates", "ec2:DescribeSecurityGroups",
             "ec2:DescribeSpotPriceHistory", "ec2:DescribeSubnets", "ec2:DeleteLaunchTemplate", "ec2:RunInstances",
             "ec2:TerminateInstances"]
    policy = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": reads, "Resource": "*"},
        {"Effect": "Allow", "Action": ["pricing:GetProducts"], "Resource": "*"},
        {"Effect": "Allow", "Action": ["iam:PassRole"], "Resource": "arn:aws:iam::*:role/KarpenterNodeRole-*"},
        {"Effect": "Allow", "Action": ["eks:DescribeCluster"], "Resource": "arn:aws:eks:*:*:cluster/*"},
        {"Effect": "Allow", "Action": ["iam:CreateInstanceProfile", "iam:TagInstanceProfile", "iam:GetInstanceProfile",
                                       "iam:AddRoleToInstanceProfile", "iam:RemoveRoleFromInstanceProfile",
                                       "iam:DeleteInstanceProfile"], "Resource": "*"},
        {"Effect": "Allow", "Action": ["ssm:GetParameter"], "Resource": "arn:aws:ssm:*::parameter/aws/service/*"}]}
    text = json.dumps(policy, indent=4)
    (root / "karpenter" / "karpenter-policy.json").write_text(text)
    (root / "karpenter" / "nodepool.yaml").write_text(
        "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata:\n  name: default\nspec:\n  template:\n    spec:\n"
        "      nodeClassRef:\n        group: karpenter.k8s.aws\n        kind: EC2NodeClass\n        name: default\n"
        "      requirements:\n        - key: kubernetes.io/arch\n          operator: In\n          values: [\"amd64\"]\n")
    plan = make_plan(root)
    held = [f for f in plan.findings if f.code == "MIG-IAM-004"]
    assert len(held) == 1 and "AllowRegionalReadActions" in held[0].message
    assert "AllowUnscopedInstanceProfileListAction" not in held[0].message
    (change,) = [c for c in plan.changes if c.path == "karpenter/karpenter-policy.json"]
    new = json.loads(change.new)
    added = [s for s in new["Statement"] if s.get("Sid") == "AllowUnscopedInstanceProfileListAction"]
    assert added == [{"Effect": "Allow", "Action": "iam:ListInstanceProfiles", "Resource": "*",
                      "Sid": "AllowUnscopedInstanceProfileListAction"}]
    assert new["Statement"][:len(policy["Statement"])] == policy["Statement"]       # the rest untouched
    assert change.new.startswith(text[:text.index("pricing")])                      # bytes before it too


def test_a_root_at_the_target_with_something_left_to_say_plans_no_phase(tmp_path):
    """Walks to latest ended on "v1 -> 1.14.1, phase upgrade" with nothing to write and steps to upgrade the CRDs and
    the controller to the version they run, whenever the 1.x hop still had something to say (a statement held for its
    region, a queue ARN it cannot write) or no CRD release was in the files. At the target with nothing to write, a
    root plans no phase: what is left is in its findings."""
    root = tmp_path / "r"
    (root / "karpenter").mkdir(parents=True)
    (root / "main.tf").write_text(
        'resource "helm_release" "karpenter" {\n  name       = "karpenter"\n  namespace  = "kube-system"\n'
        '  repository = "oci://public.ecr.aws/karpenter"\n  chart      = "karpenter"\n  version    = "1.14.1"\n}\n')
    policy = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": ["ec2:CreateFleet", "ec2:DescribeImages", "ec2:RunInstances"], "Resource": "*"},
        {"Effect": "Allow", "Action": ["iam:PassRole"], "Resource": "arn:aws:iam::*:role/KarpenterNodeRole-*"}]}
    (root / "karpenter" / "policy.json").write_text(json.dumps(policy, indent=2) + "\n")
    (root / "karpenter" / "nodepool.yaml").write_text(
        "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata:\n  name: default\nspec:\n  template:\n    spec:\n"
        "      nodeClassRef:\n        group: karpenter.k8s.aws\n        kind: EC2NodeClass\n        name: default\n"
        "      requirements:\n        - key: kubernetes.io/arch\n          operator: In\n          values: [\"amd64\"]\n")
    first = make_plan(root)
    assert first.changes                             # the statement that needs no region is added
    apply_changes(root, first.changes)
    plan = make_plan(root)
    assert plan.changes == [] and plan.steps == []
    (r,) = plan.roots
    assert not r.phase and r.hop is None and r.next == "nothing: already on 1.14.1 (see the findings)", r.next
    # the statements held for the region are ones the chart it runs uses too: said, not a stop (MIG-V1X-IAM-006)
    assert any(f.code == "MIG-V1X-IAM-006" and f.severity == "warning" for f in plan.findings)
    assert not [f for f in plan.findings if f.code == "MIG-IAM-004"]
    (done,) = [f for f in plan.findings if f.code == "MIG-HOP-001"]
    assert "no release or URL in these files installs its CRDs" in done.message


AUTO_MODE_CLUSTER_TAGS = '''resource "aws_iam_policy" "custom" {
  name_prefix = "demo-cluster-"

  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [
      {
        Sid    = "Compute"
        Effect = "Allow"
        Action = [
          "ec2:RunInstances",
          "ec2:CreateLaunchTemplate",
          "ec2:CreateFleet"
        ]
        Resource = "*"
        Condition = {
          StringEquals = {
            "aws:RequestTag/eks:eks-cluster-name" = "$${aws:PrincipalTag/eks:eks-cluster-name}"
          }
          StringLike = {
            "aws:RequestTag/eks:kubernetes-node-class-name" = "*"
            "aws:RequestTag/eks:kubernetes-node-pool-name"  = "*"
          }
        }
      }
    ]
  })
}
'''


def test_eks_auto_modes_cluster_tag_policy_is_not_taken_for_the_controllers(tmp_path):
    """minasaeedbasta/terraform-eks-karpenter: the cluster role's Auto Mode custom-tag policy (ec2:RunInstances,
    CreateLaunchTemplate, CreateFleet scoped by tags only Auto Mode sets) was read as Karpenter's controller policy,
    and the 1.x hop added every official controller statement to it: the cluster role would have got the controller's
    permissions (the write was held only because the generated HCL did not parse)."""
    root = tmp_path / "r"
    root.mkdir()
    (root / "cluster.tf").write_text(AUTO_MODE_CLUSTER_TAGS)
    (root / "karpenter.tf").write_text(
        'resource "helm_release" "karpenter" {\n  name       = "karpenter"\n  namespace  = "kube-system"\n'
        '  repository = "oci://public.ecr.aws/karpenter"\n  chart      = "karpenter"\n  version    = "1.8.1"\n}\n')
    plan = make_plan(root)
    assert not [c for c in plan.changes if c.path == "cluster.tf"]
    assert not [f for f in plan.findings if f.path == "cluster.tf" and f.code.startswith(("MIG-IAM", "MIG-V1X-IAM"))]
    assert not [f for f in plan.findings if f.code == "MIG-EDIT-002"]


def test_a_missing_pass_role_statement_needs_the_node_roles_arn(tmp_path):
    """The official AllowPassingInstanceRole is scoped to `${KarpenterNodeRole.Arn}`, a CloudFormation reference
    migrator has no value for: it is held (MIG-IAM-004), never written as that text (in HCL an interpolation of
    nothing, in JSON a resource IAM refuses)."""
    root = tmp_path / "r"
    (root / "karpenter").mkdir(parents=True)
    (root / "main.tf").write_text(
        'provider "aws" {\n  region = "eu-west-1"\n}\n\nresource "helm_release" "karpenter" {\n'
        '  name       = "karpenter"\n  namespace  = "kube-system"\n  repository = "oci://public.ecr.aws/karpenter"\n'
        '  chart      = "karpenter"\n  version    = "1.8.1"\n\n  set {\n    name  = "settings.clusterName"\n'
        '    value = "demo"\n  }\n}\n')
    policy = {"Version": "2012-10-17", "Statement": [
        {"Sid": "Karpenter", "Effect": "Allow", "Resource": "*",
         "Action": ["ec2:CreateFleet", "ec2:CreateLaunchTemplate", "ec2:RunInstances", "ec2:TerminateInstances"]}]}
    (root / "karpenter" / "controller-policy.json").write_text(json.dumps(policy, indent=2) + "\n")
    plan = make_plan(root)
    for c in plan.changes:
        assert "KarpenterNodeRole" not in (c.new or ""), c.path
    held = [f for f in plan.findings if f.code == "MIG-IAM-004" and "AllowPassingInstanceRole" in f.message]
    assert held and "KarpenterNodeRole.Arn" in held[0].message
