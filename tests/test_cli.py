"""The CLI contract: JSON schema 1, exit codes, apply with and without --write, bad input."""
from __future__ import annotations

import json

from typer.testing import CliRunner

from migrator.cli import app
from migrator.model import STEP_KINDS

from .conftest import read_tree

runner = CliRunner()


def _json(args):
    r = runner.invoke(app, args)
    return r.exit_code, json.loads(r.stdout)


def test_plan_json_schema(tree):
    root = tree("terraform-eks")
    code, d = _json(["plan", str(root), "--format", "json"])
    assert code == 0
    assert {"schema", "root", "hop", "phase", "findings", "changes", "steps"} <= set(d)   # additions allowed
    assert d["schema"] == 2 and d["hop"] == {"from": "v1alpha5", "to": "v1beta1"} and d["phase"] == "prepare"
    for f in d["findings"]:
        assert set(f) == {"code", "severity", "path", "line", "message", "manual_step"}
        assert f["severity"] in ("error", "warning", "info") and not f["path"].startswith("/")
    assert {c["action"] for c in d["changes"]} <= {"modify", "create", "delete"}
    assert {c["path"] for c in d["changes"]} == {"karpenter.tf", "configs/karpenter-nodepool.yaml.tmpl", "dev.tfvars"}
    assert all(c["diff"].startswith("---") and c["rules"] for c in d["changes"])
    kinds = [s["kind"] for s in d["steps"]]
    assert set(kinds) <= set(STEP_KINDS) and {s["phase"] for s in d["steps"]} == {"prepare", "cleanup"}
    last_crds = max(i for i, k in enumerate(kinds) if k == "crds")
    assert all(i > last_crds for i, k in enumerate(kinds) if k == "chart")
    assert kinds.index("chart") < kinds.index("manifests") < kinds.index("roll-nodes")
    assert all({"id", "phase", "kind", "title", "detail", "commands", "files"} <= set(s) for s in d["steps"])


def test_detailed_exitcode_and_write(tree):
    root = tree("gitops-flux")
    before = read_tree(root)
    assert runner.invoke(app, ["plan", str(root), "--detailed-exitcode"]).exit_code == 2
    r = runner.invoke(app, ["apply", str(root)])
    assert r.exit_code == 0 and "dry run" in r.stdout and read_tree(root) == before
    assert runner.invoke(app, ["apply", str(root), "--write"]).exit_code == 0
    assert runner.invoke(app, ["plan", str(root), "--phase", "prepare", "--detailed-exitcode"]).exit_code == 0


def test_error_findings_exit_1(tree):
    root = tree("raw-yaml-edge")
    code, d = _json(["plan", str(root), "--format", "json"])
    assert code == 1
    codes = {f["code"] for f in d["findings"] if f["severity"] == "error"}
    assert {"MIG-NC-001", "MIG-NC-011"} <= codes
    lt = next(f for f in d["findings"] if f["code"] == "MIG-NC-001")
    assert lt["path"] == "karpenter/legacy-lt.yaml" and lt["line"] == 6 and lt["manual_step"]


def test_node_role_option_resolves_missing_role(tree):
    root = tree("raw-yaml-edge")
    code, d = _json(["plan", str(root), "--format", "json", "--node-role", "KarpenterNodeRole-dev"])
    assert not any(f["code"] == "MIG-NC-011" for f in d["findings"])
    new = next(c for c in d["changes"] if c["path"] == "karpenter/legacy-lt-v1beta1.yaml")
    assert "+  role: KarpenterNodeRole-dev" in new["diff"]


def test_far_target_plans_one_hop_and_lists_the_rest(tree, tmp_path):
    root = tree("gitops-flux")
    code, d = _json(["plan", str(root), "--format", "json", "--to", "latest"])
    assert d["hop"] == {"from": "v1alpha5", "to": "v1beta1"} and d["phase"] == "prepare"
    later = next(f for f in d["findings"] if f["code"] == "MIG-HOP-004")
    assert "v1beta1 → v1" in later["message"] and "1.14.1" in later["message"]
    assert d["path"] == ["v1beta1 → v1 (chart 1.0.14)", "v1 → 1.14.1 (chart 1.14.1)"]
    for bad in ("2.0", "1.99", "1.8.0", "v9"):
        r = runner.invoke(app, ["plan", str(root), "--to", bad])
        assert r.exit_code == 1, bad
    r = runner.invoke(app, ["plan", str(tmp_path / "missing")])
    assert r.exit_code == 1


def test_broken_file_is_reported_and_left_alone(tmp_path):
    (tmp_path / "main.tf").write_text('resource "kubectl_manifest" "x" {\n  yaml_body = \n')
    (tmp_path / "bad.yaml").write_text("kind: Provisioner\napiVersion: karpenter.sh/v1alpha5\n  : [\n")
    code, d = _json(["plan", str(tmp_path), "--format", "json"])
    assert code == 1
    paths = {(f["path"], f["code"]) for f in d["findings"] if f["severity"] == "error"}
    assert ("main.tf", "MIG-SRC-001") in paths and ("bad.yaml", "MIG-SRC-002") in paths
    assert d["changes"] == []


def test_helm_templated_manifest_is_converted_around_its_actions(tmp_path):
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "np.yaml").write_text(
        "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata:\n  name: {{ .Values.name }}\n"
        "spec:\n  providerRef:\n    name: {{ .Values.name }}\n")
    code, d = _json(["plan", str(tmp_path), "--format", "json"])
    assert not any(f["code"] == "MIG-SRC-004" for f in d["findings"])
    (new,) = [c for c in d["changes"] if c["action"] == "create"]
    assert new["path"].startswith("templates/") and "  name: {{ .Values.name }}\n" in new["diff"]


def test_helm_template_that_is_not_yaml_once_masked_is_reported(tmp_path):
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "np.yaml").write_text(
        "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata:\n  name: x\n  {{ if .a }}b: [\n")
    code, d = _json(["plan", str(tmp_path), "--format", "json"])
    assert [f["line"] for f in d["findings"] if f["code"] == "MIG-SRC-004"], d["findings"]
    assert d["changes"] == []


def test_explain():
    r = runner.invoke(app, ["explain", "MIG-NP-005"])
    assert r.exit_code == 0 and "alpha webhook" in r.stdout
    r = runner.invoke(app, ["explain", "v1beta1/helm"])
    assert r.exit_code == 0 and "values" in r.stdout
    assert runner.invoke(app, ["explain", "nope"]).exit_code == 1


def test_a_failing_rule_becomes_a_finding_and_the_rest_is_planned(tree, monkeypatch):
    """Never a traceback: a rule that raises is an error finding; the other rules' changes stand."""
    from migrator.rules import v1

    def boom(ctx, phase, done):
        raise KeyError("spec")
    monkeypatch.setitem(v1.RULES, "v1/workloads", (v1.workloads, boom))
    root = tree("v1-workloads")
    code, d = _json(["plan", str(root), "--format", "json", "--to", "v1", "--phase", "manifests"])
    assert code == 1
    (f,) = [f for f in d["findings"] if f["code"] == "MIG-INT-001"]
    assert "v1/workloads" in f["message"] and "KeyError" in f["message"]
    assert [c["path"] for c in d["changes"]] == ["karpenter/batch.yaml"]      # the manifests rule still ran


def test_saved_plan_applies_only_while_every_input_is_unchanged(tree, tmp_path):
    root = tree("v1-raw-yaml")
    saved = tmp_path / "plan.json"
    assert runner.invoke(app, ["plan", str(root), "--out", str(saved)]).exit_code == 0
    before = (root / "karpenter" / "nodepools.yaml").read_bytes()
    (root / "kustomization.yaml").write_text((root / "kustomization.yaml").read_text() + "# edited\n")
    r = runner.invoke(app, ["apply", str(saved), "--write"])
    assert r.exit_code == 1 and "changed since the plan was saved" in r.output
    assert (root / "karpenter" / "nodepools.yaml").read_bytes() == before          # nothing written
    (root / "kustomization.yaml").write_text((root / "kustomization.yaml").read_text().replace("# edited\n", ""))
    r = runner.invoke(app, ["apply", str(saved), "--write", "--backup"])
    assert r.exit_code == 0, r.output
    assert (root / "karpenter" / "nodepools.yaml.orig").read_bytes() == before
    assert b"karpenter.sh/v1\n" in (root / "karpenter" / "nodepools.yaml").read_bytes()
    code, d = _json(["plan", str(root), "--format", "json", "--to", "v1", "--phase", "manifests"])
    assert d["changes"] == []


def test_text_output_shows_repository_text_as_written_never_as_emoji(tmp_path):
    """rich turns `:warning:` into an emoji by default: a folder named `team:warning:` must print as written."""
    d = tmp_path / "team:warning:"
    d.mkdir()
    (d / "bad.yaml").write_text("kind: Provisioner\napiVersion: karpenter.sh/v1alpha5\n  : [\n")
    r = runner.invoke(app, ["plan", str(tmp_path)])
    assert "team:warning:/bad.yaml" in r.stdout and "\u26a0" not in r.stdout
