"""The YAML trees migrator parses are shared by every reader of the same text (sources/yaml.py keeps one tree per text
and process), so no reader may change one: after whole plans over fixtures of every installer shape and both
targets, each tree read still equals a fresh parse of its text (values, types, positions, styles)."""
from __future__ import annotations

import pytest

from migrator.plan import make_plan
from migrator.sources import fastrt
from migrator.sources import yaml as yamlsrc

from .conftest import FIXTURES
from .test_fastrt import _same

SHAPES = ["argocd", "argocd-kustomize", "auto-mode-argocd", "auto-mode-eksctl-flux", "auto-mode-hybrid",
          "auto-mode-kustomize-overlays", "auto-mode-pool-chart", "cas-argocd", "cas-flux", "cas-kustomize",
          "gitops-flux", "helm-chart-beta", "helmfile-releases", "helm-values-files", "kustomize-overlays",
          "monorepo"]


def _fresh(text: str):
    return fastrt.load(text, yamlsrc._rt()) or yamlsrc._rt().load(text)


@pytest.mark.parametrize("name", SHAPES)
def test_no_reader_changes_a_shared_tree(name, monkeypatch):
    read: list[tuple[str, object]] = []
    real = yamlsrc.load

    def recording(text, *a, **kw):
        tree = real(text, *a, **kw)
        read.append((text, tree))
        return tree
    monkeypatch.setattr(yamlsrc, "load", recording)
    for to in ("latest", "auto-mode"):
        make_plan(FIXTURES / name / "input", to=to)
    assert read
    for text, tree in read:
        _same(tree, _fresh(text), (name, text[:60]))
