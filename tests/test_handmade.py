"""Setups made by hand (seed 003): aws-cli JSON policies, a chart rendered with `helm template` and applied with
kubectl, an aws-auth ConfigMap. Facts the repository states are used (node role, cluster, region) and every
runbook command fits the setup."""
from __future__ import annotations

import json
import re

from migrator.facts import node_role
from migrator.inventory import Repo
from migrator.plan import make_plan
from migrator.render.markdown import render as render_markdown
from migrator.rendered import scan as scan_rendered
from migrator.sources import yaml as yamlsrc

from .conftest import FIXTURES

SEED = FIXTURES / "seed-003-kubectl"


def _commands(markdown: str) -> list[str]:
    out, inside = [], False
    for ln in markdown.splitlines():
        if ln.startswith("```sh"):
            inside = True
        elif ln.startswith("```"):
            inside = False
        elif inside and ln.strip():
            out.append(ln.strip())
    return out


def test_runbook_commands_fit_a_kubectl_setup():
    cmds = _commands(render_markdown(make_plan(SEED / "input")))
    assert cmds
    assert not [c for c in cmds if c.startswith(("helm upgrade", "helm install", "terraform", "flux ", "argocd "))]
    renders = [c for c in cmds if c.startswith("helm template")]
    assert any("karpenter-crd" in c and c.endswith("> karpenter/karpenter-crd.yaml") for c in renders)
    chart = [c for c in renders if " karpenter oci://" in c and "--version v0.32.10" in c]
    assert chart and all(c.endswith("> karpenter/karpenter.yaml") for c in chart)
    # the hop's renames are applied to the values read back from the rendered ConfigMap
    assert "--set settings.clusterName=karpenter-poc" in chart[0]
    assert "settings.aws.clusterName" not in chart[0] and "nodeNameConvention" not in chart[0]
    assert "serviceAccount.annotations.eks\\.amazonaws\\.com/role-arn=arn:aws:iam::123456789012:role/" \
           "KarpenterControllerRole-karpenter-poc" in chart[0]
    # the cleanup render drops what only alpha objects needed
    assert "defaultInstanceProfile" not in chart[-1] and "defaultInstanceProfile" in chart[0]
    assert "kubectl apply --server-side -f karpenter/karpenter-crd.yaml" in cmds
    # CRDs rendered and applied before the controller
    assert cmds.index("kubectl apply --server-side -f karpenter/karpenter-crd.yaml") < \
        cmds.index("kubectl apply -f karpenter/karpenter.yaml")


def test_rendered_chart_is_read_not_edited():
    plan = make_plan(SEED / "input")
    assert not [c for c in plan.changes if c.path == "karpenter/karpenter.yaml"]
    rnd = [f for f in plan.findings if f.code == "MIG-RND-001"]
    assert len(rnd) == 1 and rnd[0].path == "karpenter/karpenter.yaml"
    # the chart's own affinity is not reported as a workload to edit
    assert not [f for f in plan.findings if f.path == "karpenter/karpenter.yaml" and f.code.startswith("MIG-WL")]


def test_node_role_from_passrole_and_scope_from_the_cluster_arn():
    plan = make_plan(SEED / "input")
    nc = next(c for c in plan.changes if c.path == "karpenter/nodepool.yaml")
    docs = [d for d in yamlsrc.load_all_safe(nc.new) if d]
    assert next(d for d in docs if d["kind"] == "EC2NodeClass")["spec"]["role"] == "KarpenterNodeRole-karpenter-poc"
    trail = next(f for f in plan.findings if f.code == "MIG-NC-013").message
    assert "iam:PassRole in iam/controller-policy.json" in trail and "aws-auth" in trail
    scoped = {f.message.split(" is ")[1].split(",")[0] for f in plan.findings if f.code == "MIG-IAM-009"}
    assert scoped == {"karpenter-poc", "ap-south-1"}
    policy = json.loads(next(c for c in plan.changes if c.path == "iam/controller-policy.json").new)
    sids = [s["Sid"] for s in policy["Statement"]]
    assert "AllowScopedInstanceProfileCreationActions" in sids and "ConditionalEC2TerminationNodePool" in sids


def test_inserted_json_statements_follow_the_files_layout():
    plan = make_plan(SEED / "input")
    new = next(c for c in plan.changes if c.path == "iam/controller-policy.json").new
    assert all(not ln.startswith((" ", "\t")) for ln in new.splitlines())        # the file is not indented
    added = new[new.index('"Sid": "EKSClusterEndpointLookup"'):]
    keys = re.findall(r'^"(Sid|Effect|Action|Resource|Condition)"', added, re.M)
    assert keys[1:6] == ["Action", "Condition", "Effect", "Resource", "Sid"]        # the author's key order


def _tree(tmp_path, files: dict[str, str]) -> Repo:
    for p, t in files.items():
        (tmp_path / p).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / p).write_text(t)
    return Repo(tmp_path)


AUTH = """apiVersion: v1
kind: ConfigMap
metadata:
  name: aws-auth
  namespace: kube-system
data:
  mapRoles: |
{entries}"""
ENTRY = """    - rolearn: arn:aws:iam::111122223333:role/{name}
      username: system:node:{{{{EC2PrivateDNSName}}}}
      groups:
        - system:bootstrappers
        - system:nodes
"""


def test_node_role_from_aws_auth_prefers_the_karpenter_role(tmp_path):
    repo = _tree(tmp_path, {"aws-auth.yaml": AUTH.format(entries=ENTRY.format(name="ng-NodeInstanceRole-X")
                                                          + ENTRY.format(name="KarpenterNodeRole-prod"))})
    fact, _ = node_role(repo)
    assert fact.value == "KarpenterNodeRole-prod" and "aws-auth" in fact.source


def test_ambiguous_aws_auth_is_not_guessed(tmp_path):
    repo = _tree(tmp_path, {"aws-auth.yaml": AUTH.format(entries=ENTRY.format(name="KarpenterNodeRole-a")
                                                          + ENTRY.format(name="KarpenterNodeRole-b"))})
    fact, why = node_role(repo)
    assert fact is None and "KarpenterNodeRole-a" in why and "KarpenterNodeRole-b" in why


def test_node_role_from_an_eks_access_entry(tmp_path):
    repo = _tree(tmp_path, {"main.tf": 'resource "aws_eks_access_entry" "nodes" {\n  cluster_name  = "prod"\n'
                                       '  principal_arn = aws_iam_role.karpenter_node.arn\n  type          = "EC2_LINUX"\n}\n'})
    fact, _ = node_role(repo)
    assert fact.value == "aws_iam_role.karpenter_node.name" and fact.expression


def test_values_read_back_from_a_newer_rendered_chart(tmp_path):
    repo = _tree(tmp_path, {"k.yaml": """---
# Source: karpenter/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: karpenter
  namespace: kube-system
  labels:
    helm.sh/chart: karpenter-0.37.0
    app.kubernetes.io/instance: kp
spec:
  template:
    spec:
      containers:
        - name: controller
          env:
            - name: CLUSTER_NAME
              value: "prod"
            - name: INTERRUPTION_QUEUE
              value: "prod-queue"
            - name: FEATURE_GATES
              value: "Drift=true,SpotToSpotConsolidation=true,SomeNewGate=false"
"""})
    rc = scan_rendered(repo)[0]
    assert (rc.chart, rc.version, rc.release, rc.namespace) == ("karpenter", "0.37.0", "kp", "kube-system")
    assert {(v.key, v.value) for v in rc.values} == {("settings.clusterName", "prod"),
                                                    ("settings.interruptionQueue", "prod-queue"),
                                                    ("settings.featureGates.drift", True),
                                                    ("settings.featureGates.spotToSpotConsolidation", True),
                                                    ("settings.featureGates.someNewGate", False)}


def test_cluster_and_region_from_chart_values_and_provider(tmp_path):
    from migrator.facts import cluster_and_region
    from migrator.inventory import HelmValue
    from migrator.policies import scan_policies
    repo = _tree(tmp_path, {"main.tf": 'provider "aws" {\n  region = "eu-west-3"\n}\n'
                                       'resource "aws_iam_policy" "karpenter_controller" {\n'
                                       '  policy = jsonencode({\n    Version = "2012-10-17"\n    Statement = [{\n'
                                       '      Effect   = "Allow"\n'
                                       '      Action   = ["ec2:CreateFleet", "ec2:RunInstances", "ec2:CreateLaunchTemplate"]\n'
                                       '      Resource = "*"\n    }]\n  })\n}\n'})
    pol = next(p for p in scan_policies(repo) if p.is_karpenter)
    values = [HelmValue("settings.clusterName", "prod-eu", None, "values.yaml", 3, ("settings", "clusterName"))]
    got = cluster_and_region(repo, pol, values)
    assert got["ClusterName"].value == "prod-eu" and "values.yaml:3" in got["ClusterName"].source
    assert got["AWS::Region"].value == "eu-west-3" and 'provider "aws"' in got["AWS::Region"].source
    assert "ClusterName" not in cluster_and_region(repo, pol, [])          # nothing stated: nothing guessed


def test_rendered_chart_without_namespace_is_not_guessed(tmp_path):
    from migrator.rendered import rerender
    repo = _tree(tmp_path, {"k.yaml": """apiVersion: v1
kind: ServiceAccount
metadata:
  name: karpenter
  labels:
    helm.sh/chart: karpenter-v0.31.1
  annotations:
    example.com/list: "a,b"
"""})
    res = rerender(repo, [], "0.32.10")
    assert '--namespace "${KARPENTER_NAMESPACE}"' in res.chart_command
    assert "example\\.com/list=a\\,b" in res.chart_command
    assert "KARPENTER_NAMESPACE" in res.findings[0].message


def test_a_template_a_local_file_renders_is_converted_and_applied_by_the_runbook(tmp_path):
    """A v1beta1 NodePool in a template that a local_file renders to a file applied outside Terraform used to be left
    (MIG-SRC-010): it is converted in place, and the manifests step renders the file again and applies it. With the
    rendered file committed too, the template is left alone, said with why (inventory/localfiles.py)."""
    from migrator.plan import make_plan
    (tmp_path / "pools.yaml.tpl").write_text(
        "apiVersion: karpenter.sh/v1beta1\nkind: NodePool\nmetadata:\n  name: ${name}\nspec:\n  template:\n"
        "    spec:\n      nodeClassRef:\n        name: default\n      requirements:\n        - key: kubernetes.io/arch\n"
        "          operator: In\n          values: [amd64]\n")
    (tmp_path / "main.tf").write_text(
        'resource "helm_release" "karpenter" {\n  chart   = "karpenter"\n  version = "1.0.8"\n}\n\n'
        'resource "local_file" "pools" {\n  content  = templatefile("${path.module}/pools.yaml.tpl", { name = "a" })\n'
        '  filename = "${path.root}/out/pools.yaml"\n}\n')
    from migrator.apply import apply_changes
    for _ in range(4):                  # the chart's phases first
        plan = make_plan(tmp_path)
        if plan.phase == "manifests":
            break
        apply_changes(tmp_path, plan.changes)
    assert not [f for f in plan.findings if f.code == "MIG-SRC-010"]
    assert "pools.yaml.tpl" in [c.path for c in plan.changes]
    (step,) = [s for s in plan.steps if s.id.endswith("-manifests")]
    assert step.commands[-2:] == ["terraform apply -target=local_file.pools",
                                  "kubectl apply --server-side -f out/pools.yaml"]
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "pools.yaml").write_text("# rendered\n")
    (f,) = [f for f in make_plan(tmp_path).findings if f.code == "MIG-SRC-010"]
    assert f.path == "pools.yaml.tpl" and "local_file.pools renders it" in f.message and "is committed" in f.message


def test_an_object_a_local_file_writes_from_hcl_is_said(tmp_path):
    """A Provisioner a local_file writes from yamlencode() (aws-samples/terraform-eks-code) or a heredoc went unseen:
    it is said (MIG-SRC-027) with its line; moving to Auto Mode, a v1 pool written so holds the cutover (MIG-AUTO-059)."""
    from migrator.plan import make_plan
    from migrator.rules.auto import unconverted
    (tmp_path / "main.tf").write_text(
        'resource "helm_release" "karpenter" {\n  chart   = "karpenter"\n  version = "v0.31.0"\n}\n\n'
        'resource "local_file" "provisioner" {\n  content = yamlencode({\n    "apiVersion" = "karpenter.sh/v1alpha5"\n'
        '    "kind"       = "Provisioner"\n    "metadata"   = { "name" = "default" }\n  })\n'
        '  filename = "${path.module}/default-provisioner.yaml"\n}\n\n'
        'resource "local_file" "pool" {\n  content  = <<-EOT\n    apiVersion: karpenter.sh/v1\n    kind: NodePool\n'
        '    metadata:\n      name: spot\n  EOT\n  filename = "${path.module}/spot.yaml"\n}\n\n'
        'resource "local_file" "auto" {\n  content  = <<-EOT\n    apiVersion: karpenter.sh/v1\n    kind: NodePool\n'
        '    spec:\n      template:\n        spec:\n          nodeClassRef:\n            group: eks.amazonaws.com\n'
        '  EOT\n  filename = "${path.module}/auto.yaml"\n}\n')
    said = sorted((f.line, f.message.split(" writes ")[0]) for f in make_plan(tmp_path).findings
                  if f.code == "MIG-SRC-027")
    assert said == [(9, "local_file.provisioner"), (18, "local_file.pool")]

    class Ctx:
        repo = __import__("migrator.inventory", fromlist=["Repo"]).Repo(tmp_path)
        root = "."
        owns = staticmethod(lambda p: True)
    ctx = Ctx()
    from migrator.inventory.objects import scan_manifests
    scan_manifests(ctx.repo)
    held = [(o.path, o.line, o.kind) for o in unconverted._inline_files(ctx)]
    assert held == [("main.tf", 18, "NodePool")]


def test_a_rendered_file_whose_path_only_terraform_knows_is_named_not_guessed(tmp_path):
    """The runbook applies a file a local_file renders by its path in the repository; where that path is known only
    where Terraform runs (a Terragrunt unit runs the module from its cache; `${path.root}` of a called module), the
    command is a comment naming the local_file and its filename, never a path that is not there."""
    from migrator.inventory import Repo
    from migrator.inventory.localfiles import apply_command, output_path
    assert apply_command("out/a b.yaml", "local_file.x", '"${path.module}/a b.yaml"') == "kubectl apply -f 'out/a b.yaml'"
    said = apply_command(None, "local_file.x", '"${path.root}/out/x.yaml"', "--server-side ")
    assert said.startswith("# kubectl apply --server-side -f <the file local_file.x writes") and "path.root" in said
    (tmp_path / "modules" / "pools").mkdir(parents=True)
    (tmp_path / "modules" / "pools" / "main.tf").write_text('resource "local_file" "x" {\n  filename = "x"\n}\n')
    (tmp_path / "live" / "dev").mkdir(parents=True)
    (tmp_path / "live" / "dev" / "terragrunt.hcl").write_text(
        'terraform {\n  source = "../../modules/pools"\n}\n\ninputs = {\n  karpenter = true\n}\n')
    repo = Repo(tmp_path)
    assert output_path(repo, "modules/pools/main.tf", "${path.module}/out/x.yaml") is None
    assert output_path(repo, "other/main.tf", "${path.module}/out/x.yaml") == "other/out/x.yaml"


def test_a_file_of_the_same_name_elsewhere_is_not_the_rendered_one(tmp_path):
    """A null_resource applies the rendered file when it names the local_file or the file by its folder and name;
    one that applies a committed file of the same name in another folder is not its applier (a copy of it would apply
    a file that is not there). A heredoc NodePool whose requirements name an eks.amazonaws.com label is Karpenter's
    (said, MIG-SRC-027); only a class reference to Auto Mode's group makes it Auto Mode's."""
    from migrator.inventory import Repo
    from migrator.inventory.localfiles import inline, scan
    (tmp_path / "pools.yaml.tpl").write_text("apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata:\n  name: a\n")
    (tmp_path / "main.tf").write_text(
        'resource "local_file" "pools" {\n  content  = templatefile("${path.module}/pools.yaml.tpl", {})\n'
        '  filename = "${path.module}/rendered/pools.yaml"\n}\n\n'
        'resource "null_resource" "base" {\n  provisioner "local-exec" {\n'
        '    command = "kubectl apply -f ${path.module}/base/pools.yaml"\n  }\n}\n\n'
        'resource "null_resource" "apply" {\n  provisioner "local-exec" {\n'
        '    command = "kubectl apply -f ${path.module}/rendered/pools.yaml"\n  }\n}\n\n'
        'resource "local_file" "karpenter_pool" {\n  content  = <<-EOT\n    apiVersion: karpenter.sh/v1\n    kind: NodePool\n'
        '    spec:\n      template:\n        spec:\n          requirements:\n'
        '            - key: eks.amazonaws.com/nodegroup\n  EOT\n  filename = "${path.module}/k.yaml"\n}\n')
    r = scan(Repo(tmp_path))["pools.yaml.tpl"]
    assert [b.address for _, b in r.appliers] == ["null_resource.apply"] and r.applier is not None
    assert [o.block.address for o in inline(Repo(tmp_path))] == ["local_file.karpenter_pool"]
