"""The two HCL parsers behind `migrator.sources.hcl`: tree-sitter-hcl reads every file, python-hcl2 checks every
patched file again before it is written. Both must give the same span model."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from migrator.apply import ApplyError, apply_changes
from migrator.edits import FileChange
from migrator.sources import hcl, hcl_lark
from migrator.validate import reparse, second_parser

ROOT = Path(__file__).resolve().parents[1]
HCL_FILES = sorted(p for p in (ROOT / "fixtures").rglob("*") if p.suffix in (".tf", ".tfvars") and p.is_file())


def _model(f: hcl.HclFile):
    """The model as plain data; a string's literal pieces may be cut differently by the two parsers (one token
    per escape in Lark), so a string's parts are compared as their joined text and whether any is interpolated."""
    def norm(x):
        if isinstance(x, dict):
            out = {k: norm(v) for k, v in x.items()}
            if "parts" in out and out.get("kind") == "string":
                out["parts"] = ("".join(t for _, t in x["parts"]), any(i for i, _ in x["parts"]))
            return out
        if isinstance(x, (list, tuple)):
            return [norm(v) for v in x]
        return x
    return norm(dataclasses.asdict(f))


def test_fixtures_hold_hcl_files():
    assert len(HCL_FILES) > 50


@pytest.mark.parametrize("path", HCL_FILES, ids=lambda p: str(p.relative_to(ROOT / "fixtures")))
def test_both_parsers_give_the_same_model(path):
    text = path.read_text(encoding="utf-8")
    assert _model(hcl.parse(text)) == _model(hcl_lark.parse(text))


EDGE = '''// leading comment
/* block
   comment */
locals {
  name   = "café-☃" # non-ASCII before later spans
  neg    = -1
  cond   = var.enabled ? "a" : "b"
  list   = [for s in var.subnets : s.id if s.public]
  splat  = aws_instance.x[*].id
  idx    = var.m["key"].value
  paren  = (1 + 2) * 3
  tmpl   = "%{ for x in var.l }${x}, %{ endfor }"
  esc    = "a\\"b\\\\c$${lit}\\n"
  multi  = {
    "quoted key" = 1,
    plain        = true
  }
  call = trimspace(<<-EOT
    hello ${var.x}
    EOT
  )
}

resource "kubectl_manifest" "np" {
  yaml_body = <<-YAML
    kind: NodePool   # é
  YAML
  lifecycle { ignore_changes = [yaml_body] }
}
'''


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_tree_sitter_spans_are_exact_in_str_offsets(newline):
    text = EDGE.replace("\n", newline)
    f = hcl.parse(text)
    loc, res = f.blocks
    a = loc.attributes
    for attr in a.values():
        assert text[attr.expr.start:attr.expr.end] == attr.expr.source
        assert text[attr.start:attr.end].startswith(attr.name)
    assert a["name"].expr.value == "café-☃"                      # offsets are str offsets, not UTF-8 bytes
    assert a["neg"].expr.source == "-1"
    assert a["paren"].expr.source == "(1 + 2) * 3"               # (python-hcl2's span runs on over the newline)
    assert a["esc"].expr.value == 'a"b\\c${lit}\n'
    assert a["tmpl"].expr.value is None and a["tmpl"].expr.kind == "string"
    assert a["splat"].expr.kind == a["idx"].expr.kind == "ref"
    assert [e.key for e in a["multi"].expr.entries] == ["quoted key", "plain"]
    assert a["multi"].expr.entries[0].key_quoted
    call = a["call"].expr
    assert call.kind == "call" and call.name == "trimspace" and call.items[0].kind == "heredoc"
    assert call.items[0].source.endswith("EOT" + newline)       # a heredoc ends after its closing line break
    assert res.labels == ["kubectl_manifest", "np"] and res.address == "kubectl_manifest.np"
    body = res.attributes["yaml_body"].expr.heredoc
    assert text[body.body_start:body.body_end] == "    kind: NodePool   # é" + newline and body.trim
    assert res.blocks[0].type == "lifecycle" and text[res.blocks[0].body_start - 1] == "{"
    assert text[res.body_end] == "}" and text[res.end - 1] == "}"


@pytest.mark.parametrize("text,line", [
    ('resource "a" "b" {\n  x = 1\n', 3),          # unclosed block
    ('locals {\n  x = 1 }}\n', 2),                   # stray brace
    ('locals {\n  x =\n}\n', 2),                     # no value
    ('x = [1 2]\n', 1),                               # no comma
    ('x = <<EOF\nabc\n', 3),                          # heredoc never closed
])
def test_broken_files_are_errors_with_their_line(text, line):
    with pytest.raises(hcl.HclParseError) as e:
        hcl.parse(text)
    assert e.value.line == line and "does not parse" in str(e.value)
    with pytest.raises(hcl.HclParseError):
        hcl_lark.parse(text)                          # the second parser agrees the file is broken
    assert reparse("main.tf", text)


def test_second_parser_holds_back_a_write(tmp_path):
    old = 'locals {\n  x = 1\n}\n'
    (tmp_path / "main.tf").write_text(old)
    bad = FileChange("main.tf", "modify", old, 'locals {\n  x = 1 2\n}\n', ["test"])
    assert second_parser("main.tf", old, bad.new)
    with pytest.raises(ApplyError, match="python-hcl2"):
        apply_changes(tmp_path, [bad])
    assert (tmp_path / "main.tf").read_text() == old             # nothing written
    good = FileChange("main.tf", "modify", old, 'locals {\n  x = 2\n}\n', ["test"])
    assert apply_changes(tmp_path, [good]) == ["main.tf"]


def test_second_parser_gaps_do_not_block_a_file_it_never_read():
    # an original python-hcl2 cannot read is not held against the patched file (tree-sitter-hcl checked it)
    assert second_parser("main.tf", "x = [1 2]\n", "x = [1 2 3]\n") is None
    assert second_parser("values.yaml", "a: 1\n", "a: [\n") is None        # HCL only


def test_second_parser_reads_the_interpolations_a_patch_brings_to_a_file_it_never_read():
    """Where python-hcl2 reads neither version, each `${...}` the patch adds must still be an HCL expression:
    CloudFormation's `${AWS::AccountId}` (which tree-sitter-hcl accepts in a string) is refused; expressions with
    their own braces and interpolations already in the file pass."""
    old = 'x = [1 2]\ny = "${var.a}"\n'
    assert reparse("main.tf", 'z = "arn:aws:eks:*:${AWS::AccountId}:cluster/a"\n') is None   # tree-sitter-hcl
    assert "AWS::AccountId" in second_parser("main.tf", old, old + 'z = "arn:aws:eks:*:${AWS::AccountId}:cluster/a"\n')
    assert second_parser("main.tf", old, old + 'z = "${jsonencode({ a = 1 })}-${var.b}"\n') is None
    assert second_parser("main.tf", old, old + 'z = "$${AWS::AccountId}"\n') is None      # an escape, not a template
    assert second_parser("main.tf", 'x = "${AWS::Region}" [1 2]\n', 'x = "${AWS::Region}" [1 2 3]\n') is None


@pytest.mark.parametrize("text,written", [
    ('a"b ${var.x} c', '"a\\"b ${var.x} c"'),
    ('KarpenterIRSA-${local.c["name"]}', '"KarpenterIRSA-${local.c["name"]}"'),     # the expression's quotes kept
    ('x ${ {a = 1}["a"] } y\nz', '"x ${ {a = 1}["a"] } y\\nz"'),
])
def test_quote_template_keeps_interpolations_as_written(text, written):
    assert hcl.quote_template(text) == written
    assert "x" in hcl.parse(f"x = {written}\n").attributes
