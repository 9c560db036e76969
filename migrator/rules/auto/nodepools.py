"""Rule `auto/nodepools`: Auto Mode's NodeClasses and NodePools next to Karpenter's, then Karpenter's removed.

nodepools: each EC2NodeClass gets a NodeClass (`eks.amazonaws.com/v1`, on the cluster's Auto Mode node role) and each
    NodePool a new NodePool `<name>-auto` on it, under the temporary taint, written beside the source in the same
    container (YAML file + kustomization entry, `kubectl_manifest`, `kubernetes_manifest`, template file): the
    placement of the v1beta1 hop (rules/v1beta1/manifests.py), with this hop's names and conversion (convert.py).
workloads: the temporary taint comes off the new NodePools (the workloads' selectors move in `auto/workloads`).
cutover: every NodePool and EC2NodeClass with an Auto Mode twin is removed (blocks, documents, files, entries); an
    object that cannot move stays, and says so.
"""
from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass, field

from ... import knowledge
from ...edits import DeleteFile, Edit, TextEdit
from ...inventory import localfiles
from ...model import Finding
from ...sources import keytree
from ...standing import auto_mode
from ...validate import validate_object
from ...placement import remove_blocks
from ..v1.manifests import tree_of
from ..v1beta1.manifests import Removals, _name_key
from . import addonpools, unconverted, convert, overlays
from .placement import AutoPlacement
from .poolnames import rendered_names
from .links import unlink
from .classes import (blocked_elsewhere, declared_elsewhere, kept_in, leaning_pools, twinned, undeclared,
                      waits_message, waits_step, written_elsewhere)

RULE = "auto/nodepools"
FACTS = convert.FACTS
NAMING = FACTS["naming"]
TAINT = FACTS["temporary_taint"]
TAINTS = ("spec", "template", "spec", "taints")


@dataclass
class PoolsResult:
    edits: list[Edit] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    created: list[str] = field(default_factory=list)        # "NodePool x-auto" written
    new_files: list[str] = field(default_factory=list)
    new_addresses: list[str] = field(default_factory=list)
    tf_targets: list[tuple[str, str]] = field(default_factory=list)
    untainted: list[str] = field(default_factory=list)      # new NodePools whose temporary taint comes off
    removed: list[str] = field(default_factory=list)        # old objects removed at the cutover
    deletes: list[tuple[str, str]] = field(default_factory=list)   # (kind, name) for kubectl delete
    stays: list[str] = field(default_factory=list)          # objects that stay on Karpenter
    files: list[str] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)        # old objects with no twin yet (nodepools not applied)
    rendered: list[str] = field(default_factory=list)       # files local_files render that kubectl applies
    templates: list[str] = field(default_factory=list)      # new templates (Terraform renders them: no kubectl)
    rendered_deletes: list[tuple[str, str]] = field(default_factory=list)  # (kind, name) of their removed objects

    # the v1beta1 placement reads these
    @property
    def old_objects(self):
        return []




def _as_written(m, new: str, name_of) -> str:
    """The twin's name in the object written: a name a Helm template gives (`{{ .Values.name }}`) stays that template
    (its mask token, restored when written), so each release of the chart names its own twin."""
    raw = str(m.name) if m.name is not None else ""
    return name_of(raw) if m.masked.has_token(raw) else new


def _has_temp_taint(obj) -> bool:
    taints = ((((obj.get("spec") or {}).get("template") or {}).get("spec") or {}).get("taints") or []) \
        if isinstance(obj, dict) else []
    return any(isinstance(t, dict) and t.get("key") == TAINT["key"] for t in taints)


class PoolsRule:
    def __init__(self, ctx, phase: str, cluster):
        self.ctx, self.repo, self.phase, self.cluster = ctx, ctx.repo, phase, cluster
        self.res = PoolsResult()
        self.place = AutoPlacement(ctx.repo, ctx.manifests, ctx.helm_values, ctx.options, ctx.owns)
        self.place.res = self.res           # edits and findings land in this rule's result
        mine = [m for m in ctx.manifests if m.era == "v1"]
        self.old = [m for m in mine if m.kind in ("NodePool", "EC2NodeClass") and not auto_mode(m)]
        self.auto = [m for m in mine if auto_mode(m)]
        self.twins = {(m.kind, convert.pool_key(m) if m.kind == "NodePool" else convert.name_key(m, m.name))
                      for m in self.auto}
        self.place.renamed = {m.block.address: f"{m.block.labels[0]}.{m.block.labels[1]}{NAMING['tf_label_suffix']}"
                              for m in self.old if m.block is not None and m.container != addonpools.CONTAINER}
        self.place.dropped = {c.block.address for c in ctx.charts if c.chart == "karpenter" and c.block is not None}
        self.made: dict = {}            # (kind, old name) -> (manifest, twin name, its class or role): overlays.py

    def finding(self, code, severity, path, line, message, manual=""):
        self.res.findings.append(Finding(code, severity, path, line, message, manual))

    def run(self) -> PoolsResult:
        if not (self.cluster.enabled or self.cluster.installer == ""):
            return self.res             # Auto Mode is not on yet: the enable phase comes first
        if self.phase == "nodepools":
            self.unread("warning")
            self.create()
            if any(c.startswith("NodePool ") for c in self.res.created) or \
                    any(m.kind == "NodePool" for m in self.auto):
                from .storage import twins
                twins(self.ctx, self.res)   # the EBS StorageClasses' twins and the CNI, with the new pools (none
                #                             when no pool runs on Auto Mode: no pod would use them)
        elif self.phase == "workloads":
            self.untaint()
        elif self.phase == "cutover":
            self.cutover()
        return self.res

    # -- nodepools ----------------------------------------------------------------------------------------------
    def class_of(self, pool) -> str | None:
        ref = (((pool.obj.get("spec") or {}).get("template") or {}).get("spec") or {}).get("nodeClassRef") or {}
        return str(ref.get("name")) if isinstance(ref, dict) and ref.get("name") is not None else None

    def unread(self, severity: str) -> bool:
        """Karpenter NodePools or EC2NodeClasses of this root that migrator does not convert (a document it could not
        read, one a shell command applies, one a local_file renders: unconverted.py): no twin is written for them, so
        the cutover waits (MIG-AUTO-059), or it would remove the EC2NodeClasses they name and, next, the controller
        that runs them."""
        found = unconverted.objects(self.ctx)
        for o in found:
            self.finding("MIG-AUTO-059", severity, o.path, o.line,
                         f"{o.what}: no Auto Mode twin is written for {unconverted.what_for(o)}, so the cutover "
                         "(which removes the old NodePools and EC2NodeClasses) and the cleanup (the controller) wait",
                         o.fix)
        return bool(found)

    def unmatched_selectors(self) -> bool:
        """Workloads that select a NodePool by a name that a chart template's pools may take (MIG-AUTO-054): the
        cutover waits until each selector names a twin, so no pod is left selecting a pool that is gone."""
        from .workloads import POOL_KEY, _pool_selectors, released_pools
        from ..v1beta1.workloads import WorkloadsResult
        by_release, staying, templated = released_pools(self.ctx)
        if not templated:
            return False            # every templated pool's names are stated by its releases (or there is none)
        probe = WorkloadsResult()
        _pool_selectors(self.ctx, by_release, {str(m.name) for m in self.old if m.kind == "NodePool"} | staying
                        | set(by_release), probe, templated)
        held = [f for f in probe.findings if f.code == "MIG-AUTO-054"]
        for f in held:
            self.finding("MIG-AUTO-054", "error", f.path, f.line,
                         f.message + "; the cutover (which removes the old pools) waits for it",
                         f"change the selector to {POOL_KEY}: <its pool>-auto, then run migrator again")
        return bool(held)

    def moving(self) -> set[tuple[str, int]]:
        """(file, line) of the selectors the workloads phase moves to twins in this run: in a runbook that shows the
        phases to come, the cutover comes after them."""
        from ..registry import HOPS
        hop = next(h for h in HOPS["hops"] if h.get("package") == "auto")
        res = self.ctx.result(hop, "workloads").get("auto/workloads")
        return {(f.path, f.line) for f in getattr(res, "findings", []) if f.code == "MIG-WL-002"}

    def class_key(self, pool) -> str | None:
        """The EC2NodeClass a pool names, as written (a template's name unmasked): what the cutover compares."""
        cls = self.class_of(pool)
        return convert.name_key(pool, cls) if cls is not None else None

    def create(self) -> None:
        classes = {_name_key(m, m.name): m for m in self.old if m.kind == "EC2NodeClass"}
        blocked_classes = {n for n, m in classes.items() if convert.blocked_class(m.obj)}
        pins = overlays.pinned(self.ctx, self.old)  # movable in the base, not as an overlay patches them
        blocked_classes |= {n for kind, n in pins if kind == "EC2NodeClass"}
        # each class's role first: a NodePool is never written on a NodeClass that cannot be (no role for it)
        roles = {n: self.role_for(m) for n, m in classes.items() if n not in blocked_classes and
                 ("NodeClass", convert.nodeclass_name(n)) not in self.twins and "${" not in n and "__MIG_" not in n}
        unmade = {n for n, r in roles.items() if r is None}
        computed = convert.computed_classes(self.ctx)
        by_file: dict[str, list] = {}
        by_template: dict[tuple, list] = {}     # (block's file, block, template) -> [(object, twin)]
        charted: list = []              # twins of pools a module's chart renders: Terraform resources of their own
        made_classes: list = []         # (twin name, its spec, the EC2NodeClass it comes from)
        for m in self.old:
            old = _name_key(m, m.name)
            if "${" in old or "__MIG_" in old:
                self.finding("MIG-AUTO-014", "warning", m.path, m.line,
                             f"{m.kind} {old}: its name is a template expression; migrator cannot name its Auto "
                             "Mode twin", f"write the Auto Mode {m.kind} for it by hand (convert.py's mapping)")
                continue
            pin = pins.get((m.kind, old))
            if pin is not None:
                self.res.stays.append(f"{m.kind} {old}")
                self.finding("MIG-AUTO-020", "warning", pin[0], pin[1],
                             f"{m.kind} {old} stays on Karpenter: as {pin[0]} patches it, {pin[2]}; Auto Mode cannot "
                             "run it there, so it gets no twin in any environment and Karpenter's controller stays",
                             "move what that overlay adds out of the pool (a DaemonSet, the workloads' containers), "
                             "then run migrator again")
                continue
            if m.kind == "EC2NodeClass":
                new = convert.nodeclass_name(old)
                if ("NodeClass", new) in self.twins:
                    continue
                conv = convert.convert_nodeclass(m.obj, _as_written(m, new, convert.nodeclass_name), roles.get(old))
                if conv.obj is not None and "role" not in conv.obj["spec"]:
                    continue                # no role: said by role_for
            else:
                new = convert.nodepool_name(old)
                if ("NodePool", convert.nodepool_name(convert.pool_key(m))) in self.twins:
                    continue
                cls = self.class_of(m)
                if cls in blocked_classes:
                    self.res.stays.append(f"NodePool {old} (its EC2NodeClass {cls} cannot move)")
                    self.finding("MIG-AUTO-020", "warning", m.path, m.line,
                                 f"NodePool {old} stays on Karpenter: its EC2NodeClass {cls} cannot move to Auto Mode",
                                 "keep it on Karpenter; its controller stays while it exists")
                    continue
                elsewhere = blocked_elsewhere(self.ctx, cls) if cls is not None and cls not in classes else None
                if elsewhere is not None:
                    where, why = elsewhere
                    self.res.stays.append(f"NodePool {old} (its EC2NodeClass {cls} cannot move)")
                    self.finding("MIG-AUTO-020", "warning", m.path, m.line,
                                 f"NodePool {old} stays on Karpenter: its EC2NodeClass {cls}, declared in {where} "
                                 f"(another root of the repository), cannot move to Auto Mode: {why}",
                                 "keep it on Karpenter; its controller stays while it exists (or make that class "
                                 "movable, then run migrator again)")
                    continue
                if cls in unmade:
                    self.res.stays.append(f"NodePool {old} (its NodeClass needs the node role's name)")
                    continue                # said by role_for (MIG-AUTO-010)
                why = convert.unwritable(m, computed)
                if why:
                    self.res.stays.append(f"NodePool {old} ({why})")
                    self.finding("MIG-AUTO-065", "warning", m.path, m.line,
                                 f"NodePool {old} gets no Auto Mode twin: {why}, and a twin on it would launch "
                                 "nothing, or not what it launches now; it stays on Karpenter until its twin is "
                                 "written", "write its Auto Mode twin by hand (a NodeClass of eks.amazonaws.com/v1 "
                                 "and a NodePool on it with eks.amazonaws.com/ keys), then run migrator again")
                    continue
                ck = _name_key(m, cls) if cls is not None else None
                if ck is not None and cls not in classes and undeclared(self.ctx, ck):
                    twin = convert.nodeclass_name(ck)
                    kept = kept_in(self.repo, ck)
                    self.res.stays.append(f"NodePool {old} (its EC2NodeClass {ck} is in no file migrator converts)")
                    self.finding("MIG-AUTO-068", "warning", m.path,
                                 m.line_of(("spec", "template", "spec", "nodeClassRef", "name")),
                                 f"NodePool {old} gets no Auto Mode twin: its EC2NodeClass {ck} is in no file migrator "
                                 "converts (applied from another repository, from a template a script fills, or from "
                                 f"a shell heredoc{'; it is kept in ' + ', '.join(kept) if kept else ''}), so "
                                 f"nothing would write the NodeClass {twin} a twin would run on; the pool stays on "
                                 "Karpenter, and its controller with it",
                                 f"write the Auto Mode NodeClass {twin} (eks.amazonaws.com/v1) from EC2NodeClass {ck} "
                                 "where it is kept, then run migrator again: the pool's twin is written on it")
                    continue
                other = declared_elsewhere(self.ctx, ck) if ck is not None and cls not in classes else None
                if other is not None:
                    self.finding("MIG-AUTO-069", "warning", m.path,
                                 m.line_of(("spec", "template", "spec", "nodeClassRef", "name")),
                                 f"NodePool {old}'s twin runs on the Auto Mode NodeClass {convert.nodeclass_name(ck)}, "
                                 f"which is written where its EC2NodeClass {ck} is declared: {other} (another root of "
                                 "the repository); nothing in the files says that root is this cluster's",
                                 f"if {other.rsplit(':', 1)[0]} is this cluster's, apply its nodepools phase with this "
                                 f"one; if not, write the NodeClass {convert.nodeclass_name(ck)} (eks.amazonaws.com/v1) "
                                 "for this cluster by hand before the workloads phase")
                conv = convert.convert_nodepool(m.obj, _as_written(m, new, convert.nodepool_name),
                                                convert.nodeclass_name(cls or "default"))
            for n in conv.notes:
                self.finding(n.code, n.severity, m.path, m.line_of(n.field) if n.field else m.line,
                             m.masked.unmask(n.message), m.masked.unmask(n.manual_step))
            if conv.obj is None:
                self.res.stays.append(f"{m.kind} {old}")
                continue
            errs = validate_object(conv.obj, knowledge.load("minors")["newest"] if m.kind == "NodePool" else "")
            if errs:
                own = [e for e in _own_errors(m) if e in errs]
                self.finding("MIG-VAL-001", "error", m.path, m.line,
                             f"generated {conv.kind} {new} does not validate against its schema: " + "; ".join(errs)
                             + (f" ({m.kind} {old} as written fails its own CRD, {m.api_version}, the same way"
                                f"{'' if len(own) == len(errs) else ' on ' + '; '.join(own)}: the twin carries what "
                                "the source says)" if own else ""),
                             "fix the source object (see the messages) and re-run; nothing was written")
                continue
            self.res.created.append(f"{conv.kind} {new}")
            if m.kind == "EC2NodeClass":
                made_classes.append((new, conv.obj.get("spec"), m))
            if m.container == "yaml":
                by_file.setdefault(m.path, []).append((m, [conv]))
                self.made[(m.kind, old)] = (m, new, roles.get(old) if m.kind == "EC2NodeClass"
                                            else convert.nodeclass_name(cls or "default"))
            elif m.container == addonpools.CONTAINER:
                charted.append((m, conv))
            elif m.container == "template":
                by_template.setdefault((m.tf_path, m.block.start, m.path), []).append((m, conv))
            else:
                self.place.place_hcl(m, conv)
        for (_tf, _at, _path), items in by_template.items():    # one new template for the twins of one template
            self.place.place_hcl(*items[0], more=items[1:])
        for path, items in by_file.items():
            self.place.place_yaml_file(path, items)
        addonpools.place(self, charted)
        overlays.twins(self)
        self.res.files = sorted({e.path for e in self.res.edits})
        self.same_classes(made_classes)

    def same_classes(self, made: list) -> None:
        """NodeClasses that come out the same (their EC2NodeClasses differed only in what Auto Mode does not carry: the
        AMI, user data, block devices beyond one volume): said once, with the pools that could share one. They are
        written one for one, as the pools name them; merging them is the team's choice (karpenter-to-auto-mode.md,
        lessons from public moves, 5)."""
        groups: dict[str, list] = {}
        for new, spec, m in made:
            groups.setdefault(json.dumps(spec, sort_keys=True, default=str), []).append((new, m))
        for same in groups.values():
            if len(same) < 2:
                continue
            names = ", ".join(n for n, _ in same)
            m = same[0][1]
            self.finding("MIG-AUTO-060", "info", m.path, m.line,
                         f"the Auto Mode NodeClasses {names} come out the same: their EC2NodeClasses "
                         f"({', '.join(str(x.name) for _, x in same)}) differ only in what Auto Mode does not carry",
                         f"one NodeClass could serve their NodePools: keep {same[0][0]} and point the others' "
                         "nodeClassRef at it, once the move is done (migrator writes them one for one)")

    def role_for(self, m):
        """The NodeClass's role: the Auto Mode node role, as the container can hold it."""
        c = self.cluster
        same_module = m.tf_path is not None and (posixpath.dirname(m.tf_path) or ".") == c.dir and c.role_expr
        if m.container in ("kubectl_manifest", "kubernetes_manifest", addonpools.CONTAINER) and same_module:
            return m.expression_token(c.role_expr)
        if c.role_literal:
            return c.role_literal
        why = "the cluster is not declared in this root" if not c.address else \
            c.role_unknown or f"{c.address} names it only at apply time (node_iam_role_use_name_prefix)"
        self.finding("MIG-AUTO-010", "error", m.path, m.line,
                     f"the NodeClass for EC2NodeClass {_name_key(m, m.name)} needs the Auto Mode node role's name, and "
                     + why,
                     "run migrator with --auto-mode-node-role <the role's name> (or set node_iam_role_name and "
                     "node_iam_role_use_name_prefix = false on the eks module)")
        return None

    # -- workloads: the temporary taint comes off ------------------------------------------------------------------
    def untaint(self) -> None:
        for m in self.auto:
            if m.kind != "NodePool" or not _has_temp_taint(m.obj):
                continue
            tree = tree_of(self.repo, m)
            taints = [t for t in m.obj["spec"]["template"]["spec"]["taints"]
                      if not (isinstance(t, dict) and t.get("key") == TAINT["key"])]
            op = keytree.Op("remove", TAINTS) if not taints else keytree.Op("replace", TAINTS, TAINTS, value=taints)
            out = keytree.rewrite(tree, [op]) if tree is not None else None
            name = _name_key(m, m.name)
            if out is None or out.problems or not out.edits:
                self.finding("MIG-AUTO-015", "warning", m.path, m.line,
                             f"NodePool {name}: migrator cannot remove the temporary taint {TAINT['key']} where it is "
                             "written", f"remove the taint {TAINT['key']} from NodePool {name} by hand")
                continue
            for s, e, t in out.edits:
                self.res.edits.append(TextEdit(tree.path, s, e, t, RULE))
            self.res.untainted.append(name)
            for tf, b in ([(m.tf_path, m.block)] if m.block is not None and m.tf_path else []) + \
                    ([m.applier] if m.applier is not None else []):
                if (posixpath.dirname(tf), b.address) not in self.res.tf_targets:
                    self.res.tf_targets.append((posixpath.dirname(tf), b.address))   # what applies the change
        self.res.files = sorted({e.path for e in self.res.edits})

    # -- cutover: Karpenter's objects go --------------------------------------------------------------------------
    def cutover(self) -> None:
        pools = [m for m in self.old if m.kind == "NodePool"]
        if self.unread("error"):
            return                          # pools migrator cannot read would lose their classes: said, held
        if self.unmatched_selectors():
            return                          # a workload would be left selecting a pool that goes: said, held
        twins = {convert.pool_key(m): m for m in self.auto if m.kind == "NodePool"}
        going, staying = [], []
        for m in pools:
            name = _name_key(m, m.name)
            twin = twins.get(convert.nodepool_name(convert.pool_key(m)))
            cls = self.class_key(twin) if twin is not None else None
            other = written_elsewhere(self.ctx, cls) if twin is not None and cls is not None and \
                ("NodeClass", cls) not in self.twins else None
            if other is not None:       # the nodepools phase wrote the twin on it (MIG-AUTO-069): the same reliance
                self.finding("MIG-AUTO-069", "warning", m.path, m.line,
                             f"NodePool {name} is removed while its twin {convert.nodepool_name(name)} runs on the "
                             f"Auto Mode NodeClass {cls}, which another root of the repository writes ({other}); "
                             "nothing in the files says that root is this cluster's",
                             f"before applying, check that NodeClass {cls} is Ready in this cluster (kubectl get "
                             f"nodeclasses.eks.amazonaws.com {cls}) and that the pods of {name} run on Auto Mode's "
                             f"nodes; if it is not there, write it for this cluster first")
            elif twin is not None and cls is not None and ("NodeClass", cls) not in self.twins and \
                    cls not in NAMING["nodeclass_reserved"]:
                self.finding("MIG-AUTO-018", "warning", twin.path, twin.line,
                             f"NodePool {name}'s Auto Mode twin {convert.nodepool_name(name)} names NodeClass {cls}, "
                             "which the repository does not hold: its old pool is not removed",
                             f"if NodeClass {cls} is applied from outside this repository, delete the old pool by "
                             "hand once it is Ready; else add it (run migrator again: the nodepools phase writes it)")
                twin = None
            (going if twin is not None else staying).append(m)
        used = {self.class_key(m) for m in staying}
        waiting = []
        for m in self.old:
            if m.kind != "EC2NodeClass":
                continue
            name = _name_key(m, m.name)
            leaning = leaning_pools(self.ctx, name) if name not in used else []
            if ("NodeClass", convert.nodeclass_name(name)) in self.twins and name not in used and not leaning:
                going.append(m)
            else:
                staying.append(m)
            if leaning and ("NodeClass", convert.nodeclass_name(name)) in self.twins:
                waiting.append(m)
                self.finding("MIG-AUTO-070", "warning", m.path, m.line,
                             waits_message(name, leaning, twinned(self.ctx, leaning)),
                             waits_step(name, leaning))
        for m in staying:
            name = _name_key(m, m.name)
            twin = convert.nodepool_name(convert.pool_key(m)) if m.kind == "NodePool" else convert.nodeclass_name(name)
            if m in waiting:
                continue                # another root's pool still runs on it: removed by a later cutover
            if (m.kind.replace("EC2", ""), twin) not in self.twins and not (m.kind == "EC2NodeClass" and name in used):
                self.res.pending.append(f"{m.kind} {name}")
            self.res.stays.append(f"{m.kind} {name}")
        if self.res.pending and not going:
            return                      # the nodepools phase has not landed: nothing to cut over
        from .workloads import POOL_KEY, selecting
        moving = self.moving()
        held = [h for h in selecting(self.ctx, {convert.name_key(m, m.name) for m in going if m.kind == "NodePool"})
                if h[:2] not in moving]
        for path, line, name in held:       # the workloads phase moves these first: a pod must never select a gone pool
            self.finding("MIG-AUTO-064", "error", path, line,
                         f"a workload still selects nodes by {POOL_KEY} = {name}, a NodePool this phase removes: "
                         "its pods would have no node to run on",
                         f"change the selector to {POOL_KEY}: {convert.nodepool_name(name)} (the workloads phase "
                         "does it), then run migrator again")
        if held:
            return
        gone = Removals()
        released = []                   # rendered by a module's chart: their release leaves its input
        for m in going:
            name = _name_key(m, m.name)
            named = rendered_names(self.ctx.repo, m.path, name) if m.masked.has_token(str(m.name)) else None
            shown = f" [{', '.join(sorted(named))}]" if named else ""      # a template's names, as its releases give
            self.res.removed.append(f"{m.kind} {name}{shown} ({m.path}:{m.line})")
            self.res.deletes.append((m.kind.lower(), name))
            if m.container == "template" and m.block is not None and m.block.labels[0] in localfiles.KINDS:
                self.res.rendered_deletes.append((m.kind.lower(), name))   # Terraform removes the file, not these
            if m.container == addonpools.CONTAINER:
                released.append(m)
                continue
            gone.add(m)
        addonpools.remove(self, released)
        blocks, docs, templates = gone.blocks, gone.docs, gone.templates
        outs = unlink(self.repo, {b.address: (tf, b) for tf, bs in blocks.items() for b in bs}, RULE,
                      self.res.edits, self.res.findings)
        if outs is None:
            return
        for p, b in outs:
            blocks.setdefault(p, []).append(b)
        for tf, bs in blocks.items():
            self.res.edits += remove_blocks(self.repo, tf, bs, RULE)
            self.res.tf_targets += [(posixpath.dirname(tf) or ".", b.address) for b in bs if b.type != "output"]
        removed_starts = {(tf, b.start) for tf, bs in blocks.items() for b in bs}
        for tpath in templates:
            if not self.place._template_still_used(tpath, removed_starts):
                self.res.edits.append(DeleteFile(tpath, RULE))
        for path, ms in docs.items():
            self.place.remove_yaml_docs(path, ms)
        overlays.drop(self, {(m.kind, _name_key(m, m.name)) for m in going if m.container == "yaml"})
        for m in staying:
            if f"{m.kind} {_name_key(m, m.name)}" not in self.res.pending and m not in waiting:
                self.finding("MIG-AUTO-016", "warning", m.path, m.line,
                             f"{m.kind} {_name_key(m, m.name)} stays on Karpenter (it cannot move to Auto Mode): "
                             "Karpenter's controller stays while it exists",
                             "move its workloads elsewhere and delete it, or keep running Karpenter for it")
        self.res.files = sorted({e.path for e in self.res.edits})


def _own_errors(m) -> list[str]:
    """Schema errors of a Karpenter object as the repository writes it, against its own CRD (a label its CRD
    restricts, a v1beta1 value in a v1 pool): said with a twin that fails, so the fault is found in the source."""
    if not isinstance(m.obj, dict):
        return []
    return validate_object(m.obj, knowledge.load("minors")["newest"] if m.kind == "NodePool" else "")


def run(ctx, phase: str, done: dict | None = None) -> PoolsResult:
    cluster = (done or {}).get("auto/cluster")
    if cluster is None or not hasattr(cluster, "enabled"):
        return PoolsResult()
    return PoolsRule(ctx, phase, cluster).run()
