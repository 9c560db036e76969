"""The knowledge YAML is the source of truth; its JSON cache (by SHA-256) gives the same data, and a broken or
unwritable cache only costs time."""
from __future__ import annotations

import json

from migrator import knowledge


def _fresh(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    knowledge.load.cache_clear()


def test_cached_data_equals_the_yaml(monkeypatch, tmp_path):
    _fresh(monkeypatch, tmp_path)
    first = knowledge.load("hops")                       # parsed from YAML, cache written
    files = list((tmp_path / "migrator").glob("knowledge-hops-*.json"))
    assert len(files) == 1 and json.loads(files[0].read_text()) == first
    knowledge.load.cache_clear()
    assert knowledge.load("hops") == first               # read back from the cache
    knowledge.load.cache_clear()


def test_a_corrupt_cache_is_parsed_again(monkeypatch, tmp_path):
    _fresh(monkeypatch, tmp_path)
    want = knowledge.load("helm")
    for f in (tmp_path / "migrator").glob("knowledge-helm-*.json"):
        f.write_text("{not json")
    knowledge.load.cache_clear()
    assert knowledge.load("helm") == want
    knowledge.load.cache_clear()


def test_an_unwritable_cache_directory_is_not_an_error(monkeypatch, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")                              # the cache directory cannot be created below a file
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    knowledge.load.cache_clear()
    assert knowledge.load("minors")["minors"]
    knowledge.load.cache_clear()


def test_every_knowledge_file_is_kept_in_the_cache(monkeypatch, tmp_path):
    """A table that does not survive the JSON round trip (an integer mapping key) is parsed by the pure-Python YAML
    loader on every run: karpenter_module_inputs.yaml cost each plan 70 ms that way."""
    from importlib import resources
    _fresh(monkeypatch, tmp_path)
    names = sorted(p.name[:-5] for p in resources.files("migrator.knowledge").iterdir() if p.name.endswith(".yaml"))
    for name in names:
        knowledge.load(name)
    cached = {f.name.split("-")[1] for f in (tmp_path / "migrator").glob("knowledge-*.json")}
    assert cached >= set(names), f"not cached: {sorted(set(names) - cached)}"
    knowledge.load.cache_clear()


def test_a_mention_is_in_every_source_it_stands_for():
    """A row's `mention` is searched before its `source` pattern: every alternative of the pattern holds it, or a file
    calling the module would be passed over."""
    rows = [("helm_modules", r) for r in knowledge.load("helm_modules")] + \
        [("cas wrappers", r) for r in knowledge.load("cas")["wrappers"]]
    for where, r in rows:
        if "mention" in r:
            for alt in r["source"].split("|"):
                assert r["mention"] in alt.replace("\\", ""), (where, r["name"] if "name" in r else r, alt)
