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


def test_an_auto_mode_nodeclass_file_naming_nothing_else_is_read(tmp_path):
    """The object scan reads a file for the Karpenter kinds it names (the words its document filter looks for): an
    EKS Auto Mode NodeClass alone in a file, which names neither `karpenter` nor `NodePool`, used to be passed over."""
    from migrator.inventory.objects import scan_manifests
    from migrator.inventory.repo import Repo
    (tmp_path / "nodeclass.yaml").write_text(
        "apiVersion: eks.amazonaws.com/v1\nkind: NodeClass\nmetadata:\n  name: basic\nspec:\n  role: auto-node\n"
        "  subnetSelectorTerms:\n    - tags:\n        tier: private\n")
    (tmp_path / "unrelated.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n")
    ms = scan_manifests(Repo(tmp_path))
    assert [(m.path, m.kind) for m in ms] == [("nodeclass.yaml", "NodeClass")]
