"""Auto Mode on a hand-written aws_eks_cluster: the three capability blocks, the cluster role's policies where the root
owns that role, a node role with its policies (and the old node role's extra attachments carried) and an EC2
access entry."""
from __future__ import annotations

import posixpath
import re

from ....edits import NewFile, TextEdit, indent_at, to_newline
from ....inventory.sites import static_value
from ....sources import hcl as hclsrc
from .common import CL, FACTS, NEW_FILE, RULE, _aligned, _dir, _find, _insert_at_end, _snake


class HandWrittenCluster:
    """A hand-written aws_eks_cluster: the capability blocks, the cluster role's policies, a node role with its
    policies and an EC2 access entry."""

    # -- a hand-written aws_eks_cluster -----------------------------------------------------------------------------
    def resource(self, p: str, b: hclsrc.Block) -> None:
        text, nl, res = self.start(p, b, "resource")
        name_expr = b.attr("name")
        res.cluster_literal = static_value(self.repo, "" if res.dir == "." else res.dir, name_expr) \
            if name_expr is not None else None
        if not isinstance(res.cluster_literal, str):
            res.cluster_literal = None
        ind = indent_at(text, next(iter(b.attributes.values())).start) if b.attributes else "  "
        cc = [x for x in b.blocks if x.type == "compute_config"]
        on = bool(cc) and cc[0].attr("enabled") is not None and cc[0].attr("enabled").literal() is True
        res.enabled = on
        body = ""
        if not cc:
            body += (f"{ind}# EKS Auto Mode: compute, load balancing and block storage together, no built-in node "
                     f"pool (migrator){nl}{ind}compute_config {{{nl}"
                     f"{_aligned(ind * 2, [('enabled', 'true'), ('node_pools', '[]')], nl)}{ind}}}{nl}")
        elif not on:
            e = cc[0].attr("enabled")
            if e is not None:
                self.edit(TextEdit(p, e.start, e.end, "true", RULE))
        knc = [x for x in b.blocks if x.type == "kubernetes_network_config"]
        if not knc:
            body += (f"{nl}{ind}kubernetes_network_config {{{nl}{ind * 2}elastic_load_balancing {{{nl}"
                     f"{ind * 3}enabled = true{nl}{ind * 2}}}{nl}{ind}}}{nl}")
        elif not any(x.type == "elastic_load_balancing" for x in knc[0].blocks):
            inner = indent_at(text, next(iter(knc[0].attributes.values())).start) if knc[0].attributes else ind * 2
            self.edit(_insert_at_end(text, p, knc[0], f"{inner}elastic_load_balancing {{{nl}{inner}{ind}enabled = "
                                                      f"true{nl}{inner}}}{nl}", nl))
        if not any(x.type == "storage_config" for x in b.blocks):
            body += (f"{nl}{ind}storage_config {{{nl}{ind * 2}block_storage {{{nl}{ind * 3}enabled = true{nl}"
                     f"{ind * 2}}}{nl}{ind}}}{nl}")
        if body:
            self.edit(_insert_at_end(text, p, b, body, nl))
        ac = [x for x in b.blocks if x.type == "access_config"]
        mode = ac[0].attr("authentication_mode") if ac else None
        # the mode as the root states it: a literal, or a variable's default / tfvars, a local (followed)
        stated = static_value(self.repo, "" if res.dir == "." else res.dir, mode) if mode is not None else "CONFIG_MAP"
        if mode is not None and not isinstance(stated, str):
            _find(res, "MIG-AUTO-006", "error", p, hclsrc.line_of(text, mode.start),
                  f"{b.address} sets authentication_mode to {mode.source.strip()}, whose value the repository does "
                  "not state, and Auto Mode's node role joins the cluster through an access entry (type EC2), which "
                  "CONFIG_MAP does not have",
                  "state the mode where the root can read it (a literal, a variable's default or tfvars beside the "
                  "root): API or API_AND_CONFIG_MAP (switch and apply it first if the cluster is on CONFIG_MAP), then "
                  "run migrator again")
        elif stated not in CL["access_entry_modes"]:
            _find(res, "MIG-AUTO-006", "error", p, hclsrc.line_of(text, (mode.start if mode is not None else b.start)),
                  f"{b.address} authenticates through aws-auth only ("
                  + (f"authentication_mode {mode.source.strip()}" + ("" if mode.literal() else f" = {stated}")
                     if mode is not None else "no access_config: CONFIG_MAP")
                  + "), and Auto Mode's node role joins the cluster through an access entry (type EC2)",
                  ("if `aws eks describe-cluster --name <cluster> --query cluster.accessConfig.authenticationMode` "
                   "already says API or API_AND_CONFIG_MAP (switched outside Terraform), state it in access_config; "
                   "otherwise " if mode is None else "")
                  + "switch the cluster to API_AND_CONFIG_MAP first (access_config { authentication_mode = "
                  "\"API_AND_CONFIG_MAP\" } with bootstrap_cluster_creator_admin_permissions as the cluster was "
                  "created: a change of it replaces the cluster), apply, then run migrator again")
        label = b.labels[1]
        node_role = FACTS["naming"]["node_role_label"]
        cname = f"aws_eks_cluster.{label}.name"
        res.role_literal = (res.cluster_literal + "-auto-mode-node") if res.cluster_literal else None
        if res.role_literal is None:
            res.role_unknown = f"the node role migrator writes beside {b.address} is named after the cluster's name " \
                               f"({name_expr.source.strip() if name_expr is not None else 'name'}), whose value the " \
                               "repository does not state"
        res.role_expr = f"aws_iam_role.{node_role}.name"
        res.targets.append((res.dir, b.address))
        extra = self.cluster_role(p, b, nl) + self.node_role(res.dir, node_role, name_expr, nl)
        self.access_entry(res.dir, cname, f"aws_iam_role.{node_role}.arn", nl, extra=extra)
        self.provider(res.dir, CL["provider_floor"]["resource"])
        for ap, ab in self.repo.blocks("resource", "aws_eks_addon"):
            if _dir(ap) == res.dir:
                self.addon_resource(ap, ab)

    def cluster_role(self, p: str, b: hclsrc.Block, nl: str) -> str:
        """The four Auto Mode policies on the cluster role, and sts:TagSession in its trust, where the root owns it."""
        role = b.attr("role_arn")
        m = re.fullmatch(r"aws_iam_role\.([A-Za-z0-9_-]+)\.arn", role.source.strip()) if role is not None else None
        owned = None
        if m:
            owned = next(((rp, rb) for rp, rb in self.repo.blocks("resource", "aws_iam_role")
                          if _dir(rp) == self.res.dir and rb.labels[1] == m.group(1)), None)
        if owned is None:
            _find(self.res, "MIG-AUTO-009", "warning", p, hclsrc.line_of(self.repo.text(p), b.start),
                  f"{b.address}: its cluster role ({role.source.strip() if role is not None else 'not set'}) is not a "
                  "role of this module: Auto Mode needs four more policies on it and sts:TagSession in its trust",
                  "attach " + ", ".join(CL["cluster_role_policies"]) + " to the cluster role and allow sts:AssumeRole "
                  "and sts:TagSession for eks.amazonaws.com in its trust policy, before the enable step")
            return ""
        rp, rb = owned
        have = {str((x.attr("policy_arn").source if x.attr("policy_arn") is not None else ""))
                for _, x in self.repo.blocks("resource", "aws_iam_role_policy_attachment")}
        out = ""
        for pol in CL["cluster_role_policies"]:
            if any(pol in h for h in have):
                continue
            out += (f'{nl}resource "aws_iam_role_policy_attachment" "cluster_{_snake(pol)}" {{{nl}'
                    f'  policy_arn = "{self.arn(self.res.dir, f"arn:aws:iam::aws:policy/{pol}")}"{nl}'
                    f'  role       = aws_iam_role.{m.group(1)}.name'
                    f"{nl}}}{nl}")
        trust = rb.attr("assume_role_policy")
        rtext = self.repo.text(rp)
        if trust is not None and "sts:TagSession" not in trust.source:
            doc = re.search(r"data\.aws_iam_policy_document\.([A-Za-z0-9_-]+)\.json", trust.source)
            target = None
            if doc:
                target = next(((dp, db) for dp, db in self.repo.blocks("data", "aws_iam_policy_document")
                               if _dir(dp) == self.res.dir and db.labels[1] == doc.group(1)), None)
            if target is not None:
                dp, db = target
                acts = [a for s in db.sub("statement") for a in [s.attr("actions")] if a is not None
                        and '"sts:AssumeRole"' in a.source]
                if len(acts) == 1 and "sts:TagSession" not in self.repo.text(dp)[db.start:db.end]:
                    a = acts[0]
                    self.edit(TextEdit(dp, a.start, a.end, a.source.replace('"sts:AssumeRole"',
                                                                            '"sts:AssumeRole", "sts:TagSession"', 1),
                                       RULE))
                    target = True
            elif re.search(r'Action\s*=\s*"sts:AssumeRole"', trust.source) and trust.source.count("sts:AssumeRole") == 1:
                new = re.sub(r'Action\s*=\s*"sts:AssumeRole"', 'Action = ["sts:AssumeRole", "sts:TagSession"]',
                             trust.source, count=1)
                self.edit(TextEdit(rp, trust.start, trust.end, new, RULE))
                target = True
            if target is not True:
                _find(self.res, "MIG-AUTO-009", "warning", rp, hclsrc.line_of(rtext, trust.start),
                      f"{rb.address}: its trust policy must also allow sts:TagSession for eks.amazonaws.com, and "
                      "migrator cannot edit it where it is written",
                      "add sts:TagSession next to sts:AssumeRole in the cluster role's trust policy")
        return out

    def node_extras(self, where: str) -> list:
        """The plain hand-written attachments on Karpenter's node role (handwritten.node_extras); the others said."""
        from ..handwritten import node_extras
        found = node_extras(self.ctx, self.res.dir)
        for a, p, line, arn, ok in found:
            if not ok:
                _find(self.res, "MIG-AUTO-046", "warning", p, line,
                      f"{a} gives Karpenter's nodes {arn}, which migrator cannot carry to the Auto Mode node role "
                      "(it is written with count or for_each)",
                      f"if workloads on the new nodes need it, add it to {where} before they move")
        return [x for x in found if x[4]]

    def node_role(self, d: str, label: str, name_expr, nl: str) -> str:
        if any(_dir(p) == d and b.labels[1] == label for p, b in self.repo.blocks("resource", "aws_iam_role")):
            return ""
        base = name_expr.source.strip() if name_expr is not None else '"cluster"'
        name = f'"${{{base}}}-auto-mode-node"' if not (name_expr and name_expr.literal()) else \
            hclsrc.quote(str(name_expr.literal()) + "-auto-mode-node")
        out = (f'{nl}# The node role of the Auto Mode NodeClasses (the built-in pools are not used){nl}'
               f'resource "aws_iam_role" "{label}" {{{nl}  name = {name}{nl}  assume_role_policy = jsonencode({{{nl}'
               f'    Version = "2012-10-17"{nl}    Statement = [{{{nl}      Effect    = "Allow"{nl}'
               f'      Principal = {{ Service = "ec2.amazonaws.com" }}{nl}'
               f'      Action    = ["sts:AssumeRole", "sts:TagSession"]{nl}    }}]{nl}  }}){nl}}}{nl}')
        for pol in CL["node_role_policies"]:
            out += (f'{nl}resource "aws_iam_role_policy_attachment" "{label}_{_snake(pol)}" {{{nl}'
                    f'  policy_arn = "{self.arn(d, f"arn:aws:iam::aws:policy/{pol}")}"{nl}'
                    f'  role       = aws_iam_role.{label}.name'
                    f"{nl}}}{nl}")
        for a, _, _, arn, _ in self.node_extras(f"aws_iam_role.{label}"):   # what Karpenter's nodes had beyond those
            self.res.notes.append(f"{a} carried to aws_iam_role.{label}")
            out += (f'{nl}# carried from {a}, on Karpenter\'s node role (migrator){nl}'
                    f'resource "aws_iam_role_policy_attachment" "{label}_{a.split(".", 1)[1]}" {{{nl}'
                    f'  policy_arn = {arn}{nl}'
                    f'  role       = aws_iam_role.{label}.name'
                    f"{nl}}}{nl}")
        return out

    def access_entry(self, d: str, cluster: str, principal: str, nl: str, module=None, extra: str = "") -> None:
        """The node role's access entry of type EC2 with AmazonEKSAutoNodePolicy, in a file of its own."""
        have = any(_dir(p) == d and (b.attr("type") is not None and b.attr("type").literal() == CL["access_entry_type"])
                   for p, b in self.repo.blocks("resource", "aws_eks_access_entry"))
        if module is not None:
            entries = module.attr("access_entries")
            if entries is not None and re.search(r'type\s*=\s*"EC2"', entries.source):
                have = True
        path = posixpath.join("" if d == "." else d, NEW_FILE)
        if have or path in self.repo.files:
            if extra and path not in self.repo.files:
                self.edit(NewFile(path, to_newline(extra.lstrip("\n"), nl), RULE))
            return
        body = (f"# EKS Auto Mode (written by migrator): the nodes of the custom NodeClasses join the cluster with "
                f"this role{nl}# through an access entry of type EC2{nl}"
                f'resource "aws_eks_access_entry" "auto_mode_node" {{{nl}'
                f"  cluster_name  = {cluster}{nl}  principal_arn = {principal}{nl}"
                f'  type          = "{CL["access_entry_type"]}"{nl}}}{nl}{nl}'
                f'resource "aws_eks_access_policy_association" "auto_mode_node" {{{nl}'
                f"  cluster_name  = {cluster}{nl}  principal_arn = {principal}{nl}"
                f'  policy_arn    = "{self.arn(d, CL["access_policy"])}"{nl}{nl}  access_scope {{{nl}    type = "cluster"{nl}  }}{nl}'
                f"{nl}  depends_on = [aws_eks_access_entry.auto_mode_node]{nl}}}{nl}")
        self.edit(NewFile(path, to_newline(body + extra, nl), RULE))
        self.res.targets += [(d, "aws_eks_access_entry.auto_mode_node"),
                             (d, "aws_eks_access_policy_association.auto_mode_node")]
