"""The karpenter.sh/discovery tag on the private subnets and the node security group the root declares, valued as the
cluster's name is written (never an output of the cluster: a cycle)."""
from __future__ import annotations

import posixpath
import re

from ....edits import TextEdit, line_start, to_newline
from ....inventory.sites import _module_blocks
from ....sources import hcl as hclsrc
from .clusters import _independent, _subnets_of
from .common import INSTALL, RULE, _find


class DiscoveryTags:
    """The karpenter.sh/discovery tag on the subnets and node security group the root declares."""

    # -- discovery tags -------------------------------------------------------------------------------------------
    def tag_value(self, d: str, literal: str | None) -> str | None:
        """The discovery tag's value as the expression the cluster's name comes from (the eks module's or the
        aws_eks_cluster's own name argument: a literal, a variable, a local of those), never an output of the
        cluster, which the tagged subnets and security group feed (a cycle `terraform validate` rejects). A name
        built from other blocks' outputs: the literal the root states, else None (tagged by the runbook)."""
        for p, b in list(self.cas.eks_modules) + list(self.repo.blocks("resource", "aws_eks_cluster")):
            if (posixpath.dirname(p) or ".") != d:
                continue
            for attr in INSTALL["cluster_name_inputs"]:
                e = b.attr(attr)
                if e is None:
                    continue
                if _independent(self.repo, d, e.source):
                    return e.source.strip()
                return hclsrc.quote(literal) if literal and not self.shared else None
        return hclsrc.quote(literal) if literal and not self.shared else None

    def tags(self, d: str, expr: str) -> None:
        """karpenter.sh/discovery on the private subnets and the node security group, where the root declares them:
        module vpc `private_subnet_tags`, module eks `node_security_group_tags`, the `aws_subnet` resources the node
        groups use. A security group Terraform does not declare (EKS's own cluster security group) is tagged by the
        runbook's aws-cli command."""
        places = [(p, b, "private_subnet_tags") for p, b in self.cas.vpc_modules] + \
                 [(p, b, "node_security_group_tags") for p, b in self.cas.eks_modules]
        subnets = set()
        for g in self.cas.groups:
            src = g.masked.unmask(str(g.fields.get("subnet_ids", "")))
            home = posixpath.dirname(g.home or g.path)
            for name in set(re.findall(r"\blocal\.([\w-]+)", src)):     # `local.subnets[count.index]`: its list
                src += "".join(b.attr(name).source for _, b in _module_blocks(self.repo, home, "locals")
                               if b.attr(name) is not None)
            subnets.update(re.findall(r"aws_subnet\.([A-Za-z0-9_-]+)", src))
        for p, b in self.repo.blocks("resource", "aws_eks_cluster"):
            for vc in b.sub("vpc_config"):
                e = vc.attr("subnet_ids")
                subnets.update(re.findall(r"aws_subnet\.([A-Za-z0-9_-]+)", e.source if e is not None else ""))
        places += [(p, b, "tags") for p, b in self.repo.blocks("resource", "aws_subnet")
                   if b.labels[1] in subnets and self.ctx.owns(p)]
        for p, b, attr in places:
            if (posixpath.dirname(p) or ".") != d:
                continue
            if self.add_entry(p, b, attr, expr):
                self.res.tagged.append(f"{b.address}.{attr}")
        self.res.sg_by_cli = not any(a.endswith("node_security_group_tags") for a in self.res.tagged)
        self.res.subnets_by_cli = not any(not a.endswith("node_security_group_tags") for a in self.res.tagged)
        cluster_subnets = self.cluster_subnets()
        sources = {g.name: _subnets_of(g) for g in self.cas.groups}
        if self.res.subnets_by_cli:         # the runbook tags every group's own subnets: each NodePool gets their
            union = {"the other node groups' subnets"} if len({k for k, _ in sources.values()}) > 1 else set()
            cluster_subnets = {frozenset(union): "the other node groups' subnets"} if union else {}
        for g in self.cas.groups:
            key, own = sources[g.name]
            if own and cluster_subnets and key not in cluster_subnets and g.name not in self.zoned:
                _find(self.res, "MIG-CAS-033", "warning", g.path, g.line,
                      f"node group {g.name} launches into {own}, not all of "
                      f"{', '.join(sorted(cluster_subnets.values()))}; its NodePool uses every subnet tagged "
                      f"{INSTALL['discovery_tag']}",
                      f"if the group's subnets were deliberate, give its EC2NodeClass subnetSelectorTerms by id "
                      f"(- id: <subnet id>) for them")

    def add_entry(self, p: str, b: hclsrc.Block, attr: str, expr: str) -> bool:
        tag = INSTALL["discovery_tag"]
        text = self.repo.text(p)
        nl = self.repo.files[p].newline
        e = b.attr(attr)
        entry = f'"{tag}" = {expr}'
        if e is not None and e.kind == "object":
            if any(x.key == tag for x in e.entries):
                return False
            if e.entries and hclsrc.line_of(text, e.start) == hclsrc.line_of(text, e.end):
                self._finding_manual(p, text, b, attr, tag, expr)
                return False
            if e.entries:
                last = e.entries[-1]
                ind = text[line_start(text, last.start):last.start]
                pos = text.index("\n", last.end) + 1 if "\n" in text[last.end:] else len(text)
                self.res.edits.append(TextEdit(p, pos, pos, to_newline(f"{ind}{entry}\n", nl), RULE))
            else:
                ind = text[line_start(text, b.attributes[attr].start):b.attributes[attr].start]
                self.res.edits.append(TextEdit(p, e.start, e.end, to_newline("{\n" + f"{ind}  {entry}\n{ind}}}", nl),
                                               RULE))
            return True
        if e is None:
            first = min(b.attributes.values(), key=lambda a: a.start) if b.attributes else None
            ind = text[line_start(text, first.start):first.start] if first else "  "
            pos = line_start(text, b.body_end)
            self.res.edits.append(TextEdit(p, pos, pos, to_newline(
                f"\n{ind}{attr} = {{\n{ind}  {entry}\n{ind}}}\n", nl), RULE, order=2))
            return True
        self._finding_manual(p, text, b, attr, tag, expr)
        return False

    def _finding_manual(self, p, text, b, attr, tag, expr) -> None:
        _find(self.res, "MIG-CAS-016", "warning", p, hclsrc.line_of(text, b.attributes[attr].start),
              f"{b.address}.{attr} is an expression migrator does not edit",
              f'add "{tag}" = {expr} to it by hand (Karpenter finds subnets and security groups by this tag)')
