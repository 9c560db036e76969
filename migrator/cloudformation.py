"""What a plan says of a CloudFormation template that makes Karpenter's controller policy (inventory/cfn.py): migrator
does not edit CloudFormation, so each template is named (MIG-IAM-013) with what the plan's move asks of its stack."""
from __future__ import annotations

from typing import TYPE_CHECKING

from . import knowledge
from . import path as route
from .model import Finding
from .path import hop_key

if TYPE_CHECKING:
    from .inventory import Repo
    from .roots import Fleet


def findings(repo: Repo, rps: list, fleet: Fleet) -> list[Finding]:
    """A CloudFormation template that makes Karpenter's controller policy (inventory/cfn.py): not edited, so said
    (MIG-IAM-013), with what the plan's move asks of its stack (of the roots that use the file, else of every root):
    the getting-started template of the version the controller moves to, deployed over it, in the order the upgrade
    guide gives; a team's own template, its policy aligned by hand; on the way to EKS Auto Mode, the stack deleted
    with Karpenter."""
    from .inventory.cfn import templates
    found = templates(repo)
    if not found:
        return []
    facts = knowledge.load("iam")["cloudformation"]
    url = knowledge.load("cas")["install"]["eksctl"]["template"]
    out = []
    for p, official in found:
        users = [rp for rp in rps if fleet.owns(rp.path, p)] or rps
        moves = sorted({v for rp in users if (v := controller_to(rp))}, key=route.parse_version)
        # (a hop whose guide orders the policy change: in any of its phases, its chart version)
        guided = sorted({facts["hops"][hop_key(rp.hop)].format(version=rp.hop["chart"]["version"]) for rp in users
                         if rp.hop is not None and rp.phase and hop_key(rp.hop) in facts["hops"]})
        moves = moves or sorted({rp.hop["chart"]["version"] for rp in users if rp.hop is not None and rp.phase
                                 and hop_key(rp.hop) in facts["hops"]}, key=route.parse_version)
        split = route.parse_version(facts["split"]["from"])
        crosses = any(route.parse_version(v) >= split for v in moves) and not all(
            rp.chart and route.parse_version(rp.chart) is not None and route.parse_version(rp.chart) >= split
            for rp in users)
        deploy = f"aws cloudformation deploy --stack-name {facts['stack']} --template-file {p} " \
            "--capabilities CAPABILITY_NAMED_IAM --parameter-overrides ClusterName=<cluster name>"
        official_url = url.format(version=moves[-1] if moves else "<version>")
        if any(rp.hop is not None and rp.hop.get("exit") for rp in users):
            now = "this plan moves the cluster to EKS Auto Mode: the stack stays while Karpenter runs, and goes with " \
                "it once the plan's cleanup has removed Karpenter"
            how = "after the cleanup phase: aws cloudformation delete-stack --stack-name <its stack>"
        elif not official:
            now = (f"this plan moves the controller to {' and '.join(moves)}: align the template's controller policy "
                   f"with the official one of {moves[-1]} by hand, and update its stack before the controller moves"
                   if moves else "when the controller moves, align the template's controller policy with the official "
                   "one of its version by hand")
            how = f"the official policy is the KarpenterControllerPolicy resource(s) of {official_url}"
        elif guided:
            now = "this plan moves the controller across an API change, and its upgrade guide orders the policy " \
                "change: " + "; ".join(guided)
            how = f"curl -fsSL {official_url} > {p} when the guide says to deploy it, then {deploy}"
        elif moves:
            now = f"this plan moves the controller to {' and '.join(moves)}: before it does, deploy " + \
                f"{'that version' if len(moves) == 1 else 'each version'}'s template over the stack this one made" + \
                (f"; {facts['split']['note']}" if crosses else "")
            how = f"curl -fsSL {official_url} > {p} && {deploy}"
        else:
            now = "this plan does not move the controller: when it moves, deploy the template of its version over " \
                "the stack this one made"
            how = f"curl -fsSL {official_url} > {p}, then {deploy}"
        if official and (guided or moves or "deploy the template" in now):
            now += " (carry over to it any change made to this copy)"
        what = "Karpenter's getting-started CloudFormation template" if official else \
            "a CloudFormation template that makes Karpenter's controller policy"
        out.append(Finding(
            "MIG-IAM-013", "warning" if moves else "info", p, 1,
            f"{p} is {what}{' (its controller policy, node role and interruption queue)' if official else ''}; "
            f"migrator does not edit CloudFormation, and a controller policy it aligns elsewhere does not change the "
            f"stack's; {now}", how))
    return out


def controller_to(rp) -> str | None:
    """The controller chart version the phase planned for a root installs (its hop's `chart_phases`), if any."""
    hop = rp.hop
    if hop is None or rp.phase not in hop.get("chart_phases", []):
        return None
    v = rp.hop_to if hop.get("onward") else hop.get("chart", {}).get("version")
    return v if v and route.parse_version(v) is not None else None
