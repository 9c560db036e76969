"""The install over two Terraform stages (migrator/stages.py): the karpenter module beside the cluster with outputs,
the charts and NodePools in the stage that installs Cluster Autoscaler, reading those outputs through its
terraform_remote_state."""
from __future__ import annotations

import posixpath
from dataclasses import dataclass, field

from ....placement import align_attributes
from .clusters import _group_name_expr, _helm_provider
from .common import INSTALL, MARK, STAGE_OUTPUTS, _find


def _outputs(repo, d: str) -> dict[str, tuple[str, str]]:
    """The outputs a root module declares: name -> (file, value expression as written)."""
    out: dict[str, tuple[str, str]] = {}
    for p in repo.tf_in_dir(d if d != "." else ""):
        f = repo.hcl(p)
        for b in f.blocks if f is not None else []:
            if b.type == "output" and b.labels and b.attr("value") is not None:
                out[b.labels[0]] = (p, b.attr("value").source.strip())
    return out


@dataclass
class Split:
    """Karpenter over two Terraform stages: the karpenter module beside the cluster with outputs, the charts and objects
    in the stage that installs Cluster Autoscaler, reading those outputs through its terraform_remote_state."""
    dir: str                                # the charts' root module
    data: str                               # data.terraform_remote_state.<data> (the cluster's state)
    path: str                               # the charts' file
    source: str                             # the data source's file
    cluster_dir: str
    existing: dict[str, tuple[str, str]]    # the cluster stage's outputs
    written: dict[str, str] = field(default_factory=dict)      # outputs this install adds beside the cluster
    via: str = ""                           # the cluster is made in a module the stage calls: module.<via>
    stage: str = ""                         # the stage's root module
    module_existing: dict[str, tuple[str, str]] = field(default_factory=dict)   # that module's outputs
    forwarded: dict[str, str] = field(default_factory=dict)    # outputs the stage adds, of the module's
    conflicts: list[str] = field(default_factory=list)         # files already declaring an output migrator names

    def _output(self, have: dict[str, tuple[str, str]], name: str, value: str, into: dict[str, str]) -> str:
        """The output giving a value: one already declared with that value, else karpenter_<name>, new (a name
        already declared with another value is a conflict)."""
        found = next((n for n, (_, v) in have.items() if v == value), None)
        if found is not None:
            return found
        if f"karpenter_{name}" in have:
            self.conflicts.append(have[f"karpenter_{name}"][0])
        into[f"karpenter_{name}"] = value
        return f"karpenter_{name}"

    def ref(self, name: str, value: str) -> str:
        """The other stage's expression for a value of the cluster's stage (through the module's outputs and the
        stage's when the cluster is made in a module)."""
        if self.via:
            value = f"module.{self.via}.{self._output(self.module_existing, name, value, self.written)}"
        have = self._output(self.existing, name, value, self.forwarded if self.via else self.written)
        return f"data.terraform_remote_state.{self.data}.outputs.{have}"

    def refs(self, expr: str, kept, eks: str, irsa: bool, literal: bool) -> dict[str, str]:
        """The values the charts and objects read (the role ARN with IRSA only, the node role's name unless it is
        fixed from a literal cluster name)."""
        name = INSTALL["module_name"]
        out = {"cluster": self.ref("cluster_name", expr)}
        out.update({k: self.ref(k, f"module.{name}.{k}") for k in STAGE_OUTPUTS
                    if (k != "iam_role_arn" or irsa) and (k != "node_iam_role_name" or not literal)})
        group = _group_name_expr(kept.group, eks) if kept else None
        if group is not None:
            out["group"] = self.ref("controller_node_group", group)
        return out

    def reads(self) -> str:
        """How the charts' stage reads the cluster stage's outputs (said in the files' comments)."""
        return f"data.terraform_remote_state.{self.data}"

    def declarations(self) -> list[str]:
        """What the charts' file declares for the values it reads (nothing: a data source reads them)."""
        return []

    def output_lines(self, outputs: dict[str, str] | None = None) -> list[str]:
        out = [f"# read by {self.dir} ({self.reads()})" +
               (f" through {self.stage}'s outputs" if self.via and outputs is None else "")]
        for n, v in (self.written if outputs is None else outputs).items():
            out += [f'output "{n}" {{', f"  value = {v}", "}", ""]
        return out

    def forward_file(self) -> tuple[str, str] | None:
        """The stage's file forwarding the module's outputs (when the cluster is made in a module it calls)."""
        if not self.via or not self.forwarded:
            return None
        path = posixpath.join(self.stage, "karpenter.tf") if self.stage != "." else "karpenter.tf"
        lines = [f"# Karpenter next to Cluster Autoscaler ({MARK}:",
                 f"# phase install): the karpenter module is in {self.cluster_dir} (module.{self.via}); its outputs,",
                 "# forwarded here, are"] \
            + self.output_lines(self.forwarded)[:1] + [""] + self.output_lines(self.forwarded)[1:]
        return path, align_attributes("\n".join(lines).rstrip("\n") + "\n")


class StageSplit:
    """The install over two Terraform stages (migrator/stages.py)."""

    def stage_split(self, d: str, cas0, expr: str) -> "Split | None":
        """Karpenter over two Terraform stages (migrator/stages.py): the cluster's root module d has no helm provider
        and the root module that installs Cluster Autoscaler reads d's state by terraform_remote_state and has one.
        None when that is not the layout; a Split without a folder when it is and something is in the way (said)."""
        from ....evaluate import is_root_module
        from ....roots import _module_users
        from ....stages import links
        cas_dir = posixpath.dirname(cas0.path) or "."
        readers = {cas_dir} | _module_users(self.repo, cas_dir)
        calls = self.repo.callers(d if d != "." else "")
        # the cluster's stage: d itself, or the root module that is the one caller of the module d (its outputs
        # forwarded by the stage's own)
        stage, via = (d, "") if not calls else \
            (posixpath.dirname(calls[0][0]) or ".", calls[0][1].labels[0]) if len(calls) == 1 and calls[0][1].labels \
            and not self.repo.callers(posixpath.dirname(calls[0][0]) or "") else ("", "")
        found = [x for x in links(self.repo) if stage and x.producer == stage and x.reader in readers and x.name
                 and is_root_module(self.repo, x.reader) and _helm_provider(self.repo, x.reader)]
        if not found or cas0.kind not in ("terraform", "module", "wrapper", "tfdeployment", "kubectl"):
            return None
        link = found[0]
        split = Split(link.reader, link.name, posixpath.join(link.reader, "karpenter.tf") if link.reader != "." else
                      "karpenter.tf", link.path, d, _outputs(self.repo, stage), via=via, stage=stage,
                      module_existing=_outputs(self.repo, d) if via else {})
        forward = posixpath.join(stage, "karpenter.tf") if stage != "." else "karpenter.tf"
        busy = [x for x in (split.path, forward if via else "") if x in self.repo.files]
        if busy:
            _find(self.res, "MIG-CAS-006", "error", busy[0], 1, f"{busy[0]} already exists; migrator writes the "
                  "Karpenter installation there", "rename that file, then run migrator again")
            split.dir = ""
            return split
        _find(self.res, "MIG-CAS-064", "info", link.path, link.line,
              f"Cluster Autoscaler is installed by the stage {link.reader}, which reads the cluster's stage {stage} "
              f"through data.terraform_remote_state.{link.name}: the karpenter module is written beside the cluster ({d}"
              + (f", a module {stage} calls as module.{via}" if via else "")
              + f", with outputs for the other stage) and the charts and NodePools beside Cluster Autoscaler "
              f"({link.reader}), reading those outputs",
              f"apply {stage} before {link.reader} at every phase (the runbook's commands go in that order)")
        return split
