"""Unit tests: masking, HCL spans, edits, selector algorithm, durations, validation, discovery, apply."""
from __future__ import annotations

import os

import pytest
from ruamel.yaml.comments import CommentedMap

from migrator.apply import ApplyError, apply_changes
from migrator.discover import discover
from migrator.edits import EditConflict, FileChange, TextEdit, apply_edits
from migrator.rules.v1beta1.convert import (
    convert_nodeclass, convert_provisioner, missing_alpha_defaults, seconds_to_duration, selector_terms)
from migrator.sources import hcl, yaml as yamlsrc
from migrator.sources.templates import mask
from migrator.validate import to_plain, validate_object


# -- templates ----------------------------------------------------------------------------------
def test_mask_round_trips_and_keeps_escapes():
    text = 'a: ${var.x}\nb: "${jsonencode({k = "}"})}"\nc: $${literal}\n  %{ if x ~}\nd: %{ if y }1%{ endif }\n'
    m = mask(text)
    assert "$${literal}" in m.text
    assert "${" not in m.text.replace("$${", "")
    assert [d.word for d in m.directives] == ["if"]
    assert m.directives[0].index == 3
    assert m.unmask(m.text).replace("#__MIGDIR_0__", "%{ if x ~}") == text


def test_masked_template_parses_as_yaml():
    m = mask("values: ${jsonencode(var.zones)}\nlabels:\n  %{ for k, v in l ~}\n  ${k}: ${v}\n  %{ endfor ~}\n")
    obj = yamlsrc.load(m.text)
    assert m.is_token(obj["values"]) and len(obj["labels"]) == 1


# -- HCL ------------------------------------------------------------------------------------------
def test_hcl_spans_and_heredoc_indent():
    text = 'resource "kubectl_manifest" "x" {\n  yaml_body = <<-YAML\n    kind: A\n      x: 1\n  YAML\n}\n'
    f = hcl.parse(text)
    (b,) = f.blocks
    assert b.address == "kubectl_manifest.x" and text[b.start:b.end].endswith("}")
    h = b.attr("yaml_body").heredoc
    assert h.trim and h.indent == 4 and text[h.body_start:h.body_end] == "    kind: A\n      x: 1\n"


def test_hcl_parse_error_has_line():
    with pytest.raises(hcl.HclParseError) as e:
        hcl.parse('resource "a" "b" {\n  x = \n}\n')
    assert e.value.line >= 2


def test_render_value_interpolates_tokens():
    out = hcl.render_value({"a": "__MIG_0__s", "b": "${x}"}, {"__MIG_0__": "var.ttl"})
    assert 'a = "${var.ttl}s"' in out and 'b = "$${x}"' in out


# -- edits ----------------------------------------------------------------------------------------
def test_apply_edits_and_conflicts():
    assert apply_edits("abcdef", [TextEdit("f", 1, 3, "X", "r"), TextEdit("f", 6, 6, "!", "r")]) == "aXdef!"
    with pytest.raises(EditConflict):
        apply_edits("abcdef", [TextEdit("f", 1, 4, "X", "r1"), TextEdit("f", 3, 5, "Y", "r2")])


# -- conversion facts ---------------------------------------------------------------------------------
@pytest.mark.parametrize("secs,dur", [(2592000, "720h"), (30, "30s"), (90, "1m30s"), (3600, "1h"), (0, "0s"),
                                      ("__MIG_3__", "__MIG_3__s"), ("x", None), (-1, None)])
def test_seconds_to_duration(secs, dur):
    assert seconds_to_duration(secs) == dur


def test_selector_cartesian_order_matches_karpenter_convert():
    notes = []
    terms = selector_terms({"karpenter.sh/discovery-1": "a,b,c", "karpenter.sh/discovery-2": "d,e"}, "subnet",
                           ("spec", "subnetSelector"), notes)
    assert [dict(t["tags"]) for t in terms][:3] == [
        {"karpenter.sh/discovery-1": "a", "karpenter.sh/discovery-2": "d"},
        {"karpenter.sh/discovery-1": "b", "karpenter.sh/discovery-2": "d"},
        {"karpenter.sh/discovery-1": "c", "karpenter.sh/discovery-2": "d"}]
    assert len(terms) == 6 and not notes


@pytest.mark.parametrize("selector,code", [({"aws::owners": "self"}, "MIG-NC-006"),
                                           ({"aws-ids": "ami-1", "Name": "x"}, "MIG-NC-005"),
                                           ({"Name": ""}, "MIG-NC-004")])
def test_selectors_rejected_by_v1beta1_become_errors(selector, code):
    notes = []
    assert selector_terms(selector, "ami", ("spec", "amiSelector"), notes) is None
    assert [n.code for n in notes] == [code]


def _prov(**spec):
    return CommentedMap(apiVersion="karpenter.sh/v1alpha5", kind="Provisioner", metadata={"name": "p"},
                        spec={"providerRef": {"name": "p"}, "requirements": [], **spec})


def test_disruption_mapping():
    np, _ = convert_provisioner(_prov(consolidation={"enabled": True}, ttlSecondsUntilExpired=2592000))
    assert dict(np.obj["spec"]["disruption"]) == {"consolidationPolicy": "WhenUnderutilized", "expireAfter": "720h"}
    np, _ = convert_provisioner(_prov(ttlSecondsAfterEmpty=30))
    assert dict(np.obj["spec"]["disruption"]) == {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "30s",
                                                  "expireAfter": "Never"}
    np, _ = convert_provisioner(_prov())
    assert np.obj["spec"]["disruption"]["consolidateAfter"] == "Never"
    assert validate_object(np.obj) == []


def test_keep_alpha_defaults_adds_webhook_requirements():
    np, _ = convert_provisioner(_prov(), keep_alpha_defaults=True)
    keys = [r["key"] for r in np.obj["spec"]["template"]["spec"]["requirements"]]
    assert keys == ["kubernetes.io/os", "kubernetes.io/arch", "karpenter.sh/capacity-type",
                    "karpenter.k8s.aws/instance-category", "karpenter.k8s.aws/instance-generation"]
    assert missing_alpha_defaults(np.obj["spec"]["template"]["spec"]["requirements"]) == []


def test_nodeclass_without_role_is_not_generated():
    src = CommentedMap(apiVersion="karpenter.k8s.aws/v1alpha1", kind="AWSNodeTemplate", metadata={"name": "n"},
                       spec={"subnetSelector": {"a": "b"}, "securityGroupSelector": {"a": "b"}})
    assert convert_nodeclass(src).obj is None
    assert validate_object(convert_nodeclass(src, role="r").obj) == []


# -- validation catches what the CRD rejects ----------------------------------------------------------
def test_validation_runs_cel_rules():
    np, _ = convert_provisioner(_prov())
    obj = to_plain(np.obj)
    obj["spec"]["template"]["spec"]["requirements"] = [{"key": "karpenter.sh/provisioner-name", "operator": "Exists"}]
    obj["spec"]["disruption"] = {"consolidationPolicy": "WhenUnderutilized", "consolidateAfter": "30s"}
    obj["spec"]["weight"] = 500
    errs = " | ".join(validate_object(obj))
    assert "restricted" in errs or "karpenter.sh" in errs
    assert "consolidateAfter cannot be combined" in errs
    assert "above the maximum" in errs


def test_validation_skips_placeholders_only():
    np, _ = convert_provisioner(_prov(ttlSecondsAfterEmpty="__MIG_1__"))
    assert validate_object(np.obj) == []
    obj = to_plain(np.obj)
    obj["spec"]["template"]["spec"]["unknownField"] = "__MIG_2__"
    assert any("unknown field" in e for e in validate_object(obj))


def test_a_tagged_value_is_a_validation_error_never_an_internal_one():
    """A value with an explicit YAML tag (`!x 30s`, found by the fuzz run) is said by the schema check; it used to
    reach the CEL rules' JSON encoding and end the rule with an internal error."""
    from migrator.sources import yaml as yamlsrc
    obj = yamlsrc.load("apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata:\n  name: batch\nspec:\n  disruption:\n"
                       "    consolidateAfter: !x 30s\n  template:\n    spec:\n      nodeClassRef: {group: karpenter.k8s.aws,"
                       " kind: EC2NodeClass, name: default}\n      requirements: []\n")
    errs = validate_object(obj)
    assert errs == ["spec.disruption.consolidateAfter: the value carries an explicit YAML tag (!x '30s'), which "
                    "migrator cannot check or carry: remove the tag"]


# -- discovery and apply --------------------------------------------------------------------------------
def test_discovery_skips_vcs_binary_and_escaping_symlinks(tmp_path):
    (tmp_path / ".terraform").mkdir()
    (tmp_path / ".terraform" / "x.tf").write_text("karpenter")
    (tmp_path / "bin.yaml").write_bytes(b"\0\1karpenter")
    (tmp_path / "ok.yaml").write_text("kind: Provisioner\n")
    outside = tmp_path.parent / "outside.yaml"
    outside.write_text("kind: Provisioner\n")
    os.symlink(outside, tmp_path / "link.yaml")
    d = discover(tmp_path)
    assert list(d.files) == ["ok.yaml"]
    reasons = {s.path: s.reason for s in d.skipped}
    assert "binary" in reasons["bin.yaml"] and "symlink" in reasons["link.yaml"]


def test_discovery_order_modes_and_special_files(tmp_path):
    """Files in sorted order, a folder's own before its subfolders' (os.walk's top-down order, which every reader
    and the plan's output follow); a symlink inside the root followed, a symlinked folder not; a FIFO never opened."""
    for rel in ("b.yaml", "a/z.tf", "a/b/c.yaml", "a.tf", "c/x.yaml"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x: 1\n")
    (tmp_path / "a.tf").chmod(0o600)
    os.symlink(tmp_path / "b.yaml", tmp_path / "a" / "link.yaml")
    os.symlink(tmp_path / "c", tmp_path / "d")
    os.mkfifo(tmp_path / "pipe.yaml")
    d = discover(tmp_path)
    assert list(d.files) == ["a.tf", "b.yaml", "a/link.yaml", "a/z.tf", "a/b/c.yaml", "c/x.yaml"]
    assert d.files["a/link.yaml"].text == "x: 1\n" and (d.files["a.tf"].mode & 0o777) == 0o600
    reasons = {s.path: s.reason for s in d.skipped}
    assert reasons == {"d": "symlinked directory (not followed)", "pipe.yaml": "not a regular file"}



@pytest.mark.parametrize("max_bytes", [100, 65536, 200_000])
def test_discovery_reads_whole_files_up_to_the_limit(tmp_path, max_bytes):
    """A small file is read in one call, a larger one to its end; a file over the limit is skipped whatever its size
    against the first read (just over, at the first read's size, past it); the mode of a file read in one call is
    looked up when asked."""
    sizes = {"small.yaml": 10, "edge.yaml": 65536, "big.yaml": 150_000, "limit.yaml": max_bytes,
             "over.yaml": max_bytes + 1}
    for name, n in sizes.items():
        (tmp_path / name).write_text(("k: v\n" * (n // 5 + 1))[:n])
    (tmp_path / "small.yaml").chmod(0o640)
    d = discover(tmp_path, max_bytes=max_bytes)
    for name, n in sizes.items():
        if n <= max_bytes:
            assert len(d.files[name].text) == n, name
        else:
            assert name not in d.files, name
    assert {s.path for s in d.skipped} == {name for name, n in sizes.items() if n > max_bytes}
    assert all(s.reason == f"larger than {max_bytes} bytes" for s in d.skipped)
    assert d.files["small.yaml"].mode & 0o777 == 0o640

def test_apply_refuses_files_changed_since_plan(tmp_path):
    (tmp_path / "a.yaml").write_text("x: 1\n")
    with pytest.raises(ApplyError):
        apply_changes(tmp_path, [FileChange("a.yaml", "modify", "x: 0\n", "x: 2\n")])
    assert (tmp_path / "a.yaml").read_text() == "x: 1\n"
    with pytest.raises(ApplyError):
        apply_changes(tmp_path, [FileChange("../evil.yaml", "create", None, "x")])


def test_apply_keeps_mode_and_bom(tmp_path):
    p = tmp_path / "a.yaml"
    p.write_bytes(b"\xef\xbb\xbfx: 1\n")
    p.chmod(0o640)
    apply_changes(tmp_path, [FileChange("a.yaml", "modify", "x: 1\n", "x: 2\n")])
    assert p.read_bytes() == b"\xef\xbb\xbfx: 2\n" and (p.stat().st_mode & 0o777) == 0o640
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".migrator")]


def test_plain_heredoc_keeps_column_zero_body(tmp_path):
    """`<<YAML` (no dash): the body is not dedented and the new block's body stays at column 0."""
    (tmp_path / "main.tf").write_text(
        'resource "kubectl_manifest" "provisioner" {\n  yaml_body = <<YAML\napiVersion: karpenter.sh/v1alpha5\n'
        'kind: Provisioner\nmetadata:\n  name: default\nspec:\n  providerRef:\n    name: default\nYAML\n}\n')
    from migrator.plan import make_plan
    plan = make_plan(tmp_path)
    (c,) = plan.changes
    assert '+resource "kubectl_manifest" "nodepool" {\n+  yaml_body = <<YAML\n+apiVersion: karpenter.sh/v1beta1\n' in c.diff
    assert "+YAML\n" in c.diff


def test_object_built_from_an_expression_is_reported_not_rewritten(tmp_path):
    """Issue 9: `spec = each.value.spec` is a manual step, never a traceback or a half-rewritten object."""
    from migrator.plan import make_plan
    (tmp_path / "main.tf").write_text(
        'resource "kubernetes_manifest" "nodepool" {\n  for_each = var.nodepools\n  manifest = {\n'
        '    apiVersion = "karpenter.sh/v1beta1"\n    kind       = "NodePool"\n    metadata = {\n'
        '      name = each.key\n    }\n    spec = each.value.spec\n  }\n}\n')
    plan = make_plan(tmp_path, to="v1", phase="manifests")
    assert plan.changes == []
    (f,) = [f for f in plan.findings if f.code == "MIG-SRC-008"]
    assert (f.path, f.line) == ("main.tf", 9) and "each.value.spec" in f.message
    assert not [f for f in plan.findings if f.code == "MIG-INT-001"]


def test_plain_words_need_no_quotes_unless_a_resolver_reads_them():
    # the fast path for plain words agrees with a YAML parse of `k: <word>`; YAML 1.1's bool words, which
    # Kubernetes reads as bools, are quoted too
    from ruamel.yaml import YAML
    safe = YAML(typ="safe", pure=True)
    yaml11 = {"yes", "no", "on", "off", "y", "n"}
    words = ["default", "k8s.io/arch", "al2023", "x-1_y.z", "Yes", "on", "OFF", "NULL", "True", "n", "e1", "inf"]
    for w in words:
        plain = yamlsrc._plain_ok(w, False)
        assert plain == (safe.load(f"k: {w}\n")["k"] == w and w.lower() not in yaml11), w
    assert yamlsrc.format_scalar("on") == '"on"' and yamlsrc.format_scalar("Yes") == '"Yes"'
    assert yamlsrc.format_scalar("default") == "default"


ALIGNED = '''resource "x" "y" {
  apiVersion = "a"
  kind       = "K"
  body       = <<-EOT
    weird  = spacing
  EOT
}
'''


def _edit(text: str, old: str, new: str) -> tuple[str, list]:
    from migrator.edits import apply_edits_at
    i = text.index(old)
    return apply_edits_at(text, [TextEdit("m.tf", i, i + len(old), new, "r")])


def test_an_edited_run_is_realigned_as_terraform_fmt_does():
    from migrator.placement import realign_edited
    new, spans = _edit(ALIGNED, "apiVersion", "group")
    got = realign_edited(ALIGNED, new, spans)
    assert '  group = "a"\n  kind  = "K"\n  body  = <<-EOT\n' in got        # as terraform fmt writes it
    assert "    weird  = spacing\n" in got                 # a heredoc body is never touched


def test_an_author_who_aligns_otherwise_keeps_every_byte_outside_the_edit():
    from migrator.placement import realign_edited
    mine = ALIGNED.replace('kind       = "K"', 'kind = "K"')
    new, spans = _edit(mine, "apiVersion", "group")
    assert realign_edited(mine, new, spans) == new


def test_a_line_made_multi_line_realigns_the_run_below_it():
    """`amiFamily = "AL2"` becoming a multi-line `amiSelectorTerms = [...]` splits its run: the attribute after it is
    a run of its own, padded as terraform fmt pads it (no longer aligned to the old neighbours)."""
    from migrator.placement import realign_edited
    old = '  spec = {\n    amiFamily = "AL2"\n    role      = "r"\n  }\n'
    s = old.index('amiFamily')
    e = old.index('\n', s)
    new = old[:s] + 'amiSelectorTerms = [\n      { alias = "al2@latest" },\n    ]' + old[e:]
    got = realign_edited(old, new, [(s, s + len('amiSelectorTerms = [\n      { alias = "al2@latest" },\n    ]'))])
    assert got == '  spec = {\n    amiSelectorTerms = [\n      { alias = "al2@latest" },\n    ]\n    role = "r"\n  }\n'


def test_an_attribute_opening_a_heredoc_is_in_its_run_as_terraform_fmt_aligns_it():
    """terraform fmt aligns `count` with `yaml_body = <<-YAML` and the attribute after the heredoc's end; the body's
    own lines never take part (a file written that way is aligned, and migrator's edits keep it so)."""
    from migrator.placement import align_attributes, _attribute_runs
    text = ('resource "x" "y" {\n  count = 1\n  yaml_body = <<-YAML\n    a = b\n  YAML\n  depends_on = [x]\n}\n')
    assert _attribute_runs(text.splitlines(keepends=True)) == [[1, 2, 5]]
    assert align_attributes(text) == ('resource "x" "y" {\n  count      = 1\n  yaml_body  = <<-YAML\n    a = b\n'
                                      '  YAML\n  depends_on = [x]\n}\n')


def test_keys_added_to_a_json_style_object_use_its_colons():
    """jsonencode({...}) written the JSON way (`key : value`): an added or moved key is written the same way."""
    from migrator.sources import hcl as hclsrc
    from migrator.sources import keytree
    text = 'x = jsonencode({\n  settings : {\n    aws : {\n      clusterName : "a"\n    }\n  }\n})\n'
    obj = hclsrc.encoded_object(hclsrc.parse(text).attributes["x"].expr)
    tree = keytree.hcl_tree(text, "x.tf", obj)
    assert tree.assign == " : "
    out = keytree.rewrite(tree, [keytree.Op("rename", ("settings", "aws", "clusterName"), ("settings", "clusterName")),
                                 keytree.Op("add", dst=("replicas",), value=2)])
    got = text
    for s, e, t in sorted(out.edits, reverse=True):
        got = got[:s] + t + got[e:]
    assert "  replicas : 2\n" in got and "    clusterName : \"a\"\n" in got and " = " not in got.split("(", 1)[1]


def test_twin_statement_is_aligned_as_terraform_fmt_does(tmp_path):
    """A twin copies its statement; the copy is new text, so its `=` follow terraform fmt even when the author's
    statement does not (a multi-line value ends the run)."""
    from migrator.plan import make_plan
    (tmp_path / "iam.tf").write_text(
        'data "aws_iam_policy_document" "karpenter" {\n  statement {\n    sid       = "AllowScopedDeletion"\n'
        '    actions   = ["ec2:TerminateInstances"]\n    resources = [\n      "arn:aws:ec2:eu-west-1:*:instance/*",\n'
        '    ]\n    condition {\n      test     = "StringLike"\n'
        '      variable = "ec2:ResourceTag/karpenter.sh/provisioner-name"\n      values   = ["*"]\n    }\n  }\n}\n')
    (tmp_path / "p.yaml").write_text("apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata:\n  name: d\n"
                                     "spec:\n  providerRef:\n    name: d\n")
    (c,) = [c for c in make_plan(tmp_path, options=None).changes if c.path == "iam.tf"]
    twin = c.new.split('"AllowScopedDeletionNodePool"')[0].rsplit("statement {", 1)[1] + '"AllowScopedDeletionNodePool"'
    after = c.new.split('"AllowScopedDeletionNodePool"')[1]
    assert twin.strip().startswith('sid     = ') and after.startswith('\n    actions = ["ec2:TerminateInstances"]')
    assert '    sid       = "AllowScopedDeletion"\n' in c.new            # the author's statement keeps its bytes


def test_every_python_package_is_in_the_distribution():
    """pyproject lists packages by hand: a new rules package missing there works in a checkout and breaks
    `pip install .` (the installed command would not find it)."""
    import re
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    block = re.search(r"^packages = \[(.*?)\]", (root / "pyproject.toml").read_text(), re.S | re.M).group(1)
    listed = set(re.findall(r'"([^"]+)"', block))
    found = {".".join(p.parent.relative_to(root).parts) for p in (root / "migrator").rglob("__init__.py")}
    assert found - listed == set()
