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
# The hand-written cluster and eksctl shapes are in enable/ (docs/design.md).
from __future__ import annotations

import posixpath
import re

from ...cas import scan
from ...edits import Edit, TextEdit, indent_at
from ...inventory.sites import static_value
from ...sources import hcl as hclsrc
from ...versions import constraint, newest_admitted, parse_version
from .enable.common import CL, ClusterResult, FACTS, MOD, RULE, _addon_key, _aligned, _dir, _find, _insert_at_end
from .enable.eksctl import EksctlCluster
from .enable.resource import HandWrittenCluster


class ClusterRule(HandWrittenCluster, EksctlCluster):
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
        eksctl = _cluster_configs([(p, d, o) for p, d, o in inv.clusters if owns(p)])
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
        if found > 1 and not modules and not resources and len({_named(o) for _, _, o in eksctl}) == 1:
            name, region = _named(eksctl[0][2])
            _find(self.res, "MIG-AUTO-001", "error", eksctl[0][0], 1,
                  f"{len(eksctl)} eksctl ClusterConfigs of this root declare the same cluster {name}"
                  f"{' (' + region + ')' if region else ''}: {', '.join(p for p, _, _ in eksctl)} (alternatives, or "
                  "copies): migrator cannot tell which one the cluster is made and updated from",
                  "keep in this root only the ClusterConfig the cluster is updated from (move the others out of it) "
                  "and run migrator again, or turn Auto Mode on by hand (eksctl update auto-mode-config -f <that "
                  "file>)")
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
        named_by = f"node_iam_role_name ({role_name.source.strip()})" if role_name is not None else \
            f"the cluster's name ({cluster.source.strip()})" if cluster is not None else "the cluster's name"
        res.role_unknown = "" if lit is not None else \
            f"{b.address} names it after {named_by}, whose value the repository does not state"
        prefix = b.attr("node_iam_role_use_name_prefix")
        if prefix is not None and prefix.literal() is not False:
            lit = None                      # a random suffix: only the module's output knows the name
            res.role_unknown = f"{b.address} names it only at apply time (node_iam_role_use_name_prefix)"
        res.role_literal = lit
        res.role_expr = f"module.{name}.{MOD['node_role_outputs']['name']}"
        auth = b.attr(MOD["authentication_input"])
        stated = static_value(self.repo, "" if res.dir == "." else res.dir, auth) if auth is not None else None
        if isinstance(stated, str) and stated not in CL["access_entry_modes"]:
            _find(res, "MIG-AUTO-006", "error", p, hclsrc.line_of(text, auth.start),
                  f"{b.address}: authentication_mode {stated} has no access entries, and Auto Mode's node "
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

def run(ctx, phase: str, done: dict | None = None) -> ClusterResult:
    return ClusterRule(ctx, phase).run()


def _named(o: dict) -> tuple[str, str]:
    """(name, region) of an eksctl ClusterConfig: the cluster it declares."""
    meta = o.get("metadata") if isinstance(o.get("metadata"), dict) else {}
    return str(meta.get("name")), str(meta.get("region") or "")


# what a ClusterConfig that only adds node groups to a cluster made elsewhere holds (`eksctl create nodegroup -f`)
_NODE_GROUPS_ONLY = {"apiVersion", "kind", "metadata", "managedNodeGroups", "nodeGroups"}


def _cluster_configs(found: list) -> list:
    """The eksctl ClusterConfigs that declare a cluster: one holding only node groups (`eksctl create nodegroup -f`)
    for a cluster another ClusterConfig of the root declares adds node groups to it, and is not another cluster."""
    full = {_named(o) for _, _, o in found if not set(o) <= _NODE_GROUPS_ONLY}
    return [(p, d, o) for p, d, o in found if not (set(o) <= _NODE_GROUPS_ONLY and _named(o) in full)]
