"""Issue 56: the last misreadings on real repositories - each shape read as its owners wrote it."""
from __future__ import annotations

from migrator.plan import make_plan

CAS_DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: cluster-autoscaler
  namespace: kube-system
spec:
  selector:
    matchLabels:
      app: cluster-autoscaler
  template:
    metadata:
      labels:
        app: cluster-autoscaler
    spec:
      containers:
        - name: cluster-autoscaler
          image: registry.k8s.io/autoscaling/cluster-autoscaler:v1.30.0
          command:
            - ./cluster-autoscaler
            - --cloud-provider=aws
            - --node-group-auto-discovery=asg:tag=k8s.io/cluster-autoscaler/enabled,k8s.io/cluster-autoscaler/dev
"""

CLUSTER_MODULE = """variable "name" {
  type = string
}

module "eks" {
  source          = "terraform-aws-modules/eks/aws"
  version         = "~> 20.0"
  cluster_name    = var.name
  cluster_version = "1.30"
  eks_managed_node_groups = {
    general = {
      min_size       = 1
      max_size       = 3
      desired_size   = 2
      instance_types = ["m5.large"]
    }
  }
}
"""


def test_a_modules_example_manifest_is_no_clusters(tmp_path):
    """A Cluster Autoscaler manifest under a module's examples/ folder that nothing applies: the environment that
    calls the module has no Cluster Autoscaler (before: planned `cas -> v1`)."""
    (tmp_path / "envs" / "dev").mkdir(parents=True)
    (tmp_path / "envs" / "dev" / "main.tf").write_text(
        'module "cluster" {\n  source = "../../modules/cluster"\n  name   = "dev"\n}\n')
    ex = tmp_path / "modules" / "cluster" / "examples" / "autoscaling"
    ex.mkdir(parents=True)
    (tmp_path / "modules" / "cluster" / "main.tf").write_text(CLUSTER_MODULE)
    (ex / "cluster-autoscaler.yaml").write_text(CAS_DEPLOYMENT)
    plan = make_plan(tmp_path, to="v1")
    assert not [r for r in plan.roots if r.era == "cas"] and not plan.changes
    (f,) = [f for f in plan.findings if f.code == "MIG-CAS-050"]
    assert "modules/cluster/examples/" in f.message
    # the same manifest where the cluster's own kustomization builds it is the cluster's
    (ex.parent.parent / "kustomization.yaml").write_text("resources:\n  - examples/autoscaling/cluster-autoscaler.yaml\n")
    plan = make_plan(tmp_path, to="v1")
    assert [r.era for r in plan.roots] == ["cas"]


def test_a_folder_commented_out_of_its_parents_resources_is_not_applied(tmp_path):
    apps = tmp_path / "apps"
    (apps / "cluster-autoscaler").mkdir(parents=True)
    (apps / "metrics").mkdir()
    (apps / "kustomization.yaml").write_text("resources:\n  - metrics\n  # - cluster-autoscaler\n")
    (apps / "metrics" / "kustomization.yaml").write_text("resources:\n  - cm.yaml\n")
    (apps / "metrics" / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n")
    (apps / "cluster-autoscaler" / "kustomization.yaml").write_text("resources:\n  - deployment.yaml\n")
    (apps / "cluster-autoscaler" / "deployment.yaml").write_text(CAS_DEPLOYMENT)
    plan = make_plan(tmp_path, to="v1")
    assert not [r for r in plan.roots if r.era == "cas"]
    (f,) = [f for f in plan.findings if f.code == "MIG-CAS-050"]
    assert "apps/kustomization.yaml (line 3)" in f.message
    # uncommented: applied, planned
    (apps / "kustomization.yaml").write_text("resources:\n  - metrics\n  - cluster-autoscaler\n")
    assert [r.era for r in make_plan(tmp_path, to="v1").roots] == ["cas"]


def test_node_groups_merged_with_an_empty_for_expression_are_read(tmp_path):
    """`merge({ cpu = {...} }, { for k, v in var.extra : k => v })` with var.extra defaulting to {} and set nowhere:
    the literal group is read (before: MIG-CAS-003 "no node group found")."""
    (tmp_path / "main.tf").write_text(
        'variable "extra" {\n  type    = map(any)\n  default = {}\n}\n\n'
        'module "eks" {\n  source          = "terraform-aws-modules/eks/aws"\n  version         = "~> 20.0"\n'
        '  cluster_name    = "demo"\n  cluster_version = "1.30"\n  eks_managed_node_groups = merge({\n'
        '    cpu = {\n      min_size       = 1\n      max_size       = 5\n      desired_size   = 2\n'
        '      instance_types = ["t3.xlarge"]\n    }\n  }, { for k, v in var.extra : k => v })\n}\n\n'
        'resource "helm_release" "cluster_autoscaler" {\n  name       = "cluster-autoscaler"\n'
        '  repository = "https://kubernetes.github.io/autoscaler"\n  chart      = "cluster-autoscaler"\n'
        '  version    = "9.37.0"\n  namespace  = "kube-system"\n}\n')
    plan = make_plan(tmp_path, to="v1")
    assert not [f for f in plan.findings if f.code == "MIG-CAS-003"]
    assert any("name: cpu" in (c.new or "") for c in plan.changes if c.action == "create")
    # a tfvars that fills the map: its groups are not known here, so nothing is written from a part of them
    (tmp_path / "terraform.tfvars").write_text('extra = {\n  gpu = {\n    max_size = 2\n  }\n}\n')
    plan = make_plan(tmp_path, to="v1")
    assert [f.code for f in plan.findings if f.code == "MIG-CAS-003"] == ["MIG-CAS-003"]


PROVISIONER = """apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata:
  name: default
spec:
  providerRef:
    name: default
---
apiVersion: karpenter.k8s.aws/v1alpha1
kind: AWSNodeTemplate
metadata:
  name: default
spec:
  subnetSelector:
    karpenter.sh/discovery: demo
  securityGroupSelector:
    karpenter.sh/discovery: demo
"""


def test_a_scripts_set_values_are_read_even_from_the_environment(tmp_path):
    """`--set settings.clusterName=$CLUSTER_NAME` (unquoted, from the environment) sets the key: no false
    MIG-V1X-HELM-001 and no chart held at 1.4.4; the script is named as what it is, not "HelmRelease/None"."""
    (tmp_path / "install.sh").write_text(
        "helm upgrade --install karpenter oci://public.ecr.aws/karpenter/karpenter --version 1.3.3 \\\n"
        "  --namespace karpenter --set settings.clusterName=$CLUSTER_NAME --wait\n")
    plan = make_plan(tmp_path)
    assert not [f for f in plan.findings if f.severity == "error"] and plan.hop_to == "1.14.1"
    assert not any("HelmRelease/None" in f.message for f in plan.findings)
    # a value the hop renames is said where the script passes it (the command is not edited)
    (tmp_path / "install.sh").write_text(
        "helm upgrade --install karpenter oci://public.ecr.aws/karpenter/karpenter --version v0.31.4 \\\n"
        "  --set settings.aws.clusterName=$CLUSTER_NAME \\\n"
        "  --set settings.aws.defaultInstanceProfile=KarpenterNodeInstanceProfile-demo\n")
    (tmp_path / "nodes.yaml").write_text(PROVISIONER)
    plan = make_plan(tmp_path)
    (f,) = [f for f in plan.findings if f.code == "MIG-HELM-037"]
    assert "settings.aws.clusterName" in f.message and "--set settings.clusterName=" in f.manual_step
    assert not [f for f in plan.findings if f.code == "MIG-NC-011"]      # the profile the script sets is read


def test_flux_values_from_a_generated_configmap_are_the_generators_file(tmp_path):
    """valuesFrom a ConfigMap that kustomize's configMapGenerator builds from a file: the values are that file's,
    read and renamed there (before: unreadable, MIG-HELM-001, and a false MIG-NC-011)."""
    d = tmp_path / "infra" / "karpenter"
    d.mkdir(parents=True)
    (d / "kustomization.yaml").write_text(
        "resources:\n  - release.yaml\n  - nodes.yaml\nconfigMapGenerator:\n  - name: karpenter-values\n"
        "    files:\n      - values.yaml=karpenter-values.yaml\n")
    (d / "karpenter-values.yaml").write_text(
        "settings:\n  aws:\n    clusterName: demo\n    defaultInstanceProfile: KarpenterNodeInstanceProfile-demo\n")
    (d / "release.yaml").write_text(
        "apiVersion: helm.toolkit.fluxcd.io/v2beta1\nkind: HelmRelease\nmetadata:\n  name: karpenter\nspec:\n"
        "  chart:\n    spec:\n      chart: karpenter\n      version: v0.31.4\n      sourceRef:\n"
        "        kind: HelmRepository\n        name: karpenter\n  valuesFrom:\n    - kind: ConfigMap\n"
        "      name: karpenter-values\n")
    (d / "nodes.yaml").write_text(PROVISIONER)
    plan = make_plan(tmp_path)
    assert not [f for f in plan.findings if f.code in ("MIG-HELM-001", "MIG-NC-011")]
    (c,) = [c for c in plan.changes if c.path == "infra/karpenter/karpenter-values.yaml"]
    assert "  clusterName: demo" in c.new and "aws:" in c.new     # renamed; the profile stays for the alpha objects


def test_an_eksctl_instance_selector_is_carried_with_its_limits(tmp_path):
    """eksctl `instanceSelector: {vCPUs: 4, memory: "16"}`: the NodePool asks for the same vCPUs and memory (not one
    default instance type), and its limits are maxSize nodes of that size."""
    import shutil
    from pathlib import Path
    shutil.copytree(Path(__file__).resolve().parents[1] / "fixtures" / "cas-eksctl" / "input", tmp_path,
                    dirs_exist_ok=True)
    cfg = tmp_path / "cluster.yaml"
    cfg.write_text(cfg.read_text().replace('    instanceTypes: ["m5.large", "m5a.large"]\n',
                                           '    instanceSelector:\n      vCPUs: 4\n      memory: "16"\n'))
    plan = make_plan(tmp_path, to="v1")
    assert not [f for f in plan.findings if f.severity == "error"]
    (c,) = [c for c in plan.changes if c.action == "create" and "kind: NodePool" in (c.new or "")]
    pool = c.new[c.new.index("name: spotgroup"):]
    assert "karpenter.k8s.aws/instance-cpu" in pool and '- "4"' in pool and '- "16384"' in pool
    assert "node.kubernetes.io/instance-type" not in pool.split("---")[0]
    assert "cpu: 32" in pool and "memory: 128Gi" in pool            # maxSize 8 x (4 vCPUs, 16 GiB)
