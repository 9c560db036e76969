"""Cluster Autoscaler applied as plain manifests (a Deployment in YAML, kubectl apply, a script): replicas to zero at
the cutover; its documents, files, generators and readers removed at the cleanup."""
from __future__ import annotations

import posixpath
import re
import shlex

from ....cas import FACTS, CasInstall, yaml_values
from ....edits import DeleteFile, TextEdit, apply_edits
from ....model import Finding
from ....sources import hcl as hclsrc
from .common import RULE, _at_zero, _is_configmap, _load
from .companions import _companion, _module_objects
from .common import _RBAC


class ManifestInstalls:
    """Cluster Autoscaler applied as manifests: a Deployment, kubectl apply, a script."""

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
        from ....cas import kubectl_objects
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

    def _remove_doc(self, ci: CasInstall, text: str) -> None:
        """Remove Cluster Autoscaler's document, and the HelmRepository only it used; a plain Deployment's own objects
        (its ServiceAccount, RBAC) in its file or beside it in its folder; a file (and its kustomization entry) when
        nothing else is left in it."""
        from ....sources import yaml as yamlsrc
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
        from ....cas import read_files
        from ....tfgraph import references
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
            from ....placement import kustomization_remove
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
        from ....sources import yaml as yamlsrc
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
        from ....placement import configmap_generator, generator_files, generator_remove
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
