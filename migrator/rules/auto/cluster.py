"""Rule `auto/cluster`: EKS Auto Mode turned on for the root's cluster, in place (phase `enable`).

Where the root declares its cluster (knowledge/auto_mode.yaml `cluster`):
  terraform-aws-modules/eks v20.31+ / v21: `cluster_compute_config` / `compute_config` = { enabled = true,
      node_pools = [] } (no built-in pool while workloads move), the module's Auto Mode node role named without a
      random suffix, on v20 `bootstrap_self_managed_addons` pinned to true (the value v20 clusters were created
      with; unset, 20.31+ turns it false and replaces the cluster), a v20 pin below 20.31 raised within v20;
  a hand-written `aws_eks_cluster`: the three capability blocks, a node role with its two policies, and the
      cluster role's four policies where the root owns that role;
  both: an access entry of type EC2 for the node role (the custom NodeClasses' nodes join with it), the AWS provider
      constraint raised where it cannot enable in place, EKS add-on pins below Auto Mode's minimums raised.
Every phase reads the result (the node role the NodeClasses name); only `enable` writes.
"""
from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field

from ... import knowledge
from ...cas import scan
from ...edits import Edit, NewFile, TextEdit, indent_at, line_end, line_start, to_newline
from ...inventory.sites import static_value
from ...model import Finding
from ...sources import hcl as hclsrc
from ...versions import constraint, newest_admitted, parse_version

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


class ClusterRule:
    def __init__(self, ctx, phase: str):
        self.ctx, self.repo, self.phase = ctx, ctx.repo, phase
        self.res = ClusterResult()
        self.write = phase == "enable"

    def edit(self, e: Edit) -> None:
        if self.write:
            self.res.edits.append(e)

    def arn(self, d: str, arn: str) -> str:
        """An AWS-managed ARN in the partition of the module's cluster: `data.aws_partition.<x>.partition` where the
        module declares one, the partition of its provider's literal region (China, GovCloud), else `aws`."""
        part = next((f"${{data.aws_partition.{b.labels[1]}.partition}}" for p, b in self.repo.blocks("data", "aws_partition")
                     if _dir(p) == d), None)
        if part is None:
            for p, b in self.repo.blocks("provider", "aws"):
                region = b.attr("region").literal() if _dir(p) == d and b.attr("region") is not None else None
                part = next((v for k, v in CL["partitions"].items() if isinstance(region, str) and
                             region.startswith(k)), None) or part
        return arn.replace("arn:aws:", f"arn:{part}:", 1) if part else arn

    def run(self) -> ClusterResult:
        owns = self.ctx.owns
        inv = scan(self.repo)
        modules = [(p, b) for p, b in inv.eks_modules if owns(p)]
        # a cluster inside a module this root calls by relative source is that module's own (other roots may call
        # it too): the root declares its cluster through the module call, which migrator does not edit
        from ...roots import _module_users
        resources, called = [], []
        for p, b in self.repo.blocks("resource", "aws_eks_cluster"):
            if owns(p):
                (called if _module_users(self.repo, "" if _dir(p) == "." else _dir(p)) else resources).append((p, b))
        eksctl = [(p, d, o) for p, d, o in inv.clusters if owns(p)]
        found = len(modules) + len(resources) + len(eksctl)
        if found > 1:
            # several clusters in the root's files: the one Karpenter is installed beside (its chart, its module)
            homes = {_dir(c.path) for c in self.ctx.charts if c.chart == "karpenter" and c.kind == "terraform"}
            from ..v1.terraform_module import modules as karpenter_modules
            homes |= {_dir(mp) for mp, _, _ in karpenter_modules(self.ctx)}
            near = ([x for x in modules if _dir(x[0]) in homes], [x for x in resources if _dir(x[0]) in homes],
                    [x for x in eksctl if _dir(x[0]) in homes])
            if sum(map(len, near)) == 1:
                modules, resources, eksctl = near
                found = 1
        if found == 0:
            where = sorted({_dir(p) for p, _ in inv.eks_modules} |
                           {_dir(p) for p, _ in self.repo.blocks("resource", "aws_eks_cluster")} |
                           {_dir(p) for p, _, _ in inv.clusters})
            inside = f" (it is made inside the module in {', '.join(sorted({_dir(p) for p, _ in called}))}, which " \
                "this root calls by relative source: migrator does not edit a module other roots may call)" \
                if called else f" (the repository declares clusters in {', '.join(where)})" if where else ""
            _find(self.res, "MIG-AUTO-002", "warning", "", 0,
                  "this root does not declare its EKS cluster" + inside
                  + ": migrator cannot turn Auto Mode on or name its node role",
                  "turn EKS Auto Mode on where the cluster is declared (compute_config enabled, elastic load "
                  "balancing and block storage enabled, no built-in node pool) and create a node role with an EC2 "
                  "access entry before the nodepools phase; run migrator with --auto-mode-node-role <its name>")
            self.res.role_literal = self.ctx.options.auto_mode_node_role
            return self.res
        if found > 1:
            _find(self.res, "MIG-AUTO-001", "error", "", 0,
                  f"this root declares {found} EKS clusters ("
                  + ", ".join([b.address for _, b in modules] + [b.address for _, b in resources]
                              + [str((o.get('metadata') or {}).get('name')) for _, _, o in eksctl])
                  + "): migrator cannot tell which one the Karpenter objects run in",
                  "split the roots (one cluster each) or plan the move by hand")
            return self.res
        if modules:
            self.module(*modules[0])
        elif resources:
            self.resource(*resources[0])
        else:
            self.eksctl(*eksctl[0])
        if self.ctx.options.auto_mode_node_role:
            self.res.role_literal = self.ctx.options.auto_mode_node_role
        return self.res

    def start(self, p: str, b: hclsrc.Block, installer: str) -> tuple[str, str, ClusterResult]:
        """The cluster's installer, address and module, recorded in the result; the file's text and newline."""
        text, res = self.repo.text(p), self.res
        res.installer, res.address, res.dir = installer, b.address, _dir(p)
        res.where = f"{p}:{hclsrc.line_of(text, b.start)}"
        return text, self.repo.files[p].newline, res

    # -- terraform-aws-modules/eks ----------------------------------------------------------------------------------
    def module(self, p: str, b: hclsrc.Block) -> None:
        text, nl, res = self.start(p, b, "module")
        v = b.attr("version")
        raw = str(v.literal()) if v is not None and v.literal() is not None else ""
        if not raw:
            src = str((b.attr("source").literal() if b.attr("source") is not None else "") or "")
            m = re.search(r"ref=v?(\d+\.\d+\.\d+)", src)
            raw = m.group(1) if m else ""
        floor = constraint(raw)[1] if raw else None
        if floor is None:
            _find(res, "MIG-AUTO-004", "error", p, hclsrc.line_of(text, b.start),
                  f"{b.address} has no version migrator can read ({raw or 'none'}): Auto Mode needs v20.31 or later, "
                  "and its input differs between v20 and v21",
                  "pin the module's version, then run migrator again")
            return
        major = floor[0]
        res.major = major
        if str(major) not in MOD["input"]:
            _find(res, "MIG-AUTO-003", "error", p, hclsrc.line_of(text, (v or b.attr("source")).start),
                  f"{b.address} is terraform-aws-modules/eks v{major} ({raw}): EKS Auto Mode needs v20.31 or later",
                  "move the module to v20 first (its docs/UPGRADE-20.0.md: access entries replace aws-auth), then run "
                  "migrator again")
            return
        key = str(major)
        cluster = b.attr(MOD["cluster_name_input"][key])
        res.cluster_literal = static_value(self.repo, "" if res.dir == "." else res.dir, cluster) \
            if cluster is not None else None
        if not isinstance(res.cluster_literal, str):
            res.cluster_literal = None
        name = b.labels[0]
        want_input = MOD["input"][key]
        lines: list[tuple[str, str]] = []
        # the version: a v20 pin that cannot reach 20.31 moves within v20
        since = MOD["since"][key]
        got = newest_admitted(raw, MOD["newest"].get(key, "99.0.0"))
        if major == 20 and (got is None or got < parse_version(since)) and v is not None:
            self.edit(TextEdit(p, v.start, v.end, hclsrc.quote(MOD["repin"][key]), RULE))
            res.notes.append(f"{b.address} version {raw} -> {MOD['repin'][key]} (Auto Mode needs {since}+)")
            _find(res, "MIG-AUTO-005", "info", p, hclsrc.line_of(text, v.start),
                  f"{b.address}: version {raw} cannot enable Auto Mode (it came in {since}); raised to "
                  f"{MOD['repin'][key]}, the last v20 (terraform init -upgrade)")
        # the compute config
        cc = b.attributes.get(want_input)
        if cc is not None:
            enabled = next((e.value for e in cc.expr.entries if e.key == "enabled"), None)
            if enabled is not None and enabled.literal() is True:
                res.enabled = True
                pools = next((e.value for e in cc.expr.entries if e.key == "node_pools"), None)
                if pools is not None and "general-purpose" in pools.source:
                    _find(res, "MIG-AUTO-007", "info", p, hclsrc.line_of(text, cc.start),
                          f"{b.address}: Auto Mode is on with the built-in general-purpose pool: pods may land on it "
                          "before their selectors move (it is not selective)", "")
            elif enabled is not None and enabled.literal() is False:
                self.edit(TextEdit(p, enabled.start, enabled.end, "true", RULE))
            else:
                _find(res, "MIG-AUTO-008", "error", p, hclsrc.line_of(text, cc.start),
                      f"{b.address}: {want_input} is an expression migrator cannot read or extend "
                      f"({cc.expr.brief(80)})",
                      f"set {want_input} = {{ enabled = true, node_pools = [] }} by hand, then run migrator again")
                return
        else:
            ind = indent_at(text, next(iter(b.attributes.values())).start) if b.attributes else "  "
            body = (f"{ind}# EKS Auto Mode, with no built-in node pool while workloads move (migrator){nl}"
                    f"{ind}{want_input} = {{{nl}{_aligned(ind * 2, [('enabled', 'true'), ('node_pools', '[]')], nl)}"
                    f"{ind}}}{nl}")
            self.edit(_insert_at_end(text, p, b, body, nl))
        if "node_iam_role_use_name_prefix" not in b.attributes:
            lines.append(("node_iam_role_use_name_prefix", "false"))
        if MOD["pin_bootstrap"].get(key) and "bootstrap_self_managed_addons" not in b.attributes:
            lines.append(("bootstrap_self_managed_addons", "true"))
            res.notes.append(f"{b.address}: bootstrap_self_managed_addons = true, the value the cluster was created "
                             "with (unset, the module would turn it false and replace the cluster)")
        carried = self.karpenter_policies(b, text, nl)
        if lines:
            ind = indent_at(text, next(iter(b.attributes.values())).start) if b.attributes else "  "
            comment = f"{ind}# the Auto Mode node role keeps a fixed name (the NodeClasses name it) and the cluster " \
                      f"is changed in place (migrator){nl}"
            self.edit(_insert_at_end(text, p, b, comment + _aligned(ind, lines, nl), nl, order=4))
        if carried:
            ind = indent_at(text, next(iter(b.attributes.values())).start) if b.attributes else "  "
            self.edit(_insert_at_end(text, p, b, f"{ind}# the policies Karpenter's node role had beyond its own "
                                                 f"(migrator){nl}{ind}node_iam_role_additional_policies = {carried}{nl}",
                                     nl, order=5))
        # the node role's name
        role_name = b.attr("node_iam_role_name")
        lit = role_name.literal() if role_name is not None else None
        if lit is None and role_name is None and res.cluster_literal:
            lit = res.cluster_literal + MOD["node_role_name_suffix"]
        prefix = b.attr("node_iam_role_use_name_prefix")
        if prefix is not None and prefix.literal() is not False:
            lit = None                      # a random suffix: only the module's output knows the name
        res.role_literal = lit
        res.role_expr = f"module.{name}.{MOD['node_role_outputs']['name']}"
        auth = b.attr(MOD["authentication_input"])
        if auth is not None and auth.literal() is not None and auth.literal() not in CL["access_entry_modes"]:
            _find(res, "MIG-AUTO-006", "error", p, hclsrc.line_of(text, auth.start),
                  f"{b.address}: authentication_mode {auth.literal()} has no access entries, and Auto Mode's node "
                  "role joins the cluster through one (type EC2)",
                  "set authentication_mode = \"API_AND_CONFIG_MAP\" and apply it first, then run migrator again")
        res.targets.append((res.dir, f"module.{name}"))
        self.access_entry(res.dir, f"module.{name}.cluster_name", f"module.{name}.{MOD['node_role_outputs']['arn']}",
                          nl, module=b)
        self.provider(res.dir, CL["provider_floor"][key])
        self.addons(p, b.attr(MOD["addons_input"][key]), text)

    def karpenter_policies(self, b: hclsrc.Block, text: str, nl: str) -> str | None:
        """The karpenter module's extra node-role policies (SSM, S3...), for the Auto Mode node role: pods that used
        them through the node keep them."""
        if "node_iam_role_additional_policies" in b.attributes:
            return None
        from ..v1.terraform_module import modules
        for p, kb, _ in modules(self.ctx):
            extra = kb.attr("node_iam_role_additional_policies")
            if extra is None or not extra.source.strip() or extra.source.strip() == "{}":
                continue
            where = f"{p}:{hclsrc.line_of(self.repo.text(p), extra.start)}"
            if (posixpath.dirname(p) or ".") != self.res.dir or re.search(r"\bmodule\.karpenter\b|\beach\.",
                                                                           extra.source):
                _find(self.res, "MIG-AUTO-017", "warning", p, hclsrc.line_of(self.repo.text(p), extra.start),
                      f"{kb.address} gives Karpenter's nodes extra policies ({where}) that migrator cannot carry to "
                      "the Auto Mode node role", "give the Auto Mode node role the policies its pods still need")
                return None
            self.res.notes.append(f"the karpenter module's node_iam_role_additional_policies carried to {b.address}")
            return extra.source.strip()
        return self.handwritten_policies(b, text, nl)

    def handwritten_policies(self, b: hclsrc.Block, text: str, nl: str) -> str | None:
        """Policies attached by hand to Karpenter's node role, for the Auto Mode node role of the eks module in the
        same folder: one map entry per plain attachment, named after it. Attachments written with count or for_each
        (or in another folder) are said before the workloads move (MIG-AUTO-046), not at the cleanup only."""
        plain = self.node_extras("the eks module's node_iam_role_additional_policies")
        if not plain:
            return None
        ind = indent_at(text, next(iter(b.attributes.values())).start) if b.attributes else "  "
        width = max(len(a.split(".", 1)[1]) for a, *_ in plain)
        body = "".join(f"{ind}  {a.split('.', 1)[1].ljust(width)} = {arn}{nl}" for a, _, _, arn, _ in plain)
        self.res.notes.append(f"the node role's hand-written policies ({', '.join(a for a, *_ in plain)}) carried to "
                              f"{b.address}")
        return "{" + nl + body + ind + "}"

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
        if mode is None or mode.literal() not in CL["access_entry_modes"]:
            _find(res, "MIG-AUTO-006", "error", p, hclsrc.line_of(text, (mode.start if mode is not None else b.start)),
                  f"{b.address} authenticates through aws-auth only ("
                  + (f"authentication_mode {mode.source}" if mode is not None else "no access_config: CONFIG_MAP")
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
        from .handwritten import node_extras
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

    def provider(self, d: str, floor: str) -> None:
        for p in self.repo.tf_in_dir("" if d == "." else d):
            text = self.repo.text(p)
            m = re.search(r'\baws\s*=\s*\{[^}]*?version\s*=\s*("([^"]+)")', text, re.S)
            major = floor.split(".")[0]
            got = newest_admitted(m.group(2), f"{major}.999.0") if m else None
            if not m or got is None or got >= parse_version(floor):
                continue
            new = f">= {floor}, < {int(major) + 1}.0"
            self.edit(TextEdit(p, m.start(1), m.end(1), hclsrc.quote(new), RULE))
            self.res.notes.append(f"AWS provider {m.group(2)} -> {new}")
            _find(self.res, "MIG-AUTO-011", "info", p, hclsrc.line_of(text, m.start(1)),
                  f"the AWS provider constraint {m.group(2)} cannot turn Auto Mode on in place (needs {floor}+): "
                  f"raised to {new} (terraform init -upgrade)")

    def addons(self, p: str, expr, text: str) -> None:
        if expr is None or expr.kind != "object":
            return
        for e in expr.entries:
            if e.value.kind != "object":
                continue
            ver = next((x.value for x in e.value.entries if x.key == "addon_version"), None)
            name = next((x.value.literal() for x in e.value.entries if x.key == "name"), None) or e.key
            self._raise_addon(p, text, str(name), ver)

    def addon_resource(self, p: str, b: hclsrc.Block) -> None:
        name = b.attr("addon_name")
        self._raise_addon(p, self.repo.text(p), str(name.literal()) if name is not None else "", b.attr("addon_version"))

    def _raise_addon(self, p: str, text: str, name: str, ver) -> None:
        want = FACTS["addon_minimums"].get(name)
        if ver is None or want is None or not isinstance(ver.literal(), str):
            return
        have = ver.literal()
        if isinstance(want, dict):
            minor = ".".join(have.lstrip("v").split(".")[:2])
            want = want.get(minor)
            if want is None:
                return
        if _addon_key(have) >= _addon_key(want):
            return
        self.edit(TextEdit(p, ver.start, ver.end, hclsrc.quote(want), RULE))
        self.res.notes.append(f"add-on {name} {have} -> {want}")
        _find(self.res, "MIG-AUTO-012", "info", p, hclsrc.line_of(text, ver.start),
              f"EKS add-on {name} {have} is older than Auto Mode needs: raised to {want}")

    # -- eksctl -----------------------------------------------------------------------------------------------------
    def eksctl(self, p: str, doc, obj) -> None:
        res = self.res
        res.installer, res.eksctl_file = "eksctl", p
        meta = obj.get("metadata") or {}
        res.address = str(meta.get("name"))
        res.cluster_literal = str(meta.get("name")) if meta.get("name") else None
        res.partition = next((v for k, v in CL["partitions"].items() if str(meta.get("region") or "").startswith(k)),
                             "aws")
        amc = obj.get("autoModeConfig")
        res.where = f"{p}:{self.repo.text(p).count(chr(10), 0, doc.start) + 1}"
        role = f"{res.cluster_literal}{CL['eksctl']['node_role_suffix']}" if res.cluster_literal else None
        if isinstance(amc, dict) and amc.get("enabled") is True:
            res.enabled = True
            arn = amc.get("nodeRoleARN")
            res.role_literal = arn.rsplit("/", 1)[1] if isinstance(arn, str) and "/" in arn else role
            return
        text = self.repo.text(p)
        nl = self.repo.files[p].newline
        res.role_literal = role
        if isinstance(amc, dict) and amc.get("enabled") is False:
            ln, col = amc.lc.value("enabled")
            lines = doc.text.splitlines(keepends=True)
            at = doc.start + sum(len(x) for x in lines[:ln]) + col
            self.edit(TextEdit(p, at, at + len("false"), "true", RULE))
        elif amc is None:
            end = doc.end
            while end > doc.start and text[end - 1] in "\r\n":
                end -= 1
            self.edit(TextEdit(p, end, end, f"{nl}{nl}# EKS Auto Mode, with no built-in node pool while workloads move "
                                            f"(migrator){nl}autoModeConfig:{nl}  enabled: true{nl}  nodePools: []",
                               RULE))
        else:
            _find(res, "MIG-AUTO-013", "warning", p, 1,
                  f"eksctl cluster {res.address}: autoModeConfig is written in a way migrator does not edit",
                  f"set autoModeConfig: {{enabled: true, nodePools: []}} in {p} by hand, then run migrator again")
            return
        res.notes.append(f"{p}: autoModeConfig enabled with no built-in node pool; the node role {role} of the "
                         "NodeClasses and its EC2 access entry are created by the commands below")
        self.eksctl_addons(p, doc, obj)

    def eksctl_addons(self, p: str, doc, obj) -> None:
        """`addons[].version` below Auto Mode's minimums raised in place (eksctl applies them with
        `eksctl update addon -f`); `latest` and unset versions are left alone."""
        text = self.repo.text(p)
        lines = doc.text.splitlines(keepends=True)
        for item in obj.get("addons") or []:
            if not isinstance(item, dict) or "version" not in item:
                continue
            have, want = str(item.get("version")), FACTS["addon_minimums"].get(str(item.get("name")))
            if isinstance(want, dict):
                want = want.get(".".join(have.lstrip("v").split(".")[:2]))
            if want is None or not re.match(r"v?\d+\.\d+\.\d+", have) or _addon_key(have) >= _addon_key(want):
                continue
            ln, col = item.lc.value("version")
            at = doc.start + sum(len(x) for x in lines[:ln]) + col
            m = re.match(r'"[^"]*"|\'[^\']*\'|[^\s#]+', text[at:])
            quote = m.group(0)[0] if m.group(0)[0] in "\"'" else ""
            self.edit(TextEdit(p, at, at + m.end(), f"{quote}{want}{quote}", RULE))
            self.res.notes.append(f"add-on {item.get('name')} {have} -> {want}")
            self.res.eksctl_addons = True
            _find(self.res, "MIG-AUTO-012", "info", p, hclsrc.line_of(text, at),
                  f"EKS add-on {item.get('name')} {have} is older than Auto Mode needs: raised to {want} (eksctl "
                  f"update addon -f {p})")


def _snake(policy: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z][a-z])", "_", policy.replace("Amazon", "")).lower().replace("__", "_")


def _addon_key(v: str) -> tuple:
    m = re.match(r"v?(\d+)\.(\d+)\.(\d+)(?:-eksbuild\.(\d+))?", v)
    return tuple(int(x or 0) for x in m.groups()) if m else (0,)


def run(ctx, phase: str, done: dict | None = None) -> ClusterResult:
    return ClusterRule(ctx, phase).run()
