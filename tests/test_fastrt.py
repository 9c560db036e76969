"""The libyaml-scanned round-trip loader (migrator/sources/fastrt.py) gives ruamel's own tree: the same values and
types, key and item positions, flow styles; what it cannot reproduce is left to ruamel (None), so errors stay
ruamel's. Every YAML document of the fixtures is compared, and the shapes where the two scanners differ."""
from __future__ import annotations

import pytest
from ruamel.yaml.comments import CommentedMap, CommentedSeq

from migrator.sources import fastrt
from migrator.sources import yaml as yamlsrc
from migrator.sources.templates import TemplateError, mask

from .conftest import FIXTURES


def _same(a, b, path=()):
    assert type(a) is type(b), (path, a, b)
    if isinstance(a, (CommentedMap, CommentedSeq)):
        assert (a.lc.line, a.lc.col, a.lc.data) == (b.lc.line, b.lc.col, b.lc.data), path
        assert a.fa.flow_style() == b.fa.flow_style(), path
        assert len(a) == len(b), path
        if isinstance(a, CommentedMap):
            assert list(a) == list(b), path
            for k in a:
                _same(a[k], b[k], path + (k,))
        else:
            for i, (x, y) in enumerate(zip(a, b)):
                _same(x, y, path + (i,))
    elif type(a).__name__ == "TaggedScalar":
        assert (a.value, str(a.tag)) == (b.value, str(b.tag)), path
    else:
        assert a == b or (a != a and b != b), path


def _both(text: str):
    fast = fastrt.load(text, yamlsrc._rt())
    assert fast is not None, "the fast path should read this"
    _same(fast, yamlsrc._rt().load(text))
    return fast


@pytest.mark.parametrize("text", [
    "a: 1\nb: [x, 'y', \"z\"]\nc: {d: 1.50, e: 0o17, f: 0x1F}\ng: yes\nh: on\ni: ~\nj: 2024-01-02\n",
    "k: |\n  one\n  two\nl: >-\n  folded\n  text\nm: plain\n  continued\n",
    "spec:\n  taints:\n  # a comment\n    #__MIGDIR_0__\n  next: 1\n",
    "spec:\n  taints:\n  # trailing\nother: 2\n",
    "spec:\n  labels:\n    #__MIGDIR_0__",                      # no final line break
    "metadata:\n  kind:   # what\n  # more\n  name: x\n",
    "list:\n- a\n- b: 1\n  c:\n- [1, 2]\n",
    "a: 'it''s'\nb: \"\\u00e9\\t\"\nc: \"\"\nd: ''\n",
    "on:\n  workflow_dispatch:\n  push:\n    branches: [main]\n",
    "x: -.inf\ny: .NaN\nz: 1e3\nw: +12\nv: 1_000\n",
    # what libyaml reads more laxly, in lines that are whole comments: both scanners skip them
    'slack:\n  # {"title_link":"{{.app}}", "a":1}\n  #   tr -d \':\\n\'\n  enabled: true\n',
    "a: 1\n    # \"k\":v\nb: 2\n",
    # an escaped quote is inside a double-quoted scalar, which both read the same
    'ports: "[{\\"HTTP\\":80},{\\"HTTPS\\":443}]"\nb: 2\n',
    # a block scalar's text: JSON with no space after its colons (an Argo CD notifications template), tabs (a script)
    'data:\n  template.x: |\n    webhook:\n      body: |\n        {\n          "@type":"OpenUri",\n        }\nb: 2\n',
    'steps:\n  - script: >-\n      make\n      \tcut -d":" -f2\n  - b\n',
])
def test_the_fast_tree_is_ruamels(text):
    _both(text)


@pytest.mark.parametrize("text", [
    "a: &x 1\nb: *x\n",                     # anchors and aliases
    "base: &b {x: 1}\nd:\n  <<: *b\n",       # merge keys
    "a: !Ref thing\n",                      # explicit tags
    "a: 1\na: 2\n",                         # duplicate keys: ruamel's error
    "a: x\tb\n",                            # a tab: libyaml is laxer
    'a: ["name":"x"]\n',                     # JSON-style adjacency: libyaml is laxer
    'a: ["name":"x"] # "k":v\n',             # ... also where a comment follows it on its line
    '# "k":v\na: ["name":"x"]\n',           # ... also after a comment line that holds the same
    'a: |\n  text\nb: ["name":"x"]\n',      # ... also after a block scalar
    'a: x |\nb:\n  c: ["name":"x"]\n',      # ... and under a plain scalar that ends in `|`
    "- \n- a\n",                            # an empty item
    "{a: }\n",                              # an empty flow value
    "%YAML 1.1\n---\na: yes\n",             # a directive
    "a: [\n",                               # broken
    "",                                     # empty
])
def test_what_only_ruamel_can_say_is_left_to_it(text):
    assert fastrt.load(text, yamlsrc._rt()) is None


def test_a_broken_document_is_ruamels_error_with_its_line():
    with pytest.raises(yamlsrc.YamlParseError) as e:
        yamlsrc.load("a: 1\nb: [x\nc: 2\n")
    assert e.value.line == 3 and "YAML does not parse" in str(e.value)


def test_every_fixture_document_reads_the_same():
    read = 0
    for p in sorted(FIXTURES.rglob("*.y*ml")):
        for doc in yamlsrc.split_documents(p.read_text(encoding="utf-8")):
            try:
                text = mask(doc.text, helm="{{" in doc.text).text
            except TemplateError:
                continue
            fast = fastrt.load(text, yamlsrc._rt())
            if fast is None:
                continue
            _same(fast, yamlsrc._rt().load(text), (str(p), doc.first_line))
            read += 1
    assert read > 1000


@pytest.mark.parametrize("line, comment", [
    ("expireAfter: 1440h # 60 days ttl", "# 60 days ttl"),
    ("expireAfter: 'a # b' # quoted", "# quoted"),
    ("expireAfter: 'it''s' # doubled", "# doubled"),
    ('expireAfter: "x \\" # y"   # escaped', "# escaped"),
    ("expireAfter: a#b", None),
    ("expireAfter: 1440h", None),
])
def test_an_end_of_line_comment_is_read_from_the_text(line, comment):
    """The tree holds no comments (the fast path keeps none): the converter reads a scalar's end-of-line comment
    from the source at the scalar's position, to carry it to the converted object."""
    from migrator.rules.v1beta1.manifests import _eol_comment
    text = f"spec:\n  {line}\n  other: 1\n"
    obj = yamlsrc.load(text)
    assert _eol_comment(obj, ("spec", "expireAfter"), text.splitlines()) == comment


@pytest.mark.parametrize("text, expected", [
    ("a: 1\n---\nb: 2\n", [(0, 5, 0), (9, 14, 2)]),
    ("---\na: 1\n--- # next\nb: 2\n...\n", [(4, 9, 1), (20, 25, 3)]),
    ("a: 1\r\n---\r\nb: 2\r\n", [(0, 6, 0), (11, 17, 2)]),          # CRLF: read line by line
    ("a: 1\n---", [(0, 5, 0)]),                                      # a last separator with no line break
    ("# only a comment\n---\nb: 2\n", [(21, 26, 2)]),                 # a document of comments is dropped
    ("a: '---'\n ---\nb\n", [(0, 16, 0)]),                           # not a separator: indented
])
def test_documents_split_at_separator_lines(text, expected):
    assert [(d.start, d.end, d.first_line) for d in yamlsrc.split_documents(text)] == expected
