"""What the cleanup removes with Cluster Autoscaler, and what must stay: eksctl IAM service accounts, blocks other
blocks still read, files and modules left empty, the Terragrunt inputs of what is gone."""
from __future__ import annotations

import posixpath
import re

from ....inventory.terragrunt import output_readers, terragrunt
from ....edits import DeleteFile, Edit, TextEdit, line_end, line_start
from ....model import Finding
from ....placement import remove_blocks
from ....sources import hcl as hclsrc
from .common import RULE


class CleanupScope:
    """What the cleanup removes with Cluster Autoscaler and what must stay: eksctl service accounts, files left empty,
    modules emptied, Terragrunt inputs, what other blocks still read."""

    def _eksctl_service_accounts(self, cas) -> None:
        """Cluster Autoscaler's IAM service account of an eksctl ClusterConfig (`iam.serviceAccounts`) goes from the
        file, and the runbook deletes its role and service account (eksctl delete iamserviceaccount)."""
        from ....sources.yamlspans import yaml_entry_span, yaml_item_span, yaml_key_start
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
        from ....cas import read_files
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
        from ....tfgraph import unlink
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
        from ....tfgraph import unlink
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
