"""The install of a root module applied once per environment with its own tfvars: written once, the same for every
environment; what is each environment's own (the controller's node group, the NodePools) in its tfvars and files."""
from __future__ import annotations

from dataclasses import dataclass, field

from ....edits import TextEdit, to_newline
from ....sources import hcl as hclsrc
from .clusters import _group_name_expr
from .common import MARK, RULE, _find


@dataclass
class TfvarsInputs:
    """A root module applied once per environment, each with its own tfvars (`-var-file=envs/dev.tfvars`): the
    install is written in the module once, the same for every environment; the controller's node group (the key of
    this environment's group in the module's map) is a variable each environment's tfvars sets, and the NodePools go
    in a file named after the tfvars (envs/dev.karpenter-nodepools.yaml)."""
    var_file: str
    environments: list[str] = field(default_factory=list)
    declared: dict[str, str] = field(default_factory=dict)     # the module's variables: name -> file
    literals: dict[str, str] = field(default_factory=dict)     # variable -> this environment's value (HCL)
    key: str = ""                                              # the kept group's key in its map

    VARIABLE = "karpenter_controller_node_group"

    def group(self, g) -> None:
        """The kept group as this environment's own: its key in the module's map (or the resource's instance key)."""
        key = g.entry.key if g is not None and g.source == "module" and g.entry is not None else \
            g.key if g is not None and g.source == "resource" and g.key else None
        if key is not None:
            self.key = str(key)
            self.literals[self.VARIABLE] = hclsrc.quote(self.key)

    def group_ref(self, g, eks: str) -> str | None:
        """The controller group's name as Terraform knows it, its key read from this environment's variable."""
        return _group_name_expr(g, eks, f"var.{self.VARIABLE}") if self.key else None

    def declarations(self) -> list[str]:
        out: list[str] = []
        for v in self.literals:
            out += [f'variable "{v}" {{', '  description = "The node group (its key) the Karpenter controller runs on: '
                    'each environment\'s tfvars sets it"', "  type        = string", "}", ""]
        return out

    def objects_file(self) -> str:
        return self.var_file[:-len(".tfvars")] + ".karpenter-nodepools.yaml"

    def tfvars_edit(self, repo) -> TextEdit:
        """The environment's values, after the last line of its tfvars."""
        text = repo.text(self.var_file)
        lines = ["# Karpenter (migrator): this environment's node group for the controller"]
        lines += [f"{v} = {x}" for v, x in self.literals.items()]
        new = ("" if not text or text.endswith("\n") else "\n") + ("\n" if text.strip() else "") + "\n".join(lines) + "\n"
        return TextEdit(self.var_file, len(text), len(text), to_newline(new, repo.files[self.var_file].newline), RULE)


class TfvarsEnvironments:
    """The install of a root module applied once per environment with its own tfvars."""

    def awaited_by_tfvars(self) -> dict[str, str]:
        """As awaited, for a root module applied once per environment with its own tfvars: the karpenter.tf migrator
        wrote in it when this environment's tfvars does not set the variables it declares yet."""
        for c in self.ctx.charts:
            if c.chart != "karpenter" or MARK not in self.repo.text(c.path):
                continue
            f = self.repo.hcl(c.path)
            wanted = {b.labels[0] for b in (f.blocks if f is not None else []) if b.type == "variable" and b.labels
                      and b.labels[0].startswith("karpenter_") and b.attr("default") is None}
            mine = self.repo.hcl(self.ctx.var_file) if self.ctx.var_file in self.repo.files else None
            if wanted and mine is not None and not wanted <= set(mine.attributes):
                return {c.path: self.repo.text(c.path)}
        return {}

    def by_tfvars(self, d: str, kept, split=None, style: str = "terraform") -> "TfvarsInputs | None":
        """The install of a root module applied once per environment (`-var-file`): written once, the same for every
        environment; what is this environment's own goes in its tfvars. None when the root is not one; without a
        var_file when nothing can be written (said: the variable is taken, or the cluster or Cluster Autoscaler is
        outside the root module's own files)."""
        var_file = self.ctx.var_file
        if not var_file:
            return None
        envs = list(self.ctx.environments) or [var_file]
        if (self.ctx.root if self.ctx.root != "." else "") != (d if d != "." else "") or split is not None \
                or style != "terraform":
            # the cluster is made in a module the root module calls (or in another stage): what is each
            # environment's own would have to pass through that module's call
            cas0 = self.cas.installs[0]
            _find(self.res, "MIG-CAS-002", "warning", cas0.path, cas0.line,
                  f"{cas0.address}: the root module {self.ctx.root} is applied once per environment with its own tfvars "
                  f"({', '.join(envs)}) and " + (f"Cluster Autoscaler is installed by {style}" if style != "terraform"
                                                 else f"the cluster is made in {d}, outside it")
                  + ": migrator writes Karpenter per "
                  "environment only in the root module itself; nothing is written for this root",
                  "write the karpenter module beside the cluster and the charts in the root module, with the "
                  "controller's node group as a variable each tfvars sets (docs/from-cluster-autoscaler.md), or "
                  "follow the Karpenter guide 'Migrating from Cluster Autoscaler' by hand")
            return TfvarsInputs(var_file="")
        declared = {b.labels[0]: p for p in self.repo.tf_in_dir(d if d != "." else "") for b in
                    (self.repo.hcl(p).blocks if self.repo.hcl(p) is not None else []) if b.type == "variable" and b.labels}
        split = TfvarsInputs(var_file=var_file, environments=envs,
                             declared={k: v for k, v in declared.items() if v not in self.ours})
        split.group(kept.group if kept is not None else None)
        f = self.repo.hcl(var_file)
        taken = [v for v in split.literals if (f is not None and v in f.attributes) or v in split.declared]
        if taken:
            where = var_file if f is not None and taken[0] in f.attributes else split.declared[taken[0]]
            _find(self.res, "MIG-CAS-006", "error", where, 1,
                  f"{where} already sets (or declares) {taken[0]}, the variable migrator gives each environment's "
                  "controller node group", "rename it, then run migrator again")
            return TfvarsInputs(var_file="")
        return split
