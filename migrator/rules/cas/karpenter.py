"""Rule `cas/karpenter`: Karpenter installed next to Cluster Autoscaler (phase `install`).

Terraform roots (a terraform-aws-modules/eks cluster or an `aws_eks_cluster`): a new `karpenter.tf` beside the
cluster holds the terraform-aws-modules karpenter module (controller role and policy, interruption queue, node role
with a fixed name, access entry), the `karpenter-crd` and `karpenter` releases at the target, the controller kept
on the node group that stays (node affinity), and an EC2NodeClass plus one NodePool per node group, as
`kubectl_manifest` resources when the root uses the kubectl provider, else in `karpenter-nodepools.yaml` applied by
the runbook. The discovery tag goes on the private subnets (module vpc `private_subnet_tags`) and the node security
group (module eks `node_security_group_tags`). The controller's identity is EKS Pod Identity when the cluster runs
the agent add-on, else IRSA through the cluster's OIDC provider.
Every object validates against the target's CRDs before it is written.
"""
from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from typing import Any

from ... import knowledge
from ...cas import FACTS, CasInventory, NodeGroup, _block_file, nested, scan, set_entries, subnet_zones, yaml_values
from ...edits import Edit, NewFile, TextEdit, line_end, line_start, to_newline
from ...inventory.sites import _module_blocks
from ...inventory.terragrunt import UNIT_FILE
from ...model import Finding
from ...modmajor import irsa_document
from ...placement import align_attributes, kustomization_insert
from ...sources import hcl as hclsrc
from ...sources import yaml as yamlsrc
from ...validate import validate_object
from . import convert

AUTH = knowledge.load("karpenter_module")["access_entry"]
RULE = "cas/karpenter"
MARK = "written by migrator, the move from Cluster Autoscaler"    # in the install's headers: cas/autoscaler reads it
PHASE = "install"
INSTALL = FACTS["install"]
MODULE = knowledge.load("karpenter_module")["majors"][1]["identity"]


@dataclass
class InstallResult:
    edits: list[Edit] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    done: bool = False                      # Karpenter is already installed in this root
    file: str = ""                          # the new Terraform file
    objects_file: str = ""                  # the YAML the runbook applies (no kubectl provider)
    identity: str = ""                      # pod-identity | irsa
    kept: str = ""                          # the node group that stays
    kept_why: str = ""
    pools: list[tuple[str, str]] = field(default_factory=list)    # (NodePool, node group)
    targets: list[tuple[str, str]] = field(default_factory=list)  # (dir, address) for terraform -target
    tagged: list[str] = field(default_factory=list)
    cluster: str = ""                       # how the runbook names the cluster
    flux: list[str] = field(default_factory=list)   # HelmRelease/<ns>/<name> written (charts installed by Flux)
    argocd: list[str] = field(default_factory=list)  # Applications written (charts installed by Argo CD)
    kustomize: str = ""                     # the kustomization whose helmCharts install the charts
    helmfile: str = ""                      # the helmfile whose releases install the charts
    charts_file: str = ""
    sg_by_cli: bool = False                 # the node security group is tagged by the runbook's aws-cli command
    subnets_by_cli: bool = False            # no subnet declaration to tag in Terraform: the runbook tags them
    style: str = "terraform"                # terraform | eksctl (the AWS side by the runbook's commands)
    cluster_literal: str = ""
    access: str = "entry"                   # entry | aws-auth | aws-auth-by-hand: how Karpenter's node role joins
    values_file: str = ""                   # eksctl: the chart values the runbook's helm command reads
    groups: list[str] = field(default_factory=list)
    labelled: list[tuple[str, str]] = field(default_factory=list)   # (dir, address) of a group given the controller
                                                                    # label: applied before the charts
    module_version: str = ""                # the karpenter module release written (the matched v20, or the newest)
    chart: str = ""                         # the chart version installed (below the target with the matched v20)


STAGE_OUTPUTS = tuple(INSTALL["module_outputs"])      # the karpenter module's outputs the charts and objects read


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
    from ...inventory.terragrunt import callers as unit_callers
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


NODE_MAPPING = AUTH["node_mapping"]


def _mapping(module: str, base: str) -> str:
    """Karpenter's node role as one aws-auth mapRoles item in HCL, opened where it stands and closed at `base`."""
    groups = ", ".join(f'"{g}"' for g in NODE_MAPPING["groups"])
    return (f"{{\n{base}  rolearn  = module.{module}.node_iam_role_arn\n"
            f'{base}  username = "{NODE_MAPPING["username"]}"\n'
            f"{base}  groups   = [{groups}]\n{base}}}")


def _find(res: InstallResult, code: str, severity: str, path: str, line: int, message: str, manual: str = "") -> None:
    res.findings.append(Finding(code, severity, path, line, message, manual))


def cluster_expr(repo, cas: CasInventory, d: str) -> tuple[str | None, str]:
    """The Terraform expression naming the cluster in directory d, and the eks module's address if any."""
    for p, b in cas.eks_modules:
        if (posixpath.dirname(p) or ".") == d:
            return f"module.{b.labels[0]}.cluster_name", f"module.{b.labels[0]}"
    for p, b in repo.blocks("resource", "aws_eks_cluster"):
        if (posixpath.dirname(p) or ".") == d:
            return f"aws_eks_cluster.{b.labels[1]}.name", ""
    return None, ""


_REF = re.compile(r"(?<![\w.\"])([A-Za-z_][\w-]*)\.([A-Za-z_][\w-]*)")


def _independent(repo, d: str, source: str, depth: int = 0) -> bool:
    """An expression that reads only literals, variables, locals and resources or data sources made of those (a
    `random_string` suffix, the availability zones): none reads the cluster, the VPC module or a subnet, so it is
    safe to write into any block of the module without a dependency cycle."""
    text = re.sub(r'"(?:[^"\\$]|\\.|\$(?!\{))*"', '""', source)      # string literals without interpolations
    for m in _REF.finditer(text):
        head, name = m.group(1), m.group(2)
        if head in ("var", "path", "terraform"):
            continue
        if head == "local" and depth < 5:
            found = [b.attr(name) for p, b in repo.blocks("locals")
                     if (posixpath.dirname(p) or ".") == d and name in b.attributes]
            if found and all(_independent(repo, d, e.source, depth + 1) for e in found):
                continue
        elif head not in ("module", "each", "count", "self", INSTALL["tagged_resource"]) and depth < 5:
            if head == "data":                      # data.TYPE.NAME
                nxt = re.match(r"\.([A-Za-z_][\w-]*)", text[m.end():])
                kind, rtype, label = "data", name, nxt.group(1) if nxt else None
            else:
                kind, rtype, label = "resource", head, name
            found = [(p, b) for p, b in repo.blocks(kind, rtype)
                     if (posixpath.dirname(p) or ".") == d and b.labels[1:2] == [label]]
            if found and all(_independent(repo, d, repo.text(p)[b.body_start:b.body_end], depth + 1)
                             for p, b in found):
                continue
        return False
    return True


def terraform_clusters_named(repo, names: set[str], regions: set[str] | None = None) -> list[str]:
    """The Terraform files declaring a cluster (an eks module, an aws_eks_cluster) whose name, as the module states it,
    is one of these; with `regions`, not one whose module states its AWS provider's region as another (a cluster of
    the same name in another region is another cluster)."""
    from ...inventory.sites import static_value
    out = []
    blocks = [(p, b, ("name", "cluster_name")) for p, b in scan(repo).eks_modules] + \
        [(p, b, ("name",)) for p, b in repo.blocks("resource", "aws_eks_cluster")]
    for p, b, attrs in blocks:
        d = posixpath.dirname(p)
        if regions:
            stated = {static_value(repo, d, pb.attr("region")) for pp, pb in repo.blocks("provider", "aws")
                      if posixpath.dirname(pp) == d and pb.attr("alias") is None}
            if stated and None not in stated and not stated & regions:
                continue
        for a in attrs:
            e = b.attr(a)
            if e is not None and static_value(repo, d, e) in names:
                out.append(p)
                break
    return sorted(set(out))


def _shared_by(repo, d: str, cas_path: str) -> tuple[list[str], list[str]]:
    """(the root modules that call a module folder, those of them Cluster Autoscaler's install is not part of) where
    more than one root calls it: Karpenter written in the folder would reach the second kind's clusters too (a cluster
    module shared by environments that all run Cluster Autoscaler from it is written to: each applies when it will)."""
    from ...evaluate import is_root_module, roots_of
    files = repo.tf_in_dir(d if d != "." else "")
    if not files or not repo.callers(d if d != "." else ""):
        return [], []
    roots = [r for r in roots_of(repo, files[0]) if is_root_module(repo, r)]
    if len(roots) < 2:
        return [], []
    with_cas = set(roots_of(repo, cas_path)) if cas_path.endswith(".tf") else {posixpath.dirname(cas_path) or "."}
    return roots, [r for r in roots if r not in with_cas]


def _group_name_expr(g: NodeGroup, eks: str, key: str | None = None) -> str | None:
    """The EKS node group name as Terraform knows it (the eks.amazonaws.com/nodegroup label's value); `key`: the
    expression that gives the group's key in its map (a variable each environment sets) instead of the key itself."""
    if g.source == "module" and g.flavour == "managed":
        return f'split(":", {eks}.{g.attr}[{key or hclsrc.quote(str(g.entry.key))}].node_group_id)[1]'
    if g.source == "resource":
        return f"{g.block.address}[{key}].node_group_name" if key and g.key else f"{g.address}.node_group_name"
    return None


def _group_names_expr(g: NodeGroup, eks: str) -> tuple[str, str] | None:
    """(every group's EKS name by its key, as Terraform knows them; the group's key), for a group of a map (the eks
    module's, or an aws_eks_node_group's for_each): modules several environments apply read one environment's group
    by its key, never by a name one environment's text would hold."""
    if g.source == "module" and g.flavour == "managed" and g.entry is not None:
        return f'{{ for k, g in {eks}.{g.attr} : k => split(":", g.node_group_id)[1] }}', str(g.entry.key)
    if g.source == "resource" and g.key and g.block is not None:
        return f"{{ for k, g in {g.block.address} : k => g.node_group_name }}", str(g.key)
    return None


def _group_name_literal(g: NodeGroup) -> str | None:
    if g.source == "resource":
        n = g.literal("name")
        return n if g.block.attr("node_group_name") is not None and isinstance(n, str) and n else None
    if g.source == "module":
        entries = {x.key: x.value for x in g.entry.value.entries}
        prefix = entries.get("use_name_prefix")
        name = entries.get("name")
        if prefix is not None and prefix.literal() is False:
            return str(name.literal()) if name is not None and name.literal() else g.entry.key
    return None


def _agent(repo, cas: CasInventory, owns) -> bool:
    addon = MODULE["agent"]["addon"]
    for _, b in cas.eks_modules:
        for attr in ("addons", "cluster_addons"):
            e = b.attr(attr)
            if e is not None and e.kind == "object" and any(x.key == addon for x in e.entries):
                return True
    for p, b in repo.blocks("resource", "aws_eks_addon"):
        n = b.attr("addon_name")
        if owns(p) and n is not None and n.literal() == addon:
            return True
    return False


def _oidc_provider(repo, d: str) -> str | None:
    """The ARN of the cluster's IAM OIDC provider as the cluster's own module declares it (a hand-written cluster:
    `resource`/`data "aws_iam_openid_connect_provider"`, whatever file holds it); None when there is not exactly
    one."""
    found = [f"{'data.' if kind == 'data' else ''}aws_iam_openid_connect_provider.{b.labels[1]}"
             + ("" if b.attr("count") is None else "[0]") + ".arn"
             for kind in ("resource", "data") for p, b in repo.blocks(kind, "aws_iam_openid_connect_provider")
             if (posixpath.dirname(p) or ".") == d and b.attr("for_each") is None and _one(repo, d, b.attr("count"))]
    return found[0] if len(found) == 1 else None


def _one(repo, d: str, count) -> bool:
    """No `count`, `count = 1`, or `count = <condition> ? 1 : 0` whose condition the module's callers (calls,
    Terragrunt units) or defaults make true: the block's one instance exists (`[0]`)."""
    from ...inventory.sites import module_value
    if count is None or count.literal() == 1:
        return True
    parts = hclsrc.conditional(count)           # split by the parser, never by a pattern
    cond = parts[0] if parts is not None and parts[1].literal() == 1 and parts[2].literal() == 0 else None
    return cond is not None and module_value(repo, d if d != "." else "", cond) is True


def _subnet_set(source: str) -> frozenset:
    """A list of subnet expressions as written, as a set (order, spacing and trailing commas do not matter)."""
    inner = source.strip()
    if inner.startswith("[") and inner.endswith("]"):
        inner = inner[1:-1]
    return frozenset(x.strip().strip('"') for x in inner.replace("\n", " ").split(",") if x.strip())


def _subnets_of(g: NodeGroup) -> tuple[frozenset, str]:
    """A node group's subnet_ids as a set of expressions, and as the root writes them."""
    v = g.fields.get("subnet_ids")
    if v is None or v == "":
        return frozenset(), ""
    if isinstance(v, list):
        items = [g.masked.unmask(str(x)).strip() for x in v]
        return frozenset(x.strip('"') for x in items), "[" + ", ".join(items) + "]"
    src = g.masked.unmask(str(v)).strip()
    return _subnet_set(src), src


def cluster_subnets(repo, cas) -> dict[frozenset, str]:
    """The cluster's own subnets (aws_eks_cluster vpc_config, the eks module's subnet_ids): as a set of expressions ->
    as written."""
    out: dict[frozenset, str] = {}
    for p, b in repo.blocks("resource", "aws_eks_cluster"):
        for vc in b.sub("vpc_config"):
            if vc.attr("subnet_ids") is not None:
                src = vc.attr("subnet_ids").source.strip()
                out[_subnet_set(src)] = src
    for p, b in cas.eks_modules:
        if b.attr("subnet_ids") is not None:
            src = b.attr("subnet_ids").source.strip()
            out[_subnet_set(src)] = src
    return out


def _pinned_zones(repo, g: NodeGroup, cluster: dict) -> list[str] | None:
    """The zones a group's own subnets (not the cluster's) lie in, where every one is stated; None otherwise."""
    key, own = _subnets_of(g)
    if g.source != "eksctl" and not (own and cluster and key not in cluster):
        return None
    return subnet_zones(repo, g) or None


def zone_pinned(repo, cas, shapes: list) -> set[str]:
    """The groups kept to some zones only: the controller prefers a group that spans them all (the same choice in
    every phase: the install and the cutover ask this the same way)."""
    cluster = cluster_subnets(repo, cas)
    return {s.group.name for s in shapes if _pinned_zones(repo, s.group, cluster)}


def _kubectl_provider(repo, d: str) -> bool:
    for p in repo.tf_in_dir(d if d != "." else ""):
        t = repo.text(p)
        if "kubectl_manifest" in t or re.search(r'source\s*=\s*"[\w.-]*/kubectl"|provider\s+"kubectl"', t):
            return True
    return False


def _fields(node) -> dict[str, hclsrc.Expr]:
    """The arguments of a block, or of an object written where a block may be (helm provider v3 `kubernetes = {}`)."""
    if isinstance(node, hclsrc.Block):
        return {n: a.expr for n, a in node.attributes.items()}
    return {e.key: e.value for e in node.entries}


def _nested(node, name: str):
    """A nested block of that name, or an argument holding an object in its place."""
    if isinstance(node, hclsrc.Block) and node.sub(name):
        return node.sub(name)[0]
    e = _fields(node).get(name)
    return e if e is not None and e.kind == "object" else None


@dataclass
class Connection:
    """How the root's Kubernetes providers reach the cluster (the kubectl provider written beside them copies it)."""
    path: str
    line: int
    what: str                                       # provider "kubernetes" | the helm provider's kubernetes block
    args: dict[str, hclsrc.Expr]
    exec: dict[str, hclsrc.Expr]


def _connection(repo, d: str) -> Connection | None:
    """The root's own kubernetes provider (without alias), else its helm provider's `kubernetes` block or object:
    only one that states where the cluster is (a host or a kubeconfig)."""
    conf = INSTALL["kubectl_provider"]
    for kind in ("kubernetes", "helm"):
        for p in repo.tf_in_dir(d if d != "." else ""):
            f = repo.hcl(p)
            for b in f.blocks if f is not None else []:
                if b.type != "provider" or b.labels[:1] != [kind] or b.attr("alias") is not None:
                    continue
                node = b if kind == "kubernetes" else _nested(b, "kubernetes")
                if node is None:
                    continue
                args = {n: e for n, e in _fields(node).items() if n in conf["connection"]}
                if "host" not in args and "config_path" not in args:
                    continue
                ex = _nested(node, "exec")
                return Connection(p, hclsrc.line_of(repo.text(p), b.start),
                                  'provider "kubernetes"' if kind == "kubernetes" else
                                  'the helm provider\'s kubernetes block', args,
                                  {n: e for n, e in _fields(ex).items() if n in conf["exec"]} if ex is not None else {})
    return None


def _moved(text: str, e: hclsrc.Expr, indent: str) -> str:
    """An expression's source written at another indentation: its continuation lines keep their depth relative to
    the line it starts on."""
    ls = line_start(text, e.start)
    head = text[ls:e.start]
    old = len(head) - len(head.lstrip(" \t"))
    lines = e.source.replace("\r\n", "\n").split("\n")
    return "\n".join(lines[:1] + [indent + ln[old:] if not ln[:old].strip() else ln for ln in lines[1:]])


def _kubectl_block(repo, conn: Connection) -> list[str]:
    """A kubectl provider connected as the root's kubernetes provider is (the karpenter example's own settings)."""
    conf = INSTALL["kubectl_provider"]
    text = repo.text(conn.path)
    out = ['provider "kubectl" {', f'  apply_retry_count = {conf["apply_retry_count"]}']
    out += [f"  {n} = {_moved(text, conn.args[n], '  ')}" for n in conf["connection"] if n in conn.args]
    if "host" in conn.args:
        out.append("  load_config_file = false")
    if conn.exec:
        out += ["", "  exec {"] + [f"    {n} = {_moved(text, conn.exec[n], '    ')}" for n in conf["exec"]
                                    if n in conn.exec] + ["  }"]
    return out + ["}", ""]


_HELM = re.compile(r'provider\s+"helm"|resource\s+"helm_release"|"?hashicorp/helm"?')


def _helm_provider(repo, d: str) -> bool:
    """Can the Terraform in folder d install a chart: a helm provider or a helm_release there, or in a root module
    that calls d (a child module inherits its caller's providers), or in the Terragrunt units whose source d is (their
    generated providers)?"""
    from ...roots import _module_users
    from ...inventory.terragrunt import callers as unit_callers
    dirs = [d] + sorted(_module_users(repo, d) if d != "." else [])
    if any(_HELM.search(repo.text(p)) for x in dirs for p in repo.tf_in_dir(x if x != "." else "")):
        return True
    for u in unit_callers(repo, d, every=True) if d != "." else []:
        x = posixpath.dirname(u.path)          # the unit and the .hcl files it includes from above (generate blocks)
        while True:
            if any(_HELM.search(repo.text(p)) for p in repo.files
                   if p.endswith(".hcl") and (posixpath.dirname(p) or ".") == (x or ".")):
                return True
            if x in ("", "."):
                break
            x = posixpath.dirname(x)
    return False


def _hcl_value(v: Any, exprs: dict[str, str], indent: str) -> str:
    return hclsrc.render_value(v, exprs, indent)


def _nearest_first(d: str, dirs: set[str], near: bool = False) -> list[str]:
    """Folders by how much of their path they share with folder d (the nearest first), then by name; with `near`,
    only those that share all of d's path but its last two folders (stages/apps/lead: stages/cloud/aws)."""
    from ...roots import shared_depth
    out = sorted(dirs, key=lambda x: (-shared_depth(d, x), x))
    if near:
        return [x for x in out if shared_depth(d, x) >= max(1, len(d.split("/")) - 2)]
    return out


def _cluster_units(repo, cas0, owns) -> list[tuple[str, str, str]]:
    """(the unit installing Cluster Autoscaler, the unit it depends on that makes the cluster, that unit's module
    folder) when Terragrunt units of this root install Cluster Autoscaler from a module of the repository (or are
    the install themselves: a unit calling a registry Helm module)."""
    from ...inventory.terragrunt import UNIT_FILE, callers, terragrunt
    d = posixpath.dirname(cas0.path) or "."
    out = []
    own = terragrunt(repo).unit_at(d) if posixpath.basename(cas0.path) == UNIT_FILE else None
    for u in ([own] if own is not None else callers(repo, d, every=True)):  # or the unit calls a remote Helm module
        if not owns(u.path):
            continue
        for dep in u.dependencies:
            du = terragrunt(repo).unit_at(dep)
            md = du.module_dir if du is not None else None
            if md is not None and (any((posixpath.dirname(p) or ".") == md for p, _ in repo.blocks("resource", "aws_eks_cluster"))
                                   or any((posixpath.dirname(p) or ".") == md for p, _ in scan(repo).eks_modules)):
                out.append((u.dir, du.dir, md))
    return out


def _remote_cluster_unit(repo, cas0, owns) -> tuple[str, str, str, bool] | None:
    """(the unit installing Cluster Autoscaler, the unit it depends on, that unit's source, whether the installing unit
    applies a module from outside the repository too) when the cluster is made
    by a Terragrunt unit calling the eks module from outside the repository (`tfr:///terraform-aws-modules/eks/aws`,
    a git source): one unit applies one module, so nothing can be written beside that cluster."""
    from ...inventory.terragrunt import callers, terragrunt
    d = posixpath.dirname(cas0.path) or "."
    own = terragrunt(repo).unit_at(d) if posixpath.basename(cas0.path) == UNIT_FILE else None
    for u in ([own] if own is not None else callers(repo, d, every=True)):
        for dep in (u.dependencies if owns(u.path) else []):
            du = terragrunt(repo).unit_at(dep)
            if du is not None and du.remote and re.search(FACTS["detect"]["eks_unit_source"], du.remote.split("?")[0]):
                return u.dir, du.dir, du.remote, bool(u.remote)
    return None


class Installer:
    def __init__(self, ctx):
        self.ctx = ctx
        self.repo = ctx.repo
        self.cas: CasInventory = convert.inventory(ctx)
        self.res = InstallResult()
        self.zoned: set[str] = set()        # groups whose NodePool keeps to their zones (zones())
        self.target = ctx.target.chart if ctx.target is not None and ctx.target.chart else knowledge.load("minors")["newest"]
        self.module_version = INSTALL["module_version"]
        self.matched = None     # (file, eks module call, its release, module_coverage row, the chart's Kubernetes
                                # range): the v20 module matched to it
        self.shared: list[str] = []     # the units of every environment applying the modules written (UnitSplit)
        self.unit = ""                  # then this environment's unit that takes the inputs
        self.ours: dict[str, str] = {}  # the install's files already written in modules shared with other
                                        # environments, which this one has yet to give its inputs: path -> text

    def awaited(self) -> dict[str, str]:
        """The files migrator's install wrote in modules several environments' Terragrunt units apply, when this
        environment's unit does not give the variables they declare yet (another environment's plan wrote them,
        planned alone with --root): this environment's install is then still to do, its own inputs and NodePools
        (path -> the file's text, kept as it is): the charts' karpenter.tf and the one in the module of the cluster's
        unit the charts' unit depends on."""
        from ...inventory.terragrunt import callers as unit_callers, terragrunt
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

    def run(self) -> InstallResult:
        res = self.res
        if self.ctx.charts or any(m.kind in ("NodePool", "EC2NodeClass") for m in self.ctx.manifests):
            self.ours = self.awaited()
            if not self.ours:
                res.done = True
                return res
        if not self.cas.present:
            return res
        cas0 = self.cas.installs[0]
        if self.cas.others:
            from ...cas import named_clusters
            named = sorted(named_clusters(self.cas))
            configs = ", ".join(f"{n} ({p}:{line})" for p, line, n in self.cas.others)
            if self.cas.ambiguous:
                _find(res, "MIG-CAS-045", "warning", cas0.path, cas0.line,
                      f"this folder holds several eksctl ClusterConfigs ({configs}) and Cluster Autoscaler is given "
                      + (f"the cluster name(s) {', '.join(named)}" if named else "no cluster name of them")
                      + ": migrator cannot tell which cluster it scales, so nothing is written for this root",
                      "keep each ClusterConfig in a folder of its own with its Cluster Autoscaler manifests (or give "
                      "Cluster Autoscaler its cluster's auto-discovery tag), then run migrator again")
                return res
            _find(res, "MIG-CAS-044", "info", cas0.path, cas0.line,
                  f"Cluster Autoscaler here scales {named[0]}; the other ClusterConfigs of this folder ({configs}) are "
                  "other clusters: their node groups are not planned with it")
        from ...roots import inside
        if self.cas.clusters and not any(inside(posixpath.dirname(p) or ".", self.ctx.root) for p, _, _ in self.cas.clusters):
            # a root lent a ClusterConfig from elsewhere: a Terraform cluster of the same name may be the real one
            named = {str((o.get("metadata") or {}).get("name")) for _, _, o in self.cas.clusters}
            twins = terraform_clusters_named(self.repo, named, {str((o.get("metadata") or {}).get("region"))
                                                                 for _, _, o in self.cas.clusters})
            if twins:
                # a ClusterConfig and a Terraform cluster of the same name (one of them a leftover or a copy): which
                # one makes the cluster Cluster Autoscaler scales is not in the files
                _find(res, "MIG-CAS-002", "warning", cas0.path, cas0.line,
                      f"{cas0.address}: the cluster it scales ({', '.join(sorted(named))}) is declared both by an eksctl "
                      f"ClusterConfig ({', '.join(sorted({p for p, _, _ in self.cas.clusters}))}) and in Terraform "
                      f"({', '.join(twins[:3])}): migrator cannot tell which one makes it; nothing is written for this "
                      "root",
                      "remove (or move out of the repository) the declaration that no longer makes the cluster, or keep "
                      "Cluster Autoscaler's install beside the one that does, then run migrator again")
                return res
        d = self.terraform_dir(cas0)
        expr, eks = cluster_expr(self.repo, self.cas, d)
        if expr is None and self.cas.clusters:
            return self.eksctl(cas0)
        # Terragrunt units: Cluster Autoscaler's unit and the unit that makes its cluster are two states
        units = _cluster_units(self.repo, cas0, self.ctx.owns) if cas0.kind in ("terraform", "module", "wrapper") \
            else []
        usplit = _unit_split(self.repo, cas0, units) if units else None
        if usplit is not None and self.ours:    # what the install already wrote is written again, the same
            usplit.existing = {k: v for k, v in usplit.existing.items() if v[0] not in self.ours}
            usplit.declared = {k: v for k, v in usplit.declared.items() if v not in self.ours}
        if usplit is not None and (not _helm_provider(self.repo, usplit.dir) or not any(
                posixpath.dirname(g.home or g.path) == usplit.cluster_dir for g in self.cas.groups)):
            usplit = None                       # no chart installs there, or no node group of the cluster's unit read
        if usplit is not None:
            d = usplit.cluster_dir              # the karpenter module goes beside the cluster, in its unit's module
            expr, eks = cluster_expr(self.repo, self.cas, d)
            units = [] if expr is not None else units
        shared, without = _shared_by(self.repo, d, cas0.path) if expr is not None and not units else ([], [])
        if without:
            # a module several root modules call: Karpenter written there would reach clusters without Cluster Autoscaler
            _find(res, "MIG-CAS-002", "warning", cas0.path, cas0.line,
                  f"{cas0.address}: the cluster is made in the module {d}, which {len(shared)} root modules call "
                  f"({', '.join(shared[:4])}), and {', '.join(without[:4])} runs no Cluster Autoscaler from it: "
                  "Karpenter written there would be installed in that cluster too; nothing is written for this root",
                  "give the module outputs for the cluster's name, endpoint and OIDC provider and its node role, and "
                  "install Karpenter in this root reading them (or behind a switch of the module this root turns on), "
                  "or follow the Karpenter guide 'Migrating from Cluster Autoscaler' by hand")
            return res
        if expr is None or units:
            others = _nearest_first(posixpath.dirname(cas0.path) or ".",
                                    {posixpath.dirname(p) or "." for p, _ in scan(self.repo).eks_modules}
                                    | {posixpath.dirname(p) or "." for p, _ in self.repo.blocks("resource", "aws_eks_cluster")})
            from ...cas import named_clusters
            named = named_clusters(self.cas)
            configs = [(p, d, o) for p, d, o in scan(self.repo).clusters
                       if str((o.get("metadata") or {}).get("name")) in named] if not others else []
            called = [(o, cb) for o in others for cp, cb in self.repo.callers(o) if (posixpath.dirname(cp) or ".") == d]
            remote = _remote_cluster_unit(self.repo, cas0, self.ctx.owns) if not units and not others else None
            if remote is not None:
                _find(res, "MIG-CAS-002", "warning", cas0.path, cas0.line,
                      f"{cas0.address}: it is installed by Terragrunt unit {remote[0]} and the cluster is made by unit "
                      f"{remote[1]}, which applies {remote[2]}, a module outside the repository: a unit applies one "
                      "module, so Karpenter's module cannot be written beside that cluster; nothing is written for this "
                      "root",
                      f"add a unit applying terraform-aws-modules/eks/aws//modules/karpenter (at the eks module's "
                      f"major) with a dependency on {remote[1]}, and the karpenter-crd and karpenter charts "
                      + ("in a unit of their own (a module of the repository with a helm provider, as "
                         f"{remote[0]} applies a module from outside it too)" if remote[3] else
                         f"beside Cluster Autoscaler's in {remote[0]}")
                      + ", given its outputs (docs/from-cluster-autoscaler.md), then run migrator again")
                return res
            where = (f"it is installed by Terragrunt unit {units[0][0]} and the cluster is made by unit "
                     f"{units[0][1]} (module {units[0][2]}), another state" if units else
                     f"the cluster is made inside {called[0][1].address} ({called[0][0]}), a module this root calls: "
                     "migrator does not write Karpenter's install across a module boundary" if called else
                     f"the repository declares its clusters in {', '.join(others[:3])}, outside this root module "
                     "(another state, or a module another root calls)" if others else
                     "the eksctl ClusterConfig of the cluster it names (" + ", ".join(
                         f"{(o.get('metadata') or {}).get('name')} in {p}" for p, _, o in configs[:3])
                     + ") is outside this root's folder; keep Cluster Autoscaler's manifests in the ClusterConfig's "
                     "folder (or the ClusterConfig beside them) to have them planned together" if configs else
                     "no terraform-aws-modules/eks module, aws_eks_cluster or eksctl ClusterConfig of it in the "
                     "repository")
            _find(res, "MIG-CAS-002", "warning", cas0.path, cas0.line,
                  f"{cas0.address}: {where}" + (
                      ", and migrator cannot write Karpenter across these units (it needs a `dependency` on the cluster's "
                      "unit and an `inputs` object to give the charts the cluster's outputs, modules no other unit (another "
                      "environment) applies, a helm provider in the installing unit, and the cluster unit's node "
                      "groups read)" if units
                      else "" if called else ", so migrator cannot tell which cluster to install Karpenter into, nor "
                      "write it beside the cluster"),
                  ("give the module outputs for the cluster's name, endpoint and OIDC provider and its node role, and "
                   "install Karpenter here reading them (or install it inside the module)" if called else
                   f"write the karpenter module in {units[0][2]} with outputs for its queue name, service account and "
                   f"node role name (the outputs migrator writes for stages, docs/from-cluster-autoscaler.md), and the "
                   f"karpenter-crd and karpenter charts beside Cluster Autoscaler's, given those outputs as inputs from "
                   f"the dependency on {units[0][1]} in {units[0][0]}'s terragrunt.hcl" if units else
                   "install Karpenter in the cluster's own root module (the karpenter module and charts next to the "
                   "cluster, or its charts here reading the cluster's outputs)")
                  + ", or follow the Karpenter guide 'Migrating from Cluster Autoscaler' by hand; nothing is written "
                  "for this root")
            return res
        res.cluster = expr
        shapes = [convert.shape(g) for g in self.cas.groups]
        if not shapes:
            elsewhere = _nearest_first(posixpath.dirname(cas0.path) or ".",
                                       {posixpath.dirname(g.path) or "." for g in scan(self.repo).groups
                                        if not self.ctx.owns(g.path)}, near=True)
            _find(res, "MIG-CAS-003", "warning", cas0.path, cas0.line,
                  f"{cas0.address}: no node group found in this root; migrator writes NodePools from node groups"
                  + (f" (node groups are declared in {', '.join(elsewhere[:3])}: another Terraform root module, "
                     "planned as another cluster's)" if elsewhere else "")
                  + "".join(f"; {what} ({p}:{line})"
                            for p, line, what in self.cas.unread[:2]),
                  "write the NodePools by hand (docs/from-cluster-autoscaler.md), or declare the node groups in the "
                  "cluster's own root module")
            return res
        self.match_module(d, shapes)
        kept, ok = self.settle(shapes, cas0, fargate=convert.on_fargate(self.ctx))
        if not ok:
            return res
        res.identity = "pod-identity" if _agent(self.repo, self.cas, self.ctx.owns) else "irsa"
        path = posixpath.join(d, "karpenter.tf") if d != "." else "karpenter.tf"
        if path in self.repo.files and path not in self.ours:
            _find(res, "MIG-CAS-006", "error", path, 1, f"{path} already exists; migrator writes the Karpenter "
                  "installation there", "rename that file, then run migrator again")
            return res
        res.file = path
        nl = self.repo.files[cas0.path].newline
        style = cas0.kind if cas0.kind in ("flux", "argocd", "kustomize", "helmfile") else "terraform"
        split = self.unit_split(usplit, cas0) if usplit is not None else \
            self.stage_split(d, cas0, expr) if style == "terraform" and not _helm_provider(self.repo, d) else None
        if split is not None and not split.dir:
            return res                              # said (a file or an output name already there)
        if style == "terraform" and not _helm_provider(self.repo, d) and split is None:
            from ...roots import _module_users
            cas_dir = posixpath.dirname(cas0.path) or "."
            users = sorted(_module_users(self.repo, d)) if d != "." else []   # a child module takes its caller's
            there = cas0.kind in ("terraform", "module", "wrapper", "tfdeployment", "kubectl") and cas_dir != d
            _find(res, "MIG-CAS-041", "warning", cas0.path, cas0.line,
                  f"the cluster's Terraform ({d}) has no helm provider, so Karpenter's charts cannot be installed there"
                  + (f"; Cluster Autoscaler's chart is installed from {cas_dir}, another module or stage, which would "
                     "need the karpenter module's outputs (queue, role) passed to it" if there else "")
                  + ": nothing is written for this root",
                  (f"install the karpenter-crd and karpenter charts beside Cluster Autoscaler's in {cas_dir}, with the "
                   "karpenter module next to the cluster in " + d if there else
                   "add a helm provider configured for the cluster to " + (
                       f"the root module that calls {d} ({', '.join(users[:3])})" if users else d))
                  + ", then run migrator again (or follow "
                  "docs/from-cluster-autoscaler.md by hand)")
            return res
        at = split.dir if split is not None else d          # where the charts and the NodePools are written
        self.shared = split.shared if isinstance(split, UnitSplit) else []
        self.unit = split.unit if self.shared else ""
        by_env = self.by_tfvars(d, kept, split, style)
        if by_env is not None and not by_env.var_file:
            return res                              # said (the variable is taken, or the cluster is elsewhere)
        if by_env is not None:
            self.shared, self.unit = by_env.environments, by_env.var_file
        # modules several environments apply hold what is the same for all: each environment's NodePools go in a
        # file of its own unit, with its own names
        kubectl = style == "terraform" and _kubectl_provider(self.repo, at) and not self.shared
        literal = self.cluster_literal(d, cas0) if not kubectl else None
        res.cluster_literal = literal or ""
        head: list[str] = []
        conn = _connection(self.repo, at) if style == "terraform" and not kubectl and literal is None \
            and not self.shared else None
        required = self.require_kubectl(at) if conn is not None else None
        if required is not None:        # the name is known at apply only: the NodePools go through a kubectl provider
            kubectl = True
            head = required + _kubectl_block(self.repo, conn)
            conf = INSTALL["kubectl_provider"]
            _find(res, "MIG-CAS-061", "info", conn.path, conn.line,
                  f"the root states the cluster's name ({expr}) as no one literal, so the NodePools and "
                  f"EC2NodeClasses are written as kubectl_manifest resources, which name it as Terraform resolves "
                  f"it: the {conf['source']} provider is added to the root, "
                  f"connected as its {conn.what} is",
                  "terraform init -upgrade installs the provider (the install step's first command)")
        elif style == "terraform" and not kubectl and literal is None and at != "." and not self.shared:
            added = self.kubectl_from_callers(at, expr)
            if added is not None:
                kubectl, head = True, added
        if style != "terraform" and literal is None:
            _find(res, "MIG-CAS-018", "warning", cas0.path, cas0.line,
                  f"{cas0.address}: migrator cannot tell the cluster's name as one literal (the chart values and the "
                  "NodePools outside Terraform need it); nothing is written for this root",
                  "set autoDiscovery.clusterName in Cluster Autoscaler's values (or the cluster's name in Terraform), "
                  "then run again")
            return res
        names = self.fixed_names(expr, literal)
        self.zones(shapes)
        refs = split.refs(expr, kept, eks, res.identity == "irsa", literal is not None) if split is not None \
            else self.module_refs(expr, kept, eks)
        if by_env is not None and by_env.literals:
            refs["group"] = by_env.group_ref(kept.group, eks) or refs.get("group")
            head = head + by_env.declarations()
        if split is not None and split.conflicts:
            _find(res, "MIG-CAS-006", "error", split.conflicts[0], 1,
                  f"{split.conflicts[0]} already declares an output (or a variable) of a name migrator gives the "
                  f"Karpenter install's outputs (karpenter_*), with another value", "rename it, then run migrator again")
            return res
        pools, classes = self.objects(shapes, refs, literal, names)
        if pools is None:
            return res
        if by_env is not None:              # the module names what the cluster's name makes as Terraform resolves it
            names = self.fixed_names(expr, None)
            _find(res, "MIG-CAS-074", "info", by_env.var_file, 1,
                  f"the root module {d} is applied once per environment with its own tfvars "
                  f"({', '.join(by_env.environments)}): Karpenter is written in it once, the same for every environment, "
                  f"and what is this environment's own in its files: "
                  + (f"the controller's node group in {by_env.var_file}, " if by_env.literals else "")
                  + f"its NodePools in {by_env.objects_file()}",
                  "plan every environment with the same migrator run (or each with --root, the earliest first): the "
                  "root module moves when they all do; each environment applies it with its own -var-file")
        elif self.shared:                   # the modules name what the cluster's name makes as Terraform resolves it
            names = self.fixed_names(expr, None)
            _find(res, "MIG-CAS-071", "info", split.source, 1,
                  f"the modules {split.stage} and {split.dir} are applied by the units of {len(self.shared)} "
                  f"environments ({', '.join(self.shared)}): Karpenter is written in them once, the same for every "
                  "environment, and what is this environment's own (the controller's node group, the NodePools) in "
                  f"its units ({split.unit})",
                  "plan every environment with the same migrator run (or each with --root, the earliest first): a "
                  "module shared by the environments moves when they all do; each environment applies its units "
                  "itself")
        text = self.terraform(d, expr, eks, kept, kubectl, pools, classes, style, names, head, refs, split)
        if by_env is not None and by_env.literals:
            res.edits.append(by_env.tfvars_edit(self.repo))
        if split is not None:
            text, charts = text
            res.charts_file = split.path
            res.edits.append(NewFile(split.path, to_newline(charts, self.repo.files[split.source].newline), RULE))
            if isinstance(split, UnitSplit) and split.inputs_edit(self.repo) is not None:
                res.edits.append(split.inputs_edit(self.repo))
            forward = split.forward_file()
            if forward is not None:
                res.edits.append(NewFile(forward[0], to_newline(forward[1], nl), RULE))
        res.edits.append(NewFile(path, to_newline(text, nl), RULE))
        if style == "flux":
            self.flux(cas0, kept, literal, names, classes + pools)
        elif style == "argocd":
            self.argocd(cas0, kept, literal, names, classes + pools)
        elif style == "kustomize":
            self.kustomize(cas0, kept, literal, names, classes + pools)
        elif style == "helmfile":
            if self.helmfile(cas0, self.chart_values(kept, literal, names, annotate=False), names["controller_role"]):
                self.objects_beside(cas0, classes + pools)
        elif not kubectl and literal is None:
            res.pools.clear()
            _find(res, "MIG-CAS-007", "warning", path, 1,
                  "the root has no kubectl provider and does not state the cluster's name as one literal, so the "
                  "NodePools and EC2NodeClasses have no place to be written with real names: none is written (and no "
                  "node group is drained until they exist)",
                  "add the kubectl provider (alekc/kubectl) to the root's required_providers, or give the cluster "
                  "a literal name (or variable default), then run migrator again")
        elif not kubectl:
            home = split.unit if self.shared and split is not None else at
            res.objects_file = by_env.objects_file() if by_env is not None else \
                posixpath.join(home, "karpenter-nodepools.yaml") if home != "." else "karpenter-nodepools.yaml"
            body = "---\n".join(yamlsrc.Emitter().emit(o).text for o in classes + pools)
            res.edits.append(NewFile(res.objects_file, to_newline(body, nl), RULE))
        value = self.tag_value(d, literal)
        if value is not None:
            self.tags(d, value)
        else:
            self.res.sg_by_cli = self.res.subnets_by_cli = True
            _find(res, "MIG-CAS-036", "info", cas0.path, cas0.line,
                  f"the cluster's name comes from an output ({expr}) of the blocks that make its subnets and node "
                  f"security group: a {INSTALL['discovery_tag']} tag written there would make a dependency cycle "
                  "terraform cannot plan, so the runbook tags them with aws-cli",
                  "or name the cluster from a local or a variable, then run migrator again to tag them in Terraform")
        self.provider_pin(d)
        if self.ours:
            self.join_written(res)
        return res

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

    def matched_chart(self) -> str | None:
        """The chart the install would put in beside an eks module that caps the AWS provider (match_module), read
        before the rules run (the hop's goal); None where nothing is matched."""
        if not self.cas.present or not self.cas.groups:
            return None
        self.match_module(self.terraform_dir(self.cas.installs[0]), [convert.shape(g) for g in self.cas.groups])
        return self.target if self.matched is not None else None

    def match_module(self, d: str, shapes: list) -> None:
        """The karpenter module's major matched to the eks module's provider range: beside an eks module call whose
        release caps the AWS provider below what v21 needs, the last v20 release (knowledge/cas.yaml
        `install.matched_v20`) and the newest chart its policy serves (minors.yaml `module_coverage`), when the
        cluster's Kubernetes (as its code states it) is in that chart's range; else the newest module, and the eks
        move said first (MIG-CAS-039)."""
        from ...modmajor import capped_eks
        from ...path import parse_version
        capped = capped_eks(self.repo, d)
        if not capped:
            return
        minors = knowledge.load("minors")
        ver = parse_version(INSTALL["matched_v20"]["module_version"])
        cov = next((r for r in reversed(minors["module_coverage"]) if parse_version(r["from"]) <= ver), None)
        row = next((r for r in minors["minors"] if cov is not None and r["minor"] == cov["karpenter"]), None)
        if row is None:
            return
        g = next((s.group for s in shapes if s.group.cluster_version), None)
        k8s = parse_version(g.cluster_version) if g is not None else None
        if k8s is not None and not parse_version(row["k8s"][0]) <= k8s <= parse_version(row["k8s"][1]):
            return
        if parse_version(self.target) > parse_version(row["newest"]):
            self.target = row["newest"]
        self.module_version = INSTALL["matched_v20"]["module_version"]
        self.matched = (*capped[0], cov, row["k8s"])

    def kubernetes_range(self, shapes: list) -> None:
        """The cluster's Kubernetes version (as its code states it) against the range the target Karpenter supports
        (knowledge/minors.yaml `k8s`): a cluster outside it is upgraded first, or moved to a Karpenter it runs."""
        from ...path import parse_version
        row = next((r for r in knowledge.load("minors")["minors"]
                    if parse_version(self.target)[:2] == parse_version(r["minor"])[:2]), None)
        g = next((s.group for s in shapes if s.group.cluster_version), None)
        if row is None or g is None or parse_version(g.cluster_version) is None:
            return
        low, high = row["k8s"]
        v = parse_version(g.cluster_version)
        if parse_version(low) <= v <= parse_version(high):
            return
        _find(self.res, "MIG-CAS-048", "warning", g.path, g.line,
              f"the cluster runs Kubernetes {g.cluster_version} (as the code states it) and Karpenter {self.target} "
              f"supports {low} to {high}",
              (f"upgrade the cluster to Kubernetes {low} or newer before the install" if v < parse_version(low) else
               f"move with --to a Karpenter that supports Kubernetes {g.cluster_version}") +
              "; if the cluster already runs a newer version than the code says, update the code first")

    def terraform_dir(self, cas0) -> str:
        """Where the cluster is declared in Terraform: the eks module's folder, an aws_eks_cluster's, the node
        groups'; the Cluster Autoscaler install's folder when it is Terraform too."""
        d = posixpath.dirname(cas0.path) or "."
        dirs = [posixpath.dirname(p) or "." for p, _ in self.cas.eks_modules]
        dirs += [posixpath.dirname(p) or "." for p, _ in self.repo.blocks("resource", "aws_eks_cluster")
                 if self.ctx.owns(p)]
        dirs += [posixpath.dirname(g.path) or "." for g in self.cas.groups if g.source != "eksctl"]
        if cas0.kind in ("terraform", "module", "wrapper", "tfdeployment", "kubectl") and d in dirs:
            return d
        return dirs[0] if dirs else d

    def cluster_literal(self, d: str, cas0) -> str | None:
        """The cluster's name as a literal: the cluster's own name attribute, followed through locals, variable
        defaults and tfvars (one value only), else the autoDiscovery.clusterName Cluster Autoscaler is given."""
        from ...resolve import definition_sites
        for p, b in list(self.cas.eks_modules) + [(p, b) for p, b in self.repo.blocks("resource", "aws_eks_cluster")]:
            if (posixpath.dirname(p) or ".") != d:
                continue
            for attr in ("name", "cluster_name"):
                e = b.attr(attr)
                if e is None:
                    continue
                if e.literal():
                    return str(e.literal())
                sites, _ = definition_sites(self.repo, p, e)
                values = {str(x.value) for x in sites if self.ctx.owns(x.path) and x.value and "${" not in str(x.value)}
                if len(values) == 1:
                    return values.pop()
        v = yaml_values(cas0).get("autoDiscovery", {}).get("clusterName") if cas0.obj is not None else None
        if isinstance(v, str) and v and "${" not in v:
            return v
        return None

    @staticmethod
    def fixed_names(expr: str, literal: str | None) -> dict[str, str]:
        """Names the Terraform module is given so that files outside Terraform can name them."""
        base = literal if literal is not None else "${" + expr + "}"
        return {k: base + suffix for k, suffix in INSTALL["fixed_names"].items()}

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

    # -- the Terraform file ---------------------------------------------------------------------------------------
    @staticmethod
    def module_refs(expr: str, kept=None, eks: str = "") -> dict[str, str]:
        """How the charts and the objects name the cluster, the karpenter module's outputs and the controller's node
        group, beside the module."""
        name = INSTALL["module_name"]
        group = _group_name_expr(kept.group, eks) if kept else None
        return {"cluster": expr, **{k: f"module.{name}.{k}" for k in STAGE_OUTPUTS}, **({"group": group} if group else {})}

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

    def stage_split(self, d: str, cas0, expr: str) -> "Split | None":
        """Karpenter over two Terraform stages (migrator/stages.py): the cluster's root module d has no helm provider
        and the root module that installs Cluster Autoscaler reads d's state by terraform_remote_state and has one.
        None when that is not the layout; a Split without a folder when it is and something is in the way (said)."""
        from ...evaluate import is_root_module
        from ...roots import _module_users
        from ...stages import links
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

    def terraform(self, d: str, expr: str, eks: str, kept, kubectl: bool, pools, classes, style: str,
                  names: dict[str, str], head: list[str] = (), refs: dict[str, str] | None = None,
                  split: "Split | None" = None):
        """The karpenter.tf beside the cluster; with a split, (that file, the charts' file of the other stage)."""
        name = INSTALL["module_name"]
        ns, sa = INSTALL["namespace"], INSTALL["service_account"]
        refs = refs or self.module_refs(expr, kept, eks)
        top = [f"# Karpenter next to Cluster Autoscaler ({MARK}:",
               "# phase install). Cluster Autoscaler keeps scaling until the cutover phase."
               + ("" if style == "terraform" else f" The charts are installed by {style}.")]
        if split is not None:
            top += [f"# The charts and NodePools are in {split.dir}, which reads this stage's outputs below."]
        out = top + [""] + ([] if split is not None else list(head))
        mod = [f'module "{name}" {{',
               f'  source  = "{INSTALL["module_source"]}"',
               f'  version = "{self.module_version}"', "",
               f"  cluster_name = {expr}", ""]
        oidc = None
        if self.res.identity == "irsa":
            oidc = f"{eks}.oidc_provider_arn" if eks else _oidc_provider(self.repo, d)
            if oidc is None:
                _find(self.res, "MIG-CAS-009", "error", self.cas.installs[0].path, self.cas.installs[0].line,
                      "the cluster has no Pod Identity agent, is not a terraform-aws-modules/eks module and its module "
                      f"({d}) declares no aws_iam_openid_connect_provider, so migrator cannot write the controller's "
                      "IRSA trust", "add the eks-pod-identity-agent add-on (or an aws_iam_openid_connect_provider "
                      "for the cluster's issuer) beside the cluster, then run migrator again")
                oidc = "null"
        if self.matched is not None:
            cov = self.matched[3]
            mod += [f"  # Karpenter v1's permissions: this v20 release's policy serves Karpenter up to {cov['karpenter']}"]
            mod += [f"  {k} = {str(v).lower() if isinstance(v, bool) else v}" for k, v in cov.get("needs", {}).items()]
            mod += [""]
        if self.res.identity == "pod-identity":
            mod += ["  # the controller's identity: EKS Pod Identity (the cluster runs the eks-pod-identity-agent add-on)"]
            if self.matched is not None:        # v20 makes no association unless asked
                mod += ["  create_pod_identity_association = true"]
            mod += [f'  namespace       = "{ns}"', f'  service_account = "{sa}"']
        elif self.matched is not None:
            irsa = INSTALL["matched_v20"]["irsa_inputs"]
            mod += ["  # the controller's identity: IRSA through the cluster's OIDC provider (no Pod Identity agent here)",
                    f"  {irsa['enable']} = true", f"  {irsa['provider']} = {oidc}",
                    f'  {irsa["accounts"]} = ["{ns}:{sa}"]']
        else:
            mod += ["  # the controller's identity: IRSA through the cluster's OIDC provider (no Pod Identity agent here)",
                    "  create_pod_identity_association         = false",
                    f"  iam_role_source_assume_policy_documents = [data.aws_iam_policy_document.{name}_irsa.json]"]
        if not self.access_entries(d):
            mod += ["", "  # the cluster authenticates with the aws-auth ConfigMap only: the node role is mapped there",
                    "  create_access_entry = false"]
            self.res.access = "aws-auth"
            if not self.map_aws_auth(d, name):
                self.res.access = "aws-auth-by-hand"
                _find(self.res, "MIG-CAS-028", "warning", self.res.file, 1,
                      "the cluster's authentication mode is CONFIG_MAP, so Karpenter's node role cannot join through "
                      "an access entry",
                      f'add the node role {names["node_role"]} to the aws-auth ConfigMap (mapRoles, username '
                      f"{NODE_MAPPING['username']}, groups {' and '.join(NODE_MAPPING['groups'])}) before the "
                      "NodePools launch nodes, or switch the cluster to API_AND_CONFIG_MAP")
        mod += ["", "  # fixed names: the EC2NodeClass and the chart values name them",
                "  node_iam_role_use_name_prefix = false",
                f'  node_iam_role_name            = "{names["node_role"]}"']
        if style != "terraform":
            mod += [f'  queue_name                    = "{names["queue"]}"']
            if self.res.identity == "irsa":         # the chart values outside Terraform annotate it by its ARN
                mod += ["  iam_role_use_name_prefix      = false",
                        f'  iam_role_name                 = "{names["controller_role"]}"']
        if self.inline_policy(d, names, style):
            whose = "a cluster name of typical length" if self.shared else "this cluster's name"
            mod += ["", "  # the controller policy as an inline role policy: the managed one would pass IAM's 6,144-character",
                    f"  # quota with {whose} (MIG-V1X-MOD-013)", "  enable_inline_policy = true", ""]
        mod += ["  node_iam_role_additional_policies = {"]
        mod += [f'    {k} = "{v}"' for k, v in INSTALL["node_policies"].items()]
        mod += ["  }", "}", ""]
        out += mod
        if self.res.identity == "irsa" and self.matched is None:
            doc = irsa_document(MODULE, name, f"{name}_irsa", oidc, f'["{ns}:{sa}"]',
                                '"StringEquals"').replace(
                "The IRSA trust the karpenter module's v20 wrote itself (v21 takes it as a source document)",
                "The controller's IRSA trust (the module takes it as a source document)")
            out += doc.rstrip("\n").splitlines() + [""]
        self.res.targets = [(d, f"module.{name}")]
        if kept is None:
            out += self.fargate_profile(d, expr)
        if style != "terraform":
            return align_attributes("\n".join(out).rstrip("\n") + "\n")
        at = d
        if split is not None:
            out += split.output_lines()
            module_text = align_attributes("\n".join(out).rstrip("\n") + "\n")
            at = split.dir
            out = [top[0], f"# phase install). The karpenter module is in {d} (the cluster's stage): this stage reads its",
                   f"# outputs through {split.reads()}.",
                   "# Cluster Autoscaler keeps scaling until the cutover phase.", ""] + list(head) + split.declarations()
        values: dict[str, Any] = {"settings": {"clusterName": "__MIG_0__", "interruptionQueue": "__MIG_1__"},
                                  "serviceAccount": {"name": "__MIG_2__"}}
        exprs = {"__MIG_0__": refs["cluster"], "__MIG_1__": refs["queue_name"], "__MIG_2__": refs["service_account"]}
        if self.res.identity == "irsa":
            values["serviceAccount"]["annotations"] = {"eks.amazonaws.com/role-arn": "__MIG_3__"}
            exprs["__MIG_3__"] = refs["iam_role_arn"]
        group_expr = refs.get("group")
        match = [{"key": "karpenter.sh/nodepool", "operator": "DoesNotExist"}]
        if group_expr:
            exprs["__MIG_4__"] = group_expr
            match.append({"key": convert.GROUP_LABEL, "operator": "In", "values": ["__MIG_4__"]})
        values["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": match}]}}}
        if convert.tolerations(kept):
            values["tolerations"] = convert.tolerations(kept)
        base = [f'  name       = "{{n}}"', f'  namespace  = "{ns}"', f'  repository = "{INSTALL["chart_repository"]}"',
                '  chart      = "{n}"', f'  version    = "{self.target}"']
        out += ['resource "helm_release" "karpenter_crd" {'] + [x.replace("{n}", "karpenter-crd") for x in base] + ["}", ""]
        out += ['resource "helm_release" "karpenter" {'] + [x.replace("{n}", "karpenter") for x in base]
        out += ["  skip_crds  = true", "",
                "  values = [yamlencode(" + _hcl_value(values, exprs, "  ") + ")]", "",
                "  depends_on = [helm_release.karpenter_crd]", "}", ""]
        self.res.targets = [(d, f"module.{name}"), (at, "helm_release.karpenter_crd"), (at, "helm_release.karpenter")]
        if kubectl:
            for o in classes + pools:
                label = f"karpenter_{'node_class' if o['kind'] == 'EC2NodeClass' else 'node_pool'}_" \
                        f"{re.sub(r'[^A-Za-z0-9_]', '_', str(o['metadata']['name']))}"
                body = yamlsrc.Emitter().emit(o).text
                out += [f'resource "kubectl_manifest" "{label}" {{', "  yaml_body = <<-YAML"]
                out += ["    " + ln if ln else "" for ln in body.rstrip("\n").splitlines()]
                out += ["  YAML", "", "  depends_on = [helm_release.karpenter]", "}", ""]
                self.res.targets.append((at, f"kubectl_manifest.{label}"))
        text = align_attributes("\n".join(out).rstrip("\n") + "\n")
        return (module_text, text) if split is not None else text

    def kubectl_from_callers(self, d: str, expr: str) -> list[str] | None:
        """A module folder (no provider of its own, as Terraform wants of a called module) whose every calling root
        module configures a kubernetes provider that states where the cluster is: kubectl goes into the module's
        required_providers, and each caller gets it declared and configured as its kubernetes provider is (a new file
        beside that provider). The lines karpenter.tf starts with, or None (nothing written: MIG-CAS-007 follows)."""
        from ...roots import _module_users
        users = sorted(_module_users(self.repo, d))
        conf = INSTALL["kubectl_provider"]
        name = conf["caller_file"]
        conns = [(u, _connection(self.repo, u)) for u in users if not _kubectl_provider(self.repo, u)]
        if not users or any(c is None or posixpath.join(u, name) in self.repo.files for u, c in conns) \
                or any(p.endswith(".hcl") for u in users for p in self.repo.files if posixpath.dirname(p) == u):
            return None                         # a caller without a connection to copy (or a Terragrunt unit)
        mark = len(self.res.edits)
        head = self.require_kubectl(d)
        files: list[NewFile] = []
        for u, c in conns:
            req = self.require_kubectl(u) if head is not None else None
            if req is None:
                del self.res.edits[mark:]       # a required_providers block on one line: no place for the entry
                return None
            text = align_attributes("\n".join(req + _kubectl_block(self.repo, c)).rstrip("\n") + "\n")
            files.append(NewFile(posixpath.join(u, name), to_newline(text, self.repo.files[c.path].newline), RULE))
        self.res.edits.extend(files)
        own = [c for _, c in conns if self.ctx.owns(c.path)] + [c for _, c in conns]
        c0 = own[0] if own else None             # said where this root configures it
        _find(self.res, "MIG-CAS-061", "info", c0.path if c0 else d, c0.line if c0 else 1,
              f"the cluster's name ({expr}) is stated as no one literal, so the NodePools and EC2NodeClasses are "
              f"written as kubectl_manifest resources in the module {d}, which name it as Terraform resolves it: the "
              f"{conf['source']} provider is added to the module's required providers"
              + (f" and configured in each root module that calls it ({', '.join(u for u, _ in conns)}, in {name}), "
                 f"connected as its {c0.what} is" if c0 else ""),
              "terraform init -upgrade installs the provider in each calling root module (the install step's first "
              "command)")
        return head

    def require_kubectl(self, d: str) -> list[str] | None:
        """The kubectl provider in the root's required_providers (a module has one such block: the entry goes into
        it), else the lines of a terraform block declaring it in the new file; None when the block is written on one
        line (no place for an entry as terraform fmt writes it)."""
        conf = INSTALL["kubectl_provider"]
        entry = ["kubectl = {", f'  source  = "{conf["source"]}"', f'  version = "{conf["version"]}"', "}"]
        for p in self.repo.tf_in_dir(d if d != "." else ""):
            f = self.repo.hcl(p)
            for b in f.blocks if f is not None and not p.endswith("override.tf") else []:
                for rp in b.sub("required_providers") if b.type == "terraform" else []:
                    text = self.repo.text(p)
                    pos = line_start(text, rp.body_end)
                    if text[pos:rp.body_end].strip():
                        return None
                    first = min(rp.attributes.values(), key=lambda a: a.start, default=None)
                    col = first.start - line_start(text, first.start) if first else \
                        rp.start - line_start(text, rp.start) + 2
                    blank = "\n" if first and re.search(r"\}[ \t]*\r?\n[ \t]*\r?\n[ \t]*\w",
                                                       text[rp.body_start:rp.body_end]) else ""
                    self.res.edits.append(TextEdit(p, pos, pos, to_newline(
                        blank + "".join(" " * col + ln + "\n" for ln in entry), self.repo.files[p].newline), RULE))
                    return []
        return ["terraform {", "  required_providers {"] + ["    " + ln for ln in entry] + ["  }", "}", ""]

    def inline_policy(self, d: str, names: dict[str, str], style: str) -> bool:
        """Does the karpenter module written here need its controller policy inline? Its managed policy measured as
        the onward hop measures every call (policysize), with the cluster's name where the root states it, else a
        typical one (knowledge/iam.yaml plausible_name)."""
        from ... import policysize
        from ...path import parse_version
        version = parse_version(self.module_version)
        row = policysize.template_for(version)
        if row is None or not policysize.inline_allowed(version):
            return False
        scope = policysize.Scope(cluster_name=None if self.shared else self.cluster_literal(d, self.cas.installs[0]),
                                 node_role_name=names["node_role"] if "${" not in names["node_role"] else None,
                                 node_role_prefix=False,
                                 queue_name=names["queue"] if style != "terraform" and "${" not in names["queue"] else None)
        sz = policysize.size(row, scope, False)
        return sz.over if sz.known_name else sz.longest_name < policysize.Q["plausible_name"]["typical"]

    # -- eksctl and aws-cli (a hand-made cluster, like the guide) ---------------------------------------------------
    def eksctl(self, cas0) -> InstallResult:
        """A cluster made with eksctl: the NodePools and the chart values as files beside its ClusterConfig; the AWS
        side (the getting-started CloudFormation stack, the node role's access, the controller's identity, the
        discovery tags) and the charts are runbook commands, as the guide runs them."""
        res = self.res
        path, doc, cfg = self.cas.clusters[0]
        meta = cfg.get("metadata") or {}
        cluster = str(meta.get("name") or "")
        if not cluster:
            _find(res, "MIG-CAS-018", "error", path, doc.first_line + 1, "the ClusterConfig has no metadata.name",
                  "name the cluster in the ClusterConfig, then run migrator again")
            return res
        res.style, res.cluster, res.cluster_literal = "eksctl", cluster, cluster
        shapes = [convert.shape(g) for g in self.cas.groups if g.source == "eksctl"]
        if not shapes:
            _find(res, "MIG-CAS-003", "warning", path, doc.first_line + 1, f"the ClusterConfig of {cluster} declares no "
                  "node groups; migrator writes NodePools from node groups", "write the NodePools by hand")
            return res
        kept, ok = self.settle(shapes, cas0)
        if not ok:
            return res
        addons = {str(a.get("name")) for a in cfg.get("addons") or [] if isinstance(a, dict)}
        res.identity = "pod-identity" if MODULE["agent"]["addon"] in addons else "irsa"
        mode = str((cfg.get("accessConfig") or {}).get("authenticationMode") or "API_AND_CONFIG_MAP")
        res.access = "entry" if mode in ("API", "API_AND_CONFIG_MAP") else "aws-auth"
        names = {"node_role": INSTALL["eksctl"]["node_role"].format(cluster=cluster),
                 "queue": INSTALL["eksctl"]["queue"].format(cluster=cluster)}
        self.zones(shapes)
        pools, classes = self.objects(shapes, "", cluster, names)
        if pools is None:
            return res
        d = posixpath.dirname(path)
        files = {name: posixpath.join(d, name) if d else name for name in ("karpenter-nodepools.yaml",
                                                                           "karpenter-values.yaml")}
        for f in files.values():
            if f in self.repo.files:
                _find(res, "MIG-CAS-006", "error", f, 1, f"{f} already exists; migrator writes the Karpenter "
                      "installation there", "rename that file, then run migrator again")
                return res
        label = convert.GROUP_LABEL if kept.group.flavour == "managed" else INSTALL["eksctl"]["self_group_label"]
        values = {"settings": {"clusterName": cluster, "interruptionQueue": names["queue"]},
                  "serviceAccount": {"name": INSTALL["service_account"]},
                  "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                      "nodeSelectorTerms": [{"matchExpressions": [
                          {"key": "karpenter.sh/nodepool", "operator": "DoesNotExist"},
                          {"key": label, "operator": "In", "values": [kept.group.name]}]}]}}}}
        if convert.tolerations(kept):
            values["tolerations"] = convert.tolerations(kept)
        res.groups = [g.name for g in self.cas.groups if g.source == "eksctl"]
        if cas0.kind == "helmfile":         # the charts as releases of Cluster Autoscaler's helmfile, NodePools beside it
            res.file = ""
            if self.helmfile(cas0, values, INSTALL["eksctl"]["controller_role"].format(cluster=cluster)):
                self.objects_beside(cas0, classes + pools)
            return res
        nl = self.repo.files[path].newline
        emit = yamlsrc.Emitter()
        res.edits.append(NewFile(files["karpenter-values.yaml"], to_newline(
            f"# Karpenter chart values ({MARK}); the runbook's helm\n"
            "# command installs the chart with them\n" + emit.emit(convert._cm(values)).text, nl), RULE))
        res.edits.append(NewFile(files["karpenter-nodepools.yaml"], to_newline(
            "---\n".join(emit.emit(o).text for o in classes + pools), nl), RULE))
        res.objects_file, res.values_file, res.file = files["karpenter-nodepools.yaml"], files["karpenter-values.yaml"], ""
        return res

    # -- Flux -----------------------------------------------------------------------------------------------------
    def flux(self, cas0, kept, cluster: str, names: dict[str, str], objects: list) -> None:
        """The charts as Flux installs Cluster Autoscaler (a HelmRepository and two HelmReleases beside it) and the
        NodePools in a file of the same folder (listed in its kustomization at the cutover)."""
        res = self.res
        ns_meta = str((cas0.obj.get("metadata") or {}).get("namespace") or INSTALL["namespace"])
        api = str(cas0.obj.get("apiVersion"))
        interval = str((cas0.obj.get("spec") or {}).get("interval") or "10m")
        target = {} if ns_meta == INSTALL["namespace"] else {"targetNamespace": INSTALL["namespace"]}
        repo = {"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "HelmRepository",
                "metadata": {"name": "karpenter", "namespace": ns_meta},
                "spec": {"type": "oci", "interval": interval, "url": INSTALL["chart_repository"]}}

        def release(name: str, extra: dict) -> dict:
            spec = {"interval": interval, **target,
                    "chart": {"spec": {"chart": name, "version": self.target,
                                       "sourceRef": {"kind": "HelmRepository", "name": "karpenter"}}}, **extra}
            return {"apiVersion": api, "kind": "HelmRelease", "metadata": {"name": name, "namespace": ns_meta},
                    "spec": spec}
        values = self.chart_values(kept, cluster, names)
        docs = [repo, release("karpenter-crd", {}),
                release("karpenter", {"dependsOn": [{"name": "karpenter-crd"}], "install": {"crds": "Skip"},
                                      "upgrade": {"crds": "Skip"}, "values": values})]
        # the NodePools join the kustomization at the cutover: before the karpenter-crd release has run, Flux could
        # not apply a kind the cluster does not know yet (the runbook applies the file once the CRDs are in)
        if not self.write_beside(cas0, docs, objects, list_objects=False):
            return
        res.flux = [f"HelmRelease/{ns_meta}/karpenter-crd", f"HelmRelease/{ns_meta}/karpenter"]

    # -- kustomize helmCharts -------------------------------------------------------------------------------------
    def kustomize(self, cas0, kept, cluster: str, names: dict[str, str], objects: list) -> None:
        """The charts as entries of the same `helmCharts:` list (kustomize build --enable-helm), after Cluster
        Autoscaler's; the NodePools in a file beside it that the runbook applies once the CRDs are in."""
        res = self.res
        from ...sources.yamlspans import yaml_list_end
        text = self.repo.text(cas0.path)
        pos, col = yaml_list_end(text, cas0.doc.start, cas0.obj["helmCharts"])      # after the list's last item
        entries = [{"name": "karpenter-crd", "repo": INSTALL["chart_repository"], "version": self.target,
                    "releaseName": "karpenter-crd", "namespace": INSTALL["namespace"]},
                   {"name": "karpenter", "repo": INSTALL["chart_repository"], "version": self.target,
                    "releaseName": "karpenter", "namespace": INSTALL["namespace"], "includeCRDs": False,
                    "valuesInline": self.chart_values(kept, cluster, names)}]
        body = yamlsrc.Emitter().emit(convert._cm({"helmCharts": entries})).text.split("\n", 1)[1]
        body = "".join(" " * col + ln[2:] + "\n" if ln.startswith("  ") else ln + "\n"
                       for ln in body.rstrip("\n").splitlines()) if col != 2 else body
        nl = self.repo.files[cas0.path].newline
        sep = "" if text[:pos].endswith("\n") else "\n"
        res.edits.append(TextEdit(cas0.path, pos, pos, to_newline(sep + body, nl), RULE))
        self.objects_beside(cas0, objects)
        if res.objects_file:
            res.kustomize = posixpath.dirname(cas0.path) or "."

    # -- Fargate ----------------------------------------------------------------------------------------------------
    def fargate_profile(self, d: str, expr: str) -> list[str]:
        """The controller's own Fargate profile: an entry of the eks module's fargate_profiles, else an
        aws_eks_fargate_profile beside the root's others (their pod execution role and subnets)."""
        ns = INSTALL["namespace"]
        for p, b in self.cas.fargate:
            if b.type == "module" and (posixpath.dirname(p) or ".") == d:
                e = b.attr("fargate_profiles")
                if any(x.key == "karpenter" for x in e.entries):
                    return []
                text = self.repo.text(p)
                last = e.entries[-1]
                ind = text[line_start(text, last.start):last.start]
                body = hclsrc.render_value({"selectors": [{"namespace": ns, "labels": {
                    "app.kubernetes.io/name": "karpenter"}}]}, {}, ind)
                pos = text.index("\n", last.end) + 1 if "\n" in text[last.end:] else len(text)
                self.res.edits.append(TextEdit(p, pos, pos, to_newline(
                    f"\n{ind}# the Karpenter controller (written by migrator)\n{ind}karpenter = {body}\n",
                    self.repo.files[p].newline), RULE))
                self.res.tagged.append(f"{b.address}.fargate_profiles")
                return []
        res_ = [b for p, b in self.cas.fargate if b.type == "resource"]
        if not res_:
            return []
        first = res_[0]
        role, subnets = first.attr("pod_execution_role_arn"), first.attr("subnet_ids")
        lines = ['resource "aws_eks_fargate_profile" "karpenter" {', f"  cluster_name           = {expr}",
                 '  fargate_profile_name   = "karpenter"']
        if role is not None:
            lines.append(f"  pod_execution_role_arn = {role.source}")
        if subnets is not None:
            lines.append(f"  subnet_ids             = {subnets.source}")
        lines += ["", "  selector {", f'    namespace = "{ns}"', "    labels = {",
                  '      "app.kubernetes.io/name" = "karpenter"', "    }", "  }", "}", ""]
        self.res.targets.append((d, "aws_eks_fargate_profile.karpenter"))
        return lines

    # -- Argo CD --------------------------------------------------------------------------------------------------
    def argocd(self, cas0, kept, cluster: str, names: dict[str, str], objects: list) -> None:
        """The charts as Argo CD installs Cluster Autoscaler: two Applications beside its Application (the CRDs one
        sync wave earlier), same project, destination cluster and sync policy; the NodePools in a file of the same
        folder, synced by whatever syncs that folder once their CRDs exist (SkipDryRunOnMissingResource)."""
        res = self.res
        app = cas0.obj
        spec = app.get("spec") or {}
        meta_ns = str((app.get("metadata") or {}).get("namespace") or "argocd")
        dest = dict(spec.get("destination") or {})
        dest["namespace"] = INSTALL["namespace"]
        wave = knowledge.load("helm")["argocd"]["sync_wave"]

        def application(name: str, w: str, values: dict | None) -> dict:
            src: dict[str, Any] = {"repoURL": INSTALL["argocd_repo"], "chart": name, "targetRevision": self.target}
            if values is not None:
                src["helm"] = {"skipCrds": True, "valuesObject": values}
            body: dict[str, Any] = {"project": spec.get("project", "default"), "source": src, "destination": dest}
            if spec.get("syncPolicy"):
                body["syncPolicy"] = spec["syncPolicy"]
            return {"apiVersion": app.get("apiVersion"), "kind": "Application",
                    "metadata": {"name": name, "namespace": meta_ns, "annotations": {wave: w}}, "spec": body}
        values = self.chart_values(kept, cluster, names)
        docs = [application("karpenter-crd", "-1", None), application("karpenter", "0", values)]
        objects = [self.annotated(o) for o in objects]
        self.write_beside(cas0, docs, objects)
        res.argocd = ["karpenter-crd", "karpenter"]

    @staticmethod
    def annotated(o: Any) -> Any:
        o = convert._cm(dict(o))
        meta = o["metadata"]
        meta["annotations"] = convert._cm(dict(INSTALL["argocd_skip_dry_run"]))
        return o

    def chart_values(self, kept, cluster: str, names: dict[str, str], annotate: bool = True) -> dict:
        match = [{"key": "karpenter.sh/nodepool", "operator": "DoesNotExist"}]
        group = _group_name_literal(kept.group) if kept is not None else None
        pin = self.controller_label(kept.group) if kept is not None and not group else None
        if group:
            match.append({"key": convert.GROUP_LABEL, "operator": "In", "values": [group]})
        elif pin is not None:
            match.append({"key": pin[0], "operator": "In", "values": [pin[1]]})
        elif kept is not None:
            _find(self.res, "MIG-CAS-019", "warning", kept.group.path, kept.group.line,
                  f"node group {kept.group.name}'s EKS name is not a literal, so the controller is only kept off "
                  "Karpenter's nodes, not pinned to the group",
                  f"add {convert.GROUP_LABEL} In [<the group's name>] to the karpenter chart values' affinity")
        out = {"settings": {"clusterName": cluster, "interruptionQueue": names["queue"]},
               "serviceAccount": {"name": INSTALL["service_account"]},
               "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                   "nodeSelectorTerms": [{"matchExpressions": match}]}}}}
        if self.res.identity == "irsa" and annotate:
            arn = self.controller_role_arn(names["controller_role"])
            if arn is not None:
                out["serviceAccount"]["annotations"] = {INSTALL["irsa_annotation"]: arn}
        if convert.tolerations(kept):
            out["tolerations"] = convert.tolerations(kept)
        return out

    def controller_label(self, g: NodeGroup) -> tuple[str, str] | None:
        """The label that pins the controller to a kept group whose EKS name is generated (knowledge/cas.yaml
        `install.controller_label`): the group's own when it has it, else added to the group's `labels` - a
        terraform-aws-modules group entry or an aws_eks_node_group of the Terraform folder Karpenter's IAM is written
        in, whose labels are a map written out (or none yet); None where it cannot be added."""
        key, value = INSTALL["controller_label"]["key"], INSTALL["controller_label"]["value"]
        labels = g.literal("labels")
        if isinstance(labels, dict) and str(labels.get(key)) == value:
            return key, value
        if g.source not in ("module", "resource") or g.flavour != "managed" or g.block is None or g.instance or \
                (g.source == "module" and (g.entry is None or g.entry.value.kind != "object")):
            return None
        where = _block_file(self.repo, g.block) or g.path
        if (posixpath.dirname(where) or ".") != (self.res.file.rsplit("/", 1)[0] if "/" in self.res.file else "."):
            return None                         # another root module's group: its apply is not this runbook's
        path = g.path if g.source == "module" else where
        text, nl = self.repo.text(path), self.repo.files[path].newline
        if (path, g.name) in getattr(self, "_labelled", set()):
            return key, value
        entries = {x.key: x for x in g.entry.value.entries} if g.source == "module" else None
        have = entries.get("labels") if entries is not None else g.block.attributes.get("labels")
        have = have.value if isinstance(have, hclsrc.ObjEntry) else have.expr if have is not None else None
        line = f'"{key}" = "{value}"'
        if have is not None:
            if have.kind != "object" or (have.entries and hclsrc.line_of(text, have.entries[0].start)
                                         == hclsrc.line_of(text, have.start)):
                return None                     # an expression, or a map on one line: not edited
            if have.entries:
                first = have.entries[0]
                ls = line_start(text, first.start)
                edit = TextEdit(path, ls, ls, to_newline(f"{text[ls:first.start]}{line}\n", nl), RULE)
            else:
                ind = re.match(r"[ \t]*", text[line_start(text, have.start):]).group(0)
                edit = TextEdit(path, have.start, have.end, to_newline(f"{{\n{ind}  {line}\n{ind}}}", nl), RULE)
        else:
            if "labels" in g.fields and not isinstance(labels, dict):
                return None                     # labels from the module's defaults, written as an expression
            inherited = labels or {}            # the defaults' labels: a group's own map replaces them, so it keeps them
            container = g.entry.value if g.source == "module" else None
            last = (container.entries[-1] if container is not None and container.entries else
                    max(g.block.attributes.values(), key=lambda a: a.end) if g.source == "resource" and
                    g.block.attributes else None)
            if last is None or (container is not None and hclsrc.line_of(text, container.start) ==
                                hclsrc.line_of(text, container.end)):
                return None
            ind = text[line_start(text, last.start):last.start]
            pos = line_end(text, last.end)
            kept = "".join(f"{ind}  {hclsrc.object_key(str(k))} = {hclsrc.quote(str(v))}\n"
                           for k, v in inherited.items())
            edit = TextEdit(path, pos, pos, to_newline(f"\n{ind}labels = {{\n{kept}{ind}  {line}\n{ind}}}\n", nl),
                            RULE, order=1)
        self.res.edits.append(edit)
        self.__dict__.setdefault("_labelled", set()).add((path, g.name))
        self.res.labelled.append((posixpath.dirname(where) or ".", g.block.address))
        _find(self.res, "MIG-CAS-067", "info", g.path, g.line,
              f"node group {g.name}'s EKS name is generated, so chart values outside Terraform cannot name it: it is "
              f"labelled {key}={value} and the controller is pinned to that label (the label reaches its running "
              "nodes in place when Terraform applies the group: a node group configuration update)")
        return key, value

    def controller_role_arn(self, name: str) -> str | None:
        """The ARN of the controller's IRSA role (the karpenter module names it `name`) for chart values a GitOps tool
        applies: the account and partition are those of Cluster Autoscaler's own role ARN in its values (the same
        cluster's account); else said (MIG-CAS-056) and left out - never guessed."""
        account = self.account()
        if account is not None:
            return INSTALL["role_arn"].format(partition=account[0], account=account[1], name=name)
        cas0 = self.cas.installs[0]
        _find(self.res, "MIG-CAS-056", "warning", cas0.path, cas0.line,
              "the controller runs with IRSA and its chart values are applied outside Terraform, which cannot read the "
              f"role's ARN; the repository states no AWS account (Cluster Autoscaler's values name no role ARN), so the "
              f"karpenter chart values carry no {INSTALL['irsa_annotation']} annotation: the controller would start "
              "without AWS credentials",
              f"add serviceAccount.annotations {INSTALL['irsa_annotation']}: arn:aws:iam::<account>:role/{name} to "
              "the karpenter chart values (the output iam_role_arn of module.karpenter) before the charts sync")
        return None

    def account(self) -> tuple[str, str] | None:
        """(partition, account) of Cluster Autoscaler's own IRSA role ARN in its chart values (the cluster's account),
        else of the one account the cluster's AWS provider allows; None when neither states it."""
        for i in self.cas.installs:
            v = (((yaml_values(i).get("rbac") or {}).get("serviceAccount") or {}).get("annotations") or {}).get(
                INSTALL["irsa_annotation"]) if i.obj is not None else None
            m = re.fullmatch(INSTALL["role_arn_pattern"], str(v or ""))
            if m:
                return m.group("partition"), m.group("account")
        # else the one account the cluster's AWS provider allows (`allowed_account_ids`), in its region's partition
        from ...inventory.sites import static_value
        d = self.terraform_dir(self.cas.installs[0]) if self.cas.installs else "."
        for p, b in self.repo.blocks("provider", "aws"):
            if (posixpath.dirname(p) or ".") != d or b.attr("alias") is not None:
                continue
            ids = static_value(self.repo, posixpath.dirname(p), b.attr("allowed_account_ids"))
            region = static_value(self.repo, posixpath.dirname(p), b.attr("region"))
            if isinstance(ids, list) and len(ids) == 1 and re.fullmatch(r"\d{12}", str(ids[0])) and \
                    isinstance(region, str):
                part = next(v for k, v in INSTALL["region_partitions"].items() if region.startswith(k))
                return part, str(ids[0])
        return None

    # -- helmfile -------------------------------------------------------------------------------------------------
    def helmfile(self, cas0, values: dict, role: str) -> bool:
        """The charts as releases of the helmfile that installs Cluster Autoscaler: karpenter-crd, then karpenter
        (`needs` it), appended to its `releases:`, through an OCI `repositories:` entry; the chart values in
        karpenter-values.yaml beside it. The controller's IRSA role is annotated by its ARN: in the account of
        Cluster Autoscaler's own role ARN, else read from the environment (`requiredEnv "AWS_ACCOUNT_ID"` in a
        .yaml.gotmpl values file, which helmfile renders)."""
        from ...sources.yamlspans import yaml_list_end
        res = self.res
        from ...inventory import _parse_yaml_docs
        envs = []                   # environments of any document of the file (a layered helmfile splits them)
        for _doc, _m, o in _parse_yaml_docs(self.repo, cas0.path, self.repo.text(cas0.path), 0, 0, cas0.path,
                                            gotmpl=True):
            e = o.get("environments") if isinstance(o, dict) else None
            envs += [str(k) for k in e if str(k) not in envs] if isinstance(e, dict) else []
        if len(envs) > 1:
            _find(res, "MIG-CAS-057", "warning", cas0.path, cas0.line,
                  f"{cas0.path} has environments {', '.join(envs[:4])}: one helmfile for several clusters, and "
                  "Karpenter's releases written there would carry one cluster's name, queue and node groups to every "
                  "environment; nothing is written for this root",
                  "give the karpenter releases environment values (clusterName, interruptionQueue, the controller "
                  "role) and the NodePools per environment by hand, following docs/from-cluster-autoscaler.md")
            res.edits.clear()
            return False
        ns = INSTALL["namespace"]
        text = self.repo.text(cas0.path)
        d = posixpath.dirname(cas0.path)
        account = self.account()
        templated = self.res.identity == "irsa" and account is None
        if self.res.identity == "irsa":
            part, acct = account or ("aws", '{{ requiredEnv "AWS_ACCOUNT_ID" }}')
            values["serviceAccount"]["annotations"] = {INSTALL["irsa_annotation"]: INSTALL["role_arn"].format(
                partition=part, account=acct, name=role)}
        vname = "karpenter-values.yaml" + (".gotmpl" if templated else "")
        vfile = posixpath.join(d, vname)
        if vfile in self.repo.files:
            _find(res, "MIG-CAS-006", "error", vfile, 1, f"{vfile} already exists; migrator writes the Karpenter chart "
                  "values there", "rename that file, then run migrator again")
            return False
        repos = cas0.obj.get("repositories")
        oci = INSTALL["chart_repository"].split("://", 1)[1]
        repo_name = next((str(r.get("name")) for r in repos or [] if isinstance(r, dict)
                          and str(r.get("url", "")).removeprefix("oci://").rstrip("/") == oci), None)
        names_taken = {str(r.get("name")) for r in repos or [] if isinstance(r, dict)}
        nl = self.repo.files[cas0.path].newline
        emit = yamlsrc.Emitter()
        if repo_name is None:
            repo_name = "karpenter" if "karpenter" not in names_taken else "karpenter-oci"
            entry = {"name": repo_name, "url": oci, "oci": True}
            if isinstance(repos, list) and repos:
                pos, col = yaml_list_end(text, cas0.doc.start, repos)
                res.edits.append(TextEdit(cas0.path, pos, pos, to_newline(_items_text(emit, [entry], col), nl), RULE))
            else:
                pos = cas0.doc.start
                res.edits.append(TextEdit(cas0.path, pos, pos, to_newline(
                    emit.emit(convert._cm({"repositories": [entry]})).text + "\n", nl), RULE))
        releases = [{"name": "karpenter-crd", "namespace": ns, "chart": f"{repo_name}/karpenter-crd",
                     "version": self.target},
                    {"name": "karpenter", "namespace": ns, "chart": f"{repo_name}/karpenter", "version": self.target,
                     "needs": [f"{ns}/karpenter-crd"], "values": [vname]}]
        pos, col = yaml_list_end(text, cas0.doc.start, cas0.obj["releases"])
        res.edits.append(TextEdit(cas0.path, pos, pos, to_newline(_items_text(
            emit, releases, col, _spaced(text, cas0.doc.start, cas0.obj["releases"])), nl), RULE))
        res.edits.append(NewFile(vfile, to_newline(
            f"# Karpenter chart values ({MARK})" + ("; helmfile renders this file,\n# AWS_ACCOUNT_ID comes from "
                                                     "the environment" if templated else "") + "\n"
            + emit.emit(convert._cm(values)).text, nl), RULE))
        res.helmfile, res.values_file = cas0.path, vfile
        if templated:
            _find(res, "MIG-CAS-060", "info", vfile, 1,
                  f"the controller's IRSA role ARN in {vfile} reads the AWS account from the environment "
                  '(`requiredEnv "AWS_ACCOUNT_ID"`): Cluster Autoscaler\'s values name no role ARN to take it from',
                  "export AWS_ACCOUNT_ID before helmfile applies the karpenter release (or write the account in the "
                  "file)")
        return True

    def objects_beside(self, cas0, objects: list) -> None:
        """The EC2NodeClasses and NodePools in karpenter-nodepools.yaml beside Cluster Autoscaler's file, applied by
        the runbook once the CRDs are in."""
        pools = posixpath.join(posixpath.dirname(cas0.path), "karpenter-nodepools.yaml")
        if pools in self.repo.files:
            _find(self.res, "MIG-CAS-006", "error", pools, 1, f"{pools} already exists; migrator writes the NodePools "
                  "there", "rename that file, then run migrator again")
            self.res.edits.clear()
            return
        self.res.edits.append(NewFile(pools, to_newline("---\n".join(yamlsrc.Emitter().emit(o).text for o in objects),
                                                        self.repo.files[cas0.path].newline), RULE))
        self.res.objects_file = pools

    def write_beside(self, cas0, charts_docs: list, objects: list, list_objects: bool = True) -> bool:
        """karpenter.yaml and karpenter-nodepools.yaml beside Cluster Autoscaler's file, listed in its kustomization
        (the NodePools only when list_objects)."""
        res = self.res
        d = posixpath.dirname(cas0.path)
        charts = posixpath.join(d, "karpenter.yaml")
        pools = posixpath.join(d, "karpenter-nodepools.yaml")
        for path in (charts, pools):
            if path in self.repo.files:
                _find(res, "MIG-CAS-006", "error", path, 1, f"{path} already exists; migrator writes the Karpenter "
                      "installation there", "rename that file, then run migrator again")
                return False
        nl = self.repo.files[cas0.path].newline
        emit = yamlsrc.Emitter()
        res.edits.append(NewFile(charts, to_newline("---\n".join(emit.emit(convert._cm(x)).text for x in charts_docs),
                                                    nl), RULE))
        res.edits.append(NewFile(pools, to_newline("---\n".join(emit.emit(o).text for o in objects), nl), RULE))
        for new in ([pools] if list_objects else []) + [charts]:
            e = kustomization_insert(self.repo, cas0.path, new, RULE)
            if e is not None:
                res.edits.append(e)
        res.objects_file = pools
        res.charts_file = charts
        return True

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

    # -- discovery tags -------------------------------------------------------------------------------------------
    def tag_value(self, d: str, literal: str | None) -> str | None:
        """The discovery tag's value as the expression the cluster's name comes from (the eks module's or the
        aws_eks_cluster's own name argument: a literal, a variable, a local of those), never an output of the
        cluster, which the tagged subnets and security group feed (a cycle `terraform validate` rejects). A name
        built from other blocks' outputs: the literal the root states, else None (tagged by the runbook)."""
        for p, b in list(self.cas.eks_modules) + list(self.repo.blocks("resource", "aws_eks_cluster")):
            if (posixpath.dirname(p) or ".") != d:
                continue
            for attr in INSTALL["cluster_name_inputs"]:
                e = b.attr(attr)
                if e is None:
                    continue
                if _independent(self.repo, d, e.source):
                    return e.source.strip()
                return hclsrc.quote(literal) if literal and not self.shared else None
        return hclsrc.quote(literal) if literal and not self.shared else None

    def tags(self, d: str, expr: str) -> None:
        """karpenter.sh/discovery on the private subnets and the node security group, where the root declares them:
        module vpc `private_subnet_tags`, module eks `node_security_group_tags`, the `aws_subnet` resources the node
        groups use. A security group Terraform does not declare (EKS's own cluster security group) is tagged by the
        runbook's aws-cli command."""
        places = [(p, b, "private_subnet_tags") for p, b in self.cas.vpc_modules] + \
                 [(p, b, "node_security_group_tags") for p, b in self.cas.eks_modules]
        subnets = set()
        for g in self.cas.groups:
            src = g.masked.unmask(str(g.fields.get("subnet_ids", "")))
            home = posixpath.dirname(g.home or g.path)
            for name in set(re.findall(r"\blocal\.([\w-]+)", src)):     # `local.subnets[count.index]`: its list
                src += "".join(b.attr(name).source for _, b in _module_blocks(self.repo, home, "locals")
                               if b.attr(name) is not None)
            subnets.update(re.findall(r"aws_subnet\.([A-Za-z0-9_-]+)", src))
        for p, b in self.repo.blocks("resource", "aws_eks_cluster"):
            for vc in b.sub("vpc_config"):
                e = vc.attr("subnet_ids")
                subnets.update(re.findall(r"aws_subnet\.([A-Za-z0-9_-]+)", e.source if e is not None else ""))
        places += [(p, b, "tags") for p, b in self.repo.blocks("resource", "aws_subnet")
                   if b.labels[1] in subnets and self.ctx.owns(p)]
        for p, b, attr in places:
            if (posixpath.dirname(p) or ".") != d:
                continue
            if self.add_entry(p, b, attr, expr):
                self.res.tagged.append(f"{b.address}.{attr}")
        self.res.sg_by_cli = not any(a.endswith("node_security_group_tags") for a in self.res.tagged)
        self.res.subnets_by_cli = not any(not a.endswith("node_security_group_tags") for a in self.res.tagged)
        cluster_subnets = self.cluster_subnets()
        sources = {g.name: _subnets_of(g) for g in self.cas.groups}
        if self.res.subnets_by_cli:         # the runbook tags every group's own subnets: each NodePool gets their
            union = {"the other node groups' subnets"} if len({k for k, _ in sources.values()}) > 1 else set()
            cluster_subnets = {frozenset(union): "the other node groups' subnets"} if union else {}
        for g in self.cas.groups:
            key, own = sources[g.name]
            if own and cluster_subnets and key not in cluster_subnets and g.name not in self.zoned:
                _find(self.res, "MIG-CAS-033", "warning", g.path, g.line,
                      f"node group {g.name} launches into {own}, not all of "
                      f"{', '.join(sorted(cluster_subnets.values()))}; its NodePool uses every subnet tagged "
                      f"{INSTALL['discovery_tag']}",
                      f"if the group's subnets were deliberate, give its EC2NodeClass subnetSelectorTerms by id "
                      f"(- id: <subnet id>) for them")

    def add_entry(self, p: str, b: hclsrc.Block, attr: str, expr: str) -> bool:
        tag = INSTALL["discovery_tag"]
        text = self.repo.text(p)
        nl = self.repo.files[p].newline
        e = b.attr(attr)
        entry = f'"{tag}" = {expr}'
        if e is not None and e.kind == "object":
            if any(x.key == tag for x in e.entries):
                return False
            if e.entries and hclsrc.line_of(text, e.start) == hclsrc.line_of(text, e.end):
                self._finding_manual(p, text, b, attr, tag, expr)
                return False
            if e.entries:
                last = e.entries[-1]
                ind = text[line_start(text, last.start):last.start]
                pos = text.index("\n", last.end) + 1 if "\n" in text[last.end:] else len(text)
                self.res.edits.append(TextEdit(p, pos, pos, to_newline(f"{ind}{entry}\n", nl), RULE))
            else:
                ind = text[line_start(text, b.attributes[attr].start):b.attributes[attr].start]
                self.res.edits.append(TextEdit(p, e.start, e.end, to_newline("{\n" + f"{ind}  {entry}\n{ind}}}", nl),
                                               RULE))
            return True
        if e is None:
            first = min(b.attributes.values(), key=lambda a: a.start) if b.attributes else None
            ind = text[line_start(text, first.start):first.start] if first else "  "
            pos = line_start(text, b.body_end)
            self.res.edits.append(TextEdit(p, pos, pos, to_newline(
                f"\n{ind}{attr} = {{\n{ind}  {entry}\n{ind}}}\n", nl), RULE, order=2))
            return True
        self._finding_manual(p, text, b, attr, tag, expr)
        return False

    def _finding_manual(self, p, text, b, attr, tag, expr) -> None:
        _find(self.res, "MIG-CAS-016", "warning", p, hclsrc.line_of(text, b.attributes[attr].start),
              f"{b.address}.{attr} is an expression migrator does not edit",
              f'add "{tag}" = {expr} to it by hand (Karpenter finds subnets and security groups by this tag)')

    def access_entries(self, d: str) -> bool:
        """Can a node role join through an EKS access entry (authentication mode API or API_AND_CONFIG_MAP)? The eks
        module before v20 has no access entries at all (aws-auth only); v20+ and aws_eks_cluster by their mode."""
        from ...modmajor import constraint
        for p, b in self.repo.blocks("resource", "aws_eks_cluster"):
            if (posixpath.dirname(p) or ".") != d:
                continue
            mode = None
            for ac in b.sub("access_config"):
                e = ac.attr("authentication_mode")
                mode = e.literal() if e is not None else None
            return mode in ("API", "API_AND_CONFIG_MAP")
        below = AUTH["cluster_no_access_entries_below"]
        for p, b in self.cas.eks_modules:
            if (posixpath.dirname(p) or ".") != d:
                continue
            e = b.attr("authentication_mode")
            if e is not None and e.literal() == "CONFIG_MAP":
                return False
            v = b.attr("version")
            ver = constraint(str(v.literal()))[1] if v is not None and v.literal() else None
            if ver is not None and ver[0] < below:
                return False
        return True

    def map_aws_auth(self, d: str, module: str) -> bool:
        """The node role mapped where the root maps roles in aws-auth: the eks module's `aws_auth_roles` list (v18,
        v19, or the v20 aws-auth submodule), one entry added as the others are written. False where there is none
        migrator can edit (said by the caller)."""
        want = re.compile(AUTH["cluster_source"])
        for p, b in self.repo.blocks("module"):
            src = b.attr("source")
            if (posixpath.dirname(p) or ".") != d or src is None or not (
                    want.search(str(src.literal() or "")) or "modules/aws-auth" in str(src.literal() or "")):
                continue
            e = b.attr("aws_auth_roles")
            text = self.repo.text(p)
            if e is not None and e.kind == "ref" and re.fullmatch(r"(var|local)\.[\w-]+", e.source.strip()):
                # the roles the module is given (`var.aws_auth_roles`): the node role joins them here, as one more item
                head = text[line_start(text, e.start):e.start]          # "  aws_auth_roles = "
                ind = head[:len(head) - len(head.lstrip())]
                new = f"concat({e.source.strip()}, [\n{ind}  {_mapping(module, ind + '  ')},\n{ind}])"
                self.res.edits.append(TextEdit(p, e.start, e.end, to_newline(new, self.repo.files[p].newline), RULE))
                _find(self.res, "MIG-CAS-037", "info", p, hclsrc.line_of(text, e.start),
                      f"the cluster authenticates with aws-auth: Karpenter's node role is mapped in {b.address}."
                      f"aws_auth_roles, joined to {e.source.strip()} (no access entry)")
                return True
            if e is None or e.kind != "tuple" or not e.items or \
                    hclsrc.line_of(text, e.items[-1].start) == hclsrc.line_of(text, e.start):
                continue
            last = e.items[-1]
            ind = text[line_start(text, last.start):last.start]
            after = text[last.end:e.end]
            comma = after.lstrip().startswith(",")
            pos = last.end + (after.index(",") + 1 if comma else 0)
            entry = ("" if comma else ",") + "\n" + ind + _mapping(module, ind) + ("," if comma else "")
            self.res.edits.append(TextEdit(p, pos, pos, to_newline(entry, self.repo.files[p].newline), RULE))
            _find(self.res, "MIG-CAS-037", "info", p, hclsrc.line_of(text, e.start),
                  f"the cluster authenticates with aws-auth: Karpenter's node role is mapped in {b.address}.aws_auth_roles "
                  "(no access entry)")
            return True
        return self.map_configmap(d, module)

    def map_configmap(self, d: str, module: str) -> bool:
        """The node role mapped in an aws-auth ConfigMap the root writes as a Kubernetes provider resource, whose
        mapRoles is `yamlencode()` of a list: one more item in a list written out, or the list it is given
        (`var.roles`, `concat(...)`) joined to one. False for any other form (YAML text: said by the caller)."""
        for p, b in [(p, b) for kind in AUTH["configmap_resources"] for p, b in self.repo.blocks("resource", kind)]:
            meta = b.sub("metadata")
            name = meta[0].attr("name") if meta else None
            ns = meta[0].attr("namespace") if meta else None
            if (posixpath.dirname(p) or ".") != d or name is None or name.literal() != "aws-auth" or \
                    (ns is not None and ns.literal() != "kube-system"):
                continue
            data = b.attr("data")
            roles = next((x.value for x in data.entries if x.key == "mapRoles"), None) \
                if data is not None and data.kind == "object" else None
            text = self.repo.text(p)
            if roles is not None and roles.kind == "heredoc":
                return self._map_heredoc(p, b, roles, text, module)
            if roles is None or roles.kind != "call" or roles.name != "yamlencode" or len(roles.items) != 1:
                return False
            arg = roles.items[0]
            ls = line_start(text, roles.start)
            ind = text[ls:ls + len(text[ls:]) - len(text[ls:].lstrip(" \t"))]
            def item(base: str) -> str:
                return _mapping(module, base)
            def written_out(x) -> bool:         # a list literal whose items stand on lines of their own
                return x.kind == "tuple" and bool(x.items) and \
                    hclsrc.line_of(text, x.items[-1].start) != hclsrc.line_of(text, x.start)
            lists = [arg] if written_out(arg) else [x for x in arg.items if written_out(x)] \
                if arg.kind == "call" and arg.name == "concat" else []
            last = arg.items[-1] if arg.kind == "tuple" and arg.items else None
            if not lists and last is not None and last.kind == "object" and \
                    hclsrc.line_of(text, last.end) != hclsrc.line_of(text, last.start):
                # `yamlencode([{ ... }])`: the next item opens where the last one closes; terraform fmt writes that
                # `}, {` line at the items' fields' depth
                ls = line_start(text, last.end - 1)
                close = text[ls:last.end - 1]
                if close.strip():
                    return False
                body = item(close).split("\n", 1)[1].rsplit("\n", 1)[0]     # the fields' lines
                new = f"{close}  }}, {{\n{body}\n{close}}}"
                self.res.edits.append(TextEdit(p, ls, last.end, to_newline(new, self.repo.files[p].newline), RULE))
                self._mapped(p, b, text, roles)
                return True
            if lists:                           # one more item in the list written out (the last concat() gets)
                lst = lists[-1]
                last = lst.items[-1]
                inner = text[line_start(text, last.start):last.start]
                after = text[last.end:lst.end]
                comma = after.lstrip().startswith(",")
                pos = last.end + (after.index(",") + 1 if comma else 0)
                new, start, end = ("" if comma else ",") + f"\n{inner}" + item(inner) + ("," if comma else ""), pos, pos
            elif arg.kind in ("ref", "call", "tuple"):
                new, start, end = f"concat({arg.source.strip()}, [\n{ind}  {item(ind + '  ')},\n{ind}])", arg.start, arg.end
            else:
                return False
            self.res.edits.append(TextEdit(p, start, end, to_newline(new, self.repo.files[p].newline), RULE))
            self._mapped(p, b, text, roles)
            return True
        return False

    def _mapped(self, p: str, b, text: str, roles) -> None:
        _find(self.res, "MIG-CAS-037", "info", p, hclsrc.line_of(text, roles.start),
              f"the cluster authenticates with aws-auth: Karpenter's node role is mapped in {b.address}'s "
              "mapRoles (no access entry)")

    def _map_heredoc(self, p: str, b, roles, text: str, module: str) -> bool:
        """mapRoles written as YAML text: the node role's item copied from the text's own node mapping (its rolearn
        the karpenter module's output), or written as its items are, before the closing marker."""
        h = roles.heredoc
        body = text[h.body_start:h.body_end]
        lines = body.splitlines(keepends=True)
        starts = [i for i, ln in enumerate(lines) if re.match(r"\s*-\s+rolearn\s*:", ln)]
        if not starts or not body.endswith("\n"):
            return False
        ind = re.match(r"\s*", lines[starts[0]]).group(0)
        ends = starts[1:] + [len(lines)]
        items = ["".join(lines[a:z]).rstrip() + "\n" for a, z in zip(starts, ends)]
        node = next((x for x in reversed(items) if NODE_MAPPING["username"] in x), None)
        arn = f"${{module.{module}.node_iam_role_arn}}"
        if node is not None:
            new = re.sub(r"(rolearn\s*:\s*)(\"?)[^\n\"]*\2", lambda m: m.group(1) + m.group(2) + arn + m.group(2),
                         node, count=1)
        else:
            new = (f"{ind}- rolearn: {arn}\n{ind}  username: {NODE_MAPPING['username']}\n{ind}  groups:\n"
                   + "".join(f"{ind}    - {g}\n" for g in NODE_MAPPING["groups"]))
        pos = text.index("\n", h.body_start + len(body.rstrip())) + 1    # after its last line (blank lines stay below)
        self.res.edits.append(TextEdit(p, pos, pos, to_newline(new, self.repo.files[p].newline), RULE))
        self._mapped(p, b, text, roles)
        return True

    def provider_pin(self, d: str) -> None:
        need = INSTALL["requires_aws_provider"]
        from ...modmajor import capped_eks, configuration_dirs
        self.res.module_version, self.res.chart = self.module_version, self.target
        if self.matched is not None:                    # the v20 module shares the eks module's provider range
            p, b, ver, cov, k8s = self.matched
            v = b.attr("version")
            _find(self.res, "MIG-CAS-070", "info", p, hclsrc.line_of(self.repo.text(p), v.start),
                  f"{b.address} ({v.literal()}) installs v{'.'.join(map(str, ver))}, which allows the AWS provider "
                  f"below {need}.0 only: the karpenter module is written at {self.module_version}, the last v20 "
                  f"release, whose policy serves Karpenter up to {cov['karpenter']}, so Karpenter {self.target} is "
                  f"installed (it supports Kubernetes {k8s[0]} to {k8s[1]})",
                  f"the next hop (to the newest 1.x) moves the karpenter module to v21, after {b.address} moves to "
                  f"v{ver[0] + 1} (its UPGRADE guide)")
            return
        for p, b, ver in capped_eks(self.repo, d):      # the eks module's own provider range must allow it too
            v = b.attr("version")
            _find(self.res, "MIG-CAS-039", "warning", p, hclsrc.line_of(self.repo.text(p), v.start),
                  f"{b.address} ({v.literal()}) installs a release that allows the AWS provider below {need}.0 only, "
                  f"and the karpenter module {INSTALL['module_version']} needs >= {need}.0: terraform init cannot "
                  "satisfy both",
                  f"move {b.address} to v{ver[0] + 1} first (its UPGRADE guide), then apply this install")
        # the provider range is the whole configuration's: every module of it, up to the root and down through what
        # the root calls (a pin anywhere holds the module written here to the same AWS provider)
        for p in (p for x in configuration_dirs(self.repo, d) for p in self.repo.tf_in_dir(x if x != "." else "")):
            text = self.repo.text(p)
            m = re.search(r'aws\s*=\s*\{[^}]*?version\s*=\s*"([^"]+)"', text, re.S)
            if m:
                from ...modmajor import constraint
                op, ver = constraint(m.group(1))
                if ver is not None and ((op in ("~>", "=", "") and ver[0] < need) or
                                        (op == "<" and ver[0] <= need)):
                    _find(self.res, "MIG-CAS-017", "warning", p, hclsrc.line_of(text, m.start()),
                          f"the AWS provider is pinned to {m.group(1)}; the karpenter module "
                          f"{INSTALL['module_version']} needs >= {need}.0",
                          f"allow the AWS provider {need}.x (and run terraform init -upgrade) before applying")


def _items_text(emit, items: list, col: int, blank: bool = False) -> str:
    """YAML list items as a block list whose dashes stand at column `col` (a blank line before each when `blank`,
    as the list separates its own items)."""
    out = []
    for item in items:
        body = emit.emit(convert._cm({"x": [item]})).text.split("\n", 1)[1]
        lines = body.rstrip("\n").splitlines()
        step = len(lines[0]) - len(lines[0].lstrip(" "))        # the emitter's own dash column
        out.append(("\n" if blank else "") + "".join(" " * col + ln[step:] + "\n" for ln in lines))
    return "".join(out)


def _spaced(text: str, doc_start: int, seq) -> bool:
    """Does a block YAML list separate its items with a blank line?"""
    if len(seq) < 2:
        return False
    lines = text[doc_start:].splitlines()
    return not lines[seq.lc.item(1)[0] - 1].strip()


def _tokenised(o: Any) -> Any:
    """An object with its ${...} Terraform references as tokens, for validation."""
    if isinstance(o, dict):
        return {k: _tokenised(v) for k, v in o.items()}
    if isinstance(o, list):
        return [_tokenised(v) for v in o]
    if isinstance(o, str) and "${" in o:
        return re.sub(r"\$\{[^}]*\}", "__MIG_0__", o)
    return o


def run(ctx, phase: str, done: dict | None = None) -> InstallResult:
    if phase == "cutover":
        return _list_nodepools(ctx)
    if phase != PHASE:
        res = InstallResult()
        res.done = bool(ctx.charts)
        return res
    return Installer(ctx).run()


def _list_nodepools(ctx) -> InstallResult:
    """Cutover, Flux: the NodePools file written at install joins the kustomization beside Cluster Autoscaler's."""
    res = InstallResult(done=True)
    cas = convert.inventory(ctx)
    for ci in (cas.installs if cas is not None else []):
        if ci.kind != "flux":
            continue
        pools = posixpath.join(posixpath.dirname(ci.path), "karpenter-nodepools.yaml")
        if pools in ctx.repo.files:
            e = kustomization_insert(ctx.repo, ci.path, pools, RULE)
            if e is not None:
                res.edits.append(e)
                res.objects_file = pools
                res.flux = ["listed"]
    return res
