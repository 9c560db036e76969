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
