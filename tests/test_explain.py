"""`migrator explain CODE` (issue 59): what a finding means, why it matters, how to fix it by hand and a real
before/after, from the same data the docs pages are generated from."""
from __future__ import annotations

import importlib.util
from pathlib import Path

from markdown_it import MarkdownIt
from typer.testing import CliRunner

from migrator import knowledge
from migrator.cli import app
from migrator.explain import markdown, text

ROOT = Path(__file__).resolve().parents[1]


def test_every_code_is_explained_and_renders():
    for code in knowledge.load("findings"):
        t, md = text(code), markdown(code)
        assert code in t and "What it means" in t
        assert MarkdownIt("commonmark").render(md).startswith(f"<h1>{code}</h1>")


def test_the_curated_explanations_name_real_codes_and_say_why_and_how():
    catalogue = knowledge.load("findings")
    for code, e in knowledge.load("explain").items():
        assert code in catalogue, code
        assert e.get("why") and e.get("fix") and e.get("source"), code


def test_explain_prints_why_how_and_a_before_after():
    res = CliRunner().invoke(app, ["explain", "mig-v1x-helm-001"])
    assert res.exit_code == 0
    for part in ("Why it matters:", "How to fix it by hand:", "Source:", "Example (fixture", "Before / after:",
                 "+  version"):
        assert part in res.output, part


def test_the_examples_are_current():
    """knowledge/examples.json is what scripts/gen_examples.py makes from today's fixtures."""
    spec = importlib.util.spec_from_file_location("gen_examples", ROOT / "scripts" / "gen_examples.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert (ROOT / "migrator" / "knowledge" / "examples.json").read_text(encoding="utf-8") == mod.render(), \
        "migrator/knowledge/examples.json is stale: python scripts/gen_examples.py"
