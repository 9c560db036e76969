"""Cluster Autoscaler and the node groups it scales, wherever a repository declares them (knowledge/cas.yaml).

`scan(repo)` finds: Cluster Autoscaler installs (a `helm_release` or Flux HelmRelease of the cluster-autoscaler
chart, a Deployment running its image), its IAM (terraform-aws-modules IRSA role with
`attach_cluster_autoscaler_policy`), and node groups (terraform-aws-modules/eks `eks_managed_node_groups` /
`self_managed_node_groups` with their `*_defaults`, `aws_eks_node_group`, eksctl `ClusterConfig`). Each node group
keeps where every field is written, so rules can edit it in place; fields written as expressions stay tokens.
"""
from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from typing import Any

from . import knowledge
from .inventory import Repo, _parse_yaml_docs, hcl_to_obj, value_at
from .inventory.sites import MISSING, item_path
from .model import Finding
from .sources import hcl as hclsrc
from .sources import yaml as yamlsrc
from .sources.anchored import AtWordStart
from .sources.templates import Masked

FACTS = knowledge.load("cas")
_CAS = re.compile(r"cluster-autoscaler")
# the name where it can be a whole value, or an image's last path element: never inside a longer name or key
# (cluster-autoscaler.kubernetes.io/safe-to-evict, cluster-autoscaler-status), as vendored charts name it by thousands:
# `(?:(?<=/)|(?<![\w./-]))cluster-autoscaler(?![\w./-])`, searched from the name (a leading lookbehind is tried at
# every character) and what stands before it checked after
_CAS_NAME_END = re.compile(r"cluster-autoscaler(?![\w./-])")


def _cas_value_in(text: str) -> bool:
    for m in _CAS_NAME_END.finditer(text):
        c = text[m.start() - 1] if m.start() else ""
        if not c or c == "/" or not (c.isalnum() or c in "_./-"):
            return True
    return False


_CAS_TEXT = "cluster-autoscaler"         # _CAS as a plain substring test (C speed over every file)
# the files read for Cluster Autoscaler's manifests, eksctl configurations and scripts (CI workflows are YAML)
_CAS_FILES = (".yaml", ".yml", ".tmpl", ".tftpl", ".tpl", "Kustomization", ".sh")
_EKSCTL = re.compile(r"kind:\s*ClusterConfig")


@dataclass
class CasInstall:
    kind: str                   # terraform | module | wrapper (a generic Helm release module given its chart) |
                                # tfdeployment | kubectl | flux | argocd | kustomize | deployment | script (a script
                                # of the repository: the helm CLI, kubectl apply -f of the example manifest's URL,
                                # or a manifest it writes from a heredoc: `source` says which)
    path: str
    line: int
    block: hclsrc.Block | None = None
    obj: Any = None
    doc: Any = None
    namespace: str = "kube-system"
    name: str = "cluster-autoscaler"
    source: tuple = ()          # argocd: path of the chart's source in the Application
    row: dict | None = None     # module: its row of knowledge/cas.yaml `modules`; wrapper: of `wrappers` (or
                                # the same read from a module of the repository)
    readers: list = field(default_factory=list)         # deployment: the Terraform blocks that apply its file
                                                        # (file()/templatefile(), kubectl_*_documents, and the
                                                        # kubectl_manifest reading those), as (path, block)
    chart: str = ""                                     # script: the chart as the helm call names it
    file_values: dict = field(default_factory=dict)     # values it reads from this repository's files: an Argo
                                                        # CD `$<ref>/path` value file, Flux valuesFrom ConfigMaps

    @property
    def address(self) -> str:
        if self.kind == "helmfile":
            return f"helmfile release {self.name}"
        if self.block is not None:
            return self.block.address if self.row is None or self.kind == "wrapper" else \
                f"{self.block.address}.{self.row['switch']}"
        if self.kind == "script" and self.chart:
            return f"helm release {self.name}"
        return f"{(self.obj or {}).get('kind', 'Deployment')}/{self.name}"


@dataclass
class NodeGroup:
    name: str
    source: str                 # module | resource | eksctl
    flavour: str                # managed | self
    path: str
    line: int
    fields: dict[str, Any] = field(default_factory=dict)     # meaning -> value (tokens for expressions)
    manual: list[str] = field(default_factory=list)          # fields migrator cannot carry to a NodePool
    template: dict[str, dict[str, str]] = field(default_factory=dict)  # the aws_launch_template it names: address
                                                             # -> what it sets (setting -> where it goes on Karpenter)
    block: hclsrc.Block | None = None           # module call / resource
    entry: hclsrc.ObjEntry | None = None        # module: the group's entry in the map
    attr: str = ""                              # module: eks_managed_node_groups / self_managed_node_groups
    masked: Masked = field(default_factory=lambda: Masked(text=""))
    doc: Any = None                             # eksctl document span
    index: int = -1                             # eksctl: index in its list
    cluster_version: str | None = None          # the cluster's Kubernetes version, when literal
    key: str | None = None                      # aws_eks_node_group with for_each: its item's key (entry: the item)
    home: str = ""                              # the file of the block, where path is the file of its map
    instance: str = ""                          # aws_eks_node_group with count or for_each: `[0]`, `["web"]`
    shadowed: list = field(default_factory=list)  # (file, ObjEntry) of the same key a merge() replaces with this one
    made_by: str = ""                           # an instance the evaluator told (count / for_each built by an
                                                # expression): how the block makes its instances; no text of its own

    @property
    def address(self) -> str:
        """The Terraform address of the group's own resource (aws_eks_node_group), with its instance key."""
        return (self.block.address if self.block is not None else "") + self.instance

    def size(self, key: str) -> Any:
        """min_size / max_size / desired_size as EKS runs the group: its literal where the root states it, the
        terraform-aws-modules/eks default (by the major its version pins) where nothing states it, else None."""
        if key in self.fields or self.source != "module" or self.block is None:
            return self.literal(key)
        major = _pinned_major(self.block)
        for row in FACTS["node_groups"]["terraform_module"]["module_sizes"] if major is not None else []:
            if major >= row["from"]:
                return row[self.flavour].get(key)
        return None

    def literal(self, key: str) -> Any:
        """The field's value where the root states it whole; None where any part of it is an expression (a list or
        map holding one placeholder is not a literal either)."""
        v = self.fields.get(key)
        return None if self.masked.has_token(v if isinstance(v, str) else str(v)) else v


@dataclass
class CasInventory:
    installs: list[CasInstall] = field(default_factory=list)
    groups: list[NodeGroup] = field(default_factory=list)
    iam: list[tuple[str, hclsrc.Block]] = field(default_factory=list)     # (path, module/resource block)
    eks_modules: list[tuple[str, hclsrc.Block]] = field(default_factory=list)
    vpc_modules: list[tuple[str, hclsrc.Block]] = field(default_factory=list)
    clusters: list[tuple[str, Any, Any]] = field(default_factory=list)    # eksctl (path, doc, obj)
    unread: list[tuple[str, int, str]] = field(default_factory=list)      # node groups built by expressions
    policies: list[tuple[str, hclsrc.Block]] = field(default_factory=list)  # hand-written CAS policies
    priorities: dict[int, list[str]] = field(default_factory=dict)  # priority expander: priority -> group regexes
    fargate: list[tuple[str, hclsrc.Block]] = field(default_factory=list)   # eks modules with fargate_profiles,
                                                                            # aws_eks_fargate_profile resources
    others: list[tuple[str, int, str]] = field(default_factory=list)      # eksctl ClusterConfigs of other clusters
    copies: dict[str, tuple[str, str, int]] = field(default_factory=dict)  # an install's file -> (the template a
                                                # script copies over it, the script, its line)
    ambiguous: bool = False     # several ClusterConfigs and Cluster Autoscaler names not exactly one of them
    eksctl_sas: list[tuple[str, Any, int, str, str]] = field(default_factory=list)  # eksctl iam.serviceAccounts of
                                                # Cluster Autoscaler: (path, doc, index, namespace, name)
    retired: list[tuple[str, int, str]] = field(default_factory=list)   # inputs the module's pinned major no
                                                # longer has (a v21 call's *_node_group_defaults): not read

    def owned(self, owns) -> "CasInventory":
        return CasInventory([i for i in self.installs if owns(i.path)], [g for g in self.groups if owns(g.path)],
                            [x for x in self.iam if owns(x[0])], [x for x in self.eks_modules if owns(x[0])],
                            [x for x in self.vpc_modules if owns(x[0])], [x for x in self.clusters if owns(x[0])],
                            [x for x in self.unread if owns(x[0])], [x for x in self.policies if owns(x[0])],
                            self.priorities, [x for x in self.fargate if owns(x[0])],
                            eksctl_sas=[x for x in self.eksctl_sas if owns(x[0])], copies=self.copies,
                            retired=[x for x in self.retired if owns(x[0])])

    @property
    def present(self) -> bool:
        return bool(self.installs)


_DISCOVERY = re.compile(r"k8s\.io/cluster-autoscaler/([^,\s\"']+)")


def named_clusters(inv: CasInventory) -> set[str]:
    """The cluster names Cluster Autoscaler's installs are given: the auto-discovery tag of a Deployment's flags,
    `autoDiscovery.clusterName` in chart values written in YAML."""
    return {n for i in inv.installs for n in install_clusters(i)}


def install_clusters(i: CasInstall) -> set[str]:
    """The cluster names one install is given (the auto-discovery tag of its flags, `autoDiscovery.clusterName`)."""
    out: set[str] = set()
    if i.kind in ("deployment", "kubectl", "script"):
        spec = (((i.obj or {}).get("spec") or {}).get("template") or {}).get("spec") or {}
        for c in spec.get("containers") or []:
            for a in list(c.get("command") or []) + list(c.get("args") or []):
                out |= {m for m in _DISCOVERY.findall(str(a)) if m != "enabled"}
    name = (yaml_values(i).get("autoDiscovery") or {}).get("clusterName") if i.obj is not None else None
    if isinstance(name, str) and name:
        out.add(name)
    return out


def one_cluster(inv: CasInventory) -> CasInventory:
    """A folder holding eksctl ClusterConfigs of several clusters (name + region): the root keeps the one Cluster
    Autoscaler is given (and its node groups, from every file of it); the others are named in `others`. When Cluster
    Autoscaler names none of them, or several, the root keeps none (`ambiguous`). Files of one cluster (the cluster in
    one, a node group added by `eksctl create nodegroup -f` in another) are that one cluster."""
    def ident(o) -> tuple[str, str]:
        meta = o.get("metadata") or {}
        return str(meta.get("name")), str(meta.get("region"))
    names = {ident(o)[0] for _, _, o in inv.clusters}
    if len({ident(o) for _, _, o in inv.clusters}) < 2:
        return inv          # one cluster (name + region) whatever the files: a ClusterConfig per `eksctl create` step
    wanted = named_clusters(inv) & names
    keep = [c for c in inv.clusters if ident(c[2])[0] in wanted] if len(wanted) == 1 else []
    if len({ident(c[2]) for c in keep}) != 1:
        keep = []
        inv.ambiguous = True
    kept_docs = {(p, d.start) for p, d, _ in keep}
    inv.others = [(p, d.first_line + 1, str((o.get("metadata") or {}).get("name"))) for p, d, o in inv.clusters
                  if (p, d.start) not in kept_docs]
    inv.groups = [g for g in inv.groups if g.source != "eksctl" or (g.path, g.doc.start) in kept_docs]
    inv.eksctl_sas = [x for x in inv.eksctl_sas if (x[0], x[1].start) in kept_docs]
    inv.clusters = keep
    return inv


def scan(repo: Repo) -> CasInventory:
    cached = repo.__dict__.get("_cas")
    if cached is not None:
        return cached
    inv = CasInventory()
    det = FACTS["detect"]
    from .inventory.sites import static_value
    generic = []            # helm_release blocks given their chart by their module's callers
    for p, b in repo.blocks("resource", "helm_release"):
        chart = b.attr("chart")
        named = chart.literal() if chart is not None else None
        if named is None and chart is not None:         # chart = local.cas_chart, var.chart_name: its stated value
            named = static_value(repo, posixpath.dirname(p), chart)
        if named is None and chart is not None and chart.kind == "string":   # a vendored chart folder
            named = re.sub(r"\$\{[^}]*\}", "", chart.source.strip().strip('"'))      # "${path.module}/charts/<name>"
        if named is None and chart is not None and chart.kind == "ref" and chart.name.startswith("var."):
            generic.append((p, b))
        if _is_chart(named):
            if _other_cloud([], _set_values(repo, p, b)) or _off(repo, p, b):
                continue
            ns = b.attr("namespace")
            inv.installs.append(CasInstall("terraform", p, hclsrc.line_of(repo.text(p), b.start), block=b,
                                           namespace=str(ns.literal()) if ns is not None and ns.literal() else "default",
                                           name=str(b.attr("name").literal() or det["chart"]) if b.attr("name") else det["chart"]))
    _terraform_deployments(repo, inv)
    _kubectl_installs(repo, inv)
    _script_installs(repo, inv)
    _helmfile_installs(repo, inv)
    for p, b, row in _module_installs(repo):
        ns = wrapper_input(repo, p, b, row["namespace"]) if row.get("namespace") else None
        inv.installs.append(CasInstall("module", p, hclsrc.line_of(repo.text(p), b.start), block=b, row=row,
                                       namespace=str(ns or row.get("namespace_default") or "kube-system")))
    _unknown_modules(repo)
    for p, b, row in _wrapper_installs(repo, generic):
        ns = wrapper_input(repo, p, b, row.get("namespace")) or row.get("fixed", {}).get("namespace")
        release = row.get("fixed", {}).get("release")
        for path in row.get("release") or []:
            release = release or wrapper_input(repo, p, b, path)
        inv.installs.append(CasInstall("wrapper", p, hclsrc.line_of(repo.text(p), b.start), block=b, row=row,
                                       namespace=str(ns) if ns else "default", name=str(release or det["chart"])))
    for p, b in repo.blocks("module", None, "terraform-aws-modules/"):      # every source below names it
        src = str((b.attr("source").literal() if b.attr("source") is not None else "") or "")
        if re.search(det["eks_module_source"], src):
            inv.eks_modules.append((p, b))
            _module_groups(repo, p, b, inv)
            fp = b.attr("fargate_profiles")
            if fp is not None and fp.kind == "object" and fp.entries:
                inv.fargate.append((p, b))
        elif det["vpc_module_source"] in src:
            inv.vpc_modules.append((p, b))
        elif re.search(det["iam_module_source"], src) and b.attr(det["iam_module_flag"]) is not None \
                and b.attr(det["iam_module_flag"]).literal() is True:
            inv.iam.append((p, b))
    for p, b in repo.blocks("resource", "aws_eks_node_group"):
        _resource_group(repo, p, b, inv)
    inv.fargate += list(repo.blocks("resource", "aws_eks_fargate_profile"))
    for p in repo.tf_containing(det["iam_action"]):
        f = repo.hcl(p)
        for b in (f.blocks if f else []):
            if b.type in ("resource", "data") and det["iam_action"] in repo.text(p)[b.start:b.end] and \
                    (b.labels[:1] in (["aws_iam_policy"], ["aws_iam_role_policy"], ["aws_iam_policy_document"])):
                inv.policies.append((p, b))
    # (an eksctl ClusterConfig is read where `kind: ClusterConfig` is written: _EKSCTL)
    named = {*repo.containing(_CAS_TEXT, _CAS_FILES), *repo.containing_both("kind", "ClusterConfig", _CAS_FILES)}
    for p, sf in repo.files.items():
        if p not in named:
            continue
        template = p.endswith((".yaml.tmpl", ".yaml.tftpl", ".yml.tmpl", ".yaml.tpl"))
        if not p.endswith((".yaml", ".yml")) and posixpath.basename(p) != "Kustomization" and not template:
            continue
        if _CAS_TEXT in sf.text and (not template or "kind: Deployment" in sf.text):
            _yaml_installs(repo, p, sf.text, inv)
        if "ClusterConfig" in sf.text and _EKSCTL.search(sf.text):
            _eksctl(repo, p, sf.text, inv)
    _templates(repo, inv)
    _left_out(repo, inv)
    inv.priorities = _priorities(repo, inv)
    versions = {}       # Terraform clusters' versions by folder (an eksctl group has its own ClusterConfig's)
    for p, b in inv.eks_modules:
        e = b.attr("kubernetes_version") or b.attr("cluster_version")
        versions[posixpath.dirname(p)] = _tf_version(repo, p, e)
    for p, b in repo.blocks("resource", "aws_eks_cluster"):
        versions[posixpath.dirname(p)] = _tf_version(repo, p, b.attr("version"))
    for g in inv.groups:
        if g.source == "module":          # its map may be written in a tfvars below the module
            g.cluster_version = _tf_version(repo, _block_file(repo, g.block) or g.path,
                                            g.block.attr("kubernetes_version") or g.block.attr("cluster_version"))
        elif g.source == "resource":
            g.cluster_version = versions.get(posixpath.dirname(g.home or g.path))
    repo.__dict__["_cas"] = inv
    return inv


def _left_out(repo: Repo, inv: CasInventory) -> None:
    """Cluster Autoscaler's manifests below Flux Kustomizations' paths that none of them applies (their folder left
    out of, or commented out of, the kustomization.yaml that path builds): said, not planned - the cluster does not
    run them."""
    from .inventory.kustomizations import commented_out, left_out, unused_example
    keep = []
    for i in inv.installs:
        example = unused_example(repo, i.path) if not i.path.endswith((".tf", ".tofu", ".hcl")) else None
        if example is not None:
            repo.findings.append(Finding(
                "MIG-CAS-050", "info", i.path, i.line,
                f"{i.address} installs Cluster Autoscaler in {example}/, an examples or test folder that nothing "
                "outside it applies (no Argo CD Application, Flux path or kustomization): no cluster's, not planned",
                "apply it from a cluster's folder (or list it in that cluster's kustomization) if a cluster runs it"))
            continue
        why = left_out(repo, i.path) if i.kind in ("flux", "argocd", "deployment") else None
        off = commented_out(repo, i.path) if why is None and not i.path.endswith((".tf", ".hcl")) else None
        if off is not None:
            repo.findings.append(Finding(
                "MIG-CAS-050", "info", i.path, i.line,
                f"{i.address} installs Cluster Autoscaler, but its folder is commented out of the resources of "
                f"{off[0]} (line {off[1]}), which does not build it otherwise: not applied, not planned",
                f"uncomment it in {off[0]} first if this cluster should run Cluster Autoscaler"))
            continue
        if why is None:
            keep.append(i)
            continue
        repo.findings.append(Finding(
            "MIG-CAS-050", "info", i.path, i.line,
            f"{i.address} installs Cluster Autoscaler, but the Flux Kustomization {why[0]} applies "
            f"{why[1] or '.'}, whose kustomization.yaml does not build {i.path}: not applied, not planned",
            f"list it in {why[1] or '.'}'s kustomization.yaml first if this cluster should run Cluster Autoscaler"))
    inv.installs = keep


def nested(b: hclsrc.Block, *types: str) -> hclsrc.Block | None:
    """The first block down a path of nested block types (`spec`, `template`, `spec`), or None."""
    for t in types:
        b = next(iter(b.sub(t)), None) if b is not None else None
    return b


def object_meta(repo: Repo, d: str, e: hclsrc.Expr | None, key: str) -> str | None:
    """A Kubernetes object's metadata value written in Terraform: a literal, a variable or local the root states, or a
    reference to another object of the module (`kubernetes_namespace.x.metadata[0].name`,
    `kubernetes_service_account.x.metadata.0.namespace`) read from that object's own metadata."""
    from .inventory.sites import static_value
    if e is None:
        return None
    v = e.literal()
    if v is None:
        v = static_value(repo, d, e)
    if v is None and e.kind == "ref":
        m = re.match(r"^(kubernetes_\w+)\.([\w-]+)\.metadata(?:\[0\]|\.0)\.(name|namespace)$", e.source.strip())
        if m:
            for p in repo.tf_in_dir(d):
                f = repo.hcl(p)
                for b in (f.resources(m.group(1)) if f else []):
                    if b.labels[1:2] == [m.group(2)]:
                        return object_meta(repo, d, (nested(b, "metadata") or b).attr(m.group(3)), m.group(3))
    return str(v) if isinstance(v, (str, int)) else None


def _terraform_deployments(repo: Repo, inv: CasInventory) -> None:
    """Cluster Autoscaler as a Deployment written with the kubernetes provider: a container running its image."""
    from .inventory.sites import static_value
    image = re.compile(FACTS["detect"]["image"])
    for rtype in FACTS["detect"]["terraform_objects"]["deployment"]:
        for p, b in repo.blocks("resource", rtype):
            pod = nested(b, "spec", "template", "spec")
            d = posixpath.dirname(p)
            seen = False
            flags: list = []
            for c in (pod.sub("container") if pod is not None else []):
                for e in (c.attr("command"), c.attr("args")):
                    flags += [x.literal() for x in (e.items if e is not None and e.kind == "tuple" else [])]
                e = c.attr("image")
                v = e.literal() if e is not None else None
                if v is None and e is not None:
                    v = static_value(repo, d, e)
                    if v is None and e.kind == "string":            # "registry/cluster-autoscaler:v${var.version}"
                        v = "".join("" if interp else text for interp, text in e.parts)
                seen = seen or (isinstance(v, str) and bool(image.search(v)))
            if not seen or _other_cloud(flags) or _off(repo, p, b):
                continue
            meta = nested(b, "metadata")
            ns = object_meta(repo, d, meta.attr("namespace"), "namespace") if meta is not None else None
            name = object_meta(repo, d, meta.attr("name"), "name") if meta is not None else None
            inv.installs.append(CasInstall("tfdeployment", p, hclsrc.line_of(repo.text(p), b.start), block=b,
                                           namespace=ns or "default", name=name or FACTS["detect"]["chart"]))


def kubectl_objects(repo: Repo, p: str, b: hclsrc.Block) -> list[tuple[Any, Any]]:
    """(document span, object) of what a kubectl_manifest's yaml_body holds as written: the YAML documents of a
    heredoc, the one object of `yamlencode({...})` / `jsonencode({...})` (no span: it is edited as HCL); [] for any
    other body."""
    from .inventory.documents import _dedent
    body = b.attr("yaml_body")
    obj = hclsrc.encoded_object(body)
    if obj is not None:
        return [(None, hcl_to_obj(obj, Masked(text="")))]
    if body is None or body.kind != "heredoc":
        return []
    h, text = body.heredoc, repo.text(p)
    dedented = _dedent(text[h.body_start:h.body_end], h.indent if h.trim else 0)
    return [(doc, o) for doc, _, o in
            _parse_yaml_docs(repo, p, dedented, h.body_start, hclsrc.line_of(text, h.body_start) - 1, p)]


def _kubectl_installs(repo: Repo, inv: CasInventory) -> None:
    """Cluster Autoscaler's Deployment written inline in a kubectl_manifest: a YAML heredoc, or an HCL object
    encoded with yamlencode() / jsonencode()."""
    image = re.compile(FACTS["detect"]["image"])
    for p, b in repo.blocks("resource", "kubectl_manifest"):
        body = b.attr("yaml_body")
        if body is None or not _CAS.search(body.source):
            continue
        for doc, obj in kubectl_objects(repo, p, b):
            if not isinstance(obj, dict) or obj.get("kind") != "Deployment":
                continue
            spec = ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}
            cas = [c for c in spec.get("containers") or [] if isinstance(c, dict) and image.search(str(c.get("image", "")))]
            if cas and not _other_cloud([a for c in cas for a in list(c.get("command") or []) + list(c.get("args") or [])]) \
                    and not _off(repo, p, b):
                meta = obj.get("metadata") or {}
                inv.installs.append(CasInstall("kubectl", p, hclsrc.line_of(repo.text(p), b.start), block=b, obj=obj,
                                               doc=doc, namespace=str(meta.get("namespace", "kube-system")),
                                               name=str(meta.get("name", "cluster-autoscaler"))))


def _script_installs(repo: Repo, inv: CasInventory) -> None:
    """Cluster Autoscaler installed by a script of the repository, the ways the guides and CI pipelines do it: its
    chart by the helm CLI (`helm upgrade --install cluster-autoscaler autoscaler/cluster-autoscaler --set ...`: its
    release, namespace and values from `--set` and `-f` files), the example manifest's URL applied with kubectl, or a
    Deployment the script writes from a heredoc before applying it."""
    from .sources.shell import helm_calls, kubectl_applies, written_files
    for p, text, at in _scripts(repo):
        for call in helm_calls(p, text):
            call.line += at
            if call.chart.rstrip("/").split("/")[-1] != FACTS["detect"]["chart"]:
                continue
            values: dict = {}
            for f in call.values:
                target = posixpath.normpath(posixpath.join(posixpath.dirname(p), f))
                loaded = _load_values(repo, target)
                values = _merged(values, loaded)
            for k, v in call.sets.items():
                _set_path(values, k, v)
            if _other_cloud([], values):
                continue
            inv.installs.append(CasInstall("script", p, call.line, obj=values, namespace=call.namespace or "default",
                                           name=call.release or FACTS["detect"]["chart"], chart=call.chart))
        image = re.compile(FACTS["detect"]["image"])
        for line, target, body in written_files(text):      # manifests the script writes, then applies
            line += at
            for obj in _shell_documents(body):
                if not isinstance(obj, dict) or obj.get("kind") != "Deployment":
                    continue
                spec = ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}
                cas = [c for c in spec.get("containers") or [] if isinstance(c, dict) and image.search(str(c.get("image", "")))]
                flags = [a for c in cas for a in list(c.get("command") or []) + list(c.get("args") or [])]
                if cas and not _other_cloud(flags):
                    meta = obj.get("metadata") or {}
                    inv.installs.append(CasInstall("script", p, line, obj=obj, namespace=str(meta.get("namespace",
                                                   "default")), name=str(meta.get("name", "cluster-autoscaler")),
                                                   source=("written", target)))
        manifest = FACTS["detect"]["example_manifest"]
        for line, target in kubectl_applies(text):
            line += at
            m = re.search(manifest["url"], target)
            if m and m.group("cloud") == FACTS["detect"]["cloud_provider"]:
                inv.installs.append(CasInstall("script", p, line, obj={}, namespace=manifest["namespace"],
                                               name=manifest["name"], source=("manifest", target)))


def _set_path(values: dict, name: str, value: Any) -> None:
    """A helm `--set a.b\\.c=v` (or a helmfile `set` entry) written into values: `a` -> `b.c` -> v."""
    node = values
    keys = [x.replace("\\.", ".") for x in re.split(r"(?<!\\)\.", name)]
    for part in keys[:-1]:
        node = node.setdefault(part, {}) if isinstance(node.get(part, {}), dict) else {}
    node[keys[-1]] = value


def _helmfile_installs(repo: Repo, inv: CasInventory) -> None:
    """Cluster Autoscaler as a release of a helmfile (`chart: autoscaler/cluster-autoscaler` through a `repositories:`
    entry, an OCI or local chart of that name): its values from the release's inline maps, its values files beside
    the helmfile and its `set` entries, in helmfile's order; a release with `installed: false` is none."""
    from .inventory.helmfile import helmfiles
    chart_name = FACTS["detect"]["chart"]
    for p in helmfiles(repo):
        sf = repo.files[p]
        if chart_name not in sf.text or "releases" not in sf.text:
            continue
        d = posixpath.dirname(p)
        for doc, m, obj in _parse_yaml_docs(repo, p, sf.text, 0, 0, p, gotmpl=True):
            releases = obj.get("releases") if isinstance(obj, dict) else None
            for i, rel in enumerate(releases if isinstance(releases, list) else []):
                if not isinstance(rel, dict) or \
                        m.unmask(str(rel.get("chart") or "")).rstrip("/").split("/")[-1] != chart_name:
                    continue
                line = doc.first_line + releases.lc.item(i)[0] + 1
                if rel.get("installed") is False:
                    repo.findings.append(Finding(
                        "MIG-CAS-050", "info", p, line, f"helmfile release {rel.get('name')} of Cluster Autoscaler is "
                        "switched off (installed: false): not planned"))
                    continue
                values: dict = {}
                for item in rel.get("values") or []:
                    if isinstance(item, dict):
                        values = _merged(values, item)
                    elif isinstance(item, str) and "{{" not in m.unmask(item) and "__MIG" not in item and \
                            not item.endswith(".gotmpl"):          # a template's values are helmfile's to render
                        values = _merged(values, _load_values(repo, posixpath.normpath(posixpath.join(d, item))))
                for s in rel.get("set") or []:
                    if isinstance(s, dict) and isinstance(s.get("name"), str):
                        _set_path(values, s["name"], s.get("value"))
                if _other_cloud([], values):
                    continue
                inv.installs.append(CasInstall("helmfile", p, line, obj=obj, doc=doc, source=("releases", i),
                                               namespace=str(rel.get("namespace") or "default"),
                                               name=str(rel.get("name") or chart_name), file_values=values))


def _templates(repo: Repo, inv: CasInventory) -> None:
    """A file a script of the repository copies over another (`cp templates/x/release.yaml x/release.yaml`, then
    fills in its placeholders) is a template, not an install of its own: it is dropped from the installs, and the copy
    is remembered on its destination (running the script again would put Cluster Autoscaler back there)."""
    from .sources.shell import copied_files
    files = {i.path for i in inv.installs}
    if not files:
        return
    for p in repo.containing("cp ", (".sh",)):
        sf = repo.files[p]
        for line, src, dst in copied_files(sf.text):
            src, dst = (posixpath.normpath(x.removeprefix("./")) for x in (src, dst))
            for base in ("", posixpath.dirname(p)):         # from the repository's root, or the script's folder
                s, d = posixpath.normpath(posixpath.join(base, src)), posixpath.normpath(posixpath.join(base, dst))
                if s in files and d in repo.files and s != d:
                    inv.copies[d] = (s, p, line)
                    break
    inv.installs = [i for i in inv.installs if i.path not in {s for s, _, _ in inv.copies.values()}]


def _scripts(repo: Repo):
    """(file, shell text, lines before it in the file) of the repository's scripts that name Cluster Autoscaler: `.sh`
    files whole, and the `run:` steps of CI workflows (GitHub Actions), each step's text where the file holds it."""
    for p in repo.containing(_CAS_TEXT, _CAS_FILES):
        sf = repo.files[p]
        if p.endswith(".sh"):
            yield p, sf.text, 0
        elif re.search(FACTS["detect"]["ci_workflows"], p):
            yield from _run_steps(p, sf.text)


def _run_steps(p: str, text: str):
    try:
        doc = yamlsrc.load(text)
    except Exception:       # noqa: BLE001 - a workflow that does not parse holds no step migrator reads
        return
    jobs = doc.get("jobs") if isinstance(doc, dict) else None
    for job in (jobs or {}).values() if isinstance(jobs, dict) else []:
        for step in (job.get("steps") or []) if isinstance(job, dict) else []:
            run = step.get("run") if isinstance(step, dict) else None
            if isinstance(run, str) and _CAS.search(run):
                line = step.lc.value("run")[0]          # 0-based line of `run:` (a block scalar starts below it)
                block = text.splitlines()[line].rstrip().endswith(("|", ">", "|-", ">-", "|+", ">+"))
                yield p, run, line + (1 if block else 0)


def _shell_documents(body: str) -> list:
    """The YAML documents of a heredoc a script writes, its `$VAR`s masked; one that does not parse is skipped (a
    script's text is not migrator's to report)."""
    from .sources.templates import TemplateError, mask
    out = []
    for d in yamlsrc.split_documents(body):
        if not _CAS.search(d.text):
            continue
        try:
            out.append(yamlsrc.load(mask(re.sub(r"\$([A-Za-z_][A-Za-z0-9_]*)", r"${\1}", d.text)).text))
        except (TemplateError, yamlsrc.YamlParseError):
            continue
    return out


def _load_values(repo: Repo, path: str) -> dict:
    """A values file of the repository as plain YAML ({} when it is not there or not a map)."""
    if path not in repo.files:
        return {}
    try:
        got = yamlsrc.load(repo.text(path))
    except yamlsrc.YamlParseError:      # a broken values file is not Cluster Autoscaler's to report
        return {}
    return got if isinstance(got, dict) else {}


def _module_installs(repo: Repo):
    """(file, module block, its row of knowledge/cas.yaml `modules`) of every add-on module call that installs Cluster
    Autoscaler: its switch on as written or as the root states it (a variable's default or tfvars), or left at an
    on default."""
    from .sources.hcl import at_path
    from .inventory.terragrunt import module_block, units
    calls = list(repo.blocks("module", None, "autoscaler"))     # the switch or the source names it
    for u in units(repo):               # a Terragrunt unit calling one: its inputs as the call's arguments
        if u.remote and any(re.search(r["source"], u.remote) for r in FACTS["modules"]):
            b = module_block(repo, u, FACTS["detect"]["chart"].replace("-", "_"))
            calls += [(u.path, b)] if b is not None else []
    for p, b in calls:
        src = b.attr("source")
        source = str(src.literal() or "") if src is not None else ""
        row = next((r for r in FACTS["modules"] if re.search(r["source"], source)), None)
        if row is None:
            continue
        switch = at_path(b, row["switch"])
        on = row["default"] if switch is None else wrapper_input(repo, p, b, row["switch"])
        if on is True and not _off(repo, p, b):       # the call itself may be switched off (count 0)
            yield p, b, row


def _unknown_modules(repo: Repo) -> None:
    """A call of a module outside the repository that no row of knowledge/cas.yaml reads, named for Cluster Autoscaler
    (`github.com/x/terraform-modules//Cluster-AutoScaler`): it may install it with inputs migrator does not know, so
    the move is not planned from it; said (MIG-CAS-055), never guessed."""
    from .inventory.terraform import switched_off
    det = FACTS["detect"]
    known = [r["source"] for r in FACTS["modules"] + FACTS["wrappers"]] + [det["iam_module_source"]]
    for p, b in repo.blocks("module", None, "autoscaler"):
        src = b.attr("source")
        source = str(src.literal() or "") if src is not None else ""
        last = source.split("?")[0].rstrip("/").rsplit("/", 1)[-1]
        if not source or source.startswith(("./", "../")) or any(re.search(k, source) for k in known) or \
                not re.search(det["named_module"], last) or re.search(det["named_module_iam"], last):
            continue
        line = hclsrc.line_of(repo.text(p), b.start)
        if switched_off(repo, p, b, line):
            continue
        repo.findings.append(Finding(
            "MIG-CAS-055", "warning", p, line,
            f"{b.address} calls {source}, a module outside the repository named for Cluster Autoscaler that migrator "
            "does not know by its inputs: if it installs Cluster Autoscaler, the move to Karpenter is not planned from "
            "it (no NodePools, no cutover)",
            "plan the move with docs/from-cluster-autoscaler.md by hand, or install Cluster Autoscaler through a shape "
            "migrator reads (a helm_release of its chart, a known module), then run migrator again"))


def _is_chart(named) -> bool:
    """A chart reference (a name, `repo/name`, a URL or a vendored folder) that is Cluster Autoscaler's chart."""
    return isinstance(named, str) and named.rstrip("/").split("/")[-1] == FACTS["detect"]["chart"]


def wrapper_input(repo: Repo, p: str, b: hclsrc.Block, path: str | None) -> Any:
    """The value a module call states for an input path (`app.chart`: the key `chart` of its object input `app`)."""
    from .inventory.sites import static_value
    e = b.attr(path.split(".")[0]) if path else None
    for key in (path or "").split(".")[1:]:
        e = next((x.value for x in e.entries if x.key == key), None) if e is not None and e.kind == "object" else None
    return static_value(repo, posixpath.dirname(p), e) if e is not None else None


def _wrapper_installs(repo: Repo, generic: list[tuple[str, hclsrc.Block]]):
    """(file, module call, how its module takes a chart) of every call that gives a generic Helm release module
    Cluster Autoscaler's chart: a registry module of knowledge/cas.yaml `wrappers` (called by a `module` block, or by
    a Terragrunt unit: its inputs read as the call's arguments), or a module of the repository whose helm_release
    takes its chart from a variable (`generic`: those helm_release blocks); switched off calls skipped."""
    sources = re.compile("|".join(f"(?:{r['source']})" for r in FACTS["wrappers"]))
    mentions = [r["mention"] for r in FACTS["wrappers"]]
    for p in [p for p in repo.tf_containing("module")
              if any(m in repo.text(p) for m in mentions) and sources.search(repo.text(p))]:
        f = repo.hcl(p)
        for b in (f.blocks if f else []):
            src = b.attr("source") if b.type == "module" else None
            row = next((r for r in FACTS["wrappers"] if re.search(r["source"], str(src.literal() or ""))), None) \
                if src is not None else None
            if row is not None and _is_chart(wrapper_input(repo, p, b, row["chart"])) and \
                    not _wrapper_off(repo, p, b, row):
                yield p, b, row
    from .inventory.terragrunt import module_block, units
    for u in units(repo):                   # a Terragrunt unit calling one (`tfr:///terraform-module/release/helm`)
        row = next((r for r in FACTS["wrappers"] if u.remote and re.search(r["source"], u.remote)), None)
        b = module_block(repo, u, FACTS["detect"]["chart"].replace("-", "_")) if row is not None else None
        if b is not None and _is_chart(wrapper_input(repo, u.path, b, row["chart"])) and \
                not _wrapper_off(repo, u.path, b, row):
            yield u.path, b, row
    for mp, release in generic:
        row = _local_wrapper(repo, mp, release)
        for p, b in repo.callers(posixpath.dirname(mp)):
            if _is_chart(wrapper_input(repo, p, b, row["chart"])) and not _wrapper_off(repo, p, b, row):
                yield p, b, row


def _wrapper_off(repo: Repo, p: str, b: hclsrc.Block, row: dict) -> bool:
    on = wrapper_input(repo, p, b, row.get("switch")) if row.get("switch") and b.attr(row["switch"].split(".")[0]) \
        is not None else row.get("default", True)
    if on in (False, 0, "0", "false") or _off(repo, p, b):
        return True
    return False


def _local_wrapper(repo: Repo, p: str, release: hclsrc.Block) -> dict:
    """How a module of the repository takes a chart, read from its helm_release: the variables that give its chart,
    release name and namespace, a list of `set` entries (`dynamic "set"` over one, or `set = var.<x>`: with a `type`
    in each when the content reads one) and its YAML values (`values = var.<x>`, or through concat())."""
    from .inventory.sites import static_value

    def var(e) -> str | None:
        return e.name[4:] if e is not None and e.kind == "ref" and e.name.startswith("var.") and \
            e.name.count(".") == 1 else None
    row = {"name": f"the module {posixpath.dirname(p) or '.'}", "chart": var(release.attr("chart")),
           "release": [x for x in [var(release.attr("name"))] if x], "namespace": var(release.attr("namespace")),
           "set": var(release.attr("set")), "set_type": False, "local": True,
           "values": next((var(x) for x in hclsrc.list_items(release.attr("values")) if var(x)), None),
           "fixed": {k: v for k in ("namespace", "name")          # as written, or the variable's default
                     for v in [static_value(repo, posixpath.dirname(p), release.attr(k))] if isinstance(v, str)}}
    row["fixed"]["release"] = row["fixed"].pop("name", None)
    for d in release.sub("dynamic"):
        if d.labels == ["set"] and var(d.attr("for_each")):
            row["set"] = var(d.attr("for_each"))
            content = next(iter(d.sub("content")), None)
            row["set_type"] = content is not None and content.attr("type") is not None
    return row


def yaml_values(i: CasInstall) -> dict:
    """Cluster Autoscaler's chart values written in YAML: Flux spec.values, an Argo CD source's helm.valuesObject, a
    kustomize helmCharts entry's valuesInline ({} for other installs)."""
    if i.obj is None:
        return {}
    if i.kind == "flux":
        inline = (i.obj.get("spec") or {}).get("values") or {}
        return _merged(i.file_values, inline) if i.file_values else inline
    if i.kind == "kustomize":
        return (value_at(i.obj, i.source) or {}).get("valuesInline") or {}
    if i.kind == "argocd":
        helm = (value_at(i.obj, ("spec",) + i.source) or {}).get("helm") or {}
        inline = helm.get("valuesObject") or {}
        if helm.get("valuesObject") is None and isinstance(helm.get("values"), str):
            try:                                        # `values: |` YAML text, read only without a valuesObject
                text = yamlsrc.load(helm["values"])     # (Argo CD takes one or the other, valuesObject first)
            except yamlsrc.YamlParseError:
                text = None
            inline = text if isinstance(text, dict) else inline
        merged = _merged(i.file_values, inline) if i.file_values else inline
        return _merged(merged, _parameters(helm.get("parameters")))
    if i.kind == "script":
        return i.obj
    if i.kind == "helmfile":
        return i.file_values
    return {}


def _parameters(params) -> dict:
    """An Argo CD source's helm.parameters (helm --set, over every values source) as nested values; a name with a
    list index or an escaped dot is not read."""
    out: dict = {}
    for p in params if isinstance(params, list) else []:
        name = p.get("name") if isinstance(p, dict) else None
        if not isinstance(name, str) or not name or "[" in name or "\\" in name:
            continue
        *keys, last = name.split(".")
        at = out
        for k in keys:
            at = at.setdefault(k, {}) if isinstance(at.get(k, {}), dict) else None
            if at is None:
                break
        if at is not None:
            at[last] = p.get("value")
    return out


def _merged(base: dict, over: dict) -> dict:
    out = dict(base)
    for k, v in over.items():
        out[k] = _merged(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def terraform_readers(repo: Repo, path: str) -> list[tuple[str, hclsrc.Block]]:
    """The Terraform blocks that apply a manifest file: a top-level block naming it in file()/templatefile() or a
    kubectl_path_documents `pattern` that matches it, and the blocks of the same module reading such a data source
    (a kubectl_manifest with count/for_each over its documents)."""
    from .tfgraph import references
    out: list[tuple[str, hclsrc.Block]] = []
    for p in sorted(set(repo.tf_containing(posixpath.basename(path).split(".")[0])) | set(repo.tf_containing("pattern"))):
        f = repo.hcl(p)
        for b in (f.blocks if f else []):
            if b.type in ("resource", "data") and len(b.labels) > 1 and path in read_files(repo, p, b)[0]:
                out.append((p, b))
    for p0, b0 in [x for x in out if x[1].type == "data"]:
        addr = f"data.{'.'.join(b0.labels)}"
        for p in repo.tf_in_dir(posixpath.dirname(p0)):
            f = repo.hcl(p)
            out += [(p, b) for b in (f.blocks if f else []) if b.type == "resource" and (p, b) not in out
                    and addr in references(repo.text(p)[b.body_start:b.body_end], {addr})]
    return out


def read_files(repo: Repo, p: str, b: hclsrc.Block) -> tuple[set[str], bool]:
    """The repository files a block reads (file()/templatefile() targets, the files its `pattern` glob matches), and
    whether it names any of them directly (a file() fails when its file is gone; a glob does not)."""
    from fnmatch import fnmatchcase
    from .placement import file_calls
    direct = {t for a in b.attributes.values() for c in file_calls(a.expr) if c.items
              for t in [repo.resolve_file_arg(p, c.items[0])] if t}
    out = set(direct)
    pat = b.attr("pattern")
    if pat is not None and pat.kind == "string":
        raw = re.sub(r"\$\{path\.module\}", posixpath.dirname(p) or ".",
                     "".join(t for _, t in pat.parts) if pat.parts else str(pat.value))
        if "${" not in raw:
            glob = posixpath.normpath(raw)
            fixed = re.split(r"[*?\[]", glob, maxsplit=1)[0]        # the part before any wildcard: few files match
            out |= {f for f in repo.with_prefix(fixed) if fnmatchcase(f, glob)}
    return out, bool(direct)


def _flux_values_from(repo: Repo, p: str, obj: dict) -> dict:
    """A HelmRelease's `valuesFrom` ConfigMaps written in this repository, merged in order (Flux merges
    spec.values over them): a ConfigMap manifest of that name, or a kustomize configMapGenerator of that name
    whose file gives the key (`values.yaml` unless `valuesKey` says otherwise)."""
    out: dict = {}
    for ref in ((obj.get("spec") or {}).get("valuesFrom") or []):
        if not isinstance(ref, dict) or ref.get("kind") != "ConfigMap" or not ref.get("name"):
            continue
        name, key = str(ref["name"]), str(ref.get("valuesKey") or "values.yaml")
        text = None
        for q in repo.yaml_containing(name):
            sf = repo.files[q]
            try:
                docs = [yamlsrc.load(d.text) for d in yamlsrc.split_documents(sf.text) if d.text.strip()]
            except yamlsrc.YamlParseError:
                continue
            for d in docs:
                if not isinstance(d, dict):
                    continue
                if d.get("kind") == "ConfigMap" and (d.get("metadata") or {}).get("name") == name:
                    text = (d.get("data") or {}).get(key)
                for gen in d.get("configMapGenerator") or [] if isinstance(d.get("configMapGenerator"), list) else []:
                    if isinstance(gen, dict) and gen.get("name") == name:
                        for f in gen.get("files") or []:
                            k, _, rel = str(f).partition("=") if "=" in str(f) else (posixpath.basename(str(f)), "", str(f))
                            target = posixpath.normpath(posixpath.join(posixpath.dirname(q), rel))
                            if k == key and target in repo.files:
                                text = repo.text(target)
            if text is not None:
                break
        try:
            got = yamlsrc.load(text) if isinstance(text, str) else None
        except yamlsrc.YamlParseError:
            got = None
        if isinstance(got, dict):
            out = _merged(out, got)
    return out


def argocd_value_paths(repo: Repo, spec: dict, src: dict) -> list[str]:
    """The files of this repository a multi-source Application's chart reads its values from (`$<ref>/<path>` of a
    `ref:` source), in order."""
    refs = {str(x["ref"]) for x in spec.get("sources") or [] if isinstance(x, dict) and x.get("ref")}
    out = []
    for f in ((src.get("helm") or {}).get("valueFiles") or []):
        m = re.match(r"^\$([\w-]+)/(.+)$", str(f))
        if m and m.group(1) in refs and m.group(2) in repo.files:
            out.append(m.group(2))
    return out


def _argocd_value_files(repo: Repo, spec: dict, src: dict) -> dict:
    """The values those files hold, merged in order."""
    out: dict = {}
    for path in argocd_value_paths(repo, spec, src):
        try:
            got = yamlsrc.load(repo.text(path))
        except yamlsrc.YamlParseError:
            continue
        if isinstance(got, dict):
            out = _merged(out, got)
    return out


def _priority_map(raw: Any) -> dict[int, list[str]]:
    """The expander's priorities: a map, or the YAML text of one (ConfigMap data, a values string)."""
    if isinstance(raw, str):
        try:
            raw = yamlsrc.load(raw)
        except yamlsrc.YamlParseError:
            return {}
    out: dict[int, list[str]] = {}
    for k, v in (raw.items() if isinstance(raw, dict) else []):
        try:
            out[int(str(k).strip('"'))] = [str(x) for x in (v if isinstance(v, list) else [v])]
        except ValueError:
            continue
    return out


def _priorities(repo: Repo, inv: CasInventory) -> dict[int, list[str]]:
    pe = FACTS["priority_expander"]
    for i in inv.installs:
        if i.obj is not None and i.kind in ("flux", "argocd", "kustomize"):
            got = _priority_map(yaml_values(i).get(pe["values_key"]))
            if got:
                return got
        if i.block is not None:
            vals = i.block.attr("values")
            for item in hclsrc.list_items(vals):
                obj = hclsrc.encoded_object(item)
                if obj is not None:
                    for e in obj.entries:
                        if e.key == pe["values_key"]:
                            got = _priority_map(hcl_to_obj(e.value, Masked(text="")))
                            if got:
                                return got
    for p in repo.yaml_containing(pe["configmap"]):
        for _, _, obj in _parse_yaml_docs(repo, p, repo.text(p), 0, 0, p, only=re.compile(pe["configmap"])):
            if isinstance(obj, dict) and obj.get("kind") == "ConfigMap" and \
                    (obj.get("metadata") or {}).get("name") == pe["configmap"]:
                got = _priority_map((obj.get("data") or {}).get("priorities"))
                if got:
                    return got
    return {}


def _off(repo: Repo, p: str, b: hclsrc.Block) -> bool:
    """A Terraform block of Cluster Autoscaler that never exists (count 0, an empty for_each, its module switched off
    in every call): said, not planned."""
    from .inventory.terraform import switched_off
    line = hclsrc.line_of(repo.text(p), b.start)
    if not switched_off(repo, p, b, line):
        return False
    repo.findings.append(Finding("MIG-CAS-050", "info", p, line,
                                 f"{b.address} installs Cluster Autoscaler, but it is switched off (count 0 or an "
                                 "empty for_each, of its own or of every call of its module): not planned",
                                 "switch it on first if this cluster should run Cluster Autoscaler"))
    return True


def set_entries(b: hclsrc.Block) -> list[tuple[hclsrc.Expr, hclsrc.Expr | None]]:
    """(name, value) of a helm_release's `set` entries as written: `set { name, value }` blocks (helm provider 2) or
    the objects of a `set = [...]` list (provider 3, and generic modules' `set` inputs)."""
    out = [(s.attr("name"), s.attr("value")) for s in b.sub("set") if s.attr("name") is not None]
    lst = b.attr("set")
    for item in (lst.items if lst is not None and lst.kind == "tuple" else []):
        kv = {e.key: e.value for e in item.entries} if item.kind == "object" else {}
        if "name" in kv:
            out.append((kv["name"], kv.get("value")))
    return out


_CONSTRAINT = re.compile(r"(>=|~>|=|>)?\s*v?(\d+)")


def helm_sets_are_lists(repo: Repo, d: str) -> bool:
    """Whether a module's helm provider is 3.x, whose `set` is a list attribute (a `set {}` block is an error there):
    the version its .terraform.lock.hcl pins, else the lowest major its required_providers constraint allows."""
    lock = posixpath.join(d, ".terraform.lock.hcl") if d not in ("", ".") else ".terraform.lock.hcl"
    m = re.search(r'provider\s+"registry\.(?:terraform|opentofu)\.org/hashicorp/helm"\s*\{\s*version\s*=\s*"(\d+)',
                  repo.text(lock)) if lock in repo.files else None
    if m:
        return int(m.group(1)) >= 3
    for p in repo.tf_in_dir("" if d == "." else d):
        for req in re.finditer(r'\bhelm\s*=\s*\{[^}]*?version\s*=\s*"([^"]+)"', repo.text(p)):
            lows = [int(mm.group(2)) for part in req.group(1).split(",")
                    for mm in [_CONSTRAINT.match(part.strip())] if mm and not part.strip().startswith(("<", "!"))]
            if lows:
                return min(lows) >= 3
    return False


def _set_values(repo: Repo, p: str, b: hclsrc.Block) -> dict:
    """The `set` blocks of a helm_release whose values the module states (a literal, a variable's value) as a flat
    name -> value map (what decides the cloud)."""
    from .inventory.sites import static_value
    out = {}
    for n, v in set_entries(b):
        if n is None or not isinstance(n.literal(), str) or v is None:
            continue
        got = v.literal() if v.literal() is not None else static_value(repo, posixpath.dirname(p), v)
        if got is not None:
            out[n.literal()] = got
    return out


def _other_cloud(flags: list, values: dict | None = None) -> bool:
    """Cluster Autoscaler given another cloud than EKS's: a --cloud-provider flag, or the chart's cloudProvider."""
    want = FACTS["detect"]["cloud_provider"]
    for a in flags:
        m = re.match(r"^--cloud-provider=(\S+)$", str(a))
        if m and m.group(1) != want:
            return True
    cp = (values or {}).get("cloudProvider")
    return isinstance(cp, str) and cp != want


# the documents _yaml_installs reads an install from: these kinds, or a kustomization's helmCharts; the text test is
# what such a document must hold (`kind: Deployment`, `"kind": "Deployment"`, the value on the next line or tagged),
# checked before libyaml reads a large values file that names cluster-autoscaler in passing
_INSTALL_KINDS = ("HelmRelease", "ApplicationSet", "Application", "Deployment")
_INSTALL_TEXT = AtWordStart(r"""kind["']?\s*:\s*(?:!\S*\s+)?["']?(?:%s)\b|helmCharts\b""" % "|".join(_INSTALL_KINDS))


class _CasDocument:
    """`only` for the Cluster Autoscaler scan: a document naming cluster-autoscaler that is one of the install shapes
    _yaml_installs reads (a Flux HelmRelease, an Argo CD Application or ApplicationSet, a Deployment, a kustomization's
    helmCharts) and whose values hold the chart's name or the image (each shape needs one of them). Its values are read
    with libyaml first; only such documents get the round-trip parse the edits need (vendored charts and docs name it
    in thousands of others; Obmondo/kubeaid's vendored Argo CD values, 160 KB, cost 50 ms a plan)."""
    pattern = "cluster-autoscaler (a value)"
    image = re.compile(FACTS["detect"]["image"])

    def search(self, text: str) -> bool:
        if not _CAS.search(text) or not _INSTALL_TEXT.search(text):
            return False
        if "{{" in text or "{%" in text:    # a template: the masking parse decides, when the name can be a value
            return _cas_value_in(text)
        try:
            tree = yamlsrc.values(text)
        except yamlsrc.YamlParseError:
            return True                     # the round-trip parse reports it where it matters
        return isinstance(tree, dict) and (tree.get("kind") in _INSTALL_KINDS or
                                           isinstance(tree.get("helmCharts"), list)) and self._holds(tree)

    def _holds(self, tree: Any) -> bool:
        if isinstance(tree, dict):
            return any(self._holds(v) for v in tree.values())
        if isinstance(tree, list):
            return any(self._holds(v) for v in tree)
        return isinstance(tree, str) and (tree == FACTS["detect"]["chart"] or bool(self.image.search(tree)))


_CAS_DOCUMENT = _CasDocument()


def _yaml_installs(repo: Repo, p: str, text: str, inv: CasInventory) -> None:
    image = re.compile(FACTS["detect"]["image"])
    for doc, m, obj in _parse_yaml_docs(repo, p, text, 0, 0, p, only=_CAS_DOCUMENT):
        if not isinstance(obj, dict):
            continue
        kind = obj.get("kind")
        meta = obj.get("metadata") or {}
        line = doc.first_line + 1
        if kind == "HelmRelease" and str(obj.get("apiVersion", "")).startswith("helm.toolkit.fluxcd.io/"):
            chart = (((obj.get("spec") or {}).get("chart") or {}).get("spec") or {}).get("chart")
            if chart == FACTS["detect"]["chart"] and not _other_cloud([], (obj.get("spec") or {}).get("values")):
                inv.installs.append(CasInstall("flux", p, line, obj=obj, doc=doc,
                                               namespace=str((obj.get("spec") or {}).get("targetNamespace")
                                                             or meta.get("namespace") or "default"),
                                               name=str(meta.get("name", "cluster-autoscaler")),
                                               file_values=_flux_values_from(repo, p, obj)))
        elif isinstance(obj.get("helmCharts"), list):          # a kustomization (kustomize build --enable-helm)
            for i, item in enumerate(obj["helmCharts"]):
                if isinstance(item, dict) and item.get("name") == FACTS["detect"]["chart"]:
                    inv.installs.append(CasInstall("kustomize", p, doc.first_line + obj["helmCharts"].lc.item(i)[0] + 1,
                                                   obj=obj, doc=doc, namespace=str(item.get("namespace") or "default"),
                                                   name=str(item.get("releaseName") or item["name"]),
                                                   source=("helmCharts", i)))
        elif kind == "ApplicationSet" and str(obj.get("apiVersion", "")).startswith("argoproj.io/"):
            spec = obj.get("spec") or {}
            tspec = ((spec.get("template") or {}).get("spec") or {})
            charts = [s.get("chart") for s in [tspec.get("source")] + list(tspec.get("sources") or [])
                      if isinstance(s, dict)]
            values = [((s.get("helm") or {}).get("valuesObject")) for s in [tspec.get("source")] +
                      list(tspec.get("sources") or []) if isinstance(s, dict)]
            if (FACTS["detect"]["chart"] in charts or _names(spec.get("generators"), FACTS["detect"]["chart"])) and \
                    not any(_other_cloud([], v) for v in values if isinstance(v, dict)):
                repo.findings.append(Finding(
                    "MIG-CAS-059", "warning", p, line,
                    f"ApplicationSet {meta.get('name')} installs Cluster Autoscaler into every cluster its generators "
                    "select: migrator plans a cluster's move from the cluster's own files, not a fleet's from an "
                    "ApplicationSet",
                    "move one cluster at a time: install Karpenter for it (its ApplicationSet or Application, "
                    "NodePools from its node groups: docs/from-cluster-autoscaler.md), then take the cluster out of "
                    "this ApplicationSet's selection (GitOps Bridge: enable_cluster_autoscaler off, enable_karpenter on)"))
        elif kind in ("Application",) and str(obj.get("apiVersion", "")).startswith("argoproj.io/"):
            spec = obj.get("spec") or {}
            for i, src in enumerate([spec.get("source")] + list(spec.get("sources") or [])):
                if isinstance(src, dict) and src.get("chart") == FACTS["detect"]["chart"] and \
                        not _other_cloud([], (src.get("helm") or {}).get("valuesObject")):
                    dest = spec.get("destination") or {}
                    inv.installs.append(CasInstall("argocd", p, line, obj=obj, doc=doc,
                                                   namespace=str(dest.get("namespace") or "kube-system"),
                                                   name=str(meta.get("name", "cluster-autoscaler")),
                                                   source=("source",) if i == 0 else ("sources", i - 1),
                                                   file_values=_argocd_value_files(repo, spec, src)))
                    break
        elif kind == "Deployment":
            spec = ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}
            cas = [c for c in spec.get("containers") or [] if isinstance(c, dict) and image.search(str(c.get("image", "")))]
            if cas and not _other_cloud([a for c in cas for a in list(c.get("command") or []) + list(c.get("args") or [])]):
                inv.installs.append(CasInstall("deployment", p, line, obj=obj, doc=doc,
                                               namespace=str(meta.get("namespace", "kube-system")),
                                               name=str(meta.get("name", "cluster-autoscaler")),
                                               readers=terraform_readers(repo, p)))


def _names(tree: Any, value: str) -> bool:
    """Does a parsed YAML tree hold `value` as a scalar anywhere (an ApplicationSet generator's `addonChart`)?"""
    if isinstance(tree, dict):
        return any(_names(v, value) for v in tree.values())
    if isinstance(tree, list):
        return any(_names(v, value) for v in tree)
    return tree == value


def _pinned_major(b: hclsrc.Block) -> int | None:
    """The major a module call pins (the lowest its `version` allows, or its git source's tag), else None."""
    from .versions import constraint, pinned
    ver = constraint(pinned(b))[1]
    return ver[0] if ver else None


def _module_groups(repo: Repo, p: str, b: hclsrc.Block, inv: CasInventory) -> None:
    tf = FACTS["node_groups"]["terraform_module"]
    text = repo.text(p)
    for attr in tf["legacy_maps"]:
        e = b.attr(attr)
        if e is not None:
            inv.unread.append((p, hclsrc.line_of(text, e.start),
                               f"module.{b.labels[0]}.{attr} (terraform-aws-modules/eks before v18; move the module to "
                               "v18 or later, whose eks_managed_node_groups / self_managed_node_groups migrator reads)"))
    for attr, flavour in tf["maps"].items():
        groups = b.attr(attr)
        if groups is None:
            continue
        m = Masked(text="")
        defaults = b.attr(tf["defaults"][attr])
        if defaults is not None and (_pinned_major(b) or 0) > tf["defaults_until"]:
            inv.retired.append((p, hclsrc.line_of(text, defaults.start),
                                f"module.{b.labels[0]}.{tf['defaults'][attr]}: the eks module v{_pinned_major(b)} has "
                                f"no such input (v{tf['defaults_until']} was its last), so terraform rejects it and "
                                f"its settings reach no group"))
            defaults = None
        base = hcl_to_obj(defaults, m) if defaults is not None and defaults.kind == "object" else {}
        listed = groups.kind == "tuple" and groups.items and all(i.kind == "object" for i in groups.items)
        why = ""
        if listed:          # a list of groups (v17 style, still taken by the module's `for k, v in var.x`): by position
            entries = [(p, hclsrc.ObjEntry(str(i), it.start, it.start, False, it, it.start, it.end), [])
                       for i, it in enumerate(groups.items)]
        else:               # the map where it is written: `local.x`, `var.x`, `merge(...)` of those
            from .inventory.sites import map_entries
            entries, why = map_entries(repo, p, groups) if groups.kind != "tuple" else ([], "")
        if why or (groups.kind == "tuple" and not listed):
            inv.unread.append((p, hclsrc.line_of(text, groups.start),
                               f"module.{b.labels[0]}.{attr} is a list whose items are not all written out"
                               if groups.kind == "tuple" else
                               f"module.{b.labels[0]}.{attr} is built by an expression ({groups.brief()})"
                               + (f" that {why.removeprefix(groups.brief()).strip()}" if why.startswith(groups.brief())
                                  else f": {why}" if why else "")))
        for at, e, under in entries:
            if e.value.kind != "object":
                inv.unread.append((at, hclsrc.line_of(repo.text(at), e.start),
                                   f"node group {e.key} of module.{b.labels[0]} is built by an expression"))
                continue
            own = hcl_to_obj(e.value, m)
            merged = {**(base if isinstance(base, dict) else {}), **own}
            g = NodeGroup(e.key, "module", flavour, at, hclsrc.line_of(repo.text(at), e.start), block=b, entry=e,
                          attr=attr, masked=m, shadowed=under)
            for key, meaning in tf["fields"].items():
                if key in merged:
                    g.fields[meaning] = merged[key]
            g.manual = [k for k in tf["manual"] if k in merged and merged[k] not in (None, False, "", {}, [])]
            g.fields["name"] = merged.get("name", e.key)
            _stated(repo, p, g)
            if listed:
                g.index = int(e.key)
                named = g.literal("name")
                g.name = named if isinstance(named, str) and named and named != e.key else f"group-{e.key}"
            inv.groups.append(g)


def _resource_group(repo: Repo, p: str, b: hclsrc.Block, inv: CasInventory) -> None:
    spec = FACTS["node_groups"]["aws_eks_node_group"]
    text = repo.text(p)
    if b.attr("count") is not None:
        from .inventory.sites import stated_count
        n = stated_count(repo, posixpath.dirname(p), b)
        if n == 0:                      # switched off: no group runs
            return
        if n != 1:                      # a group per subnet, per list item: the evaluator tells the instances
            _evaluated_groups(repo, p, b, inv, f"count ({b.attr('count').brief()})")
            return
    if b.attr("for_each") is not None:
        _each_groups(repo, p, b, inv)
        return
    m = Masked(text="")
    name = b.attr("node_group_name")
    g = NodeGroup(str(name.literal()) if name is not None and name.literal() else b.labels[1], "resource", "managed",
                  p, hclsrc.line_of(text, b.start), block=b, masked=m,
                  instance="[0]" if b.attr("count") is not None else "")     # a switch that is on: one instance
    _resource_fields(b, g, spec)
    _launch_template(repo, p, b, g)
    g.fields["name"] = hcl_to_obj(name, m) if name is not None else g.name
    _stated(repo, p, g)
    _named(g)
    inv.groups.append(g)


def _launch_template(repo: Repo, p: str, b: hclsrc.Block, g: NodeGroup) -> None:
    """The aws_launch_template of this module a group's launch_template block names (by id or name): what it sets,
    each setting with where it goes on Karpenter (knowledge/cas.yaml `launch_template_fields`)."""
    where = FACTS["node_groups"]["aws_eks_node_group"]["launch_template_fields"]
    for lt in b.sub("launch_template")[:1]:
        ref = re.search(r"\baws_launch_template\.([A-Za-z_][\w-]*)\.(?:id|name)\b",
                        " ".join(e.source for e in (lt.attr("id"), lt.attr("name")) if e is not None))
        found = [x for x in repo.tf_in_dir(posixpath.dirname(p)) for t in (repo.hcl(x).blocks if repo.hcl(x) else [])
                 if ref and t.type == "resource" and t.labels == ["aws_launch_template", ref.group(1)]]
        t = next((t for t in repo.hcl(found[0]).blocks if t.labels == ["aws_launch_template", ref.group(1)]),
                 None) if found else None
        if t is not None:
            g.template = {t.address: {k: v for k, v in where.items() if t.attr(k) is not None or t.sub(k)}}


def _named(g: NodeGroup) -> None:
    """A group written as an expression whose value the module states (`"${var.cluster_name}-web"`) is named by it."""
    if isinstance(g.literal("name"), str) and g.literal("name"):
        g.name = g.literal("name")


def _resource_fields(b: hclsrc.Block, g: NodeGroup, spec: dict) -> None:
    m = g.masked
    for key, meaning in spec["fields"].items():
        if b.attr(key) is not None:
            g.fields[meaning] = hcl_to_obj(b.attr(key), m)
    for sc in b.sub(spec["scaling"])[:1]:
        for k in ("min_size", "max_size", "desired_size"):
            if sc.attr(k) is not None:
                g.fields[k] = hcl_to_obj(sc.attr(k), m)
    taints = []
    for t in b.sub(spec["taint_block"]):
        taints.append({k: hcl_to_obj(t.attr(k), m) for k in ("key", "value", "effect") if t.attr(k) is not None})
    if taints:
        g.fields["taints"] = taints
    g.manual = [k for k in spec["manual"] if b.attr(k) is not None or b.sub(k)]


def _each_groups(repo: Repo, p: str, b: hclsrc.Block, inv: CasInventory) -> None:
    """`aws_eks_node_group` with `for_each` over a map written in the module (on the resource, a local, the one
    tfvars of the root, else the variable's default, or `merge()` of those): one group per item, its fields read with `each.key` and
    `each.value` bound to the item (`each.value.x`, `lookup(each.value, "x", d)`, `try(each.value.x, d)`, string
    templates of those, dynamic `taint` blocks over an item's list); anything else stays an expression (said per
    field). Sized and removed in the item."""
    from .inventory.sites import map_entries, unit_entries
    spec = FACTS["node_groups"]["aws_eks_node_group"]
    fe = b.attr("for_each")
    by_unit = unit_entries(repo, p, fe)         # Terragrunt units give the map: each unit's items, in its own files
    entries, why = (by_unit, "") if by_unit is not None else map_entries(repo, p, fe)
    kept = _filtered(repo, p, fe) if why else None
    if kept is not None:                    # `{ for k, v in var.x : k => v if v.enabled }`: the items the filter keeps
        entries, why = kept, ""
    if why:
        _evaluated_groups(repo, p, b, inv, f"for_each over {fe.brief()}",
                          why if fe.kind == "ref" or (fe.kind == "call" and fe.name == "merge") else "")
        return
    for at, e, under in entries:
        if e.value.kind != "object":
            inv.unread.append((at, hclsrc.line_of(repo.text(at), e.start),
                               f"node group {e.key} of {b.address} (for_each) is built by an expression"))
            continue
        m = Masked(text="")
        item = hcl_to_obj(e.value, m)
        g = NodeGroup(e.key, "resource", "managed", at, hclsrc.line_of(repo.text(at), e.start), block=b, entry=e,
                      masked=m, key=e.key, home=p, instance=f'["{e.key}"]', shadowed=under)
        _resource_fields(b, g, spec)
        _launch_template(repo, p, b, g)
        for d in b.sub("dynamic"):
            if d.labels == [spec["taint_block"]]:
                g.fields["taints"] = _dynamic_taints(d, e.key, item, m)
        named = b.attr("node_group_name")
        g.fields["name"] = hcl_to_obj(named, m) if named is not None else e.key
        _stated(repo, p, g, each=(e.key, item))
        _named(g)
        inv.groups.append(g)


_FILTER = re.compile(r"\{\s*for\s+(?P<k>\w+)\s*,\s*(?P<v>\w+)\s+in\s+(?P<src>[\w.\[\]\"-]+)\s*:\s*(?P=k)\s*=>\s*(?P=v)"
                     r"\s*(?:if\s+(?P<cond>[^{}]+?))?\s*\}", re.S)


_KEYED = re.compile(r"\{\s*for\s+(?P<v>\w+)\s+in\s+(?P<src>[\w.\[\]\"-]+)\s*:\s*"
                    r"(?:(?P=v)\.(?P<attr>\w+)|\"\$\{(?P=v)\.(?P<tattr>\w+)\}\")\s*=>\s*(?P=v)"
                    r"\s*(?:if\s+(?P<cond>[^{}]+?))?\s*\}", re.S)


def _keyed_items(repo: Repo, p: str, src: hclsrc.Expr, attr: str) -> list | None:
    """The objects of a list the repository writes (`var.x` / `local.x` standing for one, as map items are found),
    keyed by their `attr` (a literal string each, no two alike), as map items: (file, ObjEntry, [])."""
    from .inventory.sites import object_site
    if src.kind == "tuple":
        at, lst = p, src
    else:
        at, lst, _why = object_site(repo, p, src, "tuple")
    if lst is None:
        return None
    out, seen = [], set()
    for item in lst.items:
        key = next((e for e in item.entries if e.key == attr), None) if item.kind == "object" else None
        name = key.value.literal() if key is not None else None
        if not isinstance(name, str) or name in seen:
            return None
        seen.add(name)
        out.append((at, hclsrc.ObjEntry(name, key.value.start, key.value.end, True, item, item.start, item.end), []))
    return out


def _filtered(repo: Repo, p: str, fe: hclsrc.Expr) -> list | None:
    """The items of a written map that `{ for k, v in <map> : k => v if <cond> }` keeps, each where it is written (so
    it is sized and removed there as any item), when the condition reads only the item (`v.enabled`, `!v.off`,
    `v.kind == "web"`, `lookup(v, "enabled", true)`); a written list keyed by an attribute of its objects, `{ for v in
    <list> : v.name => v if <cond> }`, the same (its objects as the items); None for anything else (the evaluator may
    still tell them)."""
    from .inventory.sites import _expr, map_entries
    m = _FILTER.fullmatch(fe.source.strip())
    keyed = _KEYED.fullmatch(fe.source.strip()) if m is None else None
    m = m or keyed
    src = _expr(m.group("src")) if m else None
    if src is None:
        return None
    if keyed is not None:
        entries = _keyed_items(repo, p, src, keyed.group("attr") or keyed.group("tattr"))
        if entries is None:
            return None
    else:
        entries, why = map_entries(repo, p, src)
        if why:
            return None
    cond = m.group("cond")
    if cond is None:
        return entries
    k, v = (None, m.group("v")) if keyed is not None else (m.group("k"), m.group("v"))
    # the loop's names where the condition reads them (never inside a string literal: `v.kind == "v"`)
    bound = re.sub(rf'(?<![\w".]){v}(?=[.\[,)\s]|$)', "each.value", cond.strip())
    if k is not None:
        bound = re.sub(rf'(?<![\w".]){k}(?=[\s,)=!]|$)', "each.key", bound)
    out = []
    for at, e, under in entries:
        if e.value.kind != "object":
            return None
        keep = _truth(bound, e.key, hcl_to_obj(e.value, Masked(text="")))
        if keep is None:
            return None
        if keep:
            out.append((at, e, under))
    return out


def _truth(cond: str, key: str, item: Any) -> bool | None:
    """A filter condition over one item: a bound value, its negation, or a comparison with a literal."""
    from .inventory.sites import _expr
    cond = cond.strip()
    if cond.startswith("!"):
        got = _truth(cond[1:], key, item)
        return None if got is None else not got
    cmp = re.fullmatch(r"(.+?)\s*(==|!=)\s*(.+)", cond)
    if cmp:
        left, right = _each_bind(cmp.group(1), key, item), _expr(cmp.group(3))
        lit = right.literal() if right is not None and right.kind in ("string", "number", "bool") else None
        if not left[0] or lit is None:
            return None
        return (left[1] == lit) == (cmp.group(2) == "==")
    got = _each_bind(cond, key, item)
    return got[1] if got[0] and isinstance(got[1], bool) else None


def _evaluated_groups(repo: Repo, p: str, b: hclsrc.Block, inv: CasInventory, how: str, why: str = "") -> None:
    """`aws_eks_node_group` whose instances an expression makes (`count = length(var.subnets)`, `for_each` over a
    `for` expression, `toset(...)`, a `merge()` of maps): the evaluator tells the instances (the count, the for_each
    collection), where the module's own text decides them (defaults only: it reads no tfvars); each instance's fields
    are then read as for a written item, with `count.index` / `each.key` / `each.value` bound. A value the evaluator
    cannot know stays an expression (said per field). Instances have no text of their own: `made_by` says so."""
    from . import evaluate
    from .inventory.sites import defaults_decide
    text = repo.text(p)
    line = hclsrc.line_of(text, b.start)
    over = b.attr("count") if b.attr("count") is not None else b.attr("for_each")
    d = posixpath.dirname(p)
    roots = evaluate.roots_of(repo, p)
    why = why and f": {why}"
    if len(roots) != 1:
        why = f": the module is evaluated from {len(roots)} root modules ({', '.join(roots[:3])})"
    elif not evaluate.available():
        why = why or ": no evaluator on this machine"
    elif defaults_decide(repo, d, over.source):
        why = f": {defaults_decide(repo, d, over.source)}"
    else:
        got = evaluate.instances(repo, p, b)
        if got is None:
            why = why or ": the evaluator cannot tell them"
        else:
            spec = FACTS["node_groups"]["aws_eks_node_group"]
            for inst in sorted(got, key=lambda i: str((i.get("__tfmeta") or {}).get("path", ""))):
                m = re.search(r'\[(\d+|"[^"]*")\]$', str((inst.get("__tfmeta") or {}).get("path", "")))
                if m is None:
                    continue
                key: Any = int(m.group(1)) if m.group(1).isdigit() else m.group(1)[1:-1]
                coll = inst.get("for_each")
                item = _evaluated(coll.get(key) if isinstance(coll, dict) else key) if b.attr("for_each") is not None \
                    else None
                g = NodeGroup(f"{b.labels[1]}-{key}", "resource", "managed", p, line, block=b,
                              masked=Masked(text=""), key=key, home=p, instance=m.group(0), made_by=how)
                _resource_fields(b, g, spec)
                _launch_template(repo, p, b, g)
                for dyn in b.sub("dynamic"):
                    if dyn.labels == [spec["taint_block"]]:
                        g.fields["taints"] = _dynamic_taints(dyn, key, item, g.masked)
                named = b.attr("node_group_name")
                g.fields["name"] = hcl_to_obj(named, g.masked) if named is not None else g.name
                _stated(repo, p, g, each=(key, item))
                _from_instance(repo, p, b, g, inst, spec)
                _named(g)
                inv.groups.append(g)
            return
    inv.unread.append((p, line, f"{b.address} makes its node groups with {how}{why}"))


UNKNOWN = object()      # a value the evaluator could not know (it writes null, a reference or a template for it)


def _from_instance(repo: Repo, p: str, b: hclsrc.Block, g: NodeGroup, inst: dict, spec: dict) -> None:
    """The fields of an evaluated instance still written as expressions (`var.sizes[each.key].max`) where the
    evaluator knows their value: the instance's own evaluated attribute, taken only where the module's defaults
    decide that expression (the evaluator reads no tfvars: a size a tfvars sets per environment stays said)."""
    from .inventory.sites import defaults_decide
    sc = b.sub(spec["scaling"])
    exprs = {meaning: b.attr(attr) for attr, meaning in spec["fields"].items()}
    exprs.update({k: sc[0].attr(k) if sc else None for k in ("min_size", "max_size", "desired_size")})
    values = {meaning: inst.get(attr) for attr, meaning in spec["fields"].items()}
    scaling = inst.get(spec["scaling"])
    scaling = scaling[0] if isinstance(scaling, list) and scaling else scaling
    values.update({k: scaling.get(k) if isinstance(scaling, dict) else None for k in ("min_size", "max_size",
                                                                                     "desired_size")})
    for meaning, v in values.items():
        e = exprs.get(meaning)
        if e is None or meaning not in g.fields or g.literal(meaning) is not None or v is None or \
                (isinstance(v, dict) and "__tfmeta" in v) or not _known(_evaluated(v)):
            continue
        bound = re.sub(r"\beach\.(?:key|value(?:\.[\w-]+)*)|\bcount\.index", "0", e.source)   # the instance's own
        if not defaults_decide(repo, posixpath.dirname(p), bound):
            g.fields[meaning] = v


def _evaluated(v: Any) -> Any:
    """An evaluated for_each item with every value the evaluator could not know marked UNKNOWN."""
    from .evaluate import unknown
    if unknown(v):
        return UNKNOWN
    if isinstance(v, dict):
        return {k: _evaluated(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_evaluated(x) for x in v]
    return v


def _known(v: Any) -> bool:
    if v is UNKNOWN:
        return False
    if isinstance(v, dict):
        return all(_known(x) for x in v.values())
    if isinstance(v, list):
        return all(_known(x) for x in v)
    return True


def _dynamic_taints(d: hclsrc.Block, key: str, item: Any, m: Masked) -> Any:
    """A dynamic `taint` block over a list of the item: its items' key / value / effect as the content reads them."""
    over = d.attr("for_each")
    it = d.attr("iterator")
    bound, items = _each_bind(over.source if over is not None else "", key, item)
    content = d.sub("content")
    if not bound or not isinstance(items, list) or not content:
        return hcl_to_obj(over, m) if over is not None else []
    out = []
    for x in items:
        t = {}
        for k in ("key", "value", "effect"):
            a = content[0].attr(k)
            if a is not None:
                steps = item_path(a.source, it.source.strip() if it is not None else "taint")
                got = _at(x, steps) if steps is not None else MISSING
                t[k] = hcl_to_obj(a, m) if got is MISSING or not _known(got) else got
        out.append(t)
    return out


def _at(value: Any, steps: list[str]) -> Any:
    for k in steps:
        if value is UNKNOWN:            # inside a value the evaluator could not know: not known either
            return UNKNOWN
        if not isinstance(value, dict) or k not in value:
            return MISSING
        value = value[k]
    return value


def _each_bind(source: str, key: str, item: Any) -> tuple[bool, Any]:
    """(True, value) of an expression that reads only `each` where the item states it; (False, MISSING) for a path
    the item does not have; (False, None) for anything not known."""
    from .inventory.sites import _expr
    s = source.strip()
    if s == "each.key" or (s == "count.index" and isinstance(key, int)):
        return True, key
    e = _expr(s) if "each." in s or "count.index" in s else None
    if e is None:
        return False, None
    if e.kind == "ref":
        steps = item_path(s)
        got = _at(item, steps) if steps is not None else None
        if not _known(got):                             # the evaluator could not know it: neither bound nor missing
            return False, None
        return (steps is not None and got is not MISSING), got
    if e.kind == "call" and e.name == "lookup" and len(e.items) in (2, 3) and e.items[1].kind == "string":
        steps = item_path(e.items[0].source)
        base = (steps is not None, _at(item, steps)) if steps is not None else _each_bind(e.items[0].source, key, item)
        if base[0] and isinstance(base[1], dict):
            if e.items[1].value in base[1]:
                got = base[1][e.items[1].value]
                return (True, got) if _known(got) else (False, None)
            return _literal_or_each(e.items[2], key, item) if len(e.items) == 3 else (False, None)
        return False, None
    if e.kind == "call" and e.name == "try":            # the first argument that evaluates
        for x in e.items:
            got = _literal_or_each(x, key, item)
            if got[0] or got[1] is not MISSING:         # a value, or one not known: nothing after it counts
                return got if got[0] else (False, None)
        return False, None
    if e.kind == "call" and e.name == "coalesce":       # the first argument that is not null or ""
        for x in e.items:
            got = _literal_or_each(x, key, item)
            if not got[0]:
                return False, None
            if got[1] not in (None, ""):
                return got
        return False, None
    if e.kind == "string" and "${" in s:
        text = each_fill(s, key, item)
        return (True, text[1:-1]) if "${" not in text and "%{" not in text else (False, None)
    return False, None


def each_fill(source: str, key: str, item: Any) -> str:
    """A string template with its `${each...}` interpolations the item states written in (the others kept)."""
    def one(m: re.Match) -> str:
        got = _each_bind(m.group(1), key, item)
        ok = got[0] and isinstance(got[1], (str, int)) and not isinstance(got[1], bool)
        return str(got[1]).replace("\\", "\\\\").replace('"', '\\"') if ok else m.group(0)
    return re.sub(r"\$\{([^{}]*)\}", one, source) if source.lstrip().startswith('"') else source


def _literal_or_each(e: hclsrc.Expr, key: str, item: Any) -> tuple[bool, Any]:
    if e.kind in ("string", "number", "bool") and e.value is not None:
        return True, e.value
    if e.kind == "null":
        return True, None
    if e.kind in ("tuple", "object"):
        m = Masked(text="")
        got = hcl_to_obj(e, m)
        return (True, got) if not m.tokens else (False, None)
    return _each_bind(e.source, key, item)


def _stated(repo: Repo, p: str, g: NodeGroup, each: tuple[str, Any] | None = None) -> None:
    """Fields written as expressions whose value the module states (a variable's default or its tfvars, what every
    call of the module passes, a local, a string template of those: `capacity_type = var.capacity_type`,
    `ami_type = "AL2_${var.arch}"`) take that value; the others stay placeholders the NodePool writer reports."""
    from .inventory.sites import _expr, module_value
    from .sources.templates import TOKEN_RE
    d = posixpath.dirname(p)

    def settle(v):
        if isinstance(v, str) and TOKEN_RE.fullmatch(v) and v in g.masked.tokens and each is not None:
            bound, got = _each_bind(g.masked.tokens[v], *each)
            if bound:
                return settle(got)
        if isinstance(v, str) and TOKEN_RE.fullmatch(v) and v in g.masked.tokens:
            src = g.masked.tokens[v] if each is None else each_fill(g.masked.tokens[v], *each)
            if each is not None and isinstance(each[0], int):      # a count instance: var.zones[count.index]
                src = re.sub(r"\bcount\.index\b", str(each[0]), src)
            got = module_value(repo, d, _expr(src))         # a module's variables as its calls give them
            return v if got is None else got
        if isinstance(v, dict):
            for k in list(v):
                v[k] = settle(v[k])
            return v
        if isinstance(v, list):
            for i, x in enumerate(v):
                v[i] = settle(x)
            return v
        return v
    for k in list(g.fields):
        g.fields[k] = settle(g.fields[k])
        if k in _NUMBERS and isinstance(g.fields[k], str) and re.fullmatch(r"\d+", g.fields[k]):
            g.fields[k] = int(g.fields[k])      # a number attribute given "2": Terraform converts it


_NUMBERS = ("min_size", "max_size", "desired_size", "disk_size")


def subnet_zones(repo: Repo, g: NodeGroup) -> list[str] | None:
    """The availability zones a node group's subnets lie in, where the repository states each: an eksctl group's
    availabilityZones; `aws_subnet.x.id` (its availability_zone), `module.vpc.private_subnets[i]` (a
    terraform-aws-modules/vpc module's `azs[i]`), and locals / variables whose list holds those (`local.subnets[0]`,
    `count.index` of the instance bound). None when any subnet's zone is not known."""
    from .inventory.sites import _expr
    if g.source == "eksctl":
        z = g.literal("availability_zones")
        return [str(x) for x in z] if isinstance(z, list) and z else None
    v = g.fields.get("subnet_ids")
    if not isinstance(v, list) or not v:
        src = g.masked.unmask(str(v or "")).strip()
        one = _expr(src) if src else None
        if one is None or one.kind != "tuple":
            return None
        v = [x.source for x in one.items]
    d = posixpath.dirname(g.home or g.path)
    zones = []
    for x in v:
        src = g.masked.unmask(str(x)).strip()
        if isinstance(g.key, int) and g.made_by:
            src = re.sub(r"\bcount\.index\b", str(g.key), src)
        z = _subnet_zone(repo, d, src, 0)
        if not isinstance(z, str) or not z:
            return None
        zones.append(z)
    return list(dict.fromkeys(zones))


def _subnet_zone(repo: Repo, d: str, src: str, depth: int) -> str | None:
    from .inventory.sites import _module_blocks, module_value
    if depth > 4:
        return None
    m = re.fullmatch(r"aws_subnet\.([\w-]+)\.id", src)
    if m:
        found = [b for _, b in _module_blocks(repo, d, "resource") if b.labels == ["aws_subnet", m.group(1)]]
        az = found[0].attr("availability_zone") if len(found) == 1 else None
        got = module_value(repo, d, az) if az is not None else None
        return got if isinstance(got, str) else None
    m = re.fullmatch(r"module\.([\w-]+)\.([\w-]+)\[(\d+)\]", src)
    if m and m.group(2) in FACTS["install"]["vpc_subnet_outputs"]:
        found = [b for _, b in _module_blocks(repo, d, "module") if b.labels == [m.group(1)]]
        source = found[0].attr("source") if len(found) == 1 else None
        if source is None or FACTS["detect"]["vpc_module_source"] not in str(source.literal() or ""):
            return None
        azs = module_value(repo, d, found[0].attr("azs")) if found[0].attr("azs") is not None else None
        i = int(m.group(3))
        return azs[i] if isinstance(azs, list) and i < len(azs) and isinstance(azs[i], str) else None
    m = re.fullmatch(r"local\.([\w-]+)\[(\d+)\]", src)
    if m:
        found = [b.attr(m.group(1)) for _, b in _module_blocks(repo, d, "locals") if b.attr(m.group(1)) is not None]
        i = int(m.group(2))
        if len(found) == 1 and found[0].kind == "tuple" and i < len(found[0].items):
            return _subnet_zone(repo, d, found[0].items[i].source.strip(), depth + 1)
    return None


def _hcl_version(e: hclsrc.Expr | None) -> str | None:
    """A Kubernetes version as written: `1.30` unquoted is the number 1.3, its source text is the version."""
    v = e.literal() if e is not None else None
    return None if not v else e.source.strip() if isinstance(v, float) else str(v)


def _tf_version(repo: Repo, p: str, e: hclsrc.Expr | None) -> str | None:
    """The cluster's Kubernetes version where the module states it: written there, or a string local / variable
    (default, the one tfvars) it reads (`version = local.eks_version`)."""
    got = _hcl_version(e)
    if got is None and e is not None and e.kind != "number":
        from .inventory.sites import static_value
        v = static_value(repo, posixpath.dirname(p), e)
        got = v if isinstance(v, str) and re.fullmatch(r"\d+\.\d+", v) else None
    return got


def _block_file(repo: Repo, b: hclsrc.Block) -> str | None:
    """The .tf file holding a block (found among the files that parse to it)."""
    for p in repo.tf_containing(b.labels[-1] if b.labels else b.type):
        f = repo.hcl(p)
        if f is not None and any(x is b for x in f.blocks):
            return p
    return None


def _version_text(v: Any) -> str | None:
    """A Kubernetes version read from YAML as written (`version: 1.30` unquoted loads as the float 1.3; ruamel keeps
    its width and the dot's place)."""
    if isinstance(v, float):
        width, dot = getattr(v, "_width", None), getattr(v, "_prec", None)
        return f"{v:.{width - dot - 1}f}" if isinstance(width, int) and isinstance(dot, int) else str(v)
    return str(v) if isinstance(v, (str, int)) and str(v) else None


def _eksctl(repo: Repo, p: str, text: str, inv: CasInventory) -> None:
    spec = FACTS["node_groups"]["eksctl"]
    for doc, m, obj in _parse_yaml_docs(repo, p, text, 0, 0, p, only=_EKSCTL):
        if not isinstance(obj, dict) or obj.get("kind") != "ClusterConfig":
            continue
        inv.clusters.append((p, doc, obj))
        sas = (obj.get("iam") or {}).get("serviceAccounts") if isinstance(obj.get("iam"), dict) else None
        for i, sa in enumerate(sas if isinstance(sas, list) else []):
            meta = (sa.get("metadata") or {}) if isinstance(sa, dict) else {}
            known = ((sa.get("wellKnownPolicies") or {}) if isinstance(sa, dict) else {}).get(
                spec["cas_service_account"]["well_known_policy"]) is True
            if known or meta.get("name") == spec["cas_service_account"]["name"]:
                inv.eksctl_sas.append((p, doc, i, str(meta.get("namespace") or "default"), str(meta.get("name"))))
        for key, flavour in spec["lists"].items():
            for i, ng in enumerate(obj.get(key) or []):
                if not isinstance(ng, dict) or "name" not in ng:
                    continue
                line = doc.first_line + 1 + (ng.lc.line if hasattr(ng, "lc") else 0)
                g = NodeGroup(str(ng["name"]), "eksctl", flavour, p, line, masked=m, doc=doc, index=i, attr=key)
                for k, meaning in spec["fields"].items():
                    if k in ng:
                        g.fields[meaning] = ng[k]
                g.manual = [k for k in spec["manual"] if k in ng]
                g.fields["name"] = g.name
                g.cluster_version = _version_text((obj.get("metadata") or {}).get("version"))
                inv.groups.append(g)


def cluster_name_expr(inv: CasInventory, path: str) -> str | None:
    """How the root names its cluster, as a Terraform expression in path's module: the eks module's output."""
    d = posixpath.dirname(path)
    for p, b in inv.eks_modules:
        if posixpath.dirname(p) == d:
            return f"module.{b.labels[0]}.cluster_name"
    return None
