"""Every HCL file migrator writes (the fixtures' expected trees) parses with HashiCorp's own parser.

The oracle is @cdktf/hcl2json (the Go HCL library compiled to WASM), installed by `.ci/run` with npm from
package.json. Without node or the package the test skips and says how to enable it.
"""
from __future__ import annotations

import shutil
import subprocess

import pytest

from .conftest import FIXTURES, ROOT

SCRIPT = ROOT / "scripts" / "hcl2json-check.js"
MODULE = ROOT / "node_modules" / "@cdktf" / "hcl2json"


def _written_hcl() -> list[str]:
    return sorted(str(p) for d in FIXTURES.glob("*/expected*") for p in d.rglob("*")
                  if p.suffix in (".tf", ".tfvars"))


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
