"""Argo CD + Kustomize setups (kustomize `helmCharts:` as a chart install, an Application syncing an overlay) and
charts rendered with `helm template` through the v1 and 1.x hops: what is planned, and that every runbook
command fits the setup."""
from __future__ import annotations

import shutil

from migrator.inventory import Repo, scan_charts
from migrator.inventory.kustomizations import deployers
from migrator.options import Options
from migrator.plan import make_plan
from migrator.render.markdown import render as render_markdown
from migrator.sources import yaml as yamlsrc

from .conftest import FIXTURES
from .test_handmade import _commands

AK = FIXTURES / "argocd-kustomize"
OPTS = Options(node_role="KarpenterNodeRole-prod")


def _tree(tmp_path, files: dict[str, str]):
    for p, t in files.items():
        f = tmp_path / p
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(t)
    return tmp_path


def test_kustomize_helm_chart_is_a_chart_install():
    repo = Repo(AK / "input")
    ci = next(c for c in scan_charts(repo) if c.chart == "karpenter")
    assert (ci.kind, ci.address, ci.path) == ("kustomize", "helmCharts/karpenter",
                                             "clusters/prod/karpenter/kustomization.yaml")
    kinds = sorted((v.kind, v.path) for v in ci.values)
    assert kinds == [("file", "clusters/prod/karpenter/values.yaml"),
                     ("kustomize", "clusters/prod/karpenter/kustomization.yaml")]


def test_argo_application_path_deploys_the_overlay_and_its_base():
    repo = Repo(AK / "input")
    assert deployers(repo, "base/karpenter/provisioner.yaml") == [("argocd", "karpenter-prod")]
    assert deployers(repo, "clusters/prod/karpenter/kustomization.yaml") == [("argocd", "karpenter-prod")]


def test_argocd_kustomize_runbook_only_syncs_the_application():
    cmds = _commands(render_markdown(make_plan(AK / "input", options=OPTS)))
    assert cmds
    assert not [c for c in cmds if c.startswith(("helm ", "terraform", "flux ", "kustomize build", "aws "))]
    assert not [c for c in cmds if c.startswith("kubectl apply")], "Argo CD applies these files"
    assert cmds.count("argocd app sync karpenter-prod") >= 3       # CRDs, controller, new objects
    assert not [c for c in cmds if "app.kubernetes.io/managed-by=Helm" in c]   # no Helm adoption of CRDs


def test_kustomize_crd_entry_and_values(tmp_path):
    root = tmp_path / "t"
    shutil.copytree(AK / "input", root)
    plan = make_plan(root, options=OPTS)
    new = next(c.new for c in plan.changes if c.path == "clusters/prod/karpenter/kustomization.yaml")
    obj = yamlsrc.load(new)
    charts = obj["helmCharts"]
    assert [c["name"] for c in charts] == ["karpenter-crd", "karpenter"]          # CRDs first
    assert charts[0]["version"] == charts[1]["version"] == "v0.32.10"
    assert charts[0]["repo"] == charts[1]["repo"] and charts[0]["namespace"] == "karpenter"
    assert charts[1]["valuesInline"]["settings"] == {"clusterName": "prod", "interruptionQueue": "prod"}
    assert "# SQS queue from the karpenter module" in new                           # comments kept


def test_include_crds_needs_no_crd_entry(tmp_path):
    root = _tree(tmp_path, {"k/kustomization.yaml": "helmCharts:\n- name: karpenter\n  repo: oci://public.ecr.aws/karpenter\n"
                                                   "  version: 0.37.0\n  includeCRDs: true\n",
                            "k/nodepool.yaml": "apiVersion: karpenter.sh/v1beta1\nkind: NodePool\nmetadata:\n"
                                               "  name: a\nspec:\n  template:\n    spec:\n      nodeClassRef:\n"
                                               "        name: a\n"})
    plan = make_plan(root, to="v1", phase="patch-upgrade")
    new = next(c.new for c in plan.changes if c.path == "k/kustomization.yaml")
    assert "karpenter-crd" not in new and "version: 0.37.8" in new
    cmds = _commands(render_markdown(make_plan(root, to="v1")))
    # no Argo CD here: the overlay is built with helm enabled and applied
    assert "kustomize build --enable-helm k | kubectl apply --server-side -f -" in cmds
    assert not [c for c in cmds if c.startswith("kubectl apply") and "-k" in c.split()]   # -k cannot render helmCharts
    assert not [c for c in cmds if c.startswith(("helm ", "argocd ", "terraform"))]


def test_new_base_files_are_applied_through_their_overlays():
    cmds = _commands(render_markdown(make_plan(FIXTURES / "kustomize-overlays" / "input")))
    assert "kubectl apply -k karpenter/overlays/prod" in cmds and "kubectl apply -k karpenter/overlays/dev" in cmds
    assert not [c for c in cmds if c.startswith("kubectl apply") and "base/" in c]


def test_rendered_chart_through_the_v1_hop():
    fx = FIXTURES / "v1-rendered" / "input"
    plan = make_plan(fx)
    assert plan.phase == "patch-upgrade"
    rnd = [f for f in plan.findings if f.code == "MIG-RND-001"]
    assert rnd and "--version 0.37.8" in rnd[0].manual_step
    cmds = _commands(render_markdown(plan))
    assert not [c for c in cmds if c.startswith(("helm upgrade", "helm install", "terraform", "flux ", "argocd "))]
    ctl = [c for c in cmds if c.startswith("helm template karpenter oci://") and "--version 1.0.14" in c]
    assert ctl and "assumeRoleDuration" not in ctl[0] and "featureGates.drift" not in ctl[0]
    assert "--set settings.featureGates.spotToSpotConsolidation=true" in ctl[0]     # read from FEATURE_GATES
    assert any(c.startswith("kubectl delete validatingwebhookconfiguration validation.webhook.karpenter.sh") for c in cmds)
    assert cmds.index("kubectl apply --server-side -f karpenter/karpenter-crd.yaml") < \
        cmds.index("kubectl apply -f karpenter/karpenter.yaml")


def test_a_rerender_holds_its_phase(tmp_path):
    root = tmp_path / "t"
    shutil.copytree(FIXTURES / "v1-rendered" / "input", root)
    first = make_plan(root)
    from migrator.apply import apply_changes
    apply_changes(first.root, first.changes)
    again = make_plan(root)            # the policy is done, the chart is still 0.37.0: still patch-upgrade
    assert again.phase == "patch-upgrade" and not again.changes
    assert any(f.code == "MIG-RND-001" for f in again.findings)
    f = root / "karpenter" / "karpenter.yaml"
    f.write_text(f.read_text().replace("karpenter-0.37.0", "karpenter-0.37.8"))
    assert make_plan(root).phase == "controller"
    f.write_text(f.read_text().replace("karpenter-0.37.8", "karpenter-1.0.14"))
    assert make_plan(root).phase == "manifests"


def test_rendered_chart_through_the_onward_hop(tmp_path):
    root = _tree(tmp_path, {"k.yaml": """apiVersion: apps/v1
kind: Deployment
metadata:
  name: karpenter
  namespace: kube-system
  labels:
    helm.sh/chart: karpenter-1.0.14
spec:
  template:
    spec:
      containers:
        - name: controller
          env:
            - name: FEATURE_GATES
              value: "SpotToSpotConsolidation=false"
"""})
    plan = make_plan(root, to="1.6")
    held = [f for f in plan.findings if f.code == "MIG-V1X-HELM-001"]
    # 1.5's chart refuses to render without settings.clusterName, which the file does not state
    assert held and held[0].path == "k.yaml"
    rnd = next(f for f in plan.findings if f.code == "MIG-RND-001")
    assert "--version 1.4." in rnd.manual_step
    cmds = _commands(render_markdown(plan))
    assert not [c for c in cmds if c.startswith(("helm upgrade", "helm install", "terraform", "argocd "))]


def _app(name: str, chart: bool, path: str = "") -> str:
    src = ("    repoURL: public.ecr.aws/karpenter\n    chart: karpenter\n    targetRevision: v0.31.1\n"
           "    helm:\n      valuesObject:\n        settings:\n          aws:\n            clusterName: x\n") if chart \
        else f"    repoURL: https://github.com/example/infra.git\n    targetRevision: main\n    path: {path}\n"
    return (f"apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: {name}\n  namespace: argocd\n"
            f"spec:\n  project: default\n  source:\n{src}  destination:\n    server: https://kubernetes.default.svc\n"
            "    namespace: karpenter\n")


def test_an_application_ties_the_folder_it_syncs_to_its_cluster(tmp_path):
    files = {}
    for c in ("dev", "prod"):
        files[f"apps/{c}/karpenter.yaml"] = _app(f"karpenter-{c}", True) + "---\n" + \
            _app(f"nodes-{c}", False, f"clusters/{c}/nodes")
        files[f"clusters/{c}/nodes/provisioner.yaml"] = (
            "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata:\n  name: default\nspec:\n"
            "  providerRef:\n    name: default\n")
    root = _tree(tmp_path, files)
    plan = make_plan(root, options=Options(node_role="r"))
    # two clusters, each its chart Application and the folder its other Application syncs; not four
    assert sorted(r.path for r in plan.roots) == ["apps/dev", "apps/prod"]
    assert {r.objects for r in plan.roots} == {"1 Provisioner"}
    cmds = _commands(render_markdown(plan))
    assert "argocd app sync nodes-dev" in cmds and "argocd app sync nodes-prod" in cmds
    assert not [c for c in cmds if c.startswith("kubectl apply")]
