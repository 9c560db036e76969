"""sources/anchored.py: a pattern searched from its literal start, its anchor checked by looking back, finds what the
anchored regular expression finds (random texts built from the pieces that make anchors hold or fail)."""
from __future__ import annotations

import random
import re

import pytest

from migrator.cas import _cas_value_in
from migrator.sources.anchored import AtLineStart, AtWordStart

PIECES = ["kind:", " ", "\t", "\n", "\r\n", "x", "Kustomization", "'", '"', "\x0c", "#", "-", "é",
          "kind: Kustomization\n", "---", "..."]


def _texts(n: int, pieces=PIECES, most: int = 9):
    rnd = random.Random(7)
    return ["".join(rnd.choice(pieces) for _ in range(rnd.randint(0, most))) for _ in range(n)]


@pytest.mark.parametrize("body, lead", [
    (r"kind:\s*['\"]?Kustomization['\"]?\s*$", None),       # ^\s*  (blank lines before it too)
    (r"kind:[ \t]*x", " \t"),                                # ^[ \t]*
    (r"---[ \t]*(?:#.*)?$", ""),                             # ^
])
def test_at_line_start_finds_what_the_anchored_pattern_finds(body, lead):
    anchor = "^" + ("" if lead == "" else r"\s*" if lead is None else r"[ \t]*")
    ref, ours = re.compile(anchor + body, re.M), AtLineStart(body, lead)
    assert ours.pattern == anchor + body
    for t in _texts(20000):
        want, got = ref.search(t), ours.search(t)
        assert bool(want) == bool(got), repr(t)
        assert want is None or want.end() == got.end(), repr(t)
        assert [m.end() for m in ref.finditer(t)] == [m.end() for m in ours.finditer(t)], repr(t)


def test_at_word_start_finds_what_the_word_boundary_finds():
    ref, ours = re.compile(r"\bkind\b|\bhelmCharts\b"), AtWordStart(r"kind\b|helmCharts\b")
    for t in _texts(20000, ["kind", "helmCharts", "x", "_", " ", "é", ":", "1"], 7):
        assert bool(ref.search(t)) == bool(ours.search(t)), repr(t)


def test_the_cluster_autoscaler_value_test_keeps_its_lookbehind():
    ref = re.compile(r"(?:(?<=/)|(?<![\w./-]))cluster-autoscaler(?![\w./-])")
    for t in _texts(20000, ["cluster-autoscaler", "/", ".", "-", "_", "x", " ", "é", ":", "\n", "1"], 6):
        assert bool(ref.search(t)) == _cas_value_in(t), repr(t)
