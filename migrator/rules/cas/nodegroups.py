"""Rule `cas/nodegroups`: the node groups Karpenter takes over go to zero nodes (phase `cutover`, the groups stay
for rollback) and are removed (phase `cleanup`); the group kept for the controller is sized for it (at least two
nodes, as the guide keeps it) and stays. terraform-aws-modules/eks groups are edited in their map entry,
`aws_eks_node_group` in its `scaling_config`."""
from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field

from ...cas import FACTS, NodeGroup, item_path
from ...edits import Edit, TextEdit, coalesced, comments_above, line_end, line_start, to_newline
from ...model import Finding
from ...inventory.sites import _module_blocks
from ...inventory.terragrunt import output_readers
from ...inventory.repo import JSON_TFVARS, TFVARS
from ...sources import jsonvars
from ...placement import block_span, emptied_headings
from ...sources import hcl as hclsrc
from ...sources.yamlspans import yaml_item_span
from . import convert

RULE = "cas/nodegroups"
KEEP_MIN = FACTS["install"]["kept_group_min"]


@dataclass
class GroupsResult:
    edits: list[Edit] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    drained: list[tuple[str, object, object, object]] = field(default_factory=list)   # (group, min, desired, max) before
    eks_names: dict = field(default_factory=dict)   # group -> (EKS node group name or part, how) for aws-cli
    kept: str = ""
    kept_sizes: tuple = ()
    kept_to: tuple = ()                    # (min, desired, max) the kept group is raised to, when it is
    kept_self: bool = False                # the kept group is self-managed (an Auto Scaling group, not EKS's)
    removed: list[str] = field(default_factory=list)
    targets: list[tuple[str, str]] = field(default_factory=list)
    eksctl: list[str] = field(default_factory=list)      # eksctl groups removed (the runbook deletes them)


def _entries(e: hclsrc.Expr) -> dict[str, hclsrc.ObjEntry]:
    return {x.key: x for x in e.entries} if e is not None and e.kind == "object" else {}


class Groups:
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
        self.blocks_done: set[int] = set()
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

    def _emptied_headings(self) -> None:
        """A section comment over node groups (and what follows them) the cleanup removes goes with them."""
        gone: dict[str, list] = {}
        for e in self.res.edits:
            if isinstance(e, TextEdit) and not e.text and e.path.endswith(hclsrc.HCL_FILES):
                gone.setdefault(e.path, []).append([e.start, e.end])
        for p, spans in gone.items():
            for s, e in emptied_headings(self.repo.text(p), spans):
                self.res.edits.append(TextEdit(p, s, e, "", RULE))

    # -- what follows a group's Auto Scaling group --------------------------------------------------------------
    def _followers(self, cas) -> set[int]:
        """At the cleanup, what else in the groups' modules reads a group that goes. A block written for the groups'
        Auto Scaling groups (knowledge/cas.yaml `asg_followers`) that tags for Cluster Autoscaler goes with it, on
        every group; one reading only removed groups goes with them, and so does an output; a `depends_on` entry is
        dropped; the locals only removed blocks read go. Anything else reading a removed group (an expression that
        also reads a staying group, a resource that uses it) is not edited: those groups stay, at zero nodes, said.
        Returns the groups held back."""
        from ...tfgraph import references
        names = {id(g): _named_as(g) for g in cas.groups}
        skip = {ci.block.address for ci in cas.installs if ci.block is not None} | {b.address for _, b in cas.iam} | \
            {g.block.address for g in cas.groups if g.block is not None}
        held: set[int] = set()
        holds: dict[int, tuple] = {}
        for _ in range(len(cas.groups) + 1):          # a group held back may hold no other: settle
            going = [g for g in cas.groups if id(g) in self.removing and id(g) not in held]
            acts = self._follower_acts(going, cas.groups, names, skip)
            holds.update((id(act[1][1]), act) for act in acts if act[0] == "hold")
            more = {id(g) for act in acts if act[0] == "hold" for g in act[3]}
            if more <= held:
                break
            held |= more
        acts = [act for act in acts if act[0] != "hold"] + list(holds.values())
        removed_blocks = {id(b) for act in acts if act[0] in ("cas", "follow") for _, b in [act[1]]}
        for act in acts:
            kind, (p, b), text = act[0], act[1], self.repo.text(act[1][0])
            line = hclsrc.line_of(text, b.start)
            if kind == "hold":
                gone, stay = act[3], act[4]
                self.res.findings.append(Finding(
                    "MIG-CAS-063", "warning", p, line,
                    f"{b.address} reads node group{'s' if len(gone) > 1 else ''} {', '.join(g.name for g in gone)}"
                    + (f" and {', '.join(g.name for g in stay)} (staying) in one expression" if stay else "")
                    + (f" and Terragrunt reads it ({act[2]})" if act[2] else "")
                    + f": migrator does not edit it, so {'those groups stay' if len(gone) > 1 else 'that group stays'}"
                    ", at zero nodes",
                    (f"stop reading it in {act[2]} (and what reads that input), then remove it" if act[2] else
                     f"drop {', '.join(g.name for g in gone)} from {b.address} (or remove it)")
                    + ", then run migrator again to remove the group"))
            elif kind == "unlink":
                self.res.edits.append(TextEdit(p, b.start, b.end, act[2], RULE))
            else:
                self.res.edits.append(TextEdit(p, *block_span(text, b), "", RULE))
                if b.type != "output":
                    self.res.removed.append(b.address)
                    self.res.targets.append((posixpath.dirname(p) or ".", b.address))
                self.res.findings.append(Finding("MIG-CAS-062", "info", p, line, f"{b.address} removed: " + act[2]))
        for d in sorted({posixpath.dirname(act[1][0]) for act in acts if act[0] in ("cas", "follow")}):
            locals_ = {a.name: (lp, a) for lp, lb in _module_blocks(self.repo, d, "locals") for a in lb.attributes.values()}
            texts = {n: self.repo.text(lp)[a.start:a.end] for n, (lp, a) in locals_.items()}
            read: dict = {}
            for p, b in ((p, b) for p in self.repo.tf_in_dir(d) for b in (self.repo.hcl(p).blocks if self.repo.hcl(p)
                         else []) if id(b) in removed_blocks):
                read.update(_locals_read(self.repo.text(p)[b.body_start:b.body_end], locals_, self.repo))
            others = [self.repo.text(op)[ob.start:ob.end] for op in self.repo.tf_in_dir(d)
                      for ob in (self.repo.hcl(op).blocks if self.repo.hcl(op) else [])
                      if id(ob) not in removed_blocks and ob.type != "locals"]
            others += [t for n, t in texts.items() if n not in read]
            for n, (lp, a) in read.items():        # locals only removed blocks read (each text on its own: strings
                if not any(references(t, {f"local.{n}"}) for t in others):     # pair within it)
                    self.res.edits.append(TextEdit(lp, *_lines_span(self.repo.text(lp), a.start, a.end), "", RULE))
        return held

    def _follower_acts(self, going: list, groups: list, names: dict, skip: set) -> list:
        """What to do with each block of the going groups' modules that reads one of them (or tags for Cluster
        Autoscaler): ("cas" | "follow", (file, block), why) to remove it, ("unlink", (file, block), its new text)
        to drop its depends_on entries, ("hold", (file, block), "", gone, staying)."""
        from ...tfgraph import relink
        fol = FACTS["asg_followers"]
        whole = {g.block.address for g in going if g.source == "resource" and g.block is not None and not g.instance}
        acts = []
        for d in sorted({posixpath.dirname(g.path) for g in groups}):
            locals_ = {a.name: (lp, a) for lp, lb in _module_blocks(self.repo, d, "locals") for a in lb.attributes.values()}
            for p in self.repo.tf_in_dir(d):
                f, text = self.repo.hcl(p), self.repo.text(p)
                for b in f.blocks if f is not None else []:
                    if b.type not in ("resource", "data", "module", "output") or b.address in skip:
                        continue
                    said = _uncommented(text[b.body_start:b.body_end])
                    read = _locals_read(said, locals_, self.repo).values()
                    said += "".join(_uncommented(self.repo.text(lp)[a.start:a.end]) for lp, a in read)
                    body = _code(text[b.body_start:b.body_end])
                    full = _code(said)
                    follower = b.type == "resource" and b.labels[0] in fol["types"]
                    gone = [g for g in going if any(_reads(full, n) for n in names[id(g)])]
                    stay = [g for g in groups if g not in going and any(_reads(body, n) for n in names[id(g)])]
                    if follower and fol["cas_tag_prefix"] in said:
                        acts.append(("cas", (p, b), f"it tags for Cluster Autoscaler ({fol['cas_tag_prefix']}...), "
                                                    "which is gone"))
                    elif not gone:
                        continue
                    elif b.type == "output" and output_readers(self.repo, d, b.labels[0]):
                        acts.append(("hold", (p, b), ", ".join(output_readers(self.repo, d, b.labels[0])), gone, stay))
                    elif (follower or b.type == "output") and not stay:
                        acts.append(("follow", (p, b), (
                            f"it follows the Auto Scaling group of node group {', '.join(g.name for g in gone)}, "
                            "removed with it" if follower else f"it reads node group {', '.join(g.name for g in gone)}"
                            ", removed (whatever reads this output, another state's remote state, must stop)")))
                    else:
                        fixed = relink(text[b.start:b.end], {}, whole)
                        if not follower and b.type != "output" and not any(
                                _reads(_code(fixed), n) for g in gone for n in names[id(g)]) and \
                                fixed != text[b.start:b.end]:
                            acts.append(("unlink", (p, b), fixed))
                        else:
                            acts.append(("hold", (p, b), "", gone, stay))
        return acts

    def _emptied_maps(self) -> None:
        """A map (or list) every item of which the cleanup removes is left as `{}` (`[]`), not its braces on two
        lines, unless something else (a comment of its own) lies between its items."""
        gone: dict[str, list[TextEdit]] = {}
        for e in self.res.edits:
            if isinstance(e, TextEdit) and e.start < e.end and not e.text and e.path.endswith((".tf", ".tfvars")):
                gone.setdefault(e.path, []).append(e)
        for path, edits in gone.items():
            f = self.repo.hcl(path)
            for obj in _objects(f) if f is not None else []:
                members = obj.entries if obj.kind == "object" else obj.items
                if not members or not all(any(x.start <= line_start(f.text, en.start) and en.end <= x.end
                                              for x in edits) for en in members):
                    continue
                inner = (obj.start + 1, obj.end - 1)
                mine = [x for x in edits if inner[0] <= x.start and x.end <= inner[1] + 1]
                rest, at = "", inner[0]
                for x in sorted(mine, key=lambda x: x.start):
                    rest, at = rest + f.text[at:x.start], max(at, x.end)
                if (rest + f.text[at:inner[1]]).strip():
                    continue
                for x in mine:
                    self.res.edits.remove(x)
                self.res.edits.append(TextEdit(path, inner[0], inner[1], "", RULE))

    def whole_block(self, g: NodeGroup, kept) -> bool:
        """An instance the evaluator told (count / for_each over an expression) has no text of its own: its sizes and
        its removal are its block's, so they are changed only when every instance of the block goes the same way
        (all drained, all removed, or the block's one instance kept); else the instances are said, once per block."""
        sibs = [x for x in self.all_groups if x.block is g.block]
        if len(sibs) == 1 or all(id(x) in self.removing for x in sibs):
            return True
        if self.phase == "cutover" and all(self._instance_sizes(x, {"min_size": 0, "desired_size": 0}, dry=True)
                                           for x in sibs):
            return True                 # each instance is sized in its own item (`var.sizes[each.key].min`)
        if self.phase == "cleanup" and all(self._instance_item(x) is not None for x in sibs if id(x) in self.removing):
            return True                 # each removed instance leaves the list its for_each iterates
        if g is not sibs[0] or self.phase not in ("cutover", "cleanup"):
            return False
        names = ", ".join(x.name for x in sibs)
        if self.phase == "cleanup" and all(self._instance_sizes(x, {"min_size": 0}, dry=True) for x in sibs):
            going = [x.name for x in sibs if id(x) in self.removing]
            why = (f"removing {', '.join(going)} from what it iterates would move the instances after it to other keys "
                   f"(or it is read elsewhere), and Terraform would replace them; "
                   f"{'they stay' if len(going) > 1 else 'it stays'}, at zero nodes (the cutover set its sizes in its "
                   "item)")
            step = ("remove it by hand once its nodes are gone: delete the group (aws eks delete-nodegroup), "
                    f"`terraform state rm` its instance of {g.block.address}, then take its item out with a moved block "
                    "from each later instance to the one before it")
        else:
            staying = [x.name for x in sibs if id(x) not in self.removing]
            why = (f"their sizes and their removal are the block's, and {', '.join(staying)} stays "
                   f"({'kept for the controller' if kept is not None and kept.group in sibs else 'no NodePool of its name'}"
                   "), so migrator changes none of them")
            step = ("scale the others to zero with `aws eks update-nodegroup-config --cluster-name <cluster> "
                    "--nodegroup-name <name> --scaling-config minSize=0,desiredSize=0` once Karpenter runs, and take "
                    f"them out of the {g.made_by.split(' ')[0]} expression at cleanup (or keep another group with "
                    "--node-group-keep)")
        self.res.findings.append(Finding("MIG-CAS-053", "warning", g.home, g.line,
                                         f"{g.block.address} makes node groups {names} with {g.made_by}: {why}", step))
        return False

    # -- sizes -------------------------------------------------------------------------------------------------
    def size(self, g: NodeGroup, low: int, desired: int, keep: bool = False) -> None:
        self._floor = keep
        text = self.repo.text(g.path)
        before = (g.size("min_size"), g.size("desired_size"), g.size("max_size"))
        if keep:
            if isinstance(before[0], int) and before[0] >= low:
                return
            want = {"min_size": low, "desired_size": max(desired, before[1] if isinstance(before[1], int) else 0)}
            if isinstance(before[2], int) and before[2] < low:
                want["max_size"] = low
        else:
            want = {"min_size": low, "desired_size": desired}
        if all(before[i] == want.get(k, before[i]) for i, k in enumerate(("min_size", "desired_size", "max_size"))):
            return
        edits = len(self.res.edits)
        if g.source == "module":
            self._module_sizes(g, text, want)
        elif g.source == "resource" and g.entry is not None:
            if not self._each_sizes(g, text, want):
                return
        elif g.source == "resource" and g.made_by and self._instance_sizes(g, want):
            pass
        elif g.source == "resource":
            sc = g.block.sub("scaling_config")
            if not sc:
                return
            if id(g.block) not in self.blocks_done:      # evaluated instances share their block: edited once
                self._set_attrs(g.path, text, _plain(sc[0]), want)
                self.blocks_done.add(id(g.block))
        elif not self._eksctl_sizes(g, text, want):
            return
        if keep and len(self.res.edits) == edits:
            return                              # already at its floor (raised where its value is stated)
        if keep:
            self.res.kept_sizes = before
            if isinstance(before[0], int) and isinstance(before[1], int):     # else sized per caller: not known here
                self.res.kept_to = (want["min_size"], want["desired_size"], want.get("max_size", before[2]))
            self.res.kept_self = g.flavour == "self"
            self.res.eks_names[g.name] = eks_name(g)
            self.res.findings.append(Finding("MIG-CAS-025", "info", g.path, g.line,
                                             f"node group {g.name} kept for the controller with at least {low} nodes"))
        else:
            self.res.drained.append((g.name, *before))
            self.res.eks_names[g.name] = eks_name(g)
            self.res.findings.append(Finding("MIG-CAS-026", "info", g.path, g.line,
                                             f"node group {g.name}: min_size and desired_size to 0 (was "
                                             f"{before[0]}/{before[1]}); the group stays until cleanup, for rollback"))
        if g.block is not None:
            self.res.targets.append((self._block_dir(g), g.block.address))

    def _block_dir(self, g: NodeGroup) -> str:
        """The folder Terraform applies a group's block in (a module's map may be written in a tfvars elsewhere)."""
        from ...cas import _block_file
        return posixpath.dirname(g.home or (_block_file(self.repo, g.block) if g.source == "module" else None)
                                 or g.path) or "."

    def _eksctl_sizes(self, g: NodeGroup, text: str, want: dict) -> bool:
        """Set minSize / desiredCapacity in the group's item of the ClusterConfig (its scalar, or a new line)."""
        keys = {v: k for k, v in FACTS["node_groups"]["eksctl"]["fields"].items()}
        ng = self._cluster_obj(g)[g.attr][g.index]
        lines = text[g.doc.start:].splitlines(keepends=True)
        nl = self.repo.files[g.path].newline

        def offset(line: int, col: int) -> int:
            return g.doc.start + sum(len(x) for x in lines[:line]) + col
        last = max(ng.lc.key(k)[0] for k in ng)
        add = []
        for k, v in want.items():
            key = keys[k]
            if key in ng:
                vl, vc = ng.lc.value(key)
                start = offset(vl, vc)
                m = re.match(r"[^\s#]+", text[start:])
                if m and m.group(0) != str(v):
                    self.res.edits.append(TextEdit(g.path, start, start + m.end(), str(v), RULE))
            else:
                add.append(f"{key}: {v}")
        if add:
            kl, kc = ng.lc.key(next(iter(ng)))
            pos = offset(last + 1, 0)
            self.res.edits.append(TextEdit(g.path, pos, pos, to_newline("".join(" " * kc + a + "\n" for a in add), nl),
                                           RULE, order=1))
        return True

    def _eksctl_remove(self, g: NodeGroup, text: str) -> tuple[int, int]:
        """Span of the group's item in its ClusterConfig list."""
        return yaml_item_span(text, g.doc.start, self._cluster_obj(g)[g.attr], g.index)

    def _cluster_obj(self, g: NodeGroup):
        return next(o for p, d, o in convert.inventory(self.ctx).clusters if p == g.path and d.start == g.doc.start)

    def _each_sizes(self, g: NodeGroup, text: str, want: dict) -> bool:
        """A for_each group's sizes live in its item where scaling_config reads them from it (`each.value.min_size`,
        `each.value.scaling.min`, `lookup(each.value, "min_size", 1)`, `try(...)`): set (or added) there; a size
        every item shares is said."""
        sc = g.block.sub("scaling_config")
        at: dict[int, tuple[hclsrc.Expr, dict]] = {}
        shared = []
        for k, v in want.items():
            a = sc[0].attr(k) if sc else None
            steps = item_path(a.source) if a is not None else None
            box = g.entry.value
            for step in (steps or [None])[:-1]:
                box = next((x.value for x in box.entries if x.key == step), None) if box.kind == "object" else None
                if box is None:
                    break
            if not steps or box is None or box.kind != "object":
                shared.append(k)
                continue
            at.setdefault(id(box), (box, {}))[1][steps[-1]] = v
        if shared:
            self.res.findings.append(Finding(
                "MIG-CAS-052", "warning", g.home, hclsrc.line_of(self.repo.text(g.home), g.block.start),
                f"node group {g.name} ({g.address}): {', '.join(shared)} is the same for every item "
                "of its for_each, not read from the item: not changed", "set it from the item "
                f"(`{shared[0]} = lookup(each.value, \"{shared[0]}\", <today's value>)`) or scale the group with "
                f"`aws eks update-nodegroup-config --scaling-config minSize=0,desiredSize=0` once Karpenter runs"))
        for box, keys in at.values():
            self._set_attrs(g.path, text, {x.key: x.value for x in box.entries}, keys, container=box)
        return bool(at)

    def _module_sizes(self, g: NodeGroup, text: str, want: dict) -> None:
        self._set_attrs(g.path, text, {x.key: x.value for x in g.entry.value.entries}, want,
                        container=g.entry.value)

    def _set_attrs(self, path: str, text: str, have: dict, want: dict, container: hclsrc.Expr | None = None) -> None:
        nl = self.repo.files[path].newline
        for k, v in want.items():
            if k in have:
                e = have[k] if isinstance(have[k], hclsrc.Expr) else have[k].expr
                same = sum(1 for k2, v2 in want.items() if k2 in have and v2 == v and
                           (have[k2] if isinstance(have[k2], hclsrc.Expr) else have[k2].expr).source.strip()
                           == e.source.strip())
                if text[e.start:e.end] != str(v) and not self._at_source(path, k, e, v, same):
                    self.res.edits.append(TextEdit(path, e.start, e.end, str(v), RULE))
        missing = [(k, v) for k, v in want.items() if k not in have]
        if not missing:
            return
        anchor = None
        if container is not None and container.entries:
            anchor = max((x for x in container.entries if x.key in ("min_size", "max_size", "desired_size")),
                         key=lambda x: x.end, default=container.entries[-1])
        elif have:
            anchor = max(have.values(), key=lambda x: x.end)
        if anchor is None:
            return
        ind = text[line_start(text, anchor.start):anchor.start]
        pos = line_end(text, anchor.end)
        body = "".join(f"{ind}{k} = {v}\n" for k, v in missing)
        self.res.edits.append(TextEdit(path, pos, pos, to_newline(body, nl), RULE, order=1))

    def _at_source(self, path: str, key: str, e: hclsrc.Expr, v: int, same: int = 1) -> bool:
        """A size written as a variable or local (`min_size = var.workers_min`) keeps it: the value changes where it
        lives (the variable's default, every tfvars of the root that sets it, the local, the argument each caller of a
        shared module passes), when nothing else in the module reads it (but this group's sizes set to the same
        value); else the size is written in place (said). For the group kept for the controller the value is only
        raised where it is below. A caller's argument in another root's files is that root's to write (its own plan
        does, from where it stands)."""
        if e.kind != "ref":
            return False
        from ...inventory.sites import definition_sites
        m = re.fullmatch(r"(var|local)\.([\w-]+)", e.source.strip())
        sites, why = definition_sites(self.repo, path, e, numbers=True) if m else ([], "")
        d = posixpath.dirname(path)
        reads = sum(len(re.findall(rf"\b{m.group(1)}\.{re.escape(m.group(2))}\b", self.repo.text(p)))
                    for p in self.repo.tf_in_dir(d)) if m else 0
        # the module's own files and tfvars beside or below it; a tfvars elsewhere may be another root's; a caller's
        # argument (a shared module) is written by the root that owns it
        passed = [x for x in sites if x.passed]
        ours = [x for x in sites if posixpath.dirname(x.path) == d or
                (x.path.endswith(TFVARS) and (not d or x.path.startswith(d + "/")))]
        if m and sites and len(ours) + len(passed) == len(sites) and reads == same:
            floor = self._floor
            for x in ours + [x for x in passed if self.ctx.owns(x.path)]:
                at = (x.path, x.expr.start)
                lit = x.expr.literal()
                if at in self._sited or lit == v or (floor and isinstance(lit, (int, float)) and lit >= v):
                    continue
                self._sited.add(at)
                self.res.edits.append(TextEdit(x.path, x.expr.start, x.expr.end, str(v), RULE))
            self.res.findings.append(Finding(
                "MIG-CAS-043", "info", path, hclsrc.line_of(self.repo.text(path), e.start),
                f"{key} = {e.source.strip()}: " + (f"raised to {v} where it is stated lower" if floor else
                                                   f"set to {v} where it is stated")
                + f" ({'; '.join(x.how for x in sites)})"))
            return True
        self.res.findings.append(Finding(
            "MIG-CAS-043", "info", path, hclsrc.line_of(self.repo.text(path), e.start),
            f"{key} = {e.source.strip()} written as {v} in place: " +
            (f"{e.source.strip()} is read {reads} times in the module" if m and sites and reads != same else
             "its value is passed from outside the module" if sites else why or "it is no variable or local"),
            f"restore {e.source.strip()} there if you roll back"))
        return False

    def _instance_sizes(self, g: NodeGroup, want: dict, dry: bool = False) -> bool:
        """An evaluated instance whose block reads its sizes by its key (`var.sizes[each.key].min`,
        `var.groups[count.index].min`): each size is set in the instance's own item, where the collection is written
        (the kept group's only raised). False (nothing done) unless every size it needs is found so."""
        sc = g.block.sub("scaling_config") if g.block is not None and g.key is not None else []
        from ...inventory.sites import instance_site
        sites = {}
        for k in want:
            a = sc[0].attr(k) if sc else None
            got = instance_site(self.repo, g.home or g.path, a.source, g.key) if a is not None else None
            if got is None or got[1].kind != "number":
                return False
            sites[k] = (a, got)
        if dry:
            return True
        for k, v in want.items():
            a, (p, e) = sites[k]
            if e.value == v or (self._floor and isinstance(e.value, (int, float)) and e.value >= v) or \
                    (p, e.start) in self._sited:
                continue
            self._sited.add((p, e.start))
            self.res.edits.append(TextEdit(p, e.start, e.end, str(v), RULE))
            self.res.findings.append(Finding(
                "MIG-CAS-043", "info", g.home or g.path, hclsrc.line_of(self.repo.text(g.home or g.path), a.start),
                f"{k} = {a.source.strip()}: {'raised to' if self._floor else 'set to'} {v} in the item of node group "
                f"{g.name} ({p})"))
        return True

    def _instance_item(self, g: NodeGroup):
        """(file, list, item) of the list a `for_each = toset(var.x)` iterates that makes this instance, when nothing
        else in the module reads that list; None otherwise (a count instance is keyed by position: removing one would
        renumber the others)."""
        from ...inventory.sites import set_item
        fe = g.block.attr("for_each") if g.block is not None else None
        got = set_item(self.repo, g.home or g.path, fe, g.key) if isinstance(g.key, str) else None
        if got is None:
            return None
        name = re.search(r"(?:var|local)\.[A-Za-z_][\w-]*", fe.source).group(0)
        d = posixpath.dirname(g.home or g.path)
        reads = sum(len(re.findall(rf"\b{re.escape(name)}\b", self.repo.text(p))) for p in self.repo.tf_in_dir(d))
        return got if reads == 1 else None

    # -- removal -----------------------------------------------------------------------------------------------
    def remove(self, g: NodeGroup) -> None:
        text = self.repo.text(g.path)
        if g.source == "module" and g.index >= 0:
            after = [x for x in self.all_groups if x.source == "module" and x.block is g.block and x.attr == g.attr
                     and x.index > g.index and id(x) not in self.removing]
            items = g.block.attr(g.attr).items
            if after or len(items) > 1 + max([x.index for x in self.all_groups if x.block is g.block and
                                                x.attr == g.attr], default=-1):
                self.res.findings.append(Finding(
                    "MIG-CAS-046", "warning", g.path, g.line,
                    f"node group {g.name} is item {g.index} of the list {g.attr}, keyed by position: removing it would "
                    f"renumber the groups after it ({', '.join(x.name for x in after) or 'items migrator did not read'}),"
                    " and Terraform would replace them; it stays, at zero nodes",
                    "remove it by hand once its nodes are gone: delete the group (aws eks delete-nodegroup), "
                    f"`terraform state rm 'module.{g.block.labels[0]}.module."
                    f'{"eks_managed_node_group" if g.flavour == "managed" else "self_managed_node_group"}["{g.index}"]'
                    "'`, then remove its item with a moved block from each later position to the one before it"))
                return
        if g.entry is not None:             # a module group, or a for_each item: its entry in the map
            e = g.entry
            for at, x in [(g.path, e), *g.shadowed]:     # and the items of its key a merge() let it replace
                span = (jsonvars.entry_span if at.endswith(JSON_TFVARS) else _entry_span)(self.repo.text(at), x)
                self.res.edits.append(TextEdit(at, *span, "", RULE))
            address = f'{g.block.address}.{g.attr}["{e.key}"]' if g.source == "module" else g.address
        elif g.source == "resource" and g.made_by and not all(
                id(x) in self.removing for x in self.all_groups if x.block is g.block):
            p, lst, item = self._instance_item(g)       # whole_block let it through: the list has its item
            self._list_drops.setdefault((p, lst.start), (lst, []))[1].append(item)
            address = g.address
        elif g.source == "resource":
            address = g.block.address
            if id(g.block) in self.blocks_done:         # the block of evaluated instances goes once, with all of them
                self.res.findings.append(Finding("MIG-CAS-027", "info", g.path, g.line, f"node group {g.name} removed"
                                                 f" ({g.address}): Karpenter's NodePool {g.name} replaces it"))
                return
            s, end = block_span(text, g.block)
            self.res.edits.append(TextEdit(g.path, s, end, "", RULE))
            self.blocks_done.add(id(g.block))
        else:
            s, end = self._eksctl_remove(g, text)
            self.res.edits.append(TextEdit(g.path, s, end, "", RULE))
            self.res.removed.append(f"{g.attr}[{g.name}]")
            self.res.eksctl.append(g.name)
            self.res.findings.append(Finding("MIG-CAS-027", "info", g.path, g.line,
                                             f"node group {g.name} removed: Karpenter's NodePool {g.name} replaces it"))
            return
        self.res.removed.append(address)
        self.res.targets.append((self._block_dir(g), g.block.address))
        self.res.findings.append(Finding("MIG-CAS-027", "info", g.path, g.line,
                                         f"node group {g.name} removed: Karpenter's NodePool {g.name} replaces it"))


def _tuple_without(text: str, path: str, lst: hclsrc.Expr, items: list) -> list[TextEdit]:
    """A list literal without some items: on one line, the list written again from its other items; over several
    lines, each item's line goes (with the comments above it)."""
    if "\n" not in text[lst.start:lst.end]:
        rest = [i.source.strip() for i in lst.items if not any(i is x for x in items)]
        return [TextEdit(path, lst.start, lst.end, "[" + ", ".join(rest) + "]", RULE)]
    return [TextEdit(path, comments_above(text, line_start(text, i.start)), line_end(text, i.end), "", RULE)
            for i in items]


def _named_as(g: NodeGroup) -> list[str]:
    """How other blocks of its module name a node group: its resource (with its instance key when the block makes
    several), or its item of the eks module's group map."""
    if g.source == "module" and g.block is not None and g.entry is not None:
        return [f'{g.block.address}.{g.attr}["{g.entry.key}"]']
    if g.source == "resource" and g.block is not None:
        return [g.address] if g.instance else [g.block.address]
    return []


_STRING_OR_COMMENT = re.compile(r'("(?:[^"\\\n]|\\.)*")|#[^\n]*|//[^\n]*|/\*.*?\*/', re.S)
_PLAIN_STRING = re.compile(r'(?<!\[)"(?:[^"\\$\n]|\\.|\$(?!\{))*"')


def _uncommented(text: str) -> str:
    """HCL text without its comments (a `#` or `//` inside a string stays)."""
    return _STRING_OR_COMMENT.sub(lambda m: m.group(1) or "", text)


def _code(text: str) -> str:
    """HCL text without its comments and plain strings (an index key like `["spot"]` stays): a group named in a
    description or a comment is not read."""
    return _PLAIN_STRING.sub('""', _uncommented(text))


def _reads(text: str, name: str) -> bool:
    return re.search(re.escape(name) + (r"(?![\w-])" if not name.endswith("]") else ""), text) is not None


def _locals_read(body: str, locals_: dict, repo, depth: int = 2) -> dict:
    """The locals a block's text reads, and the locals those read (two levels): {name: (file, Attribute)}."""
    out: dict = {}
    frontier = body
    for _ in range(depth):
        found = {n: locals_[n] for n in re.findall(r"\blocal\.([\w-]+)", frontier) if n in locals_ and n not in out}
        out.update(found)
        frontier = "".join(repo.text(p)[a.start:a.end] for p, a in found.values())
    return out


def _entry_span(text: str, e: hclsrc.ObjEntry) -> tuple[int, int]:
    """A map item's lines with the comments above it (and one blank line before them)."""
    return _lines_span(text, e.start, e.end)


def _lines_span(text: str, start: int, end: int) -> tuple[int, int]:
    """The lines of an item (a map entry, an argument) with the comments above it and one blank line before them."""
    s = comments_above(text, line_start(text, start))
    if s > 0 and not text[line_start(text, s - 1):s].strip():
        s = line_start(text, s - 1)
    return s, line_end(text, end)


def _objects(f) -> list[hclsrc.Expr]:
    """Every object expression of a file (in blocks, nested blocks and top-level attributes, at any depth)."""
    out, stack = [], [a.expr for a in f.attributes.values()] + [a.expr for b in f.walk() for a in b.attributes.values()]
    while stack:
        e = stack.pop()
        if e.kind in ("object", "tuple"):
            out.append(e)
        stack.extend(e.items)
        stack.extend(en.value for en in e.entries)
    return out


def _plain(b: hclsrc.Block) -> dict:
    return {k: a.expr for k, a in b.attributes.items()}


def run(ctx, phase: str, done: dict | None = None) -> GroupsResult:
    return Groups(ctx, phase).run()


def _known_ends(e, key) -> tuple[str, str]:
    """What a name template is known to start and end with: its literal text, and `each.key` where the group is a
    for_each instance, up to the first part that is an expression read elsewhere."""
    if e is None or e.kind != "string" or not e.parts:
        return "", ""

    def known(part: tuple[bool, str]) -> str | None:
        interp, text = part
        if not interp:
            return text
        return str(key) if key is not None and re.fullmatch(r"\$\{\s*each\.key\s*\}", text) else None

    ends = []
    for parts in (e.parts, list(reversed(e.parts))):
        out = []
        for part in parts:
            k = known(part)
            if k is None:
                break
            out.append(k)
        ends.append("".join(out if parts is e.parts else reversed(out)))
    return ends[0], ends[1]


def eks_name(g) -> tuple[str, str]:
    """The name EKS knows a Terraform node group by, for aws-cli, and how it is known: ("exact") where the root fixes
    it (aws_eks_node_group node_group_name, a module group with use_name_prefix = false); ("prefix") what the name
    starts with (the terraform-aws-modules groups are named "<name>-<suffix>" by default); ("suffix") what it ends
    with, where only its head is an expression (`"${local.prefix}-ng-${each.key}"`)."""
    if g.source == "resource" and g.block is not None:
        n = g.literal("name")           # node_group_name as the module (or the for_each item) states it
        if g.block.attr("node_group_name") is not None and isinstance(n, str) and n:
            return n, "exact"
        head, tail = _known_ends(g.block.attr("node_group_name"), g.key)
        if head:
            return head, "prefix"
        if len(tail) > 1:
            return tail, "suffix"
        pre = g.block.attr("node_group_name_prefix")
        if pre is not None and pre.literal():
            return str(pre.literal()), "prefix"
        return g.name, "prefix"
    if g.source == "module":
        name = g.literal("name") if isinstance(g.literal("name"), str) else g.name
        entries = {x.key: x.value for x in g.entry.value.entries} if g.entry is not None else {}
        prefix = entries.get("use_name_prefix")
        if prefix is not None and prefix.literal() is False:
            return name, "exact"
        return f"{name}-", "prefix"
    return g.name, "exact"
