"""Generated Provisioners / AWSNodeTemplates: every converted object validates, or a finding says why not."""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml.comments import CommentedMap

from migrator.rules.v1beta1.convert import convert_nodeclass, convert_provisioner
from migrator.validate import validate_object

name = st.from_regex(r"[a-z][a-z0-9-]{0,20}[a-z0-9]", fullmatch=True)
label_key = st.sampled_from(["team", "example.com/tier", "node.kubernetes.io/pool", "karpenter.sh/capacity-type",
                             "kubernetes.io/arch", "topology.kubernetes.io/zone", "karpenter.k8s.aws/instance-pods",
                             "karpenter.sh/provisioner-name", "karpenter.k8s.aws/instance-family"])
requirement = st.fixed_dictionaries({"key": label_key, "operator": st.sampled_from(["In", "NotIn", "Exists"]),
                                     "values": st.lists(st.from_regex(r"[a-z0-9]{1,8}", fullmatch=True), min_size=1,
                                                        max_size=3)})
taint = st.fixed_dictionaries({"key": st.sampled_from(["karpenter.sh/legacy", "dedicated", "gpu"]),
                               "effect": st.sampled_from(["NoSchedule", "NoExecute", "PreferNoSchedule"])})


def selector(id_prefix: str):
    """A selector of tags, or of ids with the prefix the v1beta1 CRD requires (sg-, subnet-, ami-)."""
    values = st.lists(st.from_regex(r"[a-z0-9*]{1,6}", fullmatch=True), min_size=1, max_size=3).map(",".join)
    ids = st.lists(st.from_regex(r"[0-9a-f]{4,8}", fullmatch=True), min_size=1, max_size=3) \
        .map(lambda xs: ",".join(f"{id_prefix}-{x}" for x in xs))
    tags = st.dictionaries(st.sampled_from(["karpenter.sh/discovery", "Name", "kubernetes.io/role"]), values,
                           min_size=1, max_size=2)
    return st.one_of(tags, ids.map(lambda v: {"aws-ids": v}))


@st.composite
def provisioner(draw):
    spec = CommentedMap()
    spec["requirements"] = draw(st.lists(requirement, max_size=5))
    if draw(st.booleans()):
        spec["taints"] = draw(st.lists(taint, min_size=1, max_size=2, unique_by=lambda t: t["key"]))
    if draw(st.booleans()):
        spec["labels"] = {"team": draw(name)}
    if draw(st.booleans()):
        spec["consolidation"] = {"enabled": draw(st.booleans())}
    elif draw(st.booleans()):
        spec["ttlSecondsAfterEmpty"] = draw(st.integers(0, 10 ** 6))
    if draw(st.booleans()):
        spec["ttlSecondsUntilExpired"] = draw(st.integers(1, 10 ** 8))
    if draw(st.booleans()):
        spec["weight"] = draw(st.integers(1, 100))
    if draw(st.booleans()):
        spec["limits"] = {"resources": {"cpu": draw(st.integers(1, 5000)), "memory": "100Gi"}}
    if draw(st.booleans()):
        spec["kubeletConfiguration"] = {"maxPods": draw(st.integers(1, 500)), "containerRuntime": "containerd"}
    if draw(st.booleans()):
        spec["provider"] = {"subnetSelector": draw(selector("subnet")), "securityGroupSelector": draw(selector("sg")),
                            "instanceProfile": "profile"}
    else:
        spec["providerRef"] = {"name": draw(name)}
    return CommentedMap(apiVersion="karpenter.sh/v1alpha5", kind="Provisioner", metadata={"name": draw(name)},
                        spec=spec)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(provisioner(), st.booleans())
def test_converted_provisioners_validate(src, keep):
    np, nc = convert_provisioner(src, keep_alpha_defaults=keep)
    for conv in [np] + ([nc] if nc else []):
        if conv.obj is None:
            assert any(n.severity == "error" for n in conv.notes)
            continue
        assert validate_object(conv.obj) == [], conv.obj
    # dropped data is always reported
    reqs = src["spec"]["requirements"]
    dropped = [r for r in reqs if r["key"] in ("karpenter.k8s.aws/instance-pods", "karpenter.sh/provisioner-name")]
    assert len([n for n in np.notes if n.code == "MIG-NP-001"]) == len(dropped)


@settings(max_examples=150, deadline=None)
@given(name, selector("subnet"), selector("sg"), st.one_of(st.none(), selector("ami")),
       st.sampled_from([None, "AL2", "Bottlerocket"]))
def test_converted_nodetemplates_validate(n, subnets, sgs, amis, family):
    spec = CommentedMap(subnetSelector=subnets, securityGroupSelector=sgs)
    if amis:
        spec["amiSelector"] = amis
    if family:
        spec["amiFamily"] = family
    src = CommentedMap(apiVersion="karpenter.k8s.aws/v1alpha1", kind="AWSNodeTemplate", metadata={"name": n},
                       spec=spec)
    conv = convert_nodeclass(src, role="KarpenterNodeRole")
    if conv.obj is None:
        assert any(x.severity == "error" for x in conv.notes)
    else:
        assert validate_object(conv.obj) == []
