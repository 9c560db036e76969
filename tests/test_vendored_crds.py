"""Vendored CRDs (issue 32 §4): Karpenter CRD files kept in the repository are read as the releases their fields
match, and said when older than the chart the root runs or moves to."""
from __future__ import annotations

import pathlib
import shutil

from ruamel.yaml import YAML

from migrator.crdfiles import chart_crds, stale, vendored, verbatim
from migrator.inventory.repo import Repo
from migrator.plan import make_plan
from migrator.rules.v1x.crdwrite import blocked
from migrator.sources.crd import fingerprint

FIXTURES = pathlib.Path(__file__).parent.parent / "fixtures"
CRDS = FIXTURES / "flux-vendored-crds" / "input" / "clusters" / "prod" / "karpenter" / "crds"   # Karpenter 1.7.6's


def test_descriptions_and_layout_do_not_change_the_fingerprint():
    doc = YAML(typ="safe").load((CRDS / "karpenter.sh_nodepools.yaml").read_text())
    edited = YAML(typ="safe").load((CRDS / "karpenter.sh_nodepools.yaml").read_text())
    edited["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["description"] = "changed"
    assert fingerprint(doc) == fingerprint(edited)
    edited["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["replicas"] = {}
    assert fingerprint(doc) != fingerprint(edited)


def test_a_set_serves_its_own_minor_and_is_stale_for_a_later_one(tmp_path):
    shutil.copytree(CRDS, tmp_path / "crds")
    (vs,) = vendored(Repo(tmp_path))
    assert not stale(vs, "1.6.8") and not stale(vs, "1.6.2")
    assert stale(vs, "1.7.6") == ["nodeoverlays.karpenter.sh (new in 1.7) is missing"]
    why = stale(vs, "1.8.1")
    assert any("nodepools.karpenter.sh" in w for w in why) and any("nodeoverlays.karpenter.sh" in w for w in why)


def test_crds_of_a_vendored_chart_and_other_groups_are_not_read(tmp_path):
    shutil.copytree(CRDS, tmp_path / "charts" / "karpenter" / "crds")
    (tmp_path / "charts" / "karpenter" / "Chart.yaml").write_text("name: karpenter\nversion: 1.7.6\n")
    (tmp_path / "other.yaml").write_text("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
                                         "spec:\n  group: cert-manager.io\n  names: {plural: certificates}\n")
    assert vendored(Repo(tmp_path)) == []


def test_no_crd_release_is_added_beside_vendored_crds_and_they_are_rewritten_at_the_chart(tmp_path):
    root = tmp_path / "r"
    shutil.copytree(FIXTURES / "flux-vendored-crds" / "input", root)
    plan = make_plan(root, to="1.8")
    assert not any("karpenter-crd" in c.new for c in plan.changes)
    (f,) = [f for f in plan.findings if f.code == "MIG-V1X-CRD-001"]
    assert "rewritten with chart 1.8.8's own CRDs" in f.message and f.severity == "warning"
    steps = [s for s in plan.steps if s.id.endswith("crds-files")]
    assert len(steps) == 1 and steps[0].title.startswith("Apply the CRDs kept as files")
    assert all(c.startswith("kubectl apply --server-side -f ") for c in steps[0].commands)
    crds = chart_crds("1.8.8")
    for name, (fname, text) in crds.items():
        change = [c for c in plan.changes if c.path.endswith("/crds/" + fname)]
        was = root / "clusters/prod/karpenter/crds" / fname
        assert (change[0].new if change else was.read_text()) == text, name   # byte for byte what the chart ships
    (k,) = [c for c in plan.changes if c.path.endswith("kustomization.yaml")]
    assert "  - crds/karpenter.k8s.aws_ec2nodeclasses.yaml\n  - crds/karpenter.sh_nodeoverlays.yaml\n" in k.new


def test_a_hand_edited_set_is_not_rewritten_and_the_runbook_regenerates_it(tmp_path):
    root = tmp_path / "r"
    shutil.copytree(FIXTURES / "flux-vendored-crds" / "input", root)
    p = root / "clusters/prod/karpenter/crds/karpenter.sh_nodeclaims.yaml"
    p.write_text(p.read_text().replace("                nodeClassRef:\n",
                                       "                teamField:\n                  type: string\n"
                                       "                nodeClassRef:\n", 1))
    plan = make_plan(root, to="1.8")
    (f,) = [f for f in plan.findings if f.code == "MIG-V1X-CRD-001"]
    assert "not rewritten: nodeclaims.karpenter.sh" in f.message and "edited by hand" in f.message
    assert "--version 1.8." in f.manual_step
    assert not any("/crds/" in c.path for c in plan.changes)
    steps = [s for s in plan.steps if s.id.endswith("crds-files")]
    assert steps and any("helm pull oci://public.ecr.aws/karpenter/karpenter --version 1.8." in c for c in steps[0].commands)


def _stream(version: str, newline: str = "\n") -> str:
    """`helm template --include-crds` style: comments before each CRD, a Deployment after them."""
    docs = [f"# Source: karpenter/crds/{fname}\n" + text.removeprefix("---\n")
            for _, (fname, text) in sorted(chart_crds(version).items())]
    deploy = "# Source: karpenter/templates/deployment.yaml\napiVersion: apps/v1\nkind: Deployment\n" \
             "metadata:\n  name: karpenter # keep me\n"
    return ("# helm show crds karpenter --version " + version + "\n---\n" + "---\n".join(docs + [deploy])) \
        .replace("\n", newline)


def test_one_file_of_every_crd_keeps_its_layout_and_gets_the_new_crds_after_the_last(tmp_path):
    for nl in ("\n", "\r\n"):
        root = tmp_path / ("crlf" if nl != "\n" else "lf")
        (root / "crds").mkdir(parents=True)
        (root / "crds" / "all.yaml").write_bytes(_stream("1.6.8", nl).encode())
        (root / "release.yaml").write_text(HELMRELEASE)
        plan = make_plan(root, to="1.8")
        (change,) = [c for c in plan.changes if c.path == "crds/all.yaml"]
        new = change.new
        assert new.startswith("# helm show crds karpenter --version 1.6.8" + nl + "---" + nl)
        assert new.endswith("metadata:" + nl + "  name: karpenter # keep me" + nl)
        assert new.count("# Source: karpenter/crds/") == 3
        for name, (fname, text) in chart_crds("1.8.8").items():
            assert text.removeprefix("---\n").replace("\n", nl) in new, name
        assert new.index("name: nodeoverlays.karpenter.sh") < new.index("kind: Deployment")
        assert "\r\n" not in new.replace(nl, "") and (nl == "\n") == ("\r\n" not in new)
        again = root / "again"
        shutil.copytree(root, again)
        (again / "crds" / "all.yaml").write_bytes(new.encode())
        assert not [c for c in make_plan(again, to="1.8").changes if c.path == "crds/all.yaml"]


HELMRELEASE = """apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: karpenter
  namespace: karpenter
spec:
  install:
    crds: Skip
  chart:
    spec:
      chart: karpenter
      version: 1.6.8
      sourceRef:
        kind: HelmRepository
        name: karpenter
  values:
    settings:
      clusterName: prod
"""


def _helm_show_crds(version: str) -> str:
    """What `helm show crds` prints: each file of the chart's crds/ folder, by name, and a newline after each."""
    return "".join(text + "\n" for _, (_, text) in sorted(chart_crds(version).items(), key=lambda kv: kv[1][0]))


def test_helm_show_crds_output_becomes_the_targets_output_byte_for_byte(tmp_path):
    # dfds/platform-apps keeps `helm show crds` output (a Makefile) beside a HelmRelease with CRDs skipped: after the
    # rewrite, the file is what its Makefile would write at the target, new CRDs in the chart's own order
    (tmp_path / "crds.yaml").write_text(_helm_show_crds("1.6.3"))
    (tmp_path / "kustomization.yaml").write_text("resources:\n  - crds.yaml\n  - release.yaml\n")
    (tmp_path / "release.yaml").write_text(HELMRELEASE)
    plan = make_plan(tmp_path, to="1.14")
    (change,) = [c for c in plan.changes if c.path == "crds.yaml"]
    assert change.new == _helm_show_crds("1.14.1")
    assert change.new.index("capacitybuffers.autoscaling") < change.new.index("ec2nodeclasses.karpenter.k8s.aws")


def test_a_new_file_named_one_by_one_elsewhere_is_said(tmp_path):
    root = tmp_path / "r"
    shutil.copytree(FIXTURES / "flux-vendored-crds" / "input", root)
    (root / "apply-crds.sh").write_text("kubectl apply -f clusters/prod/karpenter/crds/karpenter.sh_nodepools.yaml\n")
    plan = make_plan(root, to="1.8")
    (f,) = [f for f in plan.findings if f.code == "MIG-V1X-CRD-002"]
    assert f.path == "apply-crds.sh" and f.line == 1 and "karpenter.sh_nodeoverlays.yaml" in f.message


def test_a_conversion_webhook_other_than_the_charts_blocks_the_rewrite(tmp_path):
    crds = chart_crds("1.0.8")
    assert "kube-system" in crds["nodepools.karpenter.sh"][1]
    (tmp_path / "crds").mkdir()
    shutil.copy(CRDS / "karpenter.sh_nodepools.yaml", tmp_path / "crds")
    (vs,) = vendored(Repo(tmp_path))
    why = blocked(Repo(tmp_path), vs, crds)
    assert why and "kube-system/karpenter" in why
    assert blocked(Repo(tmp_path), vs, chart_crds("1.8.8")) is None


def test_every_release_since_0_32_is_packaged_with_its_crds():
    assert chart_crds("9.9.9") is None
    assert set(chart_crds("1.14.1")) == {"nodepools.karpenter.sh", "nodeclaims.karpenter.sh",
                                         "ec2nodeclasses.karpenter.k8s.aws", "nodeoverlays.karpenter.sh",
                                         "capacitybuffers.autoscaling.x-k8s.io"}
    assert "nodeoverlays.karpenter.sh" not in chart_crds("1.6.8") and "nodeoverlays.karpenter.sh" in chart_crds("1.7.0")
    assert "provisioners.karpenter.sh" in chart_crds("0.32.0")
    assert verbatim((CRDS / "karpenter.sh_nodepools.yaml").read_text())


def _v1beta1_root(tmp_path) -> pathlib.Path:
    """The flux-vendored-crds shape one hop earlier: chart 0.37.0, v1beta1 objects, the CRDs kept as 0.37.0's files."""
    root = tmp_path / "r"
    shutil.copytree(FIXTURES / "flux-vendored-crds" / "input", root)
    k = root / "clusters/prod/karpenter"
    (k / "helmrelease.yaml").write_text((k / "helmrelease.yaml").read_text().replace('"1.7.6"', '"0.37.0"'))
    (k / "nodepool.yaml").write_text(
        "apiVersion: karpenter.sh/v1beta1\nkind: NodePool\nmetadata:\n  name: general\nspec:\n  template:\n"
        "    spec:\n      nodeClassRef:\n        name: general\n      requirements:\n"
        "        - key: karpenter.sh/capacity-type\n          operator: In\n          values: [\"on-demand\"]\n"
        "---\napiVersion: karpenter.k8s.aws/v1beta1\nkind: EC2NodeClass\nmetadata:\n  name: general\nspec:\n"
        "  amiFamily: AL2023\n  role: karpenter-node-prod\n  subnetSelectorTerms:\n    - tags:\n"
        "        karpenter.sh/discovery: prod\n  securityGroupSelectorTerms:\n    - tags:\n"
        "        karpenter.sh/discovery: prod\n")
    for _, (fname, text) in chart_crds("0.37.0").items():
        (k / "crds" / fname).write_text(text)
    return root


def test_the_v1_hop_adds_no_crd_release_beside_crd_files_and_renders_them_with_the_webhook(tmp_path):
    # before: a karpenter-crd HelmRelease was added beside the files the kustomization applies, two owners of the
    # same CRDs (Flux re-applying the 0.37 files over the release's v1 CRDs)
    plan = make_plan(_v1beta1_root(tmp_path), to="v1")
    assert plan.phase == "patch-upgrade"
    assert not any("karpenter-crd" in c.new for c in plan.changes)
    assert not any(f.code == "MIG-HELM-013" for f in plan.findings)
    (f,) = [f for f in plan.findings if f.code == "MIG-V1-CRD-001"]
    assert f.path.startswith("clusters/prod/karpenter/crds/")
    step, then = [s for s in plan.steps if s.id.endswith("crds-files")]      # the patch release, then 1.0
    assert "helm template karpenter-crd oci://public.ecr.aws/karpenter/karpenter-crd --version 0.37.8" in step.commands[0]
    assert "--version 1.0." in then.commands[0] and not any(s.id.endswith("-crds") for s in plan.steps)
    assert "--set webhook.serviceNamespace=karpenter" in step.commands[0]
    patch = next(s for s in plan.steps if s.id.endswith("-patch"))
    assert not any("karpenter-crd" in c for c in patch.commands)
    assert not any(s.id.endswith("crds-adopt") for s in plan.steps)


def test_the_v1_hop_says_crd_urls_name_kube_system(tmp_path):
    root = _v1beta1_root(tmp_path)
    shutil.rmtree(root / "clusters/prod/karpenter/crds")
    k = root / "clusters/prod/karpenter/kustomization.yaml"
    k.write_text(k.read_text().replace(
        "  - crds/karpenter.sh_nodepools.yaml\n  - crds/karpenter.sh_nodeclaims.yaml\n"
        "  - crds/karpenter.k8s.aws_ec2nodeclasses.yaml\n",
        "  - https://raw.githubusercontent.com/aws/karpenter-provider-aws/v0.37.0/pkg/apis/crds/karpenter.sh_nodepools.yaml\n"))
    plan = make_plan(root, to="v1")
    assert not any("karpenter-crd" in c.new for c in plan.changes)
    (f,) = [f for f in plan.findings if f.code == "MIG-V1-CRD-001"]
    assert "kube-system/karpenter" in f.message and f.path.endswith("kustomization.yaml")


def test_a_crd_text_is_parsed_once_whatever_the_number_of_readers(tmp_path, monkeypatch):
    """Issue 60: the vendored-file scan of every environment's view of a root, a rewrite's check, the re-parse before
    writing and the second pass read the same CRD texts; each distinct text is parsed once (wallafidevops/eks-adm-full
    spent half its plan parsing the same 200 KB four times). A text that does not parse says so to every reader."""
    from migrator import validate
    from migrator.sources import crd
    from migrator.sources import yaml as yamlsrc
    shutil.copytree(CRDS, tmp_path / "crds")
    parsed = []
    real = yamlsrc.values
    monkeypatch.setattr(yamlsrc, "values", lambda text: parsed.append(text) or real(text))
    monkeypatch.setattr(crd, "_READ", {})
    repo = Repo(tmp_path)
    first = vendored(repo)
    n = len(parsed)
    assert n == len(list(CRDS.glob("*.yaml")))
    again = vendored(repo.without(set()))                 # another environment's view: nothing parsed again
    text = (CRDS / "karpenter.sh_nodepools.yaml").read_text()
    assert validate.reparse("crds/karpenter.sh_nodepools.yaml", text) is None
    assert len(parsed) == n and [f.name for vs in again for f in vs.files] == [f.name for vs in first for f in vs.files]
    broken = text.replace("  names:", "  names: [", 1)
    got = crd.read_crd(broken)
    assert got.error is not None and got.error[0].startswith("YAML does not parse")
    assert validate.reparse("crds/karpenter.sh_nodepools.yaml", broken) is not None
