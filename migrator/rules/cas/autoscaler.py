"""Rule `cas/autoscaler`: Cluster Autoscaler to zero replicas (phase `cutover`), then removed with its IAM (phase
`cleanup`), in the installer it was written with: a Terraform `helm_release` (its values or `set`), a Flux
HelmRelease (`spec.values.replicaCount`), a Deployment (`spec.replicas`)."""
# What each installer shape writes is in retire/, one room per shape (retire/__init__.py, docs/design.md).
from __future__ import annotations

import posixpath

from . import convert
from ...model import Finding
from ...placement import remove_blocks
from ...sources import hcl as hclsrc
from .install.common import MARK
from .retire.cleanup import CleanupScope
from .retire.common import RULE, AutoscalerResult, _append_item  # noqa: F401
from .retire.gitops import GitOpsInstalls
from .retire.helmfile import HelmfileInstalls
from .retire.manifests import ManifestInstalls
from .retire.companions import own_iam
from .retire.terraform import TerraformInstalls


class Autoscaler(TerraformInstalls, GitOpsInstalls, ManifestInstalls, HelmfileInstalls, CleanupScope):
    """Cluster Autoscaler to zero (cutover) and removed (cleanup): run() goes over its installs, each shape's room
    writes."""

    def __init__(self, ctx, phase: str):
        self.ctx, self.phase, self.repo = ctx, phase, ctx.repo
        self.res = AutoscalerResult()
        self._gone: dict[str, list[hclsrc.Block]] = {}      # cleanup: blocks to remove, per file
        self._together: dict[str, frozenset[str]] = {}       # cleanup: address -> the blocks that stay or go with it

    def run(self) -> AutoscalerResult:
        cas = convert.inventory(self.ctx)
        if cas is None or not cas.present or not (self.ctx.charts or cas.clusters):
            return self.res             # nothing to cut over to before Karpenter's chart is in (eksctl: by helm)
        if not convert.taken_over(self.ctx):
            if self.phase == "cutover" and not any(m.kind == "NodePool" for m in self.ctx.manifests) and any(
                    MARK in self.repo.text(c.path) for c in self.ctx.charts):
                self.waiting(cas)       # migrator's own install left the NodePools out
            return self.res             # Karpenter runs beside Cluster Autoscaler but took over no node group
        for ci in cas.installs:
            if ci.path in cas.copies and self.phase in ("cutover", "cleanup"):
                src, script, line = cas.copies[ci.path]
                self.res.findings.append(Finding(
                    "MIG-CAS-058", "warning", script, line,
                    f"{script} copies {src} over {ci.path}: running it again puts Cluster Autoscaler back "
                    f"({'its replicas' if self.phase == 'cutover' else 'its install'}), undoing this phase",
                    f"make the same change in {src} ({'replicaCount: 0' if self.phase == 'cutover' else 'remove it'}"
                    " and the copy), or stop running the script"))
            if ci.kind == "terraform":
                self.terraform(ci)
            elif ci.kind == "module":
                self.module(ci)
            elif ci.kind == "wrapper":
                self.wrapper(ci)
            elif ci.kind == "flux":
                self.flux(ci)
            elif ci.kind == "argocd":
                self.argocd(ci)
            elif ci.kind == "kustomize":
                self.kustomize(ci)
            elif ci.kind == "tfdeployment":
                self.tf_deployment(ci)
            elif ci.kind == "kubectl":
                self.kubectl(ci)
            elif ci.kind == "script":
                self.script(ci)
            elif ci.kind == "helmfile":
                self.helmfile(ci)
            else:
                self.deployment(ci)
        if self.phase == "cleanup":
            for p, b in cas.iam:
                self._gone.setdefault(p, []).append(b)
                self.res.removed.append(b.address)
                self.res.targets.append((p.rsplit("/", 1)[0] if "/" in p else ".", b.address))
                self.res.findings.append(Finding("MIG-CAS-021", "info", p, hclsrc.line_of(self.repo.text(p), b.start),
                                                 f"{b.address} (Cluster Autoscaler's IAM role) removed"))
            self._eksctl_service_accounts(cas)
            covered: set[int] = set()
            for role, going, how in own_iam(self.repo, cas, self.ctx.owns):
                group = frozenset(b.address for _, b in going)
                self._together.update({a: group for a in group})
                for p, b in going:
                    self._gone.setdefault(p, []).append(b)
                    self.res.removed.append(b.address)
                    if b.type == "resource":        # a data source leaves the state with any apply
                        self.res.targets.append((posixpath.dirname(p) or ".", b.address))
                    covered.add(id(b))
                rp, rb = role
                self.res.findings.append(Finding(
                    "MIG-CAS-021", "info", rp, hclsrc.line_of(self.repo.text(rp), rb.start),
                    f"{rb.address} (Cluster Autoscaler's IAM role, bound to its service account by {how}) removed with "
                    + ", ".join(b.address for _, b in going if b is not rb)))
            for p, b in cas.policies:
                if id(b) in covered:
                    continue
                self.res.findings.append(Finding(
                    "MIG-CAS-029", "warning", p, hclsrc.line_of(self.repo.text(p), b.start),
                    f"{b.address} grants Cluster Autoscaler's autoscaling actions; migrator does not remove a policy "
                    "it did not recognise as Cluster Autoscaler's own",
                    f"remove {b.address} (and its attachment) once Cluster Autoscaler is gone, unless something else "
                    "uses it"))
            self._settle()
            self._emptied_modules()
            self._orphan_files()
            for p, blocks in self._gone.items():
                if blocks:
                    self.res.edits.extend(remove_blocks(self.repo, p, blocks, RULE))
            from ...edits import coalesced
            self.res.edits = coalesced(self.res.edits, self.repo.text)
        return self.res

    def waiting(self, cas) -> None:
        """Karpenter's charts are in and no NodePool exists (the install could not write them): the move stands
        half-way, Cluster Autoscaler keeps scaling, and every plan says so until the NodePools exist."""
        ci = cas.installs[0]
        groups = ", ".join(g.name for g in cas.groups) or "none found"
        chart = self.ctx.charts[0].path if self.ctx.charts else "the Karpenter install"
        self.res.work_outside = True
        self.res.findings.append(Finding(
            "MIG-CAS-049", "error", ci.path, ci.line,
            f"Karpenter is installed beside Cluster Autoscaler ({ci.address}) but no NodePool exists yet, so nothing "
            f"is cut over: Cluster Autoscaler keeps scaling the node groups ({groups})",
            f"write one NodePool per node group, named for it (docs/from-cluster-autoscaler.md), or move {chart} "
            "aside, give migrator what the install's findings asked for (a kubectl provider, or the cluster's name "
            "as a literal) and plan the install again: it writes the same charts with the NodePools; the cutover is "
            "planned once they exist"))

def run(ctx, phase: str, done: dict | None = None) -> AutoscalerResult:
    return Autoscaler(ctx, phase).run()
