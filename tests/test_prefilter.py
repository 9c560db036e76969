"""A YAML file with no Karpenter content costs no more than reading it: no document of a CRD bundle is parsed."""
from __future__ import annotations

import importlib.util
from pathlib import Path

from migrator.plan import make_plan
from migrator.sources import yaml as yamlsrc

ROOT = Path(__file__).resolve().parents[1]


def _generator():
    spec = importlib.util.spec_from_file_location("generate", ROOT / "benchmarks" / "generate.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_flux_crd_bundle_is_never_parsed(tmp_path, monkeypatch):
    gen = _generator()
    gen.generate(tmp_path, 1, 20, bundle=True)
    bundle = next(tmp_path.rglob("gotk-components.yaml"))
    assert bundle.stat().st_size > 500_000 and "kind: HelmRelease" in bundle.read_text()
    parsed: list[str] = []
    real = yamlsrc.load

    def counting(text, *a, **kw):
        parsed.append(text)
        return real(text, *a, **kw)
    monkeypatch.setattr(yamlsrc, "load", counting)
    plan = make_plan(tmp_path)
    assert plan.roots and not [f for f in plan.findings if f.severity == "error"]
    assert not [t for t in parsed if "CustomResourceDefinition" in t], "a CRD of the bundle was parsed"
    assert parsed, "the cluster root's own YAML is still read"
