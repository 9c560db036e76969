"""Releases of charts from outside the repository that render Karpenter's pools (inventory/poolreleases.py): said in
every plan (MIG-SRC-026), and moving to EKS Auto Mode they hold the cutover and keep the controller (MIG-AUTO-059):
migrator renders no remote chart, so it writes no twin for those pools."""
from __future__ import annotations

import shutil
import textwrap

from migrator.apply import apply_changes
from migrator.plan import make_plan

from .conftest import FIXTURES

FLUX = textwrap.dedent("""\
    apiVersion: source.toolkit.fluxcd.io/v1beta2
    kind: OCIRepository
    metadata:
      name: karpenter-aws-default-nodepool
      namespace: flux-system
    spec:
      url: oci://ghcr.io/example/charts
      ref:
        tag: 1.2.0
    ---
    apiVersion: helm.toolkit.fluxcd.io/v2
    kind: HelmRelease
    metadata:
      name: default-nodepool
      namespace: karpenter
    spec:
      chartRef:
        kind: OCIRepository
        name: karpenter-aws-default-nodepool
        namespace: flux-system
      values:
        clusterName: demo
    ---
    apiVersion: helm.toolkit.fluxcd.io/v2
    kind: HelmRelease
    metadata:
      name: karpenter
      namespace: karpenter
    spec:
      chart:
        spec:
          chart: karpenter
          version: 1.6.3
          sourceRef:
            kind: HelmRepository
            name: karpenter
      values:
        settings:
          clusterName: demo
    """)

ARGO = textwrap.dedent("""\
    apiVersion: argoproj.io/v1alpha1
    kind: Application
    metadata:
      name: pools
      namespace: argocd
    spec:
      project: default
      sources:
        - repoURL: ghcr.io/example/charts
          chart: karpenter-nodepools
          targetRevision: 0.4.1
          helm:
            valuesObject:
              pools: [general]
        - repoURL: https://github.com/example/infra.git
          path: charts/local-pools
      destination:
        server: https://kubernetes.default.svc
    """)


def test_flux_and_argocd_releases_of_remote_pool_charts_are_said(tmp_path):
    (tmp_path / "flux").mkdir()
    (tmp_path / "flux" / "karpenter.yaml").write_text(FLUX)
    (tmp_path / "argo").mkdir()
    (tmp_path / "argo" / "pools.yaml").write_text(ARGO)
    plan = make_plan(tmp_path, to="latest")
    said = sorted((f.path, f.line, f.severity) for f in plan.findings if f.code == "MIG-SRC-026")
    assert said == [("argo/pools.yaml", 1, "info"), ("flux/karpenter.yaml", 11, "info")]    # v1: nothing to move
    msgs = " ".join(f.message for f in plan.findings if f.code == "MIG-SRC-026")
    assert "HelmRelease/default-nodepool installs the chart karpenter-aws-default-nodepool (oci://ghcr.io/example/" \
           "charts, 1.2.0)" in msgs and "Application/pools installs the chart karpenter-nodepools" in msgs


def test_a_remote_pool_chart_holds_the_auto_mode_cutover_and_keeps_the_controller(tmp_path):
    """fixtures/auto-mode-pool-release: Auto Mode is turned on (the release said), then the cutover waits with an
    error every run: no twin is written for the pools the chart renders, so the controller is never removed."""
    work = tmp_path / "tree"
    shutil.copytree(FIXTURES / "auto-mode-pool-release" / "input", work)
    first = make_plan(work, to="auto-mode")
    assert first.roots[0].phase == "enable"
    assert [(f.code, f.severity) for f in first.findings if f.code.startswith(("MIG-SRC-026", "MIG-AUTO-059"))] == \
        [("MIG-SRC-026", "warning")]
    apply_changes(work, first.changes)
    for _ in range(2):
        plan = make_plan(work, to="auto-mode")
        held = [f for f in plan.findings if f.code == "MIG-AUTO-059"]
        assert held and held[0].severity == "error" and "karpenter-nodepool" in held[0].message
        assert not any(c.path == "main.tf" and 'resource "helm_release" "karpenter"' not in (c.new or "")
                       for c in plan.changes)
        apply_changes(work, plan.changes)
    assert 'resource "helm_release" "karpenter"' in (work / "main.tf").read_text()


def test_local_and_karpenter_charts_are_not_pool_releases(tmp_path):
    (tmp_path / "main.tf").write_text(textwrap.dedent("""\
        resource "helm_release" "karpenter" {
          name       = "karpenter"
          repository = "oci://public.ecr.aws/karpenter"
          chart      = "karpenter"
          version    = "1.6.3"
        }

        resource "helm_release" "pools" {
          name  = "karpenter-nodepools"
          chart = "./charts/karpenter-nodepools"
        }
        """))
    plan = make_plan(tmp_path, to="latest")
    assert not any(f.code == "MIG-SRC-026" for f in plan.findings)


def test_helmfile_releases_of_remote_pool_charts_are_said(tmp_path):
    (tmp_path / "helmfile.yaml").write_text(textwrap.dedent("""\
        repositories:
          - name: platform
            url: https://charts.example.com
        releases:
          - name: karpenter
            namespace: kube-system
            chart: oci://public.ecr.aws/karpenter/karpenter
            version: 1.6.3
          - name: pools
            namespace: kube-system
            chart: platform/karpenter-pools
            version: 2.1.0
          - name: local-pools
            chart: ./charts/karpenter-pools
        """))
    plan = make_plan(tmp_path, to="auto-mode")
    (f,) = [f for f in plan.findings if f.code == "MIG-SRC-026"]
    assert (f.path, f.line, f.severity) == ("helmfile.yaml", 9, "warning")
    assert "helmfile release pools installs the chart karpenter-pools (https://charts.example.com, 2.1.0)" in f.message


def test_a_pool_chart_given_auto_mode_pools_holds_nothing(tmp_path):
    """A release whose values (or the values file it names) set EKS Auto Mode's pools (`group: eks.amazonaws.com`,
    its label keys) renders Auto Mode's pools, not Karpenter's: not said, and the cutover does not wait for it. An
    IRSA annotation (`eks.amazonaws.com/role-arn`) is no such sign."""
    work = tmp_path / "tree"
    shutil.copytree(FIXTURES / "auto-mode-pool-release" / "input", work)
    main = work / "main.tf"
    text = main.read_text()
    main.write_text(text.replace("    ec2NodeClass:\n", "    nodeClassRef:\n      group: eks.amazonaws.com\n"
                                                      "    ec2NodeClass:\n"))
    plan = make_plan(work, to="auto-mode")
    assert not any(f.code in ("MIG-SRC-026", "MIG-AUTO-059") for f in plan.findings)
    (work / "pools.yaml").write_text("nodePool:\n  default:\n    requirements:\n"
                                     "      - key: eks.amazonaws.com/instance-category\n")
    main.write_text(text.replace('    <<-EOT\n    nodePool:', '    file("${path.module}/pools.yaml"),\n    <<-EOT\n    x:'))
    assert not any(f.code == "MIG-SRC-026" for f in make_plan(work, to="auto-mode").findings)
    main.write_text(text.replace("    nodePool:\n", "    serviceAccount:\n      annotations:\n        eks.amazonaws.com/"
                                                  "role-arn: arn:aws:iam::1:role/x\n    nodePool:\n"))
    assert any(f.code == "MIG-SRC-026" for f in make_plan(work, to="auto-mode").findings)
