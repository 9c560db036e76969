"""What reads the blocks a phase removes (migrator/tfgraph.py `unlink`): comments read nothing."""
from __future__ import annotations

from migrator import tfgraph
from migrator.inventory.repo import Repo
from migrator.sources.hcl import code_of

MAIN = '''module "karpenter" {
  source = "terraform-aws-modules/eks/aws//modules/karpenter"
}

module "eks" {
  source = "terraform-aws-modules/eks/aws"
  # unlike the Karpenter node role (module.karpenter), this role is the group's own
  name = "demo" # not module.karpenter.node_iam_role_name
}

resource "helm_release" "karpenter" {
  name       = "karpenter"
  depends_on = [module.karpenter]
}

resource "aws_iam_role_policy_attachment" "extra" {
  role = module.karpenter.node_iam_role_name
  /* module.karpenter */
}
'''


def test_a_comment_naming_a_removed_block_reads_nothing(tmp_path):
    """HaeDalWang/eks-terraform-examples: a comment in module "eks" naming module.karpenter held the Auto Mode cleanup
    (MIG-AUTO-041: "module.eks reads module.karpenter") in five clusters."""
    (tmp_path / "main.tf").write_text(MAIN)
    repo = Repo(tmp_path)
    f = repo.hcl("main.tf")
    gone = {"module.karpenter": ("main.tf", next(b for b in f.blocks if b.address == "module.karpenter"))}
    edits: list = []
    outputs, readers = tfgraph.unlink(repo, gone, "test", edits)
    assert set(readers) == {"aws_iam_role_policy_attachment.extra"}      # the only code that reads it
    (edit,) = edits                                                        # the depends_on entry dropped
    assert "depends_on" not in edit.text and edit.text.startswith('resource "helm_release" "karpenter"')


def test_code_of_blanks_comments_only():
    text = 'a = "#not" # gone\nb = <<EOT\n# kept\nEOT\n/* x\ny */ c = 1 // z\nd = "é" # ü\n'
    code = code_of(text)
    assert len(code) == len(text) and code.count("\n") == text.count("\n")
    assert '"#not"' in code and "# kept" in code and "gone" not in code and "x" not in code.split("c = 1")[0][-6:]
    assert "z" not in code and "ü" not in code and '"é"' in code


def test_the_alpha_cleanup_points_a_depends_on_at_the_new_counterpart():
    """fixtures/alpha-depends-on-node-template: a Deployment that waited for the AWSNodeTemplate's kubectl_manifest
    waits for the EC2NodeClass's after the v1beta1 cleanup; before, the phase was held (MIG-EDIT-006)."""
    from migrator.plan import make_plan
    from .conftest import FIXTURES
    fx = FIXTURES / "alpha-depends-on-node-template"
    plan = make_plan(fx / "expected-run-1")
    assert plan.roots[0].phase == "cleanup" and not [f for f in plan.findings if f.code == "MIG-EDIT-006"]
    after = (fx / "expected-run-2" / "kubernetes.tf").read_text()
    assert "depends_on = [kubectl_manifest.karpenter_node_class]" in after
    assert "karpenter_node_template" not in after


def test_a_block_interpolation_follows_its_key_into_the_nodepool():
    """fixtures/alpha-template-block-values: `values:` then `${indent(8, yamlencode(...))}` under a Provisioner's
    requirement becomes `values:` then `${indent(12, ...)}` in the NodePool (the requirements four columns deeper),
    never `values: ${indent(...)}` on one line (a YAML list after the key: no YAML)."""
    from .conftest import FIXTURES
    fx = FIXTURES / "alpha-template-block-values"
    new = (fx / "expected-run-1" / "main.tf").read_text()
    assert "              values:\n                ${indent(12, yamlencode(var.instance_types))}\n" in new
    assert "values: ${" not in new


def test_a_depends_on_the_provisioner_names_its_nodepool(tmp_path):
    """A Provisioner with an inline provider becomes a NodePool and an EC2NodeClass: a `depends_on` naming the
    Provisioner's block names the NodePool's at the cleanup (its own successor), not the EC2NodeClass's."""
    import shutil
    from migrator.apply import apply_changes
    from migrator.plan import make_plan
    from .conftest import FIXTURES
    tree = tmp_path / "t"
    shutil.copytree(FIXTURES / "alpha-depends-on-node-template" / "input", tree)
    tf = tree / "kubernetes.tf"
    text = tf.read_text()
    text = text.replace("      providerRef:\n        name: default\n",
                        "      provider:\n        subnetSelector:\n          karpenter.sh/discovery: shop\n"
                        "        securityGroupSelector:\n          karpenter.sh/discovery: shop\n")
    text = text[:text.index('resource "kubectl_manifest" "karpenter_node_template"')] + \
        text[text.index("# An example workload"):]
    tf.write_text(text.replace("depends_on = [kubectl_manifest.karpenter_node_template]",
                               "depends_on = [kubectl_manifest.karpenter_provisioner]"))
    for _ in range(2):                  # prepare, then cleanup
        plan = make_plan(tree)
        assert not [f for f in plan.findings if f.severity == "error"], plan.findings
        apply_changes(tree, plan.changes)
    after = tf.read_text()
    assert "karpenter_provisioner" not in after
    example = after[after.index('"example"'):]
    assert "depends_on = [kubectl_manifest.karpenter_nodepool]" in example, example[-200:]


def test_a_depends_on_with_comments_is_relinked_item_by_item():
    """A `depends_on` written one item per line with notes and old items commented out (BojanKomazec/demo-terraform),
    or naming `resource.<type>.<name>`: each item is renamed or dropped where it stands, every comment line kept; the
    attribute goes when no item is left. Before, such a list was left as it was (a twin kept depending on the old
    EC2NodeClass its cutover removes)."""
    text = ("  depends_on = [\n    # because nodeClassRef has EC2NodeClass as its kind\n"
            "    resource.kubernetes_manifest.karpenter_ec2_nodeclass\n    # module.karpenter-core\n  ]\n")
    new = tfgraph.relink(text, {"kubernetes_manifest.karpenter_ec2_nodeclass": "kubernetes_manifest.nc_auto"}, set())
    assert new == text.replace("resource.kubernetes_manifest.karpenter_ec2_nodeclass", "resource.kubernetes_manifest.nc_auto")
    assert tfgraph.relink(text, {}, {"kubernetes_manifest.karpenter_ec2_nodeclass"}) == ""
    two = "  depends_on = [\n    helm_release.karpenter, # the controller\n    kubectl_manifest.a,\n  ]\n"
    assert tfgraph.relink(two, {"kubectl_manifest.a": "kubectl_manifest.b"}, {"helm_release.karpenter"}) == \
        "  depends_on = [\n    # the controller\n    kubectl_manifest.b,\n  ]\n"
    assert tfgraph.relink("  depends_on = [resource.kubectl_manifest.a, helm_release.x]\n",
                          {"kubectl_manifest.a": "kubectl_manifest.b"}, {"helm_release.x"}) == \
        "  depends_on = [resource.kubectl_manifest.b]\n"
