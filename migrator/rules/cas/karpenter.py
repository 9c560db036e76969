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
from ...cas import FACTS, CasInventory, NodeGroup
from ...edits import Edit, NewFile, TextEdit, line_start, to_newline
from ...model import Finding
from ...placement import align_attributes
from ...sources import hcl as hclsrc
from ...sources import yaml as yamlsrc
from ...validate import validate_object
from . import convert

RULE = "cas/karpenter"
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


def _group_name_expr(g: NodeGroup, eks: str) -> str | None:
    """The EKS node group name as Terraform knows it (the eks.amazonaws.com/nodegroup label's value)."""
    if g.source == "module" and g.flavour == "managed":
        return f'split(":", {eks}.{g.attr}["{g.entry.key}"].node_group_id)[1]'
    if g.source == "resource":
        return f"{g.block.address}.node_group_name"
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


def _kubectl_provider(repo, d: str) -> bool:
    for p in repo.tf_in_dir(d if d != "." else ""):
        t = repo.text(p)
        if "kubectl_manifest" in t or re.search(r'source\s*=\s*"[\w.-]*/kubectl"', t):
            return True
    return False


def _hcl_value(v: Any, exprs: dict[str, str], indent: str) -> str:
    return hclsrc.render_value(v, exprs, indent)


class Installer:
    def __init__(self, ctx):
        self.ctx = ctx
        self.repo = ctx.repo
        self.cas: CasInventory = ctx.cas
        self.res = InstallResult()
        self.target = ctx.target.chart if ctx.target is not None and ctx.target.chart else knowledge.load("minors")["newest"]

    def run(self) -> InstallResult:
        res = self.res
        if self.ctx.charts or any(m.kind in ("NodePool", "EC2NodeClass") for m in self.ctx.manifests):
            res.done = True
            return res
        if not self.cas.present:
            return res
        cas0 = self.cas.installs[0]
        d = posixpath.dirname(cas0.path) or "."
        tf_dirs = {posixpath.dirname(p) or "." for p, _ in self.cas.eks_modules}
        if self.cas.eks_modules and d not in tf_dirs:
            d = sorted(tf_dirs)[0]
        expr, eks = cluster_expr(self.repo, self.cas, d)
        if expr is None:
            _find(res, "MIG-CAS-002", "error", cas0.path, cas0.line,
                  f"{cas0.address}: no terraform-aws-modules/eks module or aws_eks_cluster in {d}, so migrator cannot "
                  "tell which cluster to install Karpenter into",
                  "follow the Karpenter guide 'Migrating from Cluster Autoscaler' by hand (eksctl and hand-made "
                  "clusters are not planned by this version of migrator)")
            return res
        res.cluster = expr
        shapes = [convert.shape(g) for g in self.cas.groups if g.path.startswith("" if d == "." else d + "/")]
        if not shapes:
            _find(res, "MIG-CAS-003", "error", cas0.path, cas0.line,
                  f"{cas0.address}: no node group found beside it; migrator writes NodePools from node groups",
                  "write the NodePools by hand (docs/places/cas.md), or declare the node groups in this root")
            return res
        for s in shapes:
            res.findings.extend(s.notes)
        kept, why = convert.kept_group(shapes, self.ctx.options.node_group_keep)
        if kept is None:
            _find(res, "MIG-CAS-004", "error", cas0.path, cas0.line, f"no node group can stay for the controller: {why}",
                  "name the group that stays with --node-group-keep NAME (or node_group_keep in .migrator.yaml)")
            return res
        res.kept, res.kept_why = kept.group.name, why
        _find(res, "MIG-CAS-005", "info", kept.group.path, kept.group.line,
              f"node group {kept.group.name} stays and runs the Karpenter controller: {why}",
              "choose another with --node-group-keep NAME")
        res.identity = "pod-identity" if _agent(self.repo, self.cas, self.ctx.owns) else "irsa"
        path = posixpath.join(d, "karpenter.tf") if d != "." else "karpenter.tf"
        if path in self.repo.files:
            _find(res, "MIG-CAS-006", "error", path, 1, f"{path} already exists; migrator writes the Karpenter "
                  "installation there", "rename that file, then run migrator again")
            return res
        res.file = path
        nl = self.repo.files[cas0.path].newline
        pools, classes = self.objects(shapes, expr)
        if pools is None:
            return res
        kubectl = _kubectl_provider(self.repo, d)
        text = self.terraform(d, expr, eks, kept, kubectl, pools, classes)
        res.edits.append(NewFile(path, to_newline(text, nl), RULE))
        if not kubectl:
            res.objects_file = posixpath.join(d, "karpenter-nodepools.yaml") if d != "." else "karpenter-nodepools.yaml"
            body = "---\n".join(yamlsrc.Emitter().emit(o).text for o in classes + pools)
            res.edits.append(NewFile(res.objects_file, to_newline(body, nl), RULE))
            _find(res, "MIG-CAS-007", "warning", res.objects_file, 1,
                  "the root has no kubectl provider: the NodePools and EC2NodeClass are written to this file with "
                  "the cluster and node role names as placeholders ${...}",
                  "replace the placeholders with the cluster name and the module's node_iam_role_name output, then "
                  "apply the file with kubectl after terraform apply (the runbook shows the commands)")
        self.tags(d, expr)
        self.provider_pin(d)
        return res

    # -- objects --------------------------------------------------------------------------------------------------
    def objects(self, shapes, expr: str):
        res = self.res
        groups: dict[tuple, str] = {}
        for s in shapes:
            groups.setdefault(s.class_key, s.group.name)
        if len(groups) == 1:
            groups = {k: "default" for k in groups}
        classes = []
        role = "${module.%s.node_iam_role_name}" % INSTALL["module_name"]
        cluster = "${%s}" % expr
        made: dict[str, Any] = {}
        for s in shapes:
            name = groups[s.class_key]
            if name not in made:
                made[name] = convert.nodeclass(s, name, role, cluster)
                classes.append(made[name])
        extra = self.extra_args()
        pools = []
        for s in shapes:
            pool = convert.nodepool(s, s.group.name, groups[s.class_key], convert.consolidate_after(extra))
            pools.append(pool)
            res.pools.append((s.group.name, s.group.name))
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
        out: dict = {}
        for i in self.cas.installs:
            if i.block is None:
                continue
            for s in i.block.sub("set"):
                n, v = s.attr("name"), s.attr("value")
                if n is not None and str(n.literal() or "").startswith("extraArgs.") and v is not None and v.literal():
                    out[str(n.literal()).split(".", 1)[1]] = v.literal()
        return out

    # -- the Terraform file ---------------------------------------------------------------------------------------
    def terraform(self, d: str, expr: str, eks: str, kept, kubectl: bool, pools, classes) -> str:
        name = INSTALL["module_name"]
        ns, sa = INSTALL["namespace"], INSTALL["service_account"]
        out = ["# Karpenter next to Cluster Autoscaler (written by migrator, the move from Cluster Autoscaler:",
               "# phase install). Cluster Autoscaler keeps scaling until the cutover phase.", ""]
        mod = [f'module "{name}" {{',
               f'  source  = "{INSTALL["module_source"]}"',
               f'  version = "{INSTALL["module_version"]}"', "",
               f"  cluster_name = {expr}", ""]
        if self.res.identity == "pod-identity":
            mod += ["  # the controller's identity: EKS Pod Identity (the cluster runs the eks-pod-identity-agent add-on)",
                    f'  namespace       = "{ns}"', f'  service_account = "{sa}"']
        else:
            mod += ["  # the controller's identity: IRSA through the cluster's OIDC provider (no Pod Identity agent here)",
                    "  create_pod_identity_association         = false",
                    f"  iam_role_source_assume_policy_documents = [data.aws_iam_policy_document.{name}_irsa.json]"]
        mod += ["", "  # a fixed node role name: the EC2NodeClass names it",
                "  node_iam_role_use_name_prefix = false",
                f'  node_iam_role_name            = "${{{expr}}}-karpenter-node"',
                "  node_iam_role_additional_policies = {"]
        mod += [f'    {k} = "{v}"' for k, v in INSTALL["node_policies"].items()]
        mod += ["  }", "}", ""]
        out += mod
        if self.res.identity == "irsa":
            if not eks:
                _find(self.res, "MIG-CAS-009", "error", self.cas.installs[0].path, self.cas.installs[0].line,
                      "the cluster has no Pod Identity agent and is not a terraform-aws-modules/eks module, so "
                      "migrator cannot write the controller's IRSA trust", "add the eks-pod-identity-agent add-on to "
                      "the cluster, then run migrator again")
            doc = MODULE["irsa_document"].format(
                module=name, name=f"{name}_irsa", oidc_arn=f"{eks}.oidc_provider_arn", test='"StringEquals"',
                service_accounts=f'["{ns}:{sa}"]').replace("The IRSA trust the karpenter module's v20 wrote itself "
                                                           "(v21 takes it as a source document)",
                                                           "The controller's IRSA trust (the module takes it as a "
                                                           "source document)")
            out += doc.rstrip("\n").splitlines() + [""]
        values: dict[str, Any] = {"settings": {"clusterName": "__MIG_0__", "interruptionQueue": "__MIG_1__"},
                                  "serviceAccount": {"name": "__MIG_2__"}}
        exprs = {"__MIG_0__": expr, "__MIG_1__": f"module.{name}.queue_name", "__MIG_2__": f"module.{name}.service_account"}
        if self.res.identity == "irsa":
            values["serviceAccount"]["annotations"] = {"eks.amazonaws.com/role-arn": "__MIG_3__"}
            exprs["__MIG_3__"] = f"module.{name}.iam_role_arn"
        group_expr = _group_name_expr(kept.group, eks) if kept else None
        match = [{"key": "karpenter.sh/nodepool", "operator": "DoesNotExist"}]
        if group_expr:
            exprs["__MIG_4__"] = group_expr
            match.append({"key": convert.GROUP_LABEL, "operator": "In", "values": ["__MIG_4__"]})
        values["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": match}]}}}
        base = [f'  name       = "{{n}}"', f'  namespace  = "{ns}"', f'  repository = "{INSTALL["chart_repository"]}"',
                '  chart      = "{n}"', f'  version    = "{self.target}"']
        out += ['resource "helm_release" "karpenter_crd" {'] + [x.replace("{n}", "karpenter-crd") for x in base] + ["}", ""]
        out += ['resource "helm_release" "karpenter" {'] + [x.replace("{n}", "karpenter") for x in base]
        out += ["  skip_crds  = true", "",
                "  values = [yamlencode(" + _hcl_value(values, exprs, "  ") + ")]", "",
                "  depends_on = [helm_release.karpenter_crd]", "}", ""]
        self.res.targets = [(d, f"module.{name}"), (d, "helm_release.karpenter_crd"), (d, "helm_release.karpenter")]
        if kubectl:
            for o in classes + pools:
                label = f"karpenter_{'node_class' if o['kind'] == 'EC2NodeClass' else 'node_pool'}_" \
                        f"{re.sub(r'[^A-Za-z0-9_]', '_', str(o['metadata']['name']))}"
                body = yamlsrc.Emitter().emit(o).text
                out += [f'resource "kubectl_manifest" "{label}" {{', "  yaml_body = <<-YAML"]
                out += ["    " + ln if ln else "" for ln in body.rstrip("\n").splitlines()]
                out += ["  YAML", "", "  depends_on = [helm_release.karpenter]", "}", ""]
                self.res.targets.append((d, f"kubectl_manifest.{label}"))
        return align_attributes("\n".join(out).rstrip("\n") + "\n")

    # -- discovery tags -------------------------------------------------------------------------------------------
    def tags(self, d: str, expr: str) -> None:
        tag = INSTALL["discovery_tag"]
        for p, b, attr in [(p, b, "private_subnet_tags") for p, b in self.cas.vpc_modules] + \
                          [(p, b, "node_security_group_tags") for p, b in self.cas.eks_modules]:
            if (posixpath.dirname(p) or ".") != d:
                continue
            text = self.repo.text(p)
            nl = self.repo.files[p].newline
            e = b.attr(attr)
            entry = f'"{tag}" = {expr}'
            if e is not None and e.kind == "object":
                if any(x.key == tag for x in e.entries):
                    continue
                if e.entries:
                    last = e.entries[-1]
                    ind = text[line_start(text, last.start):last.start]
                    if hclsrc.line_of(text, e.start) == hclsrc.line_of(text, e.end):
                        self._finding_manual(p, text, b, attr, tag, expr)
                        continue
                    pos = text.index("\n", last.end) + 1 if "\n" in text[last.end:] else len(text)
                    self.res.edits.append(TextEdit(p, pos, pos, to_newline(f"{ind}{entry}\n", nl), RULE))
                else:
                    ind = text[line_start(text, b.attributes[attr].start):b.attributes[attr].start]
                    self.res.edits.append(TextEdit(p, e.start, e.end,
                                                   to_newline("{\n" + f"{ind}  {entry}\n{ind}}}", nl), RULE))
            elif e is None:
                ind = text[line_start(text, next(iter(b.attributes.values())).start):
                           next(iter(b.attributes.values())).start] if b.attributes else "  "
                pos = line_start(text, b.body_end)
                self.res.edits.append(TextEdit(p, pos, pos, to_newline(
                    f"\n{ind}{attr} = {{\n{ind}  {entry}\n{ind}}}\n", nl), RULE, order=2))
            else:
                self._finding_manual(p, text, b, attr, tag, expr)
                continue
            self.res.tagged.append(f"module.{b.labels[0]}.{attr}")

    def _finding_manual(self, p, text, b, attr, tag, expr) -> None:
        _find(self.res, "MIG-CAS-016", "warning", p, hclsrc.line_of(text, b.attributes[attr].start),
              f"module.{b.labels[0]}.{attr} is an expression migrator does not edit",
              f'add "{tag}" = {expr} to it by hand (Karpenter finds subnets and security groups by this tag)')

    def provider_pin(self, d: str) -> None:
        need = INSTALL["requires_aws_provider"]
        for p in self.repo.tf_in_dir(d if d != "." else ""):
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


def _tokenised(o: Any) -> Any:
    """An object with its ${...} Terraform references as tokens, for validation."""
    if isinstance(o, dict):
        return {k: _tokenised(v) for k, v in o.items()}
    if isinstance(o, list):
        return [_tokenised(v) for v in o]
    if isinstance(o, str) and "${" in o:
        return re.sub(r"\$\{[^}]*\}", "__MIG_0__", o)
    return o


def run(ctx, phase: str) -> InstallResult:
    if phase != PHASE:
        res = InstallResult()
        res.done = bool(ctx.charts)
        return res
    return Installer(ctx).run()
