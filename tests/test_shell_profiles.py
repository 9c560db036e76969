"""A node role known only from the aws-cli script that made the instance profile (issue 19 §1)."""
from __future__ import annotations

import shutil
from pathlib import Path

from migrator.plan import make_plan
from migrator.sources.shell import profile_roles

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "instance-profile-only" / "input"

SCRIPT = """\
#!/usr/bin/env bash
set -euo pipefail
export CLUSTER_NAME=prod-eu
PROFILE="KarpenterNodeInstanceProfile-${CLUSTER_NAME}"

aws iam create-instance-profile --instance-profile-name "${PROFILE}"
# the node role was created above by CloudFormation
aws iam add-role-to-instance-profile \\
    --instance-profile-name "${PROFILE}" \\
    --role-name "KarpenterNodeRole-${CLUSTER_NAME}"
"""


def test_script_reader_expands_its_own_assignments_only():
    got = profile_roles("iam.sh", SCRIPT)
    assert [(p.line, p.profile, p.role) for p in got] == [
        (6, "KarpenterNodeInstanceProfile-prod-eu", None),
        (8, "KarpenterNodeInstanceProfile-prod-eu", "KarpenterNodeRole-prod-eu")]
    unknown = profile_roles("x.sh", 'aws iam add-role-to-instance-profile --instance-profile-name "$P" --role-name r\n')
    assert unknown == []            # $P is set nowhere in the script: no guess


def test_role_of_the_profile_read_from_the_script(tmp_path):
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE, root)
    (root / "scripts").mkdir()
    (root / "scripts" / "iam.sh").write_text(SCRIPT)
    plan = make_plan(root, phase="prepare")
    assert not plan.has_errors
    assert not [f for f in plan.findings if f.code in ("MIG-NC-017", "MIG-NC-011")]
    text = "".join(c.new for c in plan.changes if c.action == "create")
    assert "  role: KarpenterNodeRole-prod-eu\n" in text and "instanceProfile" not in text
