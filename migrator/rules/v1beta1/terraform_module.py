"""Rule `v1beta1/terraform_module`: the terraform-aws-modules karpenter module during alpha -> beta.

Stay on v19 (v20's controller policy is scoped by `karpenter.sh/nodepool` and cannot terminate alpha
nodes), at least the safe patch (19.18.0-19.19.0 delete the module's instance profile when instance-profile
creation is enabled), and set `enable_karpenter_instance_profile_creation = true` when EC2NodeClasses use
`spec.role`. v19 scopes instance termination by its discovery tag (`irsa_tag_key`), so every new
EC2NodeClass must tag instances with it. eks-blueprints-addons' karpenter inputs are reported.
"""
from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field

from ... import knowledge
from ...edits import TextEdit, indent_at, line_start, to_newline
from ...inventory import Manifest, Repo
from ... import modmajor
from ...model import Finding
from ...sources import hcl as hclsrc
from .helm import parse_version

RULE = "v1beta1/terraform_module"
HOP = "v1alpha5->v1beta1"
FACTS = knowledge.load("iam")["module"]
V20 = modmajor.major_row(19)


@dataclass
class ModuleResult:
    edits: list = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    modules: list[str] = field(default_factory=list)        # addresses
    tf_targets: list[tuple[str, str]] = field(default_factory=list)   # (root module dir, address)
    refs: list[str] = field(default_factory=list)


_constraint_version = modmajor.constraint      # ('~> ', (19, 16, 0)) from '~> 19.16', '>= 19.0, < 20.0', ...


def v20_move(repo: Repo, p: str, b: hclsrc.Block, rule: str, edits: list, *, extra=(), deleted=()) -> list[Finding]:
    """v19 -> v20 of one module call in one mapping pass (knowledge/karpenter_module.yaml), with the access entry
    decided from how the node role joins the cluster today; `extra` are a hop's own inputs. Returns the findings."""
    text = repo.text(p)
    line = hclsrc.line_of(text, b.start)
    out: list[Finding] = []
    entry, why = modmajor.access_entry(repo, p, b)
    key = V20["access_entry"]["input"]
    extra = list(extra)
    if entry is False and key not in b.attributes:
        extra.append((key, "false"))
    mv = modmajor.move(repo, p, b, V20, rule, extra=extra, deleted=deleted,
                       comment="pinned by migrator: v19 values v20 would change, so Terraform replaces nothing")
    edits.extend(mv.edits)
    out.append(Finding("MIG-MOD-008", "info", p, line,
                       f"{b.address} -> v{V20['version']} in one mapping pass: " + "; ".join(
                           mv.said + [f"{k} = {v}" for k, v in extra if k not in b.attributes])))
    for rp, ln, old, new in mv.output_refs:
        out.append(Finding("MIG-MOD-011", "info", rp, ln, f"module.{b.labels[0]}.{old} -> module.{b.labels[0]}.{new}"))
    ip = V20["instance_profile"]["input"]
    if not mv.instance_profile_refs and ip not in b.attributes:
        out.append(Finding("MIG-MOD-009", "info", p, line,
                           f"{b.address}: nothing references the module's instance profile any more; v20 "
                           f"({ip} = false) removes it"))
    if key in b.attributes:
        pass
    elif entry is None:
        out.append(Finding("MIG-MOD-010", "warning", p, line,
                           f"{b.address} v20 creates an EKS access entry for the node role ({key} = true); the "
                           "repository does not say how the node role joins the cluster today", why))
    else:
        out.append(Finding("MIG-MOD-012", "info", p, line, f"{b.address}: {key} = {str(entry).lower()}: {why}"))
    return out


class ModuleRule:
    def __init__(self, repo: Repo, manifests: list[Manifest], phase: str, uses_role: bool,
                 blocked: set[tuple[str, int]] | None = None, deleted: list | None = None, owns=None):
        self.owns = owns or (lambda path: True)
        self.blocked = blocked or set()
        self.deleted = deleted or []          # spans other rules delete in this phase
        self.repo = repo
        self.manifests = manifests
        self.phase = phase
        self.uses_role = uses_role
        self.res = ModuleResult()

    def finding(self, *a):
        self.res.findings.append(Finding(*a))

    def run(self) -> ModuleResult:
        facts = FACTS[HOP]
        for p, b in self.repo.blocks("module", None, "karpenter"):     # its module and the add-on name it
            if not self.owns(p):
                continue
            src = b.attr("source").literal() if b.attr("source") is not None else None
            if not isinstance(src, str):
                continue
            if "eks-blueprints-addons" in src and "karpenter" in self.repo.text(p)[b.start:b.end]:
                self.blueprints(p, b)
                continue
            if not modmajor.is_karpenter_module(src):
                continue
            self.res.modules.append(b.address)
            self.res.tf_targets.append((posixpath.dirname(p), b.address))
            self.res.refs.append(f"{p}:{hclsrc.line_of(self.repo.text(p), b.start)}")
            if self.phase == "prepare" and self.version(p, b, facts):
                # v19-only inputs: the instance-profile flag exists from 19.18 (the version is moved there)
                self.instance_profile_input(p, b, facts)
                self.discovery_tag(p, b, facts)
            elif self.phase == "cleanup":
                self.to_v20(p, b)
        return self.res

    # -- cleanup: v19 -> v20 in one mapping pass ------------------------------------------------------
    def to_v20(self, p: str, b: hclsrc.Block) -> None:
        text = self.repo.text(p)
        v = b.attr("version")
        op, ver = _constraint_version(str(v.literal())) if v is not None and v.literal() else ("", None)
        if ver is None or ver[0] != FACTS[HOP]["stay_major"]:
            return
        if self.blocked:
            self.finding("MIG-MOD-007", "info", p, hclsrc.line_of(text, b.start),
                         f"{b.address} stays on v19 while v1alpha5 objects remain; it moves to v20 in the cleanup "
                         "that removes the last of them")
            return
        self.res.findings.extend(v20_move(self.repo, p, b, RULE, self.res.edits, deleted=self.deleted))

    def version(self, p: str, b: hclsrc.Block, facts: dict) -> bool:
        """Check / move the module version; True when the module is (now) on the v19 line."""
        text = self.repo.text(p)
        v = b.attr("version")
        line = hclsrc.line_of(text, b.start)
        if v is None or v.literal() is None:
            self.finding("MIG-MOD-001", "warning", p, line,
                         f"{b.address}: the module version is not pinned; v20+ cannot manage v1alpha5 nodes",
                         f'pin version = "{facts["pin"]}" until the nodes have rolled')
            return False
        op, ver = _constraint_version(str(v.literal()))
        if ver is None:
            self.finding("MIG-MOD-001", "warning", p, line, f"{b.address}: version {v.literal()!r} not understood",
                         f'pin version = "{facts["pin"]}"')
            return False
        if ver[0] > facts["stay_major"]:
            self.finding("MIG-MOD-002", "error", p, hclsrc.line_of(text, v.start),
                         f"{b.address} is v{ver[0]}: its controller policy is scoped by karpenter.sh/nodepool and "
                         "cannot terminate nodes launched by v1alpha5 Provisioners",
                         f'go back to version = "{facts["pin"]}" until every Machine is gone, then move to v20 '
                         "(inputs renamed: see the v1 hop)")
            return False
        if ver < parse_version(facts["min_safe"]) or ver[0] < facts["stay_major"]:
            new = facts["pin"] if op in ("", "=") else ".".join(facts["pin"].split(".")[:2])
            rendered = f"{op} {new}".strip() if op and op != "=" else new
            if op == "=":
                rendered = f"= {new}"
            self.res.edits.append(TextEdit(p, v.start, v.end, hclsrc.quote(rendered), RULE))
            self.finding("MIG-MOD-003", "info", p, hclsrc.line_of(text, v.start),
                         f"{b.address}: version {v.literal()} -> {rendered} (19.18.0-19.19.0 delete the module's "
                         f"instance profile with {facts['instance_profile_input']}; v{facts['stay_major']} keeps "
                         "managing the alpha nodes)")
        return True

    def instance_profile_input(self, p: str, b: hclsrc.Block, facts: dict) -> None:
        if not self.uses_role:
            return
        name = facts["instance_profile_input"]
        text = self.repo.text(p)
        cur = b.attr(name)
        if cur is not None:
            if cur.literal() is True:
                return
            self.res.edits.append(TextEdit(p, cur.start, cur.end, "true", RULE))
        else:
            last = max(b.attributes.values(), key=lambda a: a.end) if b.attributes else None
            ind = indent_at(text, last.start) if last else "  "
            pos = line_start(text, b.body_end)
            ins = f"\n{ind}# v1beta1: Karpenter creates instance profiles from EC2NodeClass.spec.role\n{ind}{name} = true\n"
            self.res.edits.append(TextEdit(p, pos, pos, to_newline(ins, self.repo.files[p].newline), RULE))
        self.finding("MIG-MOD-004", "info", p, hclsrc.line_of(text, b.start),
                     f"{b.address}: {name} = true (EC2NodeClasses use spec.role; the controller needs the "
                     "iam:*InstanceProfile permissions)")

    def discovery_tag(self, p: str, b: hclsrc.Block, facts: dict) -> None:
        attr = b.attr(facts["discovery_tag_input"])
        key = attr.literal() if attr is not None and attr.literal() else facts["discovery_tag_default"]
        for m in self.manifests:
            if m.era != "alpha" or m.kind != "AWSNodeTemplate":
                continue
            tags = (m.obj.get("spec") or {}).get("tags") or {}
            if key not in tags:
                self.finding("MIG-MOD-005", "warning", m.path, m.line,
                             f"{b.address} (v19) lets the controller terminate only instances tagged {key}; "
                             f"AWSNodeTemplate {m.masked.unmask(str(m.name))} (and its EC2NodeClass) does not set it",
                             f"add tag {key}: <cluster name> to spec.tags, or nodes cannot be terminated")

    def blueprints(self, p: str, b: hclsrc.Block) -> None:
        text = self.repo.text(p)
        self.finding("MIG-MOD-006", "warning", p, hclsrc.line_of(text, b.start),
                     f"{b.address} (eks-blueprints-addons) installs Karpenter: its own karpenter values "
                     "(karpenter.values / karpenter.set) and karpenter_enable_instance_profile_creation are not "
                     "rewritten by migrator (the chart version is, at karpenter.chart_version)",
                     "move settings.aws.* values you pass to settings.*, and keep "
                     "karpenter_enable_instance_profile_creation = true (the add-on >= 1.12 keeps the instance "
                     "profile while old nodes use it)")
