"""Rule `auto/cleanup`: Karpenter's controller and its AWS side removed; its CRDs kept (phase `cleanup`).

The controller chart's install goes wherever it is written (a `helm_release`, a Flux HelmRelease, an Argo CD
Application); the terraform-aws-modules karpenter module (controller role, interruption queue and rules, node role
and its access entry) goes with it, the same things written by hand (handwritten.py), and the outputs that only read
them. The CRD chart stays: EKS Auto Mode shares nodepools.karpenter.sh and nodeclaims.karpenter.sh, and uninstalling
it deletes every NodePool and NodeClaim.
Nothing goes while a NodePool still needs Karpenter (one that cannot move to Auto Mode).
"""
from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field

from ...edits import Edit, TextEdit
from ...model import Finding
from ...placement import kustomization_remove
from ...placement import remove_blocks
from ...sources import hcl as hclsrc
from ...sources import yaml as yamlsrc
from ...standing import auto_mode
from . import addons, convert, handwritten
from .links import unlink

RULE = "auto/cleanup"
FACTS = convert.FACTS["cleanup"]


@dataclass
class CleanupResult:
    edits: list[Edit] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)           # the CRD releases kept
    targets: list[tuple[str, str]] = field(default_factory=list)
    releases: list[tuple[str, str, str]] = field(default_factory=list)   # (kind, namespace, name) outside Terraform
    files: list[str] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)         # node groups that hosted the controller
    guard_crds: bool = False        # an Argo CD Application that also applied the CRDs goes: keep them first


def _find(res, code, severity, path, line, message, manual=""):
    res.findings.append(Finding(code, severity, path, line, message, manual))


def run(ctx, phase: str, done: dict | None = None) -> CleanupResult:
    res = CleanupResult()
    if phase != "cleanup":
        return res
    cluster = (done or {}).get("auto/cluster")
    if cluster is None or not (getattr(cluster, "enabled", False) or getattr(cluster, "installer", None) == ""):
        return res
    old = [m for m in ctx.manifests if m.kind in ("NodePool", "EC2NodeClass") and m.era == "v1" and not auto_mode(m)]
    if old:
        return res                      # the cutover comes first (or a pool stays on Karpenter: said there)
    if not any(auto_mode(m) for m in ctx.manifests):
        _find(res, "MIG-AUTO-042", "info", "", 0,
              "no Auto Mode NodePool is written in this root: Karpenter's controller is removed only where the "
              "repository holds the NodePools that replace its own")
        return res
    repo = ctx.repo
    blocks: dict[str, list] = {}
    for c in ctx.charts:
        if c.chart in FACTS["crd_charts"]:
            res.kept.append(f"{c.address} ({c.path}:{c.line})")
            _find(res, "MIG-AUTO-043", "info", c.path, c.line,
                  f"{c.address} (the karpenter-crd chart) stays: EKS Auto Mode shares nodepools.karpenter.sh and "
                  "nodeclaims.karpenter.sh, and uninstalling the chart deletes them with every NodePool and NodeClaim",
                  "keep it, or stop managing it without deleting the CRDs (terraform state rm / a `removed` block "
                  "with lifecycle { destroy = false }; Flux: spec.uninstall.keepHistory and helm.sh/resource-policy: "
                  "keep); never upgrade it again")
            continue
        if c.chart not in FACTS["controller_charts"]:
            continue
        if c.kind == "terraform" and c.block is not None and not c.generic:
            blocks.setdefault(c.path, []).append(c.block)
        elif c.kind in ("flux", "argocd") and c.doc is not None:
            _remove_doc(repo, c, res)
        else:
            _find(res, "MIG-AUTO-044", "warning", c.path, c.line,
                  f"{c.address} installs Karpenter's controller in a way migrator does not remove ({c.kind})",
                  "uninstall the karpenter release by hand (helm uninstall karpenter -n <namespace>); keep "
                  "karpenter-crd")
    from ..v1.terraform_module import modules
    for p, b, _ in modules(ctx):
        blocks.setdefault(p, []).append(b)
        extra = b.attr("node_iam_role_additional_policies")
        if cluster.installer != "module" and extra is not None and extra.source.strip() not in ("", "{}"):
            # carried (or said) by the enable phase only where it edits an eks module
            _find(res, "MIG-AUTO-017", "warning", p, hclsrc.line_of(repo.text(p), extra.start),
                  f"{b.address} gives Karpenter's nodes extra policies that go with it and that migrator cannot carry "
                  "to the Auto Mode node role", "give the Auto Mode node role the policies its pods still need")
    more, said = handwritten.aws_side(ctx, blocks)
    res.findings += said
    for p, bs in more.items():
        blocks.setdefault(p, []).extend(bs)
    addresses = {b.address: (p, b) for p, bs in blocks.items() for b in bs}
    if not addresses and not res.edits:
        return res
    extra = unlink(repo, addresses, RULE, res.edits, res.findings, dead_values=True)
    if extra is None:
        return res
    for p, b in extra:
        blocks.setdefault(p, []).append(b)
    for p, bs in blocks.items():
        text = repo.text(p)
        res.edits += remove_blocks(repo, p, bs, RULE)
        for b in bs:
            res.removed.append(f"{b.address} ({p}:{hclsrc.line_of(text, b.start)})")
            if b.type not in ("output", "data"):
                res.targets.append((posixpath.dirname(p) or ".", b.address))
    res.findings += leftovers(repo, blocks)
    controller_groups(ctx, res)
    from ...cas import scan
    inv = scan(ctx.repo)
    others = [g.name for g in inv.groups if ctx.owns(g.path)] + \
        [f"fargate ({p})" for p, _ in inv.fargate if ctx.owns(p)]
    res.findings += addons.said(ctx, others)
    res.files = sorted({e.path for e in res.edits})
    if res.edits and not any(c.chart in FACTS["controller_charts"] for c in ctx.charts):
        _find(res, "MIG-AUTO-047", "info", "", 0,
              "Karpenter's controller is not installed from this repository's files: only its pieces here are removed",
              "uninstall its release where it is installed (helm uninstall karpenter -n <namespace>) before this "
              "phase is applied, so it never runs without its IAM; keep karpenter-crd")
    return res


def controller_groups(ctx, res: CleanupResult) -> None:
    """The node groups that hosted Karpenter's controller: the ones its chart values pin it to (nodeSelector, a node
    group affinity), or marked for it (auto_mode.yaml cleanup.controller_group). Offered for removal, said."""
    from ...cas import scan
    spec = FACTS["controller_group"]
    selector = {v.keys[-1]: str(v.value) for v in ctx.helm_values if len(v.keys) == 2 and v.keys[0] == "nodeSelector"
                and v.value is not None}
    named: set[str] = set()             # the groups a node-group affinity of the chart names

    def walk(x) -> None:
        if isinstance(x, dict):
            if x.get("key") in spec["group_labels"] and isinstance(x.get("values"), list):
                named.update(str(n) for n in x["values"])
            for y in x.values():
                walk(y)
        elif isinstance(x, list):
            for y in x:
                walk(y)
    for v in ctx.helm_values:
        if v.keys[:1] == ("affinity",):
            walk(v.value)
    for g in scan(ctx.repo).groups:
        if not ctx.owns(g.path):
            continue
        labels = g.fields.get("labels") if isinstance(g.fields.get("labels"), dict) else {}
        why = next((f"the chart's nodeSelector {k}={v}" for k, v in selector.items() if str(labels.get(k)) == v), None) \
            or ("the chart's affinity names it" if g.name in named else None) \
            or next((f"its label {k}" for k in spec["labels"] if k in labels), None) \
            or ("its name" if re.search(spec["name"], g.name) else None)
        if why is None:
            continue
        res.groups.append(g.name)
        _find(res, "MIG-AUTO-050", "info", g.path, g.line,
              f"node group {g.name} hosted Karpenter's controller ({why}): with the controller gone it can go once "
              "nothing else runs on it; migrator leaves it",
              f"drain it and remove it from {g.path} when coredns and the other add-ons run on Auto Mode's nodes")


def leftovers(repo, going: dict[str, list]) -> list[Finding]:
    """What only the removed blocks read (a data source such as the public ECR token the chart pulled with, a local,
    a variable such as the chart's version): left in place, said, so the module keeps nothing unexplained."""
    from ...tfgraph import _nodes, references
    out: list[Finding] = []
    for d in sorted({posixpath.dirname(p) or "." for p in going}):
        files = {p: repo.text(p) for p in repo.tf_in_dir("" if d == "." else d)}
        nodes = _nodes(files)
        gone = {b.address for p, bs in going.items() if (posixpath.dirname(p) or ".") == d for b in bs}
        variables = {f"var.{b.labels[0]}": (p, b) for p in files for b in (repo.hcl(p).blocks if repo.hcl(p) else [])
                     if b.type == "variable" and b.labels}
        names = set(nodes) | set(variables)
        readers: dict[str, set[str]] = {}
        for n, body in nodes.items():
            for r in references(body, names) - {n}:
                readers.setdefault(r, set()).add(n)
        for n in sorted(names - gone):
            if not (n.startswith(("data.", "local.", "var.")) and readers.get(n)) or not readers[n] <= gone:
                continue
            where = next(((p, b.start) for p in files for b in (repo.hcl(p).blocks if repo.hcl(p) else [])
                          if (n.startswith("data.") and b.type == "data" and f"data.{'.'.join(b.labels)}" == n)
                          or (n.startswith("local.") and b.type == "locals" and n[6:] in b.attributes)), None)
            if n in variables:
                where = (variables[n][0], variables[n][1].start)
            p, at = where if where else (d, 0)
            out.append(Finding("MIG-AUTO-049", "info", p, hclsrc.line_of(files[p], at) if p in files else 0,
                               f"{n} was read only by what this phase removes ({', '.join(sorted(readers[n]))}): "
                               "it is left in place", f"remove {n} once nothing outside these files needs it"))
    return out + read_files(repo, going)


# a file()/templatefile() call anywhere in a block, a string interpolation's included ("${file("${path.module}/x")}")
FILE_CALL = re.compile(r'\b(?:templatefile|file)\(\s*"((?:[^"$]|\$\{path\.(?:module|root)\})+)"')


def read_files(repo, going: dict[str, list]) -> list[Finding]:
    """Files of the repository that only the removed blocks read (`templatefile("${path.module}/values.yaml.tpl")`,
    a JSON policy `file()` reads): no text left names them, so nothing reads them any more. Left in place, said
    (a script outside the repository may still use one)."""
    out: list[Finding] = []
    inside: dict[str, list[tuple[int, int]]] = {}      # the removed blocks' spans, per file
    named: dict[str, list[str]] = {}                   # a read file -> the removed blocks that read it
    for p, bs in going.items():
        text = repo.text(p)
        for b in bs:
            inside.setdefault(p, []).append((b.start, b.end))
            for m in FILE_CALL.finditer(text, b.start, b.end):
                target = repo.resolve_file_text(p, m.group(1))
                if target in repo.files:
                    named.setdefault(target, []).append(b.address)
    for target, readers in sorted(named.items()):
        base = posixpath.basename(target)
        left = False
        for q in repo.containing(base):
            if q == target:
                continue
            text = repo.text(q)
            spans = inside.get(q, [])
            at = text.find(base)
            while at >= 0 and not left:
                left = not any(a <= at < z for a, z in spans)
                at = text.find(base, at + 1)
            if left:
                break
        if not left:
            out.append(Finding("MIG-AUTO-049", "info", target, 1,
                               f"{target} was read only by what this phase removes ({', '.join(sorted(set(readers)))}): "
                               "it is left in place, and nothing in the repository reads it any more",
                               f"delete {target} unless something outside the repository still uses it"))
    return out


def _skips_crds(obj: dict) -> bool:
    spec = obj.get("spec") or {}
    sources = [spec.get("source")] + list(spec.get("sources") or [])
    return any(str(((s or {}).get("helm") or {}).get("skipCrds")).lower() == "true" for s in sources
               if isinstance(s, dict) and s.get("chart"))


def _remove_doc(repo, c, res: CleanupResult) -> None:
    text = repo.text(c.path)
    docs = yamlsrc.split_documents(text)
    meta = (c.obj or {}).get("metadata") or {}
    res.releases.append((str((c.obj or {}).get("kind")), str(meta.get("namespace") or ""), str(meta.get("name"))))
    if c.kind == "argocd" and not _skips_crds(c.obj or {}):
        # Argo CD applies the chart's crds/ too unless told not to, and a cascading delete removes all it applied
        res.guard_crds = True
        _find(res, "MIG-AUTO-048", "warning", c.path, c.line,
              f"{c.address} applies the chart's CRDs too (no helm.skipCrds): deleting it with its resources would "
              "delete nodepools.karpenter.sh and nodeclaims.karpenter.sh, and every Auto Mode NodePool with them",
              "before the Application goes, mark the CRDs so Argo CD keeps them: kubectl annotate crd "
              + " ".join(FACTS["shared_crds"]) + " argocd.argoproj.io/sync-options=Delete=false --overwrite "
              "(the runbook step does it)")
    res.removed.append(f"{c.address} ({c.path}:{c.line})")
    real = [d for d in docs if d.text.strip() and d.text.strip() != "---"]
    if len(real) <= 1:
        from ...edits import DeleteFile
        res.edits.append(DeleteFile(c.path, RULE))
        e = kustomization_remove(repo, c.path, RULE)
        if e is not None:
            res.edits.append(e)
        return
    i = next(i for i, d in enumerate(docs) if d.start == c.doc.start)
    if i + 1 < len(docs):
        res.edits.append(TextEdit(c.path, docs[i].start, docs[i + 1].start, "", RULE))
    else:
        res.edits.append(TextEdit(c.path, docs[i - 1].end if i > 0 else 0, docs[i].end, "", RULE))
