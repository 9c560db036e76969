"""Issue 58 items 2-3: the CRD chart wherever the repository declares it, and runbook steps that do what they say
(a second umbrella chart for every CRD; umbrella charts Argo CD syncs)."""
from __future__ import annotations

from migrator.plan import make_plan

UMBRELLA = """apiVersion: v2
name: {name}
version: 1.0.0
dependencies:
  - name: {chart}
    version: {version}
    repository: oci://public.ecr.aws/karpenter
"""

APP = """apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: {name}
  namespace: argocd
spec:
  project: default
  source:
    repoURL: https://github.com/acme/platform.git
    targetRevision: main
    path: {path}
  destination:
    server: https://kubernetes.default.svc
    namespace: kube-system
"""


def _umbrellas(d, version="1.3.3"):
    for name, chart in (("karpenter", "karpenter"), ("crds", "karpenter-crd")):
        (d / "charts" / name).mkdir(parents=True)
        (d / "charts" / name / "Chart.yaml").write_text(UMBRELLA.format(name=name, chart=chart, version=version))
    (d / "charts" / "karpenter" / "values.yaml").write_text("karpenter:\n  settings:\n    clusterName: prod\n")


def _commands(plan, kind):
    return [c for s in plan.steps if s.kind == kind for c in s.commands]


def test_the_crd_step_upgrades_the_umbrella_that_carries_the_crd_chart(tmp_path):
    """karpenter in charts/karpenter, karpenter-crd in charts/crds (one chart of every CRD): both move, no advice to
    add a second karpenter-crd owner, and the CRD step upgrades charts/crds (before: the controller's umbrella)."""
    _umbrellas(tmp_path)
    plan = make_plan(tmp_path)
    assert {c.path for c in plan.changes} == {"charts/karpenter/Chart.yaml", "charts/crds/Chart.yaml"}
    assert not [f for f in plan.findings if f.code == "MIG-HELM-025"]
    crds = _commands(plan, "crds")
    assert "helm upgrade crds charts/crds --namespace \"${KARPENTER_NAMESPACE}\" --reuse-values" in crds
    assert not any("charts/karpenter" in c for c in crds)
    assert any("helm upgrade karpenter charts/karpenter" in c for c in _commands(plan, "chart"))


def test_umbrellas_argo_cd_syncs_are_synced_never_upgraded_with_helm(tmp_path):
    _umbrellas(tmp_path)
    (tmp_path / "apps").mkdir()
    (tmp_path / "apps" / "apps.yaml").write_text(APP.format(name="karpenter", path="charts/karpenter") + "---\n"
                                                 + APP.format(name="all-crds", path="charts/crds"))
    plan = make_plan(tmp_path)
    every = [c for s in plan.steps for c in s.commands]
    assert not any(c.startswith("helm upgrade") for c in every)
    assert "argocd app sync all-crds" in _commands(plan, "crds")
    assert "argocd app sync karpenter" in _commands(plan, "chart")


def test_iam_a_crossed_minor_adds_is_checked_on_a_role_outside_the_repository(tmp_path):
    """No controller policy and no karpenter module in the repository: a step checks the actions the crossed minors'
    official policies add (1.7: iam:ListInstanceProfiles) on the role the values name (issue 58 item 6)."""
    _umbrellas(tmp_path)
    (tmp_path / "charts" / "karpenter" / "values.yaml").write_text(
        "karpenter:\n  settings:\n    clusterName: prod\n  serviceAccount:\n    annotations:\n"
        "      eks.amazonaws.com/role-arn: arn:aws:iam::111122223333:role/karpenter-prod\n")
    plan = make_plan(tmp_path)
    (st,) = [s for s in plan.steps if s.id.endswith("iam-outside")]
    assert "iam:ListInstanceProfiles (1.7)" in st.title and "arc-zonal-shift:GetManagedResource (1.12)" in st.title
    assert "DescribeCapacityReservations" not in st.title           # the running minor's (1.3) policy has it
    assert any("--policy-source-arn arn:aws:iam::111122223333:role/karpenter-prod" in c for c in st.commands)
    # the controller's IAM from the karpenter module of the same root: the module's own check, no such step
    (tmp_path / "charts" / "karpenter" / "iam.tf").write_text(
        'module "karpenter" {\n  source  = "terraform-aws-modules/eks/aws//modules/karpenter"\n  version = "21.15.1"\n\n'
        '  cluster_name = "prod"\n}\n')
    plan = make_plan(tmp_path)
    assert not [s for s in plan.steps if s.id.endswith("iam-outside")]
