"""`--since REF` (issue 28): each root stands where its files said at a git ref and moves to the version its files
ask for now: a version-only bump gets its companion edits, the bumped version is kept, a second plan finds nothing.
End to end on a temporary git repository."""
from __future__ import annotations

import shlex
import subprocess

import pytest
from typer.testing import CliRunner

from migrator.cli import app
from migrator.options import Options
from migrator.plan import UsageError, make_plan

RELEASES = '''resource "helm_release" "karpenter" {{
  name       = "karpenter"
  repository = "oci://public.ecr.aws/karpenter"
  chart      = "karpenter"
  version    = "{version}"
  namespace  = "kube-system"

  values = [
    <<-EOT
    controller:
      env:
        - name: CLUSTER_NAME
          value: demo
    EOT
  ]
}}

resource "helm_release" "karpenter_crd" {{
  name       = "karpenter-crd"
  repository = "oci://public.ecr.aws/karpenter"
  chart      = "karpenter-crd"
  version    = "{version}"
  namespace  = "kube-system"
}}
'''


def _git(d, *args):
    subprocess.run(["git", *args], cwd=d, check=True, capture_output=True)


@pytest.fixture
def bumped(tmp_path):
    """A repository whose last commit bumped only the version strings, 1.4.0 -> 1.6.0 (a dependency bot's)."""
    (tmp_path / "infra").mkdir()
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "config", "user.email", "bot@example.com")
    _git(tmp_path, "config", "user.name", "bot")
    (tmp_path / "infra" / "main.tf").write_text(RELEASES.format(version="1.4.0"))
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "base")
    (tmp_path / "infra" / "main.tf").write_text(RELEASES.format(version="1.6.0"))
    _git(tmp_path, "commit", "-qam", "bump karpenter to 1.6.0")
    return tmp_path


def test_a_version_only_bump_gets_its_companion_edits_and_keeps_the_version(bumped):
    infra = bumped / "infra"
    plain = make_plan(infra, to="latest")
    assert not any("clusterName: demo" in (c.new or "") for c in plain.changes if "1.6.0" in (c.new or ""))
    plan = make_plan(infra, options=Options(since="HEAD~1"))
    (root,) = plan.roots
    assert (root.chart, root.hop_to) == ("1.4.0", "1.6.0")          # stands at the ref, goes where the files ask
    (change,) = plan.changes
    assert "clusterName: demo" in change.new and change.new.count('"1.6.0"') == 2     # bumped versions kept
    assert "depends_on = [helm_release.karpenter_crd]" in change.new                # CRDs first
    assert any(f.code == "MIG-SINCE-002" for f in plan.findings)
    runner = CliRunner()
    res = runner.invoke(app, ["apply", str(infra), "--since", "HEAD~1", "--write"])
    assert res.exit_code == 0, res.output
    again = runner.invoke(app, ["plan", str(infra), "--since", "HEAD~1", "--detailed-exitcode"])
    assert again.exit_code == 0, again.output


def test_a_ref_the_clone_does_not_have_names_fetch_depth(bumped, tmp_path_factory):
    shallow = tmp_path_factory.mktemp("shallow") / "clone"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{bumped}", str(shallow)], check=True,
                   capture_output=True)
    with pytest.raises(UsageError, match="fetch-depth"):
        make_plan(shallow / "infra", options=Options(since="HEAD~1"))


def test_a_new_cluster_and_a_bump_across_the_v1_migration(bumped):
    (bumped / "new").mkdir()
    (bumped / "new" / "main.tf").write_text(RELEASES.format(version="1.2.0"))
    (bumped / "old").mkdir()
    (bumped / "old" / "main.tf").write_text(RELEASES.format(version="0.37.5"))
    _git(bumped, "add", "-A")
    _git(bumped, "commit", "-qm", "two more clusters")
    (bumped / "old" / "main.tf").write_text(RELEASES.format(version="1.0.8"))
    (bumped / "brand").mkdir()
    (bumped / "brand" / "main.tf").write_text(RELEASES.format(version="1.3.3"))
    _git(bumped, "add", "-A")
    _git(bumped, "commit", "-qm", "bump old across 1.0, and a brand new cluster")
    plan = make_plan(bumped, options=Options(since="HEAD~1"))
    rows = {r.path: r for r in plan.roots}
    assert rows["new"].chart == "1.2.0"                            # unchanged since the ref: planned from its files
    assert rows["brand"].chart == "1.3.3"                          # not at the ref: planned from nothing but its files
    # neither was bumped: they stay where their files say (nothing to move in this pull request)
    assert not any(c.path.startswith(("new/", "brand/")) for c in plan.changes)
    assert not any(f.code.startswith("MIG-SINCE") for f in rows["brand"].findings)
    # the root the change does not move is listed as untouched: no hop, no step (issue 58)
    assert [f.code for f in rows["new"].findings if f.code.startswith("MIG-SINCE")] == ["MIG-SINCE-003"]
    assert rows["new"].hop is None and not rows["new"].steps and rows["new"].next.startswith("untouched")
    assert any(f.code == "MIG-SINCE-001" and f.severity == "error" for f in rows["old"].findings)


def test_the_action_comments_the_runbook_and_pushes_the_companion_edits(bumped, tmp_path_factory):
    import os
    import shutil
    from pathlib import Path
    if shutil.which("migrator") is None or shutil.which("bash") is None:
        pytest.skip("the migrator command is not installed on PATH")
    origin = tmp_path_factory.mktemp("origin") / "repo.git"
    subprocess.run(["git", "init", "-q", "--bare", str(origin)], check=True)
    _git(bumped, "remote", "add", "origin", str(origin))
    _git(bumped, "push", "-q", "origin", "HEAD:refs/heads/bump")
    fake = tmp_path_factory.mktemp("bin")
    log = fake / "gh.log"
    (fake / "gh").write_text(f'#!/bin/sh\necho "$@" >> {log}\nfor a in "$@"; do case "$a" in body=@*) '
                             f'cat "${{a#body=@}}" >> {log};; esac; done\n')
    (fake / "gh").chmod(0o755)
    script = Path(__file__).resolve().parents[1] / "scripts" / "ci" / "github-action.sh"
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}", "MIGRATOR_PATH": "infra", "MIGRATOR_SINCE": "HEAD~1",
           "MIGRATOR_COMMENT": "true", "MIGRATOR_PUSH": "true", "PR_NUMBER": "7", "PR_HEAD_REF": "bump",
           "GITHUB_REPOSITORY": "acme/infra", "GH_TOKEN": "x", "FAIL_ON": "changes"}
    run = subprocess.run(["bash", str(script)], cwd=bumped, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr          # the companion edits are pushed: nothing pending
    pushed = subprocess.run(["git", "show", "bump:infra/main.tf"], cwd=origin, capture_output=True, text=True).stdout
    assert "clusterName: demo" in pushed and pushed.count('"1.6.0"') == 2
    # the SARIF file it writes into the workspace (the default migrator.sarif) is never committed (issue 59)
    files = subprocess.run(["git", "show", "--name-only", "--format=", "bump"], cwd=origin, capture_output=True,
                           text=True).stdout.split()
    assert files == ["infra/main.tf"] and (bumped / "migrator.sarif").exists()
    said = log.read_text()
    assert "repos/acme/infra/issues/7/comments" in said and "<!-- migrator-runbook -->" in said


FLUX = '''apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: karpenter
  namespace: kube-system
spec:
  interval: 10m
  chart:
    spec:
      chart: karpenter
      version: "{version}"
      sourceRef:
        kind: HelmRepository
        name: karpenter
  values:
    controller:
      env:
        - name: CLUSTER_NAME
          value: demo
'''
ARGO = '''apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: karpenter
  namespace: argocd
spec:
  project: default
  source:
    repoURL: public.ecr.aws/karpenter
    chart: karpenter
    targetRevision: "{version}"
    helm:
      valuesObject:
        controller:
          env:
            - name: CLUSTER_NAME
              value: demo
  destination:
    server: https://kubernetes.default.svc
    namespace: kube-system
'''
KUSTOMIZE = '''apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
helmCharts:
  - name: karpenter
    repo: oci://public.ecr.aws/karpenter
    version: "{version}"
    releaseName: karpenter
    namespace: kube-system
    valuesInline:
      controller:
        env:
          - name: CLUSTER_NAME
            value: demo
'''


@pytest.mark.parametrize("name, text", [("release.yaml", FLUX), ("app.yaml", ARGO), ("kustomization.yaml", KUSTOMIZE)])
def test_a_version_only_bump_in_gitops_files(tmp_path, name, text):
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "config", "user.email", "bot@example.com")
    _git(tmp_path, "config", "user.name", "bot")
    (tmp_path / name).write_text(text.format(version="1.4.0"))
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "base")
    (tmp_path / name).write_text(text.format(version="1.6.0"))
    _git(tmp_path, "commit", "-qam", "bump")
    plan = make_plan(tmp_path, options=Options(since="HEAD~1"))
    mine = next(c for c in plan.changes if c.path == name)
    assert "clusterName: demo" in mine.new and '"1.6.0"' in mine.new
    runner = CliRunner()
    assert runner.invoke(app, ["apply", str(tmp_path), "--since", "HEAD~1", "--write"]).exit_code == 0
    again = runner.invoke(app, ["plan", str(tmp_path), "--since", "HEAD~1", "--detailed-exitcode"])
    assert again.exit_code == 0, again.output


def test_the_renovate_presets_task_writes_the_companion_edits(bumped):
    """The preset's postUpgradeTasks command, as Renovate runs it on its branch (base branch templated in)."""
    import json
    import shlex
    from pathlib import Path
    preset = json.loads((Path(__file__).resolve().parents[1] / "renovate" / "karpenter.json").read_text())
    rule = next(r for r in preset["packageRules"] if "postUpgradeTasks" in r)
    assert {"karpenter", "karpenter-crd"} <= set(preset["packageRules"][0]["matchDepNames"])
    (cmd,) = [c for c in rule["postUpgradeTasks"]["commands"] if c.startswith("migrator apply ")]
    args = shlex.split(cmd.replace("{{{baseBranch}}}", "HEAD~1"))[1:]
    args[args.index(".")] = str(bumped / "infra")
    assert CliRunner().invoke(app, args).exit_code == 0
    text = (bumped / "infra" / "main.tf").read_text()
    assert "clusterName: demo" in text and text.count('"1.6.0"') == 2


def test_a_bump_onto_a_patch_never_to_land_on_goes_to_its_minors_newest(tmp_path):
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "config", "user.email", "bot@example.com")
    _git(tmp_path, "config", "user.name", "bot")
    (tmp_path / "main.tf").write_text(RELEASES.format(version="1.7.1"))
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "base")
    (tmp_path / "main.tf").write_text(RELEASES.format(version="1.8.0"))
    _git(tmp_path, "commit", "-qam", "bump to 1.8.0")
    plan = make_plan(tmp_path, options=Options(since="HEAD~1"))
    (change,) = plan.changes
    assert '"1.8.0"' not in change.new and '"1.8.' in change.new
    assert any(f.code == "MIG-V1X-HELM-007" for f in plan.findings)


COMPANION = '''provider "aws" {{
  region = "eu-west-1"
}}

module "karpenter" {{
  source  = "terraform-aws-modules/eks/aws//modules/karpenter"
  version = "{module}"

  cluster_name = "{name}"
}}

resource "helm_release" "karpenter" {{
  name       = "karpenter"
  repository = "oci://public.ecr.aws/karpenter"
  chart      = "karpenter"
  version    = "{chart}"
  namespace  = "kube-system"
  values     = [yamlencode({{ settings = {{ clusterName = "{name}" }} }})]
}}

resource "helm_release" "karpenter_crd" {{
  name       = "karpenter-crd"
  repository = "oci://public.ecr.aws/karpenter"
  chart      = "karpenter-crd"
  version    = "{chart}"
  namespace  = "kube-system"
}}
'''


def _repo_with_bump(tmp_path, before: dict, after: dict):
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "config", "user.email", "bot@example.com")
    _git(tmp_path, "config", "user.name", "bot")
    (tmp_path / "main.tf").write_text(COMPANION.format(**before))
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "base")
    (tmp_path / "main.tf").write_text(COMPANION.format(**after))
    _git(tmp_path, "commit", "-qam", "bump")
    return tmp_path


def test_a_bump_gets_the_smallest_module_release_that_serves_it_not_the_newest(tmp_path):
    # chart 1.6 -> 1.7 with the module at 21.1: 21.2.0 is the first v21 whose policy serves 1.7 (issue 32 §5)
    repo = _repo_with_bump(tmp_path, dict(module="21.1.0", chart="1.6.8", name="demo"),
                           dict(module="21.1.0", chart="1.7.6", name="demo"))
    plan = make_plan(repo, options=Options(since="HEAD~1"))
    (change,) = plan.changes
    assert 'version = "21.2.0"' in change.new and 'version    = "1.7.6"' in change.new
    assert "enable_inline_policy" not in change.new
    assert not [f for f in plan.findings if f.severity == "error"]


def test_a_bump_that_needs_nothing_changes_nothing(tmp_path):
    repo = _repo_with_bump(tmp_path, dict(module="21.19.0", chart="1.12.1", name="demo"),
                           dict(module="21.19.0", chart="1.12.2", name="demo"))
    plan = make_plan(repo, options=Options(since="HEAD~1"))
    assert not plan.changes
    assert not [f for f in plan.findings if f.severity == "error"]


def test_a_module_bump_into_the_quota_gets_the_inline_policy(tmp_path):
    # the bot moved 21.18.0 -> 21.19.0 (terraform-aws-eks#3692): its policy is over 6,144 for this name and region
    name = "payments-platform-production-eu"
    repo = _repo_with_bump(tmp_path, dict(module="21.18.0", chart="1.11.3", name=name),
                           dict(module="21.19.0", chart="1.11.3", name=name))
    plan = make_plan(repo, options=Options(since="HEAD~1"))
    (change,) = plan.changes
    assert "enable_inline_policy = true" in change.new and 'version = "21.19.0"' in change.new
    assert any(f.code == "MIG-V1X-MOD-013" for f in plan.findings)


def _preset_on_a_vendored_bump(tmp_path, edit=None):
    """The preset's migrator commands, in order, on a bump of a root that keeps its CRDs as files (helm faked on
    PATH): the helm log and the CRD folder."""
    import json
    import os
    import shutil
    import sys
    from pathlib import Path
    fixtures = Path(__file__).resolve().parents[1] / "fixtures" / "flux-vendored-crds" / "input"
    shutil.copytree(fixtures, tmp_path, dirs_exist_ok=True)
    crds = tmp_path / "clusters" / "prod" / "karpenter" / "crds"
    if edit:
        edit(crds)
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "config", "user.email", "bot@example.com")
    _git(tmp_path, "config", "user.name", "bot")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "base")
    hr = tmp_path / "clusters" / "prod" / "karpenter" / "helmrelease.yaml"
    hr.write_text(hr.read_text().replace('"1.7.6"', '"1.8.8"'))
    _git(tmp_path, "commit", "-qam", "bump karpenter to 1.8.8")
    bin_dir = tmp_path.parent / (tmp_path.name + "-bin")
    bin_dir.mkdir()
    (bin_dir / "helm").write_text('#!/bin/sh\necho "$@" >> "$HELM_LOG"\nwhile [ $# -gt 0 ]; do [ "$1" = --untardir ] && '
                                  'mkdir -p "$2/karpenter/crds" && echo "# regenerated" > "$2/karpenter/crds/karpenter.sh_nodeoverlays.yaml"; '
                                  'shift; done\n')
    (bin_dir / "helm").chmod(0o755)
    log = tmp_path.parent / "helm.log"
    log.write_text("")
    preset = json.loads((Path(__file__).resolve().parents[1] / "renovate" / "karpenter.json").read_text())
    rule = next(r for r in preset["packageRules"] if "postUpgradeTasks" in r)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "HELM_LOG": str(log)}
    for cmd in rule["postUpgradeTasks"]["commands"]:
        if not cmd.startswith("migrator "):
            continue                                        # the install line
        cmd = cmd.replace("{{{baseBranch}}}", "HEAD~1").replace("migrator ", f"{shlex.quote(sys.executable)} -m migrator ", 1)
        subprocess.run(cmd, shell=True, cwd=tmp_path, env=env, check=True)
    return log.read_text(), crds


def test_the_renovate_preset_rewrites_vendored_crds_at_the_bumped_version(tmp_path):
    from migrator.crdfiles import chart_crds
    helm, crds = _preset_on_a_vendored_bump(tmp_path)
    assert helm == ""                                       # nothing to fetch: migrator packages the chart's CRDs
    for _, (fname, text) in chart_crds("1.8.8").items():
        assert (crds / fname).read_text() == text


def test_the_renovate_presets_crd_task_regenerates_a_set_migrator_cannot_rewrite(tmp_path):
    def edit(crds):
        p = crds / "karpenter.sh_nodeclaims.yaml"
        p.write_text(p.read_text().replace("                nodeClassRef:\n",
                                           "                teamField:\n                  type: string\n"
                                           "                nodeClassRef:\n", 1))
    helm, crds = _preset_on_a_vendored_bump(tmp_path, edit)
    assert "--version 1.8.8" in helm
    assert (crds / "karpenter.sh_nodeoverlays.yaml").read_text() == "# regenerated\n"


MODULE_ONLY = '''variable "cluster_name" {{
  type = string
}}

module "karpenter" {{
  source  = "terraform-aws-modules/eks/aws//modules/karpenter"
  version = "{module}"

  cluster_name = var.cluster_name
  namespace    = "karpenter"
}}
'''


def test_a_module_only_root_bumped_into_the_quota_gets_the_inline_policy_and_stays_unknown(tmp_path):
    # dfds/infrastructure-modules 9acd0f1af: Renovate moved 21.18.0 -> 21.20.0 in a module whose chart lives
    # elsewhere; the owners added enable_inline_policy = true five days later
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "config", "user.email", "bot@example.com")
    _git(tmp_path, "config", "user.name", "bot")
    (tmp_path / "main.tf").write_text(MODULE_ONLY.format(module="21.18.0"))
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "base")
    (tmp_path / "main.tf").write_text(MODULE_ONLY.format(module="21.19.0"))
    _git(tmp_path, "commit", "-qam", "bump")
    plan = make_plan(tmp_path, options=Options(since="HEAD~1"))
    (change,) = plan.changes
    assert "enable_inline_policy = true" in change.new and "may be, with a longer cluster name" in change.new
    (root,) = plan.every
    assert root.era == "unknown" and not root.later
    assert not [f for f in plan.findings if f.severity == "error"]
    # the same files without a bump: the pin is the team's choice, nothing is written
    assert not make_plan(tmp_path).changes


def test_a_bump_past_a_required_value_is_never_set_back(tmp_path):
    """A bump 1.4.0 -> 1.12.1 whose values lack settings.clusterName: the pull request's version is kept and said
    not to install as written (MIG-V1X-HELM-005), never "held at 1.4.4" with steps that set the chart back."""
    (tmp_path / "infra").mkdir()
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "config", "user.email", "bot@example.com")
    _git(tmp_path, "config", "user.name", "bot")
    release = RELEASES.split("resource \"helm_release\" \"karpenter_crd\"")[0].replace(
        "        - name: CLUSTER_NAME\n          value: demo\n", "        - name: LOG_LEVEL\n          value: debug\n")
    (tmp_path / "infra" / "main.tf").write_text(release.format(version="1.4.0"))
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "base")
    (tmp_path / "infra" / "main.tf").write_text(release.format(version="1.12.1"))
    _git(tmp_path, "commit", "-qam", "bump")
    plan = make_plan(tmp_path / "infra", options=Options(since="HEAD~1"))
    assert plan.hop_to == "1.12.1"
    codes = [f.code for f in plan.findings]
    assert "MIG-V1X-HELM-005" in codes and "MIG-V1X-HELM-001" not in codes and "MIG-V1X-HELM-003" not in codes
    assert not any("1.4.4" in s.title for s in plan.steps)
    assert all('"1.4.4"' not in (c.new or "") for c in plan.changes)


def test_a_values_block_emptied_by_its_removals_goes_with_its_key(tmp_path):
    """Issue 58: removing the only stale value left `valuesObject:` (null) behind; the key goes, and `helm:` with it
    when it held nothing else. A mapping with entries left keeps its key."""
    app = ("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: karpenter\n  namespace: argocd\n"
           "spec:\n  project: default\n  source:\n    repoURL: public.ecr.aws/karpenter\n    chart: karpenter\n"
           "    targetRevision: 1.2.0\n    helm:\n      valuesObject:\n        webhook:\n          enabled: true\n"
           "{more}  destination:\n    server: https://kubernetes.default.svc\n    namespace: kube-system\n")
    (tmp_path / "app.yaml").write_text(app.format(more=""))
    (c,) = [c for c in make_plan(tmp_path).changes if c.path == "app.yaml"]
    assert "helm:" not in c.new and "valuesObject" not in c.new and "  destination:" in c.new
    (tmp_path / "app.yaml").write_text(app.format(more="        settings:\n          clusterName: demo\n"))
    (c,) = [c for c in make_plan(tmp_path).changes if c.path == "app.yaml"]
    assert "      valuesObject:\n        settings:\n          clusterName: demo\n" in c.new and "webhook" not in c.new
