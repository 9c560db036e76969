"""CI fit: --version, SARIF (validated against the SARIF 2.1.0 schema), GitHub annotations, -o FORMAT=FILE,
select/ignore, inline suppressions, the configuration file and MIGRATOR_* variables, `migrator rules`."""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from migrator.cli import app

from .conftest import ROOT

runner = CliRunner()
SARIF_SCHEMA = ROOT / "node_modules" / "@microsoft" / "jest-sarif" / "lib" / "schemas" / "sarif-2.1.0-rtm.5.json"


def _run(args, **kw):
    return runner.invoke(app, args, **kw)


def test_version():
    r = _run(["--version"])
    assert r.exit_code == 0 and r.output.startswith("migrator ")


@pytest.mark.skipif(not SARIF_SCHEMA.is_file(), reason="SARIF schema not installed: run `npm install` (needs node)")
def test_sarif_validates_against_the_2_1_0_schema(tree):
    import jsonschema
    root = tree("v1-raw-yaml")
    r = _run(["plan", str(root), "--format", "sarif"])
    doc = json.loads(r.output)
    jsonschema.validate(doc, json.loads(SARIF_SCHEMA.read_text()))
    results = doc["runs"][0]["results"]
    assert results and all(x["locations"][0]["physicalLocation"]["region"]["startLine"] >= 1
                           for x in results if "locations" in x and "region" in x["locations"][0]["physicalLocation"])
    again = json.loads(_run(["plan", str(root), "--format", "sarif"]).output)
    assert [x["partialFingerprints"] for x in again["runs"][0]["results"]] == \
        [x["partialFingerprints"] for x in results]


def test_github_annotations_and_output_files(tree, tmp_path):
    root = tree("v1-raw-yaml")
    sarif, md = tmp_path / "r.sarif", tmp_path / "RUNBOOK.md"
    r = _run(["plan", str(root), "--format", "github", "-o", f"sarif={sarif}", "-o", f"markdown={md}"])
    assert "::warning file=karpenter/nodeclasses.yaml,line=6,title=MIG-V1-NC-002::" in r.stdout
    assert json.loads(sarif.read_text())["version"] == "2.1.0" and md.read_text().startswith("# Karpenter")
    assert _run(["plan", str(root), "-o", "bogus"]).exit_code == 1


def test_select_ignore_and_inline_suppressions(tree):
    root = tree("v1-raw-yaml")
    d = json.loads(_run(["plan", str(root), "--format", "json", "--select", "MIG-V1-KL"]).output)
    assert {f["code"] for f in d["findings"]} == {"MIG-V1-KL-002", "MIG-V1-KL-006"}
    d = json.loads(_run(["plan", str(root), "--format", "json", "--ignore", "MIG-V1,MIG-HOP"]).output)
    assert not [f for f in d["findings"] if f["code"].startswith(("MIG-V1-", "MIG-HOP-"))]
    p = root / "karpenter" / "nodeclasses.yaml"
    text = p.read_text().replace("  amiFamily: AL2\n", "  amiFamily: AL2  # migrator: ignore[MIG-V1-NC-002] pinned by the AMI pipeline\n")
    p.write_text(text.replace("  amiFamily: Ubuntu\n", "  amiFamily: Ubuntu  # migrator: ignore[MIG-V1-NC-005]\n"))
    d = json.loads(_run(["plan", str(root), "--format", "json"]).output)
    (nc2,) = [f for f in d["findings"] if f["code"] == "MIG-V1-NC-002"]
    assert nc2["suppressed"] == "pinned by the AMI pipeline"
    (nc5,) = [f for f in d["findings"] if f["code"] == "MIG-V1-NC-005"]
    assert "suppressed" not in nc5                              # no reason: not applied
    assert any(f["code"] == "MIG-CFG-002" for f in d["findings"])


def test_configuration_file_environment_and_flags(tree):
    root = tree("v1-raw-yaml")
    (root / ".migrator.yaml").write_text("to: v1\nphase: manifests\nignore: [MIG-V1-NP]\nexclude: [karpenter/nodeclasses.yaml]\n")
    d = json.loads(_run(["plan", str(root), "--format", "json"]).output)
    assert d["phase"] == "manifests" and not [f for f in d["findings"] if f["code"].startswith("MIG-V1-NP-")]
    assert [c["path"] for c in d["changes"]] == ["karpenter/nodepools.yaml"] or d["changes"] == []
    assert any(f["code"] == "MIG-SRC-003" and f["path"] == "karpenter/nodeclasses.yaml" for f in d["findings"])
    d = json.loads(_run(["plan", str(root), "--format", "json"], env={"MIGRATOR_IGNORE": "MIG-SRC"}).output)
    assert not [f for f in d["findings"] if f["code"].startswith("MIG-SRC-")]
    d = json.loads(_run(["plan", str(root), "--format", "json", "--ignore", "MIG-HOP"],
                        env={"MIGRATOR_IGNORE": "MIG-SRC"}).output)     # the flag wins over the variable
    assert any(f["code"].startswith("MIG-SRC-") for f in d["findings"])


def test_malformed_configuration_names_file_and_line(tree):
    root = tree("v1-raw-yaml")
    (root / ".migrator.yaml").write_text("to: v1\nnode_rol: x\n")
    r = _run(["plan", str(root)])
    assert r.exit_code == 1 and ".migrator.yaml:2" in r.output and "node_rol" in r.output
    (root / ".migrator.yaml").write_text("to: [v1\n")
    r = _run(["plan", str(root)])
    assert r.exit_code == 1 and ".migrator.yaml:" in r.output


def test_pyproject_tool_section(tree):
    root = tree("v1-raw-yaml")
    (root / "pyproject.toml").write_text('[tool.migrator]\nselect = ["MIG-V1-KL"]\n')
    d = json.loads(_run(["plan", str(root), "--format", "json"]).output)
    assert {f["code"] for f in d["findings"]} <= {"MIG-V1-KL-002", "MIG-V1-KL-006"}


def test_rules_lists_every_code_and_rule():
    d = json.loads(_run(["rules", "--format", "json"]).output)
    codes = {f["code"] for f in d["findings"]}
    assert "MIG-V1-KL-002" in codes and "v1/manifests" in {r["rule"] for r in d["rules"]}
