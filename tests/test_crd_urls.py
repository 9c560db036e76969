"""CRDs fetched from Karpenter's repository by URL (issue 58, item 2): the URLs own the CRDs, so no karpenter-crd
release is added beside them; a pinned release moves with the chart; what cannot move is said."""
from __future__ import annotations

import pathlib
import shutil
import subprocess

from migrator.crdurls import crd_urls
from migrator.inventory.repo import Repo
from migrator.options import Options
from migrator.plan import make_plan

FIXTURE = pathlib.Path(__file__).parent.parent / "fixtures" / "tf-crd-urls" / "input"


def _copy(tmp_path) -> pathlib.Path:
    root = tmp_path / "r"
    shutil.copytree(FIXTURE, root)
    return root


def test_urls_are_read_with_their_release_data_source_and_users():
    urls = {(u.path, u.file): u for u in crd_urls(Repo(FIXTURE))}
    assert set(urls) == {("crds.tf", "karpenter.sh_nodepools.yaml"), ("crds.tf", "karpenter.sh_nodeclaims.yaml"),
                         ("crds.tf", "karpenter.k8s.aws_ec2nodeclasses.yaml"),
                         ("bootstrap.sh", "karpenter.sh_nodepools.yaml")}      # the commented-out block is not read
    pools = urls[("crds.tf", "karpenter.sh_nodepools.yaml")]
    assert pools.version == "1.3.3" and pools.data == "data.http.nodepools_crd"
    assert pools.users == ["kubernetes_manifest.nodepools_crd"] and pools.name == "nodepools.karpenter.sh"
    script = urls[("bootstrap.sh", "karpenter.sh_nodepools.yaml")]
    assert not script.pinned and script.variable and script.ref == "v${KARPENTER_VERSION}"


def test_pinned_urls_move_with_the_chart_and_no_crd_release_is_added(tmp_path):
    plan = make_plan(_copy(tmp_path))
    assert not any(f.code in ("MIG-HELM-012", "MIG-HELM-013") for f in plan.findings)
    assert not any("karpenter-crd" in c.new for c in plan.changes)
    (crds,) = [c for c in plan.changes if c.path == "crds.tf"]
    assert crds.new.count("/v1.14.1/pkg/apis/crds/") == 3
    assert crds.new == crds.old.replace("/v1.3.3/", "/v1.14.1/")           # the digits only; the comment keeps v1.0.7
    new = sorted(f.message.split(" ships the ")[1].split(" CRD")[0] for f in plan.findings
                 if f.code == "MIG-V1X-CRD-004")
    assert new == ["capacitybuffers.autoscaling.x-k8s.io", "nodeoverlays.karpenter.sh"]
    (over,) = [f for f in plan.findings if f.code == "MIG-V1X-CRD-004" and "nodeoverlays" in f.message]
    assert "https://raw.githubusercontent.com/aws/karpenter-provider-aws/v1.14.1/pkg/apis/crds/" \
           "karpenter.sh_nodeoverlays.yaml" in over.manual_step
    (var,) = [f for f in plan.findings if f.code == "MIG-V1X-CRD-005"]
    assert var.path == "bootstrap.sh" and var.severity == "info"
    steps = [s for s in plan.steps if s.id.endswith("crds-urls")]
    assert steps and "apply -target=kubernetes_manifest.ec2nodeclasses_crd -target=kubernetes_manifest.nodeclaims_crd " \
                     "-target=kubernetes_manifest.nodepools_crd" in steps[0].commands[-1]
    order = [s.id.split("-", 2)[-1] for s in plan.steps]
    assert order.index("crds-urls") < order.index("controller")


def test_a_branch_url_is_said_and_a_url_at_the_chart_is_left(tmp_path):
    root = _copy(tmp_path)
    (root / "crds.tf").write_text((root / "crds.tf").read_text().replace("/v1.3.3/pkg/apis/crds/karpenter.sh_nodeclaims",
                                                                         "/main/pkg/apis/crds/karpenter.sh_nodeclaims"))
    plan = make_plan(root)
    (branch,) = [f for f in plan.findings if f.code == "MIG-V1X-CRD-005" and f.path == "crds.tf"]
    assert branch.severity == "warning" and "`main`" in branch.message and "v1.14.1" in branch.manual_step
    (crds,) = [c for c in plan.changes if c.path == "crds.tf"]
    assert "/main/pkg/apis/crds/karpenter.sh_nodeclaims" in crds.new


def test_a_bump_moves_the_urls_to_the_bots_version(tmp_path):
    root = _copy(tmp_path)
    for p in ("karpenter.tf", "crds.tf"):
        (root / p).write_text((root / p).read_text().replace("1.3.3", "1.8.0"))

    def git(*a):
        subprocess.run(["git", "-c", "user.email=b@example.com", "-c", "user.name=b", *a], cwd=root, check=True,
                       capture_output=True)
    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "base")
    (root / "karpenter.tf").write_text((root / "karpenter.tf").read_text().replace('"1.8.0"', '"1.9.0"'))
    git("commit", "-qam", "bump")
    plan = make_plan(root, options=Options(since="HEAD~1"))
    (crds,) = [c for c in plan.changes if c.path == "crds.tf"]
    assert crds.new.count("/v1.9.0/pkg/apis/crds/") == 3
    assert not any(f.code == "MIG-V1X-CRD-004" for f in plan.findings)      # nothing new since 1.8.0


def test_a_new_crd_kept_as_a_file_beside_the_urls_is_not_said_missing(tmp_path):
    from migrator.crdfiles import chart_crds
    root = _copy(tmp_path)
    fname, text = chart_crds("1.14.1")["nodeoverlays.karpenter.sh"]
    (root / "crds").mkdir()
    (root / "crds" / fname).write_text(text)
    plan = make_plan(root)
    said = [f.message for f in plan.findings if f.code == "MIG-V1X-CRD-004"]
    assert said and not any("nodeoverlays" in m for m in said) and any("capacitybuffers" in m for m in said)


def test_a_makefile_is_read_for_the_crd_urls_it_applies(tmp_path):
    """Makefiles are read (discovery took only files by suffix before, so a Makefile's `kubectl apply -f <url>` was
    never seen, though the CRD-URL reader lists it)."""
    from migrator.crdurls import crd_urls
    from migrator.inventory.repo import Repo
    (tmp_path / "Makefile").write_text(
        "crds:\n\tkubectl apply -f https://raw.githubusercontent.com/aws/karpenter-provider-aws/v1.3.3/pkg/apis/crds/"
        "karpenter.sh_nodepools.yaml\n")
    [u] = crd_urls(Repo(tmp_path))
    assert (u.path, u.version, u.name) == ("Makefile", "1.3.3", "nodepools.karpenter.sh")


def test_once_the_urls_and_the_chart_are_at_the_target_nothing_is_planned(tmp_path):
    """Alves0611/devops-aws walked to the end: the chart and every CRD URL at 1.14.1, yet the next plan still offered
    "v1 -> 1.14.1, phase upgrade" with nothing to write and a step to upgrade the controller (the goal check looked for
    a karpenter-crd release only). URLs that own the CRDs count as the CRD release."""
    from migrator.apply import apply_changes
    root = _copy(tmp_path)
    (root / "bootstrap.sh").unlink()                # a URL by variable follows no release: it would keep the hop
    apply_changes(root, make_plan(root).changes)
    plan = make_plan(root)
    assert plan.changes == [] and plan.steps == []
    assert all(not r.phase and r.hop is None for r in plan.roots), [(r.path, r.phase, r.next) for r in plan.roots]
