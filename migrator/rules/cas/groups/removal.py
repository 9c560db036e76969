"""The replaced node groups removed at the cleanup, with what only they use (blocks that follow them, map entries,
headings left empty); a group something else still reads stays at zero nodes."""
from __future__ import annotations

import posixpath

from ....cas import FACTS, NodeGroup
from ....edits import TextEdit, line_start
from ....model import Finding
from ....inventory.sites import _module_blocks
from ....inventory.terragrunt import output_readers
from ....inventory.repo import JSON_TFVARS
from ....sources import jsonvars
from ....placement import block_span, emptied_headings
from ....sources import hcl as hclsrc
from .common import RULE, _code, _entry_span, _lines_span, _locals_read, _named_as, _objects, _reads, _uncommented


class GroupRemoval:
    """The replaced node groups removed at the cleanup, with what only they use: blocks that follow them, map entries,
    headings left empty."""

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
        from ....tfgraph import references
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
        from ....tfgraph import relink
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
            if (g.path, g.block.start) in self.blocks_done:     # the block of evaluated instances goes once, with all
                self.res.findings.append(Finding("MIG-CAS-027", "info", g.path, g.line, f"node group {g.name} removed"
                                                 f" ({g.address}): Karpenter's NodePool {g.name} replaces it"))
                return
            s, end = block_span(text, g.block)
            self.res.edits.append(TextEdit(g.path, s, end, "", RULE))
            self.blocks_done.add((g.path, g.block.start))
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
