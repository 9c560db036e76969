"""Karpenter objects passed to a chart in its values (migrator/inventory/valueobjects.py): found in every installer
shape with their lines, said when a hop must change them (MIG-SRC-025), and holding an Auto Mode cutover
(MIG-AUTO-059, rules/auto/unconverted.py)."""
from __future__ import annotations

import shutil
from pathlib import Path

from migrator.apply import apply_changes
from migrator.inventory.repo import Repo
from migrator.inventory import valueobjects
from migrator.plan import make_plan

from .conftest import FIXTURES

POOL = """apiVersion: karpenter.sh/{v}
kind: NodePool
metadata:
  name: spot
spec:
  template:
    spec:
      nodeClassRef:
        {ref}
        kind: EC2NodeClass
        name: default
"""
V1 = POOL.format(v="v1", ref="group: karpenter.k8s.aws")
BETA = POOL.format(v="v1beta1", ref="apiVersion: karpenter.k8s.aws/v1beta1")


def _indent(text: str, n: int) -> str:
    return "".join(" " * n + line if line.strip() else line for line in text.splitlines(True))


def _found(tmp_path: Path, files: dict[str, str]) -> list[tuple]:
    for p, text in files.items():
        (tmp_path / p).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / p).write_text(text)
    return [(o.path, o.line, o.kind, o.name, o.release, o.chart) for o in valueobjects.scan(Repo(tmp_path))]


def test_a_helm_release_heredoc_a_values_file_and_yamlencode(tmp_path):
    heredoc = ('resource "helm_release" "pools" {\n  name  = "pools"\n  chart = "raw"\n  values = [\n    <<-EOT\n'
               '    resources:\n      -\n' + _indent(BETA, 8) + '    EOT\n  ]\n}\n')
    assert _found(tmp_path, {"a/main.tf": heredoc}) == [("a/main.tf", 9, "NodePool", "spot", "helm_release.pools", "raw")]
    shutil.rmtree(tmp_path / "a")
    files = {"b/main.tf": 'resource "helm_release" "pools" {\n  chart  = "raw"\n'
                          '  values = [file("${path.module}/pools.yaml")]\n}\n',
             "b/pools.yaml": "resources:\n  -\n" + _indent(V1, 4)}
    assert _found(tmp_path, files) == [("b/pools.yaml", 4, "NodePool", "spot", "helm_release.pools", "raw")]
    shutil.rmtree(tmp_path / "b")
    encoded = ('resource "helm_release" "pools" {\n  chart = "raw"\n  values = [yamlencode({\n    resources = [{\n'
               '      apiVersion = "karpenter.sh/v1"\n      kind       = "NodePool"\n      metadata   = { name = "spot" }\n'
               '    }]\n  })]\n}\n')
    assert _found(tmp_path, {"c/main.tf": encoded}) == [("c/main.tf", 3, "NodePool", "spot", "helm_release.pools", "raw")]


def test_argo_cd_and_flux_values(tmp_path):
    app = ("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: pools\nspec:\n  source:\n"
           "    chart: raw\n    helm:\n      valuesObject:\n        resources:\n          -\n" + _indent(V1, 12))
    text_app = ("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: more\nspec:\n  source:\n"
                "    chart: raw\n    helm:\n      values: |\n        resources:\n          -\n" + _indent(V1, 12))
    flux = ("apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: pools\nspec:\n  chart:\n"
            "    spec:\n      chart: raw\n  values:\n    resources:\n      -\n" + _indent(V1, 8))
    got = _found(tmp_path, {"apps/pools.yaml": app, "apps/more.yaml": text_app, "flux/pools.yaml": flux})
    assert sorted(got) == [("apps/more.yaml", 13, "NodePool", "spot", "Application/more", "raw"),
                           ("apps/pools.yaml", 13, "NodePool", "spot", "Application/pools", "raw"),
                           ("flux/pools.yaml", 13, "NodePool", "spot", "HelmRelease/pools", "raw")]


def test_what_is_no_object_in_values(tmp_path):
    """A nodeClassRef names a kind and (v1beta1) an apiVersion, but has no metadata; the karpenter chart's own values
    hold settings, not objects."""
    files = {"main.tf": 'resource "helm_release" "karpenter" {\n  chart = "karpenter"\n  values = [\n    <<-EOT\n'
                        '    nodeClassRef:\n      apiVersion: karpenter.k8s.aws/v1beta1\n      kind: EC2NodeClass\n'
                        '      name: default\n    settings:\n      clusterName: shop\n    EOT\n  ]\n}\n'}
    assert _found(tmp_path, files) == []


def test_a_hop_says_them_and_auto_mode_holds_its_cutover(tmp_path):
    work = tmp_path / "tree"
    shutil.copytree(FIXTURES / "auto-mode-scripts" / "input", work)
    (work / "karpenter" / "nodepool.yaml").unlink()
    (work / "pools.tf").write_text(
        'resource "helm_release" "pools" {\n  name  = "pools"\n  chart = "raw"\n  values = [\n    <<-EOT\n'
        '    resources:\n      -\n' + _indent(V1, 8) + '    EOT\n  ]\n}\n')
    plan = make_plan(work, to="latest")
    assert not [f for f in plan.findings if f.code == "MIG-SRC-025"]        # v1 already: nothing to convert
    for _ in range(3):
        plan = make_plan(work, to="auto-mode")
        if not plan.changes:
            break
        apply_changes(work, plan.changes)
    (f,) = [f for f in plan.findings if f.code == "MIG-AUTO-059"]
    assert plan.phase == "cutover" and f.severity == "error" and (f.path, f.line) == ("pools.tf", 9)
    assert "module \"karpenter\"" in (work / "karpenter.tf").read_text()      # the controller stays


def test_what_never_exists_or_is_no_clusters_holds_nothing(tmp_path):
    """A raw release or a local_file switched off (count = 0) passes nothing; a script in an examples folder nothing
    applies is no cluster's: none of them holds the Auto Mode cutover (a false error stops a team's CI)."""
    from migrator.rules.auto import unconverted
    from types import SimpleNamespace
    root = 'provider "aws" {\n  region = "eu-west-1"\n}\n\n'        # a root module: Terraform runs here
    heredoc = ('resource "helm_release" "pools" {\n  count = 0\n  chart = "raw"\n  values = [\n    <<-EOT\n'
               '    resources:\n      -\n' + _indent(V1, 8) + '    EOT\n  ]\n}\n')
    assert _found(tmp_path, {"main.tf": root + heredoc}) == []
    (tmp_path / "main.tf").write_text(
        root + 'resource "local_file" "pools" {\n  count    = 0\n  content  = file("${path.module}/pools.yaml.tpl")\n'
        '  filename = "out.yaml"\n}\n')
    (tmp_path / "pools.yaml.tpl").write_text(V1)
    (tmp_path / "examples" / "spot").mkdir(parents=True)
    (tmp_path / "examples" / "spot" / "up.sh").write_text("kubectl apply -f - <<EOF\n" + V1 + "EOF\n")
    ctx = SimpleNamespace(repo=Repo(tmp_path), owns=lambda p: True, root=".")
    assert unconverted.objects(ctx) == []
    ctx.root = "examples/spot"                  # planned on its own, the example is the cluster
    assert [(o.path, o.kind) for o in unconverted.objects(ctx)] == [("examples/spot/up.sh", "NodePool")]


def test_objects_a_raw_chart_is_given_count_for_where_the_root_stands(tmp_path):
    """Chart 1.0 serves v1beta1 and v1; its only pools are v1beta1 objects in a raw chart's values. They decide where
    the root stands (v1beta1), so no plan moves the chart past 1.0 (1.1 drops v1beta1 and the raw release would no
    longer apply); they are said (MIG-SRC-025), counted in the objects column, and named in the state."""
    (tmp_path / "main.tf").write_text(
        'resource "helm_release" "karpenter" {\n  name    = "karpenter"\n  chart   = "karpenter"\n'
        '  repository = "oci://public.ecr.aws/karpenter"\n  version = "1.0.8"\n}\n\n'
        'resource "helm_release" "pools" {\n  name  = "pools"\n  chart = "raw"\n  values = [\n    <<-EOT\n'
        '    resources:\n      -\n' + _indent(BETA, 8) + '    EOT\n  ]\n}\n')
    plan = make_plan(tmp_path)
    (r,) = plan.roots
    assert r.era == "v1beta1" and r.hop_to == "v1" and "1 NodePool" in r.objects
    assert "passed to a chart in its values" in r.state
    assert [f.line for f in plan.findings if f.code == "MIG-SRC-025"] == [16]


def test_objects_a_local_file_renders_count_for_where_the_root_stands(tmp_path):
    """The same for v1beta1 pools in a template a local_file renders: the root stands on v1beta1 (not v1 from chart
    1.0); the template's NodePool is read as an object of its own (inventory/localfiles.py), converted, not said."""
    (tmp_path / "pools.yaml.tpl").write_text(BETA)
    (tmp_path / "main.tf").write_text(
        'resource "helm_release" "karpenter" {\n  name    = "karpenter"\n  chart   = "karpenter"\n'
        '  repository = "oci://public.ecr.aws/karpenter"\n  version = "1.0.8"\n}\n\n'
        'resource "local_file" "pools" {\n  content  = file("${path.module}/pools.yaml.tpl")\n'
        '  filename = "out/pools.yaml"\n}\n')
    plan = make_plan(tmp_path)
    (r,) = plan.roots
    assert r.era == "v1beta1" and "1 NodePool" in r.objects and "templates a local_file renders" not in r.state
    assert not [f for f in plan.findings if f.code == "MIG-SRC-010"]


def test_the_unwritten_pools_fixture_holds_at_the_cutover():
    """fixtures/auto-mode-unwritten-pools: after enable, nodepools and workloads, the cutover holds for the raw chart's
    and the shell heredoc's pools (the local_file template's has its twin); the old class and the controller are still
    there."""
    fx = FIXTURES / "auto-mode-unwritten-pools"
    final = fx / "expected-run-3"
    plan = make_plan(final, to="auto-mode")
    held = sorted((f.path, f.severity) for f in plan.findings if f.code == "MIG-AUTO-059")
    assert held == [("batch.tf", "error"), ("ops.sh", "error")]
    assert plan.phase == "cutover" and not plan.changes
    assert "kind: EC2NodeClass" in (final / "karpenter" / "nodepool.yaml").read_text()
    assert "module \"karpenter\"" in (final / "karpenter.tf").read_text()


AUTO = POOL.format(v="v1", ref="group: eks.amazonaws.com").replace("kind: EC2NodeClass", "kind: NodeClass")


def test_auto_mode_pools_written_where_migrator_does_not_write_are_auto_mode(tmp_path):
    """A NodePool naming an Auto Mode NodeClass in a raw chart's values, a shell heredoc or a local_file template is
    EKS Auto Mode's (AWS runs it), never a Karpenter v1 pool without a twin: it neither holds the cutover nor makes the
    root stand on Karpenter v1 (fixtures/auto-mode-twins-written-by-hand, auto-mode-already-on-templates)."""
    from migrator.inventory import shellobjects
    from migrator.inventory.documents import auto_mode_text
    from migrator.standing import auto_mode
    files = {
        "raw.tf": 'resource "helm_release" "pools" {\n  chart = "raw"\n  values = [\n    <<-EOT\n    resources:\n'
                  + _indent("- " + _indent(AUTO, 2).lstrip(), 4) + "    - " + _indent(V1, 6).lstrip()
                  + '    EOT\n  ]\n}\n',
        "ops.sh": "kubectl apply -f - <<YAML\n" + AUTO + "YAML\n",
    }
    for p, text in files.items():
        (tmp_path / p).write_text(text)
    repo = Repo(tmp_path)
    assert [(o.kind, o.name, auto_mode(o)) for o in valueobjects.scan(repo)] == \
        [("NodePool", "spot", True), ("NodePool", "spot", False)]
    assert [auto_mode(o) for o in shellobjects.scan(repo)] == [True]
    assert auto_mode_text("NodePool", "karpenter.sh/v1", AUTO.replace("group: eks.amazonaws.com", 'group: "eks.amazonaws.com"  # built in'))
    assert not auto_mode_text("NodePool", "karpenter.sh/v1", V1)
    assert auto_mode_text("NodeClass", "eks.amazonaws.com/v1", "")


def test_the_twins_written_by_hand_fixture_walks_to_the_end():
    """fixtures/auto-mode-twins-written-by-hand: the walk ends with the controller removed, nothing held."""
    fx = FIXTURES / "auto-mode-twins-written-by-hand"
    final = fx / "expected-run-5"
    plan = make_plan(final, to="auto-mode")
    assert not plan.changes and not [f for f in plan.findings if f.severity == "error"]
    assert "MIG-AUTO-059" not in (fx / "runbook-run-3.md").read_text()
    assert not (final / "karpenter" / "nodepool.yaml").exists()
    assert "module \"karpenter\"" not in (final / "karpenter.tf").read_text()
