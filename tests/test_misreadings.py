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


def test_a_scripts_leftover_key_is_not_taken_as_renamed(tmp_path):
    """substratusai/substratus: a script passes `--set settings.aws.clusterName=...` to chart 1.0.14. Renames of
    leftover keys are written in values migrator edits, never in a script's --set (said, MIG-HELM-037), so the 1.5
    chart's settings.clusterName is not stated: the chart is held at 1.4.4 (MIG-V1X-HELM-001). Before, the rename was
    counted, the script was moved to 1.14.1, and the next run said that version could not be installed."""
    (tmp_path / "install.sh").write_text(
        "karpenter_version=1.0.14\n"
        "helm upgrade --install karpenter oci://public.ecr.aws/karpenter/karpenter --version ${karpenter_version} \\\n"
        "  --namespace karpenter --set settings.aws.clusterName=${CLUSTER_NAME} --wait\n")
    plan = make_plan(tmp_path)
    assert plan.hop_to == "1.4.4"
    assert [f.code for f in plan.findings if f.severity == "error"] == ["MIG-V1X-HELM-001"]
    assert [f.code for f in plan.findings if f.code == "MIG-HELM-037"]
    assert "karpenter_version=1.4.4" in plan.changes[0].new


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


def test_an_argo_application_in_a_charts_templates_is_read_as_a_template(tmp_path):
    """`settings.clusterName: {{ .Values.clusterName }}` in an Application kept in a Helm chart's templates/: the key
    is set (before: read as plain YAML, a false MIG-V1X-HELM-001 held the chart at 1.4.4)."""
    t = tmp_path / "charts" / "apps" / "templates"
    t.mkdir(parents=True)
    (tmp_path / "charts" / "apps" / "Chart.yaml").write_text("apiVersion: v2\nname: apps\nversion: 0.1.0\n")
    app = ("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: karpenter\nspec:\n  source:\n"
           "    repoURL: public.ecr.aws/karpenter\n    chart: karpenter\n    targetRevision: 1.0.6\n    helm:\n"
           "      valuesObject:\n        settings:\n          clusterName: {{ .Values.clusterName }}\n")
    (t / "karpenter.yaml").write_text(app)
    plan = make_plan(tmp_path)
    assert not [f for f in plan.findings if f.severity == "error"] and plan.hop_to == "1.14.1"
    (c,) = [c for c in plan.changes if c.path.endswith("templates/karpenter.yaml")]
    assert "clusterName: {{ .Values.clusterName }}\n" in c.new and "targetRevision: 1.14.1" in c.new
    # without a Chart.yaml the folder is no chart: the same text is plain YAML, and the key is not a name
    (tmp_path / "charts" / "apps" / "Chart.yaml").unlink()
    plan = make_plan(tmp_path)
    assert [f for f in plan.findings if f.code == "MIG-V1X-HELM-001"]


def test_a_release_list_decoded_from_a_yaml_file_is_edited_there(tmp_path):
    """`for_each` over `yamldecode(file("helm-releases.yaml"))`: the Karpenter item's version and values are edited
    in the YAML file (before: MIG-HELM-006, nothing written)."""
    (tmp_path / "main.tf").write_text(
        'locals {\n  releases = yamldecode(file("${path.module}/helm-releases.yaml"))\n}\n\n'
        'resource "helm_release" "this" {\n  for_each   = { for r in local.releases.releases : r.name => r }\n'
        '  name       = each.value.name\n  chart      = each.value.chart\n  repository = each.value.repository\n'
        '  version    = each.value.version\n  values     = [yamlencode(try(each.value.values, {}))]\n}\n')
    (tmp_path / "helm-releases.yaml").write_text(
        "releases:\n  - name: karpenter\n    chart: karpenter\n    repository: oci://public.ecr.aws/karpenter\n"
        "    version: 1.0.6 # pinned\n    values:\n      settings:\n        clusterName: prod\n")
    plan = make_plan(tmp_path)
    assert not [f for f in plan.findings if f.severity == "error"]
    (c,) = plan.changes
    assert c.path == "helm-releases.yaml" and "version: 1.14.1 # pinned\n" in c.new
    # a templatefile() of the list (no evaluator needed) reads the same
    (tmp_path / "main.tf").write_text(
        (tmp_path / "main.tf").read_text().replace('yamldecode(file(', 'yamldecode(templatefile(').replace(
            '.yaml")', '.yaml", {})'))
    plan = make_plan(tmp_path)
    (c,) = plan.changes
    assert c.path == "helm-releases.yaml" and "version: 1.14.1 # pinned\n" in c.new


def _flux_kustomization(name: str, path: str) -> str:
    return (f"apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: {name}\n"
            f"  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./{path}\n  prune: true\n  sourceRef:\n"
            "    kind: GitRepository\n    name: flux-system\n")


def test_one_flux_cluster_split_over_sibling_folders_is_one_root(tmp_path):
    """Each cluster's Flux Kustomizations (clusters/<env>) apply its chart folder and its node folder, kept apart
    under controllers/ and configs/: one root per cluster (before: two, the objects' root without the chart's 0.31.5
    stop and the chart's root with no Provisioner to roll). A node folder two clusters apply stays its own."""
    from pathlib import Path
    fx = Path(__file__).resolve().parents[1] / "fixtures" / "flux-cluster-split-folders" / "input"
    release = (fx / "controllers" / "prod" / "karpenter" / "release.yaml").read_text()
    for env in ("prod", "staging"):
        (tmp_path / "clusters" / env).mkdir(parents=True)
        (tmp_path / "clusters" / env / "infra.yaml").write_text(
            _flux_kustomization("karpenter", f"controllers/{env}/karpenter") + "---\n"
            + _flux_kustomization("karpenter-nodes", f"configs/{env}/karpenter-nodes"))
        (tmp_path / "controllers" / env / "karpenter").mkdir(parents=True)
        (tmp_path / "controllers" / env / "karpenter" / "release.yaml").write_text(release)
        (tmp_path / "configs" / env / "karpenter-nodes").mkdir(parents=True)
        (tmp_path / "configs" / env / "karpenter-nodes" / "nodes.yaml").write_text(PROVISIONER)
    plan = make_plan(tmp_path)
    assert sorted(r.path for r in plan.roots) == ["controllers/prod/karpenter", "controllers/staging/karpenter"]
    assert all(r.era == "v1alpha5" and r.chart == "0.23.0" and r.objects for r in plan.roots)
    # staging's Kustomization applies prod's node folder too: shared by two clusters, it is tied to neither
    (tmp_path / "clusters" / "staging" / "infra.yaml").write_text(
        _flux_kustomization("karpenter", "controllers/staging/karpenter") + "---\n"
        + _flux_kustomization("karpenter-nodes", "configs/prod/karpenter-nodes"))
    import shutil
    shutil.rmtree(tmp_path / "configs" / "staging")
    plan = make_plan(tmp_path)
    assert "configs/prod/karpenter-nodes" in [r.path for r in plan.roots]


def test_a_terragrunt_stacks_units_are_read_with_the_stacks_values(tmp_path):
    """terragrunt.stack.hcl: a `unit` whose source is a catalog unit of the repository reads `values.x` from the unit
    block; the cluster root is the stack's folder and the version moves in the stack file (before: era unknown)."""
    from pathlib import Path
    import shutil
    fx = Path(__file__).resolve().parents[1] / "fixtures" / "terragrunt-stack" / "input"
    shutil.copytree(fx, tmp_path, dirs_exist_ok=True)
    plan = make_plan(tmp_path)
    got = {r.path: (r.era, r.chart) for r in plan.roots}
    assert got == {"live/prod": ("v1beta1", "0.37.0"), "live/staging": ("v1", "1.0.6")}
    stack = next(c for c in plan.changes if c.path == "live/staging/terragrunt.stack.hcl")
    assert 'chart_version = "1.14.1" # keep in step with the CRDs' in stack.new
    assert not any(c.path.startswith("catalog/") for c in plan.changes)        # the catalog is a template
    # a unit from outside the repository: its stack is not read, and that is said (never "no Karpenter")
    p = tmp_path / "live" / "staging" / "terragrunt.stack.hcl"
    p.write_text(p.read_text().replace('"../../catalog/units/karpenter"',
                                       '"git::https://github.com/acme/catalog.git//units/karpenter?ref=v1.0.0"'))
    plan = make_plan(tmp_path)
    assert [r.era for r in plan.roots if r.path == "live/staging"] in ([], ["unknown"])
    (f,) = [f for f in plan.findings if f.code == "MIG-SRC-020"]
    assert f.path == "live/staging/terragrunt.stack.hcl" and "outside the repository" in f.message


def test_a_stacks_units_that_do_not_name_the_move_are_read_when_asked(tmp_path):
    """Issue 60 (100rd/platform-design: 33 stacks, 350 units): a stack's unit that names neither Karpenter nor an
    autoscaler is evaluated only when a dependency or the question "was this stack read whole" needs it, and then
    reads as it did when every unit was evaluated up front."""
    from pathlib import Path
    import shutil
    from migrator.inventory.repo import Repo
    from migrator.inventory.terragrunt import Terragrunt
    fx = Path(__file__).resolve().parents[1] / "fixtures" / "terragrunt-stack" / "input"
    shutil.copytree(fx, tmp_path, dirs_exist_ok=True)
    tg = Terragrunt(Repo(tmp_path))
    assert "live/staging/.terragrunt-stack/eks" not in tg.generated          # not evaluated yet
    eks = tg.unit_at("live/staging/.terragrunt-stack/eks")                  # the karpenter unit's dependency
    assert eks is not None and eks.inputs["cluster_name"].value == "staging"
    assert tg.stacks_read == {"live/prod/terragrunt.stack.hcl", "live/staging/terragrunt.stack.hcl"}
    # a unit with no terraform source is no unit: its stack is not read whole, found when asked
    cat = tmp_path / "catalog" / "units" / "eks" / "terragrunt.hcl"
    cat.write_text(cat.read_text().replace('  source = "tfr:///terraform-aws-modules/eks/aws?version=20.31.0"\n', ""))
    tg = Terragrunt(Repo(tmp_path))
    assert tg.stacks_read == set() and tg.unit_at("live/staging/.terragrunt-stack/eks") is None
    # a catalog unit naming neither that does not parse: parsed only when asked, its stack then not read whole
    cat.write_text("terraform {\n  source = \n")
    repo = Repo(tmp_path)
    tg = Terragrunt(repo)
    assert "catalog/units/eks/terragrunt.hcl" not in repo._hcl                 # not parsed up front
    assert tg.stacks_read == set() and tg.unit_at("live/staging/.terragrunt-stack/eks") is None


def test_a_unit_source_from_the_repository_root(tmp_path):
    """`source = "${get_repo_root()}/modules/karpenter"`: the module folder from the repository's root (before: read
    as the `//` subfolder separator, a folder under the unit's own)."""
    (tmp_path / "modules" / "karpenter").mkdir(parents=True)
    (tmp_path / "modules" / "karpenter" / "main.tf").write_text(
        'variable "chart_version" {\n  type = string\n}\n\nresource "helm_release" "karpenter" {\n'
        '  name       = "karpenter"\n  repository = "oci://public.ecr.aws/karpenter"\n  chart      = "karpenter"\n'
        '  version    = var.chart_version\n\n  set {\n    name  = "settings.clusterName"\n    value = "dev"\n  }\n}\n')
    (tmp_path / "live" / "dev" / "karpenter").mkdir(parents=True)
    (tmp_path / "live" / "dev" / "karpenter" / "terragrunt.hcl").write_text(
        'terraform {\n  source = "${get_repo_root()}/modules/karpenter"\n}\n\ninputs = {\n'
        '  chart_version = "1.0.6"\n}\n')
    plan = make_plan(tmp_path)
    assert [(r.era, r.chart) for r in plan.roots] == [("v1", "1.0.6")]
    assert [c.path for c in plan.changes if "1.14.1" in c.new] == ["live/dev/karpenter/terragrunt.hcl"]


def test_a_chart_templates_version_from_the_charts_values_is_moved_there(tmp_path):
    """`targetRevision: {{ .Values.karpenter.version }}` in an app-of-apps chart's template: the version is read from
    the chart's values files and moved in each (before: no version, MIG-STAND-003, nothing planned)."""
    t = tmp_path / "apps" / "templates"
    t.mkdir(parents=True)
    (tmp_path / "apps" / "Chart.yaml").write_text("apiVersion: v2\nname: apps\nversion: 0.1.0\n")
    (tmp_path / "apps" / "values.yaml").write_text("karpenter:\n  version: 1.0.6 # default\n")
    (tmp_path / "apps" / "values-prod.yaml").write_text("karpenter:\n  version: \"1.0.2\"\n")
    (t / "karpenter.yaml").write_text(
        "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: karpenter\nspec:\n  source:\n"
        "    repoURL: public.ecr.aws/karpenter\n    chart: karpenter\n    targetRevision: {{ .Values.karpenter.version }}\n"
        "    helm:\n      valuesObject:\n        settings:\n          clusterName: {{ .Values.clusterName }}\n")
    plan = make_plan(tmp_path)
    assert [(r.era, r.chart) for r in plan.roots] == [("v1", "1.0.2")]      # the earliest environment decides
    got = {c.path: c.new for c in plan.changes}
    assert "version: 1.14.1 # default\n" in got["apps/values.yaml"]
    assert 'version: "1.14.1"\n' in got["apps/values-prod.yaml"]
    assert "targetRevision: {{ .Values.karpenter.version }}\n" in got.get("apps/templates/karpenter.yaml",
                                                                         (t / "karpenter.yaml").read_text())


def test_a_root_with_only_karpenters_aws_side_by_hand_is_never_no_karpenter(tmp_path):
    """sunghohoho/eks-terraform: the controller and node roles, an admin policy named for Karpenter and the pod identity
    association of its service account, the helm_release commented out (Karpenter installed from elsewhere):
    `unknown` with MIG-STAND-003 naming them (before: "no Karpenter here"). A role for something else stays none."""
    (tmp_path / "iam.tf").write_text(
        'resource "aws_iam_role" "controller" {\n  name = "demo-controller-role"\n}\n\n'
        'resource "aws_eks_pod_identity_association" "this" {\n  cluster_name    = "demo"\n'
        '  namespace       = "karpenter"\n  service_account = "karpenter"\n  role_arn        = aws_iam_role.controller.arn\n}\n'
        '\n# resource "helm_release" "karpenter" {\n#   chart = "karpenter"\n# }\n')
    plan = make_plan(tmp_path)
    assert [r.era for r in plan.roots] == ["unknown"]
    (f,) = [f for f in plan.findings if f.code == "MIG-STAND-003"]
    assert "aws_eks_pod_identity_association.this (iam.tf:5)" in f.message and "its AWS side only" in f.message
    (tmp_path / "iam.tf").write_text((tmp_path / "iam.tf").read_text().replace('"karpenter"', '"external-dns"'))
    plan = make_plan(tmp_path)
    assert [r.era for r in plan.roots] == ["none"] and [f.code for f in plan.findings if f.code.startswith("MIG-HOP")]


def test_a_root_with_only_the_karpenter_module_is_never_no_karpenter(tmp_path):
    """The controller's IAM from the karpenter module, the chart installed elsewhere: `unknown` with MIG-STAND-003
    (before: era none, MIG-HOP-005 "no ... module"); a unit applying a module folder the repository lacks is said."""
    (tmp_path / "main.tf").write_text(
        'module "karpenter" {\n  source  = "terraform-aws-modules/eks/aws//modules/karpenter"\n  version = "21.15.1"\n\n'
        '  cluster_name = "prod"\n}\n')
    plan = make_plan(tmp_path)
    assert [r.era for r in plan.roots] == ["unknown"] and not [f for f in plan.findings if f.code == "MIG-HOP-005"]
    (tmp_path / "main.tf").unlink()
    (tmp_path / "live" / "karpenter").mkdir(parents=True)
    (tmp_path / "live" / "karpenter" / "terragrunt.hcl").write_text(
        '# the karpenter controller\nterraform {\n  source = "../../modules/karpenter"\n}\n')
    plan = make_plan(tmp_path)
    (f,) = [f for f in plan.findings if f.code == "MIG-SRC-021"]
    assert f.path == "live/karpenter/terragrunt.hcl" and f.line == 3 and "modules/karpenter" in f.message
    assert [r.era for r in plan.roots] == ["unknown"]


def test_karpenter_objects_in_an_unused_examples_folder_are_no_clusters(tmp_path):
    """Item 4: a module's examples/ manifest nothing applies is no cluster's (before: its own root, planned and
    edited); a repository of nothing but examples is planned as it is."""
    (tmp_path / "live").mkdir()
    (tmp_path / "live" / "main.tf").write_text(
        'resource "helm_release" "karpenter" {\n  name       = "karpenter"\n  repository = "oci://public.ecr.aws/karpenter"\n'
        '  chart      = "karpenter"\n  version    = "0.37.0"\n}\n')
    ex = tmp_path / "modules" / "nodes" / "examples"
    ex.mkdir(parents=True)
    (ex / "nodes.yaml").write_text(PROVISIONER)
    plan = make_plan(tmp_path)
    assert [r.path for r in plan.roots] == ["live"] and not any(c.path.startswith("modules/") for c in plan.changes)
    (f,) = [f for f in plan.findings if f.code == "MIG-SRC-022"]
    assert f.path == "modules/nodes/examples/nodes.yaml"
    (tmp_path / "live" / "main.tf").unlink()
    plan = make_plan(tmp_path)
    assert [r.era for r in plan.roots] == ["v1alpha5"] and not [f for f in plan.findings if f.code == "MIG-SRC-022"]


def test_karpenter_from_a_module_outside_the_repository_is_never_no_karpenter(tmp_path):
    """A remote module of the team's own named karpenter: unknown with MIG-SRC-023 (before: "no Karpenter here",
    rc 0); moving to Auto Mode it is an error (nothing can be planned from these files: issue 57 item 3)."""
    (tmp_path / "main.tf").write_text(
        'module "karpenter" {\n  source = "git::https://github.com/acme/terraform-karpenter.git?ref=v2.3.0"\n\n'
        '  cluster_name = "shop"\n}\n')
    plan = make_plan(tmp_path)
    (f,) = [f for f in plan.findings if f.code == "MIG-SRC-023"]
    assert f.severity == "warning" and f.line == 1 and [r.era for r in plan.roots] == ["unknown"]
    plan = make_plan(tmp_path, to="auto-mode")
    assert [f.severity for f in plan.findings if f.code == "MIG-SRC-023"] == ["error"] and plan.has_errors
    # a known module is read as before (the terraform-aws-modules karpenter module: its own checks)
    (tmp_path / "main.tf").write_text(
        'module "karpenter" {\n  source  = "terraform-aws-modules/eks/aws//modules/karpenter"\n  version = "21.15.1"\n\n'
        '  cluster_name = "shop"\n}\n')
    assert not [f for f in make_plan(tmp_path).findings if f.code == "MIG-SRC-023"]


def test_an_environment_named_test_is_a_cluster_not_an_example(tmp_path):
    """`envs/test` with its own chart install and objects is an environment: planned, never taken for an example."""
    for env in ("test", "prod"):
        d = tmp_path / "envs" / env
        d.mkdir(parents=True)
        (d / "main.tf").write_text(
            'resource "helm_release" "karpenter" {\n  name       = "karpenter"\n'
            '  repository = "oci://public.ecr.aws/karpenter"\n  chart      = "karpenter"\n  version    = "0.37.0"\n}\n')
        (d / "nodes.yaml").write_text(PROVISIONER)
    plan = make_plan(tmp_path)
    assert sorted(r.path for r in plan.roots) == ["envs/prod", "envs/test"]
    assert not [f for f in plan.findings if f.code == "MIG-SRC-022"]


def test_a_release_the_plan_adds_beside_a_switched_one_is_read_in_the_second_pass(tmp_path):
    """skyfjell/terraform-aws-eks-platform: the karpenter helm_release carries `count = local.x ? 1 : 0`, so the
    evaluator is asked whether it exists; the plan adds a karpenter-crd release with the same switch. The second pass
    took the evaluator's answer (read from the files on disk, which lack the new release) as "switched off
    everywhere", found no CRD release, added it again, and the whole change was held (MIG-EDIT-004)."""
    from migrator import evaluate
    if not evaluate.available():
        import pytest
        pytest.skip("the Terraform evaluator (tfparse) is not installed")
    (tmp_path / "main.tf").write_text(
        'provider "aws" {\n  region = "eu-west-1"\n}\n\nlocals {\n  install = true\n}\n\n'
        'resource "helm_release" "karpenter" {\n  count = local.install ? 1 : 0\n\n  namespace  = "karpenter"\n'
        '  name       = "karpenter"\n  repository = "oci://public.ecr.aws/karpenter"\n  chart      = "karpenter"\n'
        '  version    = "0.37.0"\n\n  set {\n    name  = "settings.clusterName"\n    value = "demo"\n  }\n}\n')
    plan = make_plan(tmp_path)
    assert not [f for f in plan.findings if f.code == "MIG-EDIT-004"]
    (change,) = plan.changes
    assert change.new.count('resource "helm_release" "karpenter_crd"') == 1
    assert "count = local.install ? 1 : 0" in change.new.split('"karpenter_crd"')[1].split("}")[0]


def test_a_release_switched_off_in_a_file_the_plan_changes_stays_off_in_the_second_pass(tmp_path):
    """The other side of the rule above: a block that is on disk and switched off (`count = 0`) keeps the evaluator's
    answer in the check pass, even in a file the plan changed; reading it as unknown there would plan it as an
    install the first pass did not, and hold the change as not converging."""
    from migrator import evaluate
    if not evaluate.available():
        import pytest
        pytest.skip("the Terraform evaluator (tfparse) is not installed")
    (tmp_path / "main.tf").write_text(
        'provider "aws" {\n  region = "eu-west-1"\n}\n\nlocals {\n  old = false\n}\n\n'
        'resource "helm_release" "karpenter_legacy" {\n  count = local.old ? 1 : 0\n\n  name       = "karpenter"\n'
        '  repository = "https://charts.karpenter.sh"\n  chart      = "karpenter"\n  version    = "0.16.3"\n}\n\n'
        'resource "helm_release" "karpenter" {\n  count = local.old ? 0 : 1\n\n  namespace  = "karpenter"\n'
        '  name       = "karpenter"\n  repository = "oci://public.ecr.aws/karpenter"\n  chart      = "karpenter"\n'
        '  version    = "0.37.0"\n\n  set {\n    name  = "settings.clusterName"\n    value = "demo"\n  }\n}\n')
    plan = make_plan(tmp_path)
    assert not [f for f in plan.findings if f.code == "MIG-EDIT-004"] and plan.changes
    assert [r.chart for r in plan.roots] == ["0.37.0"]
    assert 'version    = "0.16.3"' in plan.changes[0].new                # the switched-off release is left alone


def test_a_chart_version_read_through_a_locals_object_entry(tmp_path):
    """restatedev/aws-eks-karpenter-sandbox: `version = local.karpenter.version`, the local an object whose `version`
    is `var.karpenter_version` (default 1.4.0) and whose other entries read resources. The root read as `unknown`
    (MIG-STAND-003); the entry is followed to the variable's default, where the version moves."""
    (tmp_path / "variables.tf").write_text('variable "karpenter_version" {\n  type    = string\n  default = "1.4.0"\n}\n')
    (tmp_path / "karpenter.tf").write_text(
        'locals {\n  karpenter = {\n    namespace = "kube-system"\n    version   = var.karpenter_version\n'
        '    profile   = "KarpenterNodeInstanceProfile-${aws_eks_cluster.this.name}"\n  }\n}\n\n'
        'resource "helm_release" "karpenter" {\n  namespace  = local.karpenter.namespace\n  name       = "karpenter"\n'
        '  repository = "oci://public.ecr.aws/karpenter"\n  chart      = "karpenter"\n'
        '  version    = local.karpenter.version\n\n  set {\n    name  = "settings.clusterName"\n    value = "demo"\n  }\n}\n')
    plan = make_plan(tmp_path)
    assert [(r.era, r.chart) for r in plan.roots] == [("v1", "1.4.0")]
    change = next(c for c in plan.changes if c.path == "variables.tf")
    assert 'default = "1.14.1"' in change.new
    assert any("through local.karpenter.version" in f.message for f in plan.findings if f.code == "MIG-HELM-003")


def test_a_hand_written_class_of_the_conversions_name_holds_the_prepare_but_an_edited_twin_does_not(tmp_path):
    """MIG-NC-018 (iliusa77/terraform-vpc-eks-karpenter-keda-public): an EC2NodeClass of the name a Provisioner's
    conversion writes, unlike the conversion, is never taken for it. Once the prepare wrote the NodePool too, the class
    is the conversion, edited by hand since: the cleanup goes on."""
    import shutil
    from .conftest import FIXTURES
    held = make_plan(FIXTURES / "alpha-provisioner-class-name-taken" / "input")
    assert [f.code for f in held.findings if f.severity == "error"] == ["MIG-NC-018"]
    assert not any(c.path == "karpenter.tf" and "kind: NodePool" in c.new for c in held.changes)
    work = tmp_path / "tree"
    shutil.copytree(FIXTURES / "alpha-twin-file-name-taken" / "expected-run-1", work)
    twin = work / "k8s" / "provisioner-v1beta1.yaml"
    twin.write_text(twin.read_text().replace("amiFamily: AL2", "amiFamily: Bottlerocket"))
    plan = make_plan(work)
    assert not plan.has_errors and plan.phase == "cleanup"
