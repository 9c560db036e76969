"""Rule `v1/terraform_module`: terraform-aws-modules/eks `modules/karpenter` gives the controller the v1 IAM.

patch-upgrade: a v20 module older than 20.24 moves to the newest v20 with `enable_v1_permissions = true`; a
20.24+ module gets the input set. A module that uses IRSA stays on v20 (v21 removed IRSA; the finding says
so and what moving to v21 with Pod Identity takes); v21 already carries the v1 policy.
The coverage table (knowledge/minors.yaml `module_coverage`) also serves the onward 1.x hop: which Karpenter
minor a module version can run.
"""
from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from ... import knowledge
from ...edits import TextEdit, indent_at, line_start, to_newline
from ...model import Finding
from ...modmajor import is_karpenter_module
from ...path import MINORS, parse_version
from ...sources import hcl as hclsrc
from ..v1beta1.terraform_module import ModuleResult as BaseResult
from ..v1beta1.terraform_module import V20, _constraint_version, v20_move

RULE = "v1/terraform_module"
FACTS = knowledge.load("iam")["module"]
V1 = knowledge.load("iam")["module_v1"]


@dataclass
class ModuleResult(BaseResult):
    covers: str | None = None          # newest Karpenter minor the module's IAM supports (onward hop cap)
    irsa: bool = False


def modules(ctx):
    """(path, block, (op, version) or None) of every karpenter module this cluster root calls."""
    for p, b in ctx.repo.blocks("module", None, "karpenter"):          # its source names it
        if not ctx.owns(p):
            continue
        src = b.attr("source").literal() if b.attr("source") is not None else None
        if not is_karpenter_module(src):
            continue
        v = b.attr("version")
        yield p, b, (_constraint_version(str(v.literal())) if v is not None and v.literal() else None)


def uses_irsa(b: hclsrc.Block) -> bool:
    return any(name in b.attributes for name in V1["irsa_inputs"])


def covers(version: tuple[int, ...] | None, b: hclsrc.Block) -> str | None:
    """Newest Karpenter minor this module version's policy supports (None: unknown / older than v20)."""
    if version is None:
        return None
    best = None
    for row in MINORS["module_coverage"]:
        if version >= parse_version(row["from"]):
            needs = row.get("needs", {})
            if all((b.attr(k).literal() if b.attr(k) is not None else None) == v for k, v in needs.items()):
                best = row["karpenter"]
    return best


def run(ctx, phase: str) -> ModuleResult:
    res = ModuleResult()
    for p, b, ver in modules(ctx):
        text = ctx.repo.text(p)
        line = hclsrc.line_of(text, b.start)
        res.modules.append(b.address)
        res.refs.append(f"{p}:{line}")
        res.tf_targets.append((posixpath.dirname(p), b.address))
        res.irsa = res.irsa or uses_irsa(b)
        version = ver[1] if ver else None
        if phase == V1["phase"]:
            _v1_permissions(ctx, res, p, b, ver, text, line)
        c = covers(version, b)
        if c is not None and (res.covers is None or parse_version(c) < parse_version(res.covers)):
            res.covers = c
    blueprints(ctx, res)
    units(ctx, res, phase)
    return res


def units(ctx, res: ModuleResult, phase: str) -> None:
    """Terragrunt units of the registry karpenter module: their version and enable_v1_permissions checked (the unit's
    source is not edited; what to change is said)."""
    from ...inventory.terragrunt import karpenter_module_units, module_block
    for u in karpenter_module_units(ctx.repo):
        b = module_block(ctx.repo, u, "karpenter") if ctx.owns(u.path) else None
        if b is None:
            continue
        v = b.attr("version")
        version = parse_version(v.literal()) if v is not None else None
        c = covers(version, b)
        if c is not None and (res.covers is None or parse_version(c) < parse_version(res.covers)):
            res.covers = c
        if phase != V1["phase"] or version is None or version[0] >= 21:
            continue
        on = u.inputs.get(V1["input"])
        if version >= parse_version(V1["min"]) and on is not None and on.value is True:
            continue
        text = ctx.repo.text(u.path)
        res.findings.append(Finding(
            "MIG-V1-MOD-008", "warning", u.path, 1 + text[: text.find("source")].count("\n"),
            f"terragrunt unit {u.dir} calls the karpenter module {v.literal()}"
            + ("" if version >= parse_version(V1["min"]) else f" (older than {V1['min']})")
            + f" without {V1['input']} = true: its policy has no v1 permissions, and the 1.0 controller fails with "
            "UnauthorizedOperation", f"set the unit's source to ?version={V1['pin']} and {V1['input']} = true in its "
            "inputs, and apply it before the controller moves"))


BPA = knowledge.load("karpenter_module")["blueprints_addons"]


def blueprints(ctx, res: ModuleResult) -> None:
    """eks-blueprints-addons has no v1 controller policy (no add-on version up to 1.24.3): unless the call adds the
    v1 statements itself (karpenter.policy_statements naming eks:eks-cluster-name), say what the 1.0 controller
    needs and the two ways to give it."""
    for ci in ctx.charts:
        if ci.kind == "blueprints" and MODULE.get(ci.family or "", {}).get("v1_policy_from"):
            _addon_policy(ci, res, MODULE[ci.family])
        if ci.kind != "blueprints" or (ci.family or "blueprints_addons") != "blueprints_addons":
            continue
        b = ci.block
        cfg = b.attr(BPA["input"])
        stmts = next((e.value for e in (cfg.entries if cfg is not None and cfg.kind == "object" else [])
                      if e.key == BPA["policy_key"]), None)
        if stmts is not None and V1_TAG in stmts.source:
            continue
        res.findings.append(Finding(
            "MIG-V1-MOD-007", "warning", ci.path, ci.line,
            f"{ci.address} (eks-blueprints-addons) gives the controller its own policy, which has no v1 permissions "
            f"({V1_TAG} tagging and scoping): the 1.0 controller fails with UnauthorizedOperation on ec2:CreateTags",
            f"before the controller moves, add the official 1.0 statements {', '.join(BPA['v1_statements'])} "
            f"through {BPA['input']} = {{ {BPA['policy_key']} = [...] }} (the add-on merges them into its policy), "
            "or install Karpenter with the terraform-aws-modules karpenter module (>= 20.24, enable_v1_permissions "
            "= true) and disable the add-on's"))


V1_TAG = knowledge.load("iam")["v1beta1->v1"]["cluster_tag"]
MODULE = knowledge.load("karpenter_module")


def _addon_policy(ci, res: ModuleResult, facts: dict) -> None:
    """An add-on module that makes the controller's IAM with a karpenter module of its own: releases before
    `v1_policy_from` give no v1 permissions, and the call has no input to add them."""
    from ...versions import pinned
    raw = pinned(ci.block)
    ver = parse_version(raw) if raw else None
    if not raw or (ver is not None and ver >= parse_version(facts["v1_policy_from"])):
        return                      # unpinned: terraform init fetches the newest, which has them
    res.findings.append(Finding(
        "MIG-V1-MOD-007", "warning", ci.path, ci.line,
        f"{ci.address} ({facts['name']} {raw}) makes the controller's policy "
        f"with a karpenter module of its own that has no v1 permissions ({V1_TAG} tagging and scoping), and no input "
        "adds them: the 1.0 controller fails with UnauthorizedOperation on ec2:CreateTags",
        f"move the add-ons to {facts['v1_policy_from']} or later (its karpenter module has them) before the "
        "controller moves, or install Karpenter with the terraform-aws-modules karpenter module (>= 20.24, "
        "enable_v1_permissions = true) and switch the add-on's off"))


def _v1_permissions(ctx, res: ModuleResult, p: str, b: hclsrc.Block, ver, text: str, line: int) -> None:
    local = str(b.attr("source").literal()).startswith(("./", "../"))
    if local and (b.attr(V1["input"]) is None or b.attr(V1["input"]).literal() is True):
        return                  # a module kept in this repository: no registry version to pin
    if ver is None or ver[1] is None:
        res.findings.append(Finding("MIG-V1-MOD-001", "warning", p, line,
                                    f"{b.address}: the module version is not pinned; migrator cannot tell whether "
                                    "it gives the controller the v1 permissions",
                                    f'pin version = "{V1["pin"]}" and set {V1["input"]} = true'))
        return
    op, version = ver
    if version[0] == V20["from"]:
        res.findings.extend(v20_move(ctx.repo, p, b, RULE, res.edits, extra=[(V1["input"], "true")]))
        res.findings.append(Finding("MIG-V1-MOD-006", "info", p, line,
                                    f"{b.address} moves from v19 to {V20['version']} in this phase, with "
                                    f"{V1['input']} = true: v19's policy has no v1 permissions"))
        if uses_irsa(b):
            res.findings.append(_irsa_note(b, p, line))
        return
    if version[0] < V20["from"]:
        res.findings.append(Finding("MIG-V1-MOD-002", "error", p, line,
                                    f"{b.address} is v{version[0]}: its policy predates v1beta1",
                                    f"move it to v{V20['from']} (>= 19.19.1) with the v1alpha5 -> v1beta1 hop "
                                    "first (migrator plan --to v1beta1)"))
        return
    if version[0] >= 21:
        return
    if version < parse_version(V1["min"]):
        v = b.attr("version")
        new = V1["pin"] if op in ("", "=") else ".".join(V1["pin"].split(".")[:2])
        rendered = f"{op} {new}".strip() if op and op != "=" else (f"= {new}" if op == "=" else new)
        res.edits.append(TextEdit(p, v.start, v.end, hclsrc.quote(rendered), RULE))
        res.findings.append(Finding("MIG-V1-MOD-003", "info", p, hclsrc.line_of(text, v.start),
                                    f"{b.address}: version {v.literal()} -> {rendered} ({V1['input']} exists from "
                                    f"{V1['min']})"))
    cur = b.attr(V1["input"])
    if cur is not None and cur.literal() is True:
        pass
    elif cur is not None:
        res.edits.append(TextEdit(p, cur.start, cur.end, "true", RULE))
    else:
        last = max(b.attributes.values(), key=lambda a: a.end) if b.attributes else None
        ind = indent_at(text, last.start) if last else "  "
        pos = line_start(text, b.body_end)
        ins = f"\n{ind}# Karpenter v1: the policy scoped by eks:eks-cluster-name\n{ind}{V1['input']} = true\n"
        res.edits.append(TextEdit(p, pos, pos, to_newline(ins, ctx.repo.files[p].newline), RULE))
    if cur is None or cur.literal() is not True:
        res.findings.append(Finding("MIG-V1-MOD-004", "info", p, line,
                                    f"{b.address}: {V1['input']} = true (the v1 controller policy)"))
    if uses_irsa(b):
        res.findings.append(_irsa_note(b, p, line))


def _irsa_note(b: hclsrc.Block, p: str, line: int) -> Finding:
    return Finding("MIG-V1-MOD-005", "info", p, line,
                   f"{b.address} uses IRSA ({', '.join(a for a in V1['irsa_inputs'] if a in b.attributes)}): it stays "
                   "on v20 for this hop; the onward 1.x hop moves it to v21 and keeps IRSA through a trust document "
                   "(or moves the controller to EKS Pod Identity with --identity pod-identity)")
