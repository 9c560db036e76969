"""What every room of the install shares: the rule's name and mark, the install's facts (knowledge/cas.yaml
`install`), the result the runbook reads, and small text helpers."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .... import knowledge
from ....cas import FACTS
from ....edits import Edit
from ....model import Finding
from ....sources import hcl as hclsrc
from .. import convert


AUTH = knowledge.load("karpenter_module")["access_entry"]
RULE = "cas/karpenter"
MARK = "written by migrator, the move from Cluster Autoscaler"    # in the install's headers: cas/autoscaler reads it
PHASE = "install"
INSTALL = FACTS["install"]
MODULE = knowledge.load("karpenter_module")["majors"][1]["identity"]


@dataclass
class InstallResult:
    edits: list[Edit] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    done: bool = False                      # Karpenter is already installed in this root
    file: str = ""                          # the new Terraform file
    objects_file: str = ""                  # the YAML the runbook applies (no kubectl provider)
    identity: str = ""                      # pod-identity | irsa
    kept: str = ""                          # the node group that stays
    kept_why: str = ""
    pools: list[tuple[str, str]] = field(default_factory=list)    # (NodePool, node group)
    targets: list[tuple[str, str]] = field(default_factory=list)  # (dir, address) for terraform -target
    tagged: list[str] = field(default_factory=list)
    cluster: str = ""                       # how the runbook names the cluster
    flux: list[str] = field(default_factory=list)   # HelmRelease/<ns>/<name> written (charts installed by Flux)
    argocd: list[str] = field(default_factory=list)  # Applications written (charts installed by Argo CD)
    kustomize: str = ""                     # the kustomization whose helmCharts install the charts
    helmfile: str = ""                      # the helmfile whose releases install the charts
    charts_file: str = ""
    sg_by_cli: bool = False                 # the node security group is tagged by the runbook's aws-cli command
    subnets_by_cli: bool = False            # no subnet declaration to tag in Terraform: the runbook tags them
    style: str = "terraform"                # terraform | eksctl (the AWS side by the runbook's commands)
    cluster_literal: str = ""
    access: str = "entry"                   # entry | aws-auth | aws-auth-by-hand: how Karpenter's node role joins
    values_file: str = ""                   # eksctl: the chart values the runbook's helm command reads
    groups: list[str] = field(default_factory=list)
    labelled: list[tuple[str, str]] = field(default_factory=list)   # (dir, address) of a group given the controller
                                                                    # label: applied before the charts
    module_version: str = ""                # the karpenter module release written (the matched v20, or the newest)
    chart: str = ""                         # the chart version installed (below the target with the matched v20)


STAGE_OUTPUTS = tuple(INSTALL["module_outputs"])      # the karpenter module's outputs the charts and objects read


NODE_MAPPING = AUTH["node_mapping"]


def _mapping(module: str, base: str) -> str:
    """Karpenter's node role as one aws-auth mapRoles item in HCL, opened where it stands and closed at `base`."""
    groups = ", ".join(f'"{g}"' for g in NODE_MAPPING["groups"])
    return (f"{{\n{base}  rolearn  = module.{module}.node_iam_role_arn\n"
            f'{base}  username = "{NODE_MAPPING["username"]}"\n'
            f"{base}  groups   = [{groups}]\n{base}}}")


def _find(res: InstallResult, code: str, severity: str, path: str, line: int, message: str, manual: str = "") -> None:
    res.findings.append(Finding(code, severity, path, line, message, manual))


def _hcl_value(v: Any, exprs: dict[str, str], indent: str) -> str:
    return hclsrc.render_value(v, exprs, indent)


def _items_text(emit, items: list, col: int, blank: bool = False) -> str:
    """YAML list items as a block list whose dashes stand at column `col` (a blank line before each when `blank`,
    as the list separates its own items)."""
    out = []
    for item in items:
        body = emit.emit(convert._cm({"x": [item]})).text.split("\n", 1)[1]
        lines = body.rstrip("\n").splitlines()
        step = len(lines[0]) - len(lines[0].lstrip(" "))        # the emitter's own dash column
        out.append(("\n" if blank else "") + "".join(" " * col + ln[step:] + "\n" for ln in lines))
    return "".join(out)


def _spaced(text: str, doc_start: int, seq) -> bool:
    """Does a block YAML list separate its items with a blank line?"""
    if len(seq) < 2:
        return False
    lines = text[doc_start:].splitlines()
    return not lines[seq.lc.item(1)[0] - 1].strip()


def _tokenised(o: Any) -> Any:
    """An object with its ${...} Terraform references as tokens, for validation."""
    if isinstance(o, dict):
        return {k: _tokenised(v) for k, v in o.items()}
    if isinstance(o, list):
        return [_tokenised(v) for v in o]
    if isinstance(o, str) and "${" in o:
        return re.sub(r"\$\{[^}]*\}", "__MIG_0__", o)
    return o
