"""The karpenter.tf beside the cluster: the karpenter module (matched to the eks module's provider range), the
karpenter-crd and karpenter releases, the NodePools as kubectl_manifest resources, the providers it needs, the
controller's Fargate profile, and the provider pins that would stop terraform init."""
from __future__ import annotations

import posixpath
import re
from typing import Any

from .... import knowledge
from ....cas import yaml_values
from ....edits import NewFile, TextEdit, line_start, to_newline
from ....modmajor import irsa_document
from ....placement import align_attributes
from ....sources import hcl as hclsrc
from ....sources import yaml as yamlsrc
from .. import convert
from .clusters import _connection, _group_name_expr, _kubectl_block, _kubectl_provider, _oidc_provider
from .common import INSTALL, MARK, MODULE, NODE_MAPPING, RULE, STAGE_OUTPUTS, _find, _hcl_value
from .stages import Split


class TerraformFile:
    """The karpenter.tf beside the cluster: the karpenter module, the charts, the NodePools as kubectl_manifest, the
    providers it needs."""

    def match_module(self, d: str, shapes: list) -> None:
        """The karpenter module's major matched to the eks module's provider range: beside an eks module call whose
        release caps the AWS provider below what v21 needs, the last v20 release (knowledge/cas.yaml
        `install.matched_v20`) and the newest chart its policy serves (minors.yaml `module_coverage`), when the
        cluster's Kubernetes (as its code states it) is in that chart's range; else the newest module, and the eks
        move said first (MIG-CAS-039)."""
        from ....modmajor import capped_eks
        from ....path import parse_version
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
        from ....path import parse_version
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
        from ....resolve import definition_sites
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

    # -- the Terraform file ---------------------------------------------------------------------------------------
    @staticmethod
    def module_refs(expr: str, kept=None, eks: str = "") -> dict[str, str]:
        """How the charts and the objects name the cluster, the karpenter module's outputs and the controller's node
        group, beside the module."""
        name = INSTALL["module_name"]
        group = _group_name_expr(kept.group, eks) if kept else None
        return {"cluster": expr, **{k: f"module.{name}.{k}" for k in STAGE_OUTPUTS}, **({"group": group} if group else {})}

    def terraform(self, d: str, expr: str, eks: str, kept, kubectl: bool, pools, classes, style: str,
                  names: dict[str, str], head: list[str] = (), refs: dict[str, str] | None = None,
                  split: "Split | None" = None):
        """The karpenter.tf beside the cluster; with a split, (that file, the charts' file of the other stage)."""
        name = INSTALL["module_name"]
        ns = INSTALL["namespace"]
        refs = refs or self.module_refs(expr, kept, eks)
        top = [f"# Karpenter next to Cluster Autoscaler ({MARK}:",
               "# phase install). Cluster Autoscaler keeps scaling until the cutover phase."
               + ("" if style == "terraform" else f" The charts are installed by {style}.")]
        if split is not None:
            top += [f"# The charts and NodePools are in {split.dir}, which reads this stage's outputs below."]
        out = top + [""] + ([] if split is not None else list(head))
        out += self.module_block(d, expr, eks, names, style)
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

    def module_block(self, d: str, expr: str, eks: str, names: dict[str, str], style: str) -> list[str]:
        """The karpenter module call (the controller's identity, the node role's access and fixed names, the
        policy inline where it must be) and, with IRSA, the trust document it takes."""
        name = INSTALL["module_name"]
        ns, sa = INSTALL["namespace"], INSTALL["service_account"]
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
        out = mod
        if self.res.identity == "irsa" and self.matched is None:
            doc = irsa_document(MODULE, name, f"{name}_irsa", oidc, f'["{ns}:{sa}"]',
                                '"StringEquals"').replace(
                "The IRSA trust the karpenter module's v20 wrote itself (v21 takes it as a source document)",
                "The controller's IRSA trust (the module takes it as a source document)")
            out += doc.rstrip("\n").splitlines() + [""]
        return out

    def kubectl_from_callers(self, d: str, expr: str) -> list[str] | None:
        """A module folder (no provider of its own, as Terraform wants of a called module) whose every calling root
        module configures a kubernetes provider that states where the cluster is: kubectl goes into the module's
        required_providers, and each caller gets it declared and configured as its kubernetes provider is (a new file
        beside that provider). The lines karpenter.tf starts with, or None (nothing written: MIG-CAS-007 follows)."""
        from ....roots import _module_users
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
        from .... import policysize
        from ....path import parse_version
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

    def provider_pin(self, d: str) -> None:
        need = INSTALL["requires_aws_provider"]
        from ....modmajor import capped_eks, configuration_dirs
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
                from ....modmajor import constraint
                op, ver = constraint(m.group(1))
                if ver is not None and ((op in ("~>", "=", "") and ver[0] < need) or
                                        (op == "<" and ver[0] <= need)):
                    _find(self.res, "MIG-CAS-017", "warning", p, hclsrc.line_of(text, m.start()),
                          f"the AWS provider is pinned to {m.group(1)}; the karpenter module "
                          f"{INSTALL['module_version']} needs >= {need}.0",
                          f"allow the AWS provider {need}.x (and run terraform init -upgrade) before applying")
