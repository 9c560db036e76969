"""The EKS Auto Mode hop (`--to auto-mode`): conversion, the cluster's enable, the walk's end state, what never goes."""
from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import hcl2
import pytest
from ruamel.yaml import YAML

from migrator.apply import apply_changes
from migrator.path import parse_target
from migrator.options import Options
from migrator.plan import make_plan
from migrator.rules.auto import convert
from migrator.validate import validate_object

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _hcl(text: str):
    """python-hcl2's tree with its quoted block labels and keys unquoted."""
    def plain(v):
        if isinstance(v, dict):
            return {k.strip('"'): plain(x) for k, x in v.items() if k != "__is_block__"}
        if isinstance(v, list):
            return [plain(x) for x in v]
        if isinstance(v, str) and v.startswith('"') and v.endswith('"'):
            v = v[1:-1]
        if isinstance(v, str) and v.startswith("<<"):               # a heredoc: its body
            return textwrap.dedent(v.split("\n", 1)[1].rsplit("\n", 1)[0])
        return v
    return plain(hcl2.loads(text))


def _obj(text: str):
    return YAML().load(text)


def _walk(tmp_path: Path, name: str) -> Path:
    work = tmp_path / "tree"
    shutil.copytree(FIXTURES / name / "input", work)
    for _ in range(10):
        plan = make_plan(work, to="auto-mode")
        assert not plan.has_errors, [f.message for f in plan.findings if f.severity == "error"]
        if not plan.changes:
            return work
        apply_changes(work, plan.changes)
    raise AssertionError("the walk does not end")


def test_target_names_the_exit_hop():
    t = parse_target("auto-mode")
    assert str(t) == "auto-mode" and t.exit_hop["to"] == "auto-mode" and t.chart


EC2 = """
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  role: KarpenterNodeRole
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: c}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: c}}]
  capacityReservationSelectorTerms: [{id: cr-1, ownerID: "123456789012"}]
  blockDeviceMappings:
    - {deviceName: /dev/xvda, rootVolume: true, ebs: {volumeSize: 50Gi, volumeType: io2, iops: 20000}}
  tags: {team: a, "kubernetes.io/cluster/c": owned}
"""


def test_nodeclass_carries_what_auto_mode_has_and_says_the_rest():
    c = convert.convert_nodeclass(_obj(EC2), convert.nodeclass_name("default"), "auto-node")
    spec = c.obj["spec"]
    assert c.obj["metadata"]["name"] == "default-auto"            # "default" is reserved for a NodeClass
    assert spec["role"] == "auto-node"
    assert spec["ephemeralStorage"] == {"size": "50Gi", "iops": 16000}      # clamped to Auto Mode's bound
    assert spec["capacityReservationSelectorTerms"] == [{"id": "cr-1", "owner": "123456789012"}]
    assert dict(spec["tags"]) == {"team": "a"}
    assert validate_object(c.obj) == []
    said = {(n.code, n.severity) for n in c.notes}
    assert ("MIG-AUTO-025", "warning") in said                     # the reserved tag
    assert ("MIG-AUTO-027", "warning") in said                     # io2 not carried
    assert ("MIG-AUTO-028", "warning") in said                     # iops clamped
    # user data Auto Mode cannot run: the class stays on Karpenter, with what to do to move it (issue 57)
    c = convert.convert_nodeclass(_obj(EC2.replace("spec:\n", "spec:\n  userData: echo hi\n", 1)), "default-auto",
                                  "auto-node")
    assert c.obj is None and c.notes[0].code == "MIG-AUTO-020" and "DaemonSet" in c.notes[0].manual_step


def test_windows_stays_on_karpenter():
    obj = _obj(EC2.replace("amiSelectorTerms: [{alias: al2023@latest}]", "amiFamily: Windows2022"))
    c = convert.convert_nodeclass(obj, "default-auto", "r")
    assert c.obj is None and c.notes[0].code == "MIG-AUTO-020"


POOL = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: web}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.k8s.aws/instance-family, operator: In, values: [m6i]}
        - {key: karpenter.k8s.aws/instance-size, operator: In, values: [small, large]}
        - {key: karpenter.k8s.aws/instance-tenancy, operator: In, values: [default]}
      expireAfter: 1440h
  limits: {cpu: 100}
"""


def test_nodepool_twin_on_the_nodeclass_under_the_temporary_taint():
    c = convert.convert_nodepool(_obj(POOL), "web-auto", "default-auto")
    t = c.obj["spec"]["template"]["spec"]
    assert c.obj["metadata"]["name"] == "web-auto"
    assert dict(t["nodeClassRef"]) == {"group": "eks.amazonaws.com", "kind": "NodeClass", "name": "default-auto"}
    assert [r["key"] for r in t["requirements"]] == ["eks.amazonaws.com/instance-family",
                                                     "eks.amazonaws.com/instance-size"]
    assert list(t["requirements"][1]["values"]) == ["large"]
    assert t["expireAfter"] == "504h"
    assert t["taints"] == [convert.FACTS["temporary_taint"]]
    assert c.obj["spec"]["limits"] == {"cpu": 100}
    assert validate_object(c.obj, "1.14.1") == []
    assert {"MIG-AUTO-030", "MIG-AUTO-032", "MIG-AUTO-033"} <= {n.code for n in c.notes}


def test_a_field_the_api_server_drops_is_not_carried_to_the_twin():
    """devyoushin/karpenter-practice: a taint written with a toleration's `operator`, and v1beta1's kubelet block on a
    v1 NodePool. The cluster never stored either; the twin used to copy them and fail its own validation (MIG-VAL-001,
    the whole phase held). Now the twin is the pool as the cluster holds it, each dropped field said with its line."""
    pool = _obj(POOL.replace("  template:\n    spec:\n",
                             "  template:\n    spec:\n      taints:\n        - key: nvidia.com/gpu\n"
                             "          operator: Exists\n          effect: NoSchedule\n"
                             "      kubelet:\n        maxPods: 20\n", 1))
    assert pool["spec"]["template"]["spec"]["taints"][0]["operator"] == "Exists"
    c = convert.convert_nodepool(pool, "web-auto", "default-auto")
    t = c.obj["spec"]["template"]["spec"]
    assert "kubelet" not in t and [dict(x) for x in t["taints"]][0] == {"key": "nvidia.com/gpu", "effect": "NoSchedule"}
    assert validate_object(c.obj, "1.14.1") == []
    dropped = {n.field: n.message for n in c.notes if n.code == "MIG-AUTO-063"}
    assert set(dropped) == {("spec", "template", "spec", "taints", 0, "operator"), ("spec", "template", "spec", "kubelet")}
    assert "spec.template.spec.taints[0].operator is not a field of NodePool" in dropped[
        ("spec", "template", "spec", "taints", 0, "operator")]
    assert pool["spec"]["template"]["spec"]["kubelet"] == {"maxPods": 20}     # the source object is untouched
    # a field a later release defines (a static NodePool's replicas, 1.8) is the pool's own: carried
    static = _obj(POOL.replace("  limits: {cpu: 100}\n", "  replicas: 3\n"))
    c = convert.convert_nodepool(static, "web-auto", "default-auto")
    assert c.obj["spec"]["replicas"] == 3 and not [n for n in c.notes if n.code == "MIG-AUTO-063"]


def test_v20_walk_ends_on_auto_mode_without_replacement_or_crd_deletion(tmp_path):
    work = _walk(tmp_path, "auto-mode-terraform-v20")
    main = _hcl((work / "main.tf").read_text())
    eks = next(m["eks"] for m in main["module"] if "eks" in m)
    assert eks["cluster_compute_config"] == {"enabled": True, "node_pools": []}
    assert eks["bootstrap_self_managed_addons"] is True             # never let v20 flip it: no replacement
    karp = _hcl((work / "karpenter.tf").read_text())
    releases = {k for r in karp.get("resource", []) for k in r.get("helm_release", {})}
    assert releases == {"karpenter_crd"}                           # the CRDs Auto Mode shares stay
    assert "module" not in karp                                    # the karpenter module went with the controller
    manifests = [v for r in karp["resource"] for v in r.get("kubectl_manifest", {}).values()]
    kinds = sorted(YAML().load(m["yaml_body"])["kind"] for m in manifests)
    assert kinds == ["NodeClass", "NodePool"]
    assert "karpenter.k8s.aws" not in (work / "apps" / "web.yaml").read_text()
    assert "module.karpenter" not in (work / "outputs.tf").read_text()
    entry = _hcl((work / "eks-auto-mode.tf").read_text())["resource"][0]["aws_eks_access_entry"]
    assert entry["auto_mode_node"]["type"] == "EC2"


def test_v21_walk_moves_yaml_objects_and_workload_pool_selectors(tmp_path):
    work = _walk(tmp_path, "auto-mode-terraform-v21")
    k = work / "k8s" / "karpenter"
    assert sorted(p.name for p in k.iterdir()) == ["kustomization.yaml", "nodeclass-auto-mode.yaml",
                                                    "nodepools-auto-mode.yaml"]
    nc = YAML().load((k / "nodeclass-auto-mode.yaml").read_text())
    assert nc["spec"]["role"] == "analytics-eks-auto"              # the module's role, named without a suffix
    pools = list(YAML().load_all((k / "nodepools-auto-mode.yaml").read_text()))
    assert all("taints" not in p["spec"]["template"]["spec"] or
               all(t["key"] != "eks-auto-mode" for t in p["spec"]["template"]["spec"]["taints"]) for p in pools)
    job = YAML().load((work / "k8s" / "apps" / "trainer.yaml").read_text())
    assert dict(job["spec"]["template"]["spec"]["nodeSelector"]) == {
        "karpenter.sh/nodepool": "gpu-auto", "eks.amazonaws.com/instance-gpu-manufacturer": "nvidia"}


def test_nothing_of_the_hop_runs_for_other_targets():
    plan = make_plan(FIXTURES / "auto-mode-terraform-v20" / "input", to="latest")
    assert plan.hop_to != "auto-mode" and not any(c.path == "eks-auto-mode.tf" for c in plan.changes)


def test_a_root_below_1_1_walks_the_onward_hop_first(tmp_path):
    work = tmp_path / "tree"
    shutil.copytree(FIXTURES / "auto-mode-terraform-v20" / "input", work)
    p = work / "karpenter.tf"
    p.write_text(p.read_text().replace('"1.3.3"', '"1.0.6"'))
    plan = make_plan(work, to="auto-mode")
    root = plan.roots[0]
    assert (root.hop_from, root.hop_to) == ("v1", "1.14.1") and any("auto-mode" in x for x in root.later)


_MODE_OF_VAR = '  access_config {\n    authentication_mode = var.cluster.access_config.authentication_mode\n  }\n'
_VAR = 'variable "cluster" {\n  default = {\n    access_config = {\n      authentication_mode = "%s"\n    }\n  }\n}\n'


@pytest.mark.parametrize("mode, error, var", [
    ("", True, None), ('  access_config {\n    authentication_mode = "API"\n  }\n', False, None),
    # the mode a variable's default states (guiipedroso/Scalable-Data-Platform-on-EKS-with-Karpenter-and-Terraform):
    # read through the object; before, any expression read as aws-auth only and the enable phase was held
    (_MODE_OF_VAR, False, "API_AND_CONFIG_MAP"), (_MODE_OF_VAR, True, "CONFIG_MAP"),
    ('  access_config {\n    authentication_mode = var.mode\n  }\n', True, ""),
])
def test_hand_written_cluster_gets_the_three_blocks_and_needs_access_entries(tmp_path, mode, error, var):
    work = tmp_path / "tree"
    shutil.copytree(FIXTURES / "auto-mode-terraform-v21" / "input", work)
    (work / "eks.tf").unlink()
    (work / "cluster.tf").write_text(
        'resource "aws_iam_role" "cluster" {\n  name = "c"\n  assume_role_policy = jsonencode({\n'
        '    Version = "2012-10-17"\n    Statement = [{\n      Effect    = "Allow"\n'
        '      Principal = { Service = "eks.amazonaws.com" }\n      Action    = "sts:AssumeRole"\n    }]\n  })\n}\n\n'
        'resource "aws_eks_cluster" "this" {\n  name     = "analytics"\n  role_arn = aws_iam_role.cluster.arn\n\n'
        '  vpc_config {\n    subnet_ids = ["subnet-1", "subnet-2"]\n  }\n' + mode + '}\n'
        + ("" if var is None else "\n" + (_VAR % var if var else 'variable "mode" {\n  type = string\n}\n')))
    plan = make_plan(work, to="auto-mode")
    assert plan.has_errors == error
    if error:
        said = [f for f in plan.findings if f.code == "MIG-AUTO-006"]
        assert said
        if var == "":                   # no value stated: said as unknown, never as aws-auth only
            assert "does not state" in said[0].message and "aws-auth only" not in said[0].message
        if var == "CONFIG_MAP":
            assert "= CONFIG_MAP" in said[0].message
        assert not plan.changes                                    # the enable phase lands whole or not at all
        return
    new = {c.path: c.new for c in plan.changes}
    cluster = _hcl(new["cluster.tf"])["resource"]
    eks = next(r["aws_eks_cluster"]["this"] for r in cluster if "aws_eks_cluster" in r)
    assert eks["compute_config"][0] == {"enabled": True, "node_pools": []}
    assert eks["storage_config"][0]["block_storage"][0]["enabled"] is True
    assert eks["kubernetes_network_config"][0]["elastic_load_balancing"][0]["enabled"] is True
    assert "sts:TagSession" in new["cluster.tf"]
    extra = _hcl(new["eks-auto-mode.tf"])["resource"]
    names = {k for r in extra for t in r.values() for k in t}
    assert {"auto_mode_node", "cluster_eks_compute_policy"} <= names


AUTO_POOL = """apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: primary
spec:
  template:
    spec:
      nodeClassRef:
        group: eks.amazonaws.com
        kind: NodeClass
        name: default
      requirements:
        - key: eks.amazonaws.com/instance-category
          operator: In
          values: ["c", "m"]
"""
NATIVE = """module "eks" {
  source  = "terraform-aws-modules/eks/aws"
  version = "~> 21.0"

  name               = "%s"
  kubernetes_version = "1.33"

  compute_config = {
    enabled    = true
    node_pools = ["general-purpose"]
  }
}
"""


def test_a_cluster_made_on_auto_mode_is_never_enabled_again(tmp_path):
    """vettom/aws-eks-terraform: clusters created on Auto Mode with its built-in pools and NodePools of their own.
    Nothing is planned for them (the enable phase once took their built-in pool away and gave their node role an
    access entry), and several such folders are each their own cluster, owning only their own Terraform."""
    for name in ("auto-a", "auto-b"):
        (tmp_path / name / "bootstrap").mkdir(parents=True)
        (tmp_path / name / "eks.tf").write_text(NATIVE % name)
        (tmp_path / name / "bootstrap" / "nodepool.yaml").write_text(AUTO_POOL)
    (tmp_path / "plain").mkdir()                # another cluster's root module, with no Karpenter and no objects
    (tmp_path / "plain" / "eks.tf").write_text(NATIVE % "plain")
    plan = make_plan(tmp_path, to="auto-mode")
    assert not plan.changes and not plan.has_errors
    assert {r.path: (r.era, r.next) for r in plan.roots} == {
        f"{n}/bootstrap": ("auto-mode", "nothing: EKS Auto Mode") for n in ("auto-a", "auto-b")}


HANDMADE_IAM = """data "aws_iam_policy_document" "node_trust" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["ec2.amazonaws.com"]
    }
  }
}

resource "aws_iam_role" "karpenter_node" {
  name               = "karpenter-node-${var.cluster}"
  assume_role_policy = data.aws_iam_policy_document.node_trust.json
}

resource "aws_iam_role_policy_attachment" "karpenter_node_worker" {
  role       = aws_iam_role.karpenter_node.name
  policy_arn = "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy"
}

resource "aws_iam_role_policy_attachment" "karpenter_node_s3" {
  role       = aws_iam_role.karpenter_node.name
  policy_arn = aws_iam_policy.artifacts.arn
}

resource "aws_iam_policy" "artifacts" {
  name   = "artifacts-read"
  policy = jsonencode({ Version = "2012-10-17", Statement = [{ Effect = "Allow", Action = "s3:GetObject", Resource = "*" }] })
}

resource "aws_iam_role_policy_attachment" "builders_artifacts" {
  role       = aws_iam_role.builders.name
  policy_arn = aws_iam_policy.artifacts.arn
}

resource "aws_iam_role" "builders" {
  name               = "builders"
  assume_role_policy = data.aws_iam_policy_document.node_trust.json
}

resource "aws_eks_access_entry" "karpenter_node" {
  cluster_name  = var.cluster
  principal_arn = aws_iam_role.karpenter_node.arn
  type          = "EC2_LINUX"
}

resource "aws_sqs_queue" "karpenter" {
  name = "karpenter-${var.cluster}"
}

resource "aws_cloudwatch_event_rule" "spot" {
  event_pattern = jsonencode({ source = ["aws.ec2"], detail-type = ["EC2 Spot Instance Interruption Warning"] })
}

resource "aws_cloudwatch_event_target" "spot" {
  rule = aws_cloudwatch_event_rule.spot.name
  arn  = aws_sqs_queue.karpenter.arn
}

resource "aws_iam_policy" "karpenter_controller" {
  name = "KarpenterController"
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [
      { Sid = "AllowScopedEC2InstanceActions", Effect = "Allow", Resource = "*",
      Action = ["ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate"] },
      { Sid = "AllowPassingInstanceRole", Effect = "Allow", Action = "iam:PassRole",
      Resource = "arn:aws:iam::111122223333:role/karpenter-node-*" },
      { Sid = "AllowInterruptionQueueActions", Effect = "Allow", Resource = aws_sqs_queue.karpenter.arn,
      Action = ["sqs:DeleteMessage", "sqs:ReceiveMessage"] },
    ]
  })
}

output "queue" {
  value = aws_sqs_queue.karpenter.name
}
"""


def test_hand_written_aws_side_goes_with_the_controller_and_what_others_use_stays(tmp_path):
    """vettom/aws-eks-terraform EKS-Cluster-karpenter-V1 after its cutover: the controller is installed outside the
    repository and its IAM is written by hand; the root was dropped ("nothing: EKS Auto Mode") with all of it left."""
    (tmp_path / "objects").mkdir()
    (tmp_path / "objects" / "nodepool.yaml").write_text(AUTO_POOL)
    (tmp_path / "eks.tf").write_text(NATIVE.replace("~> 21.0", "21.3.1").replace(
        'node_pools = ["general-purpose"]', "node_pools = []") % "demo")
    (tmp_path / "iam.tf").write_text(HANDMADE_IAM)
    (tmp_path / "variables.tf").write_text('variable "cluster" {\n  default = "demo"\n}\n')
    plan = make_plan(tmp_path, to="auto-mode")
    (root,) = plan.roots
    assert (root.hop_to, root.phase) == ("auto-mode", "cleanup") and not plan.has_errors
    (change,) = plan.changes
    kept = _hcl(change.new)
    names = {f"{t}.{n}" for r in kept.get("resource", []) for t, v in r.items() for n in v}
    assert names == {"aws_iam_policy.artifacts", "aws_iam_role_policy_attachment.builders_artifacts",
                     "aws_iam_role.builders"}
    assert [d for r in kept["data"] for d in r["aws_iam_policy_document"]] == ["node_trust"]   # builders read it
    assert "output" not in kept
    codes = {(f.code, f.line) for f in plan.findings}
    assert ("MIG-AUTO-046", 21) in codes and any(c == "MIG-AUTO-047" for c, _ in codes)
    apply_changes(tmp_path, plan.changes)
    again = make_plan(tmp_path, to="auto-mode")
    assert not again.changes and again.roots[0].next == "nothing: EKS Auto Mode"


def test_argocd_walk_removes_the_controller_application_and_the_hand_written_aws_side(tmp_path):
    """Argo CD installs the charts and syncs the objects' folder; the cluster and Karpenter's IAM, queue and rules
    are written by hand in Terraform. The controller Application goes (after the CRDs are marked to stay, since it
    also applied them), the karpenter-crd Application stays, and so does every block that is not Karpenter's."""
    work = tmp_path / "tree"
    shutil.copytree(FIXTURES / "auto-mode-argocd" / "input", work)
    for run in range(10):
        plan = make_plan(work, to="auto-mode")
        assert not plan.has_errors
        if plan.roots[0].phase == "cleanup":
            assert any(f.code == "MIG-AUTO-048" and f.path == "gitops/apps/karpenter.yaml" for f in plan.findings)
            (step,) = [s for s in plan.steps if s.phase == "cleanup"]
            # nothing of Karpenter's own left in the cluster first (pools applied from elsewhere need the controller)
            assert step.commands[0].startswith("kubectl get ec2nodeclasses.karpenter.k8s.aws -o name # must print")
            assert step.commands[1].startswith("kubectl annotate crd nodepools.karpenter.sh nodeclaims.karpenter.sh "
                                               "argocd.argoproj.io/sync-options=Delete=false")
            assert step.commands[1].endswith("argocd app delete karpenter --cascade")
            assert step.commands[2].startswith("terraform -chdir=infra plan")      # the controller first, then IAM
            # the local only the controller's role read stays, said
            assert any(f.code == "MIG-AUTO-049" and f.message.startswith("local.oidc was read only by")
                       and "aws_iam_role.karpenter_controller" in f.message for f in plan.findings)
        if not plan.changes:
            break
        apply_changes(work, plan.changes)
    assert sorted(p.name for p in (work / "gitops" / "apps").iterdir()) == ["karpenter-crd.yaml",
                                                                           "karpenter-nodes.yaml"]
    left = _hcl((work / "infra" / "karpenter.tf").read_text())
    assert "resource" not in left and "output" not in left
    cluster = _hcl((work / "infra" / "cluster.tf").read_text())["resource"]
    assert {k for r in cluster for t in r.values() for k in t} == {"cluster", "orders"}
    objects = list(YAML().load_all((work / "gitops" / "karpenter" / "default-auto-mode.yaml").read_text()))
    assert sorted(o["kind"] for o in objects) == ["NodeClass", "NodePool"]
    nc = next(o for o in objects if o["kind"] == "NodeClass")
    assert nc["spec"]["role"] == "orders-auto-mode-node" and nc["spec"]["ephemeralStorage"]["size"] == "80Gi"
    assert validate_object(nc) == []


def test_no_nodepool_is_written_or_cut_over_without_the_nodeclass_it_names(tmp_path):
    """aws-samples/eks-saas-gitops (cluster outside the root, no node role given): the NodeClass could not be written
    (MIG-AUTO-010) but the -auto NodePools were, and the next runs cut the old pools over to twins naming a NodeClass
    that did not exist. The nodepools phase now lands whole or not at all, and no old pool goes before its twin's
    NodeClass exists."""
    work = tmp_path / "tree"
    shutil.copytree(FIXTURES / "auto-mode-terraform-v21" / "input", work)
    (work / "eks.tf").unlink()
    plan = make_plan(work, to="auto-mode")
    assert plan.roots[0].phase == "nodepools" and any(f.code == "MIG-AUTO-010" for f in plan.findings)
    assert plan.changes == []
    # a twin written by hand on a NodeClass nobody wrote: the old pool stays, said as an error
    k = work / "k8s" / "karpenter"
    pools = list(YAML().load_all((k / "nodepools.yaml").read_text()))
    twin = pools[0]
    twin["metadata"]["name"] = "general-auto"
    twin["spec"]["template"]["spec"]["nodeClassRef"] = {"group": "eks.amazonaws.com", "kind": "NodeClass",
                                                        "name": "missing"}
    twin["spec"]["template"]["spec"]["requirements"] = []
    from io import StringIO
    out = StringIO()
    YAML().dump(twin, out)
    (k / "general-auto.yaml").write_text(out.getvalue())
    (k / "kustomization.yaml").write_text((k / "kustomization.yaml").read_text() + "  - general-auto.yaml\n")
    plan = make_plan(work, to="auto-mode", phase="cutover", options=None)
    assert any(f.code == "MIG-AUTO-018" and f.path == "k8s/karpenter/general-auto.yaml" for f in plan.findings)
    assert not any("name: general\n" in (c.old or "") and "name: general\n" not in (c.new or "")
                   for c in plan.changes)


def test_a_cluster_made_inside_a_module_the_root_calls_is_not_taken_for_a_hand_written_one(tmp_path):
    """terraform-aws-modules/terraform-aws-eks examples/karpenter calls the module by `source = "../.."`: the module's
    own aws_eks_cluster (no access_config literal) was planned as the root's hand-written cluster and stopped the
    walk with a false MIG-AUTO-006; the karpenter module's internals were then taken for hand-written IAM."""
    (tmp_path / "main.tf").write_text('resource "aws_eks_cluster" "this" {\n  name     = var.name\n'
                                      '  role_arn = var.role\n\n  vpc_config {\n    subnet_ids = var.subnets\n  }\n}\n')
    ex = tmp_path / "examples" / "karpenter"
    ex.mkdir(parents=True)
    (ex / "main.tf").write_text(
        'module "eks" {\n  source = "../.."\n\n  name = "ex"\n}\n\n'
        'resource "helm_release" "karpenter" {\n  name    = "karpenter"\n  chart   = "karpenter"\n'
        '  version = "1.6.0"\n}\n')
    (ex / "karpenter.yaml").write_text(EC2.strip() + "\n---\n" + POOL.strip() + "\n")
    plan = make_plan(tmp_path, to="auto-mode", options=Options(auto_mode_node_role="ex-auto"))
    assert not plan.has_errors, [f.message for f in plan.findings if f.severity == "error"]
    said = next(f for f in plan.findings if f.code == "MIG-AUTO-002")
    assert "inside the module in ." in said.message
    assert plan.roots[0].phase == "nodepools" and all(c.path.startswith("examples/") for c in plan.changes)


def test_of_several_clusters_in_a_root_the_one_karpenter_is_installed_beside_is_enabled(tmp_path):
    """aws-samples/karpenter-blueprints: one root spans cluster/terraform (Karpenter's cluster, chart and module) and
    cluster/automode (an Auto Mode example cluster); MIG-AUTO-001 stopped the walk."""
    for name, extra in (("terraform", 'resource "helm_release" "karpenter" {\n  name    = "karpenter"\n'
                                      '  chart   = "karpenter"\n  version = "1.8.3"\n}\n'), ("automode", "")):
        d = tmp_path / "cluster" / name
        d.mkdir(parents=True)
        (d / "main.tf").write_text(NATIVE.replace("~> 21.0", "21.3.1").replace(
            '  compute_config = {\n    enabled    = true\n    node_pools = ["general-purpose"]\n  }\n',
            "" if extra else '  compute_config = {\n    enabled    = true\n    node_pools = ["general-purpose"]\n  }\n')
            % name + "\n" + extra)
    (tmp_path / "blueprints").mkdir()
    (tmp_path / "blueprints" / "pool.yaml").write_text(EC2.strip() + "\n---\n" + POOL.strip() + "\n")
    plan = make_plan(tmp_path, to="auto-mode")
    assert not any(f.code == "MIG-AUTO-001" for f in plan.findings)
    assert plan.roots[0].phase == "enable"
    assert {c.path for c in plan.changes} == {"cluster/terraform/main.tf", "cluster/terraform/eks-auto-mode.tf"}


def test_the_karpenter_modules_extra_node_policies_are_said_when_nothing_carries_them(tmp_path):
    """terraform-aws-modules examples/karpenter: the cluster is not declared in the root, so the enable phase could
    not carry node_iam_role_additional_policies (SSM) to the Auto Mode node role; the cleanup dropped them unsaid."""
    (tmp_path / "pool.yaml").write_text(AUTO_POOL)
    (tmp_path / "karpenter.tf").write_text(
        'module "karpenter" {\n  source  = "terraform-aws-modules/eks/aws//modules/karpenter"\n  version = "21.3.1"\n\n'
        '  cluster_name = "ex"\n\n  node_iam_role_additional_policies = {\n'
        '    AmazonSSMManagedInstanceCore = "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore"\n  }\n}\n')
    plan = make_plan(tmp_path, to="auto-mode")
    assert plan.roots[0].phase == "cleanup"
    assert any(f.code == "MIG-AUTO-017" and f.line == 7 for f in plan.findings)
    assert [c.action for c in plan.changes] == ["delete"]


def test_a_pass_role_on_every_role_names_no_node_role(tmp_path):
    """A controller policy that passes `role/*` names no role in particular: another EC2 role of the module (here a
    reporting instance's) is not taken for Karpenter's node role and stays."""
    (tmp_path / "pool.yaml").write_text(AUTO_POOL)
    (tmp_path / "eks.tf").write_text(NATIVE.replace("~> 21.0", "21.3.1").replace(
        'node_pools = ["general-purpose"]', "node_pools = []") % "demo")
    iam = HANDMADE_IAM.replace("arn:aws:iam::111122223333:role/karpenter-node-*", "arn:aws:iam::111122223333:role/*")
    iam += ('\nresource "aws_iam_role" "reporting" {\n  name               = "reporting"\n'
            '  assume_role_policy = data.aws_iam_policy_document.node_trust.json\n}\n\n'
            'resource "aws_iam_role_policy_attachment" "reporting" {\n  role       = aws_iam_role.reporting.name\n'
            '  policy_arn = "arn:aws:iam::aws:policy/CloudWatchAgentServerPolicy"\n}\n')
    (tmp_path / "iam.tf").write_text(iam)
    (tmp_path / "variables.tf").write_text('variable "cluster" {\n  default = "demo"\n}\n')
    plan = make_plan(tmp_path, to="auto-mode")
    (change,) = plan.changes
    kept = _hcl(change.new)
    names = {f"{t}.{n}" for r in kept.get("resource", []) for t, v in r.items() for n in v}
    assert {"aws_iam_role.reporting", "aws_iam_role_policy_attachment.reporting"} <= names
    assert "aws_sqs_queue.karpenter" not in names and "aws_iam_policy.karpenter_controller" not in names


def test_eksctl_addons_below_auto_modes_minimums_are_raised_and_applied_first(tmp_path):
    """`addons[].version` older than Auto Mode needs is raised in place (quoting kept); `latest` and versions at the
    minimum stay; the runbook updates the add-ons before it turns Auto Mode on."""
    work = tmp_path / "tree"
    shutil.copytree(FIXTURES / "auto-mode-eksctl-flux" / "input", work)
    plan = make_plan(work, to="auto-mode")
    cfg = next(c for c in plan.changes if c.path == "cluster.yaml")
    addons = {a["name"]: a["version"] for a in _obj(cfg.new)["addons"]}
    assert addons == {"vpc-cni": "v1.19.0-eksbuild.1", "kube-proxy": "latest",
                      "eks-pod-identity-agent": "v1.3.4-eksbuild.1"}
    assert '    version: "v1.3.4-eksbuild.1"\n' in cfg.new
    (step,) = [s for s in plan.steps if s.phase == "enable"]
    assert step.commands[0] == "eksctl update addon -f cluster.yaml && eksctl update auto-mode-config -f cluster.yaml"


def test_the_node_group_that_hosted_the_controller_is_offered_for_removal_and_left(tmp_path):
    """At the cleanup, the group marked for the controller (its karpenter.sh/controller label, a group the chart's
    nodeSelector pins it to) is named with its file and line, and stays: coredns and the add-ons may run there."""
    work = tmp_path / "tree"
    shutil.copytree(FIXTURES / "auto-mode-terraform-v20" / "input", work)
    for _ in range(10):
        plan = make_plan(work, to="auto-mode")
        if plan.roots[0].phase == "cleanup":
            break
        apply_changes(work, plan.changes)
    (f,) = [f for f in plan.findings if f.code == "MIG-AUTO-050"]
    assert (f.path, f.line) == ("main.tf", 28) and "node group karpenter" in f.message
    assert "karpenter = {" in next(c.new for c in plan.changes if c.path == "main.tf") if any(
        c.path == "main.tf" for c in plan.changes) else True
    (step,) = [s for s in plan.steps if s.phase == "cleanup"]
    assert "The node group that hosted Karpenter's controller (karpenter) can go" in step.detail


@pytest.mark.parametrize("extra, arn", [
    ("", "arn:aws:iam::aws:policy/AmazonEKSComputePolicy"),
    ('data "aws_partition" "current" {}\n', "arn:${data.aws_partition.current.partition}:iam::aws:policy/"
                                           "AmazonEKSComputePolicy"),
    ('provider "aws" {\n  region = "cn-north-1"\n}\n', "arn:aws-cn:iam::aws:policy/AmazonEKSComputePolicy")])
def test_aws_managed_arns_are_written_in_the_clusters_partition(tmp_path, extra, arn):
    """The policies migrator attaches (cluster role, node role, the access policy) name the partition the module
    states: its aws_partition data source, or its provider's China / GovCloud region; else `aws`."""
    work = tmp_path / "tree"
    shutil.copytree(FIXTURES / "auto-mode-terraform-v21" / "input", work)
    (work / "eks.tf").unlink()
    (work / "cluster.tf").write_text(
        extra + 'resource "aws_iam_role" "cluster" {\n  name = "c"\n  assume_role_policy = jsonencode({\n'
        '    Version = "2012-10-17"\n    Statement = [{\n      Effect    = "Allow"\n'
        '      Principal = { Service = "eks.amazonaws.com" }\n      Action    = "sts:AssumeRole"\n    }]\n  })\n}\n\n'
        'resource "aws_eks_cluster" "this" {\n  name     = "analytics"\n  role_arn = aws_iam_role.cluster.arn\n\n'
        '  access_config {\n    authentication_mode = "API"\n  }\n\n'
        '  vpc_config {\n    subnet_ids = ["subnet-1", "subnet-2"]\n  }\n}\n')
    plan = make_plan(work, to="auto-mode")
    assert not plan.has_errors
    new = next(c.new for c in plan.changes if c.path == "eks-auto-mode.tf")
    assert f'policy_arn = "{arn}"' in new
    assert "cluster-access-policy/AmazonEKSAutoNodePolicy" in new and \
        new.count(f'"arn:{arn.split(":")[1] if "$" not in arn else "${data.aws_partition.current.partition}"}:') >= 3


def test_the_group_the_charts_affinity_names_is_the_controllers(tmp_path):
    """No label marks the group: the chart's node-group affinity names it (its values, not its operators)."""
    work = tmp_path / "tree"
    shutil.copytree(FIXTURES / "auto-mode-terraform-v20" / "input", work)
    main = work / "main.tf"
    main.write_text(main.read_text().replace("    karpenter = {", "    system = {")
                    .replace('      labels = {\n        "karpenter.sh/controller" = "true"\n      }\n', ""))
    karp = work / "karpenter.tf"
    karp.write_text(karp.read_text().replace(
        "    settings:\n", "    affinity:\n      nodeAffinity:\n        requiredDuringSchedulingIgnoredDuringExecution:\n"
        "          nodeSelectorTerms:\n            - matchExpressions:\n                - key: eks.amazonaws.com/nodegroup\n"
        "                  operator: In\n                  values: [system]\n    settings:\n"))
    for _ in range(10):
        plan = make_plan(work, to="auto-mode")
        if plan.roots[0].phase == "cleanup":
            break
        apply_changes(work, plan.changes)
    (f,) = [f for f in plan.findings if f.code == "MIG-AUTO-050"]
    assert "node group system" in f.message and "affinity" in f.message


def test_pools_auto_mode_cannot_run_stay_on_karpenter():
    """Issue 57: custom user data, an AMI of the team's own, kubelet settings or amiFamily Custom keep an EC2NodeClass
    (its NodePools and the controller) on Karpenter; AWS's own images by alias move."""
    from migrator.rules.auto.convert import blocked_why

    def nc(**spec):
        return {"spec": {"role": "r", "amiSelectorTerms": [{"alias": "al2023@latest"}], **spec}}
    assert blocked_why(nc()) is None
    assert "user data" in blocked_why(nc(userData="#!/bin/bash\necho hi\n"))[0]
    why, manual = blocked_why(nc(kubelet={"maxPods": 58}))
    assert "maxPods" in why and "remove kubelet" in manual
    assert "its own AMI" in blocked_why(nc(amiSelectorTerms=[{"name": "gpu-*", "owner": "111122223333"}]))[0]
    assert "Custom" in blocked_why(nc(amiFamily="Custom", amiSelectorTerms=[{"alias": "al2023@latest"}]))[0]
    assert "Windows" in blocked_why(nc(amiFamily="Windows2022"))[0]


def test_a_hybrid_move_ends_saying_what_stays():
    from migrator.plan import make_plan
    from .conftest import FIXTURES
    from .conftest import fixture_walk
    walk = fixture_walk("auto-mode-hybrid")
    plan = make_plan(FIXTURES / "auto-mode-hybrid" / f"expected-run-{walk['runs']}", to="auto-mode")
    (r,) = plan.roots
    assert not plan.changes and not r.phase and "stay on Karpenter" in r.next
    assert sorted(f.path for f in plan.findings if f.code == "MIG-AUTO-020") == ["gitops/karpenter/gpu.yaml"] * 2
    final = FIXTURES / "auto-mode-hybrid" / f"expected-run-{walk['runs']}"
    assert (final / "gitops" / "workloads" / "ranker.yaml").read_bytes() == \
        (FIXTURES / "auto-mode-hybrid" / "input" / "gitops" / "workloads" / "ranker.yaml").read_bytes()
    assert (final / "gitops" / "apps" / "karpenter.yaml").exists()      # the controller stays


def test_an_ebs_storage_class_gets_its_auto_mode_twin_once(tmp_path):
    """Issue 57: a StorageClass of ebs.csi.aws.com gets `<name>-auto` on ebs.csi.eks.amazonaws.com appended to its
    file with the new pools (not a second default); a Terraform class and an alternate CNI are said."""
    from .conftest import FIXTURES, fixture_walk
    final = FIXTURES / "auto-mode-hybrid" / f"expected-run-{fixture_walk('auto-mode-hybrid')['runs']}"
    text = (final / "gitops" / "karpenter" / "storage.yaml").read_text()
    twin = text.split("---\n")[1]
    assert "name: gp3-auto" in twin and "provisioner: ebs.csi.eks.amazonaws.com" in twin and "type: gp3" in twin
    assert "is-default-class" not in twin
    assert text.startswith((FIXTURES / "auto-mode-hybrid" / "input" / "gitops" / "karpenter" / "storage.yaml").read_text())
    runbook = (FIXTURES / "auto-mode-hybrid" / "runbook-run-1.md").read_text()
    assert "MIG-AUTO-052" in runbook and "MIG-AUTO-053" in runbook
    from migrator.rules.auto.storage import _terraform_classes
    from types import SimpleNamespace
    from migrator.inventory import Repo

    def run(text: str):
        (tmp_path / "main.tf").write_text(text)
        res = SimpleNamespace(findings=[], edits=[], files=[], created=[], tf_targets=[])
        _terraform_classes(SimpleNamespace(repo=Repo(tmp_path), owns=lambda p: True), res)
        return res
    # a Terraform class gets its twin block (the walk is fixtures/auto-mode-scripts), once
    res = run('resource "kubernetes_storage_class_v1" "gp3" {\n  metadata {\n    name = "gp3"\n  }\n'
              '  storage_provisioner = "ebs.csi.aws.com"\n}\n')
    (f,), (e,) = res.findings, res.edits
    assert f.code == "MIG-AUTO-052" and f.severity == "info" and "gp3_auto" in f.message
    assert '"gp3_auto"' in e.text and 'name = "gp3-auto"' in e.text and '"ebs.csi.eks.amazonaws.com"' in e.text
    assert res.tf_targets == [(".", "kubernetes_storage_class_v1.gp3_auto")]
    assert run((tmp_path / "main.tf").read_text() + e.text).findings == []
    # a computed name, or a class made by for_each: said with the twin to write
    for body in ('  metadata {\n    name = var.name\n  }\n', '  for_each = toset(["a"])\n  metadata {\n'
                 '    name = each.key\n  }\n'):
        res = run(f'resource "kubernetes_storage_class_v1" "gp3" {{\n{body}  storage_provisioner = "ebs.csi.aws.com"\n}}\n')
        (f,) = res.findings
        assert not res.edits and "storage_provisioner = \"ebs.csi.eks.amazonaws.com\"" in f.manual_step
    # in a module a root calls: the twin would reach every caller, and its apply target is the call's: said
    (tmp_path / "storage").mkdir()
    (tmp_path / "storage" / "main.tf").write_text(
        'resource "kubernetes_storage_class_v1" "gp3" {\n  metadata {\n    name = "gp3"\n  }\n'
        '  storage_provisioner = "ebs.csi.aws.com"\n}\n')
    res = run('module "storage" {\n  source = "./storage"\n}\n')
    (f,) = res.findings
    assert f.path == "storage/main.tf" and not res.edits and "a root module" in f.message
    (tmp_path / "storage" / "main.tf").unlink()
    (tmp_path / "storage").rmdir()
    # a StorageClass in a kubectl_manifest's YAML: said too, never silent
    res = run('resource "kubectl_manifest" "gp3" {\n  yaml_body = <<-YAML\n    apiVersion: storage.k8s.io/v1\n'
              '    kind: StorageClass\n    metadata:\n      name: gp3\n    provisioner: ebs.csi.aws.com\n  YAML\n}\n')
    (f,) = res.findings
    assert f.code == "MIG-AUTO-052" and f.line == 7


def test_node_classes_that_come_out_the_same_are_said(tmp_path):
    """Two EC2NodeClasses that differ only in what Auto Mode does not carry (their AMIs) give the same NodeClass: both
    are written, as their pools name them, and the sameness is said once (MIG-AUTO-060)."""
    from .conftest import FIXTURES
    work = tmp_path / "tree"
    shutil.copytree(FIXTURES / "auto-mode-scripts" / "input", work)
    pools = work / "karpenter" / "nodepool.yaml"
    base = pools.read_text()
    cls, pool = base.split("---\n")
    pools.write_text(base + "---\n" + cls.replace("name: default", "name: legacy").replace("al2023@latest", "al2@latest")
                     + "---\n" + pool.replace("name: default\nspec:", "name: batch\nspec:").replace(
                         "        name: default", "        name: legacy"))
    make = lambda: make_plan(work, to="auto-mode")      # noqa: E731
    apply_changes(work, make().changes)                 # enable
    plan = make()
    assert plan.phase == "nodepools"
    (f,) = [f for f in plan.findings if f.code == "MIG-AUTO-060"]
    assert "NodeClasses default-auto, legacy come out the same" in f.message and f.severity == "info"
    apply_changes(work, plan.changes)
    twins = (work / "karpenter" / "nodepool-auto-mode.yaml").read_text()
    assert "name: default-auto" in twins and "name: legacy\n" in twins


def test_no_storage_class_twin_when_no_pool_moves(tmp_path):
    """A StorageClass twin serves pods on Auto Mode's nodes: when every pool stays on Karpenter (its class runs its own
    user data) there are none, and no twin is written (data-on-eks' infra/terraform: its gp3 class alone made a phase)."""
    from .conftest import FIXTURES
    work = tmp_path / "tree"
    shutil.copytree(FIXTURES / "auto-mode-scripts" / "input", work)
    pools = work / "karpenter" / "nodepool.yaml"
    pools.write_text(pools.read_text().replace("  amiSelectorTerms:\n",
                                               "  userData: |\n    echo hello\n  amiSelectorTerms:\n"))
    for _ in range(4):
        plan = make_plan(work, to="auto-mode")
        apply_changes(work, plan.changes)
    assert "gp3_auto" not in (work / "storage.tf").read_text()
    assert not make_plan(work, to="auto-mode").changes


def test_karpenter_from_outside_the_repository_gets_auto_mode_on_for_the_cluster_held_here(tmp_path):
    """Issue 57 item 3: the cluster is declared here, Karpenter comes from a team's own remote module: Auto Mode is
    turned on (no built-in pool), the module named with the order to follow; then the plan says the rest is there."""
    (tmp_path / "main.tf").write_text(
        'module "eks" {\n  source  = "terraform-aws-modules/eks/aws"\n  version = "~> 21.0"\n\n  name = "shop"\n}\n\n'
        'module "karpenter" {\n  source = "git::https://github.com/acme/terraform-karpenter.git?ref=v2.3.0"\n\n'
        '  cluster_name = module.eks.cluster_name\n}\n')
    (tmp_path / "versions.tf").write_text(
        'terraform {\n  required_providers {\n    aws = {\n      source  = "hashicorp/aws"\n      version = ">= 6.0"\n'
        '    }\n  }\n}\n')
    plan = make_plan(tmp_path, to="auto-mode")
    (r,) = plan.roots
    assert r.phase == "enable" and "terraform-karpenter" in r.next and not plan.has_errors
    main = next(c for c in plan.changes if c.path == "main.tf")
    assert "compute_config = {" in main.new and "node_pools = []" in main.new
    (f,) = [f for f in plan.findings if f.code == "MIG-SRC-023"]
    assert f.severity == "warning" and "remove this call last" in f.manual_step
    apply_changes(tmp_path, plan.changes)
    plan = make_plan(tmp_path, to="auto-mode")
    assert not plan.changes and plan.roots[0].next.startswith("nothing here: EKS Auto Mode is on")


def test_a_pool_chart_gets_auto_mode_templates_and_its_releases_name_the_pools_a_workload_selects():
    """Issue 57 item 1: a Helm chart of the repository that renders the pools (`{{ .Values.name }}`) gains Auto Mode
    templates beside its own, the name kept a template (a NodeClass always suffixed). The helm_release that installs
    the chart (a for_each over default and batch, `name: ${each.key}` in its values) states every pool's name, so the
    workload selecting `karpenter.sh/nodepool: batch` moves to batch-auto, and the walk goes to the end: the old
    templates removed by the release (terraform apply, never kubectl on a template), the controller last."""
    from .conftest import FIXTURES
    fx = FIXTURES / "auto-mode-pool-chart"
    t = fx / "expected-run-2" / "charts" / "karpenter-resources" / "templates"
    nodeclass = (t / "ec2nodeclass-auto-mode.yaml").read_text()
    pool = (t / "nodepool-auto-mode.yaml").read_text()
    assert "kind: NodeClass\nmetadata:\n  name: {{ .Values.name }}-auto\n" in nodeclass
    assert "name: {{ .Values.name }}-auto\n" in pool and "values: {{ toJson .Values.instanceFamilies }}" in pool
    assert "karpenter.sh/nodepool: batch-auto" in (fx / "expected-run-3" / "k8s" / "apps" / "trainer.yaml").read_text()
    final = fx / "expected-run-5"
    templates = sorted(p.name for p in (final / "charts" / "karpenter-resources" / "templates").iterdir())
    assert templates == ["ec2nodeclass-auto-mode.yaml", "nodepool-auto-mode.yaml"]
    eks = (final / "eks.tf").read_text()
    assert 'resource "helm_release" "karpenter"' not in eks and 'resource "helm_release" "pools"' in eks
    runbooks = "".join((fx / f"runbook-run-{i}.md").read_text() for i in range(5))
    assert "terraform apply -target=helm_release.pools" in runbooks
    assert "kubectl apply -f charts/" not in runbooks and "kubectl delete nodepool '{{" not in runbooks


def test_a_pool_name_no_release_states_holds_the_cutover_until_the_selector_names_the_twin(tmp_path):
    """The releases' pool names come from a variable the repository never sets: migrator cannot tell that batch is
    one of them, so it says the twin it would be (MIG-AUTO-054) and holds the cutover with an error, nothing removed;
    once the selector names the twin, the walk goes to the end."""
    from .conftest import FIXTURES
    work = tmp_path / "tree"
    shutil.copytree(FIXTURES / "auto-mode-pool-chart" / "expected-run-2", work)
    eks = work / "eks.tf"
    eks.write_text(eks.read_text().replace('for_each = toset(["default", "batch"])', "for_each = var.pools")
                   + 'variable "pools" {\n  type = set(string)\n}\n')
    plan = make_plan(work, to="auto-mode")
    (f,) = [f for f in plan.findings if f.code == "MIG-AUTO-054"]
    assert f.severity == "warning" and "batch-auto" in f.message
    apply_changes(work, plan.changes)
    job = work / "k8s" / "apps" / "trainer.yaml"
    assert "karpenter.sh/nodepool: batch\n" in job.read_text()
    plan = make_plan(work, to="auto-mode")
    (f,) = [f for f in plan.findings if f.code == "MIG-AUTO-054"]
    assert f.severity == "error" and not plan.changes
    job.write_text(job.read_text().replace("karpenter.sh/nodepool: batch", "karpenter.sh/nodepool: batch-auto"))
    for _ in range(3):
        plan = make_plan(work, to="auto-mode")
        assert not plan.has_errors, [f.message for f in plan.findings if f.severity == "error"]
        apply_changes(work, plan.changes)
    templates = sorted(p.name for p in (work / "charts" / "karpenter-resources" / "templates").iterdir())
    assert templates == ["ec2nodeclass-auto-mode.yaml", "nodepool-auto-mode.yaml"]
    assert 'resource "helm_release" "karpenter"' not in eks.read_text()      # the controller went last


def test_a_pool_chart_that_ranges_over_its_pools_gets_twins_inside_the_same_range():
    """fixtures/auto-mode-pool-chart-range (nuonco/byoc's shape): the templates repeat their object over
    `.Values.nodepools` with the range opened before the `---`. Each twin is written inside the same range, the old
    template files go whole at the cutover (their range opener too), and every template of every run balances."""
    from migrator.validate import unbalanced_actions
    from .conftest import FIXTURES
    fx = FIXTURES / "auto-mode-pool-chart-range"
    t = fx / "expected-run-2" / "charts" / "pools" / "templates"
    for name in ("nodeclass-auto-mode.yaml", "nodepool-auto-mode.yaml"):
        text = (t / name).read_text()
        assert text.startswith("{{- range .Values.nodepools }}\n---\n") and text.endswith("{{- end }}\n"), name
        assert "name: {{ .name }}-auto" in text
    runs = json.loads((fx / "walk.json").read_text())["runs"]
    for n in range(1, runs + 1):
        for f in (fx / f"expected-run-{n}" / "charts" / "pools" / "templates").iterdir():
            assert unbalanced_actions(f.name, f.read_text()) is None, (n, f.name)
    final = sorted(p.name for p in (fx / f"expected-run-{runs}" / "charts" / "pools" / "templates").iterdir())
    assert final == ["nodeclass-auto-mode.yaml", "nodepool-auto-mode.yaml"]


def test_a_pool_chart_an_argo_cd_application_renders_is_synced_never_kubectl_applied(tmp_path):
    """The range chart installed by an Argo CD Application (source.path at the chart's folder) instead of a
    helm_release: its templates reach the cluster when the Application renders them, so every step syncs it (the
    cutover with --prune: the old templates are gone from git); `kubectl apply -f` of a template would fail."""
    from migrator.render.markdown import render as render_markdown
    from .conftest import FIXTURES
    work = tmp_path / "tree"
    shutil.copytree(FIXTURES / "auto-mode-pool-chart-range" / "input", work)
    eks = work / "eks.tf"
    eks.write_text(eks.read_text().split("# the pools, one chart release")[0])
    (work / "argocd").mkdir()
    (work / "argocd" / "pools.yaml").write_text(textwrap.dedent("""\
        apiVersion: argoproj.io/v1alpha1
        kind: Application
        metadata:
          name: karpenter-pools
          namespace: argocd
        spec:
          project: default
          source:
            repoURL: https://github.com/example/analytics-infra.git
            path: charts/pools
            helm:
              values: |
                nodepools:
                  - name: general
                    families: ["m6i"]
          destination:
            server: https://kubernetes.default.svc
        """))
    runbooks = []
    for _ in range(5):
        plan = make_plan(work, to="auto-mode")
        runbooks.append(render_markdown(plan))
        apply_changes(work, plan.changes)
    text = "".join(runbooks)
    assert "argocd app sync karpenter-pools\n" in text and "argocd app sync karpenter-pools --prune" in text
    assert "kubectl apply -f charts/" not in text


def test_pool_names_come_from_the_argo_cd_applications_that_render_the_chart(tmp_path):
    """The pool chart rendered by one Argo CD Application per pool (source.path at the chart's folder, the pool's
    name in helm.valuesObject): the names are read from them, the trainer's selector moves to batch-auto, and the walk
    ends with only the Auto Mode templates; an Application whose value is a file of another source says nothing."""
    from migrator.inventory import Repo
    from migrator.rules.auto.poolnames import rendered_names
    from .conftest import FIXTURES
    work = tmp_path / "tree"
    shutil.copytree(FIXTURES / "auto-mode-pool-chart" / "input", work)
    eks = work / "eks.tf"
    eks.write_text(eks.read_text().split("# one release of the pool chart per pool")[0].rstrip("\n") + "\n")
    (work / "argocd").mkdir()
    app = textwrap.dedent("""\
        apiVersion: argoproj.io/v1alpha1
        kind: Application
        metadata:
          name: karpenter-pool-{pool}
          namespace: argocd
        spec:
          project: default
          source:
            repoURL: https://github.com/example/analytics-infra.git
            path: charts/karpenter-resources
            helm:
              valuesObject:
                name: {pool}
          destination:
            server: https://kubernetes.default.svc
        """)
    for pool in ("default", "batch"):
        (work / "argocd" / f"pool-{pool}.yaml").write_text(app.format(pool=pool))
    tpl = "charts/karpenter-resources/templates/nodepool.yaml"
    assert rendered_names(Repo(work), tpl, "{{ .Values.name }}") == {"default", "batch"}
    assert rendered_names(Repo(work), tpl, "{{ .Release.Name }}") == {"karpenter-pool-default", "karpenter-pool-batch"}
    for _ in range(6):
        plan = make_plan(work, to="auto-mode")
        assert not plan.has_errors, [f.message for f in plan.findings if f.severity == "error"]
        apply_changes(work, plan.changes)
    assert "karpenter.sh/nodepool: batch-auto" in (work / "k8s" / "apps" / "trainer.yaml").read_text()
    templates = sorted(p.name for p in (work / "charts" / "karpenter-resources" / "templates").iterdir())
    assert templates == ["ec2nodeclass-auto-mode.yaml", "nodepool-auto-mode.yaml"]
    other = work / "argocd" / "pool-batch.yaml"
    other.write_text(other.read_text().replace("      valuesObject:\n        name: batch\n",
                                                "      valueFiles:\n        - $values/pools/batch.yaml\n"))
    assert rendered_names(Repo(work), "charts/karpenter-resources/templates/nodepool-auto-mode.yaml",
                          "{{ .Values.name }}-auto") is None


def test_pool_names_come_from_the_flux_helmreleases_that_install_the_chart(tmp_path):
    """The pool chart installed by Flux HelmReleases from the GitRepository (`chart: ./charts/karpenter-resources`):
    the names come from their `spec.values` (release names `<targetNamespace>-<name>`), the trainer moves to
    batch-auto, every step reconciles Flux (never `kubectl apply` on a template), and `valuesFrom` says nothing."""
    from migrator.inventory import Repo
    from migrator.render.markdown import render as render_markdown
    from migrator.rules.auto.poolnames import rendered_names
    from .conftest import FIXTURES
    work = tmp_path / "tree"
    shutil.copytree(FIXTURES / "auto-mode-pool-chart" / "input", work)
    eks = work / "eks.tf"
    eks.write_text(eks.read_text().split("# one release of the pool chart per pool")[0].rstrip("\n") + "\n")
    release = textwrap.dedent("""\
        apiVersion: helm.toolkit.fluxcd.io/v2
        kind: HelmRelease
        metadata:
          name: pool-{pool}
          namespace: flux-system
        spec:
          interval: 10m
          targetNamespace: karpenter
          chart:
            spec:
              chart: ./charts/karpenter-resources
              sourceRef:
                kind: GitRepository
                name: flux-system
          values:
            name: {pool}
        """)
    (work / "clusters").mkdir()
    (work / "clusters" / "pools.yaml").write_text("---\n".join(release.format(pool=p) for p in ("default", "batch")))
    tpl = "charts/karpenter-resources/templates/nodepool.yaml"
    assert rendered_names(Repo(work), tpl, "{{ .Values.name }}") == {"default", "batch"}
    assert rendered_names(Repo(work), tpl, "{{ .Release.Name }}") == {"karpenter-pool-default", "karpenter-pool-batch"}
    long = work / "clusters" / "long.yaml"          # Flux shortens a composed name past 53 characters with a hash
    long.write_text(release.format(pool="x" * 50))
    assert rendered_names(Repo(work), tpl, "{{ .Release.Name }}") is None
    assert rendered_names(Repo(work), tpl, "{{ .Values.name }}") == {"default", "batch", "x" * 50}
    long.unlink()
    runbooks = []
    for _ in range(6):
        plan = make_plan(work, to="auto-mode")
        assert not plan.has_errors, [f.message for f in plan.findings if f.severity == "error"]
        runbooks.append(render_markdown(plan))
        apply_changes(work, plan.changes)
    assert "karpenter.sh/nodepool: batch-auto" in (work / "k8s" / "apps" / "trainer.yaml").read_text()
    text = "".join(runbooks)
    assert "flux reconcile kustomization flux-system --with-source" in text and "kubectl apply -f charts/" not in text
    pools = work / "clusters" / "pools.yaml"
    pools.write_text(pools.read_text().replace("  values:\n    name: batch\n",
                                               "  valuesFrom:\n    - kind: ConfigMap\n      name: batch-pool\n"))
    assert rendered_names(Repo(work), "charts/karpenter-resources/templates/nodepool-auto-mode.yaml",
                          "{{ .Values.name }}-auto") is None


def test_a_pool_template_migrator_cannot_read_holds_the_cutover(tmp_path):
    """A NodePool template that is no YAML with its actions masked (an if/else writing the same key twice, as
    nuonco/byoc's does) gets no twin: the nodepools phase says so, and the cutover holds with an error (MIG-AUTO-059)
    instead of removing the EC2NodeClasses it names, and then the controller."""
    from .conftest import FIXTURES
    work = tmp_path / "tree"
    shutil.copytree(FIXTURES / "auto-mode-pool-chart-range" / "input", work)
    pool = work / "charts" / "pools" / "templates" / "nodepool.yaml"
    pool.write_text(pool.read_text().replace(
        "  disruption:\n", "  disruption:\n    {{- if .budgets }}\n    budgets: {{ toJson .budgets }}\n"
        "    {{- else }}\n    budgets:\n      - nodes: \"10%\"\n    {{- end }}\n"))
    said = set()
    for _ in range(4):
        plan = make_plan(work, to="auto-mode")
        said |= {(f.code, f.severity, plan.phase) for f in plan.findings if f.code == "MIG-AUTO-059"}
        apply_changes(work, plan.changes)
    assert ("MIG-AUTO-059", "warning", "nodepools") in said
    plan = make_plan(work, to="auto-mode")
    (f,) = [f for f in plan.findings if f.code == "MIG-AUTO-059"]
    assert f.severity == "error" and f.path == "charts/pools/templates/nodepool.yaml" and not plan.changes
    assert (work / "charts" / "pools" / "templates" / "nodeclass.yaml").exists()


def test_an_unreadable_pool_in_an_example_nothing_applies_holds_no_cutover(tmp_path):
    """MIG-AUTO-059 holds the cutover for the root's own pools: a broken NodePool in an examples folder that nothing
    applies (no cluster's, MIG-SRC-022) does not stop the walk."""
    from .conftest import FIXTURES
    work = tmp_path / "tree"
    shutil.copytree(FIXTURES / "auto-mode-terraform-v20" / "input", work)
    broken = work / "examples" / "spot" / "nodepool.yaml"
    broken.parent.mkdir(parents=True)
    broken.write_text("apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata:\n  name: spot\n spec: [\n")
    phases = []
    for _ in range(6):
        plan = make_plan(work, to="auto-mode")
        assert not [f for f in plan.findings if f.code == "MIG-AUTO-059"]
        phases += [r.phase for r in plan.roots if r.changes]
        apply_changes(work, plan.changes)
    assert phases == ["enable", "nodepools", "workloads", "cutover", "cleanup"]
    assert broken.read_text().endswith(" spec: [\n")


def test_a_template_whose_actions_do_not_balance_is_never_written():
    from migrator.validate import unbalanced_actions
    assert unbalanced_actions("t.yaml", "{{- range .Values.p }}\n---\na: {{ .x }}\n{{- end }}\n") is None
    assert "closes no block" in unbalanced_actions("t.yaml", "a: 1\n{{- end }}\n")
    assert "never closed" in unbalanced_actions("t.yaml", "{{- if .x }}\na: 1\n")
    assert unbalanced_actions("main.tf", "x = <<EOT\n{{- end }}\nEOT\n") is None      # HCL is no Go template


def test_the_names_a_pool_chart_renders_come_only_from_what_its_releases_state(tmp_path):
    """rendered_names: each instance of each release that installs the chart from its folder, its values heredoc,
    `set` entries and the chart's defaults, `{{ .Release.Name }}` with text around it; None for a count, a value the
    repository does not state, or a chart something else installs too."""
    from migrator.inventory import Repo
    from migrator.rules.auto.poolnames import rendered_names
    chart = tmp_path / "charts" / "pools"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: pools\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text("pool:\n  name: general\n")
    tpl = "charts/pools/templates/nodepool.yaml"
    (tmp_path / tpl).write_text("kind: NodePool\n")

    def names(tf: str, raw: str = "{{ .Values.pool.name }}", extra: dict | None = None):
        (tmp_path / "main.tf").write_text(tf)
        for k, v in (extra or {}).items():
            (tmp_path / k).write_text(v)
        return rendered_names(Repo(tmp_path), tpl, raw)

    one = 'resource "helm_release" "a" {\n  name  = "a"\n  chart = "./charts/pools"\n}\n'
    assert names(one) == {"general"}                                          # the chart's default
    assert names(one, "{{ .Release.Name }}-spot") == {"a-spot"}
    each = ('resource "helm_release" "p" {\n  for_each = { gpu = "g5", cpu = "m6i" }\n'
            '  name  = "pools-${each.key}"\n  chart = "${path.module}/charts/pools"\n'
            '  set = [{ name = "pool.name", value = each.key }]\n}\n')
    assert names(each) == {"gpu", "cpu"}
    assert names(each, "{{ .Release.Name }}") == {"pools-gpu", "pools-cpu"}
    heredoc = ('resource "helm_release" "p" {\n  for_each = toset(["x"])\n  name  = "p"\n  chart = "./charts/pools"\n'
               '  values = [<<-EOT\n    pool:\n      name: ${each.key}-pool\n  EOT\n  ]\n}\n')
    assert names(heredoc) == {"x-pool"}
    assert names(heredoc.replace('toset(["x"])', "var.pools")) is None      # a for_each the repository does not state
    assert names(one.replace('name  = "a"', 'name  = "a"\n  count = 2')) is None
    assert names(one.replace('"./charts/pools"\n', '"./charts/pools"\n  values = [var.values]\n')) is None
    assert names(one, extra={"flux.yaml": "kind: HelmRelease\nspec:\n  chart:\n    spec:\n      chart: ./charts/pools\n"}) \
        is None                                                                # installed by Flux too: not told here


def test_a_storage_class_twin_never_copies_its_topology(tmp_path):
    """allowedTopologies may name the EBS CSI driver's own zone key: the twin does not copy it, and says so."""
    from types import SimpleNamespace
    from migrator.inventory import Repo
    from migrator.rules.auto.storage import twins
    (tmp_path / "sc.yaml").write_text(
        "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: gp3\nprovisioner: ebs.csi.aws.com\n"
        "allowedTopologies:\n  - matchLabelExpressions:\n      - key: topology.ebs.csi.aws.com/zone\n"
        "        values: [eu-west-1a]\n")
    res = SimpleNamespace(edits=[], files=[], created=[], findings=[])
    twins(SimpleNamespace(repo=Repo(tmp_path), owns=lambda p: True), res)
    (e,) = res.edits
    assert "name: gp3-auto" in e.text and "allowedTopologies" not in e.text
    assert any("allowedTopologies is not copied" in f.message for f in res.findings)


def test_the_cleanup_keeps_the_eks_add_ons_while_other_nodes_run_and_says_when_they_can_go(tmp_path):
    """Issue 57 item 5: teams removed vpc-cni, kube-proxy and coredns in the commit that turned Auto Mode on, while
    managed nodes still ran. The cleanup never removes them, and says when they can go."""
    import shutil
    from migrator.apply import apply_changes
    from migrator.plan import make_plan
    root = tmp_path / "r"
    shutil.copytree(Path(__file__).parent.parent / "fixtures" / "auto-mode-terraform-v20" / "input", root)
    for _ in range(4):
        apply_changes(root, make_plan(root, to="auto-mode").changes)
    plan = make_plan(root, to="auto-mode")
    assert plan.phase == "cleanup"
    (f,) = [f for f in plan.findings if f.code == "MIG-AUTO-055"]
    assert "coredns, eks-pod-identity-agent, kube-proxy, vpc-cni" in f.message and "node groups karpenter" in f.message
    assert not any("cluster_addons" in c.old and "cluster_addons" not in c.new for c in plan.changes)
    main = root / "main.tf"
    text = main.read_text()
    start = text.index("  eks_managed_node_groups = {")
    main.write_text(text[:start] + text[text.index("\n  }\n", start) + 5:])
    (f,) = [f for f in make_plan(root, to="auto-mode").findings if f.code == "MIG-AUTO-055"]
    assert "redundant once only EKS Auto Mode's nodes run" in f.message and "compute-type!=auto" in f.manual_step


def test_hand_written_node_role_policies_are_carried_to_the_auto_mode_node_role_when_it_is_enabled(tmp_path):
    """Issue 57 item 4: a policy attached by hand to Karpenter's node role (an S3 read policy) was said only at the
    cleanup, after the workloads had moved to nodes without it. The enable phase now carries each plain attachment
    to the eks module's node_iam_role_additional_policies; the cleanup then does not say it again."""
    (tmp_path / "objects").mkdir()
    (tmp_path / "objects" / "nodepool.yaml").write_text(
        "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata:\n  name: default\nspec:\n  template:\n    spec:\n"
        "      nodeClassRef:\n        group: karpenter.k8s.aws\n        kind: EC2NodeClass\n        name: default\n"
        "      requirements:\n        - key: karpenter.sh/capacity-type\n          operator: In\n"
        "          values: [\"on-demand\"]\n---\napiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nmetadata:\n"
        "  name: default\nspec:\n  role: karpenter-node-demo\n  amiSelectorTerms:\n    - alias: al2023@latest\n"
        "  subnetSelectorTerms:\n    - tags:\n        karpenter.sh/discovery: demo\n"
        "  securityGroupSelectorTerms:\n    - tags:\n        karpenter.sh/discovery: demo\n")
    eks = NATIVE.replace("  compute_config = {\n    enabled    = true\n    node_pools = [\"general-purpose\"]\n  }\n",
                         "  node_iam_role_use_name_prefix = false\n") % "demo"
    (tmp_path / "eks.tf").write_text(eks)
    (tmp_path / "iam.tf").write_text(HANDMADE_IAM)
    (tmp_path / "variables.tf").write_text('variable "cluster" {\n  default = "demo"\n}\n')
    (tmp_path / "karpenter.tf").write_text(
        'resource "helm_release" "karpenter" {\n  name       = "karpenter"\n  namespace  = "kube-system"\n'
        '  repository = "oci://public.ecr.aws/karpenter"\n  chart      = "karpenter"\n  version    = "1.6.2"\n'
        '  values = [<<-EOT\n    settings:\n      clusterName: demo\n    EOT\n  ]\n}\n')
    plan = make_plan(tmp_path, to="auto-mode")
    assert plan.phase == "enable"
    (eks_change,) = [c for c in plan.changes if c.path == "eks.tf"]
    call = _hcl(eks_change.new)["module"][0]["eks"]
    assert call["node_iam_role_additional_policies"] == {"karpenter_node_s3": "${aws_iam_policy.artifacts.arn}"}
    assert "AmazonEKSWorkerNodePolicy" not in eks_change.new          # the Auto Mode node role has its own
    for _ in range(5):
        apply_changes(tmp_path, make_plan(tmp_path, to="auto-mode").changes)
    assert not any(f.code == "MIG-AUTO-046" for f in make_plan(tmp_path, to="auto-mode").findings)


def test_hand_written_node_role_policies_follow_to_the_node_role_migrator_writes_for_a_hand_written_cluster(tmp_path):
    """The same for a hand-written aws_eks_cluster (the auto-mode-argocd fixture): the controller policy passes its
    node role by reference (`aws_iam_role.karpenter_node.arn`); the extra attachment gets a twin on the Auto Mode node
    role migrator writes, and the policy it names stays when Karpenter's role goes."""
    root = tmp_path / "r"
    shutil.copytree(FIXTURES / "auto-mode-argocd" / "input", root)
    k = root / "infra" / "karpenter.tf"
    k.write_text(k.read_text() + '\nresource "aws_iam_policy" "artifacts" {\n  name   = "orders-artifacts-read"\n'
                 '  policy = jsonencode({ Version = "2012-10-17", Statement = [{ Effect = "Allow", Action = '
                 '"s3:GetObject", Resource = "*" }] })\n}\n\nresource "aws_iam_role_policy_attachment" '
                 '"karpenter_node_artifacts" {\n  role       = aws_iam_role.karpenter_node.name\n'
                 '  policy_arn = aws_iam_policy.artifacts.arn\n}\n')
    plan = make_plan(root, to="auto-mode")
    (new,) = [c.new for c in plan.changes if c.path == "infra/eks-auto-mode.tf"]
    twin = _hcl(new)["resource"]
    got = [v for r in twin for t, v in r.items() if t == "aws_iam_role_policy_attachment"
           and "auto_mode_node_karpenter_node_artifacts" in v]
    assert got and got[0]["auto_mode_node_karpenter_node_artifacts"]["policy_arn"] == "${aws_iam_policy.artifacts.arn}"
    for _ in range(6):
        apply_changes(root, make_plan(root, to="auto-mode").changes)
    final = make_plan(root, to="auto-mode")
    assert not final.changes and not any(f.code == "MIG-AUTO-046" for f in final.findings)
    text = k.read_text()
    assert 'resource "aws_iam_policy" "artifacts"' in text and "karpenter_node_artifacts" not in text


def test_node_groups_alone_are_said_when_moving_to_auto_mode(tmp_path):
    """No Karpenter and no Cluster Autoscaler, only node groups (dfds/infrastructure-modules' hand-made cluster):
    `--to auto-mode` plans nothing and says why, naming the groups; the default target says only the first part."""
    (tmp_path / "main.tf").write_text(
        'module "eks" {\n  source  = "terraform-aws-modules/eks/aws"\n  version = "~> 20.31"\n\n'
        '  cluster_name    = "shop"\n  cluster_version = "1.31"\n\n  eks_managed_node_groups = {\n'
        '    general = {\n      instance_types = ["m5.large"]\n      min_size       = 2\n      max_size       = 6\n'
        '      desired_size   = 2\n    }\n  }\n}\n')
    plan = make_plan(tmp_path, to="auto-mode")
    (f,) = [f for f in plan.findings if f.code == "MIG-HOP-005"]
    assert not plan.changes and "node groups (general)" in f.message and "by hand" in f.manual_step
    (f,) = [f for f in make_plan(tmp_path).findings if f.code == "MIG-HOP-005"]
    assert "node groups" not in f.message


def _walk_to_a_stop(work, runs: int = 6):
    said = []
    for _ in range(runs):
        plan = make_plan(work, to="auto-mode")
        said += [(f.code, f.severity, f.path, f.line) for f in plan.findings if f.code == "MIG-AUTO-059"]
        if not plan.changes:
            return plan, said
        apply_changes(work, plan.changes)
    return plan, said


def test_a_pool_a_shell_heredoc_applies_holds_the_cutover(tmp_path):
    """A v1 NodePool applied from a heredoc in install.sh gets no twin (migrator does not edit shell commands): the
    cutover would have removed the EC2NodeClass it names and the cleanup its controller. It holds (MIG-AUTO-059)."""
    from .conftest import FIXTURES
    work = tmp_path / "tree"
    shutil.copytree(FIXTURES / "auto-mode-scripts" / "input", work)
    cls, pool = (work / "karpenter" / "nodepool.yaml").read_text().split("---\n")
    (work / "karpenter" / "nodepool.yaml").write_text(cls)
    script = work / "install.sh"
    script.write_text(script.read_text().replace(
        "kubectl apply -f storage.yaml\n", "kubectl apply -f storage.yaml\nkubectl apply -f - <<EOF\n" + pool + "EOF\n"))
    plan, said = _walk_to_a_stop(work)
    assert plan.phase == "cutover" and plan.has_errors and not plan.changes
    assert ("MIG-AUTO-059", "error", "install.sh", 15) in said
    assert (work / "karpenter" / "nodepool.yaml").exists() and "module \"karpenter\"" in (work / "karpenter.tf").read_text()


def _local_file_tree(tmp_path, applier: str = "", committed: bool = False, via_local: bool = False):
    """auto-mode-scripts with its pools in a template that a local_file renders (applied by `applier`, if given; the
    call in a local the block reads, with `via_local`)."""
    from .conftest import FIXTURES
    work = tmp_path / "tree"
    shutil.copytree(FIXTURES / "auto-mode-scripts" / "input", work)
    (work / "karpenter" / "nodepool.yaml").rename(work / "karpenter" / "nodepool.yaml.tpl")
    call = 'templatefile("${path.module}/karpenter/nodepool.yaml.tpl", {})'
    (work / "manifests.tf").write_text(
        (f'locals {{\n  pools = {call}\n}}\n\n' if via_local else "") +
        f'resource "local_file" "pools" {{\n  content  = {"local.pools" if via_local else call}\n'
        '  filename = "${path.root}/out/pools.yaml"\n}\n' + applier)
    if committed:
        (work / "out").mkdir()
        (work / "out" / "pools.yaml").write_text((work / "karpenter" / "nodepool.yaml.tpl").read_text())
    return work


def test_a_pool_a_local_file_renders_gets_its_twin_and_walks_to_the_end(tmp_path):
    """NodePools and EC2NodeClasses in a template that a local_file renders to a file applied outside Terraform were
    not converted (the cutover held, MIG-AUTO-059): they now get a twin template, rendered by a copy of the local_file
    to a file of its own, which the runbook applies with kubectl; the cutover removes the old block and template and
    deletes the objects with kubectl (Terraform only removes the file)."""
    work = _local_file_tree(tmp_path)
    plan = make_plan(work, to="auto-mode")
    cmds = [c for s in plan.steps for c in s.commands]
    if plan.phase == "enable":
        apply_changes(work, plan.changes)
        plan = make_plan(work, to="auto-mode")
        cmds = [c for s in plan.steps for c in s.commands]
    assert plan.phase == "nodepools" and not plan.has_errors
    assert "kubectl apply -f out/pools-auto-mode.yaml" in cmds
    assert any("-target=local_file.pools_auto_mode" in c for c in cmds)
    plan, said = _walk_to_a_stop(work)
    assert not said and not plan.has_errors and not plan.phase
    tf = (work / "manifests.tf").read_text()
    assert 'resource "local_file" "pools_auto_mode"' in tf and '"${path.root}/out/pools-auto-mode.yaml"' in tf
    assert 'resource "local_file" "pools"' not in tf and not (work / "karpenter" / "nodepool.yaml.tpl").exists()
    twin = (work / "karpenter" / "nodepool-auto-mode.yaml.tpl").read_text()
    assert "kind: NodeClass" in twin and "kind: NodePool" in twin and "eks-auto-mode" not in twin


def test_the_cutover_of_local_file_pools_deletes_them_with_kubectl(tmp_path):
    """Terraform removing a local_file removes the rendered file, never the objects applied from it: the cutover's
    runbook deletes them, NodePool before EC2NodeClass."""
    work = _local_file_tree(tmp_path)
    for _ in range(6):
        plan = make_plan(work, to="auto-mode")
        if plan.phase == "cutover":
            break
        apply_changes(work, plan.changes)
    (step,) = [s for s in plan.steps if s.phase == "cutover"]
    deletes = " ".join(step.commands)
    assert "-target=local_file.pools" in deletes
    assert deletes.index("kubectl delete nodepool") < deletes.index("kubectl delete ec2nodeclass")


def test_a_local_file_applied_by_a_null_resource_gets_an_applier_of_its_own(tmp_path):
    """A null_resource that applies the rendered file alone (`kubectl apply -f ${local_file.x.filename}`) is copied
    with the twin (naming the new local_file), and removed with the old one at the cutover."""
    applier = ('\nresource "null_resource" "apply_pools" {\n  triggers = {\n    sha = sha1(local_file.pools.content)\n  }\n\n'
               '  provisioner "local-exec" {\n    command = "kubectl apply -f ${local_file.pools.filename}"\n  }\n}\n')
    work = _local_file_tree(tmp_path, applier)
    plan, said = _walk_to_a_stop(work)
    assert not said and not plan.has_errors and not plan.phase
    tf = (work / "manifests.tf").read_text()
    assert 'resource "null_resource" "apply_pools_auto_mode"' in tf
    assert "sha1(local_file.pools_auto_mode.content)" in tf and "${local_file.pools_auto_mode.filename}" in tf
    assert 'resource "null_resource" "apply_pools"' not in tf and "local_file.pools." not in tf


def test_a_local_file_migrator_leaves_alone_holds_the_cutover(tmp_path):
    """A local_file whose applier applies other files too (one shell command), whose rendered file is committed as
    well, or whose content is a local that renders the template, is left alone: its pools hold the cutover, naming
    why (MIG-AUTO-059); so is one whose template a second local_file renders too (another cluster's copy). Before,
    the local went unseen: the cleanup removed the controller under its pools."""
    copy = ('\nresource "local_file" "copy" {\n  content  = templatefile("${path.module}/karpenter/nodepool.yaml.tpl", {})\n'
            '  filename = "${path.root}/out/copy.yaml"\n}\n')
    applier = ('\nresource "null_resource" "apply" {\n  provisioner "local-exec" {\n'
               '    command = "kubectl apply -f ${local_file.pools.filename} -f storage.yaml"\n  }\n}\n')
    for i, (work, why) in enumerate(((_local_file_tree(tmp_path / "a", applier), "applies the files of other"),
                                     (_local_file_tree(tmp_path / "b", committed=True), "is committed"),
                                     (_local_file_tree(tmp_path / "c", via_local=True), "local.pools"),
                                     (_local_file_tree(tmp_path / "d", copy), "renders the same template"))):
        plan, said = _walk_to_a_stop(work)
        assert plan.phase == "cutover" and plan.has_errors, i
        held = [f for f in plan.findings if f.code == "MIG-AUTO-059" and f.path == "karpenter/nodepool.yaml.tpl"]
        assert {f.line for f in held} == {3, 18} and all(why in f.message for f in held), i
        assert "module \"karpenter\"" in (work / "karpenter.tf").read_text()


def test_a_controller_with_no_pool_in_the_root_is_said_not_left_at_an_empty_phase(tmp_path):
    """Auto Mode on, Karpenter's controller installed, no NodePool anywhere in the files (pools applied by hand, or
    none): the plan used to sit at "phase enable" with nothing to do and nothing said. It says MIG-AUTO-061 and keeps
    the controller."""
    from .conftest import FIXTURES
    work = tmp_path / "tree"
    shutil.copytree(FIXTURES / "auto-mode-scripts" / "input", work)
    (work / "karpenter" / "nodepool.yaml").unlink()
    plan, _ = _walk_to_a_stop(work)
    (r,) = plan.roots
    assert not plan.changes and not r.phase and "MIG-AUTO-061" in r.next
    (f,) = [f for f in plan.findings if f.code == "MIG-AUTO-061"]
    assert f.path == "karpenter.tf" and "helm_release.karpenter" in f.message
    assert "module \"karpenter\"" in (work / "karpenter.tf").read_text()


def test_a_pool_whose_class_another_root_keeps_on_karpenter_gets_no_twin(tmp_path):
    """NodePools in a folder of their own (a kustomization per cluster) naming an EC2NodeClass that the cluster's
    module declares with user data (found walking spack/spack-infrastructure): the class stays on Karpenter, so a twin
    of the pool would name a NodeClass never written, and the workloads phase would move pods onto it. The pool stays,
    said with where its class is, and the root reads as settled."""
    root = tmp_path / "infra"
    module = textwrap.dedent('''\
        module "eks" {
          source  = "terraform-aws-modules/eks/aws"
          version = "~> 20.37"

          cluster_name        = var.name
          cluster_version     = "1.31"
          vpc_id              = "vpc-123"
          subnet_ids          = ["subnet-1", "subnet-2"]
          authentication_mode = "API_AND_CONFIG_MAP"
        }

        module "karpenter" {
          source  = "terraform-aws-modules/eks/aws//modules/karpenter"
          version = "~> 20.37"

          cluster_name = module.eks.cluster_name
        }

        resource "helm_release" "karpenter" {
          name       = "karpenter"
          namespace  = "kube-system"
          repository = "oci://public.ecr.aws/karpenter"
          chart      = "karpenter"
          version    = "1.14.0"
        }

        resource "kubectl_manifest" "default_class" {
          yaml_body = <<-YAML
            apiVersion: karpenter.k8s.aws/v1
            kind: EC2NodeClass
            metadata:
              name: default
            spec:
              amiSelectorTerms:
                - alias: al2023@latest
              role: ${module.karpenter.node_iam_role_name}
              subnetSelectorTerms:
                - tags:
                    karpenter.sh/discovery: demo
              securityGroupSelectorTerms:
                - tags:
                    karpenter.sh/discovery: demo
              userData: |
                echo hello
          YAML
        }
        ''')
    (root / "modules" / "cluster").mkdir(parents=True)
    (root / "modules" / "cluster" / "main.tf").write_text(module)
    (root / "modules" / "cluster" / "variables.tf").write_text('variable "name" {\n  type = string\n}\n')
    for env in ("staging", "production"):
        (root / env).mkdir()
        (root / env / "main.tf").write_text(f'module "cluster" {{\n  source = "../modules/cluster"\n\n  name = "{env}"\n}}\n')
    pools = root / "k8s" / "staging"
    pools.mkdir(parents=True)
    (pools / "kustomization.yaml").write_text("resources:\n  - nodepool.yaml\n")
    (pools / "nodepool.yaml").write_text(textwrap.dedent('''\
        apiVersion: karpenter.sh/v1
        kind: NodePool
        metadata:
          name: base
        spec:
          template:
            spec:
              requirements:
                - key: karpenter.sh/capacity-type
                  operator: In
                  values: ["on-demand"]
              nodeClassRef:
                group: karpenter.k8s.aws
                kind: EC2NodeClass
                name: default
        '''))
    plan = make_plan(root, to="auto-mode", phase="nodepools", only=["k8s/staging"])
    assert not [c for c in plan.changes if c.path.startswith("k8s/")], [c.path for c in plan.changes]
    (f,) = [f for f in plan.findings if f.code == "MIG-AUTO-020" and f.path == "k8s/staging/nodepool.yaml"]
    assert "modules/cluster/main.tf" in f.message and "user data" in f.message
    plan = make_plan(root, to="auto-mode")
    r = next(r for r in plan.roots if r.path == "k8s/staging")
    assert not r.phase and r.next.startswith("nothing: 1 Karpenter object stays on Karpenter"), r.next


def test_the_node_role_stop_says_which_value_is_missing(tmp_path):
    """MIG-AUTO-010 said "names it only at apply time (node_iam_role_use_name_prefix)" after migrator itself had set
    that input to false: what was missing was the cluster's name (a variable with no value, Smana/demo-cloud-native-ref)."""
    work = tmp_path / "tree"
    shutil.copytree(FIXTURES / "auto-mode-terraform-v21" / "input", work)
    eks = work / "eks.tf"
    text = eks.read_text()
    start = text.index('variable "cluster_name" {')
    end = text.index("}\n", start) + 2
    eks.write_text(text[:start] + 'variable "cluster_name" {\n  type = string\n}\n' + text[end:])
    plan, _ = _walk_to_a_stop(work)
    said = {f.message for f in plan.findings if f.code == "MIG-AUTO-010"}
    assert said and all("after the cluster's name (var.cluster_name), whose value the repository does not state" in m
                        and "apply time" not in m for m in said), said


def test_the_node_role_stop_of_a_hand_written_cluster_names_its_name_expression(tmp_path):
    """The same for a hand-written aws_eks_cluster (starci-lab/cifarm-k8s): the node role migrator writes is named
    after the cluster's name; with that name a variable of no value, the stop says so, not the module input
    node_iam_role_use_name_prefix a resource does not have."""
    root = tmp_path / "r"
    shutil.copytree(FIXTURES / "auto-mode-argocd" / "input", root)
    c = root / "infra" / "cluster.tf"
    c.write_text(c.read_text().replace('  name     = "orders"\n', '  name     = var.cluster_name\n', 1)
                 + '\nvariable "cluster_name" {\n  type = string\n}\n')
    plan, _ = _walk_to_a_stop(root)
    said = {f.message for f in plan.findings if f.code == "MIG-AUTO-010"}
    assert said and all("aws_eks_cluster.orders is named after the cluster's name (var.cluster_name)" in m
                        and "node_iam_role_use_name_prefix" not in m for m in said), said


POOLS_FOR_EACH = '''resource "kubernetes_manifest" "pool" {
  for_each = toset(["batch", "web"])

  manifest = {
    apiVersion = "karpenter.sh/v1"
    kind       = "NodePool"
    metadata = {
      name = each.key
    }
    spec = {
      template = {
        spec = {
          nodeClassRef = {
            group = "karpenter.k8s.aws"
            kind  = "EC2NodeClass"
            name  = "default"
          }
          requirements = [
            {
              key      = "kubernetes.io/arch"
              operator = "In"
              values   = ["amd64"]
            }
          ]
        }
      }
    }
  }
}
'''


def test_a_pool_named_by_an_expression_gets_one_twin_and_goes_at_the_cutover(tmp_path):
    """100rd/platform-design: NodePools made by `for_each` with `name = each.key`. The twin is written as
    `name = "${each.key}-auto"`; the check pass read that name as another than the one it expects for `each.key`,
    wrote a second twin, and the nodepools phase was held (MIG-EDIT-004)."""
    work = tmp_path / "tree"
    shutil.copytree(FIXTURES / "auto-mode-terraform-v21" / "input", work)
    (work / "pools.tf").write_text(POOLS_FOR_EACH)
    seen = []
    for _ in range(10):
        plan = make_plan(work, to="auto-mode")
        assert not plan.has_errors, [f.message for f in plan.findings if f.severity == "error"]
        seen.append(plan.roots[0].phase)
        if not plan.changes:
            break
        apply_changes(work, plan.changes)
    text = (work / "pools.tf").read_text()
    assert seen[:5] == ["enable", "nodepools", "workloads", "cutover", "cleanup"]
    assert text.count('resource "kubernetes_manifest" "pool_auto_mode"') == 1
    assert 'resource "kubernetes_manifest" "pool" {' not in text and 'name = "${each.key}-auto"' in text


def test_the_cutover_waits_while_a_workload_selects_a_pool_it_removes(tmp_path, monkeypatch):
    """The safety net under the workloads phase: whatever kept a selector from moving (before, a pool named by an
    expression made the workloads phase think the nodepools phase had not landed, and the cutover then removed the
    pool the trainer Job selects), a workload selecting a pool the cutover removes holds it (MIG-AUTO-064)."""
    from migrator.rules.auto import workloads
    monkeypatch.setattr(workloads, "_waiting", lambda ctx, twins: ["a pool"])   # selectors never move
    work = tmp_path / "tree"
    shutil.copytree(FIXTURES / "auto-mode-terraform-v21" / "input", work)
    for _ in range(4):
        plan = make_plan(work, to="auto-mode")
        if plan.roots[0].phase == "cutover":
            break
        apply_changes(work, plan.changes)
    assert plan.roots[0].phase == "cutover"
    (f,) = [f for f in plan.findings if f.code == "MIG-AUTO-064"]
    assert f.path == "k8s/apps/trainer.yaml" and f.line == 9 and "gpu" in f.message
    assert not [c for c in plan.changes if c.action == "delete" or "nodepools.yaml" in c.path]


def test_a_pool_on_a_class_or_with_requirements_built_by_an_expression_gets_no_twin(tmp_path):
    """100rd/platform-design: the EC2NodeClass's spec is `merge(...)` (left alone, MIG-SRC-008) and the NodePools'
    requirements are `concat(...)` naming karpenter.k8s.aws/ labels. A twin was written on a NodeClass no twin
    would ever make, with Karpenter's label keys no Auto Mode node carries. Now the pool stays, said (MIG-AUTO-065),
    and the cutover waits for the class (MIG-AUTO-059)."""
    work = tmp_path / "tree"
    shutil.copytree(FIXTURES / "auto-mode-terraform-v21" / "input", work)
    pools = POOLS_FOR_EACH.replace('''          requirements = [
            {
              key      = "kubernetes.io/arch"
              operator = "In"
              values   = ["amd64"]
            }
          ]''', '''          requirements = concat([
            {
              key      = "karpenter.k8s.aws/instance-family"
              operator = "In"
              values   = ["m7i"]
            }
          ], var.extra_requirements)''')
    (work / "pools.tf").write_text(pools + 'variable "extra_requirements" {\n  default = []\n}\n')
    plan = make_plan(work, to="auto-mode")
    apply_changes(work, plan.changes)                                    # enable
    plan = make_plan(work, to="auto-mode")
    assert plan.roots[0].phase == "nodepools"
    (f,) = [f for f in plan.findings if f.code == "MIG-AUTO-065"]
    assert f.path == "pools.tf" and "karpenter.k8s.aws/instance-family" in f.message
    assert not [c for c in plan.changes if c.path == "pools.tf"]        # the general and gpu pools still move
    assert any(c.path.endswith("nodepools-auto-mode.yaml") for c in plan.changes)
    # the class built by an expression: its pools stay, and the cutover waits for it
    (work / "pools.tf").write_text(POOLS_FOR_EACH.replace('name  = "default"', 'name  = "computed"') + '''
resource "kubernetes_manifest" "computed_class" {
  manifest = {
    apiVersion = "karpenter.k8s.aws/v1"
    kind       = "EC2NodeClass"
    metadata = {
      name = "computed"
    }
    spec = merge(var.class_spec, { role = "KarpenterNodeRole" })
  }
}

variable "class_spec" {
  default = {}
}
''')
    plan = make_plan(work, to="auto-mode")
    assert {f.code for f in plan.findings} >= {"MIG-AUTO-065", "MIG-SRC-008", "MIG-AUTO-059"}
    assert [f.path for f in plan.findings if f.code == "MIG-AUTO-059"] == ["pools.tf"]
    assert "EC2NodeClass computed is built by an expression" in next(
        f.message for f in plan.findings if f.code == "MIG-AUTO-065")


def _before_cleanup(tmp_path):
    import shutil
    fx = FIXTURES / "auto-mode-pool-chart-controller-values"
    tree = tmp_path / "t"
    shutil.copytree(fx / "expected-run-4", tree)
    return tree


def test_a_pool_release_loses_values_only_its_old_templates_read(tmp_path):
    """Issue 57, the cleanup: a pool chart's release that passes module.karpenter's node role name (and waits for the
    Karpenter release) loses that value and that depends_on once no template of the chart reads `.Values.role`, in a
    `yamlencode({...})` as in a heredoc; the walk converges (fixtures/auto-mode-pool-chart-controller-values)."""
    from migrator.plan import make_plan
    tree = _before_cleanup(tmp_path)
    eks = tree / "eks.tf"
    eks.write_text(eks.read_text().replace(
        "  values = [<<-EOT\n    name: ${each.key}\n    role: ${module.karpenter.node_iam_role_name}\n  EOT\n  ]",
        "  values = [yamlencode({\n    name = each.key\n    role = module.karpenter.node_iam_role_name\n  })]"))
    assert "yamlencode" in eks.read_text()
    plan = make_plan(tree, to="auto-mode")
    assert [f.code for f in plan.findings if f.code in ("MIG-AUTO-066", "MIG-AUTO-041", "MIG-EDIT-004")] == \
        ["MIG-AUTO-066"]
    (new,) = [c.new for c in plan.changes if c.path == "eks.tf"]
    release = new[new.index('resource "helm_release" "pools"'):]
    assert "role" not in release and "depends_on" not in release and "module \"karpenter\"" not in new
    assert "    name = each.key\n  })]\n}" in release


def test_a_value_a_template_still_reads_holds_the_cleanup(tmp_path):
    """The same release, with the Auto Mode twin template reading `.Values.role`: the value stays, and the cleanup
    says what still reads the module (MIG-AUTO-041) instead of removing it."""
    from migrator.plan import make_plan
    tree = _before_cleanup(tmp_path)
    twin = tree / "charts" / "karpenter-resources" / "templates" / "ec2nodeclass-auto-mode.yaml"
    twin.write_text(twin.read_text().replace("role: analytics-eks-auto", "role: {{ .Values.role }}"))
    plan = make_plan(tree, to="auto-mode")
    assert "MIG-AUTO-041" in {f.code for f in plan.findings}
    assert "MIG-AUTO-066" not in {f.code for f in plan.findings}
    assert not [c for c in plan.changes if c.path == "eks.tf"]


def test_a_block_interpolation_stays_on_its_line_in_the_twin_template():
    """fixtures/auto-mode-template-block-values: `subnetSelectorTerms:` then `${indent(4, ...)}` on the next line keeps
    that layout in the Auto Mode twin template (on the key's line it renders no YAML), and the twin's templatefile()
    passes only the variables its template reads (never module.karpenter's node role)."""
    from migrator.sources.templates import block_tokens, keep_block_tokens, mask
    fx = FIXTURES / "auto-mode-template-block-values"
    twin = (fx / "expected-run-2" / "manifests" / "ec2-node-class-auto-mode.yaml.tftpl").read_text()
    assert "  subnetSelectorTerms:\n    ${indent(4, subnet_selector_terms)}\n" in twin
    tf = (fx / "expected-run-2" / "karpenter.tf").read_text()
    twin_block = tf[tf.index('"ec2_node_class_auto_mode"'):]
    assert "node_role" not in twin_block.split("\n}\n")[0]
    m = mask("a:\n  k:\n    ${indent(4, x)}\n  j: ${y}\n")
    assert list(block_tokens(m).values()) == [(2, 4)]
    assert keep_block_tokens(m, "a:\n  k: __MIG_0__\n  j: __MIG_1__\n") == "a:\n  k:\n    __MIG_0__\n  j: __MIG_1__\n"
    # moved deeper: indent() follows the key; anything else that renders a block there is not written
    assert keep_block_tokens(m, "a:\n  b:\n    k: __MIG_0__\n") == "a:\n  b:\n    k:\n      ${indent(6, x)}\n"
    m = mask("a:\n  k:\n    ${yamlencode(x)}\n  j:\n    ${jsonencode(y)}\n")
    assert keep_block_tokens(m, "b:\n  a:\n    k: __MIG_0__\n") is None
    assert keep_block_tokens(m, "b:\n  a:\n    j: __MIG_1__\n") == "b:\n  a:\n    j: __MIG_1__\n"     # one line

def test_an_interpolation_at_its_keys_column_is_a_block_kept_there():
    """`values:` then `${instance_arch}` on the next line at the same column (a block sequence, which YAML allows
    there): masked, it did not parse (MIG-SRC-013). It is read as a block token and written back at its own column."""
    from migrator.sources.templates import block_tokens, keep_block_tokens, mask
    from ruamel.yaml import YAML
    src = "req:\n  - key: a\n    values:\n    ${instance_arch}\n  - key: b\n    values: [x]\n"
    m = mask(src)
    assert YAML().load(m.text)["req"][0]["values"] == "__MIG_0__"
    assert list(block_tokens(m).values()) == [(4, 4)]
    out = keep_block_tokens(m, "req:\n  - key: c\n    values: __MIG_0__\n")
    assert m.unmask(out) == "req:\n  - key: c\n    values:\n    ${instance_arch}\n"
    assert keep_block_tokens(m, "x:\n  req:\n    - key: c\n      values: __MIG_0__\n") is None    # moved: said
    assert mask("a:\n  b: 1\n  ${x}\n").text == "a:\n  b: 1\n  __MIG_0__\n"     # after a value: not a block


def test_values_read_whole_or_a_chart_without_templates_keep_the_cleanup_held(tmp_path):
    """A chart that reads its values whole (`{{- toYaml .Values -}}`), or whose templates are not in the files: which
    value is still read is not known, so nothing is removed and the cleanup says what still reads the module."""
    from migrator.inventory.repo import Repo
    from migrator.rules.auto.links import dead_chart_values
    tree = _before_cleanup(tmp_path)
    twin = tree / "charts" / "karpenter-resources" / "templates" / "ec2nodeclass-auto-mode.yaml"
    release = ("eks.tf", ["module.karpenter", "helm_release.karpenter"])

    def dead():
        repo = Repo(tree)
        (b,) = [b for b in repo.hcl(release[0]).blocks if b.address == "helm_release.pools"]
        return dead_chart_values(repo, release[0], b, release[1], "auto/cleanup")
    assert dead() is not None
    twin.write_text(twin.read_text() + "# {{- toYaml .Values -}}\n")
    assert dead() is None
    for t in (tree / "charts" / "karpenter-resources" / "templates").iterdir():
        t.unlink()
    assert dead() is None


def test_auto_mode_is_not_turned_on_when_nothing_can_move(tmp_path):
    """Every object of the root stays on Karpenter (its one class runs its own AMI and user data): nothing is planned,
    each object says why it stays (MIG-AUTO-020), and MIG-AUTO-067 says Auto Mode is not turned on. One movable
    class and pool beside them, and the enable phase is planned as before."""
    work = tmp_path / "tree"
    shutil.copytree(FIXTURES / "auto-mode-nothing-moves" / "input", work)
    plan = make_plan(work, to="auto-mode")
    assert not plan.changes and not plan.has_errors
    (root,) = plan.roots
    assert not root.phase and "EKS Auto Mode is not turned on (MIG-AUTO-067)" in root.next
    codes = sorted(f.code for f in plan.findings if f.severity == "warning")
    assert codes == ["MIG-AUTO-020"] * 3 + ["MIG-AUTO-067"]
    (work / "k8s" / "karpenter" / "plain.yaml").write_text(textwrap.dedent("""\
        apiVersion: karpenter.k8s.aws/v1
        kind: EC2NodeClass
        metadata:
          name: plain
        spec:
          role: KarpenterNodeRole-analytics
          amiSelectorTerms:
            - alias: al2023@latest
          subnetSelectorTerms:
            - tags:
                karpenter.sh/discovery: analytics
          securityGroupSelectorTerms:
            - tags:
                karpenter.sh/discovery: analytics
        ---
        apiVersion: karpenter.sh/v1
        kind: NodePool
        metadata:
          name: web
        spec:
          template:
            spec:
              nodeClassRef:
                group: karpenter.k8s.aws
                kind: EC2NodeClass
                name: plain
        """))
    kz = work / "k8s" / "karpenter" / "kustomization.yaml"
    kz.write_text(kz.read_text() + "  - plain.yaml\n")
    plan = make_plan(work, to="auto-mode")
    assert plan.roots[0].phase == "enable" and plan.changes
    assert not any(f.code == "MIG-AUTO-067" for f in plan.findings)


def test_a_movable_pool_of_another_root_keeps_the_enable_phase(tmp_path):
    """The cluster root's own class cannot move, but a NodePool of another root names a class that can (declared
    nowhere that blocks it): Auto Mode is still turned on for it."""
    work = tmp_path / "tree"
    shutil.copytree(FIXTURES / "auto-mode-class-in-another-root" / "input", work)
    plan = make_plan(work, to="auto-mode")
    assert not plan.changes and sum("(MIG-AUTO-067)" in (r.next or "") for r in plan.roots) == 2
    pool = work / "k8s" / "staging" / "nodepool.yaml"
    pool.write_text(pool.read_text().replace("name: default", "name: general"))
    plan = make_plan(work, to="auto-mode")
    assert any(r.phase == "enable" for r in plan.roots)
    assert not any(f.code == "MIG-AUTO-067" for f in plan.findings)


def test_a_pools_twin_on_a_class_another_root_writes_is_said(tmp_path):
    """spack's layout with a class that can move: the pools of k8s/staging name the EC2NodeClass the cluster's module
    declares, so their twins run on the NodeClass written there. Nothing ties the two roots to one cluster, so the
    twin is written and the assumption said (MIG-AUTO-069), with the class's file; a pool whose class is in its own
    root is not."""
    work = tmp_path / "tree"
    shutil.copytree(FIXTURES / "auto-mode-class-in-another-root" / "input", work)
    main = work / "modules" / "cluster" / "main.tf"
    main.write_text(main.read_text().replace("      userData: |\n        echo hello\n", ""))
    plan = make_plan(work, to="auto-mode")
    assert {r.path: r.phase for r in plan.roots}["k8s/staging"] == "nodepools"
    (f,) = [f for f in plan.findings if f.code == "MIG-AUTO-069"]
    assert f.path == "k8s/staging/nodepool.yaml" and "modules/cluster/main.tf:30" in f.message
    assert "NodeClass default-auto" in f.message
    assert "k8s/staging/nodepool-auto-mode.yaml" in {c.path for c in plan.changes}
    plan = make_plan(FIXTURES / "auto-mode-class-not-in-repository" / "expected-run-1", to="auto-mode")
    assert plan.roots[0].phase == "nodepools" and not any(f.code == "MIG-AUTO-069" for f in plan.findings)


def test_files_only_the_cleanup_removes_readers_of_are_said(tmp_path):
    """The cleanup removes the release that read values.yaml and the policy templatefile() rendered from policy.json:
    each is said as left in place with nothing reading it (MIG-AUTO-049), unless some text left still names it."""
    work = tmp_path / "tree"
    shutil.copytree(FIXTURES / "auto-mode-cleanup-chart-version-unstated" / "expected-run-5", work)
    plan = make_plan(work, to="auto-mode")
    assert plan.roots[0].phase == "cleanup"
    said = {f.path: f.message for f in plan.findings if f.code == "MIG-AUTO-049" and f.path in ("values.yaml", "policy.json")}
    assert set(said) == {"values.yaml", "policy.json"}
    assert "(helm_release.karpenter)" in said["values.yaml"] and "nothing in the repository reads it" in said["values.yaml"]
    assert not (work / "values.yaml").read_text() == ""                 # left in place: nothing deletes it
    assert not any(c.path in ("values.yaml", "policy.json") for c in plan.changes)
    (work / "render.sh").write_text("helm template karpenter -f values.yaml\n")     # still read by a script
    plan = make_plan(work, to="auto-mode")
    assert {f.path for f in plan.findings if f.code == "MIG-AUTO-049"} & {"values.yaml", "policy.json"} == {"policy.json"}


def test_a_class_another_roots_pools_name_goes_after_them(tmp_path):
    """Walked from where every twin is written and untainted: the cluster roots' cutover keeps the EC2NodeClass that the
    pool of k8s/staging (whose root holds no class of that name) still names, and says so (MIG-AUTO-070); the pool goes
    first, and the class at the next run. The second pass never sees that as a rule that does not converge. A pools
    root with a class of its own of that name is never waited for."""
    from migrator.apply import apply_changes
    work = tmp_path / "tree"
    shutil.copytree(FIXTURES / "auto-mode-class-of-another-root-moves" / "expected-run-2", work)
    plan = make_plan(work, to="auto-mode")
    phases = {r.path: r.phase for r in plan.roots}
    assert phases == {"k8s/staging": "cutover", "staging": "", "production": ""}
    waits = [f for f in plan.findings if f.code == "MIG-AUTO-070"]
    assert waits and all(f.path == "modules/cluster/main.tf" and "NodePool base (k8s/staging/nodepool.yaml:1)"
                         in f.message for f in waits)
    assert not any("not every one has an Auto Mode twin" in f.message for f in waits)     # base-auto is written
    assert {c.path for c in plan.changes} >= {"k8s/staging/nodepool.yaml"}
    assert "modules/cluster/main.tf" not in {c.path for c in plan.changes}
    apply_changes(plan.root, plan.changes)
    plan = make_plan(work, to="auto-mode")
    assert {r.path: r.phase for r in plan.roots}["staging"] == "cutover"
    assert "modules/cluster/main.tf" in {c.path for c in plan.changes}
    assert not any(f.code in ("MIG-AUTO-070", "MIG-EDIT-004") for f in plan.findings)
    # the same layout, the pools root holding an EC2NodeClass default of its own: another cluster's, never waited for
    own = tmp_path / "own"
    shutil.copytree(FIXTURES / "auto-mode-class-of-another-root-moves" / "expected-run-2", own)
    cls = (FIXTURES / "auto-mode-class-of-another-root-moves" / "expected-run-2" / "modules" / "cluster" / "main.tf")
    assert "kind: EC2NodeClass" in cls.read_text()
    (own / "k8s" / "staging" / "class.yaml").write_text(
        "apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nmetadata:\n  name: default\nspec:\n"
        "  role: KarpenterNodeRole\n  amiSelectorTerms:\n    - alias: al2023@latest\n"
        "  subnetSelectorTerms:\n    - tags:\n        karpenter.sh/discovery: staging\n"
        "  securityGroupSelectorTerms:\n    - tags:\n        karpenter.sh/discovery: staging\n")
    plan = make_plan(own, to="auto-mode")
    assert not any(f.code == "MIG-AUTO-070" for f in plan.findings)


def test_a_class_kept_for_pools_with_no_twin_says_it_may_stay_for_good():
    """MIG-AUTO-070 speaks of a removal to come; when a pool leaning on the class has no Auto Mode twin (it may stay on
    Karpenter for good, a hybrid move), it says the class stays as long as that pool does."""
    from migrator.rules.auto.classes import waits_message
    from migrator.inventory.objects import Manifest
    from migrator.sources.templates import Masked
    pool = Manifest("NodePool", "karpenter.sh/v1", "v1", {"metadata": {"name": "gpu"}}, Masked(text=""), "yaml",
                    "k8s/gpu.yaml", 1)
    assert "stays on Karpenter keeps this class" not in waits_message("default", [pool], True)
    assert "stays on Karpenter keeps this class, and Karpenter's controller" in waits_message("default", [pool], False)


def test_a_twin_that_fails_as_its_source_does_says_so(tmp_path):
    """A NodePool that its own CRD refuses (the restricted label karpenter.sh/nodepool in its template): the twin carries
    it and fails too (MIG-VAL-001, nothing written), and the finding says the source fails the same way."""
    work = tmp_path / "tree"
    shutil.copytree(FIXTURES / "auto-mode-class-of-another-root-moves" / "input", work)
    pool = work / "k8s" / "staging" / "nodepool.yaml"
    pool.write_text(pool.read_text().replace("  template:\n    spec:\n",
                                             "  template:\n    metadata:\n      labels:\n"
                                             "        karpenter.sh/nodepool: base\n    spec:\n"))
    plan = make_plan(work, to="auto-mode")
    (f,) = [f for f in plan.findings if f.code == "MIG-VAL-001"]
    assert f.path == "k8s/staging/nodepool.yaml" and 'label "karpenter.sh/nodepool" is restricted' in f.message
    assert "NodePool base as written fails its own CRD, karpenter.sh/v1, the same way" in f.message
    assert "k8s/staging/nodepool-auto-mode.yaml" not in {c.path for c in plan.changes}


def test_eksctl_configs_of_one_cluster_are_one_cluster(tmp_path):
    """A ClusterConfig that only adds node groups (`eksctl create nodegroup -f`) to the cluster another ClusterConfig
    declares is no second cluster: Auto Mode is turned on in the cluster's own file (aleck31/eks-karpenter-deployment:
    before, MIG-AUTO-001 "3 EKS clusters (x, x, x)"). Two full ClusterConfigs of the same cluster (alternatives) are
    said as such, naming both files."""
    from .conftest import FIXTURES
    work = tmp_path / "tree"
    shutil.copytree(FIXTURES / "auto-mode-eksctl-flux" / "input", work)
    meta = (work / "cluster.yaml").read_text().split("metadata:", 1)[1].split("\n\n", 1)[0]
    (work / "nodegroups.yaml").write_text(
        "apiVersion: eksctl.io/v1alpha5\nkind: ClusterConfig\nmetadata:" + meta.rstrip() +
        "\n\nmanagedNodeGroups:\n  - name: system\n    instanceType: m6g.large\n")
    plan = make_plan(work, to="auto-mode")
    assert not any(f.code == "MIG-AUTO-001" for f in plan.findings)
    assert plan.phase == "enable" and "cluster.yaml" in {c.path for c in plan.changes}
    assert "nodegroups.yaml" not in {c.path for c in plan.changes}
    shutil.copy(work / "cluster.yaml", work / "cluster-alt.yaml")
    plan = make_plan(work, to="auto-mode")
    (f,) = [f for f in plan.findings if f.code == "MIG-AUTO-001"]
    assert "2 eksctl ClusterConfigs of this root declare the same cluster" in f.message
    assert "cluster-alt.yaml, cluster.yaml" in f.message and not plan.changes
