"""Fields of v1 objects that no v1 CRD defines (v1beta1's kubelet left on a NodePool, a taint written with a
toleration's operator): the API server drops them, so they were never in effect. Found on five repositories of the
list (devyoushin/karpenter-practice, aws-samples/karpenter-blueprints, awslabs/data-on-eks, edenbarkan/infra-live,
StanleyBundi/terraform-eks-karpenter); said on every plan of a v1 root, never edited."""
from __future__ import annotations

from migrator.plan import make_plan

RELEASE = '''resource "helm_release" "karpenter" {{
  name       = "karpenter"
  repository = "oci://public.ecr.aws/karpenter"
  chart      = "karpenter"
  version    = "{chart}"
  namespace  = "kube-system"
}}
'''

POOLS = '''apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: gpu
spec:
  replicas: 2
  template:
    spec:
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: default
      requirements:
        - key: karpenter.k8s.aws/instance-family
          operator: In
          values: ["g6"]
      taints:
        - key: nvidia.com/gpu
          operator: Exists
          effect: NoSchedule
      kubelet:
        maxPods: 20
'''


def test_fields_no_v1_crd_defines_are_said_where_they_are(tmp_path):
    (tmp_path / "karpenter.tf").write_text(RELEASE.format(chart="1.14.1"))
    (tmp_path / "nodepools.yaml").write_text(POOLS)
    plan = make_plan(tmp_path)
    got = {(f.path, f.line): f for f in plan.findings if f.code == "MIG-V1X-OBJ-001"}
    assert set(got) == {("nodepools.yaml", 19), ("nodepools.yaml", 21)}       # replicas (1.8+) is a v1 field
    assert "spec.template.spec.kubelet" in got[("nodepools.yaml", 21)].message
    assert "EC2NodeClass (spec.kubelet)" in got[("nodepools.yaml", 21)].message
    assert "operator belongs to a toleration" in got[("nodepools.yaml", 19)].message
    assert all(f.severity == "warning" for f in got.values())
    assert not plan.changes                                                   # said, never edited
    # said on a root that still moves too, once per field
    (tmp_path / "karpenter.tf").write_text(RELEASE.format(chart="1.6.2"))
    plan = make_plan(tmp_path)
    assert sorted(f.line for f in plan.findings if f.code == "MIG-V1X-OBJ-001") == [19, 21]
    assert not any(c.path == "nodepools.yaml" for c in plan.changes)


def test_a_field_whose_meaning_a_v1_field_beside_it_says_is_only_noted(tmp_path):
    """HaeDalWang/eks-terraform-examples: nodeClassRef written with v1beta1's apiVersion beside v1's group (harmless:
    info), and node labels under spec.template.spec (dropped: the nodes never had them, a warning)."""
    (tmp_path / "karpenter.tf").write_text(RELEASE.format(chart="1.14.1"))
    pools = POOLS.replace("        group: karpenter.k8s.aws\n",
                          "        apiVersion: karpenter.k8s.aws/v1\n        group: karpenter.k8s.aws\n")
    pools = pools.replace("      kubelet:\n        maxPods: 20\n", "      labels:\n        role: router\n")
    (tmp_path / "nodepools.yaml").write_text(pools)
    def said(plan):
        return {f.message.split(": ")[1].split(" ")[0]: f.severity for f in plan.findings
                if f.code == "MIG-V1X-OBJ-001"}
    # a root already at the target keeps only what needs doing: the harmless one is not repeated on every run
    assert said(make_plan(tmp_path)) == {"spec.template.spec.labels": "warning",
                                         "spec.template.spec.taints[0].operator": "warning"}
    (tmp_path / "karpenter.tf").write_text(RELEASE.format(chart="1.6.2"))
    assert said(make_plan(tmp_path)) == {"spec.template.spec.nodeClassRef.apiVersion": "info",
                                         "spec.template.spec.labels": "warning",
                                         "spec.template.spec.taints[0].operator": "warning"}
    (tmp_path / "nodepools.yaml").write_text(pools.replace("        group: karpenter.k8s.aws\n", ""))
    plan = make_plan(tmp_path)                      # apiVersion alone: v1 has no group then, said as a warning
    assert [f.severity for f in plan.findings if f.code == "MIG-V1X-OBJ-001" and "apiVersion" in f.message] == \
        ["warning"]
