"""The node groups' sizes: the replaced groups to zero nodes at the cutover and the kept group sized for the controller,
wherever the size is written (a module map entry, scaling_config, a for_each map, a module input, tfvars, an eksctl
ClusterConfig)."""
from __future__ import annotations

import posixpath
import re

from ....cas import FACTS, NodeGroup, item_path
from ....edits import TextEdit, line_end, line_start, to_newline
from ....model import Finding
from ....inventory.repo import TFVARS
from ....sources import hcl as hclsrc
from ....sources.yamlspans import yaml_item_span
from .. import convert
from .common import RULE, _plain, eks_name


class GroupSizes:
    """The node groups' sizes: the replaced groups to zero nodes at the cutover, the kept group sized for the
    controller; in their map entry, scaling_config, for_each map, module input, tfvars or eksctl ClusterConfig."""

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
            at = (g.path, g.block.start)    # evaluated instances share their block: edited once (by place, never by
            if at not in self.blocks_done:      # identity: two files of the same text share one parsed model)
                self._set_attrs(g.path, text, _plain(sc[0]), want)
                self.blocks_done.add(at)
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
        from ....cas import _block_file
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
        from ....inventory.sites import definition_sites
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
        from ....inventory.sites import instance_site
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
        from ....inventory.sites import set_item
        fe = g.block.attr("for_each") if g.block is not None else None
        got = set_item(self.repo, g.home or g.path, fe, g.key) if isinstance(g.key, str) else None
        if got is None:
            return None
        name = re.search(r"(?:var|local)\.[A-Za-z_][\w-]*", fe.source).group(0)
        d = posixpath.dirname(g.home or g.path)
        reads = sum(len(re.findall(rf"\b{re.escape(name)}\b", self.repo.text(p))) for p in self.repo.tf_in_dir(d))
        return got if reads == 1 else None
