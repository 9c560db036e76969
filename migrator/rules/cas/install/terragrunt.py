"""The install over Terragrunt units: the karpenter module in the module of the cluster's unit, the charts and NodePools
in the module of Cluster Autoscaler's unit, given the cluster unit's outputs as inputs; and modules several
environments' units apply (written once, each environment's own part in its unit)."""
from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from typing import Any

from ....edits import NewFile, TextEdit, line_start, to_newline
from ....inventory.terragrunt import UNIT_FILE
from ....placement import align_attributes
from ....sources import hcl as hclsrc
from .clusters import _group_name_literal, _group_names_expr
from .common import InstallResult, MARK, RULE, _find
from .stages import Split, _outputs


@dataclass
class UnitSplit(Split):
    """Karpenter over two Terragrunt units: the karpenter module beside the cluster in the module of the unit that
    makes it, with outputs; the charts and objects in the module of the unit that installs Cluster Autoscaler,
    reading them as variables its terragrunt.hcl passes from the `dependency` on the cluster's unit."""
    dependency: str = ""                    # dependency.<name>: the cluster's unit
    unit: str = ""                          # the charts' unit folder
    passed: dict[str, str] = field(default_factory=dict)       # output -> the input that already passes it
    inputs: dict[str, str] = field(default_factory=dict)       # inputs this install adds: variable -> output
    into: Any = None                        # the object literal of the unit's inputs the new ones join
    declared: dict[str, str] = field(default_factory=dict)     # the charts' module's variables: name -> file
    shared: list[str] = field(default_factory=list)            # every unit applying the modules (one per environment),
                                                               # when several do: the modules' files are the same for
                                                               # all, what differs is given in each unit's inputs
    literals: dict[str, str] = field(default_factory=dict)     # inputs given as this environment's own values
    maps: set[str] = field(default_factory=set)                # inputs that are maps of strings

    def _variable(self, name: str) -> str:
        var = name if name.startswith("karpenter_") else f"karpenter_{name}"
        if var in self.declared and var not in self.inputs and var not in self.literals:
            self.conflicts.append(self.declared[var])
        return var

    def ref(self, name: str, value: str) -> str:
        have = self._output(self.existing, name, value, self.written)
        if have in self.passed:
            return f"var.{self.passed[have]}"
        var = self._variable(have)
        self.inputs[var] = have
        return f"var.{var}"

    def refs(self, expr: str, kept, eks: str, irsa: bool, literal: bool) -> dict[str, str]:
        """As Split.refs; with modules shared by several environments, the controller's node group is this
        environment's own: its name, given in the unit's inputs (an output of the shared module would name one
        environment's group for all)."""
        group = _group_name_literal(kept.group) if kept is not None and self.shared else None
        keyed = _group_names_expr(kept.group, eks) if kept is not None and self.shared and group is None else None
        if group is None and keyed is None:
            return super().refs(expr, kept, eks, irsa, literal)
        out = super().refs(expr, None, eks, irsa, literal)
        var = self._variable("controller_node_group")
        if keyed is not None:       # a name EKS makes (a prefix): every group's name by key, this environment's key
            names = self.ref("node_group_names", keyed[0])
            self.maps.add(names[len("var."):])
            self.literals[var] = hclsrc.quote(keyed[1])
            out["group"] = f"{names}[var.{var}]"
            return out
        self.literals[var] = hclsrc.quote(group)
        out["group"] = f"var.{var}"
        return out

    def reads(self) -> str:
        if self.shared:
            return f"inputs of each environment's unit ({', '.join(self.shared)})"
        return f"inputs of {self.unit}/terragrunt.hcl, from dependency.{self.dependency}"

    def declarations(self) -> list[str]:
        out: list[str] = []
        for v in [*self.inputs, *self.literals]:
            out += [f'variable "{v}" {{', f"  type = {'map(string)' if v in self.maps else 'string'}", "}", ""]
        return out

    def inputs_edit(self, repo) -> TextEdit | None:
        """The inputs joining the unit's `inputs` object, after its last entry, as a run of their own."""
        if not self.inputs and not self.literals:
            return None
        path = posixpath.join(self.unit, UNIT_FILE) if self.unit != "." else UNIT_FILE
        text = repo.text(path)
        obj = self.into
        pos = line_start(text, obj.end - 1)
        last = obj.entries[-1] if obj.entries else None
        ind = text[line_start(text, last.start):last.start] if last is not None else \
            text[line_start(text, obj.start):obj.start] + "  "
        lines = ([f"# Karpenter (migrator): the outputs of dependency.{self.dependency} its charts read"] +
                 [f"{v} = dependency.{self.dependency}.outputs.{o}" for v, o in self.inputs.items()]
                 if self.inputs else [])
        if self.literals:
            lines += [*([""] if lines else []), "# Karpenter (migrator): this environment's node group for the controller"]
            lines += [f"{v} = {x}" for v, x in self.literals.items()]
        body = align_attributes("\n".join(lines) + "\n")
        new = ("\n" if last is not None else "") + "".join((ind + ln if ln else "") + "\n" for ln in body.splitlines())
        return TextEdit(path, pos, pos, to_newline(new, repo.files[path].newline), RULE)


def _unit_place(repo, unit_dir: str, cluster_units: set[str]) -> tuple[str, list, Any] | None:
    """Where a unit's terragrunt.hcl takes the install's inputs: (the name of its `dependency` on one of the cluster's
    units, the object literals of its `inputs`, the one new entries join: the last). None where it names no such
    unit by a `dependency` block, or gives its module no `inputs` object migrator can add to."""
    path = posixpath.join(unit_dir, UNIT_FILE) if unit_dir != "." else UNIT_FILE
    f = repo.hcl(path) if path in repo.files else None
    if f is None:
        return None
    dep = next((b.labels[0] for b in f.blocks if b.type == "dependency" and b.labels and b.attr("config_path") is not None
                and isinstance(b.attr("config_path").literal(), str)
                and posixpath.normpath(posixpath.join(unit_dir, b.attr("config_path").literal())) in cluster_units), None)
    e = f.attributes["inputs"].expr if "inputs" in f.attributes else None
    objs = [e] if e is not None and e.kind == "object" else \
        [x for x in e.items if x.kind == "object"] if e is not None and e.kind == "call" and e.name == "merge" else []
    if dep is None or not objs or (e.kind == "call" and e.items[-1] is not objs[-1]):
        return None                             # a later merge() argument could override what is added
    if hclsrc.line_of(repo.text(path), objs[-1].start) == hclsrc.line_of(repo.text(path), objs[-1].end):
        return None                             # an object on one line: no place for entries as hclfmt writes them
    return dep, objs, objs[-1]


def _passed(dep: str, objs: list) -> dict[str, str]:
    """The cluster unit's outputs a unit's inputs already pass on: output -> the input (variable) that gives it."""
    out = {}
    for x in objs:
        for entry in x.entries:
            m = re.fullmatch(rf"dependency\.{re.escape(dep)}\.outputs\.([\w-]+)", entry.value.source.strip())
            if m:
                out[m.group(1)] = entry.key
    return out


def _unit_split(repo, cas0, units: list[tuple[str, str, str]]) -> "UnitSplit | None":
    """The split over the units of _cluster_units: None where the charts' unit names the cluster's unit by no
    `dependency` block, or gives its module no `inputs` object migrator can add to. Modules several environments'
    units apply (one unit per environment, each with its own inputs) are written once, the same for every
    environment: the split is then `shared`, and None unless every unit applying the charts' module depends on a unit
    of the cluster's module and takes inputs (each environment's root gives its own)."""
    unit_dir, cluster_unit, md = units[0]
    if not cas0.path.endswith(hclsrc.TF_CODE):
        return None                             # the unit installs a registry module itself: no module to write beside
    from ....inventory.terragrunt import callers as unit_callers
    charts = posixpath.dirname(cas0.path) or "."
    chart_units = unit_callers(repo, charts, every=True)
    cluster_units = {u.dir for u in unit_callers(repo, md, every=True)}
    shared = sorted(u.dir for u in chart_units) if len(chart_units) > 1 or len(cluster_units) > 1 else []
    if shared and (any(_unit_place(repo, u, cluster_units) is None for u in shared) or charts == md):
        return None                             # an environment could not be given the install's inputs
    place = _unit_place(repo, unit_dir, {cluster_unit})
    if place is None:
        return None
    dep, objs, obj = place
    path = posixpath.join(unit_dir, UNIT_FILE) if unit_dir != "." else UNIT_FILE
    passed = _passed(dep, objs)
    for u in shared:                            # the shared module reads only what every environment passes alike
        other = _passed(*_unit_place(repo, u, cluster_units)[:2])
        passed = {k: v for k, v in passed.items() if other.get(k) == v}
    declared = {b.labels[0]: p for p in repo.tf_in_dir(charts if charts != "." else "") for b in
                (repo.hcl(p).blocks if repo.hcl(p) is not None else []) if b.type == "variable" and b.labels}
    return UnitSplit(charts, "", posixpath.join(charts, "karpenter.tf") if charts != "." else "karpenter.tf", path, md,
                     _outputs(repo, md), stage=md, dependency=dep, unit=unit_dir, passed=passed, into=obj,
                     declared=declared, shared=shared)


class TerragruntUnits:
    """The install over Terragrunt units: the cluster's unit and Cluster Autoscaler's, and modules several
    environments' units apply."""

    def awaited(self) -> dict[str, str]:
        """The files migrator's install wrote in modules several environments' Terragrunt units apply, when this
        environment's unit does not give the variables they declare yet (another environment's plan wrote them,
        planned alone with --root): this environment's install is then still to do, its own inputs and NodePools
        (path -> the file's text, kept as it is): the charts' karpenter.tf and the one in the module of the cluster's
        unit the charts' unit depends on."""
        from ....inventory.terragrunt import callers as unit_callers, terragrunt
        if self.ctx.var_file:
            return self.awaited_by_tfvars()
        for c in self.ctx.charts:
            d = posixpath.dirname(c.path) or "."
            units = unit_callers(self.repo, d, every=True)
            if c.chart != "karpenter" or MARK not in self.repo.text(c.path) or len(units) < 2:
                continue
            f = self.repo.hcl(c.path)
            wanted = {b.labels[0] for b in (f.blocks if f is not None else []) if b.type == "variable" and b.labels
                      and b.labels[0].startswith("karpenter_") and b.attr("default") is None}
            mine = [u for u in units if self.ctx.owns(u.path)]
            if not wanted or all(wanted <= set(u.inputs) for u in mine):
                continue
            dirs = {d} | {du.module_dir for u in mine for dep in u.dependencies
                          if (du := terragrunt(self.repo).unit_at(dep)) is not None and du.module_dir}
            files = [posixpath.join(x, "karpenter.tf") if x != "." else "karpenter.tf" for x in sorted(dirs)]
            return {p: self.repo.text(p) for p in files if p in self.repo.files and MARK in self.repo.text(p)}
        return {}

    def join_written(self, res: InstallResult) -> None:
        """This environment's part of an install already written in the shared modules: the files there stay as they
        are, when they are what this environment's plan writes; else nothing is written, said."""
        differ = sorted(e.path for e in res.edits if isinstance(e, NewFile) and e.path in self.ours
                        and e.text.replace("\r\n", "\n") != self.ours[e.path].replace("\r\n", "\n"))
        missing = sorted(set(self.ours) - {e.path for e in res.edits if isinstance(e, NewFile)})
        if differ or missing:
            res.edits.clear()
            res.pools.clear()
            where = (differ or missing)[0]
            unit = f"the unit {self.unit}" if self.unit else "this environment's unit"
            if self.ctx.var_file:
                unit = f"this environment's tfvars ({self.ctx.var_file})"
            _find(res, "MIG-CAS-072", "warning", where, 1,
                  f"{where} holds the Karpenter install another environment's plan wrote in a module this "
                  f"environment's units apply too, and it is not what this environment's plan writes there (edited "
                  "since, or written by another migrator version): this environment's inputs and NodePools are not "
                  "written",
                  f"give {unit} the variables {where} declares "
                  f"(as the other environments' {'tfvars' if self.ctx.var_file else 'units'} do), and write its "
                  "NodePools by hand (docs/from-cluster-autoscaler.md)")
            return
        res.edits = [e for e in res.edits if not (isinstance(e, NewFile) and e.path in self.ours)]
        tfvars = bool(self.ctx.var_file)
        _find(res, "MIG-CAS-073", "info", sorted(self.ours)[0], 1,
              f"Karpenter is already written in the {'root module' if tfvars else 'modules'} this environment shares "
              f"with others ({', '.join(sorted(self.ours))}): this environment's install gives "
              + (f"its tfvars ({self.ctx.var_file}) the values it reads" if tfvars else "its units the inputs they read")
              + ", and writes its NodePools",
              "apply this environment's " + ("root module with its -var-file" if tfvars else "units")
              + " in the runbook's order")

    def unit_split(self, split: UnitSplit, cas0) -> UnitSplit:
        """The Terragrunt split, said (MIG-CAS-066); without a folder when a file migrator writes is there already."""
        if split.path in self.repo.files and split.path not in self.ours:
            _find(self.res, "MIG-CAS-006", "error", split.path, 1, f"{split.path} already exists; migrator writes the "
                  "Karpenter installation there", "rename that file, then run migrator again")
            split.dir = ""
            return split
        _find(self.res, "MIG-CAS-066", "info", split.source, 1,
              f"Cluster Autoscaler is installed by the Terragrunt unit {split.unit}, which depends on the cluster's unit "
              f"(dependency.{split.dependency}): the karpenter module is written beside the cluster ({split.cluster_dir}, "
              f"with outputs), the charts and NodePools beside Cluster Autoscaler ({split.dir}), given those outputs "
              f"as inputs in {split.source}",
              "apply the cluster's unit before the charts' unit at every phase (the runbook's commands go in that order)")
        return split
