"""Cluster Autoscaler installed by Flux (a HelmRelease's values), Argo CD (an Application's values) or kustomize
helmCharts: to zero at the cutover, removed at the cleanup."""
from __future__ import annotations

import posixpath

from ....cas import CasInstall
from ....inventory import value_at
from ....edits import DeleteFile, TextEdit, to_newline
from ....model import Finding
from ....sources import keytree
from ....sources.keytree import Op
from .common import RULE, _scale_zero


class GitOpsInstalls:
    """Cluster Autoscaler installed by Flux, Argo CD or kustomize helmCharts."""

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
        from ....cas import argocd_value_paths
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
            from ....sources.yamlspans import yaml_entry_span
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
