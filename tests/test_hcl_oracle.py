"""Every HCL file migrator writes (the fixtures' expected trees) parses with HashiCorp's own parser.

The oracle is @cdktf/hcl2json (the Go HCL library compiled to WASM), installed by `.ci/run` with npm from
package.json. Without node or the package the test skips and says how to enable it.
"""
from __future__ import annotations

import shutil
from pathlib import Path
import subprocess

import pytest

from .conftest import FIXTURES, ROOT

SCRIPT = ROOT / "scripts" / "hcl2json-check.js"
MODULE = ROOT / "node_modules" / "@cdktf" / "hcl2json"


def _written_hcl() -> list[str]:
    return sorted(str(p) for d in FIXTURES.glob("*/expected*") for p in d.rglob("*")
                  if p.suffix in (".tf", ".tfvars", ".hcl"))


@pytest.mark.skipif(shutil.which("node") is None or not MODULE.is_dir(),
                    reason="HCL oracle not installed: run `npm install` in the repository root (needs node)")
def test_every_written_hcl_file_parses_with_hashicorps_parser():
    files = _written_hcl()
    assert files
    out = subprocess.run(["node", str(SCRIPT), *files], capture_output=True, text=True, timeout=300, cwd=ROOT)
    lines = out.stdout.splitlines()
    assert len(lines) == len(files), out.stderr
    failed = [ln for ln in lines if not ln.startswith("ok ")]
    assert failed == [], "\n".join(failed)


FORMATTER = ROOT / "node_modules" / "@cdktf" / "hcl-tools"


def _fmt_states(files: list[str]) -> dict[str, bool]:
    out = subprocess.run(["node", str(ROOT / "scripts" / "hcl-fmt-check.js"), *files], capture_output=True,
                         text=True, timeout=300, cwd=ROOT)
    return {ln.split(" ", 1)[1]: ln.startswith("clean ") for ln in out.stdout.splitlines()}


@pytest.mark.skipif(shutil.which("node") is None or not FORMATTER.is_dir(),
                    reason="HCL formatter not installed: run `npm install` in the repository root (needs node)")
def test_files_that_were_fmt_clean_stay_fmt_clean():
    """`terraform fmt` (HashiCorp's formatter) leaves every written file alone when it left the input alone."""
    pairs = []
    for exp in FIXTURES.glob("*/expected*"):
        inp = exp.parent / "input"
        for p in exp.rglob("*"):
            if p.suffix in (".tf", ".tfvars", ".hcl"):
                pairs.append((str(inp / p.relative_to(exp)), str(p)))
    inputs = sorted({i for i, _ in pairs if Path(i).exists()})
    clean_inputs = {p for p, ok in _fmt_states(inputs).items() if ok}
    written = _fmt_states(sorted({o for i, o in pairs if i in clean_inputs or not Path(i).exists()}))
    dirty = sorted(p for p, ok in written.items() if not ok)
    assert written and dirty == [], "terraform fmt would change: " + ", ".join(dirty)
