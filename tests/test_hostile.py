"""Bad input: every broken or odd file is reported or skipped, never a traceback; broken files stay byte-identical;
line endings, BOM and a missing final newline survive the rewrite; a second plan finds nothing."""
from __future__ import annotations

import os

from migrator.apply import apply_changes
from migrator.plan import make_plan

NP = ("apiVersion: karpenter.sh/v1beta1\nkind: NodePool\nmetadata:\n  name: {n}\nspec:\n  template:\n    spec:\n"
      "      nodeClassRef:\n        name: default\n      requirements: []\n  disruption:\n"
      "    consolidationPolicy: WhenUnderutilized\n    expireAfter: 720h")


def _corpus(d):
    files = {
        "crlf.yaml": NP.format(n="crlf").replace("\n", "\r\n").encode(),                 # CRLF, no final newline
        "bom.yaml": b"\xef\xbb\xbf" + NP.format(n="bom").encode() + b"\n",
        "anchors.yaml": b"base: &b\n  x: 1\n---\n" + NP.format(n="a").replace(
            "  disruption:\n    consolidationPolicy: WhenUnderutilized\n    expireAfter: 720h", "  disruption: *b").encode(),
        "dup.yaml": (NP.format(n="dup") + "\nspec:\n  weight: 1\n").encode(),
        "tabs.yaml": (NP.format(n="tab").replace("  name: tab", "\tname: tab") + "\n").encode(),
        "empty.yaml": b"",
        "bin.yaml": b"\x00\x01karpenter\xff",
        "latin1.yaml": NP.format(n="lat").encode() + b"\n# caf\xe9\n",
        "chart/templates/np.yaml": (NP.format(n="{{ .Values.name }}") + "\n").encode(),
        "chart/templates/broken.yaml": (NP.format(n="b") + "\n  {{ if .x }}a: [\n").encode(),
        "broken.tf": b'resource "kubectl_manifest" "x" {\n  yaml_body = <<-YAML\n    apiVersion: karpenter.sh/v1beta1\n',
        "unknown.yaml": b"apiVersion: karpenter.sh/v9\nkind: NodePool\nmetadata:\n  name: x\n",
    }
    for rel, data in files.items():
        p = d / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    os.symlink(d, d / "loop")
    os.symlink("/", d / "outside")
    return files


def test_hostile_corpus(tmp_path):
    files = _corpus(tmp_path)
    plan = make_plan(tmp_path, to="v1", phase="manifests")
    codes = {(f.code, f.path) for f in plan.findings}
    assert not [f for f in plan.findings if f.code.startswith("MIG-INT")]
    for bad in ("anchors.yaml", "dup.yaml", "tabs.yaml"):
        assert ("MIG-SRC-002", bad) in codes, bad
    assert ("MIG-SRC-001", "broken.tf") in codes and ("MIG-SRC-004", "chart/templates/broken.yaml") in codes
    assert {"bin.yaml", "latin1.yaml", "loop", "outside"} <= {p for c, p in codes if c == "MIG-SRC-003"}
    assert sorted(c.path for c in plan.changes) == ["bom.yaml", "chart/templates/np.yaml", "crlf.yaml"]
    apply_changes(plan.root, plan.changes)
    crlf = (tmp_path / "crlf.yaml").read_bytes()
    assert b"karpenter.sh/v1\r\n" in crlf and b"\n" not in crlf.replace(b"\r\n", b"")     # CRLF only
    assert (tmp_path / "bom.yaml").read_bytes().startswith(b"\xef\xbb\xbfapiVersion: karpenter.sh/v1\n")
    for rel, data in files.items():
        if rel not in ("crlf.yaml", "bom.yaml", "chart/templates/np.yaml"):
            assert (tmp_path / rel).read_bytes() == data, rel
    assert make_plan(tmp_path, to="v1", phase="manifests").changes == []


def test_a_killed_apply_leaves_every_file_old_or_new(tmp_path):
    """SIGKILL in the middle of an apply: each file is either its old or its new text, never half-written."""
    import json
    import signal
    import subprocess
    import sys
    import time

    olds = {f"f{i}.yaml": f"old {i}\n" * 2000 for i in range(4)}
    for rel, text in olds.items():
        (tmp_path / rel).write_text(text)
    news = {rel: text.replace("old", "new") for rel, text in olds.items()}
    code = (
        "import json, os, sys, time\n"
        "from migrator.apply import apply_changes\nfrom migrator.edits import FileChange\n"
        "real = os.fsync\n"
        "def slow(fd):\n    time.sleep(0.4)\n    real(fd)\n"
        "os.fsync = slow\n"
        "olds, news = json.loads(sys.argv[2]), json.loads(sys.argv[3])\n"
        "apply_changes(sys.argv[1], [FileChange(p, 'modify', olds[p], news[p], ['t']) for p in sorted(olds)])\n")
    proc = subprocess.Popen([sys.executable, "-c", code, str(tmp_path), json.dumps(olds), json.dumps(news)])
    time.sleep(1.5)                     # imports, then about two files written
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    states = []
    for rel in sorted(olds):
        now = (tmp_path / rel).read_text()
        assert now in (olds[rel], news[rel]), rel
        states.append(now == news[rel])
    assert states == sorted(states, reverse=True)       # written in order: new ones first, then old ones


def test_a_broken_file_the_move_never_needs_does_not_stop_the_plan(tmp_path):
    """A Terraform 0.11 module that HCL2 cannot parse, beside the clusters and in no cluster root (read only because
    it declares an instance profile; its `provisioner` is Terraform's, not Karpenter's), is a warning: the plan goes
    on. A broken file that names Karpenter, or lies in a root planned, stays an error."""
    legacy = tmp_path / "legacy/core-iam/main.tf"
    legacy.parent.mkdir(parents=True)
    legacy.write_text('resource "aws_iam_instance_profile" "ops" {\n  name = "ops"\n}\n\n'
                      'resource "aws_s3_bucket" "logs" {\n  bucket = "logs"\n\n  tags {\n    "Name" = "logs"\n  }\n\n'
                      '  provisioner "local-exec" {\n    command = "true"\n  }\n}\n')
    root = tmp_path / "clusters/dev"
    root.mkdir(parents=True)
    (root / "nodepool.yaml").write_text(NP.format(n="dev") + "\n")
    plan = make_plan(tmp_path, to="v1", phase="manifests")
    (said,) = [f for f in plan.findings if f.code == "MIG-SRC-001"]
    assert said.path == "legacy/core-iam/main.tf" and said.severity == "warning" and "goes on without it" in said.message
    assert not plan.has_errors and plan.changes
    legacy.write_text(legacy.read_text() + '\n# the karpenter node role lives here too\n')
    plan = make_plan(tmp_path, to="v1", phase="manifests")
    assert [f.severity for f in plan.findings if f.code == "MIG-SRC-001"] == ["error"]


def test_a_broken_file_of_terraform_provisioners_is_not_read(tmp_path):
    """Terraform's own `provisioner` blocks (or another product's `nodepool` names) made a .tf file "interesting" to
    the case-insensitive discovery words; the manifest scan no longer parses such a file, so a broken one is not said
    (a `local-exec` one is read for the commands it runs: inventory/shellobjects.py). One that names Karpenter is
    parsed, and said as an error."""
    legacy = tmp_path / "legacy/bastion/main.tf"
    legacy.parent.mkdir(parents=True)
    legacy.write_text('resource "null_resource" "b" {\n  tags {\n    "Name" = "b"\n  }\n\n'
                      '  provisioner "remote-exec" {\n    inline = ["true"]\n  }\n}\n')
    root = tmp_path / "clusters/dev"
    root.mkdir(parents=True)
    (root / "nodepool.yaml").write_text(NP.format(n="dev") + "\n")
    plan = make_plan(tmp_path, to="v1", phase="manifests")
    assert not [f for f in plan.findings if f.code == "MIG-SRC-001"] and plan.changes
    legacy.write_text(legacy.read_text() + "# karpenter's bastion\n")
    plan = make_plan(tmp_path, to="v1", phase="manifests")
    assert [f.severity for f in plan.findings if f.code == "MIG-SRC-001"] == ["error"]


def test_a_broken_document_that_only_names_a_karpenter_kind_in_prose_is_not_an_error(tmp_path):
    """A chart template of a Secret whose comment says "Provisioner password" (step-ca, vendored in Obmondo/kubeaid)
    does not parse with its actions: it declares no Karpenter kind, so it is no error; a broken document that does
    declare one (`kind: Provisioner`) stays an error."""
    t = tmp_path / "charts/step/templates/secrets.yaml"
    t.parent.mkdir(parents=True)
    t.write_text("# 2. Provisioner password.\n\n{{- if .Values.bootstrap.enabled }}\napiVersion: v1\nkind: Secret\n"
                 "{{- if .Values.inject.enabled }}\ntype: smallstep.com/ca-password\n{{- end }}\nmetadata:\n"
                 "  name: ca-password\n{{- end }}\n")
    plan = make_plan(tmp_path, to="v1")
    assert not [f for f in plan.findings if f.severity == "error"]
    t.write_text("kind: Provisioner\napiVersion: karpenter.sh/v1alpha5\nmetadata:\n  name: x\n  : [\n")
    plan = make_plan(tmp_path, to="v1")
    assert [f.code for f in plan.findings if f.severity == "error"] == ["MIG-SRC-002"]


def test_a_change_to_a_linked_file_is_written_to_the_file_it_points_at(tmp_path):
    """aws-samples/terraform-eks-code links one variables file into several folders (`var-karpenter-version.tf ->
    ../../common-files/...`). The chart version's default changed through the link's path would have replaced the
    link by a copy: the other folders would keep the old version, and the link would stop following the shared file.
    The change goes to the file itself, said (MIG-EDIT-012); the links stay links; a second plan finds nothing."""
    import os
    from migrator.apply import apply_changes
    from migrator.plan import make_plan
    root = tmp_path / "repo"
    (root / "shared").mkdir(parents=True)
    (root / "infra").mkdir()
    (root / "other").mkdir()
    (root / "shared" / "versions.tf").write_text(
        'variable "karpenter_version" {\n  type    = string\n  default = "1.12.1"\n}\n')
    os.symlink("../shared/versions.tf", root / "infra" / "versions.tf")
    os.symlink("../shared/versions.tf", root / "other" / "versions.tf")
    (root / "infra" / "main.tf").write_text(
        'resource "helm_release" "karpenter" {\n  name       = "karpenter"\n  namespace  = "kube-system"\n'
        '  repository = "oci://public.ecr.aws/karpenter"\n  chart      = "karpenter"\n'
        '  version    = var.karpenter_version\n\n  set {\n    name  = "settings.clusterName"\n    value = "demo"\n'
        '  }\n}\n\nresource "helm_release" "karpenter_crd" {\n  name       = "karpenter-crd"\n'
        '  namespace  = "kube-system"\n  repository = "oci://public.ecr.aws/karpenter"\n  chart      = "karpenter-crd"\n'
        '  version    = var.karpenter_version\n}\n')
    plan = make_plan(root)
    paths = [c.path for c in plan.changes]
    assert "shared/versions.tf" in paths and "infra/versions.tf" not in paths, paths
    (said,) = [f for f in plan.findings if f.code == "MIG-EDIT-012"]
    assert said.severity == "info" and "infra/versions.tf, other/versions.tf are links to shared/versions.tf" \
        in said.message
    apply_changes(root, plan.changes)
    assert os.path.islink(root / "infra" / "versions.tf") and os.path.islink(root / "other" / "versions.tf")
    assert 'default = "1.14.1"' in (root / "other" / "versions.tf").read_text()
    assert not make_plan(root).changes


def test_changes_that_differ_through_two_paths_of_one_file_are_not_written(tmp_path):
    import os
    from migrator.edits import FileChange
    from migrator.links import through_links
    (tmp_path / "a.tf").write_text("x = 1\n")
    os.symlink("a.tf", tmp_path / "b.tf")
    findings = []
    out = through_links(tmp_path, [FileChange("a.tf", "modify", "x = 1\n", "x = 2\n"),
                                   FileChange("b.tf", "modify", "x = 1\n", "x = 3\n")], findings, links={"b.tf"})
    assert out == [] and [(f.code, f.severity) for f in findings] == [("MIG-EDIT-012", "error")]
    findings = []
    out = through_links(tmp_path, [FileChange("a.tf", "modify", "x = 1\n", "x = 2\n"),
                                   FileChange("b.tf", "modify", "x = 1\n", "x = 2\n")], findings, links={"b.tf"})
    assert [c.path for c in out] == ["a.tf"] and findings[0].severity == "info"
    out = through_links(tmp_path, [FileChange("b.tf", "delete", "x = 1\n", None)], [], links={"b.tf"})
    assert [c.path for c in out] == ["b.tf"]                # deleting a link removes the link only
