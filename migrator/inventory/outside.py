"""Karpenter from outside the repository: a Terraform module call that names Karpenter (its label or its source)
and whose source is remote and no module migrator reads (the terraform-aws-modules karpenter module, the add-on
families of knowledge/karpenter_module.yaml, the Helm-release modules of knowledge/helm_modules.yaml). What such a
module installs (chart version, objects, IAM) is not in the files: a root holding one is never "no Karpenter"."""
from __future__ import annotations

import re

from .. import knowledge
from ..sources import hcl as hclsrc
from .repo import Repo

_LOCAL = re.compile(r"^\.{1,2}/|^/")


def _known(source: str) -> bool:
    from ..modmajor import is_karpenter_module
    facts = knowledge.load("karpenter_module")
    if is_karpenter_module(source) or any(re.search(facts[f]["source"], source) for f in facts["addon_families"]):
        return True
    return any(re.search(row["source"], source) for row in knowledge.load("helm_modules"))


def modules(repo: Repo) -> list[tuple[str, hclsrc.Block, str]]:
    """(file, module block, source) of every such call in the repository, read once per run."""
    got = repo.__dict__.get("_outside_modules")
    if got is None:
        got = []
        for p, b in repo.blocks("module", None, "karpenter"):
            src = b.attr("source").literal() if b.attr("source") is not None else None
            if not isinstance(src, str) or _LOCAL.match(src) or _known(src):
                continue
            if "karpenter" in (b.labels[0] if b.labels else "").lower() or "karpenter" in src.lower():
                got.append((p, b, src))
        repo.__dict__["_outside_modules"] = got
    return got
