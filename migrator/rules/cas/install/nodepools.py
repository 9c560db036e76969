"""The EC2NodeClasses and NodePools written from the node groups (validated against the target's CRDs), Cluster
Autoscaler's settings they carry, the zones a group keeps to, and the group that stays for the controller."""
from __future__ import annotations

import re
from typing import Any

from ....cas import nested, set_entries, yaml_values
from ....sources import hcl as hclsrc
from ....validate import validate_object
from .. import convert
from .clusters import _pinned_zones, cluster_subnets, zone_pinned
from .common import INSTALL, _find, _tokenised


class NodePools:
    """The EC2NodeClasses and NodePools written from the node groups, and the group that stays for the controller."""

    def settle(self, shapes: list, cas0, fargate: bool = False) -> tuple[Any, bool]:
        """The node groups' notes, the groups migrator cannot read, and where the controller runs: (the shape of
        the group that stays, or None on Fargate; whether the install can go on)."""
        res = self.res
        for s in shapes:
            res.findings.extend(s.notes)
        self.kubernetes_range(shapes)
        for p, line, what in self.cas.retired:
            _find(res, "MIG-CAS-069", "warning", p, line, f"{what}; the NodePools are written from each group's own "
                  "settings", "move the defaults' settings into each group (UPGRADE-21.0 of terraform-aws-modules/eks), "
                  "then plan again so the NodePools carry them")
        for p, line, what in self.cas.unread:
            _find(res, "MIG-CAS-032", "warning", p, line, f"{what}: migrator cannot tell its node groups, so it writes "
                  "no NodePool for them", "write a NodePool for each of those groups by hand (docs/"
                  "from-cluster-autoscaler.md has the mapping), then drain and remove them like the others")
        if fargate:
            res.kept, res.kept_why = "Fargate", "the root already runs Fargate profiles"
            p, b = self.cas.fargate[0]
            _find(res, "MIG-CAS-034", "info", p, hclsrc.line_of(self.repo.text(p), b.start),
                  "the Karpenter controller runs on a Fargate profile of its own (the root already uses Fargate), so "
                  "every node group is taken over", "keep a node group for it instead with --node-group-keep NAME")
            return None, True
        chosen = self.ctx.options.node_group_keep
        kept, why = convert.kept_group(shapes, chosen, zone_pinned(self.repo, self.cas, shapes))
        if kept is None:
            # a group the user named that is not there is a wrong input; no group fit to stay is a decision to make
            _find(res, "MIG-CAS-004", "error" if chosen else "warning", cas0.path, cas0.line,
                  f"no node group can stay for the controller: {why}; nothing is installed",
                  "the controller needs a node group that stays: on-demand, without taints (or with taints it "
                  "tolerates), min_size 1 or more. Name one with --node-group-keep NAME (or node_group_keep in "
                  ".migrator.yaml), or add one (or a Fargate profile for Karpenter's namespace: the controller then "
                  "runs there), apply it, and plan again")
            return None, False
        res.kept, res.kept_why = kept.group.name, why
        _find(res, "MIG-CAS-005", "info", kept.group.path, kept.group.line,
              f"node group {kept.group.name} stays and runs the Karpenter controller: {why}",
              "choose another with --node-group-keep NAME")
        return kept, True

    # -- objects --------------------------------------------------------------------------------------------------
    def objects(self, shapes, refs: dict[str, str], literal: str | None, names: dict[str, str]):
        res = self.res
        shapes = [s for s in shapes if s.carried]         # the others are said by their shape (MIG-CAS-010)
        pool_of = convert.pool_names([g.name for g in self.cas.groups])
        res.findings += convert.pool_name_notes([s.group for s in shapes], pool_of)
        groups: dict[tuple, str] = {}
        for s in shapes:
            groups.setdefault(s.class_key, pool_of[s.group.name])
        if len(groups) == 1:
            groups = {k: "default" for k in groups}
        classes = []
        role = "${%s}" % refs["node_iam_role_name"] if literal is None else names["node_role"]
        cluster = "${%s}" % refs["cluster"] if literal is None else literal
        made: dict[str, Any] = {}
        for s in shapes:
            name = groups[s.class_key]
            if name not in made:
                made[name] = convert.nodeclass(s, name, role, cluster)
                classes.append(made[name])
        extra = self.extra_args()
        pools = []
        for s in shapes:
            pool = convert.nodepool(s, pool_of[s.group.name], groups[s.class_key], convert.consolidate_after(extra),
                                    convert.weight(s.group, self.cas.priorities),
                                    widen=bool(self.ctx.options.widen_instance_types))
            pools.append(pool)
            res.pools.append((pool_of[s.group.name], s.group.name))
        bad = []
        for o in classes + pools:
            check = _tokenised(o)
            for release in sorted({self.target, "1.0.14"}):
                bad += [f"{o['kind']} {o['metadata']['name']}: {e} (CRD of {release})" for e in validate_object(check, release)]
        if bad:
            _find(res, "MIG-CAS-008", "error", self.cas.installs[0].path, self.cas.installs[0].line,
                  "the NodePools written from the node groups would not validate: " + "; ".join(bad[:3]),
                  "fix the node group fields named, or write the NodePools by hand; nothing was written")
            return None, None
        return pools, classes

    def extra_args(self) -> dict:
        """Cluster Autoscaler's extraArgs as written: `set` blocks, a yamlencode object, Flux values."""
        out: dict = {}
        flags: list = []
        for i in self.cas.installs:
            if i.kind in ("deployment", "kubectl"):
                spec = ((i.obj.get("spec") or {}).get("template") or {}).get("spec") or {}
                for c in spec.get("containers") or []:
                    flags += list(c.get("command") or []) + list(c.get("args") or [])
                continue
            if i.kind == "tfdeployment":             # command/args lists of the kubernetes provider's container
                pod = nested(i.block, "spec", "template", "spec")
                for c in (pod.sub("container") if pod is not None else []):
                    for e in (c.attr("command"), c.attr("args")):
                        flags += [x.literal() for x in (e.items if e is not None and e.kind == "tuple" else [])]
                continue
            if i.obj is not None:
                args = yaml_values(i).get("extraArgs") or {}
                out.update({str(k): v for k, v in args.items() if isinstance(v, (str, int))})
            if i.block is None:
                continue
            vals = i.block.attr("values")
            if i.kind == "wrapper":                   # a Helm release module: its values and set inputs
                vals = i.block.attr(i.row["values"]) if i.row.get("values") else None
                sets = i.block.attr(i.row["set"]) if i.row.get("set") else None
                for item in (sets.items if sets is not None and sets.kind == "tuple" else []):
                    kv = {e.key: e.value.literal() for e in item.entries} if item.kind == "object" else {}
                    if str(kv.get("name") or "").startswith("extraArgs.") and kv.get("value") is not None:
                        out[str(kv["name"]).split(".", 1)[1]] = kv["value"]
            elif i.row is not None:                   # an add-on module: its chart settings object
                cfg = i.block.attr(i.row["config"])
                vals = next((e.value for e in (cfg.entries if cfg is not None and cfg.kind == "object" else [])
                             if e.key == i.row.get("values")), None)
            for item in hclsrc.list_items(vals):
                if item.kind in ("heredoc", "string"):      # YAML text: `values = [<<EOT ... EOT]`, extra_values
                    args = (hclsrc.yaml_in(self.repo.text(i.path), item) or {}).get("extraArgs")
                    out.update({str(k): v for k, v in (args.items() if isinstance(args, dict) else [])
                                if isinstance(v, (str, int)) and "__MIG_" not in str(v)})
                    continue
                obj = hclsrc.encoded_object(item)
                if obj is not None:
                    for e in obj.entries:
                        if e.key == "extraArgs" and e.value.kind == "object":
                            out.update({x.key: x.value.literal() for x in e.value.entries if x.value.literal()})
            if i.row is not None:
                continue
            for n, v in set_entries(i.block):
                if n is not None and str(n.literal() or "").startswith("extraArgs.") and v is not None and v.literal():
                    out[str(n.literal()).split(".", 1)[1]] = v.literal()
        for a in flags:
            m = re.match(r"^--([a-z-]+)=(\S+)$", str(a)) if a is not None else None
            if m:
                out[m.group(1)] = m.group(2)
        return out

    def cluster_subnets(self) -> dict[frozenset, str]:
        return cluster_subnets(self.repo, self.cas)

    def zones(self, shapes: list) -> None:
        """A group that launches into subnets of some zones only (not the cluster's subnets) keeps its NodePool to
        those zones, where the repository states every subnet's zone (MIG-CAS-054); the others are said with the
        subnets at the discovery tags (MIG-CAS-033)."""
        cluster = self.cluster_subnets()
        for s in shapes:
            g = s.group
            zones = _pinned_zones(self.repo, g, cluster)
            if not zones:
                continue
            s.zones = zones
            self.zoned.add(g.name)
            _find(self.res, "MIG-CAS-054", "info", g.path, g.line,
                  f"node group {g.name} launches into {', '.join(zones)} only: its NodePool keeps to "
                  f"{'that zone' if len(zones) == 1 else 'those zones'} ({INSTALL['zone_label']}), in the subnets "
                  f"tagged {INSTALL['discovery_tag']} there")
