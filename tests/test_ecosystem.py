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


def _script_env(tmp_path, **extra):
    import os
    import sys
    from pathlib import Path
    env = dict(os.environ, GITHUB_STEP_SUMMARY=str(tmp_path / "summary.md"), GITHUB_OUTPUT=str(tmp_path / "out"),
               PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    env.update(extra)
    return env


def test_github_action_script(tree, tmp_path):
    """The composite action's step: annotations on stdout, SARIF file, runbook in the job summary, fail-on policy."""
    import shutil
    import subprocess
    if shutil.which("bash") is None:
        pytest.skip("bash not found")
    root = tree("v1-raw-yaml")
    script = ROOT / "scripts" / "ci" / "github-action.sh"
    sarif = tmp_path / "m.sarif"
    r = subprocess.run(["bash", str(script)], capture_output=True, text=True, cwd=tmp_path,
                       env=_script_env(tmp_path, MIGRATOR_PATH=str(root), MIGRATOR_SARIF=str(sarif)))
    assert r.returncode == 2, r.stderr                      # changes pending fail the check by default
    assert "::warning file=karpenter/nodeclasses.yaml" in r.stdout
    assert json.loads(sarif.read_text())["version"] == "2.1.0"
    assert (tmp_path / "summary.md").read_text().startswith("# Karpenter migration runbook")
    assert "exit-code=2" in (tmp_path / "out").read_text()
    r = subprocess.run(["bash", str(script)], capture_output=True, text=True, cwd=tmp_path,
                       env=_script_env(tmp_path, MIGRATOR_PATH=str(root), MIGRATOR_SARIF=str(sarif), FAIL_ON="errors"))
    assert r.returncode == 0


def test_gitlab_code_quality_report(tree):
    root = tree("v1-raw-yaml")
    issues = json.loads(_run(["plan", str(root), "--format", "gitlab"]).output)
    assert issues and all({"description", "check_name", "fingerprint", "severity", "location"} <= set(i) for i in issues)
    assert {i["severity"] for i in issues} <= {"info", "minor", "major", "critical", "blocker"}


def test_pre_commit_hooks_and_action_call_the_cli_as_it_is():
    """The hook entries and the action's commands must run: their options exist (a dry check of the CLI)."""
    from ruamel.yaml import YAML
    hooks = YAML(typ="safe").load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert {h["id"] for h in hooks} == {"migrator-check", "migrator-apply"}
    for h in hooks:
        words = h["entry"].split()
        assert words[0] == "migrator"
        r = _run(words[1:] + ["--help"])
        assert r.exit_code == 0, h["entry"]
        for opt in (w for w in words[2:] if w.startswith("-")):
            assert opt in r.output, (h["id"], opt)
    action = YAML(typ="safe").load((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
