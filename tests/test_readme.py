"""The README is the contract: CI runs its first two `sh` blocks, and those are the install+plan and test commands."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _blocks() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return [b.strip() for b in re.findall(r"```sh\n(.*?)```", text, flags=re.S)]


def test_readme_commands_are_the_regular_install_and_the_tests():
    first, second = _blocks()[:2]
    assert first.startswith("pip install . && migrator plan fixtures/")
    assert (ROOT / first.split()[-1]).is_dir()
    assert second == 'pip install ".[test]" && python -m pytest'
    assert "-e" not in first.split() and "-e" not in second.split()


def test_ci_runs_the_readme_blocks_verbatim():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert 're.findall(r"```sh\\n(.*?)```"' in ci and "[:2]" in ci
    assert "pip install -e" not in ci and "install --quiet -e" not in ci


def test_templates_load_from_a_checkout():
    from migrator.templating import template_text
    assert "{%" in template_text("runbook.md.j2")
