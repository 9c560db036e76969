"""Terragrunt units (migrator/inventory/terragrunt.py): inputs, includes, shared .hcl files and dependency outputs
evaluated with where each value is written; each cluster's units are one root (fixtures/terragrunt-live)."""
from __future__ import annotations

import textwrap
from pathlib import Path

from migrator.inventory import Repo, scan_charts
from migrator.inventory.terragrunt import UNKNOWN, region_of, repo_path, terragrunt
from migrator.plan import make_plan

from .conftest import FIXTURES

LIVE = FIXTURES / "terragrunt-live" / "input"


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip())
    return tmp_path


def test_paths_as_units_write_them():
    assert repo_path("live/dev/karpenter", "../../../modules/helm") == "modules/helm"
    assert repo_path("live/dev", "/modules/x") == "modules/x"          # from get_repo_root() / find_in_parent_folders
    assert repo_path("live", "../../outside") is None


def test_each_environment_is_one_root_planned_from_its_own_version():
    plan = make_plan(LIVE, to="latest")
    rows = {r.path: (r.era, r.chart) for r in plan.roots}
    assert rows == {"live/dev": ("v1beta1", "0.37.0"), "live/prod": ("v1beta1", "0.36.2")}
    bumps = {c.path for c in plan.changes if "karpenter_version" in (c.old or "")}
    assert bumps == {"live/dev/env.hcl", "live/prod/env.hcl"}         # where the version is written
    assert not any(c.path.startswith("modules/") for c in plan.changes)
    codes = {(f.code, f.path) for f in plan.findings}
    assert ("MIG-SRC-011", "live/sandbox/karpenter/terragrunt.hcl") in codes
    assert ("MIG-SRC-014", "live/dev/karpenter-irsa/terragrunt.hcl") in codes
    assert not any(f.severity == "error" for f in plan.findings)
    cmds = [c for r in plan.roots for s in r.steps for c in s.commands]
    assert "(cd live/dev/karpenter && terragrunt apply -target=helm_release.this)" in cmds
    assert not any("terraform -chdir=live" in c for c in cmds)


def test_includes_locals_and_templatefile_values():
    repo = Repo(LIVE)
    charts = {c.path: c for c in scan_charts(repo) if c.kind == "terragrunt"}
    dev = charts["live/dev/karpenter/terragrunt.hcl"]
    assert (dev.chart, dev.evaluated_version, dev.version_path) == ("karpenter", "0.37.0", "live/dev/env.hcl")
    assert [v.path for v in dev.values] == ["live/dev/karpenter/values.yaml.tftpl"]
    scope = dev.values[0].scope
    assert scope["cluster_name"][0] == "dev-eks"                       # include.envcommon.locals.env.locals...
    assert scope["cluster_endpoint"][0] == "https://mock.eks.amazonaws.com"     # the dependency's mock_outputs
    assert scope["role_arn"][0] is None                                # a remote module's output: unknown
    assert "live/sandbox/karpenter/terragrunt.hcl" not in charts       # enabled = false
    unit = terragrunt(repo).unit_at("live/dev/karpenter")
    assert region_of(repo, unit) == ("eu-west-1", "aws_region in live/region.tfvars, a var file of terragrunt unit "
                                                  "live/dev/karpenter")


def test_dependency_outputs_are_read_from_the_other_units_module(tmp_path):
    root = _tree(tmp_path, {
        "modules/profile/main.tf": '''
            resource "aws_iam_instance_profile" "this" {
              name = var.name
              role = var.role
            }
            output "name" {
              value = aws_iam_instance_profile.this.name
            }
            variable "name" {}
            variable "role" {}
            ''',
        "modules/helm/main.tf": '''
            resource "helm_release" "this" {
              name       = var.release_name
              repository = var.repository_url
              chart      = var.chart_name
              version    = var.chart_version
              values     = [var.values_file]
            }
            ''',
        "modules/helm/variables.tf": '''
            variable "release_name" {}
            variable "repository_url" {}
            variable "chart_name" {
              default = ""
            }
            variable "chart_version" {}
            variable "values_file" {}
            ''',
        "envs/common.hcl": '''
            locals {
              params = { cluster_name = "eks-staging" }
            }
            ''',
        "envs/staging/profile/terragrunt.hcl": '''
            locals {
              common = read_terragrunt_config(find_in_parent_folders("common.hcl"))
            }
            terraform {
              source = "../../../modules/profile///"
            }
            inputs = {
              name = "KarpenterNodeInstanceProfile-${local.common.locals.params.cluster_name}"
              role = "eks-staging-workers"
            }
            ''',
        "envs/staging/karpenter/terragrunt.hcl": '''
            dependency "profile" {
              config_path = "../profile"
            }
            terraform {
              source = "../../../modules/helm///"
            }
            inputs = {
              release_name   = "karpenter"
              repository_url = "oci://public.ecr.aws/karpenter/karpenter"
              chart_version  = "v0.16.3"
              values_file    = templatefile("values.tmpl", { profile = dependency.profile.outputs.name })
            }
            ''',
        "envs/staging/karpenter/values.tmpl": '''
            aws:
              defaultInstanceProfile: ${profile}
            ''',
    })
    repo = Repo(root)
    (ci,) = [c for c in scan_charts(repo) if c.kind == "terragrunt"]
    assert ci.chart == "karpenter"                  # no chart name: the OCI repository names it
    assert ci.evaluated_version == "v0.16.3"
    assert ci.values[0].scope["profile"] == ("KarpenterNodeInstanceProfile-eks-staging",
                                             "dependency.profile.outputs.name")
    unit = terragrunt(repo).unit_at("envs/staging/karpenter")
    assert unit.dependencies == ["envs/staging/profile"]
    assert "chart_name" not in unit.inputs and unit.inputs["values_file"].value is not UNKNOWN


def test_a_module_the_units_call_is_not_a_root_and_its_version_is_the_units_input():
    plan = make_plan(FIXTURES / "terragrunt-module" / "input", to="latest")
    assert {r.path: (r.era, r.chart) for r in plan.roots} == {"stage": ("v1", "1.1.1"), "prod": ("v1", "1.0.6")}
    by_path = {c.path: c for c in plan.changes}
    assert '"1.14.1"' in by_path["stage/karpenter/terragrunt.hcl"].new
    assert '"1.14.1"' in by_path["prod/karpenter/terragrunt.hcl"].new
    assert "var.karpenter_version" in by_path["modules/karpenter/main.tf"].new     # never pinned in the module
    assert not any(f.code == "MIG-HELM-006" for f in plan.findings)
    stage = next(r for r in plan.roots if r.path == "stage")
    cmds = [c for s in stage.steps for c in s.commands]
    assert "(cd stage/karpenter && terragrunt init -upgrade)" in cmds
    assert not any(c.startswith("terraform") for c in cmds)


def test_a_unit_of_the_add_ons_module_is_read_by_its_inputs(tmp_path):
    root = _tree(tmp_path, {
        "live/root.hcl": 'remote_state {\n  backend = "local"\n}\n',
        "live/prod/eks/terragrunt.hcl": 'terraform {\n  source = "tfr:///terraform-aws-modules/eks/aws?version=20.24.0"\n}\n',
        "live/prod/addons/terragrunt.hcl": '''
            include "root" {
              path = find_in_parent_folders("root.hcl")
            }
            terraform {
              source = "tfr:///aws-ia/eks-blueprints-addons/aws?version=1.16.3"
            }
            dependency "eks" {
              config_path = "../eks"
            }
            inputs = {
              cluster_name     = "prod"
              enable_karpenter = true
              karpenter = {
                chart_version = "0.36.2"
              }
            }
            ''',
        "live/staging/addons/terragrunt.hcl": '''
            terraform {
              source = "tfr:///aws-ia/eks-blueprints-addons/aws?version=1.16.3"
            }
            inputs = {
              enable_karpenter = false
            }
            ''',
    })
    plan = make_plan(root, to="latest")
    assert {r.path: (r.era, r.chart) for r in plan.roots} == {"live/prod": ("v1beta1", "0.36.2")}
    (change,) = plan.changes
    assert change.path == "live/prod/addons/terragrunt.hcl" and 'chart_version = "0.36.9"' in change.new
    assert not any(f.code == "MIG-SRC-014" for f in plan.findings)
    cmds = [c for r in plan.roots for s in r.steps for c in s.commands]
    assert "(cd live/prod/addons && terragrunt apply -target=module.karpenter)" in cmds


def test_a_unit_of_the_karpenter_module_holds_the_chart_its_policy_covers(tmp_path):
    root = _tree(tmp_path, {
        "live/prod/eks/terragrunt.hcl": 'terraform {\n  source = "tfr:///terraform-aws-modules/eks/aws?version=20.31.0"\n}\n',
        "live/prod/karpenter/terragrunt.hcl": '''
            terraform {
              source = "tfr:///terraform-aws-modules/eks/aws//modules/karpenter?version=20.31.0"
            }
            dependency "eks" {
              config_path = "../eks"
            }
            inputs = {
              cluster_name          = dependency.eks.outputs.cluster_name
              enable_v1_permissions = true
            }
            ''',
        "live/prod/apps/karpenter.yaml": '''
            apiVersion: argoproj.io/v1alpha1
            kind: Application
            metadata:
              name: karpenter
              namespace: argocd
            spec:
              project: default
              source:
                repoURL: public.ecr.aws/karpenter
                chart: karpenter
                targetRevision: 1.1.1
                helm:
                  valuesObject:
                    settings:
                      clusterName: prod
              destination:
                server: https://kubernetes.default.svc
                namespace: kube-system
            ''',
    })
    plan = make_plan(root, to="latest")
    assert [(r.path, r.chart) for r in plan.roots] == [("live/prod", "1.1.1")]     # the IAM unit is the cluster's
    assert any(f.code == "MIG-V1X-MOD-009" and f.path == "live/prod/karpenter/terragrunt.hcl" for f in plan.findings)
    app = next(c for c in plan.changes if c.path == "live/prod/apps/karpenter.yaml")
    assert "targetRevision: 1.2.8" in app.new                # held where the module's policy stops
    assert not any(f.code == "MIG-SRC-014" for f in plan.findings)


def test_a_unit_of_the_karpenter_module_without_v1_permissions_is_said_in_the_v1_hop(tmp_path):
    root = _tree(tmp_path, {
        "live/prod/eks/terragrunt.hcl": 'terraform {\n  source = "tfr:///terraform-aws-modules/eks/aws?version=20.31.0"\n}\n',
        "live/prod/karpenter/terragrunt.hcl": '''
            terraform {
              source = "tfr:///terraform-aws-modules/eks/aws//modules/karpenter?version=20.31.0"
            }
            dependency "eks" {
              config_path = "../eks"
            }
            inputs = {
              cluster_name = dependency.eks.outputs.cluster_name
            }
            ''',
        "live/prod/karpenter-chart/terragrunt.hcl": '''
            terraform {
              source = "../../../modules//chart"
            }
            dependency "eks" {
              config_path = "../eks"
            }
            inputs = {
              karpenter_version = "0.37.5"
            }
            ''',
        "modules/chart/main.tf": '''
            resource "helm_release" "karpenter" {
              name       = "karpenter"
              repository = "oci://public.ecr.aws/karpenter"
              chart      = "karpenter"
              version    = var.karpenter_version
            }
            variable "karpenter_version" {}
            ''',
    })
    plan = make_plan(root, to="latest")
    assert [(r.path, r.chart, r.phase) for r in plan.roots] == [("live/prod", "0.37.5", "patch-upgrade")]
    (f,) = [f for f in plan.findings if f.code == "MIG-V1-MOD-008"]
    assert f.path == "live/prod/karpenter/terragrunt.hcl" and f.severity == "warning"
    assert any(c.path == "live/prod/karpenter-chart/terragrunt.hcl" and '"0.37.8"' in c.new for c in plan.changes)


def test_a_module_default_shared_by_units_is_never_edited(tmp_path):
    root = _tree(tmp_path, {
        "modules/helm/main.tf": '''
            resource "helm_release" "this" {
              name       = var.chart_name
              repository = "oci://public.ecr.aws/karpenter"
              chart      = var.chart_name
              version    = var.chart_version
            }
            variable "chart_name" {}
            variable "chart_version" {
              default = "0.37.0"
            }
            ''',
        "live/karpenter/terragrunt.hcl": '''
            terraform {
              source = "../../modules//helm"
            }
            inputs = {
              chart_name = "karpenter"
            }
            ''',
    })
    plan = make_plan(root, to="latest")
    assert [(r.path, r.chart) for r in plan.roots] == [("live/karpenter", "0.37.0")]
    assert not any(c.path.startswith("modules/") for c in plan.changes)
    assert any(f.code == "MIG-HELM-034" and f.severity == "warning" for f in plan.findings)


def test_a_v21_karpenter_module_unit_moves_in_its_source_and_is_applied_whole(tmp_path):
    root = _tree(tmp_path, {
        "live/prod/eks/terragrunt.hcl": 'terraform {\n  source = "tfr:///terraform-aws-modules/eks/aws?version=21.3.0"\n}\n',
        "live/prod/karpenter/terragrunt.hcl": '''
            terraform {
              source = "tfr:///terraform-aws-modules/eks/aws//modules/karpenter?version=21.3.0"
            }
            dependency "eks" {
              config_path = "../eks"
            }
            inputs = {
              cluster_name = dependency.eks.outputs.cluster_name
            }
            ''',
        "live/prod/chart/terragrunt.hcl": '''
            terraform {
              source = "../../../modules//chart"
            }
            dependency "eks" {
              config_path = "../eks"
            }
            inputs = {
              karpenter_version = "1.3.3"
            }
            ''',
        "modules/chart/main.tf": '''
            resource "helm_release" "karpenter" {
              name       = "karpenter"
              repository = "oci://public.ecr.aws/karpenter"
              chart      = "karpenter"
              version    = var.karpenter_version
              values     = [yamlencode({ settings = { clusterName = "prod" } })]
            }
            variable "karpenter_version" {}
            ''',
    })
    plan = make_plan(root, to="latest")
    new = {c.path: c.new for c in plan.changes}
    assert "modules/karpenter?version=21.19.0" in new["live/prod/karpenter/terragrunt.hcl"]
    assert '"1.14.1"' in new["live/prod/chart/terragrunt.hcl"]           # not held: the module moves with it
    cmds = [c for r in plan.roots for s in r.steps for c in s.commands]
    assert "(cd live/prod/karpenter && terragrunt apply)" in cmds


def test_units_applying_a_folder_are_found_whatever_form_their_source_takes(tmp_path):
    """callers(every=True): a unit file that does not end a source with the folder's name is not evaluated (`terraform
    {` in every unit, a path through the folder); every form a source ending in it takes is still found."""
    from migrator.inventory.terragrunt import callers
    sources = {
        "plain": '"../../modules/eks"',
        "ref": '"../../modules/eks?ref=v1.2.0"',
        "slash": '"../../modules/eks/"',
        "interpolated": '"../../modules/eks${local.suffix}"',
        "local": "local.src",
    }
    files = {"modules/eks/main.tf": 'variable "x" {}\n', "modules/eks/nodes/main.tf": 'variable "y" {}\n',
             "modules/eks-extra/main.tf": 'variable "z" {}\n'}
    for name, src in sources.items():
        head = {"interpolated": 'locals {\n  suffix = ""\n}\n\n',
                "local": 'locals {\n  src = "../../modules/eks"\n}\n\n'}.get(name, "")
        files[f"live/{name}/terragrunt.hcl"] = f"{head}terraform {{\n  source = {src}\n}}\n"
    files["live/through/terragrunt.hcl"] = 'terraform {\n  source = "../../modules/eks/nodes"\n}\n'
    files["live/other/terragrunt.hcl"] = 'terraform {\n  source = "../../modules/eks-extra"\n}\n'
    root = _tree(tmp_path, files)
    repo = Repo(root)
    assert sorted(u.dir for u in callers(repo, "modules/eks", every=True)) == sorted(f"live/{n}" for n in sources)
    assert [u.dir for u in callers(repo, "modules/eks/nodes", every=True)] == ["live/through"]
    assert [u.dir for u in callers(repo, "modules/eks-extra", every=True)] == ["live/other"]
