"""Staged rollouts: every cluster root planned at its own step (fixtures/fleet-staged and small repositories)."""
from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from migrator import knowledge
from migrator.apply import apply_changes
from migrator.cli import app
from migrator.plan import UsageError, make_plan
from migrator.render.markdown import render as render_markdown
from migrator.roots import Fleet, rollout_key, tier_of

from .conftest import FIXTURES, fixture_walk, read_tree
from .test_golden import _assert_same_tree

FLEET = FIXTURES / "fleet-staged"
NEWEST = knowledge.load("minors")["newest"]
DEV, STAGE, PROD = "clusters/dev-eu", "clusters/stage-eu", "clusters/prod-eu"


@pytest.fixture
def fleet(tmp_path):
    root = tmp_path / "tree"                   # the name the golden runbooks were made under
    shutil.copytree(FLEET / "input", root)
    return root


def _json(args):
    r = CliRunner().invoke(app, args)
    return r.exit_code, json.loads(r.stdout)


def _others_named(plan) -> list[tuple[str, str, str]]:
    """(root, finding code, other root) for every finding of a root that names another root's file or folder."""
    paths = [r.path for r in plan.roots]
    out = []
    for r in plan.roots:
        for f in r.findings:
            if f.code == "MIG-ROOT-001":        # names the roots that hold a shared file back, by design
                continue
            text = " ".join((f.path, f.message, f.manual_step))
            out += [(r.path, f.code, o) for o in paths if o != r.path and o + "/" in text]
    return out


def test_first_plan_puts_each_root_at_its_own_step():
    plan = make_plan(FLEET / "input", to="latest")
    got = {r.path: (r.era, r.chart, r.hop_from, r.hop_to, r.phase) for r in plan.roots}
    assert got == {PROD: ("v1alpha5", "0.31.4", "v1alpha5", "v1beta1", "prepare"),
                   DEV: ("v1beta1", "0.36.2", "v1beta1", "v1", "patch-upgrade"),
                   STAGE: ("v1", "1.0.8", "v1", NEWEST, "upgrade")}
    assert [r.path for r in plan.roots] == [DEV, STAGE, PROD]         # the rollout order
    assert not plan.has_errors and plan.hop is None and plan.phase == ""
    assert not any(f.code == "MIG-MOD-002" for f in plan.findings)


def test_walk_to_the_end_matches_the_expected_trees_and_runbooks(fleet):
    """apply --to latest --write again and again (no --phase) until plan --detailed-exitcode returns 0: every tree and
    runbook on the way is the golden one, no error finding appears, and every root ends on v1 and the newest chart."""
    walk = fixture_walk("fleet-staged")
    held = set()
    for run in range(1, walk["runs"] + 1):
        plan = make_plan(fleet, to=walk["to"])
        assert not plan.has_errors, [f for f in plan.findings if f.severity == "error"]
        assert plan.changes, f"run {run} has nothing to write"
        assert _others_named(plan) == []
        held |= {(r.path, p) for r in plan.roots for p in r.held}
        apply_changes(plan.root, plan.changes)
        _assert_same_tree(read_tree(fleet), read_tree(FLEET / f"expected-run-{run}"))
        got = render_markdown(make_plan(fleet, to=walk["to"]))
        assert got == (FLEET / f"runbook-run-{run}.md").read_text(), f"runbook-run-{run}.md is stale"
    end = make_plan(fleet, to=walk["to"])
    assert end.changes == [] and not end.has_errors
    assert {(r.era, r.chart) for r in end.roots} == {("v1", NEWEST)}
    assert held == {(DEV, "modules/karpenter-chart/main.tf")}       # the shared module waited for prod-eu
    code = CliRunner().invoke(app, ["plan", str(fleet), "--to", "latest", "--detailed-exitcode"]).exit_code
    assert code == 0


def test_shared_module_moves_with_the_earliest_root(fleet):
    apply_changes(fleet, make_plan(fleet, to="latest").changes)
    plan = make_plan(fleet, to="latest")
    dev = next(r for r in plan.roots if r.path == DEV)
    assert dev.phase == "controller" and dev.held == ["modules/karpenter-chart/main.tf"]
    (f,) = [f for f in plan.findings if f.code == "MIG-ROOT-001"]
    assert f.severity == "warning" and f.path == "modules/karpenter-chart/main.tf"
    assert PROD in f.message and "v1alpha5 -> v1beta1, phase cleanup" in f.message
    assert "modules/karpenter-chart/main.tf" not in {c.path for c in plan.changes}
    # the same file, once the earliest root is there, moves for both in one edit
    for _ in range(2):
        apply_changes(fleet, make_plan(fleet, to="latest").changes)
    plan = make_plan(fleet, to="latest")
    assert {r.path: r.phase for r in plan.roots}[PROD] == "controller"
    (c,) = [c for c in plan.changes if c.path == "modules/karpenter-chart/main.tf"]
    assert "settings.featureGates.drift" in c.old and "settings.featureGates.drift" not in c.new
    assert {r.path for r in plan.roots if c.path in r.changes} == {DEV, PROD}


def test_root_selects_exactly_one_roots_changes():
    code, d = _json(["plan", str(FLEET / "input"), "--to", "latest", "--root", DEV, "--format", "json"])
    assert code == 0 and [r["path"] for r in d["roots"]] == [DEV]
    assert {c["path"] for c in d["changes"]} == {f"{DEV}/main.tf", f"{DEV}/iam.tf"}
    assert all(s["root"] == DEV for s in d["steps"])
    assert d["hop"] == {"from": "v1beta1", "to": "v1"} and d["phase"] == "patch-upgrade"   # one root: shared
    assert all(not f["path"] or f["path"].startswith(DEV) for f in d["findings"])
    whole = make_plan(FLEET / "input", to="latest")
    one = next(r for r in whole.roots if r.path == DEV)
    assert sorted(one.changes) == sorted(c["path"] for c in d["changes"])


def test_a_path_that_is_no_root_is_a_usage_error():
    with pytest.raises(UsageError, match="clusters/dev-eu, clusters/stage-eu, clusters/prod-eu"):
        make_plan(FLEET / "input", only=["clusters"])
    r = CliRunner().invoke(app, ["plan", str(FLEET / "input"), "--root", "modules/karpenter-chart"])
    assert r.exit_code == 1 and "not a cluster root" in r.stderr
    assert make_plan(FLEET / "input", only=["./clusters/prod-eu/"]).roots[0].path == PROD


def test_phase_applies_to_the_roots_whose_hop_has_it():
    plan = make_plan(FLEET / "input", to="latest", phase="patch-upgrade")
    assert {r.path: r.phase for r in plan.roots} == {DEV: "patch-upgrade", STAGE: "", PROD: ""}
    assert {p for r in plan.roots for p in r.changes} == {f"{DEV}/main.tf", f"{DEV}/iam.tf"}
    with pytest.raises(UsageError, match="no cluster root stands in a hop with that phase"):
        make_plan(FLEET / "input", to="latest", phase="nonsense")


def test_json_schema_2_roots():
    code, d = _json(["plan", str(FLEET / "input"), "--to", "latest", "--format", "json"])
    assert code == 0 and d["schema"] == 2
    assert "hop" not in d and "phase" not in d          # the roots stand at different steps
    r = {x["path"]: x for x in d["roots"]}
    assert set(r[DEV]) >= {"path", "objects", "era", "chart", "state", "hop", "phase", "next", "later", "changes",
                           "held", "steps", "findings", "tier"}
    assert r[PROD]["hop"] == {"from": "v1alpha5", "to": "v1beta1"} and r[PROD]["tier"] == "production"
    assert r[PROD]["next"].startswith("phase cleanup; v1beta1 → v1")
    ids = {s["id"] for s in d["steps"]}
    assert all(set(x["steps"]) <= ids for x in d["roots"])
    assert all(c["roots"] for c in d["changes"])
    for fmt in ("sarif", "github", "gitlab", "markdown"):
        assert CliRunner().invoke(app, ["plan", str(FLEET / "input"), "--format", fmt]).exit_code == 0


def test_text_output_starts_with_the_status_table():
    r = CliRunner().invoke(app, ["plan", str(FLEET / "input"), "--to", "latest"], env={"COLUMNS": "200"})
    head = r.stdout.split("Summary")[0]
    assert "3 cluster roots at 3 different steps" in head and "Cluster roots" in head
    for path, now in ((DEV, "v1beta1 -> v1, phase patch-upgrade"), (PROD, "v1alpha5 -> v1beta1, phase prepare")):
        assert path in head and now in head


def test_runbook_has_one_section_per_root_in_rollout_order():
    doc = render_markdown(make_plan(FLEET / "input", to="latest"))
    heads = [ln for ln in doc.splitlines() if ln.startswith("## Cluster root")]
    assert heads == [f"## Cluster root `{DEV}` (development)", f"## Cluster root `{STAGE}` (staging)",
                     f"## Cluster root `{PROD}` (production)"]
    assert "development first, then staging" in doc
    dev = doc.split(heads[0])[1].split(heads[1])[0]
    assert "terraform -chdir=clusters/dev-eu" in dev and "clusters/prod-eu" not in dev
    r = CliRunner().invoke(app, ["runbook", str(FLEET / "input"), "--to", "latest", "--root", PROD])
    assert r.exit_code == 0 and "## Cluster root" not in r.stdout and "v1alpha5 → v1beta1" in r.stdout


def test_saved_plan_records_each_root_and_refuses_a_moved_one(fleet, tmp_path):
    out = tmp_path / "plan.json"
    assert CliRunner().invoke(app, ["plan", str(fleet), "--to", "latest", "--out", str(out)]).exit_code == 0
    doc = json.loads(out.read_text())
    assert doc["version"] == 2 and {r["path"]: r["phase"] for r in doc["roots"]} == \
        {DEV: "patch-upgrade", STAGE: "upgrade", PROD: "prepare"}
    r = CliRunner().invoke(app, ["apply", str(out)])
    assert r.exit_code == 0 and f"{PROD}: v1alpha5 -> v1beta1, phase prepare" in r.stdout
    doc["migrator"] = "0.0.0-other"
    out.write_text(json.dumps(doc))
    r = CliRunner().invoke(app, ["apply", str(out), "--write"])
    assert r.exit_code == 1 and "run migrator plan again" in r.stderr


MODULE = '''module "karpenter" {{
  source  = "terraform-aws-modules/eks/aws//modules/karpenter"
  version = "{version}"

  cluster_name = "{name}"
}}

resource "helm_release" "karpenter" {{
  namespace  = "karpenter"
  name       = "karpenter"
  repository = "oci://public.ecr.aws/karpenter"
  chart      = "karpenter"
  version    = "{chart}"
}}
'''
NODEPOOL = '''apiVersion: karpenter.sh/{api}
kind: NodePool
metadata:
  name: default
spec:
  template:
    spec:
      nodeClassRef:
        name: default
      requirements:
        - key: karpenter.sh/capacity-type
          operator: In
          values: ["on-demand"]
'''
PROVISIONER = '''apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata:
  name: default
spec:
  providerRef:
    name: default
'''


def test_one_clusters_provisioners_never_blame_anothers_module(tmp_path):
    """The issue's example: a v20 module in a v1beta1 root is fine although another root still has Provisioners."""
    for name, version, chart, obj in (("prod-eu", "19.21.0", "v0.31.4", PROVISIONER),
                                      ("dev-eu", "20.24.0", "0.36.2", NODEPOOL.format(api="v1beta1"))):
        d = tmp_path / "clusters" / name
        d.mkdir(parents=True)
        (d / "main.tf").write_text(MODULE.format(version=version, name=name, chart=chart))
        (d / "nodepool.yaml").write_text(obj)
    plan = make_plan(tmp_path, to="latest", options=None)
    assert not any(f.code == "MIG-MOD-002" for f in plan.findings)
    assert {r.path: r.era for r in plan.roots} == {"clusters/prod-eu": "v1alpha5", "clusters/dev-eu": "v1beta1"}
    assert _others_named(plan) == []


def test_a_v1_root_is_not_held_by_stale_v1beta1_text_elsewhere(tmp_path):
    (tmp_path / "live").mkdir()
    (tmp_path / "live" / "main.tf").write_text(MODULE.format(version="20.37.2", name="live", chart="1.9.2")
                                               .replace('  cluster_name = "live"\n',
                                                        '  cluster_name = "live"\n\n  enable_v1_permissions = true\n'))
    (tmp_path / "live" / "nodepool.yaml").write_text(NODEPOOL.format(api="v1").replace(
        "        name: default", "        group: karpenter.k8s.aws\n        kind: EC2NodeClass\n        name: default"))
    (tmp_path / "other").mkdir()                # a second cluster: the repository holds several
    (tmp_path / "other" / "main.tf").write_text(MODULE.format(version="20.24.0", name="other", chart="0.37.8"))
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "old-nodepool.yaml").write_text(NODEPOOL.format(api="v1beta1"))
    plan = make_plan(tmp_path, to="latest")
    live = next(r for r in plan.roots if r.path == "live")
    assert (live.era, live.hop_from, live.phase) == ("v1", "v1", "upgrade")
    assert next(r for r in plan.roots if r.path == "docs").hop_from == "v1beta1"


@pytest.mark.parametrize("path,tier", [("envs/dev", "development"), ("clusters/non-prod", "development"),
                                       ("clusters/pre-prod", "staging"), ("clusters/stage-eu", "staging"),
                                       ("clusters/blue", "other"), ("envs/production/eu", "production"),
                                       ("clusters/prod-eu", "production")])
def test_rollout_tiers(path, tier):
    assert tier_of(path)[1] == tier


def test_rollout_order_is_development_to_production():
    roots = ["envs/prod", "envs/blue", "envs/staging", "envs/dev"]
    assert sorted(roots, key=rollout_key) == ["envs/dev", "envs/staging", "envs/blue", "envs/prod"]


def test_kustomize_base_belongs_to_every_overlay():
    from migrator.inventory import Repo, scan_charts, scan_manifests
    repo = Repo(FIXTURES / "kustomize-overlays" / "input")
    fleet = Fleet(repo, scan_manifests(repo), scan_charts(repo))
    assert fleet.paths == ["karpenter/overlays/dev", "karpenter/overlays/prod"]
    assert fleet.users("karpenter/base/provisioner.yaml") == ("karpenter/overlays/dev", "karpenter/overlays/prod")
    assert fleet.users("karpenter/overlays/prod/kustomization.yaml") == ("karpenter/overlays/prod",)


CLASS = '''apiVersion: karpenter.k8s.aws/{api}
kind: EC2NodeClass
metadata:
  name: default
spec:
  role: r
'''


def test_folders_of_objects_meet_only_where_no_other_cluster_stands(tmp_path):
    """vettom/aws-eks-terraform after its cutover to Auto Mode: an Auto Mode NodePool naming its NodeClass
    `default` was taken for a pool of another folder's EC2NodeClass `default`, the two folders met at the
    repository's top, and every other cluster of the repository was swallowed into one root planned as v1beta1."""
    auto = NODEPOOL.format(api="v1").replace("        name: default",
                                            "        group: eks.amazonaws.com\n        kind: NodeClass\n"
                                            "        name: default")
    for d, text in (("auto-app", auto), ("old-app", CLASS.format(api="v1beta1") + "---\n" + NODEPOOL.format(
            api="v1beta1").replace("name: default\nspec", "name: old\nspec", 1)), ("third", NODEPOOL.format(api="v1"))):
        (tmp_path / d).mkdir()
        (tmp_path / d / "objects.yaml").write_text(text)
    plan = make_plan(tmp_path, to="latest")
    assert sorted(r.path for r in plan.roots) == ["auto-app", "old-app", "third"]
    # a pool naming a class kept only in a sibling folder still meets it, where no other cluster stands
    (tmp_path / "pools" / "a").mkdir(parents=True)
    (tmp_path / "pools" / "b").mkdir()
    (tmp_path / "pools" / "a" / "pool.yaml").write_text(NODEPOOL.format(api="v1beta1").replace(
        "        name: default", "        name: shared"))
    (tmp_path / "pools" / "b" / "class.yaml").write_text(CLASS.format(api="v1beta1").replace(
        "name: default", "name: shared"))
    plan = make_plan(tmp_path, to="latest")
    assert sorted(r.path for r in plan.roots) == ["auto-app", "old-app", "pools", "third"]


# -- a tutorial monorepo (antonputra/tutorials: lessons/<n>/ each one cluster, terraform/ beside k8s/) --------------

LESSONS = {
    # another lesson's cluster: Terraform outside every root, as near to every lesson's root as to any
    "lessons/006/main.tf": 'module "eks" {\n  source          = "terraform-aws-modules/eks/aws"\n'
                           '  version         = "18.29.0"\n  cluster_name    = "other"\n'
                           '  cluster_version = "1.27"\n}\n',
    "lessons/089/terraform/nodes.tf": 'resource "aws_iam_role" "nodes" {\n  name = "eks-node-group-nodes"\n}\n',
    # an eksctl cluster with Cluster Autoscaler's manifest in a folder below it
    "lessons/070/eks.yaml": "apiVersion: eksctl.io/v1alpha5\nkind: ClusterConfig\nmetadata:\n  name: demo\n"
                            "  region: us-east-1\n  version: \"1.31\"\nmanagedNodeGroups:\n  - name: general\n"
                            "    instanceType: t3.small\n    minSize: 1\n    maxSize: 5\n",
    "lessons/070/k8s/0-cluster-autoscaler.yaml": (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: cluster-autoscaler\n  namespace: kube-system\n"
        "spec:\n  replicas: 1\n  template:\n    spec:\n      containers:\n"
        "        - image: registry.k8s.io/autoscaling/cluster-autoscaler:v1.31.0\n          name: cluster-autoscaler\n"
        "          command:\n            - ./cluster-autoscaler\n            - --cloud-provider=aws\n"
        "            - --node-group-auto-discovery=asg:tag=k8s.io/cluster-autoscaler/enabled,"
        "k8s.io/cluster-autoscaler/demo\n"),
    # Karpenter v0.13 from terraform/, its Provisioner in k8s/: one cluster
    "lessons/114/terraform/eks.tf": 'provider "aws" {\n  region = "us-east-1"\n}\n\n'
                                    'resource "aws_eks_cluster" "cluster" {\n  name     = "demo"\n'
                                    '  role_arn = "arn:aws:iam::111122223333:role/eks"\n}\n\n'
                                    'resource "aws_iam_role" "nodes" {\n  name = "eks-node-group"\n}\n\n'
                                    'resource "aws_iam_instance_profile" "karpenter" {\n'
                                    '  name = "KarpenterNodeInstanceProfile"\n  role = aws_iam_role.nodes.name\n}\n',
    "lessons/114/terraform/karpenter.tf": 'resource "helm_release" "karpenter" {\n  name       = "karpenter"\n'
                                          '  repository = "https://charts.karpenter.sh"\n  chart      = "karpenter"\n'
                                          '  version    = "v0.13.1"\n\n  set {\n    name  = "clusterName"\n'
                                          '    value = aws_eks_cluster.cluster.id\n  }\n\n  set {\n'
                                          '    name  = "aws.defaultInstanceProfile"\n'
                                          '    value = aws_iam_instance_profile.karpenter.name\n  }\n}\n\n'
                                          'resource "aws_iam_policy" "karpenter_controller" {\n'
                                          '  policy = file("./controller-policy.json")\n  name   = "KarpenterController"\n}\n',
    "lessons/114/terraform/controller-policy.json": json.dumps({"Version": "2012-10-17", "Statement": [
        {"Sid": "Karpenter", "Effect": "Allow", "Resource": "*",
         "Action": ["ec2:CreateFleet", "ec2:RunInstances", "ec2:CreateLaunchTemplate", "ec2:CreateTags",
                    "iam:PassRole", "ssm:GetParameter", "ec2:DescribeInstances", "ec2:DescribeSubnets",
                    "ec2:DescribeSecurityGroups", "ec2:DescribeLaunchTemplates", "ec2:DescribeInstanceTypes",
                    "ec2:DescribeInstanceTypeOfferings", "ec2:DescribeAvailabilityZones",
                    "ec2:DeleteLaunchTemplate", "pricing:GetProducts"]},
        {"Sid": "ConditionalEC2Termination", "Effect": "Allow", "Resource": "*", "Action": "ec2:TerminateInstances",
         "Condition": {"StringLike": {"ec2:ResourceTag/Name": "*karpenter*"}}}]}, indent=4) + "\n",
    "lessons/114/k8s/provisioner.yaml": "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata:\n"
                                        "  name: default\nspec:\n  providerRef:\n    name: my-provider\n---\n"
                                        "apiVersion: karpenter.k8s.aws/v1alpha1\nkind: AWSNodeTemplate\nmetadata:\n"
                                        "  name: my-provider\nspec:\n  subnetSelector:\n"
                                        "    karpenter.sh/discovery: demo\n  securityGroupSelector:\n"
                                        "    karpenter.sh/discovery: demo\n",
}


def _tree(tmp_path, files):
    for p, text in files.items():
        (tmp_path / p).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / p).write_text(text)
    return tmp_path


def test_a_terraform_folder_beside_an_objects_folder_is_one_cluster(tmp_path):
    """lessons/114/terraform installs the chart and lessons/114/k8s keeps its Provisioner: one root where they meet,
    so the EC2NodeClass takes the node role the chart's instance profile names in its own module (not a role of the
    same address in another lesson), and the JSON policy the cluster name the chart is given (no false stop)."""
    plan = make_plan(_tree(tmp_path, LESSONS), to="latest")
    assert "lessons/114" in [r.path for r in plan.roots]
    assert "lessons/114/k8s" not in [r.path for r in plan.roots]
    (rp,) = [r for r in plan.roots if r.path == "lessons/114"]
    assert not [f for f in rp.findings if f.severity == "error"], [f.message for f in rp.findings]
    nc = next(c.new for c in plan.changes if c.path == "lessons/114/k8s/nodepool.yaml")
    assert "role: eks-node-group\n" in nc
    said = [f.message for f in rp.findings if f.code == "MIG-IAM-009"]
    assert any("cluster name for the scoped statements is demo" in m for m in said)


def test_a_loose_terraform_folder_as_near_to_several_roots_is_none_of_theirs(tmp_path):
    """lessons/006 (another lesson's cluster) is neither lessons/070's nor lessons/114's: the eksctl lesson is planned
    from its own ClusterConfig, rooted there, and no finding of it names lessons/006."""
    plan = make_plan(_tree(tmp_path, LESSONS), to="latest")
    (rp,) = [r for r in plan.roots if r.path.startswith("lessons/070")]
    assert rp.path == "lessons/070" and rp.phase == "install"
    assert "lessons/070/karpenter-nodepools.yaml" in [c.path for c in plan.changes]
    assert not [f for f in rp.findings if "lessons/006" in f.message or f.path.startswith("lessons/006")]


FLUX_SYNC = '''apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: flux-system
  namespace: flux-system
spec:
  interval: 10m0s
  path: ./k8s/{env}/
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
'''


def test_folders_a_flux_path_applies_whole_are_one_cluster_with_the_bases_other_clusters_build(tmp_path):
    """spack/spack-infrastructure: production's Flux applies all of k8s/production (no kustomization.yaml there), whose
    NodePool folders staging's kustomization builds but one (notary). Before, that one folder was a cluster root of
    its own and production's other NodePools staging's only; now production's folders are one root, and the folders
    staging builds are both clusters'."""
    from migrator.inventory import Repo, scan_charts, scan_manifests
    files = {
        "k8s/production/flux-system/gotk-sync.yaml": FLUX_SYNC.format(env="production"),
        "k8s/staging/flux-system/gotk-sync.yaml": FLUX_SYNC.format(env="staging"),
        "k8s/production/karpenter/pools/base/pool.yaml": NODEPOOL.format(api="v1"),
        "k8s/production/karpenter/pools/runners/pool.yaml": NODEPOOL.format(api="v1").replace(
            "name: default\nspec", "name: runners\nspec", 1),
        "k8s/production/karpenter/pools/notary/pool.yaml": NODEPOOL.format(api="v1").replace(
            "name: default\nspec", "name: notary\nspec", 1),
        "k8s/staging/karpenter/kustomization.yaml": "resources:\n- ../../production/karpenter/pools/base/pool.yaml\n"
                                                    "- ../../production/karpenter/pools/runners/pool.yaml\n",
    }
    for p, text in files.items():
        (tmp_path / p).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / p).write_text(text)
    repo = Repo(tmp_path)
    fleet = Fleet(repo, scan_manifests(repo), scan_charts(repo))
    assert fleet.paths == ["k8s/production/karpenter/pools", "k8s/staging/karpenter"]
    assert fleet.users("k8s/production/karpenter/pools/base/pool.yaml") == \
        ("k8s/staging/karpenter", "k8s/production/karpenter/pools")
    assert fleet.users("k8s/production/karpenter/pools/notary/pool.yaml") == ("k8s/production/karpenter/pools",)
    # with a kustomization.yaml at the path, Flux applies what it lists: the folders are not taken whole
    (tmp_path / "k8s/production/kustomization.yaml").write_text("resources:\n- karpenter/pools/notary/pool.yaml\n")
    repo = Repo(tmp_path)
    assert "k8s/production/karpenter/pools" not in Fleet(repo, scan_manifests(repo), scan_charts(repo)).paths


def test_folders_a_flux_paths_kustomization_builds_are_one_cluster(tmp_path):
    """A Flux Kustomization's path whose kustomization.yaml lists Cluster Autoscaler's folder and Karpenter's
    (Fola-Git/eks-karpenter-demo, a move done by hand halfway): one cluster, one root where they meet - they were two
    roots, Cluster Autoscaler's told no cluster (MIG-CAS-002). With Karpenter at the target and no NodePool taking a
    node group over, Cluster Autoscaler left beside it is said (MIG-CAS-065)."""
    import shutil
    from migrator.plan import make_plan
    src = FIXTURES / "cas-flux" / "input" / "clusters" / "analytics" / "cluster-autoscaler.yaml"
    (tmp_path / "platform" / "cluster-autoscaler").mkdir(parents=True)
    shutil.copy(src, tmp_path / "platform" / "cluster-autoscaler" / "release.yaml")
    (tmp_path / "platform" / "cluster-autoscaler" / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - release.yaml\n")
    (tmp_path / "platform" / "karpenter").mkdir()
    (tmp_path / "platform" / "karpenter" / "release.yaml").write_text(
        "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: karpenter\n"
        "  namespace: kube-system\nspec:\n  chart:\n    spec:\n      chart: karpenter\n      version: 1.14.1\n"
        "      sourceRef:\n        kind: HelmRepository\n        name: karpenter\n  values:\n    settings:\n"
        "      clusterName: analytics\n")
    (tmp_path / "platform" / "karpenter" / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - release.yaml\n")
    (tmp_path / "platform" / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - cluster-autoscaler\n"
        "  - karpenter\n")
    (tmp_path / "clusters").mkdir()
    (tmp_path / "clusters" / "platform.yaml").write_text(
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: platform\n"
        "  namespace: flux-system\nspec:\n  path: ./platform\n  sourceRef:\n    kind: GitRepository\n"
        "    name: flux-system\n")
    plan = make_plan(tmp_path, to="latest")
    assert [r.path for r in plan.roots] == ["platform"]
    assert not [f for f in plan.findings if f.code == "MIG-CAS-002"]
    assert [f.code for f in plan.findings if f.code == "MIG-CAS-065"] == ["MIG-CAS-065"]


EKS = 'module "eks" {\n  source  = "terraform-aws-modules/eks/aws"\n  version = "21.10.1"\n\n  name = "%s"\n}\n'
CRD = ('resource "helm_release" "karpenter_crd" {\n  name       = "karpenter-crd"\n'
       '  repository = "oci://public.ecr.aws/karpenter"\n  chart      = "karpenter-crd"\n  version    = "1.8.3"\n}\n')
AUTO_POOL = ('resource "kubectl_manifest" "pool" {\n  yaml_body = <<-YAML\n    apiVersion: karpenter.sh/v1\n'
             '    kind: NodePool\n    metadata:\n      name: default-auto\n    spec:\n      template:\n        spec:\n'
             '          nodeClassRef:\n            group: eks.amazonaws.com\n            kind: NodeClass\n'
             '            name: default\n          requirements:\n            - key: kubernetes.io/arch\n'
             '              operator: Exists\n  YAML\n}\n')


def test_clusters_of_their_own_stay_apart_when_one_install_is_left(tmp_path):
    """HaeDalWang/eks-terraform-examples: six Terraform root modules, each its own eks cluster. Moving to Auto Mode,
    five lose their karpenter chart (their CRD release and Auto Mode pools stay) and one keeps Karpenter for a pool
    with user data. With one chart install left, the five folders were merged with it into one root `.`, whose
    cutover deleted the pool that must stay (its name matched another cluster's twin). A folder that declares its own
    cluster stays its own root when the install's folder declares another; a folder of objects without a cluster of
    its own still joins the install (the cluster and Karpenter split over two folders)."""
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "eks.tf").write_text(EKS % d + "\n" + CRD + "\n" + AUTO_POOL)
    (tmp_path / "b" / "karpenter.tf").write_text(CRD.replace("karpenter_crd", "karpenter").replace(
        '"karpenter-crd"', '"karpenter"'))
    plan = make_plan(tmp_path, to="auto-mode")
    assert sorted(r.path for r in plan.roots) == ["a", "b"]
    (tmp_path / "b" / "eks.tf").write_text(CRD + "\n" + AUTO_POOL)            # b: Karpenter for a's cluster
    plan = make_plan(tmp_path, to="auto-mode")
    assert [r.path for r in plan.roots] == ["."]


def test_a_folder_of_pools_inside_another_clusters_folder_stays_apart_when_one_install_is_left(tmp_path):
    """aws-ia/terraform-aws-eks-blueprints walked to Auto Mode: once only patterns/bottlerocket installs Karpenter (its
    pools cannot move), the Auto Mode pools that patterns/eks-automode/automode-custom-nodepools applies from a folder
    of YAML (its own cluster's) joined the install, and every pattern became one root `patterns` declaring 33 clusters
    (an error, a stop). A folder of objects inside a folder that declares another cluster stays its own root."""
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "eks.tf").write_text(EKS % d + "\n" + CRD + "\n" + AUTO_POOL)
    (tmp_path / "b" / "karpenter.tf").write_text(CRD.replace("karpenter_crd", "karpenter").replace(
        '"karpenter-crd"', '"karpenter"'))
    (tmp_path / "c" / "pools").mkdir(parents=True)
    (tmp_path / "c" / "eks.tf").write_text(EKS % "c")
    (tmp_path / "c" / "pools" / "pool.yaml").write_text(
        "\n".join(line[4:] for line in AUTO_POOL.splitlines()[2:-2]) + "\n")
    plan = make_plan(tmp_path, to="auto-mode")
    assert sorted(r.path for r in plan.roots) == ["a", "b", "c/pools"]
    (tmp_path / "c" / "eks.tf").unlink()        # no cluster of its own there: its pools join the install's cluster
    plan = make_plan(tmp_path, to="auto-mode")
    assert [r.path for r in plan.roots] == ["."]


def test_a_for_each_provisioners_names_come_from_its_own_roots_tfvars(tmp_path):
    """Provisioners made by `for_each = var.karpenter_provisioner` are named by the keys of the root's own tfvars:
    another root's keys (a `batch` pool of clusters/b) are never in clusters/a's roll and delete commands (they were,
    when every tfvars of the repository naming the variable was read)."""
    for name in ("a", "b"):
        shutil.copytree(FIXTURES / "terraform-eks" / "input", tmp_path / "clusters" / name)
    tfvars = tmp_path / "clusters" / "b" / "dev.tfvars"
    tfvars.write_text(tfvars.read_text().replace("\n  default = {", "\n  batch = {"))
    plan = make_plan(tmp_path)
    deleted = {r.path: sorted(c.split()[-1] for s in r.steps for c in s.commands
                              if c.startswith("kubectl delete provisioner ")) for r in plan.roots}
    assert deleted == {"clusters/a": ["default"], "clusters/b": ["batch"]}


def test_roots_above_a_folder_are_found_among_its_ancestors_as_by_a_pass_over_every_root():
    """Issue 60: which roots hold a folder (and which folders of a set no other holds) is worked out from the folder's
    own ancestors; the answer is the one a pass over every root gives, for every layout of roots."""
    import itertools
    from migrator.roots import inside, outermost
    pool = [".", "a", "a/b", "a/b/c", "ab", "a/bc", "x", "x/y", "x/y/z", "q/r"]
    folders = pool + ["a/b/c/d", "zz", "x/yz", ""]
    for n in (1, 2, 3):
        for dirs in itertools.combinations(pool, n):
            assert outermost(set(dirs)) == sorted(d for d in dirs if not any(a != d and inside(d, a) for a in dirs))
            fleet = Fleet.__new__(Fleet)
            fleet.paths = list(dirs)
            for d in folders:
                assert fleet._above(d) == [r for r in dirs if inside(d, r)], (dirs, d)


def test_flux_paths_pass_over_the_crds_that_name_the_kind(tmp_path):
    """Flux's gotk-components.yaml holds the Kustomization CRD, whose schema names the kind on an indented line: the
    CRD document is not a Kustomization (and is not parsed for one); the Kustomization beside it is read."""
    from migrator.inventory import Repo
    from migrator.inventory.kustomizations import flux_paths
    crd = ("---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n"
           "  name: kustomizations.kustomize.toolkit.fluxcd.io\nspec:\n  group: kustomize.toolkit.fluxcd.io\n"
           "  names:\n    kind: Kustomization\n    plural: kustomizations\n")
    ks = ("---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: infra\n"
          "spec:\n  path: ./infrastructure\n")
    (tmp_path / "clusters/prod/flux-system").mkdir(parents=True)
    (tmp_path / "clusters/prod/flux-system/gotk-components.yaml").write_text(
        crd + ks.replace("./infrastructure", "./apps").replace("infra", "apps"))
    (tmp_path / "clusters/prod/infra.yaml").write_text(ks)
    for d in ("infrastructure", "apps"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "x.yaml").write_text("kind: ConfigMap\n")
    assert flux_paths(Repo(tmp_path)) == {"infrastructure": ("infra", "clusters/prod/infra.yaml"),
                                          "apps": ("apps", "clusters/prod/flux-system/gotk-components.yaml")}
