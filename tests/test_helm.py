"""Helm capability: values in every shape, version at its definition, CRD release, what cannot be edited."""
from __future__ import annotations

import pytest

from migrator.inventory import Repo, scan_charts, values_of
from migrator.options import Options
from migrator.plan import make_plan
from migrator.rules.v1beta1.helm import format_version, parse_version

from .conftest import FIXTURE_NAMES, FIXTURES


def _settings_aws(root):
    repo = Repo(root)
    return [v for v in values_of(scan_charts(repo)) if v.key.startswith("settings.aws.")]


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_no_settings_aws_key_survives_cleanup(name):
    left = _settings_aws(FIXTURES / name / "expected-cleanup")
    assert left == [], [f"{v.path}:{v.line} {v.key}" for v in left]


def test_alpha_dependencies_survive_prepare():
    """defaultInstanceProfile stays while alpha AWSNodeTemplates without instanceProfile still use it."""
    for name in ("terraform-eks", "gitops-flux"):
        keys = {v.key for v in _settings_aws(FIXTURES / name / "expected")}
        assert keys == {"settings.aws.defaultInstanceProfile"}, name
    # the only alpha template of helm-set-blocks has its own instanceProfile: nothing keeps the key
    keys = {v.key for v in _settings_aws(FIXTURES / "helm-set-blocks" / "expected")}
    assert "settings.aws.defaultInstanceProfile" not in keys
    assert "settings.aws.enablePodENI" in keys          # alpha-only setting, removed in cleanup


def test_escaped_set_names_are_kept_exactly():
    text = (FIXTURES / "helm-set-blocks" / "expected-cleanup" / "karpenter.tf").read_text()
    assert 'name  = "serviceAccount.annotations.eks\\\\.amazonaws\\\\.com/role-arn"' in text
    assert 'name  = "settings.clusterName"' in text and "settings.aws" not in text


def test_dynamic_set_is_reported_with_file_line_and_keys():
    plan = make_plan(FIXTURES / "helm-set-blocks" / "input")
    (f,) = [f for f in plan.findings if f.code == "MIG-HELM-001"]
    assert (f.path, f.line) == ("karpenter.tf", 46)
    assert "settings.aws.clusterName" in f.manual_step


def test_version_is_edited_where_defined():
    plan = make_plan(FIXTURES / "terraform-eks" / "input")
    tfvars = next(c for c in plan.changes if c.path == "dev.tfvars")
    assert '-  karpenter                    = "v0.30.0"' in tfvars.diff
    assert '+  karpenter                    = "v0.32.10"' in tfvars.diff
    assert any(f.code == "MIG-HELM-009" for f in plan.findings), "pre-v0.31 source gets the pass-through step"
    assert any(s.id.endswith("chart-pass-through") for s in plan.steps)


def test_version_outside_repository_is_a_finding(tmp_path):
    (tmp_path / "main.tf").write_text(
        'resource "helm_release" "karpenter" {\n  chart   = "karpenter"\n  version = var.karpenter_version\n}\n'
        'variable "karpenter_version" {\n  type = string\n}\n')
    plan = make_plan(tmp_path)          # which chart runs is not known: nothing moves it (never from a guess)
    (f,) = [f for f in plan.findings if f.code == "MIG-STAND-003"]
    assert f.severity == "warning" and "helm_release.karpenter (main.tf:1)" in f.message and not plan.changes
    from migrator.options import Options
    plan = make_plan(tmp_path, options=Options(chart_version="0.31.2"))      # stated: planned, and said where
    (f,) = [f for f in plan.findings if f.code == "MIG-HELM-006"]
    assert (f.path, f.line, f.severity) == ("main.tf", 3, "error")


def test_several_tfvars_are_each_edited(tmp_path):
    (tmp_path / "main.tf").write_text(
        'resource "helm_release" "karpenter" {\n  chart   = "karpenter"\n  version = var.v\n}\n')
    (tmp_path / "dev.tfvars").write_text('v = "v0.31.0"\n')
    (tmp_path / "prod.tfvars").write_text('v = "0.31.2"\n')
    plan = make_plan(tmp_path)
    diffs = {c.path: c.diff for c in plan.changes}
    assert '+v = "v0.32.10"' in diffs["dev.tfvars"] and '+v = "0.32.10"' in diffs["prod.tfvars"]
    assert any(f.code == "MIG-HELM-007" for f in plan.findings)


@pytest.mark.parametrize("target,current,want", [("0.32.10", "v0.31.0", "v0.32.10"), ("0.32.10", "0.31.0", "0.32.10"),
                                                 ("0.37.0", "v0.33.0", "0.37.0"), ("1.0.14", "v0.37.0", "1.0.14")])
def test_version_prefix_follows_user_below_0_35(target, current, want):
    assert format_version(target, current) == want
    assert parse_version(want) == parse_version(target)


def test_flux_values_from_is_reported(tmp_path):
    (tmp_path / "hr.yaml").write_text(
        "apiVersion: helm.toolkit.fluxcd.io/v2beta1\nkind: HelmRelease\nmetadata:\n  name: karpenter\nspec:\n"
        "  chart:\n    spec:\n      chart: karpenter\n      version: v0.32.10\n"
        "  valuesFrom:\n    - kind: ConfigMap\n      name: karpenter-values\n")
    plan = make_plan(tmp_path, to="v1beta1")
    (f,) = [f for f in plan.findings if f.code == "MIG-HELM-001"]
    assert (f.path, f.line) == ("hr.yaml", 10) and "settings.aws.clusterName" in f.manual_step


def test_affinity_in_yamlencode_is_reported(tmp_path):
    (tmp_path / "main.tf").write_text(
        'resource "helm_release" "karpenter" {\n  chart   = "karpenter"\n  version = "v0.32.10"\n'
        '  values = [yamlencode({\n    affinity = {\n      nodeAffinity = {\n'
        '        requiredDuringSchedulingIgnoredDuringExecution = {\n          nodeSelectorTerms = [{\n'
        '            matchExpressions = [{ key = "karpenter.sh/provisioner-name", operator = "DoesNotExist" }]\n'
        '          }]\n        }\n      }\n    }\n  })]\n}\n')
    plan = make_plan(tmp_path)
    (f,) = [f for f in plan.findings if f.code == "MIG-HELM-004"]
    assert (f.path, f.line) == ("main.tf", 5)


def test_flux_crd_release_needs_an_interval_to_copy(tmp_path):
    (tmp_path / "hr.yaml").write_text(
        "apiVersion: helm.toolkit.fluxcd.io/v2beta1\nkind: HelmRelease\nmetadata:\n  name: karpenter\nspec:\n"
        "  chart:\n    spec:\n      chart: karpenter\n      version: v0.31.0\n")
    plan = make_plan(tmp_path)
    assert any(f.code == "MIG-HELM-015" for f in plan.findings)
    assert [c.path for c in plan.changes] == ["hr.yaml"]      # version bumped, no invented release file


def test_added_crd_release_takes_the_planned_version_and_repository(tmp_path):
    """A literal old version/repository is never copied into the new karpenter-crd release (issue 9)."""
    (tmp_path / "main.tf").write_text(
        'resource "helm_release" "karpenter" {\n  name       = "karpenter"\n'
        '  repository = "https://charts.karpenter.sh"\n  chart      = "karpenter"\n  version    = "v0.31.1"\n}\n'
        'resource "kubectl_manifest" "p" {\n  yaml_body = <<-YAML\n    apiVersion: karpenter.sh/v1alpha5\n'
        '    kind: Provisioner\n    metadata:\n      name: default\n    spec:\n      providerRef:\n'
        '        name: default\n  YAML\n}\n')
    plan = make_plan(tmp_path, phase="prepare", options=Options(node_role="r"))
    (c,) = [c for c in plan.changes if c.path == "main.tf"]
    crd = c.new[c.new.index('resource "helm_release" "karpenter_crd"'):]
    crd = crd[:crd.index("}\n")]
    assert 'version    = "v0.32.10"' in crd and "oci://public.ecr.aws/karpenter" in crd
    assert "charts.karpenter.sh" not in crd and "v0.31.1" not in crd
    assert not [f for f in plan.findings if f.code == "MIG-EDIT-004"]


def test_added_crd_release_keeps_the_main_releases_switch_and_comment(tmp_path):
    """`count = var.install_karpenter ? 1 : 0` on the chart: the CRD release is switched with it (CRDs without the
    controller are not installed; a crd release that always exists would also tell the evaluator the chart's file
    is read, and the chart's own absence then moves the root); the chart's comment stays above the chart."""
    (tmp_path / "main.tf").write_text(
        'variable "install_karpenter" {\n  default = true\n}\n\n# the controller\n'
        'resource "helm_release" "karpenter" {\n  count      = var.install_karpenter ? 1 : 0\n  name       = "karpenter"\n'
        '  repository = "oci://public.ecr.aws/karpenter"\n  chart      = "karpenter"\n  version    = "0.37.0"\n}\n')
    plan = make_plan(tmp_path, to="v1")
    (c,) = [c for c in plan.changes if c.path == "main.tf"]
    crd = c.new[c.new.index('resource "helm_release" "karpenter_crd"'):]
    assert crd.startswith('resource "helm_release" "karpenter_crd" {\n  count = var.install_karpenter ? 1 : 0\n\n'
                          '  name       = "karpenter-crd"\n')
    assert '}\n\n# the controller\nresource "helm_release" "karpenter" {' in c.new


def test_values_written_through_concat_are_read_and_an_empty_extra_list_is_nothing(tmp_path):
    """`values = concat([yamlencode({...})], var.extra_values)`: the literal items are read and rewritten; a variable
    the files leave empty adds nothing (no MIG-HELM-001), one they set to an expression is said."""
    release = ('provider "helm" {{}}\n\nvariable "extra_values" {{\n  default = {default}\n}}\n\n'
               'resource "helm_release" "karpenter" {{\n'
               '  name       = "karpenter"\n  repository = "oci://public.ecr.aws/karpenter"\n  chart      = "karpenter"\n'
               '  version    = "1.0.14"\n  values = concat([\n    yamlencode({{\n      settings = {{\n'
               '        clusterName = "demo"\n        featureGates = {{\n          drift = true\n        }}\n'
               '      }}\n    }})\n  ], var.extra_values)\n}}\n')
    (tmp_path / "main.tf").write_text(release.format(default="[]"))
    (ci,) = scan_charts(Repo(tmp_path))
    assert [v.kind for v in ci.values if v.kind != "set"] == ["yamlencode"]
    assert {(v.key, v.value) for v in values_of([ci])} >= {("settings.clusterName", "demo")}
    (tmp_path / "main.tf").write_text(release.format(default="[file(\"extra.yaml\")]"))
    (ci,) = scan_charts(Repo(tmp_path))
    assert [v.kind for v in ci.values if v.kind != "set"] == ["yamlencode", "other"]
    # a library module (no provider, nobody here calls it): its empty default says nothing of what callers pass
    (tmp_path / "main.tf").write_text(release.format(default="[]").replace('provider "helm" {}\n\n', ""))
    (ci,) = scan_charts(Repo(tmp_path))
    assert [v.kind for v in ci.values if v.kind != "set"] == ["yamlencode", "other"]


def test_second_pass_refuses_a_rule_that_does_not_converge(tree, monkeypatch):
    from migrator.edits import TextEdit
    from migrator.rules import v1
    from migrator.rules.v1beta1.workloads import WorkloadsResult

    def again_and_again(ctx, phase, done):
        text = ctx.repo.text("karpenter/batch.yaml")
        return WorkloadsResult(edits=[TextEdit("karpenter/batch.yaml", len(text), len(text), "# more\n", "x")])
    monkeypatch.setitem(v1.RULES, "v1/workloads", (v1.workloads, again_and_again))
    root = tree("v1-workloads")
    plan = make_plan(root, to="v1", phase="manifests")
    assert "karpenter/batch.yaml" not in [c.path for c in plan.changes]
    assert any(f.code == "MIG-EDIT-004" and f.path == "karpenter/batch.yaml" for f in plan.findings)


def test_each_cluster_root_edits_only_its_own_tfvars(tmp_path):
    """Issue 10: with several roots, a chart version in var.x resolves within its own root module only."""
    for c in ("dev", "prod"):
        d = tmp_path / "clusters" / c
        (d / "envs").mkdir(parents=True)
        (d / "main.tf").write_text(
            'variable "versions" {\n  type = map(string)\n}\n'
            'resource "helm_release" "karpenter" {\n  name    = "karpenter"\n  chart   = "karpenter"\n'
            '  version = var.versions.karpenter\n}\n'
            'resource "kubectl_manifest" "p" {\n  yaml_body = <<-YAML\n    apiVersion: karpenter.sh/v1alpha5\n'
            f'    kind: Provisioner\n    metadata:\n      name: {c}\n    spec:\n      providerRef:\n'
            '        name: default\n  YAML\n}\n')
        (d / "envs" / f"{c}.tfvars").write_text('versions = {\n  karpenter = "v0.31.1"\n}\n')
    plan = make_plan(tmp_path, phase="prepare", options=Options(node_role="r"))
    assert not [f for f in plan.findings if f.code == "MIG-EDIT-003"]
    paths = {c.path for c in plan.changes}
    assert {"clusters/dev/envs/dev.tfvars", "clusters/prod/envs/prod.tfvars"} <= paths
    for c in plan.changes:
        if c.path.endswith(".tfvars"):
            assert c.new.count("v0.32.10") == 1


def test_argocd_applications_are_chart_installs(tree):
    """Argo CD: targetRevision, valuesObject, a values string and parameters edited in place; a karpenter-crd
    Application added one sync wave earlier, never pruning; the runbook syncs with argocd, never helm."""
    from migrator.render.markdown import render as render_md
    root = tree("argocd")
    plan = make_plan(root, phase="prepare", options=Options(node_role="KarpenterNodeRole-prod"))
    new = {c.path: c.new for c in plan.changes}
    app = new["apps/karpenter.yaml"]
    assert "targetRevision: v0.32.10" in app and "targetRevision: 0.32.10" in app
    assert "- name: settings.clusterName" in app and "interruptionQueue: prod" in app
    assert "clusterName: staging   # the staging cluster" in app          # inside the values string, comment kept
    crd = new["apps/karpenter-crd.yaml"]
    assert 'argocd.argoproj.io/sync-wave: "0"' in crd and "chart: karpenter-crd" in crd and "prune: false" in crd
    md = render_md(plan)
    assert "argocd app sync karpenter-crd" in md and "helm upgrade" not in md and "terraform apply" not in md


def test_shared_module_version_follows_each_caller_and_terraform_runs_in_the_roots(tree):
    """Issue 10: a module shared by several roots is planned once; its var.chart_version is what each caller
    passes (followed into that root's tfvars), and Terraform commands run in the calling roots."""
    from migrator.render.markdown import render as render_md
    root = tree("monorepo-shared-module")
    plan = make_plan(root, phase="prepare", options=Options(node_role="KarpenterNodeRole"))
    assert not [f for f in plan.findings if f.severity == "error"]
    new = {c.path: c.new for c in plan.changes}
    assert new["clusters/dev/envs/dev.tfvars"] == 'karpenter_version = "v0.32.10"\n'
    assert new["clusters/prod/envs/prod.tfvars"] == 'karpenter_version = "v0.32.10"\n'
    md = render_md(plan)
    assert "terraform -chdir=clusters/prod apply -target=module.karpenter_stack.helm_release.karpenter" in md
    assert "-chdir=modules/" not in md


def test_a_conflict_between_roots_names_them():
    """Issue 10: two cluster roots editing one span of a shared file differently are named in MIG-EDIT-003."""
    import pytest as _pytest

    from migrator.edits import EditConflict, TextEdit, apply_edits
    with _pytest.raises(EditConflict, match="cluster roots 'clusters/dev' and 'clusters/prod'"):
        apply_edits("version = 1\n", [TextEdit("m.tf", 10, 11, "2", "v1beta1/helm", root="clusters/dev"),
                                      TextEdit("m.tf", 10, 11, "3", "v1beta1/helm", root="clusters/prod")])


DYNAMIC = '''resource "helm_release" "karpenter" {{
  chart   = "karpenter"
  version = "v0.31.4"

  dynamic "set" {{
    for_each = {for_each}
    content {{
      name  = {name}
      value = {value}
    }}
  }}
}}
{extra}'''


@pytest.mark.parametrize("for_each, name, value, extra", [
    ("local.sets", "set.value.name", "set.value.value",
     'locals {\n  sets = [\n    { name = "settings.aws.clusterName", value = "c" },\n  ]\n}\n'),
    ("var.sets", "s.value[\"name\"]", "s.value[\"value\"]",
     'variable "sets" {\n  default = [\n    { name = "settings.aws.clusterName", value = "c" },\n  ]\n}\n'),
    ('{ "settings.aws.clusterName" = "c" }', "set.key", "set.value", ""),
])
def test_dynamic_set_over_a_static_list_or_map_is_read_and_rewritten_in_place(tmp_path, for_each, name, value, extra):
    text = DYNAMIC.format(for_each=for_each, name=name, value=value, extra=extra)
    if name.startswith("s."):
        text = text.replace('  dynamic "set" {\n', '  dynamic "set" {\n    iterator = s\n')
    (tmp_path / "main.tf").write_text(text)
    plan = make_plan(tmp_path, phase="prepare")
    assert "MIG-HELM-001" not in {f.code for f in plan.findings}
    assert any(v.key == "settings.aws.clusterName" for v in values_of(scan_charts(Repo(tmp_path))))
    (c,) = plan.changes
    assert '"settings.clusterName"' in c.new and "settings.aws.clusterName" not in c.new


def test_dynamic_set_over_a_variable_without_default_is_still_reported(tmp_path):
    (tmp_path / "main.tf").write_text(DYNAMIC.format(for_each="var.sets", name="set.key", value="set.value",
                                                     extra='variable "sets" {\n  default = {}\n}\n'))
    plan = make_plan(tmp_path, phase="prepare")
    assert "MIG-HELM-001" in {f.code for f in plan.findings}


@pytest.mark.parametrize("version", ['try(var.karpenter.chart_version, "0.37.0")', 'coalesce(var.kv, "0.37.0")',
                                     'var.kv != null ? var.kv : "0.37.0"', 'var.kv == null ? "0.37.0" : var.kv'])
@pytest.mark.parametrize("tfvars", [False, True])
def test_a_version_with_a_literal_default_follows_the_variable_where_set_else_edits_the_default(tmp_path, version,
                                                                                                tfvars):
    (tmp_path / "main.tf").write_text(
        'variable "kv" {\n  default = null\n}\n\nvariable "karpenter" {\n  default = {}\n}\n\n'
        f'resource "helm_release" "karpenter" {{\n  chart   = "karpenter"\n  version = {version}\n}}\n')
    if tfvars:
        (tmp_path / "prod.tfvars").write_text('kv        = "0.37.2"\nkarpenter = { chart_version = "0.37.2" }\n')
    plan = make_plan(tmp_path, to="v1", phase="patch-upgrade")
    assert "MIG-HELM-006" not in {f.code for f in plan.findings}
    changed = {c.path: c.new for c in plan.changes}
    if tfvars:
        assert '"0.37.8"' in changed["prod.tfvars"] and '"0.37.0"' in changed.get("main.tf", '"0.37.0"')
    else:
        assert version.replace('"0.37.0"', '"0.37.8"') in changed["main.tf"]


def test_removing_one_entry_of_a_one_line_map_keeps_its_neighbours(tmp_path):
    """cleanup removes settings.aws.defaultInstanceProfile from a dynamic "set" map written on one line: only that
    entry goes, the file still parses and the other entry is renamed."""
    (tmp_path / "main.tf").write_text(DYNAMIC.format(
        for_each='{ "settings.aws.defaultInstanceProfile" = "p", "settings.aws.clusterName" = "c" }',
        name="set.key", value="set.value", extra=""))
    plan = make_plan(tmp_path, phase="cleanup")
    (c,) = plan.changes
    assert 'for_each = { "settings.clusterName" = "c" }' in c.new


def test_keys_no_1x_chart_reads_are_renamed_on_a_root_already_on_1x(tmp_path):
    """wallafidevops/eks-adm-full: chart 1.5 with `set { name = "settings.interruptionQueueName" }`, a key no chart
    since v0.32 reads (interruption handling silently off); and settings.aws.clusterName, which left the 1.5 chart's
    required settings.clusterName unset (held at 1.4). The onward hop renames both wherever they are."""
    (tmp_path / "main.tf").write_text(
        'resource "helm_release" "karpenter" {\n  name       = "karpenter"\n  namespace  = "kube-system"\n'
        '  repository = "oci://public.ecr.aws/karpenter"\n  chart      = "karpenter"\n  version    = "1.4.0"\n\n'
        '  values = [\n    <<-EOT\n    settings:\n      aws:\n        clusterName: demo\n    EOT\n  ]\n\n'
        '  set {\n    name  = "settings.interruptionQueueName"\n    value = "demo-karpenter"\n  }\n}\n')
    plan = make_plan(tmp_path, to="latest")
    (change,) = [c for c in plan.changes if c.path == "main.tf"]
    assert 'name  = "settings.interruptionQueue"\n' in change.new and "interruptionQueueName" not in change.new
    assert "settings:\n      clusterName: demo\n" in change.new and "aws:" not in change.new
    assert not [f for f in plan.findings if f.code in ("MIG-V1X-HELM-001", "MIG-V1X-HELM-003")]
    said = [f.message for f in plan.findings if f.code == "MIG-HELM-003" and "interruptionQueue" in f.message]
    assert said and "interruption handling stays off" in said[0]


UMBRELLA = """apiVersion: v2
name: karpenter
version: 2.4.0
dependencies:
  - name: karpenter
    alias: upstream
    version: "1.8.1"
    repository: "oci://public.ecr.aws/karpenter"
  - name: karpenter-crd
    alias: upstream-crd
    version: "1.8.1"
    repository: "oci://public.ecr.aws/karpenter"
"""


def test_an_umbrella_charts_installer_may_set_what_its_values_file_leaves_out(tmp_path):
    """A published umbrella chart of Karpenter's charts (giantswarm/karpenter-app): its values.yaml sets no
    settings.clusterName, which whoever installs it passes (a catalog, an Application). Before, the chart it pins was
    said not to install (MIG-V1X-HELM-005, an error); the installer's values are now said unread (MIG-HELM-001)."""
    d = tmp_path / "helm" / "karpenter"
    d.mkdir(parents=True)
    (d / "Chart.yaml").write_text(UMBRELLA)
    (d / "values.yaml").write_text("upstream:\n  nameOverride: karpenter\n  replicas: 2\n")
    plan = make_plan(tmp_path)
    assert not plan.has_errors, [f for f in plan.findings if f.severity == "error"]
    said = [f for f in plan.findings if f.code == "MIG-HELM-001"]
    assert said and "installer" in said[0].message and said[0].path == "helm/karpenter/Chart.yaml"
    assert all("karpenter-crd" not in f.message or f.manual_step for f in said)


def test_a_crd_dependency_named_with_the_resource_prefix_is_not_added_again(tmp_path):
    """`depends_on = [resource.helm_release.karpenter_crd]` already names the CRD release (BojanKomazec/demo-terraform):
    no second `helm_release.karpenter_crd` is appended to it."""
    (tmp_path / "main.tf").write_text(
        'resource "helm_release" "karpenter_crd" {\n  name       = "karpenter-crd"\n  chart      = "karpenter-crd"\n'
        '  repository = "oci://public.ecr.aws/karpenter"\n  version    = "1.0.6"\n}\n\n'
        'resource "helm_release" "karpenter" {\n  name       = "karpenter"\n  chart      = "karpenter"\n'
        '  repository = "oci://public.ecr.aws/karpenter"\n  version    = "1.0.6"\n\n'
        '  depends_on = [resource.helm_release.karpenter_crd]\n}\n')
    plan = make_plan(tmp_path)
    (c,) = [c for c in plan.changes if c.path == "main.tf"]
    assert "depends_on = [resource.helm_release.karpenter_crd]\n" in c.new
    assert not [f for f in plan.findings if f.code == "MIG-HELM-012"]


def test_a_crd_dependency_on_one_instance_is_not_added_again(tmp_path):
    """`depends_on = [helm_release.karpenter_crd[0]]` (both releases under one `count`, radiant-maxar/terraform-eks)
    already names the CRD release: no `helm_release.karpenter_crd` is appended beside it."""
    (tmp_path / "main.tf").write_text(
        'variable "on" {\n  default = true\n}\n\n'
        'resource "helm_release" "karpenter_crd" {\n  count      = var.on ? 1 : 0\n  name       = "karpenter-crd"\n'
        '  chart      = "karpenter-crd"\n  repository = "oci://public.ecr.aws/karpenter"\n  version    = "1.0.6"\n}\n\n'
        'resource "helm_release" "karpenter" {\n  count      = var.on ? 1 : 0\n  name       = "karpenter"\n'
        '  chart      = "karpenter"\n  repository = "oci://public.ecr.aws/karpenter"\n  version    = "1.0.6"\n\n'
        '  depends_on = [\n    helm_release.karpenter_crd[0]\n  ]\n}\n')
    plan = make_plan(tmp_path)
    (c,) = [c for c in plan.changes if c.path == "main.tf"]
    assert "  depends_on = [\n    helm_release.karpenter_crd[0]\n  ]\n" in c.new
    assert not [f for f in plan.findings if f.code == "MIG-HELM-012"]
