"""The charts as a GitOps tool installs Cluster Autoscaler: Flux HelmReleases, Argo CD Applications or kustomize
helmCharts beside it, and the NodePools in a file of the same folder."""
from __future__ import annotations

import posixpath
from typing import Any

from .... import knowledge
from ....edits import NewFile, TextEdit, to_newline
from ....placement import kustomization_insert
from ....sources import yaml as yamlsrc
from .. import convert
from .common import INSTALL, RULE, _find


class GitOps:
    """The charts as Flux, Argo CD or kustomize install Cluster Autoscaler, and the NodePools in a file beside it."""

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
        from ....sources.yamlspans import yaml_list_end
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
