"""Random layouts of a JSON controller policy (indentation, key order, Sid placement, final newline): the inserted
nodepool twins re-parse, keep the file's indentation, and leave every original statement byte-identical."""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from migrator.edits import apply_edits
from migrator.inventory import Repo
from migrator.rules.v1beta1.iam import IamRule

STATEMENT = {"Sid": "AllowScopedDeletion", "Effect": "Allow",
             "Resource": ["arn:aws:ec2:eu-west-1:*:instance/*", "arn:aws:ec2:eu-west-1:*:launch-template/*"],
             "Action": ["ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"],
             "Condition": {"StringEquals": {"aws:ResourceTag/kubernetes.io/cluster/demo": "owned"},
                           "StringLike": {"aws:ResourceTag/karpenter.sh/provisioner-name": "*"}}}
OTHER = {"Sid": "AllowRegionalReadActions", "Effect": "Allow", "Resource": "*",
         "Action": ["ec2:DescribeImages", "ec2:DescribeSubnets"],
         "Condition": {"StringEquals": {"aws:RequestedRegion": "eu-west-1"}}}


@st.composite
def layout(draw):
    indent = draw(st.sampled_from([2, 3, 4, "\t"]))
    order = draw(st.permutations(["Sid", "Effect", "Resource", "Action", "Condition"]))
    stmts = [{k: s[k] for k in order} for s in draw(st.permutations([STATEMENT, OTHER]))]
    doc = {"Version": "2012-10-17", "Statement": stmts}
    text = json.dumps(doc, indent=indent)
    return text + ("\n" if draw(st.booleans()) else "")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(layout())
def test_inserted_statements_follow_the_files_layout(text):
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "policy.json").write_text(text)
        repo = Repo(Path(d))
        res = IamRule(repo, [], "prepare").run()
        edits = [e for e in res.edits if e.path == "policy.json"]
        assert edits
        new = apply_edits(text, edits)
        doc = json.loads(new)
        sids = [s.get("Sid") for s in doc["Statement"]]
        assert "AllowScopedDeletionNodePool" in sids
        twin = next(s for s in doc["Statement"] if s.get("Sid") == "AllowScopedDeletionNodePool")
        assert twin["Condition"]["StringLike"] == {"aws:ResourceTag/karpenter.sh/nodepool": "*"}
        for e in edits:                                  # only insertions: every original byte kept in order
            assert e.start == e.end
        unit = "\t" if "\t" in text else " " * (len(text.split("\n")[1]) - len(text.split("\n")[1].lstrip(" ")))
        inserted = "".join(e.text for e in edits)
        for ln in inserted.splitlines():
            if ln.strip():
                lead = ln[:len(ln) - len(ln.lstrip(" \t"))]
                assert set(lead) <= set(unit), (repr(unit), repr(ln))
        assert new.endswith("\n") == text.endswith("\n")
