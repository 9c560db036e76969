"""Generated v1beta1 NodePools / EC2NodeClasses, written out in several YAML styles: the v1 rewrite's text edits
give exactly the object the rewrite validated, that object is valid for the v1 CRDs of 1.0 and the newest 1.x,
no byte outside an edit changes, and a second rewrite changes nothing."""
from __future__ import annotations

import difflib

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from migrator.edits import TextEdit, apply_edits
from migrator.rules.v1 import convert
from migrator.sources import keytree
from migrator.sources import yaml as yamlsrc
from migrator.validate import validate_object

name = st.from_regex(r"[a-z][a-z0-9-]{0,12}[a-z0-9]", fullmatch=True)
duration = st.sampled_from(["30s", "5m", "720h", "Never"])
requirement = st.fixed_dictionaries({
    "key": st.sampled_from(["karpenter.sh/capacity-type", "kubernetes.io/arch", "karpenter.k8s.aws/instance-family"]),
    "operator": st.just("In"), "values": st.lists(st.from_regex(r"[a-z0-9]{1,6}", fullmatch=True), min_size=1,
                                                   max_size=3)})


@st.composite
def nodepool(draw):
    ref = {"name": draw(name)}
    if draw(st.booleans()):
        ref = {"apiVersion": "karpenter.k8s.aws/v1beta1", "kind": "EC2NodeClass", **ref}
    tspec = {"nodeClassRef": ref, "requirements": draw(st.lists(requirement, min_size=1, max_size=3))}
    spec = {"template": {"spec": tspec}}
    if draw(st.booleans()):
        spec["template"]["metadata"] = {"labels": {"team": draw(name)}}
    dis = {}
    policy = draw(st.sampled_from([None, "WhenUnderutilized", "WhenEmpty"]))
    if policy:
        dis["consolidationPolicy"] = policy
    if policy == "WhenEmpty":
        dis["consolidateAfter"] = draw(st.sampled_from(["30s", "5m"]))
    if draw(st.booleans()):
        dis["expireAfter"] = draw(duration)
    if draw(st.booleans()):
        dis["budgets"] = [{"nodes": draw(st.sampled_from(["10%", "1", "0"]))}]
    if dis:
        spec["disruption"] = dis
    if draw(st.booleans()):
        spec["limits"] = {"cpu": draw(st.integers(1, 5000))}
    return {"apiVersion": "karpenter.sh/v1beta1", "kind": "NodePool", "metadata": {"name": draw(name)}, "spec": spec}


@st.composite
def nodeclass(draw):
    spec = {"amiFamily": draw(st.sampled_from(["AL2", "AL2023", "Bottlerocket", "Windows2022"])),
            "role": "KarpenterNodeRole-x", "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": draw(name)}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": draw(name)}}]}
    if draw(st.booleans()):
        spec["tags"] = {"team": draw(name)}
    if draw(st.booleans()):
        spec["metadataOptions"] = {"httpTokens": "required", "httpPutResponseHopLimit": 2}
    return {"apiVersion": "karpenter.k8s.aws/v1beta1", "kind": "EC2NodeClass", "metadata": {"name": draw(name)},
            "spec": spec}


def _text(obj, indent: int, seq: bool, comment: bool) -> str:
    text = yamlsrc.Emitter(yamlsrc.Style(indent=indent, indent_sequences=seq)).emit(obj).text
    if comment:     # a comment line before every top-level key: comments must survive the rewrite
        text = "".join(("# note\n" + ln) if ln[:1].isalpha() else ln for ln in text.splitlines(keepends=True))
    return text


def _rewrite(text: str, ops) -> tuple[str, object]:
    parsed = yamlsrc.load(text)
    tree = keytree.yaml_tree(text, "x.yaml", 0, len(text), parsed)
    tree.style = yamlsrc.detect_style(text)
    out = keytree.rewrite(tree, ops)
    assert not out.problems, out.problems
    return apply_edits(text, [TextEdit("x.yaml", s, e, t, "t") for s, e, t in out.edits]), parsed


def _check(obj, make_ops, indent, seq, comment):
    text = _text(obj, indent, seq, comment)
    parsed = yamlsrc.load(text)
    rw = make_ops(parsed)
    want = convert.apply_ops(parsed, rw.ops)
    for release in ("1.0.14", "1.14.1"):
        assert validate_object(want, release) == [], (release, want)
    new, _ = _rewrite(text, rw.ops)
    assert convert.plain(yamlsrc.load(new)) == convert.plain(want)
    if comment:
        assert new.count("# note") == text.count("# note")
    again, _ = _rewrite(new, make_ops(yamlsrc.load(new)).ops)
    assert again == new, "".join(difflib.unified_diff(new.splitlines(True), again.splitlines(True)))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodepool(), st.sampled_from([2, 4]), st.booleans(), st.booleans())
def test_nodepool_rewrite_matches_validated_object(obj, indent, seq, comment):
    _check(obj, lambda o: convert.nodepool_ops(o, drop_kubelet=True), indent, seq, comment)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodeclass(), st.sampled_from([2, 4]), st.booleans(), st.booleans())
def test_nodeclass_rewrite_matches_validated_object(obj, indent, seq, comment):
    _check(obj, lambda o: convert.nodeclass_ops(o), indent, seq, comment)
