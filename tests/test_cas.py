"""From Cluster Autoscaler to Karpenter (issue 21): detection, node group -> NodePool rows, the group that stays,
identity, installer styles, and what is reported instead of guessed."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from migrator import knowledge
from migrator.apply import apply_changes
from migrator.cas import scan
from migrator.cli import app
from migrator.inventory import Repo
from migrator.options import Options
from migrator.plan import make_plan
from migrator.rules.cas import convert
from migrator.sources import yaml as yamlsrc
from migrator.validate import validate_object

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture
def tf(tmp_path):
    root = tmp_path / "infra"
    shutil.copytree(FIXTURES / "cas-terraform" / "input", root)
    return root


def _new(plan, path):
    (c,) = [c for c in plan.changes if c.path == path]
    return c.new


def test_without_a_target_the_root_is_listed_as_cluster_autoscaler(tf):
    out = CliRunner().invoke(app, ["plan", str(tf), "--format", "json"])
    d = json.loads(out.stdout)
    (root,) = d["roots"]
    assert root["era"] == "cas" and root["hop"] is None and d["changes"] == []
    assert "--to latest" in root["next"]
    assert [f["code"] for f in d["findings"]] == ["MIG-CAS-001"]


def test_detects_installs_groups_iam_and_modules(tf):
    inv = scan(Repo(tf))
    assert [i.address for i in inv.installs] == ["helm_release.cluster_autoscaler"]
    assert [(g.name, g.source, g.flavour) for g in inv.groups] == [("general", "module", "managed"),
                                                                  ("spot", "module", "managed")]
    assert inv.groups[0].literal("ami_type") == "AL2023_x86_64_STANDARD"      # from the *_defaults map
    assert [b.address for _, b in inv.iam] == ["module.cluster_autoscaler_irsa"]
    assert [b.address for _, b in inv.vpc_modules] == ["module.vpc"]


@pytest.mark.parametrize("itype,cap", [("m6i.xlarge", (4, 16)), ("c5.9xlarge", (36, 72)), ("r6gd.medium", (1, 8)),
                                       ("t3.medium", (2, 4)), ("p4d.24xlarge", None), ("m5.metal", None),
                                       ("c5n.large", (2, 5.25)), ("g4dn.xlarge", (4, 16)), ("t2.small", (1, 2))])
def test_instance_capacity_table(itype, cap):
    assert convert.capacity_of(itype) == cap


def test_a_fractional_memory_limit_is_written_in_mebibytes():
    """c5n.large has 5.25 GiB: 3 of them are 16128Mi, never a NodePool limit below what the group could launch."""
    from migrator.cas import NodeGroup
    g = NodeGroup("net", "module", "managed", "main.tf", 1, fields={"instance_types": ["c5n.large"], "max_size": 3})
    assert convert.shape(g).limits == {"cpu": 6, "memory": "16128Mi"}


def test_every_nodepool_keeps_what_its_group_launched(tf):
    plan = make_plan(tf, to="latest")
    assert not plan.has_errors
    text = _new(plan, "karpenter.tf")
    bodies = re.findall(r"yaml_body = <<-YAML\n(.*?)\n  YAML", text, re.S)
    objs = {(o["kind"], o["metadata"]["name"]): o for o in (yamlsrc.load(b.replace("\n    ", "\n").strip())
                                                             for b in bodies)}
    spot = objs[("NodePool", "spot")]["spec"]
    reqs = {r["key"]: r["values"] for r in spot["template"]["spec"]["requirements"]}
    assert reqs == {"node.kubernetes.io/instance-type": ["c6i.2xlarge", "c5.2xlarge"],
                    "karpenter.sh/capacity-type": ["spot"], "kubernetes.io/arch": ["amd64"]}
    assert spot["template"]["spec"]["taints"] == [{"key": "workload", "value": "batch", "effect": "NoSchedule"}]
    assert spot["template"]["metadata"]["labels"] == {"workload": "batch"}
    assert spot["limits"] == {"cpu": 160, "memory": "320Gi"}          # 20 x c6i.2xlarge (8 vCPU, 16 GiB)
    assert spot["template"]["spec"]["expireAfter"] == "Never"          # node groups never expire nodes
    general_class = objs[("EC2NodeClass", "general")]["spec"]
    assert general_class["blockDeviceMappings"][0]["ebs"]["volumeSize"] == "50Gi"
    assert general_class["amiSelectorTerms"] == [{"alias": "al2023@latest"}]
    for o in objs.values():
        check = json.loads(re.sub(r"\$\{[^}]*\}", "__MIG_0__", json.dumps(o)))
        assert validate_object(check, "1.14.1") == []


def test_controller_kept_on_the_default_group_or_the_chosen_one(tf):
    plan = make_plan(tf, to="latest")
    assert 'module.eks.eks_managed_node_groups["general"].node_group_id' in _new(plan, "karpenter.tf")
    (f,) = [f for f in plan.findings if f.code == "MIG-CAS-005"]
    assert "keeps the least capacity running for the controller (2 x " in f.message
    plan = make_plan(tf, to="latest", options=Options(node_group_keep="general"))
    assert 'eks_managed_node_groups["general"]' in _new(plan, "karpenter.tf")
    # a chosen group is held to the same rules (issue 29 §5): spot capacity and a taint the controller does not
    # tolerate would strand it
    plan = make_plan(tf, to="latest", options=Options(node_group_keep="spot"))
    (f,) = [f for f in plan.findings if f.code == "MIG-CAS-004"]
    assert f.severity == "error" and "spot capacity" in f.message and plan.changes == []
    plan = make_plan(tf, to="latest", options=Options(node_group_keep="nope"))
    assert [f.code for f in plan.findings if f.severity == "error"] == ["MIG-CAS-004"] and plan.changes == []


def test_irsa_when_the_cluster_has_no_pod_identity_agent(tf):
    main = tf / "main.tf"
    main.write_text(main.read_text().replace("    eks-pod-identity-agent = { before_compute = true }\n", ""))
    plan = make_plan(tf, to="latest")
    text = _new(plan, "karpenter.tf")
    assert 'data "aws_iam_policy_document" "karpenter_irsa"' in text
    assert "create_pod_identity_association         = false" in text
    assert '"eks.amazonaws.com/role-arn" = module.karpenter.iam_role_arn' in text
    assert "module.eks.oidc_provider_arn" in text


def test_no_kubectl_provider_writes_yaml_and_says_so(tf):
    v = tf / "versions.tf"
    v.write_text(re.sub(r"    kubectl = \{.*?\n    \}\n", "", v.read_text(), flags=re.S))
    plan = make_plan(tf, to="latest")
    assert "kubectl_manifest" not in _new(plan, "karpenter.tf")
    docs = [yamlsrc.load(d.text) for d in yamlsrc.split_documents(_new(plan, "karpenter-nodepools.yaml"))]
    assert sorted(o["kind"] for o in docs) == ["EC2NodeClass", "EC2NodeClass", "NodePool", "NodePool"]
    # the cluster's name is a local of the root: the file names the role and the cluster as they will be
    assert {o["spec"]["role"] for o in docs if o["kind"] == "EC2NodeClass"} == {"shop-prod-karpenter-node"}
    assert 'node_iam_role_name            = "shop-prod-karpenter-node"' in _new(plan, "karpenter.tf")
    assert not [f for f in plan.findings if f.code == "MIG-CAS-007"]
    main = tf / "main.tf"
    main.write_text(main.read_text().replace("  name               = local.name\n", "  name               = var.name\n"))
    plan = make_plan(tf, to="latest")
    assert "karpenter-nodepools.yaml" not in [c.path for c in plan.changes]           # never a file of placeholders
    assert [f.severity for f in plan.findings if f.code == "MIG-CAS-007"] == ["warning"]
    assert not plan.has_errors


def test_what_cannot_be_carried_is_reported(tf):
    main = tf / "main.tf"
    text = main.read_text().replace('      instance_types = ["c6i.2xlarge", "c5.2xlarge"]\n',
                                    '      instance_types = ["p4d.24xlarge"]\n      pre_bootstrap_user_data = "echo hi"\n')
    main.write_text(text)
    plan = make_plan(tf, to="latest")
    codes = {f.code: f for f in plan.findings}
    assert codes["MIG-CAS-014"].severity == "warning" and "p4d.24xlarge" in codes["MIG-CAS-014"].message
    assert codes["MIG-CAS-015"].severity == "warning" and "pre_bootstrap_user_data" in codes["MIG-CAS-015"].message
    assert not plan.has_errors


def test_pods_pinned_to_a_replaced_group_are_reported(tf):
    (tf / "apps" / "pinned.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: etl\nspec:\n  template:\n    spec:\n"
        "      nodeSelector:\n        eks.amazonaws.com/nodegroup: spot\n      containers:\n        - name: etl\n"
        "          image: etl:1\n")
    plan = make_plan(tf, to="latest")
    (f,) = [f for f in plan.findings if f.code == "MIG-CAS-031"]
    assert f.path == "apps/pinned.yaml" and f.line == 9 and "karpenter.sh/nodepool: spot" in f.message
    assert "        karpenter.sh/nodepool: spot\n" in _new(plan, "apps/pinned.yaml")


def test_config_map_clusters_get_no_access_entry(tmp_path):
    root = tmp_path / "r"
    shutil.copytree(FIXTURES / "cas-flux" / "input", root)
    eks = root / "infra" / "eks.tf"
    eks.write_text(eks.read_text().replace('  access_config {\n    authentication_mode = "API"\n  }\n\n', ""))
    plan = make_plan(root, to="latest")
    assert "create_access_entry = false" in _new(plan, "infra/karpenter.tf")
    assert [f.severity for f in plan.findings if f.code == "MIG-CAS-028"] == ["warning"]


def test_walk_ends_with_karpenter_only_and_nothing_pending(tf):
    for _ in range(6):
        plan = make_plan(tf, to="latest")
        assert not plan.has_errors, [f for f in plan.findings if f.severity == "error"]
        if not plan.changes:
            break
        apply_changes(plan.root, plan.changes)
    left = (tf / "cluster-autoscaler.tf").read_text()      # metrics-server stays, its depends_on on the autoscaler gone
    assert "cluster_autoscaler" not in left and 'resource "helm_release" "metrics_server"' in left
    assert '"spot"' not in (tf / "main.tf").read_text() and "general = {" in (tf / "main.tf").read_text()
    end = make_plan(tf, to="latest")
    assert [(r.era, r.chart) for r in end.roots] == [("v1", "1.14.1")]
    code = CliRunner().invoke(app, ["plan", str(tf), "--to", "latest", "--detailed-exitcode"]).exit_code
    assert code == 0


def test_node_groups_built_by_expressions_and_hand_written_policies_are_reported(tmp_path):
    root = tmp_path / "r"
    shutil.copytree(FIXTURES / "cas-flux" / "input", root)
    (root / "infra" / "more.tf").write_text(
        'resource "aws_eks_node_group" "extra" {\n  for_each        = var.extra_groups\n'
        '  cluster_name    = aws_eks_cluster.main.name\n  node_group_name = each.key\n}\n\n'
        'resource "aws_iam_policy" "autoscaler" {\n  name   = "analytics-autoscaler"\n'
        '  policy = jsonencode({ Statement = [{ Effect = "Allow", Action = ["autoscaling:SetDesiredCapacity"], '
        'Resource = "*" }] })\n}\n')
    plan = make_plan(root, to="latest")
    (f,) = [f for f in plan.findings if f.code == "MIG-CAS-032"]
    assert f.path == "infra/more.tf" and f.line == 1 and "for_each" in f.message
    assert not plan.has_errors
    plan = make_plan(root, to="latest", phase="cleanup")
    assert [f.path for f in plan.findings if f.code == "MIG-CAS-029"] == []      # not before Karpenter is in
    for _ in range(3):
        plan = make_plan(root, to="latest")
        if plan.phase == "cleanup":
            break
        apply_changes(plan.root, plan.changes)
    (f,) = [f for f in plan.findings if f.code == "MIG-CAS-029"]
    assert "aws_iam_policy.autoscaler" in f.message and f.severity == "warning"


def test_karpenter_beside_cluster_autoscaler_without_taking_over_a_group_is_left_alone(tmp_path):
    """A v1 root that keeps Cluster Autoscaler for node groups no NodePool replaces: --to latest plans no cutover."""
    root = tmp_path / "r"
    shutil.copytree(FIXTURES / "cas-terraform" / "expected-run-1", root)
    k = root / "karpenter.tf"
    k.write_text(k.read_text().replace("name: general\n", "name: web\n").replace("name: spot\n", "name: batch\n"))
    plan = make_plan(root, to="latest")
    assert not [c for c in plan.changes if c.path in ("cluster-autoscaler.tf", "main.tf")]
    assert not [f for f in plan.findings if f.code.startswith("MIG-CAS-02")]


def test_priority_expander_order_becomes_nodepool_weights(tmp_path):
    root = tmp_path / "r"
    shutil.copytree(FIXTURES / "cas-flux" / "input", root)
    (root / "clusters" / "analytics" / "priorities.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cluster-autoscaler-priority-expander\n"
        "  namespace: kube-system\ndata:\n  priorities: |-\n    10:\n      - .*system.*\n    50:\n      - .*workers.*\n")
    plan = make_plan(root, to="latest")
    docs = {o["metadata"]["name"]: o for o in (yamlsrc.load(d.text) for d in yamlsrc.split_documents(
        _new(plan, "clusters/analytics/karpenter-nodepools.yaml"))) if o["kind"] == "NodePool"}
    assert docs["workers"]["spec"]["weight"] == 100 and docs["system"]["spec"]["weight"] == 20


def test_widen_instance_types_requires_families_and_sizes(tf):
    out = CliRunner().invoke(app, ["plan", str(tf), "--to", "latest", "--widen-instance-types", "--format", "json"])
    d = json.loads(out.stdout)
    (c,) = [c for c in d["changes"] if c["path"] == "karpenter.tf"]
    assert "karpenter.k8s.aws/instance-family" in c["diff"] and "node.kubernetes.io/instance-type" not in c["diff"]
    assert "+                - c6i\n" in c["diff"] and "+                - 2xlarge\n" in c["diff"]


def test_subnets_without_a_terraform_declaration_are_tagged_by_the_runbook(tmp_path):
    root = tmp_path / "r"
    shutil.copytree(FIXTURES / "cas-flux" / "input", root)
    (root / "infra" / "network.tf").unlink()
    eks = root / "infra" / "eks.tf"
    eks.write_text(eks.read_text().replace("aws_subnet.private[*].id", "var.subnet_ids"))
    from migrator.render.markdown import render
    text = render(make_plan(root, to="latest"))
    assert "for ng in $(aws eks list-nodegroups" in text and "nodegroup.subnets" in text
    assert not [f for f in make_plan(root, to="latest").findings if f.code == "MIG-CAS-033"]   # same subnets
    eks.write_text(eks.read_text().replace('  node_group_name = "workers"\n  node_role_arn   = aws_iam_role.nodes.arn\n'
                                           '  subnet_ids      = var.subnet_ids',
                                           '  node_group_name = "workers"\n  node_role_arn   = aws_iam_role.nodes.arn\n'
                                           '  subnet_ids      = [var.subnet_ids[0]]'))
    found = [f for f in make_plan(root, to="latest").findings if f.code == "MIG-CAS-033"]
    assert found and all(f.severity == "warning" for f in found)


def test_a_root_on_fargate_runs_the_controller_on_its_own_profile(tf):
    main = tf / "main.tf"
    text = main.read_text()
    assert "  eks_managed_node_groups = {" in text
    main.write_text(text.replace(
        "  eks_managed_node_groups = {",
        "  fargate_profiles = {\n    system = {\n      selectors = [{ namespace = \"monitoring\" }]\n    }\n  }\n\n"
        "  eks_managed_node_groups = {"))
    plan = make_plan(tf, to="latest")
    assert not plan.has_errors
    text = _new(plan, "main.tf")
    assert "    karpenter = {\n      selectors = [" in text and '"app.kubernetes.io/name" = "karpenter"' in text
    assert "eks.amazonaws.com/nodegroup" not in _new(plan, "karpenter.tf")
    assert [f.code for f in plan.findings if f.code in ("MIG-CAS-005", "MIG-CAS-034")] == ["MIG-CAS-034"]
    for _ in range(4):
        plan = make_plan(tf, to="latest")
        if not plan.changes:
            break
        apply_changes(plan.root, plan.changes)
    final = (tf / "main.tf").read_text()
    assert "general = {" not in final and "spot = {" not in final and "karpenter = {" in final


def test_node_group_defaults_are_read_up_to_the_eks_module_v20_only(tf):
    """v21 of terraform-aws-modules/eks has no *_node_group_defaults: a call that still sets one is told, not read."""
    main = tf / "main.tf"
    text = main.read_text()
    assert "  eks_managed_node_groups = {" in text
    main.write_text(text.replace("  eks_managed_node_groups = {", "  eks_managed_node_group_defaults = {\n"
                                 "    disk_size = 80\n  }\n\n  eks_managed_node_groups = {"))
    plan = make_plan(tf, to="latest")
    (told,) = [f for f in plan.findings if f.code == "MIG-CAS-069"]
    assert told.severity == "warning" and told.path == "main.tf" and "eks_managed_node_group_defaults" in told.message
    assert "80Gi" not in _new(plan, "karpenter.tf")         # the spot group states no disk_size of its own
    main.write_text(main.read_text().replace('version = "~> 21.0"', 'version = "~> 20.0"', 1))
    plan = make_plan(tf, to="latest")
    assert not [f for f in plan.findings if f.code == "MIG-CAS-069"]
    assert "volumeSize: 80Gi" in _new(plan, "karpenter.tf")


def test_cluster_name_followed_through_a_variable_default(tf):
    v = tf / "versions.tf"
    v.write_text(re.sub(r"    kubectl = \{.*?\n    \}\n", "", v.read_text(), flags=re.S))
    main = tf / "main.tf"
    main.write_text(main.read_text().replace("  name               = local.name\n", "  name               = var.name\n")
                    + '\nvariable "name" {\n  type    = string\n  default = "shop-eu"\n}\n')
    plan = make_plan(tf, to="latest")
    assert "  role: shop-eu-karpenter-node\n" in _new(plan, "karpenter-nodepools.yaml")
    assert not [f for f in plan.findings if f.code == "MIG-CAS-007"]


def test_no_cluster_declaration_is_a_warning_not_a_stop(tmp_path):
    root = tmp_path / "r"
    shutil.copytree(FIXTURES / "cas-flux" / "input" / "clusters", root / "clusters")
    plan = make_plan(root, to="latest")
    assert [(f.code, f.severity) for f in plan.findings if f.code == "MIG-CAS-002"] == [("MIG-CAS-002", "warning")]
    assert plan.changes == [] and not plan.has_errors


def _eks_v20(tf, kubernetes: str):
    """cas-terraform's eks module call written for v20 (`~> 20.31`: terraform init installs 20.37.2, which caps the
    AWS provider below 6), its cluster on the Kubernetes version given."""
    main = tf / "main.tf"
    text = main.read_text()
    for old, new in (('version = "~> 21.0"', 'version = "~> 20.31"'), ("  name               = local.name\n",
                     "  cluster_name    = local.name\n"), ('  kubernetes_version = "1.33"\n',
                     f'  cluster_version = "{kubernetes}"\n'), ("  addons = {", "  cluster_addons = {")):
        assert old in text
        text = text.replace(old, new, 1)
    main.write_text(text)


def test_beside_an_eks_module_that_caps_the_aws_provider_the_karpenter_module_is_the_last_v20(tf):
    """An eks module release that allows the AWS provider below 6 only (v20.37.x) cannot share a configuration with the
    karpenter module v21: the install writes the last v20 release with its v1 permissions and the newest Karpenter its
    policy serves (1.2), its Pod Identity association asked for (v20 makes none by default); every input it passes
    exists in that release, and the objects validate against that chart's CRDs."""
    _eks_v20(tf, "1.31")
    plan = make_plan(tf, to="latest")
    assert not plan.has_errors and not [f for f in plan.findings if f.code == "MIG-CAS-039"]
    (said,) = [f for f in plan.findings if f.code == "MIG-CAS-070"]
    assert said.path == "main.tf" and "Karpenter 1.2.8 is installed" in said.message
    text = _new(plan, "karpenter.tf")
    call = text[text.index('module "karpenter"'):text.index("\n}\n", text.index('module "karpenter"'))]
    assert 'version = "20.37.2"' in call and "enable_v1_permissions = true" in call
    assert "create_pod_identity_association = true" in call and "iam_role_source_assume_policy_documents" not in call
    assert "enable_inline_policy" not in call
    assert text.count('version    = "1.2.8"') == 2                    # both charts
    (hop,) = [f.message for f in plan.findings if f.code == "MIG-HOP-004"]
    assert "this run plans cas → v1 (chart 1.2.8); then run migrator again for: v1 → 1.14.1 (chart 1.14.1)" in hop
    inputs = knowledge.load("karpenter_module_inputs")["inputs"]
    from migrator.path import parse_version
    for name in re.findall(r"^  (\w+)\s+=", call, flags=re.M):
        if name in ("source", "version"):
            continue
        first, last = inputs[name]
        assert parse_version(first) <= parse_version("20.37.2") and (last is None or
                                                                    parse_version(last) >= parse_version("20.37.2")), name


def test_an_eks_module_that_caps_the_aws_provider_on_a_kubernetes_karpenter_1_2_does_not_run_is_moved_first(tf):
    """Karpenter 1.2 supports Kubernetes up to 1.32: on a newer cluster the matched v20 module cannot serve, so the
    newest module is written and the eks module's move is said first (MIG-CAS-039)."""
    _eks_v20(tf, "1.33")
    plan = make_plan(tf, to="latest")
    assert [f.code for f in plan.findings if f.code in ("MIG-CAS-039", "MIG-CAS-070")] == ["MIG-CAS-039"]
    assert 'version = "21.19.0"' in _new(plan, "karpenter.tf")


def test_the_chart_the_matched_v20_module_installs_has_its_crds_packaged():
    """The matched karpenter module's chart is read from the data (cas.yaml install.matched_v20 -> minors.yaml
    module_coverage -> that minor's newest patch): its NodePool and EC2NodeClass CRDs must be packaged to validate
    what the install writes (scripts/package_crds.py)."""
    from migrator.path import parse_version
    minors = knowledge.load("minors")
    ver = parse_version(knowledge.load("cas")["install"]["matched_v20"]["module_version"])
    cov = next(r for r in reversed(minors["module_coverage"]) if parse_version(r["from"]) <= ver)
    chart = next(r["newest"] for r in minors["minors"] if r["minor"] == cov["karpenter"])
    for api, kind in (("karpenter.sh/v1", "NodePool"), ("karpenter.k8s.aws/v1", "EC2NodeClass")):
        assert knowledge.crd_schema(api, kind, chart)["type"] == "object"


def test_moving_to_auto_mode_the_route_through_karpenter_is_said_before_the_install(tmp_path):
    """--to auto-mode on a Cluster Autoscaler cluster goes through Karpenter; the first plan says so and names AWS's
    move from managed node groups without Karpenter (MIG-HOP-011). Once Karpenter is in, the choice is made: not said."""
    root = tmp_path / "tree"
    shutil.copytree(FIXTURES / "cas-terraform" / "input", root)
    plan = make_plan(root, to="auto-mode")
    (said,) = [f for f in plan.findings if f.code == "MIG-HOP-011"]
    assert said.severity == "info" and "through Karpenter" in said.message
    assert "Migrate from EKS Managed Node Groups to EKS Auto Mode" in said.manual_step
    assert not [f for f in make_plan(root, to="latest").findings if f.code == "MIG-HOP-011"]
    apply_changes(root, plan.changes)                                       # the install written
    plan = make_plan(root, to="auto-mode")
    assert plan.roots[0].phase == "cutover" and not [f for f in plan.findings if f.code == "MIG-HOP-011"]


def test_the_hops_rules_are_imported_only_when_a_root_runs_them(tmp_path):
    """Every plan asks the Cluster Autoscaler package where its roots are and how each stands; its rules and runbook
    (25-50 ms of imports) load only when something reads RULES or steps (issue 60)."""
    import os
    import subprocess
    import sys
    (tmp_path / "main.tf").write_text('resource "helm_release" "x" {\n  chart = "karpenter"\n  version = "1.0.6"\n}\n')
    code = ("import sys\nfrom migrator.plan import make_plan\nmake_plan(sys.argv[1])\n"
            "print(sorted(m for m in sys.modules if m.startswith('migrator.rules.cas.')))\n"
            "from migrator.rules import cas\nprint(sorted(cas.RULES), cas.steps.__module__)\n")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True,
                         env={**os.environ, "MIGRATOR_EVALUATOR": "off"}).stdout.splitlines()
    assert out[0] == "['migrator.rules.cas.convert']"
    assert out[1] == "['cas/autoscaler', 'cas/karpenter', 'cas/nodegroups', 'cas/workloads'] migrator.rules.cas.runbook"
