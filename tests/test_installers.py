"""Installer shapes of issue 31 beyond Terragrunt: helmfile releases, Flux OCIRepository + chartRef, and semver
ranges read as the lowest release they admit (fixtures helmfile-releases, flux-oci)."""
from __future__ import annotations

import pytest

from migrator.plan import make_plan
from migrator.versions import admits, range_floor, shift_range, version_of

from .conftest import FIXTURES


@pytest.mark.parametrize("raw, floor, admits_1_14", [
    ("1.9.*", "1.9.0", False), ("~1.9", "1.9.0", False), ("^1.9", "1.9.0", True), (">=1.9 <2", "1.9.0", True),
    (">=1.9.0, <2.0.0", "1.9.0", True), ("1.9.x", "1.9.0", False), ("1.9.* || 1.14.*", "1.9.0", True),
])
def test_ranges_stand_for_the_lowest_release_they_admit(raw, floor, admits_1_14):
    assert range_floor(raw) == floor
    assert version_of(raw) == floor
    assert admits(raw, "1.14.1") is admits_1_14


def test_plain_versions_are_not_ranges():
    assert range_floor("1.2.3") is None and version_of("v0.37.0") == "0.37.0" and version_of("latest") is None


def test_ranges_move_in_their_own_shape():
    assert shift_range("1.9.*", "1.14.1") == "1.14.*"
    assert shift_range(">=1.5.0 <1.6.0", "1.14.1") == ">=1.14.0 <1.15.0"
    assert shift_range(">=1.5 <2", "1.14.1") is None          # a shape migrator does not rewrite: said instead


def test_flux_chart_ref_each_cluster_its_own_oci_repository():
    plan = make_plan(FIXTURES / "flux-oci" / "input", to="latest")
    assert {r.path: r.chart for r in plan.roots} == {"clusters/prod/karpenter": "1.3.3",
                                                     "clusters/staging/karpenter": "1.5.0"}
    new = {c.path: c.new for c in plan.changes}
    assert 'tag: "1.14.1"' in new["clusters/prod/karpenter/oci-repository.yaml"]
    assert 'semver: ">=1.14.0 <1.15.0"' in new["clusters/staging/karpenter/oci-repository.yaml"]
    assert {f.path for f in plan.findings if f.code == "MIG-HELM-031"} == {
        "clusters/prod/karpenter/release.yaml", "clusters/staging/karpenter/release.yaml"}


def test_helmfile_release_version_and_values_edited_in_place():
    plan = make_plan(FIXTURES / "helmfile-releases" / "input", to="latest")
    (root,) = plan.roots
    assert (root.era, root.chart) == ("v1", "1.0.8")
    assert any(f.code == "MIG-HELM-003" and f.path == "values/karpenter.yaml" for f in plan.findings)
    cmds = [c for s in root.steps for c in s.commands]
    assert not any("metrics-server" in c for c in cmds)


def test_helmfile_version_from_each_environments_values(tmp_path):
    (tmp_path / "env").mkdir()
    (tmp_path / "env" / "prod.yaml").write_text("karpenter:\n  version: \"1.1.0\"\n")
    (tmp_path / "helmfile.yaml.gotmpl").write_text(
        "environments:\n"
        "  dev:\n"
        "    values:\n"
        "      - karpenter:\n"
        "          version: 1.3.0\n"
        "  prod:\n"
        "    values:\n"
        "      - env/prod.yaml\n"
        "---\n"
        "releases:\n"
        "  - name: karpenter\n"
        "    chart: oci://public.ecr.aws/karpenter/karpenter\n"
        "    version: {{ .Values.karpenter.version }}\n"
        "    values:\n"
        "      - settings:\n"
        "          clusterName: {{ requiredEnv \"CLUSTER_NAME\" }}\n")
    plan = make_plan(tmp_path, to="latest")
    (root,) = plan.roots
    assert root.chart == "1.1.0"                  # the earliest environment decides
    new = {c.path: c.new for c in plan.changes}
    assert "version: 1.14.1" in new["helmfile.yaml.gotmpl"]
    assert new["env/prod.yaml"] == "karpenter:\n  version: \"1.14.1\"\n"
    assert "{{ .Values.karpenter.version }}" in new["helmfile.yaml.gotmpl"]


def test_applicationset_generators_set_the_chart_and_each_environments_version():
    plan = make_plan(FIXTURES / "argocd-applicationset" / "input", to="latest")
    (root,) = plan.roots
    assert (root.era, root.chart) == ("v1beta1", "0.37.5")        # production's override decides
    (change,) = [c for c in plan.changes if c.path == "bootstrap/addons.yaml"]
    assert "addonChartVersion: 0.37.8" in change.new and "addonChartVersion: 1.0.6" in change.new
    assert "addonChartVersion: 3.12.1" in change.new               # another add-on's element is never touched


def test_cdk_and_pulumi_programs_are_said_never_planned_as_empty(tmp_path):
    (tmp_path / "cdk" / "lib").mkdir(parents=True)
    (tmp_path / "cdk" / "cdk.json").write_text('{"app": "npx ts-node bin/app.ts"}\n')
    (tmp_path / "cdk" / "lib" / "addons.ts").write_text(
        "export const addons = [\n  new blueprints.addons.KarpenterAddOn({\n    version: 'v0.33.1',\n  }),\n];\n")
    (tmp_path / "cdk" / "node_modules" / "x").mkdir(parents=True)
    (tmp_path / "cdk" / "node_modules" / "x" / "index.ts").write_text("new ClusterAutoScalerAddOn()\n")
    (tmp_path / "infra").mkdir()
    (tmp_path / "infra" / "Pulumi.yaml").write_text("name: infra\nruntime: python\n")
    (tmp_path / "infra" / "__main__.py").write_text(
        'k8s.helm.v3.Release(\n    "autoscaler",\n    chart="cluster-autoscaler",\n    version="9.37.0",\n)\n')
    plan = make_plan(tmp_path, to="latest")
    found = {(f.path, f.line, f.severity) for f in plan.findings if f.code == "MIG-SRC-015"}
    assert found == {("cdk/lib/addons.ts", 2, "warning"), ("infra/__main__.py", 3, "warning")}
    assert any("(0.33.1)" in f.message for f in plan.findings if f.code == "MIG-SRC-015")
    (root,) = plan.roots
    assert root.era == "unsupported" and not plan.changes
    assert not any(f.code == "MIG-HOP-005" for f in plan.findings)


def test_a_cdk_construct_library_is_said_once_where_its_source_installs_karpenter(tmp_path):
    """A construct library has no cdk.json: its package.json depending on aws-cdk-lib marks it (aws-samples/
    cdk-eks-karpenter). Its own tests construct it too; it is said once, at its source, never "no Karpenter"."""
    (tmp_path / "src").mkdir()
    (tmp_path / "test").mkdir()
    (tmp_path / "package.json").write_text(
        '{\n  "name": "cdk-eks-karpenter",\n  "peerDependencies": {\n    "aws-cdk-lib": "^2.133.0"\n  }\n}\n')
    (tmp_path / "src" / "index.ts").write_text(
        "export class Karpenter extends Construct {\n  constructor() {\n    this.cluster.addHelmChart('karpenter', {\n"
        "      chart: 'karpenter',\n      version: props.version,\n    });\n  }\n}\n")
    (tmp_path / "test" / "versions.test.ts").write_text("new Karpenter(stack, 'Karpenter', {\n  version: 'v0.32.0',\n});\n")
    plan = make_plan(tmp_path, to="latest")
    (found,) = [f for f in plan.findings if f.code == "MIG-SRC-015"]
    assert (found.path, found.line) == ("src/index.ts", 4)
    assert "AWS CDK construct library in . installs Karpenter" in found.message and "release a version" in found.manual_step
    (root,) = plan.roots
    assert root.era == "unsupported" and not plan.changes and "does not edit AWS CDK construct library code" in root.next
    assert not any(f.code == "MIG-HOP-005" for f in plan.findings)
    # an app beside it is an app: its own marker decides
    (tmp_path / "cdk.json").write_text('{"app": "npx ts-node bin/app.ts"}\n')
    plan = make_plan(tmp_path, to="latest")
    assert {f.path for f in plan.findings if f.code == "MIG-SRC-015"} == {"src/index.ts", "test/versions.test.ts"}
    # a package.json below an app's cdk.json is the app's too: never a library, never said twice
    (tmp_path / "src" / "package.json").write_text('{"dependencies": {"aws-cdk-lib": "^2.133.0"}}\n')
    plan = make_plan(tmp_path, to="latest")
    said = [f for f in plan.findings if f.code == "MIG-SRC-015"]
    assert sorted(f.path for f in said) == ["src/index.ts", "test/versions.test.ts"]
    assert not any("library" in f.message for f in said)


def test_argocd_oci_source_whose_url_names_the_chart(tmp_path):
    (tmp_path / "app.yaml").write_text(
        "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: karpenter\n  namespace: argocd\n"
        "spec:\n  project: default\n  source:\n    repoURL: oci://public.ecr.aws/karpenter/karpenter\n"
        "    targetRevision: \"1.0.8\"\n    chart: \"\"\n  destination:\n    server: https://kubernetes.default.svc\n"
        "    namespace: kube-system\n")
    plan = make_plan(tmp_path, to="latest")
    assert plan.roots[0].chart == "1.0.8"
    crd = next(c for c in plan.changes if c.path == "karpenter-crd.yaml")
    assert "repoURL: oci://public.ecr.aws/karpenter/karpenter-crd\n" in crd.new and "chart:" not in crd.new


def test_generated_files_are_never_written_and_tofu_files_are_terraform(tmp_path):
    (tmp_path / "gen").mkdir()
    (tmp_path / "gen" / "_terramate_generated_karpenter.tf").write_text(
        "// TERRAMATE: GENERATED AUTOMATICALLY DO NOT EDIT\n\nresource \"helm_release\" \"karpenter\" {\n"
        "  name       = \"karpenter\"\n  repository = \"oci://public.ecr.aws/karpenter\"\n  chart      = \"karpenter\"\n"
        "  version    = \"1.0.6\"\n}\n")
    (tmp_path / "tofu").mkdir()
    (tmp_path / "tofu" / "main.tofu").write_text(
        "resource \"helm_release\" \"karpenter\" {\n  name       = \"karpenter\"\n"
        "  repository = \"oci://public.ecr.aws/karpenter\"\n  chart      = \"karpenter\"\n  version    = \"1.2.0\"\n}\n")
    plan = make_plan(tmp_path, to="latest")
    assert {r.path: r.chart for r in plan.roots} == {"gen": "1.0.6", "tofu": "1.2.0"}
    assert not any(c.path.startswith("gen/") for c in plan.changes)
    assert any(f.code == "MIG-EDIT-005" and f.path == "gen/_terramate_generated_karpenter.tf" for f in plan.findings)
    assert any(c.path == "tofu/main.tofu" and '"1.4.4"' in c.new for c in plan.changes)   # held: no clusterName


def test_atmos_stacks_set_the_components_chart_version():
    plan = make_plan(FIXTURES / "atmos-stacks" / "input", to="latest")
    (root,) = plan.roots
    assert (root.path, root.era, root.chart) == ("components/terraform/eks/karpenter", "v1", "1.0.8")
    assert {c.path for c in plan.changes} == {"stacks/catalog/eks/karpenter.yaml", "stacks/orgs/acme/prod/eks.yaml"}
    assert all('chart_version: "1.14.1"' in c.new for c in plan.changes)
    assert not any(f.code.startswith(("MIG-IAM", "MIG-V1X-IAM")) and f.severity != "info" for f in plan.findings)


def test_flux_kustomization_path_ties_a_folder_of_objects_to_its_cluster(tmp_path):
    src = FIXTURES / "flux-oci" / "input" / "clusters" / "prod" / "karpenter" / "nodepool.yaml"
    for env, version in (("prod", "1.0.8"), ("staging", "1.2.1")):
        (tmp_path / "clusters" / env).mkdir(parents=True)
        (tmp_path / "clusters" / env / "karpenter.yaml").write_text(
            "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: karpenter\n"
            "  namespace: kube-system\nspec:\n  interval: 10m\n  chart:\n    spec:\n      chart: karpenter\n"
            f"      version: \"{version}\"\n      sourceRef:\n        kind: HelmRepository\n        name: karpenter\n"
            f"  values:\n    settings:\n      clusterName: {env}\n---\n"
            "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: nodepools\n"
            f"  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./infrastructure/{env}-nodepools\n"
            "  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n")
        (tmp_path / "infrastructure" / f"{env}-nodepools").mkdir(parents=True)
        (tmp_path / "infrastructure" / f"{env}-nodepools" / "default.yaml").write_text(src.read_text())
    plan = make_plan(tmp_path, to="latest")
    assert {r.path: (r.chart, r.objects) for r in plan.roots} == {
        "clusters/prod": ("1.0.8", "1 EC2NodeClass, 1 NodePool"),
        "clusters/staging": ("1.2.1", "1 EC2NodeClass, 1 NodePool")}


def test_a_community_karpenter_module_installs_its_default_chart(tmp_path):
    (tmp_path / "main.tf").write_text(
        'module "eks_karpenter" {\n  source  = "lablabs/eks-karpenter/aws"\n  version = "3.0.0"\n\n'
        '  cluster_name = "demo"\n}\n\nmodule "off" {\n  source  = "lablabs/eks-karpenter/aws"\n'
        '  version = "4.2.0"\n  enabled = false\n}\n')
    plan = make_plan(tmp_path, to="latest")
    (root,) = plan.roots
    assert root.chart == "1.0.8"                 # the default of module 3.0.0 (knowledge/helm_modules.yaml)
    (change,) = plan.changes
    assert 'helm_chart_version      = "1.14.1"' in change.new and 'crds_helm_chart_version = "1.14.1"' in change.new
    codes = {f.code for f in plan.findings}
    assert "MIG-HELM-033" in codes and "MIG-SRC-011" in codes
    assert "MIG-V1X-HELM-001" not in codes       # the module passes settings.clusterName itself


def test_a_generic_add_ons_list_that_never_names_karpenter_is_not_evaluated(tmp_path, monkeypatch):
    from migrator import evaluate

    def boom(*_a, **_k):
        raise AssertionError("the evaluator was asked")
    monkeypatch.setattr(evaluate, "instances", boom)
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "helm.tf").write_text(
        'resource "helm_release" "this" {\n  for_each = var.helm_releases\n  name     = each.key\n'
        '  chart    = each.value.chart\n  version  = each.value.chart_version\n}\n\n'
        'variable "helm_releases" {\n  type    = any\n  default = {}\n}\n')
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "main.tf").write_text(
        'module "addons" {\n  source = "../lib"\n\n  helm_releases = {\n    adapter = {\n'
        '      chart         = "prometheus-adapter"\n      chart_version = "4.2.0"\n    }\n  }\n}\n')
    plan = make_plan(tmp_path, to="latest")
    assert [r.era for r in plan.roots] == ["none"]


EKSCTL_ALPHA = '''apiVersion: eksctl.io/v1alpha5
kind: ClusterConfig
metadata:
  name: br-eks
  region: ap-northeast-2
karpenter:
  version: "0.31.0"
{extra}managedNodeGroups:
  - name: system
    instanceType: m5.large
---
apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata:
  name: apps
spec:
  providerRef:
    name: apps
---
apiVersion: karpenter.k8s.aws/v1alpha1
kind: AWSNodeTemplate
metadata:
  name: apps
spec:
  subnetSelector:
    karpenter.sh/discovery: br-eks
  securityGroupSelector:
    karpenter.sh/discovery: br-eks
'''


@pytest.mark.parametrize("extra,profile", [("", "eksctl-KarpenterNodeInstanceProfile-br-eks"),
                                           ("  defaultInstanceProfile: NodesProfile\n", "NodesProfile")])
def test_an_alpha_node_template_on_an_eksctl_install_keeps_the_instance_profile_eksctl_gave_the_chart(tmp_path, extra,
                                                                                                       profile):
    """eksctl's `karpenter:` install gives the chart an instance profile (karpenter.defaultInstanceProfile, else
    eksctl-KarpenterNodeInstanceProfile-<cluster>): the EC2NodeClass keeps it, never a false MIG-NC-011 stop
    (skills-wlstmd/kubernetes, Cluster/BottleRocket/Karpenter)."""
    import yaml as pyyaml
    (tmp_path / "cluster.yaml").write_text(EKSCTL_ALPHA.replace("{extra}", extra))
    plan = make_plan(tmp_path, to="latest")
    assert not [f for f in plan.findings if f.severity == "error"]
    docs = [d for c in plan.changes if c.new for d in pyyaml.safe_load_all(c.new) if isinstance(d, dict)]
    (nc,) = [d for d in docs if d.get("kind") == "EC2NodeClass"]
    assert nc["spec"]["instanceProfile"] == profile


def test_blueprints_karpenter_v1_addon_pools_are_said_moving_to_auto_mode(tmp_path):
    """EKS Blueprints for CDK's KarpenterV1AddOn (its pools as `nodePoolSpec` / `ec2NodeClassSpec`) is an install;
    moving to Auto Mode, the pools are said with what to write by hand, read only inside their specs (MIG-AUTO-062)."""
    (tmp_path / "cdk" / "lib").mkdir(parents=True)
    (tmp_path / "cdk" / "cdk.json").write_text('{"app": "npx ts-node bin/app.ts"}\n')
    (tmp_path / "cdk" / "lib" / "deps.ts").write_text(
        "@dependable(blueprints.addons.KarpenterV1AddOn.name)\nexport class Mine {}\n")
    (tmp_path / "cdk" / "lib" / "stack.ts").write_text(
        "const instance = new ec2.Instance(this, 'bastion', { userData: ec2.UserData.forLinux() });\n"
        "const nodePoolSpec: blueprints.NodePoolV1Spec = {\n"
        "  requirements: [{ key: 'karpenter.k8s.aws/instance-family', operator: 'In', values: ['m7i'] }],\n"
        "};\n"
        "export const addOns = [\n"
        "  new blueprints.addons.KarpenterV1AddOn({\n"
        "    nodePoolSpec,\n"
        "    ec2NodeClassSpec: { amiFamily: 'AL2023', kubelet: { maxPods: 200 } },\n"
        "  }),\n"
        "];\n")
    plan = make_plan(tmp_path, to="latest")
    assert plan.roots[0].era == "unsupported" and not plan.changes
    assert [(f.path, f.line) for f in plan.findings if f.code == "MIG-SRC-015"] == [("cdk/lib/stack.ts", 6)]
    assert not any(f.code == "MIG-AUTO-062" for f in plan.findings)
    plan = make_plan(tmp_path, to="auto-mode")
    (f,) = [f for f in plan.findings if f.code == "MIG-AUTO-062"]
    assert (f.path, f.line, f.severity) == ("cdk/lib/stack.ts", 2, "warning")
    assert "karpenter.k8s.aws/instance-family (cdk/lib/stack.ts:3) → eks.amazonaws.com/instance-family" in f.message
    assert "amiFamily (cdk/lib/stack.ts:8)" in f.message and "kubelet (cdk/lib/stack.ts:8)" in f.message
    assert "stays on Karpenter" in f.message and "userData" not in f.message     # the bastion's is not the class's
    assert "cdk diff" in f.manual_step and not plan.changes


def test_a_program_without_karpenter_construct_is_not_an_install(tmp_path):
    (tmp_path / "cdk" / "lib").mkdir(parents=True)
    (tmp_path / "cdk" / "cdk.json").write_text('{"app": "npx ts-node bin/app.ts"}\n')
    (tmp_path / "cdk" / "lib" / "deps.ts").write_text(
        "import { KarpenterV1AddOn } from '@aws-quickstart/eks-blueprints';\n"
        "@dependable(KarpenterV1AddOn.name)\nexport class Mine {}\n")
    plan = make_plan(tmp_path, to="auto-mode")
    assert not any(f.code in ("MIG-SRC-015", "MIG-AUTO-062") for f in plan.findings)
