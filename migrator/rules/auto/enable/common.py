"""What the rooms of the Auto Mode switch share: the rule's name, knowledge/auto_mode.yaml's cluster facts, the result
every phase reads (the node role the NodeClasses name), and small text helpers."""
from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field

from .... import knowledge
from ....edits import Edit, TextEdit, line_start
from ....model import Finding
from ....sources import hcl as hclsrc


RULE = "auto/cluster"


FACTS = knowledge.load("auto_mode")


CL = FACTS["cluster"]


MOD = CL["eks_module"]


NEW_FILE = "eks-auto-mode.tf"


@dataclass
class ClusterResult:
    edits: list[Edit] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    installer: str = ""                 # module | resource | eksctl | "" (not in this root)
    enabled: bool = False               # Auto Mode is on in the files
    where: str = ""                     # path:line of the cluster
    address: str = ""                   # module.eks / aws_eks_cluster.this / eksctl ClusterConfig name
    dir: str = ""                       # the Terraform module (directory) that declares the cluster
    major: int | None = None            # terraform-aws-modules/eks major
    role_literal: str | None = None     # the Auto Mode node role's name, when the files state it
    role_expr: str | None = None        # ... as a Terraform expression of the cluster's module
    role_unknown: str = ""              # why the files do not state that name (when role_literal is None)
    cluster_literal: str | None = None
    targets: list[tuple[str, str]] = field(default_factory=list)     # (dir, address) applied in the enable step
    notes: list[str] = field(default_factory=list)                   # what the enable changes, for the runbook
    eksctl_file: str = ""
    eksctl_addons: bool = False         # eksctl add-on versions raised (eksctl update addon -f)
    partition: str = "aws"              # the ARN partition of the cluster's region (eksctl: metadata.region)


def _find(res: ClusterResult, code: str, severity: str, path: str, line: int, message: str, manual: str = "") -> None:
    res.findings.append(Finding(code, severity, path, line, message, manual))


def _dir(p: str) -> str:
    return posixpath.dirname(p) or "."


def _aligned(ind: str, pairs: list[tuple[str, str]], nl: str) -> str:
    w = max(len(k) for k, _ in pairs)
    return "".join(f"{ind}{k.ljust(w)} = {v}{nl}" for k, v in pairs)


def _insert_at_end(text: str, path: str, b: hclsrc.Block, body: str, nl: str, order: int = 3) -> TextEdit:
    """Lines at the end of a block's body, after a blank line."""
    pos = line_start(text, b.body_end)
    return TextEdit(path, pos, pos, nl + body, RULE, order=order)


def _snake(policy: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z][a-z])", "_", policy.replace("Amazon", "")).lower().replace("__", "_")


def _addon_key(v: str) -> tuple:
    m = re.match(r"v?(\d+)\.(\d+)\.(\d+)(?:-eksbuild\.(\d+))?", v)
    return tuple(int(x or 0) for x in m.groups()) if m else (0,)
