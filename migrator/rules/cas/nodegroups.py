"""Rule `cas/nodegroups`: the node groups Karpenter takes over go to zero nodes (phase `cutover`, the groups stay
for rollback) and are removed (phase `cleanup`); the group kept for the controller is sized for it (at least two
nodes, as the guide keeps it) and stays. terraform-aws-modules/eks groups are edited in their map entry,
`aws_eks_node_group` in its `scaling_config`."""
# The sizes and the removal are in groups/ (docs/design.md).
from __future__ import annotations

from ...edits import coalesced
from ...model import Finding
from ...sources import hcl as hclsrc
from . import convert
from .groups.common import KEEP_MIN, GroupsResult, _tuple_without, eks_name  # noqa: F401 - eks_name read from here
from .groups.removal import GroupRemoval
from .groups.sizes import GroupSizes


class Groups(GroupSizes, GroupRemoval):
    """The node groups Karpenter takes over to zero (cutover) and removed (cleanup), the kept one sized: run() decides,
    groups/ writes."""

    def __init__(self, ctx, phase: str):
        self.ctx, self.phase, self.repo = ctx, phase, ctx.repo
        self.res = GroupsResult()
        self._sited: set[tuple[str, int]] = set()      # where a size variable's value was written this run
        self._floor = False                             # sizing the kept group: a value is only raised (size())

    def run(self) -> GroupsResult:
        cas = convert.inventory(self.ctx)
        if cas is None or not cas.groups or not convert.taken_over(self.ctx) or not (self.ctx.charts or cas.clusters):
            return self.res             # no group is drained before Karpenter's chart is in (eksctl: by helm)
        shapes = [convert.shape(g) for g in cas.groups]
        if convert.on_fargate(self.ctx):
            kept = None
        else:
            from .install.clusters import zone_pinned
            kept, _ = convert.kept_group(shapes, self.ctx.options.node_group_keep, zone_pinned(self.repo, cas, shapes))
            if kept is None:
                return self.res
            self.res.kept = kept.group.name
        pools = convert.taken_over(self.ctx)
        self.removing = {id(g) for g in cas.groups if g.name in pools and not (kept is not None and g is kept.group)}
        self.all_groups = cas.groups
        self.blocks_done: set[tuple[str, int]] = set()     # (file, offset): blocks edited once
        self._list_drops: dict[tuple[str, int], tuple[hclsrc.Expr, list]] = {}   # items leaving a for_each list
        held = self._followers(cas) if self.phase == "cleanup" else set()
        self.removing -= held                   # a group something else still reads stays (at zero nodes)
        for g in cas.groups:
            if id(g) in held:
                continue
            if g.made_by and not self.whole_block(g, kept):
                continue
            if kept is not None and g is kept.group:
                if self.phase == "cutover":
                    self.size(g, KEEP_MIN, KEEP_MIN, keep=True)
                continue
            if g.name not in pools:
                self.res.findings.append(Finding(
                    "MIG-CAS-024", "warning", g.path, g.line,
                    f"node group {g.name} has no NodePool of its name, so migrator does not drain or remove it",
                    "add its NodePool (or drain and remove the group by hand once its pods run elsewhere)"))
                continue
            if self.phase == "cutover":
                self.size(g, 0, 0)
            elif self.phase == "cleanup":
                self.remove(g)
        for (p, _), (lst, items) in self._list_drops.items():
            self.res.edits.extend(_tuple_without(self.repo.text(p), p, lst, items))
        self._emptied_maps()
        self._emptied_headings()
        self.res.edits = coalesced(self.res.edits, self.repo.text)
        return self.res

def run(ctx, phase: str, done: dict | None = None) -> GroupsResult:
    return Groups(ctx, phase).run()


