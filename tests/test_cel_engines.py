"""The CRDs' CEL rules run on Google's cel-cpp (cel-expr-python) where it is installed, else on cel-python.
Both must give the same answers wherever both can evaluate a rule."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from migrator import validate
from migrator.sources import yaml as yamlsrc
from migrator.validate import validate_object

ROOT = Path(__file__).resolve().parents[1]
cpp = pytest.importorskip("cel_expr_python.cel", reason="cel-expr-python has wheels for Python 3.11+ only")
pytest.importorskip("celpy")


def _rules() -> set[str]:
    rules: set[str] = set()

    def walk(s):
        if isinstance(s, dict):
            rules.update(v["rule"] for v in s.get("x-kubernetes-validations") or [])
            for v in s.values():
                walk(v)
        elif isinstance(s, list):
            for v in s:
                walk(v)
    for p in (ROOT / "migrator" / "knowledge" / "crds").rglob("*.json"):
        walk(json.loads(p.read_text(encoding="utf-8")))
    return rules


def _objects() -> list[dict]:
    """Every NodePool / EC2NodeClass the fixtures expect migrator to write as YAML."""
    out = []
    for p in sorted((ROOT / "fixtures").glob("*/expected*/**/*.yaml")):
        try:
            docs = yamlsrc.load_all_safe(p.read_text(encoding="utf-8"))
        except Exception:  # noqa: BLE001 - templates with placeholders
            continue
        out += [d for d in docs if isinstance(d, dict) and d.get("kind") in ("NodePool", "EC2NodeClass")
                and str(d.get("apiVersion", "")).startswith("karpenter.")]
    return out


def test_every_rule_of_every_packaged_crd_compiles_on_cel_cpp():
    rules = _rules()
    assert len(rules) > 50
    for r in rules:
        if "oldSelf" not in r:              # transition rules need the stored object: never run on new objects
            validate._cpp_program(r)        # raises on a rule cel-cpp cannot compile


def test_both_engines_agree_on_every_object_the_fixtures_expect(monkeypatch):
    seen: set[tuple[str, str]] = set()
    real = validate._cel_cached

    def record(rule, value_json, engine):
        seen.add((rule, value_json))
        return real(rule, value_json, engine)
    monkeypatch.setattr(validate, "_cel_cached", record)
    objs = _objects()
    assert len(objs) > 20
    for o in objs:
        validate_object(o)
    assert len({r for r, _ in seen}) > 20
    unknown_py = 0
    for rule, vj in seen:
        v = json.loads(vj)
        a, b = validate._cpp_eval(rule, v), validate._py_eval(rule, v)
        assert a is not None, rule                       # cel-cpp evaluates every rule on these objects
        if b is None:
            unknown_py += 1                              # cel-python lacks the strings extension (split)
        else:
            assert a == b, (rule, vj)
    assert unknown_py < len(seen)


@pytest.mark.parametrize("engine", ["cpp", "py"])
def test_rules_reject_what_the_api_server_rejects(engine, monkeypatch):
    monkeypatch.setenv("MIGRATOR_CEL", engine)
    assert validate.cel_engine() == engine
    np = {"apiVersion": "karpenter.sh/v1beta1", "kind": "NodePool", "metadata": {"name": "a"},
          "spec": {"template": {"spec": {"nodeClassRef": {"name": "default"}, "requirements": [
              {"key": "karpenter.sh/provisioner-name", "operator": "Exists"}]}},
                   "disruption": {"consolidationPolicy": "WhenUnderutilized", "consolidateAfter": "30s"}}}
    errs = " | ".join(validate_object(np))
    assert "consolidateAfter cannot be combined" in errs
    assert "restricted" in errs or "karpenter.sh" in errs


def test_cel_cpp_checks_the_alias_family_cel_python_could_not(monkeypatch):
    monkeypatch.setenv("MIGRATOR_CEL", "cpp")
    nc = {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": "a"},
          "spec": {"role": "r", "amiSelectorTerms": [{"alias": "ubuntu@latest"}],
                   "subnetSelectorTerms": [{"tags": {"a": "b"}}], "securityGroupSelectorTerms": [{"tags": {"a": "b"}}]}}
    assert any("alias" in e.lower() or "family" in e.lower() for e in validate_object(nc))
    nc["spec"]["amiSelectorTerms"] = [{"alias": "al2023@latest"}]
    assert validate_object(nc) == []
