"""The `migrator` command as a process (cli.run): it ends without tearing its objects down, so what it prints, the
files it writes and its exit code must be those of the in-process command, whole."""
from __future__ import annotations

import shutil
import subprocess
import sys

from typer.testing import CliRunner

from migrator.cli import app

from .conftest import read_tree

runner = CliRunner()


def _process(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "migrator", *args], capture_output=True, text=True, timeout=120,
                          **kw)


def test_plan_output_and_exit_codes_as_in_process(tree):
    root = tree("terraform-eks")
    for args in (["plan", str(root), "--format", "json"], ["plan", str(root), "--detailed-exitcode"],
                 ["plan", str(root), "--format", "markdown"]):
        inside = runner.invoke(app, args)
        proc = _process(*args)
        assert proc.returncode == inside.exit_code, args
        assert proc.stdout == inside.stdout, args          # the whole output, flushed before the process ends
    assert _process("plan", str(root), "--detailed-exitcode").returncode == 2


def test_usage_errors_keep_their_code_and_message(tmp_path):
    proc = _process("plan", str(tmp_path / "missing"))
    assert proc.returncode == runner.invoke(app, ["plan", str(tmp_path / "missing")]).exit_code != 0
    assert "no such file or directory" in " ".join((proc.stdout + proc.stderr).split())
    assert _process("--help").returncode == 0


def test_apply_write_writes_every_file_before_the_process_ends(tree, tmp_path):
    a = tree("terraform-eks")
    b = tmp_path / "copy"
    shutil.copytree(a, b, symlinks=True)
    before = read_tree(a)
    inside = runner.invoke(app, ["apply", str(a), "--write"])
    proc = _process("apply", str(b), "--write")
    assert proc.returncode == inside.exit_code
    assert read_tree(b) == read_tree(a) != before


def test_a_reader_that_goes_away_gets_no_traceback(tree):
    root = tree("terraform-eks")
    proc = subprocess.Popen([sys.executable, "-m", "migrator", "plan", str(root)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.read(1)
    proc.stdout.close()                                   # as `| head -c1` does
    err = proc.stderr.read().decode()
    proc.wait(120)
    assert "Traceback" not in err
