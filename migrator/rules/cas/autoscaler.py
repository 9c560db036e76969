"""Rule `cas/autoscaler`: Cluster Autoscaler to zero replicas (phase `cutover`), then removed with its IAM (phase
`cleanup`), in the installer it was written with: a Terraform `helm_release` (its values or `set`), a Flux
HelmRelease (`spec.values.replicaCount`), a Deployment (`spec.replicas`)."""
from __future__ import annotations

import posixpath
import re
import shlex
from dataclasses import dataclass, field

from ...cas import FACTS, CasInstall, helm_sets_are_lists, set_entries, yaml_values
from ...inventory import value_at
from ...inventory.blueprints import at_path
from ...inventory.terragrunt import output_readers, terragrunt
from . import convert
from ...edits import DeleteFile, Edit, TextEdit, apply_edits, indent_at, line_end, line_start, to_newline
from ...model import Finding
from ...placement import remove_blocks
from ...sources import hcl as hclsrc
from ...sources import keytree
from ...sources.keytree import Op
from .install.common import MARK

RULE = "cas/autoscaler"


def _scale_zero(ci: CasInstall) -> str:
    """The kubectl command that scales the chart's Deployment to zero: found by the name label the chart gives it
    (knowledge/cas.yaml `detect.app_name`, or the module's nameOverride, its row's `app_name`)."""
    name = (ci.row or {}).get("app_name") or FACTS["detect"]["app_name"]
    return f"kubectl -n {ci.namespace} scale deployment -l app.kubernetes.io/name={name} --replicas=0"


CUTOVER_MARK = "# Karpenter provisions nodes now (migrator: the move from Cluster Autoscaler, cutover)"


@dataclass
class AutoscalerResult:
    edits: list[Edit] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    scaled: list[tuple[str, str, str]] = field(default_factory=list)    # (address, namespace, replicas before)
    removed: list[str] = field(default_factory=list)                   # addresses removed (cleanup)
    targets: list[tuple[str, str]] = field(default_factory=list)       # (dir, address) for terraform -target
    deployments: list[tuple[str, str]] = field(default_factory=list)   # (namespace, name) to scale/delete by kubectl
    script_zero: list[str] = field(default_factory=list)    # commands scaling what a script installs to zero
    script_remove: list[str] = field(default_factory=list)  # commands removing it
    apps: list[str] = field(default_factory=list)                      # Argo CD Applications of Cluster Autoscaler
    kustomizations: list[str] = field(default_factory=list)            # folders whose helmCharts install it
    eksctl_sas: list[tuple[str, str]] = field(default_factory=list)     # eksctl IAM service accounts removed
    work_outside: bool = False          # Karpenter installed, no NodePool yet: the cutover waits (said on every plan)


def _replicas_tf(ci: CasInstall, text: str) -> tuple[object, tuple[int, int] | None, hclsrc.Expr | None]:
    """(replicaCount as written, span of its value, the yamlencode/jsonencode object to add it to)."""
    b = ci.block
    for n, v in set_entries(b):
        if n.literal() == "replicaCount" and v is not None:
            return v.literal(), (v.start, v.end), None
    vals = b.attr("values")
    obj = None
    for item in hclsrc.list_items(vals):
        if (found := hclsrc.encoded_object(item)) is not None:
            obj = found
            for e in obj.entries:
                if e.key == "replicaCount":
                    return e.value.literal(), (e.value.start, e.value.end), obj
    return None, None, obj


def _append_item(path: str, text: str, tup: hclsrc.Expr, item: str) -> TextEdit:
    """Add an item at the end of a list as written: on its line when the list is on one line, else on a line of its
    own at the items' indentation (with the comma the items are written with)."""
    if not tup.items:
        return TextEdit(path, tup.start, tup.end, f"[{item}]", RULE)
    last = tup.items[-1]
    if hclsrc.line_of(text, last.end) == hclsrc.line_of(text, tup.start):
        return TextEdit(path, last.end, last.end, f", {item}", RULE)
    ind = indent_at(text, last.start)
    rest = text[last.end:line_end(text, last.end)]
    comma = rest.lstrip().startswith(",")
    eol = last.end + len(rest.rstrip("\r\n"))
    nl = "\r\n" if rest.endswith("\r\n") else "\n"
    return TextEdit(path, last.end, eol, ("" if comma else ",") + text[last.end:eol] + f"{nl}{ind}{item}"
                    + ("," if comma else ""), RULE)


def _at_zero(ci: CasInstall) -> bool:
    """A Deployment of Cluster Autoscaler that its YAML already scales to zero."""
    return str((ci.obj.get("spec") or {}).get("replicas")) == "0"


class Autoscaler:
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

    def _eksctl_service_accounts(self, cas) -> None:
        """Cluster Autoscaler's IAM service account of an eksctl ClusterConfig (`iam.serviceAccounts`) goes from the
        file, and the runbook deletes its role and service account (eksctl delete iamserviceaccount)."""
        from ...sources.yamlspans import yaml_entry_span, yaml_item_span, yaml_key_start
        for p, doc, i, ns, name in cas.eksctl_sas:
            obj = next(o for q, d, o in cas.clusters if q == p and d.start == doc.start)
            text = self.repo.text(p)
            seq = obj["iam"]["serviceAccounts"]
            mine = [x[2] for x in cas.eksctl_sas if x[0] == p and x[1].start == doc.start]
            if len(mine) == len(seq) > 1:       # the list empties: its key goes with it (not left as null)
                if i == mine[0]:
                    self.res.edits.append(TextEdit(p, yaml_key_start(text, doc.start, obj["iam"], "serviceAccounts"),
                                                   yaml_item_span(text, doc.start, seq, len(seq) - 1)[1], "", RULE))
            else:
                self.res.edits.append(TextEdit(p, *yaml_entry_span(text, doc.start, obj["iam"], "serviceAccounts", i),
                                               "", RULE))
            self.res.eksctl_sas.append((ns, name))
            self.res.removed.append(f"iam.serviceAccounts[{ns}/{name}]")
            self.res.findings.append(Finding(
                "MIG-CAS-021", "info", p, doc.first_line + obj["iam"]["serviceAccounts"].lc.item(i)[0] + 1,
                f"iam.serviceAccounts {ns}/{name} (Cluster Autoscaler's IAM role) removed; the runbook deletes it "
                "with eksctl delete iamserviceaccount"))

    def _orphan_files(self) -> None:
        """A file only the removed blocks read (a values file given by file()/templatefile()) goes with them: no other
        file of the repository names it outside those blocks."""
        from ...cas import read_files
        going = [(p, b) for p, bs in self._gone.items() for b in bs]
        spans: dict[str, list[tuple[int, int]]] = {}
        for p, b in going:
            spans.setdefault(p, []).append((b.start, b.end))
        done = {e.path for e in self.res.edits if isinstance(e, DeleteFile)}
        for p, b in going:
            for f in sorted(read_files(self.repo, p, b)[0] - done):
                base = posixpath.basename(f)
                if f not in self.repo.files or any(
                        not any(s <= m.start() < e for s, e in spans.get(q, []))
                        for q, sf in self.repo.files.items() if q != f and base in sf.text
                        for m in re.finditer(re.escape(base), sf.text)):
                    continue
                done.add(f)
                self.res.edits.append(DeleteFile(f, RULE))
                self.res.removed.append(f)
                self.res.findings.append(Finding("MIG-CAS-020", "info", f, 0,
                                                 f"{f} removed: only {b.address} (Cluster Autoscaler's) read it"))

    def _settle(self) -> None:
        """Nothing the cleanup removes may be left read: a `depends_on` naming it loses that entry, an output reading
        it goes with it, and a block that any other block of its module still reads stays (with what only it reads),
        said: its readers decide when it can go."""
        from ...tfgraph import unlink
        # a folder whose outputs Terragrunt units read comes last: what those units' modules keep is settled first
        dirs = {posixpath.dirname(p) for p in self._gone}
        read = {x for x in dirs if any(output_readers(self.repo, x, b.labels[0]) for q in self.repo.tf_in_dir(x)
                                       for b in (self.repo.hcl(q).blocks if self.repo.hcl(q) else [])
                                       if b.type == "output")}
        for d in sorted(dirs, key=lambda x: (x in read, x)):
            while True:
                going = {b.address: (p, b) for p, bs in self._gone.items() if posixpath.dirname(p) == d for b in bs}
                if not going:
                    break
                edits: list[Edit] = []
                told: list[Finding] = []        # the inputs freed, said once this pass holds nothing
                outputs, readers = unlink(self.repo, going, RULE, edits)
                for p, b in list(outputs):      # an output a Terragrunt unit reads holds what it reads (said),
                    units = output_readers(self.repo, d, b.labels[0])   # unless that unit only passes it on to
                    freed = self._unit_inputs(units, d, b.labels[0]) if units else None   # what goes too
                    if freed is not None:
                        edits += freed[0]
                        told += freed[1]
                        continue
                    if units:
                        outputs.remove((p, b))
                        body = self.repo.text(p)[b.start:b.end]
                        readers[f"{b.address} (read by {', '.join(units)})"] = (
                            p, b, [a for a in going if re.search(r"\b" + re.escape(a) + r"\b", body)])
                held = {a: sorted(r for r, (_, _, hits) in readers.items() if a in hits)
                        for a in {h for _, _, hits in readers.values() for h in hits}}
                if not held:
                    self.res.edits += edits
                    self.res.findings += told
                    for p, b in outputs:
                        self._gone.setdefault(p, []).append(b)
                        self.res.removed.append(b.address)
                        self.res.findings.append(Finding(
                            "MIG-CAS-020", "info", p, hclsrc.line_of(self.repo.text(p), b.start),
                            f"{b.address} removed with what it reads (Cluster Autoscaler's)",
                            "anything reading this output from another state (terraform_remote_state) stops too"))
                    break
                for a in sorted({x for h in held for x in self._together.get(h, ())} - set(held)):
                    held[a] = []                # Cluster Autoscaler's IAM stays whole when one of its blocks does
                for a, by in sorted(held.items()):
                    p, b = going[a]
                    self._gone[p] = [x for x in self._gone[p] if x is not b]
                    self.res.removed = [x for x in self.res.removed if x != a]
                    self.res.targets = [t for t in self.res.targets if t[1] != a]
                    self.res.findings = [f for f in self.res.findings if not (
                        f.code in ("MIG-CAS-020", "MIG-CAS-021") and f.message.startswith(f"{a} "))]
                    if not by:
                        continue                # stays with the block of its group another block reads (said)
                    self.res.findings.append(Finding(
                        "MIG-CAS-042", "warning", p, hclsrc.line_of(self.repo.text(p), b.start),
                        f"{a} belongs to Cluster Autoscaler but stays: {', '.join(by)} reads it"
                        + (f" (with {', '.join(sorted(self._together[a] - {a}))}, which go with it)"
                           if a in self._together else ""),
                        f"remove {a} by hand once {', '.join(by)} no longer reads it"))

    def _unit_inputs(self, units: list[str], d: str, output: str) -> tuple[list[Edit], list[Finding]] | None:
        """The edits (and what they say) that free an output of module folder `d` from the Terragrunt units reading
        it, when each unit only passes it on as one input (`k = dependency.x.outputs.<output>`) whose variable, in the
        unit's module, is read by nothing but blocks this cleanup removes: the input entry and the variable go. None
        when any reader does more (the output then holds what it reads, said). A unit of another environment (a
        module several environments' units apply) is freed alike by its own root's plan: checked here, not edited."""
        edits: list[Edit] = []
        told = []
        own = [u for u in units if self.ctx.owns(u)]
        if not own:
            return None
        for u in sorted(units, key=lambda x: x not in own):
            f, text = self.repo.hcl(u), self.repo.text(u)
            inputs = f.attributes.get("inputs") if f is not None else None
            obj = inputs.expr if inputs is not None else None
            ref = re.compile(rf"dependency\.[\w-]+\.outputs\.{re.escape(output)}")
            hits = [e for e in (obj.entries if obj is not None and obj.kind == "object" else [])
                    if ref.search(e.value.source)]
            unit = terragrunt(self.repo).unit_at(posixpath.dirname(u) or ".")
            m = unit.module_dir if unit is not None else None
            if len(hits) != 1 or not ref.fullmatch(hits[0].value.source.strip()) or \
                    len(list(ref.finditer(text))) != 1 or m is None:
                return None
            key = hits[0].key
            going = {id(b) for q, bs in self._gone.items() if (posixpath.dirname(q) or ".") == m for b in bs}
            var = None
            for q in self.repo.tf_in_dir(m if m != "." else ""):
                qf, qt = self.repo.hcl(q), self.repo.text(q)
                for b in (qf.blocks if qf is not None else []):
                    if b.type == "variable" and b.labels == [key]:
                        var = (q, b)
                    elif re.search(rf"\bvar\.{re.escape(key)}\b", qt[b.start:b.end]) and id(b) not in going:
                        return None         # read by a block that stays
            if var is None or not going:
                return None
            e = hits[0]
            a, z = line_start(text, e.start), line_end(text, e.end)
            if text[a:e.start].strip() or text[e.end:z].strip().rstrip(","):
                return None                 # not on lines of its own
            if u not in own:
                if (var[0], var[1].start) in {(q, b.start) for _, _, _, (q, b) in told}:
                    continue                # another environment's unit of the same module: its root frees it
                return None
            edits.append(TextEdit(u, a, z, "", RULE))
            edits += remove_blocks(self.repo, var[0], [var[1]], RULE)
            told.append((u, hclsrc.line_of(text, e.start), key, var))
        return edits, [Finding("MIG-CAS-020", "info", u, line,
                               f"input {key} removed, with variable.{key} of {posixpath.dirname(q) or '.'}: it "
                               f"passed {output} of {d} to Cluster Autoscaler's blocks only, which go; the output goes "
                               "with it") for u, line, key, (q, b) in told]

    def _emptied_modules(self) -> None:
        """A local module the cleanup leaves with no resource, module or data block (a module of the repository that
        held Cluster Autoscaler only) goes whole with its one call: its files are deleted and the call removed, when
        nothing else in the caller's module reads the call (else the module stays, empty, said)."""
        from ...tfgraph import unlink
        for d in sorted({posixpath.dirname(p) for p in self._gone if posixpath.dirname(p)}):
            calls = self.repo.callers(d)
            if len(calls) != 1 or not self.ctx.owns(calls[0][0]):
                continue
            going = {id(b) for p, bs in self._gone.items() if posixpath.dirname(p) == d for b in bs}
            files = self.repo.tf_in_dir(d)
            blocks = [(p, b) for p in files for b in (self.repo.hcl(p).blocks if self.repo.hcl(p) else [])]
            if not going or any(b.type in ("resource", "module", "data") and id(b) not in going for _, b in blocks):
                continue
            cp, cb = calls[0]
            edits: list[Edit] = []
            outputs, readers = unlink(self.repo, {cb.address: (cp, cb)}, RULE, edits)
            if outputs or readers:
                self.res.findings.append(Finding(
                    "MIG-CAS-042", "warning", cp, hclsrc.line_of(self.repo.text(cp), cb.start),
                    f"{cb.address} is left with nothing but variables once Cluster Autoscaler goes, and stays: "
                    f"{', '.join(sorted([*readers, *(b.address for _, b in outputs)]))} reads it",
                    f"remove {cb.address} and {d} by hand once nothing reads it"))
                continue
            self.res.edits = [e for e in self.res.edits if e.path not in files] + edits
            for p in files:
                self._gone[p] = [b for q, b in blocks if q == p]
            self._gone.setdefault(cp, []).append(cb)
            self.res.removed.append(cb.address)
            self.res.targets.append((posixpath.dirname(cp) or ".", cb.address))
            self.res.findings.append(Finding(
                "MIG-CAS-020", "info", cp, hclsrc.line_of(self.repo.text(cp), cb.start),
                f"{cb.address} removed with its module {d}: nothing but Cluster Autoscaler was in it"))

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

    def terraform(self, ci: CasInstall) -> None:
        text = self.repo.text(ci.path)
        nl = self.repo.files[ci.path].newline
        d = ci.path.rsplit("/", 1)[0] if "/" in ci.path else "."
        if self.phase == "cleanup":
            self._gone.setdefault(ci.path, []).append(ci.block)
            self._removed(ci, d, ci.address, "removed")
            return
        if self.phase != "cutover":
            return
        current, span, obj = _replicas_tf(ci, text)
        if current is not None and str(current) == "0":
            return
        if span is not None:
            self.res.edits.append(TextEdit(ci.path, span[0], span[1], '"0"' if text[span[0]] == '"' else "0", RULE))
        elif ci.block.attr("set") is not None:          # helm provider 3: `set` is a list
            sets = ci.block.attr("set")
            if sets.kind != "tuple":
                self.res.findings.append(Finding(
                    "MIG-CAS-040", "warning", ci.path, hclsrc.line_of(text, sets.start),
                    f"{ci.address}.set is {sets.brief()}: migrator does not edit an expression, so Cluster "
                    "Autoscaler is not scaled to 0 in the files",
                    f"give its chart replicaCount 0 there, or scale it with {_scale_zero(ci)}"))
                return
            self.res.edits.append(_append_item(ci.path, text, sets, '{ name = "replicaCount", value = "0" }'))
        elif obj is not None and obj.entries:
            first = obj.entries[0]
            ind = text[line_start(text, first.start):first.start]
            ls = line_start(text, first.start)
            self.res.edits.append(TextEdit(ci.path, ls, ls, to_newline(f"{ind}replicaCount = 0\n", nl), RULE))
        else:
            ind = "  "
            pos = line_start(text, ci.block.body_end)
            entry = f'set = [{{ name = "replicaCount", value = "0" }}]\n' if helm_sets_are_lists(self.repo, d) else \
                f'set {{\n{ind}  name  = "replicaCount"\n{ind}  value = "0"\n{ind}}}\n'
            self.res.edits.append(TextEdit(ci.path, pos, pos, to_newline(
                f"\n{ind}{CUTOVER_MARK}\n"
                f"{ind}{entry}", nl), RULE, order=2))
        self.res.scaled.append((ci.address, ci.namespace, str(current if current is not None else 1)))
        self.res.targets.append((d, ci.address))
        self.res.findings.append(Finding("MIG-CAS-022", "info", ci.path, ci.line,
                                         f"{ci.address}: Cluster Autoscaler scaled to 0 replicas (was "
                                         f"{current if current is not None else 'the chart default, 1'})"))

    def _removed(self, ci: CasInstall, d: str, target: str, how: str) -> None:
        self.res.removed.append(ci.address)
        self.res.targets.append((d, target))
        self.res.findings.append(Finding("MIG-CAS-020", "info", ci.path, ci.line, f"{ci.address} (Cluster Autoscaler) {how}"))

    def module(self, ci: CasInstall) -> None:
        """An add-on module that installs Cluster Autoscaler by an input (knowledge/cas.yaml `modules`): replicaCount 0
        through its chart settings at the cutover, its switch off at the cleanup."""
        row, b = ci.row, ci.block
        text, nl = self.repo.text(ci.path), self.repo.files[ci.path].newline
        d = ci.path.rsplit("/", 1)[0] if "/" in ci.path else "."
        ind = _indent_in(text, b)
        if self.phase == "cleanup":
            sw = at_path(b, row["switch"])
            if sw is None and "." in row["switch"]:     # on by the module's default, a key no object writes
                self.res.findings.append(Finding(
                    "MIG-CAS-040", "warning", ci.path, ci.line,
                    f"{ci.address} is on by the module's default and the call writes no such key",
                    f"set {row['switch']} = false in the call (Cluster Autoscaler is replaced by Karpenter), then apply"))
                return
            if sw is not None and sw.kind != "bool":
                self.res.findings.append(Finding(
                    "MIG-CAS-040", "warning", ci.path, hclsrc.line_of(text, sw.start),
                    f"{ci.address} is {sw.source.strip()}: migrator does not edit an expression",
                    f"set what {sw.source.strip()} reads to false (Cluster Autoscaler is replaced by Karpenter), then apply"))
                return
            if sw is not None:
                self.res.edits.append(TextEdit(ci.path, sw.start, sw.end, "false", RULE))
            else:
                pos = line_start(text, b.body_end)
                self.res.edits.append(TextEdit(ci.path, pos, pos, to_newline(
                    f"\n{ind}# Cluster Autoscaler is replaced by Karpenter (migrator: the move from Cluster Autoscaler)\n"
                    f"{ind}{row['switch']} = false\n", nl), RULE, order=2))
            self._removed(ci, d, b.address, "switched off")
            return
        if self.phase != "cutover":
            return
        cfg = b.attr(row["config"])
        zero_set = '{ name = "replicaCount", value = "0" }'
        if row["scale"] == "values_text":
            self._values_text(ci, d, cfg)
            return
        if cfg is None:
            value = f"{{\n{ind}  set = [{zero_set}]\n{ind}}}" if row["scale"] == "object_set" else \
                f'{{\n{ind}  replicaCount = "0"\n{ind}}}'
            pos = line_start(text, b.body_end)
            self.res.edits.append(TextEdit(ci.path, pos, pos, to_newline(
                f"\n{ind}{CUTOVER_MARK}\n"
                f"{ind}{row['config']} = {value}\n", nl), RULE, order=2))
        else:
            entries = {e.key: e for e in cfg.entries} if cfg.kind == "object" else None
            key = "set" if row["scale"] == "object_set" else "replicaCount"
            if entries is None or key in entries or not cfg.entries or \
                    hclsrc.line_of(text, cfg.entries[0].start) == hclsrc.line_of(text, cfg.start):
                if entries is not None and key in entries and re.search(
                        r'name\s*=\s*"replicaCount"\s*,\s*value\s*=\s*"?0"?' if key == "set" else r'^"?0"?$',
                        entries[key].value.source.strip()):
                    return                          # already scaled to 0 (the cutover landed)
                self.res.findings.append(Finding(
                    "MIG-CAS-040", "warning", ci.path, hclsrc.line_of(text, cfg.start),
                    f"{b.address}.{row['config']} is written in a way migrator does not edit (an expression, or it "
                    f"already has {key}): Cluster Autoscaler is not scaled to 0 in the files",
                    f"give Cluster Autoscaler's chart replicaCount 0 there ({zero_set}), or scale it with "
                    f"{_scale_zero(ci)}"))
                return
            first = cfg.entries[0]
            eind = text[line_start(text, first.start):first.start]
            ls = line_start(text, first.start)
            line = f"{eind}set = [{zero_set}]\n" if key == "set" else f'{eind}replicaCount = "0"\n'
            self.res.edits.append(TextEdit(ci.path, ls, ls, to_newline(line, nl), RULE))
        self.res.scaled.append((f"{b.address}.{row['config']}", ci.namespace, "1"))
        self.res.targets.append((d, b.address))
        self.res.findings.append(Finding("MIG-CAS-022", "info", ci.path, ci.line,
                                         f"{b.address}: Cluster Autoscaler scaled to 0 replicas through "
                                         f"{row['config']}"))

    def _values_text(self, ci: CasInstall, d: str, cfg) -> None:
        """The cutover of a module that gives the chart YAML text last (knowledge/cas.yaml `values_text`): a line
        `replicaCount: 0` closes the heredoc at its top level, or the key is added with that one line."""
        row, b = ci.row, ci.block
        text, nl = self.repo.text(ci.path), self.repo.files[ci.path].newline
        entries = {e.key: e for e in cfg.entries} if cfg is not None and cfg.kind == "object" else {}
        vals = entries[row["values"]].value if row["values"] in entries else None
        said = f"{b.address}.{row['config']}.{row['values']}"
        edit = None
        if vals is None and cfg is not None and cfg.entries and \
                hclsrc.line_of(text, cfg.entries[0].start) != hclsrc.line_of(text, cfg.start):
            first = cfg.entries[0]                      # an object written one entry per line: the key added
            ls = line_start(text, first.start)
            edit = TextEdit(ci.path, ls, ls, to_newline(
                f'{text[ls:first.start]}{row["values"]} = "replicaCount: 0" {CUTOVER_MARK}\n', nl), RULE)
        elif vals is not None and re.fullmatch(r"\s*replicaCount:\s*0\s*", str(vals.literal())):
            return                                      # already scaled to 0 (the cutover landed)
        elif vals is not None and vals.kind == "heredoc" and vals.heredoc is not None:
            h = vals.heredoc
            body = text[h.body_start:h.body_end]
            top = rf"(?m)^[ \t]{{{h.indent}}}replicaCount:"      # a key at the YAML's top level, not nested
            if re.search(top + r"[ \t]*0[ \t]*(#.*)?$", body):
                return                                  # already scaled to 0 (the cutover landed)
            if not re.search(top, body):                # a replica count of the user's own is not overwritten
                edit = TextEdit(ci.path, h.body_end, h.body_end, to_newline(
                    f"{' ' * h.indent}replicaCount: 0 {CUTOVER_MARK}\n", nl), RULE)
        if edit is None:
            self.res.findings.append(Finding(
                "MIG-CAS-040", "warning", ci.path, ci.line,
                f"{said} is written in a way migrator does not edit (an expression, an object on one line, or a "
                "replicaCount of its own): Cluster Autoscaler is not scaled to 0 in the files",
                f"give Cluster Autoscaler's chart replicaCount: 0 there, or scale it with {_scale_zero(ci)}"))
            return
        self.res.edits.append(edit)
        self.res.scaled.append((said, ci.namespace, "1"))
        self.res.targets.append((d, b.address))
        self.res.findings.append(Finding("MIG-CAS-022", "info", ci.path, ci.line,
                                         f"{b.address}: Cluster Autoscaler scaled to 0 replicas through {said}"))

    def wrapper(self, ci: CasInstall) -> None:
        """A generic Helm release module given Cluster Autoscaler's chart (knowledge/cas.yaml `wrappers`, or a module
        of the repository): replicaCount 0 added to its list of `set` entries at the cutover; at the cleanup the call
        goes, with what the module made for it."""
        row, b = ci.row, ci.block
        text, nl = self.repo.text(ci.path), self.repo.files[ci.path].newline
        d = posixpath.dirname(ci.path) or "."
        if self.phase == "cleanup":
            self._gone.setdefault(ci.path, []).append(b)
            self._removed(ci, d, b.address, f"removed (the call of {row['name']})")
            return
        if self.phase != "cutover":
            return
        entry = '{ name = "replicaCount", value = "0"' + (', type = "string"' if row.get("set_type") else "") + " }"
        sets = b.attr(row["set"]) if row.get("set") else None
        edit = None
        if row.get("set") and sets is None:
            ind = _indent_in(text, b)
            pos = line_start(text, b.body_end)
            edit = TextEdit(ci.path, pos, pos, to_newline(
                f"\n{ind}{CUTOVER_MARK}\n"
                f"{ind}{row['set']} = [{entry}]\n", nl), RULE, order=2)
        elif sets is not None and sets.kind == "tuple":
            for item in sets.items:
                keys = {e.key: e.value for e in item.entries} if item.kind == "object" else {}
                if keys.get("name") is not None and keys["name"].literal() == "replicaCount" and "value" in keys:
                    v = keys["value"]
                    if str(v.literal()) == "0":
                        return                                  # already scaled to 0 (the cutover landed)
                    edit = TextEdit(ci.path, v.start, v.end, '"0"', RULE)
            if edit is None:
                edit = _append_item(ci.path, text, sets, entry)
        if edit is None:
            self.res.findings.append(Finding(
                "MIG-CAS-040", "warning", ci.path, ci.line,
                f"{b.address} gives {row['name']} its helm values in a way migrator does not edit ("
                + (f"{row['set']} is {sets.brief()}" if sets is not None else "no input of helm `set` "
                   "values") + "): Cluster Autoscaler is not scaled to 0 in the files",
                f"give Cluster Autoscaler's chart replicaCount 0 there, or scale it with {_scale_zero(ci)}"))
            return
        self.res.edits.append(edit)
        self.res.scaled.append((b.address, ci.namespace, "1"))
        self.res.targets.append((d, b.address))
        self.res.findings.append(Finding("MIG-CAS-022", "info", ci.path, ci.line,
                                         f"{b.address}: Cluster Autoscaler scaled to 0 replicas through its "
                                         f"{row['set']} input"))

    def flux(self, ci: CasInstall) -> None:
        text = self.repo.text(ci.path)
        if self.phase == "cleanup":
            self._remove_doc(ci, text)
            return
        if self.phase != "cutover":
            return
        values = (ci.obj.get("spec") or {}).get("values") or {}
        if str(values.get("replicaCount")) == "0":
            return
        self._set(ci, text, ("spec", "values", "replicaCount"), values.get("replicaCount"))

    def argocd(self, ci: CasInstall) -> None:
        text = self.repo.text(ci.path)
        self.res.apps.append(ci.name)
        if self.phase == "cleanup":
            self._remove_doc(ci, text)
            self._value_files(ci)
            return
        if self.phase != "cutover":
            return
        # the chart's source (`source`, or its item of `sources` beside a `ref:` values source): Argo CD merges
        # parameters > valuesObject > values > valueFiles, so replicaCount 0 goes into a replicaCount parameter where
        # one is set, else into valuesObject, which wins over the values and value files of any source
        at = ("spec",) + tuple(ci.source)
        src = value_at(ci.obj, at)
        helm = (src.get("helm") or {}) if isinstance(src, dict) else None
        params = helm.get("parameters") if isinstance(helm, dict) else None
        if helm is None or (params is not None and not isinstance(params, list)):
            self.res.findings.append(Finding(
                "MIG-CAS-023", "warning", ci.path, ci.line,
                f"{ci.address}: its chart source cannot be read, so migrator does not set replicaCount there",
                f"set replicaCount: 0 in its values (or {_scale_zero(ci)} with auto-sync off)"))
            return
        i = next((n for n, x in enumerate(params or []) if isinstance(x, dict) and x.get("name") == "replicaCount"),
                 None)
        if i is not None:
            current = params[i].get("value")
            if str(current) != "0":
                self._set(ci, text, at + ("helm", "parameters", i, "value"), current, value="0")
            return
        current = (helm.get("valuesObject") or {}).get("replicaCount")
        if str(current) == "0":
            return
        if isinstance(helm.get("values"), str) and helm.get("valuesObject") is None and params is None:
            # Argo CD reads valuesObject instead of the `values` text, not over it: a valuesObject added beside
            # `values: |` would drop every other value, so the replicas go in as a parameter (helm --set)
            self._set(ci, text, at + ("helm", "parameters"), None,
                      value=[{"name": "replicaCount", "value": "0"}])
            return
        self._set(ci, text, at + ("helm", "valuesObject", "replicaCount"), current)

    def _value_files(self, ci: CasInstall) -> None:
        """The values files of this repository the Application's chart read (`$<ref>/<path>`) go with it, unless
        another file names them (then they stay, said)."""
        from ...cas import argocd_value_paths
        spec = ci.obj.get("spec") or {}
        src = value_at(ci.obj, ("spec",) + tuple(ci.source))
        for vp in argocd_value_paths(self.repo, spec, src if isinstance(src, dict) else {}):
            others = sorted(p for p, sf in self.repo.files.items() if p not in (ci.path, vp) and vp in sf.text)
            if others:
                self.res.findings.append(Finding(
                    "MIG-CAS-042", "warning", vp, 1,
                    f"{vp} (Cluster Autoscaler's values for {ci.address}) stays: {', '.join(others)} names it too",
                    f"remove {vp} by hand once nothing uses it"))
                continue
            self.res.edits.append(DeleteFile(vp, RULE))
            self.res.removed.append(vp)

    def kustomize(self, ci: CasInstall) -> None:
        text = self.repo.text(ci.path)
        self.res.kustomizations.append(posixpath.dirname(ci.path) or ".")
        item = ci.obj["helmCharts"][ci.source[1]]
        if self.phase == "cleanup":
            from ...sources.yamlspans import yaml_entry_span
            self.res.edits.append(TextEdit(ci.path, *yaml_entry_span(text, ci.doc.start, ci.obj, "helmCharts",
                                                                     ci.source[1]), "", RULE))
            self._removed_entry(ci, f"helmCharts {ci.name} in {ci.path}",
                                f"helmCharts entry {ci.name} (Cluster Autoscaler) removed")
            return
        if self.phase != "cutover":
            return
        current = (item.get("valuesInline") or {}).get("replicaCount")
        if str(current) == "0":
            return
        tree = keytree.yaml_tree(text, ci.path, ci.doc.start, ci.doc.end, ci.obj, under=ci.source)
        op = Op("set", ("valuesInline", "replicaCount"), value=0) if current is not None else \
            Op("add", dst=("valuesInline", "replicaCount"), value=0)
        out = keytree.rewrite(tree, [op])
        if out.problems:
            self.res.findings.append(Finding("MIG-CAS-023", "warning", ci.path, ci.line,
                                             f"helmCharts entry {ci.name}: cannot set valuesInline.replicaCount here",
                                             f"scale Cluster Autoscaler to 0 by hand (valuesInline.replicaCount: 0)"))
            return
        nl = self.repo.files[ci.path].newline
        for s_, e, t in out.edits:
            self.res.edits.append(TextEdit(ci.path, s_, e, to_newline(t, nl), RULE))
        self.res.scaled.append((f"helmCharts {ci.name}", ci.namespace, str(current if current is not None else 1)))
        self.res.findings.append(Finding("MIG-CAS-022", "info", ci.path, ci.line,
                                         f"helmCharts entry {ci.name}: Cluster Autoscaler scaled to 0 replicas"))

    def deployment(self, ci: CasInstall) -> None:
        """A Deployment manifest: applied by kubectl, or by Terraform reading its file (`ci.readers`: the
        kubectl_manifest applies it, so Terraform scales and removes it)."""
        text = self.repo.text(ci.path)
        applied = [(p, b) for p, b in ci.readers if b.type == "resource"]
        if not applied:
            self.res.deployments.append((ci.namespace, ci.name))
        if self.phase == "cleanup":
            self._remove_doc(ci, text)
            return
        if self.phase != "cutover" or _at_zero(ci):
            return
        self._set(ci, text, ("spec", "replicas"), (ci.obj.get("spec") or {}).get("replicas"))
        self.res.targets += [(posixpath.dirname(p) or ".", b.address) for p, b in applied]

    def kubectl(self, ci: CasInstall) -> None:
        """A Deployment in a kubectl_manifest heredoc: replicas 0 in the heredoc at the cutover; at the cleanup the
        block goes, with the kubectl_manifest blocks of its module holding only its ServiceAccount and RBAC."""
        from ...cas import kubectl_objects
        d = posixpath.dirname(ci.path) or "."
        if self.phase == "cleanup":
            going = [ci.block]
            for p, b in _module_objects(self.repo, posixpath.dirname(ci.path)):
                docs = kubectl_objects(self.repo, p, b) if b.labels[:1] == ["kubectl_manifest"] and b is not ci.block \
                    else []
                if docs and all(_companion(obj, ci) for _, obj in docs):
                    going.append(b)
                    self.res.removed.append(b.address)
                    self.res.targets.append((d, b.address))
            self._gone.setdefault(ci.path, []).extend(going)
            self._removed(ci, d, ci.block.address, "removed")
            return
        if self.phase != "cutover" or _at_zero(ci):
            return
        spec = ci.obj.get("spec") or {}
        if len(kubectl_objects(self.repo, ci.path, ci.block)) != 1:
            self.res.findings.append(Finding("MIG-CAS-023", "warning", ci.path, ci.line,
                                             f"{ci.address}: its yaml_body holds several documents, so migrator does "
                                             "not set spec.replicas in it", f"set replicas: 0 there by hand, or "
                                             f"kubectl -n {ci.namespace} scale deployment/{ci.name} --replicas=0"))
            return
        body = ci.block.attr("yaml_body")
        if self._set(ci, self.repo.text(ci.path), ("spec", "replicas"), spec.get("replicas"),
                     heredoc=body.heredoc, encoded=hclsrc.encoded_object(body)):
            self.res.targets.append((d, ci.address))

    def script(self, ci: CasInstall) -> None:
        """Cluster Autoscaler installed by a script: its chart by the helm CLI (the runbook scales the release to zero
        with helm, its other values kept, and uninstalls it), the example manifest by `kubectl apply -f <url>` (scaled
        with kubectl, deleted with the same file), or a Deployment the script writes and applies (scaled and deleted
        with kubectl). migrator never edits shell scripts: said at both phases."""
        shape = "chart" if ci.chart else "written" if ci.source[0] == "written" else "applied"
        src = ci.source[1] if len(ci.source) > 1 else ""
        words = {k: shlex.quote(str(v or "")) for k, v in (("name", ci.name), ("namespace", ci.namespace),
                                                           ("chart", ci.chart), ("source", src))}
        zero, remove = (FACTS["script_commands"][shape][k].format(**words) for k in ("zero", "remove"))
        if shape == "chart":
            how, keep = "with helm", "add --set replicaCount=0 to this helm call"
        elif shape == "written":            # a manifest the script writes at run time, then applies
            how, keep = f"as the manifest it writes to {ci.source[1]}", "write replicas: 0 in that manifest"
        else:
            how, keep = f"from {ci.source[1]}", f"follow this kubectl apply with `{zero}`"
        self.res.script_zero.append(zero)
        self.res.script_remove.append(remove)
        if self.phase == "cutover":
            current = yaml_values(ci).get("replicaCount", 1)
            self.res.scaled.append((ci.address, ci.namespace, str(current)))
            self.res.findings.append(Finding(
                "MIG-CAS-051", "warning", ci.path, ci.line,
                f"{ci.address} is installed by this script {how}: the runbook scales it to zero ({zero}), and running "
                "the script again would bring it back",
                f"{keep} (or stop running it) until the cleanup removes it"))
        elif self.phase == "cleanup":
            self.res.findings.append(Finding(
                "MIG-CAS-051", "warning", ci.path, ci.line,
                f"{ci.address} is installed by this script {how}: the runbook removes it ({remove}), and migrator does "
                "not edit the script",
                "remove this helm call (and the helm repo add it needs) from the script" if ci.chart else
                "remove the manifests it writes and applies (with their ServiceAccount and RBAC) from the script"
                if ci.source[0] == "written" else "remove that line from the script"))

    def _removed_entry(self, ci: CasInstall, what: str, message: str) -> None:
        self.res.removed.append(what)
        self.res.findings.append(Finding("MIG-CAS-020", "info", ci.path, ci.line, message))

    def helmfile(self, ci: CasInstall) -> None:
        """A helmfile release: `replicaCount: 0` in its last inline values map (a values item appended when its last
        item is a file, a `values:` key when it has none: later values win in helmfile) at the cutover; at the cleanup
        the release goes from the helmfile (with the `repositories:` entry only it used) and the runbook uninstalls it
        (helmfile apply does not remove a release that is no longer listed)."""
        from ...sources.yamlspans import yaml_entry_span, yaml_item_span, yaml_list_end
        text = self.repo.text(ci.path)
        nl = self.repo.files[ci.path].newline
        releases = ci.obj["releases"]
        rel = releases[ci.source[1]]
        self.res.script_remove.append(f"helm uninstall {shlex.quote(ci.name)} -n {shlex.quote(ci.namespace)}")
        if self.phase == "cleanup":
            span = yaml_item_span(text, ci.doc.start, releases, ci.source[1])
            self.res.edits.append(TextEdit(ci.path, *span, "", RULE))
            rest = text[:span[0]] + text[span[1]:]
            for item in rel.get("values") or []:          # a values file only this release read goes with it
                if not isinstance(item, str) or "{{" in item:
                    continue
                f = posixpath.normpath(posixpath.join(posixpath.dirname(ci.path), item))
                base = posixpath.basename(f)
                if f in self.repo.files and base not in rest and not any(
                        base in sf.text for q, sf in self.repo.files.items() if q not in (ci.path, f)):
                    self.res.edits.append(DeleteFile(f, RULE))
                    self.res.removed.append(f)
            prefix = str(rel.get("chart") or "").split("/")[0]
            repos = ci.obj.get("repositories")
            users = [r for j, r in enumerate(releases) if j != ci.source[1] and isinstance(r, dict)
                     and str(r.get("chart") or "").split("/")[0] == prefix]
            for j, r in enumerate(repos if isinstance(repos, list) else []):
                if isinstance(r, dict) and str(r.get("name")) == prefix and not users:
                    self.res.edits.append(TextEdit(ci.path, *yaml_entry_span(text, ci.doc.start, ci.obj,
                                                                             "repositories", j), "", RULE))
            self._removed_entry(ci, f"{ci.address} in {ci.path}",
                                f"{ci.address} (Cluster Autoscaler) removed; the runbook uninstalls it")
            return
        if self.phase != "cutover":
            return
        current = yaml_values(ci).get("replicaCount", 1)
        if str(current) == "0":
            return
        values = rel.get("values")
        last = values[-1] if isinstance(values, list) and values else None
        mark = CUTOVER_MARK
        sets = [s for s in rel.get("set") or [] if isinstance(s, dict) and s.get("name") == "replicaCount"]
        if sets:                            # `set` wins over every values item: its own value goes to 0
            lines = text[ci.doc.start:].splitlines(keepends=True)
            for s in sets:
                if "value" not in s:
                    continue
                vl, vc = s.lc.value("value")
                start = ci.doc.start + sum(len(x) for x in lines[:vl]) + vc
                m = re.match(r"[^\s#]+", text[start:])
                if m:
                    self.res.edits.append(TextEdit(ci.path, start, start + m.end(), "0", RULE))
        elif isinstance(last, dict) and last:
            tree = keytree.yaml_tree(text, ci.path, ci.doc.start, ci.doc.end, ci.obj,
                                     under=ci.source + ("values", len(values) - 1))
            op = Op("set", ("replicaCount",), value=0) if "replicaCount" in last else \
                Op("add", dst=("replicaCount",), value=0)
            out = keytree.rewrite(tree, [op])
            if out.problems:
                self.res.findings.append(Finding(
                    "MIG-CAS-023", "warning", ci.path, ci.line, f"{ci.address}: cannot set replicaCount in its values "
                    "here", "scale Cluster Autoscaler to 0 by hand (a values item `replicaCount: 0`)"))
                return
            for s_, e, t_ in out.edits:
                self.res.edits.append(TextEdit(ci.path, s_, e, to_newline(t_, nl), RULE))
        elif isinstance(values, list) and values:
            pos, col = yaml_list_end(text, ci.doc.start, values)
            self.res.edits.append(TextEdit(ci.path, pos, pos, to_newline(
                f"{' ' * col}{mark}\n{' ' * col}- replicaCount: 0\n", nl), RULE))
        else:
            ind = " " * releases.lc.item(ci.source[1])[1]       # the release's keys stand where its first key does
            pos, _ = yaml_list_end(text, ci.doc.start, releases) if ci.source[1] == len(releases) - 1 else \
                (yaml_item_span(text, ci.doc.start, releases, ci.source[1])[1], 0)
            while pos > ci.doc.start and not text[line_start(text, pos - 1):pos].strip():
                pos = line_start(text, pos - 1)
            self.res.edits.append(TextEdit(ci.path, pos, pos, to_newline(
                f"{ind}{mark}\n{ind}values:\n{ind}  - replicaCount: 0\n", nl), RULE))
        self.res.scaled.append((ci.address, ci.namespace, str(current)))
        self.res.findings.append(Finding("MIG-CAS-022", "info", ci.path, ci.line,
                                         f"{ci.address}: Cluster Autoscaler scaled to 0 replicas"))

    def tf_deployment(self, ci: CasInstall) -> None:
        """A Deployment written with the kubernetes provider: `spec.replicas = 0` at the cutover; at the cleanup the
        Deployment and the objects only it used (its ServiceAccount, the bindings of that account, the roles only they
        grant) are removed; an object something else in the module reads stays, said."""
        text = self.repo.text(ci.path)
        d = posixpath.dirname(ci.path) or "."
        if self.phase == "cleanup":
            going, kept = tf_companions(self.repo, ci)
            if ci.block.address in kept:
                self.res.findings.append(Finding(
                    "MIG-CAS-042", "warning", ci.path, ci.line,
                    f"{ci.address} (Cluster Autoscaler) stays: {kept[ci.block.address]}",
                    f"remove {ci.address} and what only it uses by hand once nothing reads it"))
                return
            for p, b in going:
                self._gone.setdefault(p, []).append(b)
                if b is not ci.block:
                    self.res.removed.append(b.address)
                    if b.type != "output":              # an output is no -target; the next full apply drops it
                        self.res.targets.append((posixpath.dirname(p) or ".", b.address))
            self._removed(ci, d, ci.address, "removed, with " + (", ".join(b.address for _, b in going
                                                                            if b is not ci.block) or "nothing else"))
            for a, why in sorted(kept.items()):
                p, b = next((p, b) for p, b in _module_objects(self.repo, posixpath.dirname(ci.path)) if b.address == a)
                self.res.findings.append(Finding(
                    "MIG-CAS-042", "warning", p, hclsrc.line_of(self.repo.text(p), b.start),
                    f"{a} belongs to Cluster Autoscaler but stays: {why}",
                    f"remove {a} by hand once nothing reads it"))
            return
        if self.phase != "cutover":
            return
        spec = ci.block.sub("spec")[0]
        r = spec.attr("replicas")
        current = r.literal() if r is not None else None
        if current is not None and str(current) == "0":
            return
        if r is not None:
            self.res.edits.append(TextEdit(ci.path, r.start, r.end, '"0"' if r.kind == "string" else "0", RULE))
        else:
            first = min([a.start for a in spec.attributes.values()] + [x.start for x in spec.blocks])
            ls = line_start(text, first)
            self.res.edits.append(TextEdit(ci.path, ls, ls, to_newline(
                f"{text[ls:first]}replicas = 0\n", self.repo.files[ci.path].newline), RULE))
        self.res.scaled.append((ci.address, ci.namespace, str(current if current is not None else
                                                              (r.source if r is not None else 1))))
        self.res.targets.append((d, ci.address))
        self.res.findings.append(Finding("MIG-CAS-022", "info", ci.path, ci.line,
                                         f"{ci.address}: Cluster Autoscaler scaled to 0 replicas (was "
                                         f"{current if current is not None else r.source if r is not None else 1})"))

    def _set(self, ci: CasInstall, text: str, path: tuple, current, value=0, heredoc=None, encoded=None) -> bool:
        """Set a value of Cluster Autoscaler's object (its YAML document, a kubectl_manifest heredoc holding it, or
        the HCL object a kubectl_manifest encodes) in place; a finding either way. True when the edit is made."""
        cut = max((n + 1 for n, k in enumerate(path) if isinstance(k, int)), default=0)   # below a list item:
        under, path = tuple(path[:cut]), tuple(path[cut:])                             # the item is the tree
        if encoded is not None:
            tree = keytree.hcl_tree(text, ci.path, encoded)
        elif heredoc is not None:
            tree = keytree.yaml_tree(text, ci.path, heredoc.body_start, heredoc.body_end, ci.obj,
                                     strip=heredoc.indent if heredoc.trim else 0)
        else:
            tree = keytree.yaml_tree(text, ci.path, ci.doc.start, ci.doc.end, ci.obj, under=under)
        op = Op("set", path, value=value) if current is not None else Op("add", dst=path, value=value)
        out = keytree.rewrite(tree, [op])
        if out.problems:
            self.res.findings.append(Finding("MIG-CAS-023", "warning", ci.path, ci.line,
                                             f"{ci.address}: cannot set {'.'.join(map(str, under + path))} to 0 here",
                                             f"scale Cluster Autoscaler to 0 by hand: kubectl -n {ci.namespace} scale "
                                             f"deployment/{ci.name} --replicas=0"))
            return False
        nl = self.repo.files[ci.path].newline
        for s, e, t in out.edits:
            self.res.edits.append(TextEdit(ci.path, s, e, to_newline(t, nl), RULE))
        self.res.scaled.append((ci.address, ci.namespace, str(current if current is not None else 1)))
        self.res.findings.append(Finding("MIG-CAS-022", "info", ci.path, ci.line,
                                         f"{ci.address}: Cluster Autoscaler scaled to 0 replicas"))
        return True

    def _remove_doc(self, ci: CasInstall, text: str) -> None:
        """Remove Cluster Autoscaler's document, and the HelmRepository only it used; a plain Deployment's own objects
        (its ServiceAccount, RBAC) in its file or beside it in its folder; a file (and its kustomization entry) when
        nothing else is left in it."""
        from ...sources import yaml as yamlsrc
        docs = [d for d in yamlsrc.split_documents(text) if d.text.strip()]
        gone = [d for d in docs if d.start == ci.doc.start]
        src = (((ci.obj.get("spec") or {}).get("chart") or {}).get("spec") or {}).get("sourceRef") or {} \
            if ci.kind == "flux" else {}
        if src.get("kind") == "HelmRepository" and not self._source_used_elsewhere(str(src.get("name")), ci):
            for d in docs:
                obj = yamlsrc.load(d.text) if "HelmRepository" in d.text else None
                if isinstance(obj, dict) and obj.get("kind") == "HelmRepository" and \
                        (obj.get("metadata") or {}).get("name") == src.get("name"):
                    gone.append(d)
        others: list[str] = []
        if ci.kind == "flux":
            for name in self._own_values_configmaps(ci):
                for p in sorted(self.repo.files):
                    if not p.endswith((".yaml", ".yml")) or name not in self.repo.text(p):
                        continue
                    theirs = docs if p == ci.path else \
                        [d for d in yamlsrc.split_documents(self.repo.text(p)) if d.text.strip()]
                    mine = [d for d in theirs if _is_configmap(_load(d.text), name)]
                    if p == ci.path:
                        gone += [d for d in mine if d not in gone]
                    elif mine:
                        self._drop_docs(p, self.repo.text(p), theirs, mine)
                        others.append(p)
                others += self._drop_generator(ci, name)
        if ci.kind == "deployment":
            gone += [d for d in docs if d not in gone and _companion(_load(d.text), ci)]
            folder = posixpath.dirname(ci.path)
            for p in sorted(self.repo.files):
                if p != ci.path and posixpath.dirname(p) == folder and p.endswith((".yaml", ".yml")) and \
                        _RBAC.search(self.repo.text(p)):
                    theirs = [d for d in yamlsrc.split_documents(self.repo.text(p)) if d.text.strip()]
                    mine = [d for d in theirs if _companion(_load(d.text), ci)]
                    if mine:
                        self._drop_docs(p, self.repo.text(p), theirs, mine)
                        others.append(p)
        self._drop_docs(ci.path, text, docs, gone)
        if ci.readers and len(gone) == len(docs):
            self._drop_readers(ci)
        elif ci.readers:
            self.res.targets += [(posixpath.dirname(p) or ".", b.address) for p, b in ci.readers if b.type == "resource"]
            for p, b in ci.readers:
                if b.type == "resource" and b.attr("count") is not None:
                    self.res.findings.append(Finding(
                        "MIG-CAS-047", "info", p, hclsrc.line_of(self.repo.text(p), b.start),
                        f"{b.address} applies {ci.path}'s documents by position (count): with Cluster Autoscaler's "
                        "removed, Terraform replaces the objects whose position moves (deleted, then created again)",
                        "expect those objects to be recreated on apply, or key the kubectl_manifest by document "
                        "(for_each over the documents) first"))
        self.res.removed.append(ci.address)
        self.res.findings.append(Finding("MIG-CAS-020", "info", ci.path, ci.line, f"{ci.address} (Cluster Autoscaler) "
                                         "removed" + (f", with its objects in {', '.join(others)}" if others else "")))

    def _drop_readers(self, ci: CasInstall) -> None:
        """The file is deleted: the Terraform blocks that apply only it go too (a file() of a missing file fails the
        plan). A block that also applies other files (a glob, a kubectl_manifest over several sources) or that
        something else reads stays; when one of those names the file directly, the file stays too (said)."""
        from ...cas import read_files
        from ...tfgraph import references
        addr = {(p, b.start): b.address if b.type == "resource" else f"data.{'.'.join(b.labels)}" for p, b in ci.readers}
        only, direct = {}, {}
        for p, b in ci.readers:
            files, names = read_files(self.repo, p, b)
            only[addr[(p, b.start)]], direct[addr[(p, b.start)]] = files <= {ci.path}, names
        for p, b in ci.readers:              # a kubectl_manifest applying the documents of data sources
            a = addr[(p, b.start)]
            if not read_files(self.repo, p, b)[0]:
                reads = references(self.repo.text(p)[b.body_start:b.body_end], {x for x in only if x != a})
                only[a] = all(only[r] for r in reads)
        going, kept = [], []
        for p, b in ci.readers:
            a = addr[(p, b.start)]
            others = [x.address for x_p, x in _module_objects(self.repo, posixpath.dirname(p))
                      if (x_p, x.start) not in addr and x.type != "output"
                      and re.search(r"\b" + re.escape(a) + r"\b", self.repo.text(x_p)[x.body_start:x.body_end])]
            if only[a] and not others:
                going.append((p, b))
            elif direct[a] or others:
                kept.append((p, b, a, others))
        if kept:
            self.res.edits = [e for e in self.res.edits if not (isinstance(e, DeleteFile) and e.path == ci.path)]
            for p, b, a, others in kept:
                why = f"{', '.join(others)} reads it" if others else "it applies other files too"
                self.res.findings.append(Finding(
                    "MIG-CAS-042", "warning", p, hclsrc.line_of(self.repo.text(p), b.start),
                    f"{a} applies {ci.path} and {why}: it stays, and the file stays as it is (Cluster Autoscaler at "
                    "0 replicas), since its file() would fail without it", f"remove Cluster Autoscaler's documents "
                    f"from {ci.path} and {a}'s use of the file by hand"))
            return
        for p, b in going:
            self._gone.setdefault(p, []).append(b)
            if b.type == "resource":
                self.res.removed.append(b.address)
                self.res.targets.append((posixpath.dirname(p) or ".", b.address))

    def _drop_docs(self, path: str, text: str, docs: list, gone: list) -> None:
        """Remove some documents of a YAML file (each with its separator), or the file and its kustomization entry
        when none is left."""
        if len(gone) == len(docs):
            self.res.edits.append(DeleteFile(path, RULE))
            from ...placement import kustomization_remove
            e = kustomization_remove(self.repo, path, RULE)
            if e is not None:
                self.res.edits.append(e)
            return
        spans = []
        for d in sorted(gone, key=lambda d: d.start):
            s, e = d.start, d.end
            i = docs.index(d)
            if all(x in gone for x in docs[:i]) and i + 1 < len(docs):
                e = docs[i + 1].start           # nothing kept above it: up to the next document, its separator too
            elif i > 0:                         # with the separator line before it
                sep = text.rfind("---", 0, s)
                s = sep if sep >= 0 and not text[sep:s].replace("---", "", 1).strip() else s
            if spans and s <= spans[-1][1]:     # touching the previous removal: one edit
                spans[-1] = (spans[-1][0], max(e, spans[-1][1]))
            else:
                spans.append((s, e))
        for s, e in spans:
            self.res.edits.append(TextEdit(path, s, e, "", RULE))

    def _own_values_configmaps(self, ci: CasInstall) -> list[str]:
        """The ConfigMaps a HelmRelease of Cluster Autoscaler reads values from (`valuesFrom`) that no other
        HelmRelease of the repository reads: they go with it."""
        from ...sources import yaml as yamlsrc
        mine = [str(r["name"]) for r in ((ci.obj.get("spec") or {}).get("valuesFrom") or [])
                if isinstance(r, dict) and r.get("kind") == "ConfigMap" and r.get("name")]
        used: set[str] = set()
        for p, sf in self.repo.files.items():
            if not p.endswith((".yaml", ".yml")) or "valuesFrom" not in sf.text:
                continue
            for d in yamlsrc.split_documents(sf.text):
                obj = _load(d.text) if "HelmRelease" in d.text else None
                if isinstance(obj, dict) and obj.get("kind") == "HelmRelease" and \
                        not (p == ci.path and d.start == ci.doc.start):
                    used |= {str(r.get("name")) for r in (obj.get("spec") or {}).get("valuesFrom") or []
                             if isinstance(r, dict)}
        return [n for n in mine if n not in used]

    def _drop_generator(self, ci: CasInstall, name: str) -> list[str]:
        """A values ConfigMap kustomize generates (configMapGenerator in the kustomization of the HelmRelease's folder
        or above): its entry goes, and each file it reads that nothing else names; the paths changed."""
        from ...placement import configmap_generator, generator_files, generator_remove
        found = configmap_generator(self.repo, ci.path, name)
        if found is None:
            return []
        kpath, text, obj, idx = found
        cuts = generator_remove(self.repo, kpath, text, obj, idx, RULE)
        self.res.edits += cuts
        out = [kpath]
        rest = apply_edits(text, cuts)
        for f in generator_files(kpath, obj["configMapGenerator"][idx]):
            base = posixpath.basename(f)
            if f in self.repo.files and base not in rest and \
                    not any(base in sf.text for p, sf in self.repo.files.items() if p not in (f, kpath, ci.path)):
                self.res.edits.append(DeleteFile(f, RULE))
                out.append(f)
        return out

    def _source_used_elsewhere(self, name: str, ci: CasInstall) -> bool:
        for p, sf in self.repo.files.items():
            if p.endswith((".yaml", ".yml")) and "HelmRelease" in sf.text and name in sf.text:
                for line in sf.text.splitlines():
                    if line.strip() == f"name: {name}" and p != ci.path:
                        return True
        return False


_RBAC = re.compile(r"kind:\s*(ServiceAccount|ClusterRole|Role|ClusterRoleBinding|RoleBinding)\b")


def own_iam(repo, cas, owns) -> list[tuple[tuple[str, hclsrc.Block], list[tuple[str, hclsrc.Block]], str]]:
    """Cluster Autoscaler's own IAM role written by hand (knowledge/cas.yaml `hand_written_iam`): a role that a policy
    with its actions is given and that is bound to its service account, by a Pod Identity association or an IRSA
    trust. Returns (the role, every block that goes with it, how it is bound) per role: its association, attachments
    and inline policies, and the policies and documents nothing else reads."""
    from ...tfgraph import code_of, references
    conf = FACTS["detect"]["hand_written_iam"]
    if not cas.policies or not cas.installs:
        return []
    accounts: set[str] = set()
    for ci in cas.installs:
        accounts |= {a.format(release=ci.name) for a in conf["service_accounts"]}
        given = value_at(yaml_values(ci), tuple(conf["service_account_value"].split(".")))
        if isinstance(given, str):
            accounts.add(given)
        for n, v in (set_entries(ci.block) if ci.block is not None else []):
            if n is not None and n.literal() == conf["service_account_value"] and v is not None and v.literal():
                accounts.add(str(v.literal()))
    out = []
    for d in sorted({posixpath.dirname(p) or "." for p, _ in cas.policies}):
        blocks = {b.address: (p, b) for p in repo.tf_in_dir(d if d != "." else "") if owns(p)
                  for b in (repo.hcl(p).blocks if repo.hcl(p) else []) if b.type in ("resource", "data")}
        code = {a: code_of(b) for a, (_, b) in blocks.items()}
        reads = {a: references(c, blocks) - {a} for a, c in code.items()}
        readers = {a: {x for x, r in reads.items() if a in r} for a in blocks}
        cas_policies = {b.address for p, b in cas.policies if (posixpath.dirname(p) or ".") == d}

        def kind(a: str) -> str:
            b = blocks[a][1]
            return b.labels[0] if b.type == "resource" else "data." + b.labels[0]
        for r in sorted(a for a in blocks if kind(a) == conf["role"]):
            assoc = sorted(a for a in readers[r] if kind(a) == conf["association"])
            bound = [a for a in assoc if blocks[a][1].attr("service_account") is not None
                     and blocks[a][1].attr("service_account").literal() in accounts]
            trust = code[r] + "".join(code[x] for x in reads[r] if x.startswith("data."))
            subjects = re.findall(r"system:serviceaccount:([^:\s\"]+):([\w.-]+)", trust)
            how = f"the Pod Identity association {bound[0]}" if bound else \
                f"an IRSA trust for {subjects[0][0]}:{subjects[0][1]}" if subjects else ""
            attached = sorted(a for a in readers[r] if kind(a) in conf["attachments"])
            given = {r, *attached}          # what the role is given: an attached aws_iam_policy and the document it reads
            edge = set(given)
            while edge:
                edge = {x for a in edge for x in reads[a] if x not in given and kind(x).removeprefix("data.")
                        in conf["policy"]}
                given |= edge
            policies = given & cas_policies
            if not how or not policies or len(bound) < len(assoc) or any(sa not in accounts for _, sa in subjects):
                continue                    # a role another service account assumes too is not Cluster Autoscaler's
            going = {r, *assoc, *attached}
            changed = True
            while changed:                  # what only the going blocks read goes too (a policy, its document)
                changed = False
                for x in sorted({y for a in going for y in reads[a]} - going):
                    if kind(x) in conf["policy"] + ["data." + t for t in conf["policy"]] and readers[x] <= going:
                        going.add(x)
                        changed = True
            out.append((blocks[r], [blocks[a] for a in sorted(going)], how))
    return out


def _load(text: str):
    from ...sources import yaml as yamlsrc
    try:
        return yamlsrc.load(text)
    except yamlsrc.YamlParseError:
        return None


def _is_configmap(obj, name: str) -> bool:
    return isinstance(obj, dict) and obj.get("kind") == "ConfigMap" and (obj.get("metadata") or {}).get("name") == name


def _companion(obj, ci: CasInstall) -> bool:
    """An object of a Cluster Autoscaler installed from plain manifests, in the Deployment's own file: its
    ServiceAccount, the (Cluster)RoleBindings that bind it and the (Cluster)Roles they grant by the install's name
    (cluster-autoscaler's RBAC as its example manifests write it)."""
    if not isinstance(obj, dict):
        return False
    pod = ((((ci.obj or {}).get("spec") or {}).get("template") or {}).get("spec") or {})
    sa = pod.get("serviceAccountName") or pod.get("serviceAccount")
    meta = obj.get("metadata") or {}
    kind, name = obj.get("kind"), meta.get("name")
    if not sa or sa == "default":
        return False
    if kind == "ServiceAccount":
        return name == sa and meta.get("namespace", ci.namespace) == ci.namespace
    if kind in ("ClusterRoleBinding", "RoleBinding"):
        subjects = obj.get("subjects") or []
        return bool(subjects) and all(isinstance(x, dict) and x.get("kind") == "ServiceAccount" and
                                      x.get("name") == sa and x.get("namespace", ci.namespace) == ci.namespace
                                      for x in subjects)
    if kind in ("ClusterRole", "Role"):
        return name in (sa, ci.name)
    return False


def _module_objects(repo, d: str) -> list[tuple[str, hclsrc.Block]]:
    """Every addressable top-level block of one Terraform module (resources, data sources, modules, outputs)."""
    out = []
    for p in repo.tf_in_dir(d):
        f = repo.hcl(p)
        out += [(p, b) for b in (f.blocks if f else []) if b.type in ("resource", "data", "module", "output")
                and b.labels]
    return out


def _names(repo, d: str, b: hclsrc.Block) -> set[str]:
    """How a Kubernetes object written in Terraform can be named by another: its address, its metadata name."""
    from ...cas import nested, object_meta
    meta = nested(b, "metadata")
    name = object_meta(repo, d, meta.attr("name"), "name") if meta is not None else None
    return {b.address} | ({name} if name else set())


def tf_companions(repo, ci: CasInstall) -> tuple[list[tuple[str, hclsrc.Block]], dict[str, str]]:
    """What goes with a Cluster Autoscaler Deployment written in Terraform: itself, the ServiceAccount it runs as,
    the bindings whose every subject is that account, the roles only those bindings grant (knowledge/cas.yaml
    `terraform_objects`, in the Deployment's own module), as (file, block); and {address: why} for those that stay
    because a block outside the set reads them (an output does not hold one back: it is removed with it)."""
    from ...cas import FACTS as CAS, nested, object_meta
    from ...tfgraph import references
    types = CAS["detect"]["terraform_objects"]
    d = posixpath.dirname(ci.path)
    blocks = {b.address: (p, b) for p, b in _module_objects(repo, d)}
    body = {a: repo.text(p)[b.body_start:b.body_end] for a, (p, b) in blocks.items()}
    pod = nested(ci.block, "spec", "template", "spec")
    sa_expr = (pod.attr("service_account_name") or pod.attr("service_account")) if pod is not None else None
    sa_name = object_meta(repo, d, sa_expr, "name") if sa_expr is not None else None
    if sa_expr is None or sa_name == "default":
        accounts = set()
    else:
        accounts = {a for a, (p, b) in blocks.items() if b.labels[0] in types["service_account"] and
                    (a in references(sa_expr.source, blocks) or (sa_name is not None and sa_name in _names(repo, d, b)))}
    names = set().union(*(_names(repo, d, blocks[a][1]) for a in accounts)) if accounts else set()
    bindings = set()
    for a, (p, b) in blocks.items():
        subjects = b.sub("subject") if b.labels[0] in types["binding"] else []
        if subjects and all((s.attr("name") is not None and (references(s.attr("name").source, blocks) & accounts or
                             object_meta(repo, d, s.attr("name"), "name") in names)) for s in subjects):
            bindings.add(a)
    roles = set()
    for a in bindings:
        ref = next(iter(blocks[a][1].sub("role_ref")), None)
        e = ref.attr("name") if ref is not None else None
        if e is None:
            continue
        named = object_meta(repo, d, e, "name")
        roles |= {r for r, (p, b) in blocks.items() if b.labels[0] in types["role"] and
                  (r in references(e.source, blocks) or (named is not None and named in _names(repo, d, b)))}
    group = {ci.block.address} | accounts | bindings | roles
    kept: dict[str, str] = {}
    changed = True
    while changed:
        changed = False
        for a in sorted(group):
            readers = sorted(r for r in blocks if r not in group and blocks[r][1].type != "output" and
                             a in references(body[r], blocks))
            if readers:
                group.discard(a)
                kept[a] = f"{', '.join(readers)} reads it"
                changed = True
    if ci.block.address not in group:
        return [], kept
    going = [blocks[a] for a in sorted(group, key=lambda a: (blocks[a][0], blocks[a][1].start))]
    going += [(p, b) for a, (p, b) in blocks.items() if b.type == "output" and a not in group and
              references(body[a], blocks) & group and not references(body[a], blocks) - group]
    return going, kept


def _indent_in(text: str, b: hclsrc.Block) -> str:
    """The indentation of a block's arguments (its first one's, else two spaces)."""
    first = min((e.start for e in b.attributes.values()), default=None)
    return (indent_at(text, first) if first is not None else "") or "  "


def run(ctx, phase: str, done: dict | None = None) -> AutoscalerResult:
    return Autoscaler(ctx, phase).run()
