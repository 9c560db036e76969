"""Karpenter's getting-started CloudFormation template kept in a repository (knowledge/iam.yaml `cloudformation`):
found by its text, never parsed (its short-form tags are no YAML a safe loader reads), and never edited."""
from __future__ import annotations

from .. import knowledge
from .repo import Repo


def templates(repo: Repo) -> list[tuple[str, bool]]:
    """(file, is it the getting-started template itself) of the CloudFormation templates that make Karpenter's
    controller policy, in discovery order: the getting-started template by its Description, a team's own by the
    policy's name."""
    facts = knowledge.load("iam")["cloudformation"]
    generated = set(knowledge.load("programs")["skip_dirs"])    # cdk.out: a CDK app's synthesized output, not a source
    out = []
    for p in repo.containing(facts["needs"], tuple(facts["suffixes"])):
        if generated & set(p.split("/")[:-1]):
            continue
        text = repo.text(p)
        if facts["official"] in text:
            out.append((p, True))
        elif any(m in text for m in facts["own"]):
            out.append((p, False))
    return out
