"""Where a root stands, from evidence (migrator/standing.py): the chart decides, objects behind it are converted
without steps back, leftovers never pull a root back, no Karpenter means no plan (fixtures/standing-evidence)."""
from __future__ import annotations

import json
import re
import shutil

import pytest
from typer.testing import CliRunner

from migrator import standing
from migrator import path as route
from migrator.apply import apply_changes
from migrator.cli import app
from migrator.plan import make_plan

from .conftest import FIXTURES, fixture_options

EVIDENCE = FIXTURES / "standing-evidence" / "input"
SHAPES = FIXTURES / "facts-in-shapes" / "input"
VERSION = re.compile(r"(?:Karpenter|karpenter-crd|karpenter|chart)\s+v?(\d+\.\d+\.\d+)")


def _roots(plan):
    return {r.path: r for r in plan.roots}


def test_objects_behind_their_chart_get_their_conversion_and_nothing_else():
    r = _roots(make_plan(EVIDENCE, to="latest"))["bumped-beta"]
    assert (r.era, r.chart, r.hop_from, r.hop_to, r.phase) == ("v1beta1", "1.13.0", "v1beta1", "v1", "manifests")
    assert [p["name"] for p in r.phases] == ["manifests"]
    assert {s.kind for s in r.steps} <= {"manifests", "workloads"}
    assert not any("1.0.14" in s.title or any("1.0.14" in c for c in s.commands) for s in r.steps)
    assert any(f.code == "MIG-STAND-001" for f in r.findings)
    assert all(c.rules == ["v1/manifests"] for c in make_plan(EVIDENCE, to="latest").changes
               if c.path.startswith("bumped-beta/"))
    assert r.later == ["v1 → 1.14.1 (chart 1.14.1)"]


def test_leftover_values_never_pull_a_root_back():
    r = _roots(make_plan(EVIDENCE, to="latest"))["bumped-webhook"]
    assert (r.era, r.hop_from, r.phase) == ("v1", "v1", "upgrade")
    plan = make_plan(EVIDENCE, to="latest")
    new = next(c.new for c in plan.changes if c.path == "bumped-webhook/karpenter.tf")
    assert "webhook" not in new and new.count('version    = "1.14.1"') == 2


def test_the_crd_chart_stands_in_for_the_controller():
    r = _roots(make_plan(EVIDENCE, to="latest"))["crd-only"]
    assert (r.chart, r.era, r.phase) == ("0.37.5", "v1beta1", "patch-upgrade")


def test_no_karpenter_no_plan(tmp_path):
    shutil.copytree(EVIDENCE / "no-karpenter", tmp_path / "infra")
    r = CliRunner().invoke(app, ["plan", str(tmp_path / "infra"), "--format", "json", "--detailed-exitcode"])
    assert r.exit_code == 0, r.stdout
    out = json.loads(r.stdout)
    assert out["steps"] == [] and out["changes"] == []
    assert [x["era"] for x in out["roots"]] == ["none"]
    assert any(f["code"] == "MIG-HOP-005" for f in out["findings"])
    md = CliRunner().invoke(app, ["runbook", str(tmp_path / "infra")]).stdout
    assert "- [ ] done" not in md


@pytest.mark.parametrize("files", [
    {"templates/provisioners.j2": "{% for p in provisioners %}\napiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\n"
                                  "metadata:\n  name: {{ p.name }}\n---\n{% endfor %}\n"},
    {"playbooks/karpenter.yml": "- name: Install Karpenter\n  shell: |\n    helm upgrade --install --namespace karpenter \\\n"
                                "      karpenter karpenter/karpenter --version 0.16.3 --wait\n"},
])
def test_karpenter_where_no_reader_looks_is_never_no_karpenter(tmp_path, files):
    """An Ansible setup (suyashg89/aws-eks-karpenter-boilerplate): the chart installed by a playbook's helm command,
    the Provisioners in a Jinja template. Before, the repository read as having no Karpenter (MIG-HOP-005)."""
    infra = tmp_path / "infra"
    shutil.copytree(EVIDENCE / "no-karpenter", infra)
    for name, text in files.items():
        (infra / name).parent.mkdir(parents=True, exist_ok=True)
        (infra / name).write_text(text)
    plan = make_plan(infra)
    assert [r.era for r in plan.roots] == ["unknown"] and not plan.changes
    said = [f for f in plan.findings if f.code == "MIG-HOP-010"]
    assert said and next(iter(files)) in said[0].message
    assert not any(f.code == "MIG-HOP-005" for f in plan.findings)


def test_a_root_past_the_target_is_not_moved_back(tmp_path):
    shutil.copytree(EVIDENCE / "bumped-webhook", tmp_path / "r")
    plan = make_plan(tmp_path / "r", to="1.3")
    assert plan.changes == [] and plan.steps == []
    assert any(f.code == "MIG-HOP-006" for f in plan.findings)
    plan = make_plan(tmp_path / "r", to="v1beta1")
    assert plan.changes == [] and any(f.code == "MIG-HOP-006" for f in plan.findings)


def test_standing_precedence():
    assert standing.of("v1beta1", "1.13.0").behind
    assert standing.of("v1beta1", "1.0.14").era == "v1beta1" and not standing.of("v1beta1", "1.0.14").behind
    assert standing.of("v1", "1.0.14").era == "v1"
    assert standing.of(None, "0.32.10").era == "v1alpha5" and standing.of("v1beta1", "0.32.10").era == "v1beta1"
    assert standing.of("v1alpha5", "0.35.0").behind and standing.of("v1alpha5", "0.35.0").era == "v1alpha5"
    assert standing.of(None, None).era == "v1alpha5" and not standing.of("v1", None).behind
    assert standing.of("v1", "1.5.0").past(route.parse_target("1.3"))
    assert not standing.of("v1", "1.5.0").past(route.parse_target("latest"))


def test_a_bare_root_whose_karpenter_module_is_past_v19_has_finished_the_alpha_hop(tmp_path):
    """Chart 0.32 serves both eras; with no object, the module the v1alpha5 hop's cleanup moved to v20 says that hop is
    done (found walking Smana/flux-karpenter: prepare, cleanup, then prepare again with MIG-MOD-002 on the v20 the
    cleanup had written)."""
    assert standing.of(None, "0.32.10", (20,)).era == "v1beta1"
    assert standing.of(None, "0.32.10", (19,)).era == "v1alpha5"
    assert standing.of(None, "0.32.10", (19, 20)).era == "v1alpha5"
    assert standing.of("v1alpha5", "0.32.10", (20,)).era == "v1alpha5"      # objects decide when there are any
    root = tmp_path / "infra"
    root.mkdir()
    (root / "main.tf").write_text(
        'module "karpenter" {\n  source  = "terraform-aws-modules/eks/aws//modules/karpenter"\n  version = "~> 19.4"\n\n'
        '  cluster_name = "demo"\n}\n\nresource "helm_release" "karpenter" {\n  name       = "karpenter"\n'
        '  namespace  = "karpenter"\n  repository = "oci://public.ecr.aws/karpenter"\n  chart      = "karpenter"\n'
        '  version    = "v0.21.1"\n\n  set {\n    name  = "settings.aws.clusterName"\n    value = "demo"\n  }\n}\n')
    seen = []
    for _ in range(4):
        plan = make_plan(root, to="v1beta1")
        assert not [f for f in plan.findings if f.severity == "error"], [f.message for f in plan.findings]
        seen += [(r.hop_from, r.phase) for r in plan.roots if r.phase and plan.changes]
        if not plan.changes:
            break
        apply_changes(root, plan.changes)
    assert seen == [("v1alpha5", "prepare"), ("v1alpha5", "cleanup")], seen
    text = (root / "main.tf").read_text()
    assert "~> 20." in text and 'iam_role_name          = "KarpenterIRSA-demo"' in text    # the literal, not ${"demo"}


def test_the_plan_refuses_a_phase_that_would_install_a_lower_version(tmp_path, monkeypatch):
    shutil.copytree(EVIDENCE / "bumped-webhook", tmp_path / "r")
    monkeypatch.setattr(standing, "installs", lambda hop, phase, goal: "1.0.14")
    plan = make_plan(tmp_path / "r", to="latest")
    assert plan.changes == [] and plan.steps == []
    assert [f.code for f in plan.findings if f.severity == "error"] == ["MIG-INT-002"]


def test_goes_back():
    onward = {"chart_phases": ["upgrade"], "onward": True}
    assert standing.goes_back(onward, "upgrade", route.Target("v1", "1.3.4"), "1.5.0") == "1.3.4"
    assert standing.goes_back(onward, "upgrade", route.Target("v1", "1.14.1"), "1.5.0") is None
    assert standing.goes_back(onward, "other", route.Target("v1", "1.3.4"), "1.5.0") is None


FIXTURE_NAMES = sorted(p.name for p in FIXTURES.iterdir() if (p / "input").is_dir())


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_no_step_goes_back_a_version(name):
    """In every fixture, at the default target and at latest: no step names a Karpenter version below the chart the
    root runs (its rollback text may)."""
    for to in (None, "latest"):
        plan = make_plan(FIXTURES / name / "input", to=to, options=fixture_options(name))
        assert not any(f.code == "MIG-INT-002" for f in plan.findings)
        for r in plan.roots:
            cur = route.parse_version(r.chart) if r.chart else None
            if cur is None:
                continue
            for s in r.steps:
                for v in VERSION.findall(" ".join([s.title] + s.commands)):
                    assert route.parse_version(v) >= cur, (name, to, r.path, s.title, v)


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_no_internal_placeholder_reaches_a_file_or_an_output(name):
    """Masked expressions (__MIG_n__) never reach a written file, a finding, a step or a runbook."""
    for to in (None, "latest"):
        plan = make_plan(FIXTURES / name / "input", to=to, options=fixture_options(name))
        texts = [c.new or "" for c in plan.changes] + [f.message + f.manual_step for f in plan.findings] + \
            [" ".join([s.title, s.detail, s.rollback] + s.commands + s.verify) for s in plan.steps]
        assert not any("__MIG_" in t for t in texts), name
    for f in (FIXTURES / name).rglob("*"):
        if f.is_file() and "input" not in f.relative_to(FIXTURES / name).parts:
            assert "__MIG_" not in f.read_text(errors="replace"), f


def test_a_change_holding_a_placeholder_is_not_written():
    from migrator.edits import NewFile
    from migrator.inventory import Repo
    from migrator.plan import build_changes
    findings = []
    changes = build_changes(Repo(EVIDENCE), [NewFile("x.yaml", "a: __MIG_0__\n", "test")], findings)
    assert changes == [] and findings[0].code == "MIG-EDIT-002" and "__MIG_0__" in findings[0].message


def test_node_group_names_become_valid_unique_nodepool_names():
    from migrator.rules.cas.convert import pool_names
    assert pool_names(["batch_spot", "Batch-Spot", "general", "x" * 70, "__"]) == {
        "batch_spot": "batch-spot", "Batch-Spot": "batch-spot-2", "general": "general", "x" * 70: "x" * 63,
        "__": "nodegroup"}


INSTALLS = FIXTURES / "evaluated-installs" / "input"


def test_installs_are_evaluated_switches_off_mean_absent():
    plan = make_plan(INSTALLS, to="latest")
    got = {r.path: (r.era, r.chart) for r in plan.roots}
    assert got == {"addons-list": ("v1", "1.4.0"), "chart-var": ("v1beta1", "0.37.5"), "vendored": ("v1beta1", "0.36.2"),
                   "count-default": ("v1", "1.2.1")}       # off only at a default a -var may override: read as on
    said = {(f.code, f.path.split("/")[0]) for f in plan.findings}
    assert {("MIG-SRC-011", "addons-off"), ("MIG-SRC-011", "count-zero"), ("MIG-SRC-012", "iam-only"),
            ("MIG-SRC-028", "count-default")} <= said
    assert not any(c.path.startswith(("addons-off/", "count-zero/", "iam-only/")) for c in plan.changes)
    assert ("MIG-HELM-026", "vendored") in said and not any("MIG-HELM-005" == f.code for f in plan.findings)
    assert not plan.has_errors


def test_an_add_ons_list_item_is_edited_where_it_is_written():
    plan = make_plan(INSTALLS, to="latest")
    change = next(c for c in plan.changes if c.path == "addons-list/main.tf")
    assert change.new.replace('chart_version = "1.14.1"', 'chart_version = "1.4.0"') == change.old
    # no karpenter-crd item in the list: the CRD chart is installed with helm, after the CRDs are handed to it
    ids = [s.id.split(":latest-")[1][3:] for s in plan.steps if s.id.startswith("addons-list:")]
    assert ids.index("crds-adopt") + 1 == ids.index("crds")
    assert any(f.code == "MIG-HELM-021" for f in plan.findings)


def test_without_the_evaluator_nothing_is_guessed(monkeypatch):
    from migrator import evaluate
    monkeypatch.setattr(evaluate, "_installed", lambda: False)
    plan = make_plan(INSTALLS, to="latest")
    charts = {r.path: r.chart for r in plan.roots}
    assert charts["addons-list"] is None and "count-zero" not in charts      # literals read, nothing evaluated: the
    assert ("MIG-SRC-011", "count-zero/main.tf") in {(f.code, f.path) for f in plan.findings}  # tfvars switches it off


def test_leftover_objects_do_not_decide_and_templates_that_render_blocks_do_not_stop():
    plan = make_plan(EVIDENCE, to="latest")
    r = _roots(plan)["leftover-alpha"]
    assert (r.era, r.chart, r.hop_from) == ("v1beta1", "0.37.0", "v1beta1")
    codes = [(f.code, f.severity, f.path) for f in r.findings]
    assert codes.count(("MIG-STAND-002", "warning", "leftover-alpha/provisioner.yaml")) == 2
    # the template's `values:` list is an interpolation at its key's column (a block sequence): read, not said
    assert ("MIG-SRC-013", "warning", "leftover-alpha/nodepool.yaml.tftpl") not in codes
    assert "1 NodePool" in r.objects
    assert not plan.has_errors
    assert not any(c.path == "leftover-alpha/provisioner.yaml" for c in plan.changes)


def test_the_real_repository_list_is_well_formed():
    from ruamel.yaml import YAML
    entries = YAML(typ="safe").load((FIXTURES.parent / "scripts" / "real-repos.yaml").read_text())
    assert len(entries) >= 10
    for e in entries:
        assert re.fullmatch(r"[\w.-]+/[\w.-]+", e["repo"]) and re.fullmatch(r"[0-9a-f]{40}", e["commit"])
        assert e["shape"] and e["shape"] != "TODO" and isinstance(e["roots"], dict)
        for row in e["roots"].values():
            assert len(row) == 2 and (row[0] in ("v1alpha5", "v1beta1", "v1", "cas", "auto-mode", "none", "unknown",
                                                 "unsupported"))
        for said in e.get("said") or []:
            assert re.fullmatch(r"MIG-[A-Z0-9-]+", said["code"]) and said["path"]


OTHER_ROOT = '''provider "aws" {
  region = "eu-west-1"
}

module "eks" {
  source  = "terraform-aws-modules/eks/aws"
  version = "~> 20.0"

  cluster_name    = "other"
  cluster_version = "1.30"

  eks_managed_node_groups = {
    default = {
      instance_types = ["m5.large"]
      min_size       = 1
      max_size       = 3
      desired_size   = 1
    }
  }
}
'''


def test_a_root_never_reads_another_root_module(tmp_path):
    """One folder per example cluster, each with its own provider: the Cluster Autoscaler root plans its own node
    groups only; the other root module is no root of this plan and nothing of it is read or written."""
    shutil.copytree(FIXTURES / "cas-terraform" / "input", tmp_path / "examples" / "with-cas")
    (tmp_path / "examples" / "other").mkdir()
    (tmp_path / "examples" / "other" / "main.tf").write_text(OTHER_ROOT)
    plan = make_plan(tmp_path, to="latest")
    assert [r.path for r in plan.roots] == ["examples/with-cas"]
    assert not any("examples/other" in " ".join([f.path, f.message]) for f in plan.findings)
    assert not any(c.path.startswith("examples/other/") for c in plan.changes)


def _regionless_policy() -> str:
    """The official 0.37 controller policy as a JSON file scoped to cluster `prod` by its tags only: every resource
    "*", no region anywhere."""
    import json
    doc = json.loads((FIXTURES.parent / "migrator" / "knowledge" / "iam" / "0.37.8.json").read_text())["policy"]
    for st in doc["Statement"]:
        st["Resource"] = "*"
        for op, cond in list((st.get("Condition") or {}).items()):
            for k in [k for k in cond if "region" in k.lower() or "Region" in json.dumps(cond[k])]:
                del cond[k]
            if not cond:
                del st["Condition"][op]
        if st.get("Condition") == {}:
            del st["Condition"]
    return json.dumps(doc, indent=2).replace("${ClusterName}", "prod").replace("${AWS::Partition}", "aws") + "\n"


def test_a_replaced_statement_keeps_its_own_resources_when_the_region_is_not_stated(tmp_path):
    (tmp_path / "controller-policy.json").write_text(_regionless_policy())
    shutil.copy(EVIDENCE / "crd-only" / "nodepool.yaml", tmp_path / "nodepool.yaml")
    plan = make_plan(tmp_path, phase="patch-upgrade")
    errors = [f for f in plan.findings if f.severity == "error"]
    # only the statements whose region is in a condition (instance profiles) still need it: said, with --region
    assert {f.code for f in errors} == {"MIG-V1-IAM-003"} and len(errors) == 2
    assert all("region" in f.message for f in errors)
    new = next(c.new for c in plan.changes if c.path == "controller-policy.json")
    assert '"aws:RequestTag/eks:eks-cluster-name": "prod"' in new and "${AWS::Region}" not in new
    from migrator.options import Options
    plan = make_plan(tmp_path, phase="patch-upgrade", options=Options(region="eu-west-1"))
    assert not plan.has_errors


def test_the_cluster_name_a_module_states(tmp_path):
    from migrator.facts import _module_cluster
    from migrator.inventory import Repo
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "main.tf").write_text('data "aws_eks_cluster" "this" {\n  name = var.name\n}\n')
    (tmp_path / "v").mkdir()
    (tmp_path / "v" / "main.tf").write_text('variable "cluster_name" {\n  type = string\n}\n')
    repo = Repo(tmp_path)
    assert _module_cluster(repo, "m").value == "data.aws_eks_cluster.this.name"
    assert _module_cluster(repo, "v").value == "var.cluster_name"


def test_a_version_only_in_tfvars_per_environment(tmp_path):
    """`version = var.karpenter_version` set only in envs/<env>.tfvars (terraform plan -var-file): the earliest
    environment decides where the root stands, and every tfvars moves."""
    shutil.copytree(SHAPES / "tfvars-per-environment", tmp_path / "r")
    plan = make_plan(tmp_path / "r", to="latest")
    assert [(r.path, r.chart) for r in plan.roots] == [("terraform", "1.2.0")]
    changed = {c.path: c.new for c in plan.changes}
    assert changed["envs/prod.tfvars"] == changed["envs/dev.tfvars"] == 'karpenter_version = "1.14.1"\n'
    assert not plan.has_errors


BLUEPRINTS_V4 = '''provider "aws" {
  region = "us-west-2"
}

module "eks_blueprints_kubernetes_addons" {
  source = "github.com/aws-ia/terraform-aws-eks-blueprints//modules/kubernetes-addons?ref=v4.32.1"

  eks_cluster_id = "legacy"

  enable_karpenter = true%s
}
'''


def test_eks_blueprints_v4_kubernetes_addons(tmp_path):
    """The retired v4 add-on: its default chart per tag (data), karpenter_helm_config.version moved for the first hop,
    and a clear stop before a chart its built-in values cannot configure."""
    (tmp_path / "main.tf").write_text(BLUEPRINTS_V4 % "")
    plan = make_plan(tmp_path)
    assert [(r.era, r.chart, r.hop_to) for r in plan.roots] == [("v1alpha5", "0.27.3", "v1beta1")]
    assert 'karpenter_helm_config = {\n    version = "v0.32.10"' in plan.changes[0].new
    (tmp_path / "main.tf").write_text(BLUEPRINTS_V4 % '\n  karpenter_helm_config = {\n    version = "v0.32.10"\n  }')
    plan = make_plan(tmp_path, to="latest")
    assert [f.code for f in plan.findings if f.severity == "error"] == ["MIG-HELM-027"]
    assert not any("karpenter_helm_config" in (c.new or "") for c in plan.changes)


def test_values_from_a_template_file_data_source(tmp_path):
    """`values = [data.template_file.x.rendered]`: the template is read as the chart values (renamed where it is
    written) and its vars stand for what they are given (the instance profile resolves to its role)."""
    shutil.copy(SHAPES / "template-file-values" / "main.tf", tmp_path / "main.tf")
    plan = make_plan(tmp_path)
    new = plan.changes[0].new
    assert "    settings:\n      clusterName: ${cluster_name}\n      aws:" in new
    assert "role: KarpenterNodeRole-shop" in new and "${profile}" not in new.split("YAML", 1)[1]
    assert not plan.has_errors


def test_dynamic_set_over_the_branches_of_a_conditional(tmp_path):
    """`for_each = var.spot ? concat(local.a, local.b) : local.a`: every list a branch may take is read and edited
    where it is written (no false 'cannot read the values')."""
    shutil.copy(SHAPES / "dynamic-set-branches" / "main.tf", tmp_path / "main.tf")
    plan = make_plan(tmp_path)
    assert not any(f.code == "MIG-HELM-001" for f in plan.findings)
    new = plan.changes[0].new
    assert '{ name = "settings.clusterName", value = "shop" }' in new
    assert '{ name = "settings.interruptionQueue", value = "shop" }' in new


def test_a_plain_yaml_node_class_gets_the_literal_the_role_variable_has(tmp_path):
    """The role is known only as `var.node_role` (the instance profile's role) and the EC2NodeClass goes into a plain
    YAML file: the variable's default is the literal (it used to stop with MIG-NC-012)."""
    shutil.copytree(SHAPES / "node-role-variable", tmp_path / "r")
    plan = make_plan(tmp_path / "r")
    assert not plan.has_errors
    new = next(c.new for c in plan.changes if c.path == "karpenter/nodes-v1beta1.yaml")
    assert "role: KarpenterNodeRole-shop" in new


def test_a_node_class_and_the_pools_that_use_it_are_one_root(tmp_path):
    """NodePools in k8s/nodepools/ naming the EC2NodeClass kept in k8s/nodeclasses/: one cluster, one root."""
    shutil.copytree(SHAPES / "split-objects", tmp_path / "r")
    plan = make_plan(tmp_path / "r")
    assert [(r.path, r.objects) for r in plan.roots] == [("k8s", "1 EC2NodeClass, 1 NodePool")]
    assert not plan.has_errors


def test_a_class_name_another_cluster_also_uses_does_not_split_the_root():
    """After the walk, node-role-variable (another root, with its chart) also has an EC2NodeClass `default`: the
    split-objects pools still find theirs."""
    plan = make_plan(FIXTURES / "facts-in-shapes" / "expected-run-1", to="latest")
    assert "split-objects/k8s" in [r.path for r in plan.roots]


def test_a_finding_about_a_templated_key_names_it_as_written(tmp_path):
    """A restricted tag whose key is templated (kubernetes.io/cluster/${CLUSTER_NAME}, antonputra/tutorials lessons/156
    writes it in a kubectl_manifest heredoc) is named as the file writes it, never by an internal placeholder."""
    (tmp_path / "nodes.yaml").write_text(
        "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata:\n  name: default\nspec:\n"
        "  providerRef:\n    name: default\n---\napiVersion: karpenter.k8s.aws/v1alpha1\nkind: AWSNodeTemplate\n"
        "metadata:\n  name: default\nspec:\n  instanceProfile: KarpenterNodeInstanceProfile\n  subnetSelector:\n"
        "    karpenter.sh/discovery: ${CLUSTER_NAME}\n  securityGroupSelector:\n"
        "    karpenter.sh/discovery: ${CLUSTER_NAME}\n  tags:\n    kubernetes.io/cluster/${CLUSTER_NAME}: owned\n")
    plan = make_plan(tmp_path, to="v1beta1")
    (f,) = [f for f in plan.findings if f.code == "MIG-NC-010"]
    assert "kubernetes.io/cluster/${CLUSTER_NAME}" in f.message and "__MIG_" not in f.message


def test_a_chart_move_an_error_holds_back_takes_its_iam_change_with_it(tmp_path):
    """EKS Blueprints v4 kubernetes-addons cannot install Karpenter past 0.32 (MIG-HELM-027, antonputra/tutorials
    lessons/156): the patch-upgrade's IAM change (the karpenter module's v1 permissions) is not written alone, and the
    walk does not go on to v1 objects for a controller that stays on 0.32."""
    (tmp_path / "addons.tf").write_text(
        'module "kubernetes_addons" {\n'
        '  source = "github.com/aws-ia/terraform-aws-eks-blueprints//modules/kubernetes-addons?ref=v4.25.0"\n\n'
        '  eks_cluster_id   = "shop"\n  enable_karpenter = true\n  karpenter_helm_config = {\n'
        '    repository = "oci://public.ecr.aws/karpenter"\n    version    = "v0.32.10"\n  }\n}\n')
    (tmp_path / "karpenter.tf").write_text(
        'module "karpenter" {\n  source  = "terraform-aws-modules/eks/aws//modules/karpenter"\n'
        '  version = "20.37.2"\n\n  cluster_name    = "shop"\n  create_iam_role = false\n}\n')
    (tmp_path / "nodepool.yaml").write_text(
        "apiVersion: karpenter.sh/v1beta1\nkind: NodePool\nmetadata:\n  name: default\nspec:\n  template:\n"
        "    spec:\n      nodeClassRef:\n        name: default\n")
    plan = make_plan(tmp_path, to="latest")
    assert [(r.hop_from, r.phase) for r in plan.roots] == [("v1beta1", "patch-upgrade")]
    assert {"MIG-HELM-027", "MIG-HOP-008"} <= {f.code for f in plan.findings} and not plan.changes


PARTICULE = '''module "addons" {
  source = "github.com/particuleio/terraform-kubernetes-addons.git//modules/aws?ref=%s"

  cluster-name = "demo"

  karpenter = {
    enabled = true%s
  }
}
'''


def test_particuleio_addons_install_the_karpenter_of_their_tag_and_stop_where_their_values_do(tmp_path):
    """particuleio/terraform-kubernetes-addons (the teks stack): `karpenter = { enabled = true }` installs the chart
    of the module's tag (data), and its built-in values are settings.aws.* names no chart after 0.32 reads. The
    hop that chart version puts the root in is not passed over as having nothing to do: it stops on MIG-HELM-027
    (before: planned straight as v1 -> 1.14.1, with no error). With settings.clusterName given in extra_values the
    chart version is pinned in the input object; switched off, it is no install."""
    (tmp_path / "main.tf").write_text(PARTICULE % ("v15.3.0", ""))
    plan = make_plan(tmp_path, to="latest")
    assert [(r.era, r.chart, r.hop_from, r.hop_to) for r in plan.roots] == [("v1beta1", "0.35.0", "v1beta1", "v1")]
    (f,) = [f for f in plan.findings if f.severity == "error"]
    assert f.code == "MIG-HELM-027" and "particuleio/terraform-kubernetes-addons" in f.message and \
        "karpenter.extra_values gives settings.clusterName" in f.message and not plan.changes
    given = '\n    extra_values = <<-EOT\n      settings:\n        clusterName: demo\n      EOT'
    (tmp_path / "main.tf").write_text((PARTICULE % ("v15.3.0", given)).replace("enabled =", "enabled      ="))
    plan = make_plan(tmp_path, to="latest")
    assert not plan.has_errors
    (c,) = plan.changes
    assert '  karpenter = {\n    chart_version = "0.35.12"\n    enabled       = true\n    extra_values  = <<-EOT\n' \
        in c.new
    (tmp_path / "main.tf").write_text((PARTICULE % ("v15.3.0", "\n    extra_values = var.karpenter_values"))
                                      .replace("enabled =", "enabled      ="))
    plan = make_plan(tmp_path, to="latest")            # values it cannot read may give the settings: no stop
    assert not plan.has_errors and not plan.changes
    (f,) = [f for f in plan.findings if f.code == "MIG-HELM-027"]
    assert f.severity == "warning" and "karpenter.extra_values is an expression" in f.message
    (tmp_path / "main.tf").write_text(PARTICULE % ("v13.0.0", ""))
    assert [(r.era, r.chart) for r in make_plan(tmp_path).roots] == [("v1alpha5", "0.27.5")]
    (tmp_path / "main.tf").write_text((PARTICULE % ("v15.3.0", "")).replace("enabled = true", "enabled = false"))
    assert not make_plan(tmp_path, to="latest").changes


def test_particuleio_addons_called_by_a_terragrunt_unit_are_read_from_its_inputs(tmp_path):
    """teks: the add-ons are a Terragrunt unit (`terraform { source = "github.com/particuleio/...?ref=v15.3.0" }`),
    its inputs the call's arguments; the unit is no longer said to be a module migrator does not read (MIG-SRC-014)."""
    unit = tmp_path / "live/demo/eks-addons-critical/terragrunt.hcl"
    unit.parent.mkdir(parents=True)
    unit.write_text('terraform {\n  source = "github.com/particuleio/terraform-kubernetes-addons.git//modules/aws'
                    '?ref=v16.1.0"\n}\n\ninputs = {\n  cluster-name = "demo"\n\n  karpenter = {\n    enabled = true\n'
                    '  }\n}\n')
    plan = make_plan(tmp_path, to="latest")
    assert [(r.era, r.chart) for r in plan.roots] == [("v1beta1", "0.37.0")]
    assert [f.code for f in plan.findings if f.severity == "error"] == ["MIG-HELM-027"]
    assert not [f for f in plan.findings if f.code == "MIG-SRC-014"]


def test_particuleio_addons_before_v20_give_the_1_0_controller_no_v1_permissions(tmp_path):
    """Tags before v20.0.0 make the controller's policy with a karpenter module of their own (~> 19.0 / ~> 20.0,
    enable_v1_permissions unset): the v1 hop says the 1.0 controller would fail, and how to move (MIG-V1-MOD-007);
    from v20.0.0 (its karpenter module ~> 21.0) nothing is said."""
    given = '\n    extra_values = <<-EOT\n      settings:\n        clusterName: demo\n      EOT'
    text = (PARTICULE % ("v16.1.0", given)).replace("enabled =", "enabled      =")
    (tmp_path / "main.tf").write_text(text)
    plan = make_plan(tmp_path, to="latest")
    assert [(r.era, r.chart, r.hop_to) for r in plan.roots] == [("v1beta1", "0.37.0", "v1")]
    (f,) = [f for f in plan.findings if f.code == "MIG-V1-MOD-007"]
    assert "particuleio/terraform-kubernetes-addons 16.1.0" in f.message and "20.0.0 or later" in f.manual_step
    (tmp_path / "main.tf").write_text(text.replace("v16.1.0", "v20.0.0").replace("enabled      = true",
                                                                                  'chart_version = "0.37.0"\n    enabled       = true').replace("extra_values = <<", "extra_values  = <<"))
    assert not [f for f in make_plan(tmp_path, to="latest").findings if f.code == "MIG-V1-MOD-007"]
    (tmp_path / "main.tf").write_text(text.replace("?ref=v16.1.0", ""))      # unpinned: the newest tag, which has them
    assert not [f for f in make_plan(tmp_path, to="latest").findings if f.code == "MIG-V1-MOD-007"]


def test_objects_with_no_chart_in_the_files_say_how_the_upgrade_is_recorded(tmp_path):
    """v1 objects whose chart the files do not hold (installed by hand, or by another root: spack/spack-infrastructure's
    kustomizations of NodePools): the 1.x steps came back on every run with nothing to say why. MIG-STAND-005 says to
    state the version once it runs; stated, the root is at the target."""
    root = tmp_path / "r"
    root.mkdir()
    (root / "nodepool.yaml").write_text(
        "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata:\n  name: default\nspec:\n  template:\n    spec:\n"
        "      nodeClassRef:\n        group: karpenter.k8s.aws\n        kind: EC2NodeClass\n        name: default\n"
        "      requirements:\n        - key: kubernetes.io/arch\n          operator: In\n          values: [\"amd64\"]\n")
    plan = make_plan(root)
    (r,) = plan.roots
    assert r.chart is None and r.phase == "upgrade"
    (said,) = [f for f in plan.findings if f.code == "MIG-STAND-005"]
    latest = route.parse_target("latest").chart
    assert f"chart_version: {latest}" in said.manual_step
    (root / ".migrator.yaml").write_text(f"chart_version: {latest}\n")
    out = json.loads(CliRunner().invoke(app, ["plan", str(root), "--format", "json"]).stdout)
    (r,) = out["roots"]
    assert r["chart"] == latest and not r["phase"] and out["steps"] == []
    assert not [f for f in out["findings"] if f["code"] == "MIG-STAND-005"]


def test_with_no_chart_an_alpha_leftover_beside_v1_objects_does_not_decide(tmp_path):
    """Tharunkn569/eks-karpenter-terraform keeps a `# Legacy reference only.` Provisioner beside its v1 NodePool and
    EC2NodeClass, the chart installed outside the files. No chart serves both v1alpha5 and v1: the v1 objects run, so
    the Provisioner is a leftover (MIG-STAND-002). It used to put the root at v1alpha5 and write a v1beta1 NodePool
    for it, which a 1.x controller cannot even accept."""
    root = tmp_path / "r"
    root.mkdir()
    (root / "nodepool.yaml").write_text(
        "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata:\n  name: default\nspec:\n  template:\n    spec:\n"
        "      nodeClassRef:\n        group: karpenter.k8s.aws\n        kind: EC2NodeClass\n        name: default\n"
        "      requirements:\n        - key: kubernetes.io/arch\n          operator: In\n          values: [\"amd64\"]\n")
    (root / "provisioner-legacy.yaml").write_text(
        "# Legacy reference only.\napiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata:\n  name: legacy\n"
        "spec:\n  providerRef:\n    name: default\n  ttlSecondsAfterEmpty: 30\n")
    plan = make_plan(root)
    (r,) = plan.roots
    assert r.era == "v1" and r.hop_from == "v1"
    (said,) = [f for f in plan.findings if f.code == "MIG-STAND-002"]
    assert said.path == "provisioner-legacy.yaml" and "no chart version in the files" in said.message
    assert not [c for c in plan.changes if "v1beta1" in (c.new or "")]
    # a v1beta1 NodePool beside a Provisioner stays a root of the v1alpha5 hop (0.32 serves both)
    (root / "nodepool.yaml").write_text((root / "nodepool.yaml").read_text().replace("karpenter.sh/v1\n",
                                                                                     "karpenter.sh/v1beta1\n"))
    (r,) = make_plan(root).roots
    assert r.era == "v1alpha5"
