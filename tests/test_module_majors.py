"""terraform-aws-modules karpenter module across its majors: every rename against the module's own input and output
names per version (knowledge/karpenter_module.yaml), the moves on real calls, the access entry decision, and the
walk of a v19 root to v21 and Karpenter 1.14 with no error and nothing left that the target module lacks."""
from __future__ import annotations

import re

import pytest

from migrator import knowledge, modmajor
from migrator.apply import apply_changes
from migrator.inventory import Repo
from migrator.options import Options
from migrator.plan import make_plan
from migrator.sources import hcl as hclsrc

from .conftest import FIXTURES

K = knowledge.load("karpenter_module")


def names(major: int, what: str) -> set[str]:
    (version,) = [v for v in K["versions"] if v.startswith(f"{major}.")]
    return set(K["versions"][version][what])


@pytest.mark.parametrize("row", K["majors"], ids=lambda r: f"v{r['from']}-v{r['to']}")
def test_every_move_maps_old_names_to_names_the_target_version_has(row):
    old_in, new_in = names(row["from"], "inputs"), names(row["to"], "inputs")
    for old, new in row["inputs"].items():
        assert old in old_in, f"{old} is not a v{row['from']} input"
        assert set(new) <= new_in, f"{new} not all v{row['to']} inputs"
    for old in row["removed"]:
        assert old in old_in and old not in new_in, old
    for old, new in row["outputs"].items():
        assert old in names(row["from"], "outputs") and new in names(row["to"], "outputs"), (old, new)
    for p in row["pins"]:
        assert p["input"] in new_in, p
    for key in ("keep_irsa", "instance_profile", "access_entry"):
        if key in row:
            assert row[key]["input"] in new_in, key
    ident = row.get("identity")
    if ident:
        for name in (ident["association"], ident["namespace"]["input"], ident["service_account"]["input"],
                     ident["trust_input"]):
            assert name in new_in, name
    # nothing falls through: every old input is renamed, removed, or exists unchanged in the target
    for old in old_in:
        assert old in row["inputs"] or old in row["removed"] or old in new_in, f"v{row['from']} {old} unhandled"


def test_inputs_the_hops_add_exist_where_they_add_them():
    v1 = knowledge.load("iam")["module_v1"]
    assert v1["input"] in names(20, "inputs") and v1["input"] not in names(21, "inputs")
    assert set(v1["irsa_inputs"]) <= names(20, "inputs")


def _call(major: int, body: str) -> str:
    return (f'module "karpenter" {{\n  source  = "terraform-aws-modules/eks/aws//modules/karpenter"\n'
            f'  version = "~> {major}.0"\n\n{body}}}\n')


def _inputs_after(tmp_path, text: str, to: str, opts=Options()) -> set[str]:
    (tmp_path / "main.tf").write_text(text)
    plan = make_plan(tmp_path, to=to, options=opts)
    apply_changes(plan.root, plan.changes)
    f = hclsrc.parse((tmp_path / "main.tf").read_text())
    (b,) = [b for b in f.blocks if b.type == "module"]
    return set(b.attributes) - {"source", "version"}


def test_a_v19_call_with_every_input_comes_out_with_v20_names_only(tmp_path):
    """One mapping pass: v19's node-role iam_role_* land on node_iam_role_*, the controller's irsa_* on iam_role_*."""
    skip = {"create", "tags"}
    body = "".join(f"  {n} = var.{n}\n" for n in sorted(names(19, "inputs") - skip))
    (tmp_path / "np.yaml").write_text("apiVersion: karpenter.sh/v1beta1\nkind: NodePool\nmetadata:\n  name: a\n"
                                      "spec:\n  template:\n    spec:\n      nodeClassRef:\n        name: a\n")
    got = _inputs_after(tmp_path, _call(19, body), "v1")
    assert got <= names(20, "inputs"), got - names(20, "inputs")
    text = (tmp_path / "main.tf").read_text()
    assert re.search(r"\n  node_iam_role_name\s+= var\.iam_role_name\n", text)
    assert re.search(r"\n  iam_role_name\s+= var\.irsa_name", text)
    assert "enable_v1_permissions" in got


@pytest.mark.parametrize("identity", ["irsa", "pod-identity"])
def test_a_v20_call_comes_out_with_v21_names_only(tmp_path, identity):
    body = "".join(f"  {n} = var.{n}\n" for n in ("cluster_name", "enable_v1_permissions", "enable_irsa",
                                                   "irsa_oidc_provider_arn", "irsa_namespace_service_accounts",
                                                   "enable_pod_identity", "node_iam_role_name"))
    text = _call(20, body).replace('"~> 20.0"', '"20.37.2"') + (
        'resource "helm_release" "karpenter" {\n  name    = "karpenter"\n  chart   = "karpenter"\n'
        '  version = "1.2.3"\n}\n')
    (tmp_path / "nc.yaml").write_text("apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nmetadata:\n  name: a\n"
                                      "spec:\n  role: r\n  amiSelectorTerms:\n    - alias: al2023@latest\n")
    got = _inputs_after(tmp_path, text, "latest", Options(identity=identity))
    assert got <= names(21, "inputs"), got - names(21, "inputs")
    out = (tmp_path / "main.tf").read_text()
    assert '"21.19.0"' in out
    if identity == "irsa":
        assert "create_pod_identity_association" in got and "iam_role_source_assume_policy_documents" in got
        assert 'data "aws_iam_policy_document" "karpenter_irsa"' in out and "var.irsa_oidc_provider_arn" in out
    else:
        assert "iam_role_source_assume_policy_documents" not in got and "irsa" not in out


def test_v21_statement_keys_are_renamed_inside_iam_policy_statements(tmp_path):
    body = ('  cluster_name = "c"\n  iam_policy_statements = [{\n    sid     = "X"\n    actions = ["iam:ListInstanceProfiles"]\n'
            '    conditions = [{ test = "StringEquals", variable = "aws:RequestedRegion", values = ["eu-west-1"] }]\n'
            '  }]\n')
    text = _call(20, body).replace('"~> 20.0"', '"20.37.2"') + \
        'resource "helm_release" "karpenter" {\n  chart   = "karpenter"\n  version = "1.2.3"\n}\n'
    _inputs_after(tmp_path, text, "latest", Options(identity="pod-identity"))
    out = (tmp_path / "main.tf").read_text()
    assert "    condition = [{" in out and "conditions" not in out


@pytest.mark.parametrize("current, new, want", [
    ("19.21.0", "20.37.2", "20.37.2"), ("= 19.21.0", "20.37.2", "= 20.37.2"), ("~> 19.21", "20.37.2", "~> 20.37"),
    ("~> 19.21.0", "20.37.2", "~> 20.37.2"), (">= 20.24, < 21.0", "21.19.0", ">= 21.19, < 22.0"),
    (">= 20.0", "21.19.0", ">= 21.19")])
def test_the_new_version_is_pinned_as_the_call_pins_today(current, new, want):
    assert modmajor.repin(current, new) == want


EKS = 'module "eks" {{\n  source  = "terraform-aws-modules/eks/aws"\n  version = "{v}"\n{body}}}\n'


@pytest.mark.parametrize("extra, want", [
    (EKS.format(v="~> 19.21", body="  aws_auth_roles = [{ rolearn = module.karpenter.role_arn }]\n"), False),
    (EKS.format(v="~> 19.21", body=""), False),
    (EKS.format(v="~> 20.8", body='  authentication_mode = "API_AND_CONFIG_MAP"\n'), True),
    (EKS.format(v="~> 20.8", body='  authentication_mode = "CONFIG_MAP"\n'), False),
    ('resource "aws_eks_access_entry" "n" {\n  principal_arn = module.karpenter.node_iam_role_arn\n}\n', False),
    ("", None)])
def test_the_access_entry_is_decided_from_how_the_node_role_joins_today(tmp_path, extra, want):
    (tmp_path / "main.tf").write_text(_call(19, '  cluster_name = "c"\n') + extra)
    repo = Repo(tmp_path)
    ((p, b),) = [x for x in repo.blocks("module") if x[1].labels == ["karpenter"]]
    value, why = modmajor.access_entry(repo, p, b)
    assert value is want and why


def test_a_v19_root_walks_to_v21_and_1_14_with_no_error_and_nothing_the_target_lacks(tmp_path):
    import shutil
    root = tmp_path / "r"
    shutil.copytree(FIXTURES / "module-v19-to-v1" / "input", root)
    for _ in range(8):
        plan = make_plan(root, to="latest")
        assert not [f for f in plan.findings if f.severity == "error"], [f.message for f in plan.findings]
        if not plan.changes:
            break
        apply_changes(plan.root, plan.changes)
    text = (root / "main.tf").read_text()
    f = hclsrc.parse(text)
    (b,) = [b for b in f.blocks if b.type == "module" and b.labels == ["karpenter"]]
    assert set(b.attributes) - {"source", "version"} <= names(21, "inputs")
    gone = set(names(19, "outputs")) - set(names(21, "outputs"))
    assert not re.search(r"module\.karpenter\.(" + "|".join(gone) + r")\b", text)
    assert '"1.14.1"' in text and '"~> 21.19"' in text
    # names pinned as v19 created them: the controller role and policy are not replaced
    assert 'iam_role_name          = "KarpenterIRSA-${module.eks.cluster_name}"' in text
    assert "create_access_entry    = false" in text          # the node role is in aws-auth


def test_identity_comes_from_the_flag_or_the_configuration_and_is_checked(tmp_path):
    from typer.testing import CliRunner

    from migrator.cli import app
    import shutil
    root = tmp_path / "r"
    shutil.copytree(FIXTURES / "module-v20-to-v21-irsa" / "input", root)
    runner = CliRunner()
    bad = runner.invoke(app, ["plan", str(root), "--identity", "oidc"])
    assert bad.exit_code == 1 and "identity must be one of" in bad.output
    (root / ".migrator.yaml").write_text("identity: pod-identity\n")
    ok = runner.invoke(app, ["plan", str(root), "--format", "json"])
    assert "create_pod_identity_association = true" in ok.output
    flag = runner.invoke(app, ["plan", str(root), "--format", "json", "--identity", "irsa"])
    assert "create_pod_identity_association         = false" in flag.output


def test_eks_blueprints_addons_is_a_chart_install_with_its_default_version_and_never_silent(tree):
    from migrator.inventory import scan_charts
    from migrator.path import chart_version
    root = tree("blueprints-addons")
    charts = scan_charts(Repo(root))
    (ci,) = [c for c in charts if c.kind == "blueprints"]
    assert chart_version(Repo(root), charts) == "0.37.0"            # ~> 1.16 installs 1.24.x: chart 0.37.0
    plan = make_plan(root, to="latest")
    codes = {f.code for f in plan.findings}
    assert {"MIG-V1-MOD-007", "MIG-HELM-020"} <= codes and "MIG-V1X-HELM-001" not in codes
    (c,) = [c for c in plan.changes if c.path == "main.tf"]
    assert 'chart_version       = "0.37.8"' in c.new


def test_a_v20_call_that_does_not_create_the_controller_role_gets_no_identity_changes(tmp_path):
    body = "".join(f"  {n} = var.{n}\n" for n in ("cluster_name", "enable_irsa", "irsa_oidc_provider_arn",
                                                   "enable_v1_permissions")) + "  create_iam_role = false\n"
    text = _call(20, body).replace('"~> 20.0"', '"20.37.2"') + \
        'resource "helm_release" "karpenter" {\n  chart   = "karpenter"\n  version = "1.2.3"\n}\n'
    got = _inputs_after(tmp_path, text, "latest")
    out = (tmp_path / "main.tf").read_text()
    assert got <= names(21, "inputs") and "create_pod_identity_association" in got
    assert "aws_iam_policy_document" not in out and "create_pod_identity_association = false" in out


@pytest.mark.parametrize("source, version, want", [
    ('"aws-ia/eks-blueprints-addons/aws"', '"~> 1.0"', "0.37.0"),
    ('"aws-ia/eks-blueprints-addons/aws"', '"1.12.0"', "0.32.1"),
    ('"github.com/aws-ia/terraform-aws-eks-blueprints-addons?ref=v1.2.2"', None, "0.30.0")])
def test_the_blueprints_default_chart_follows_the_add_on_version(tmp_path, source, version, want):
    from migrator.inventory import scan_charts
    from migrator.path import chart_version
    (tmp_path / "main.tf").write_text(f'module "addons" {{\n  source = {source}\n'
                                      + (f"  version = {version}\n" if version else "")
                                      + "  enable_karpenter = true\n}\n")
    repo = Repo(tmp_path)
    assert chart_version(repo, scan_charts(repo)) == want


@pytest.mark.parametrize("to, warned", [("1.5", True), ("1.9", False)])
def test_a_v21_move_for_a_target_below_1_7_is_warned(tree, to, warned):
    plan = make_plan(tree("module-v20-to-v21-irsa"), to=to)
    assert ("MIG-V1X-MOD-007" in {f.code for f in plan.findings}) is warned


def test_pod_identity_matches_a_flux_installed_charts_namespace(tmp_path):
    (tmp_path / "main.tf").write_text(_call(20, '  cluster_name = "c"\n').replace('"~> 20.0"', '"20.37.2"'))
    (tmp_path / "karpenter.yaml").write_text(
        "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: karpenter\n"
        "  namespace: flux-system\nspec:\n  targetNamespace: karpenter\n  chart:\n    spec:\n      chart: karpenter\n"
        "      version: 1.2.3\n      sourceRef:\n        kind: HelmRepository\n        name: karpenter\n")
    plan = make_plan(tmp_path, to="latest", options=Options(identity="pod-identity"))
    (c,) = [c for c in plan.changes if c.path == "main.tf"]
    assert re.search(r'\n  namespace\s+= "karpenter"\n', c.new)
    assert "MIG-V1X-MOD-008" not in {f.code for f in plan.findings}


def test_the_access_entry_is_never_decided_by_another_roots_cluster(tmp_path):
    (tmp_path / "prod").mkdir()
    (tmp_path / "dev").mkdir()
    (tmp_path / "prod" / "main.tf").write_text(_call(19, '  cluster_name = "c"\n'))
    (tmp_path / "dev" / "eks.tf").write_text(EKS.format(v="~> 19.21", body=""))
    repo = Repo(tmp_path)
    ((p, b),) = [x for x in repo.blocks("module") if x[1].labels == ["karpenter"]]
    assert modmajor.access_entry(repo, p, b)[0] is None


def test_the_blueprints_users_own_chart_values_are_reported_not_dropped(tmp_path):
    (tmp_path / "main.tf").write_text(
        'module "addons" {\n  source  = "aws-ia/eks-blueprints-addons/aws"\n  version = "1.16.4"\n\n'
        '  enable_karpenter = true\n  karpenter = {\n    chart_version = "0.37.0"\n'
        '    values        = [yamlencode({ settings = { featureGates = { drift = true } } })]\n  }\n}\n')
    (tmp_path / "np.yaml").write_text("apiVersion: karpenter.sh/v1beta1\nkind: NodePool\nmetadata:\n  name: a\n"
                                      "spec:\n  template:\n    spec:\n      nodeClassRef:\n        name: a\n")
    plan = make_plan(tmp_path, to="v1", phase="controller")
    (f,) = [f for f in plan.findings if f.code == "MIG-HELM-001"]
    assert f.line == 8 and "settings.featureGates.drift" in f.manual_step


@pytest.mark.parametrize("karpenter, want", [
    ("  karpenter = { repository_username = var.u }\n", 'karpenter = { chart_version = "0.37.8", repository_username'),
    ("  karpenter = {}\n", '  karpenter = {\n    chart_version = "0.37.8"\n  }'),
    ("", '  karpenter = {\n    chart_version = "0.37.8"\n  }')])
def test_the_blueprints_chart_version_is_written_in_every_shape_of_the_karpenter_input(tmp_path, karpenter, want):
    (tmp_path / "main.tf").write_text(
        'module "addons" {\n  source  = "aws-ia/eks-blueprints-addons/aws"\n  version = "1.16.4"\n\n'
        f'  enable_karpenter = true\n{karpenter}}}\n')
    (tmp_path / "np.yaml").write_text("apiVersion: karpenter.sh/v1beta1\nkind: NodePool\nmetadata:\n  name: a\n"
                                      "spec:\n  template:\n    spec:\n      nodeClassRef:\n        name: a\n")
    plan = make_plan(tmp_path, to="v1", phase="patch-upgrade")
    (c,) = [c for c in plan.changes if c.path == "main.tf"]
    assert want in c.new
    hclsrc.parse(c.new)


@pytest.mark.parametrize("eks_version, where, told", [
    ('"~> 20.8"', "main.tf", True),                 # terraform init installs v20.37.2: AWS provider < 6.0
    ('"20.37.2"', "main.tf", True),
    ('"20.31.6"', "main.tf", False),                # before the cap: no conflict with the provider v21 needs
    ('"~> 21.0"', "main.tf", False),
    ('"~> 20.8"', "modules/cluster/main.tf", True),  # a module the same root calls: one provider range
])
def test_the_v21_move_says_when_the_eks_module_caps_the_aws_provider(tmp_path, eks_version, where, told):
    """The karpenter module v21 needs the AWS provider 6; terraform-aws-modules/eks v20.37.1 and later v20 releases
    cap it below 6, so a configuration calling both cannot be initialised: the hop says to move the eks module first
    (MIG-V1X-MOD-020), wherever in the configuration that call is."""
    import shutil
    shutil.copytree(FIXTURES / "module-v20-to-v21-pod-identity" / "input", tmp_path, dirs_exist_ok=True)
    main = tmp_path / "main.tf"
    text = main.read_text()
    start = text.index('module "eks" {')
    end = text.index("\n}\n", start) + 3
    eks = text[start:end].replace('version = "~> 21.0"', f"version = {eks_version}")
    assert f"version = {eks_version}" in eks
    if where == "main.tf":
        main.write_text(text[:start] + eks + text[end:])
    else:
        (tmp_path / "modules/cluster").mkdir(parents=True)
        (tmp_path / where).write_text(eks)
        main.write_text(text[:start] + 'module "cluster" {\n  source = "./modules/cluster"\n}\n' + text[end:])
    plan = make_plan(tmp_path, to="latest")
    said = [f for f in plan.findings if f.code == "MIG-V1X-MOD-020"]
    assert [f.path for f in said] == ([where] if told else [])
    assert all(f.severity == "warning" and "module.eks" in f.message and "v21" in f.manual_step for f in said)
    # a plan never contradicts its own finding: the karpenter module is not moved to a release init cannot install
    moved = any('version = "21.' in c.new for c in plan.changes if c.path == "main.tf")
    assert moved is not told


def test_the_v21_move_sets_no_identity_input_the_chart_reads_from_the_call_itself(tmp_path):
    """Chart values that name the service account by the call's own output (`${module.karpenter.service_account}`)
    already match the Pod Identity association: setting `service_account` from that output would make the call read
    itself (a cycle the Terraform check refuses, so nothing was written, MIG-EDIT-006)."""
    import shutil
    shutil.copytree(FIXTURES / "auto-mode-terraform-v20" / "input", tmp_path, dirs_exist_ok=True)
    assert "name: ${module.karpenter.service_account}" in (tmp_path / "karpenter.tf").read_text()
    main = tmp_path / "main.tf"            # the eks module moved to v21 first (MIG-V1X-MOD-020 otherwise holds the move)
    main.write_text(main.read_text().replace('version = "~> 20.24"', 'version = "~> 21.0"'))
    plan = make_plan(tmp_path, to="latest")
    assert not [f for f in plan.findings if f.severity == "error"]
    (new,) = [c.new for c in plan.changes if c.path == "karpenter.tf"]
    call = new[new.index('module "karpenter"'):new.index("\n}\n", new.index('module "karpenter"'))]
    assert "service_account" not in call and "module.karpenter" not in call
    assert "  cluster_name = module.eks.cluster_name\n\n  create_pod_identity_association = true\n" in call


@pytest.mark.parametrize("body, gone, want", [
    # a paragraph that keeps an attribute keeps its blank lines
    ("  a = 1\n\n  x = 2\n  b = 3\n", ["x"], "  a = 1\n\n  b = 3\n"),
    # a whole paragraph removed takes the blank line above it
    ("  a = 1\n\n  x = 2\n  y = 3\n\n  b = 4\n", ["x", "y"], "  a = 1\n\n  b = 4\n"),
    # two whole paragraphs, and a comment above one of them
    ("  a = 1\n\n  x = 2\n\n  # why\n  y = 3\n  z = 4\n\n  b = 5\n", ["x", "y", "z"], "  a = 1\n\n  b = 5\n"),
    # the last paragraph, before the block's end
    ("  a = 1\n\n  x = 2\n", ["x"], "  a = 1\n"),
])
def test_removed_inputs_leave_the_paragraphs_as_terraform_fmt_keeps_them(body, gone, want):
    from migrator.edits import apply_edits
    text = 'module "k" {\n' + body + "}\n"
    (b,) = hclsrc.parse(text).blocks
    edits = modmajor.remove_attributes(text, "main.tf", [b.attributes[n] for n in gone], "t")
    assert apply_edits(text, edits) == 'module "k" {\n' + want + "}\n"


def test_a_chart_past_the_v20_policys_reach_is_held_where_it_runs_never_set_back(tmp_path):
    """awslabs/data-on-eks' shape: the chart already runs 1.6.1 with the karpenter module on v20 (its policy reaches
    1.2.8 with enable_v1_permissions) and an eks module that keeps v21 out: the plan held the chart at 1.2.8 and its
    runbook said to upgrade the controller to 1.2.8, a downgrade."""
    import shutil
    shutil.copytree(FIXTURES / "auto-mode-terraform-v20" / "input", tmp_path, dirs_exist_ok=True)
    k = tmp_path / "karpenter.tf"
    k.write_text(k.read_text().replace('version    = "1.3.3"', 'version    = "1.6.1"')
                 .replace("  cluster_name = module.eks.cluster_name\n",
                          "  cluster_name = module.eks.cluster_name\n  enable_v1_permissions = true\n", 1))
    plan = make_plan(tmp_path, to="latest")
    (said,) = [f for f in plan.findings if f.code == "MIG-V1X-MOD-020"]
    assert "the chart already runs 1.6.1, past that reach: it stays at 1.6.1" in said.message
    assert not any('"1.2.8"' in c.new for c in plan.changes)
    assert not any("1.2.8" in s.title for s in plan.steps)


def test_a_root_held_where_it_already_stands_offers_no_phase(tmp_path):
    """Smana/demo-cloud-native-ref walked to latest: the chart reached 1.2.8, where module.eks v20's provider cap holds
    it (MIG-V1X-MOD-020); the next plan still said "v1 -> 1.2.8, phase upgrade" with nothing to write and steps to
    upgrade the CRDs and the controller to the version they run. It now plans nothing there and says what holds it."""
    import shutil
    from migrator.apply import apply_changes
    shutil.copytree(FIXTURES / "module-v20-to-v21-pod-identity" / "input", tmp_path, dirs_exist_ok=True)
    main = tmp_path / "main.tf"
    text = main.read_text()
    start = text.index('module "eks" {')
    end = text.index("\n}\n", start) + 3
    main.write_text(text[:start] + text[start:end].replace('version = "~> 21.0"', 'version = "20.37.2"') + text[end:])
    first = make_plan(tmp_path, to="latest")
    assert any(f.code == "MIG-V1X-MOD-020" for f in first.findings)
    apply_changes(tmp_path, first.changes)
    plan = make_plan(tmp_path, to="latest")
    assert plan.changes == [] and plan.steps == []
    (r,) = plan.roots
    assert not r.phase and r.hop is None and r.next.startswith(f"held at {r.chart}: on to "), r.next
    assert any(f.code == "MIG-V1X-MOD-020" for f in plan.findings)
