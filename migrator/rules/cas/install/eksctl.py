"""A cluster made with eksctl: the NodePools and the chart values as files beside its ClusterConfig; the AWS side and the
charts are the runbook's commands, as the Karpenter guide runs them."""
from __future__ import annotations

import posixpath

from ....edits import NewFile, to_newline
from ....sources import yaml as yamlsrc
from .. import convert
from .common import INSTALL, InstallResult, MARK, MODULE, RULE, _find


class Eksctl:
    """A cluster made with eksctl: files beside its ClusterConfig, the AWS side by the runbook's commands."""

    # -- eksctl and aws-cli (a hand-made cluster, like the guide) ---------------------------------------------------
    def eksctl(self, cas0) -> InstallResult:
        """A cluster made with eksctl: the NodePools and the chart values as files beside its ClusterConfig; the AWS
        side (the getting-started CloudFormation stack, the node role's access, the controller's identity, the
        discovery tags) and the charts are runbook commands, as the guide runs them."""
        res = self.res
        path, doc, cfg = self.cas.clusters[0]
        meta = cfg.get("metadata") or {}
        cluster = str(meta.get("name") or "")
        if not cluster:
            _find(res, "MIG-CAS-018", "error", path, doc.first_line + 1, "the ClusterConfig has no metadata.name",
                  "name the cluster in the ClusterConfig, then run migrator again")
            return res
        res.style, res.cluster, res.cluster_literal = "eksctl", cluster, cluster
        shapes = [convert.shape(g) for g in self.cas.groups if g.source == "eksctl"]
        if not shapes:
            _find(res, "MIG-CAS-003", "warning", path, doc.first_line + 1, f"the ClusterConfig of {cluster} declares no "
                  "node groups; migrator writes NodePools from node groups", "write the NodePools by hand")
            return res
        kept, ok = self.settle(shapes, cas0)
        if not ok:
            return res
        addons = {str(a.get("name")) for a in cfg.get("addons") or [] if isinstance(a, dict)}
        res.identity = "pod-identity" if MODULE["agent"]["addon"] in addons else "irsa"
        mode = str((cfg.get("accessConfig") or {}).get("authenticationMode") or "API_AND_CONFIG_MAP")
        res.access = "entry" if mode in ("API", "API_AND_CONFIG_MAP") else "aws-auth"
        names = {"node_role": INSTALL["eksctl"]["node_role"].format(cluster=cluster),
                 "queue": INSTALL["eksctl"]["queue"].format(cluster=cluster)}
        self.zones(shapes)
        pools, classes = self.objects(shapes, "", cluster, names)
        if pools is None:
            return res
        d = posixpath.dirname(path)
        files = {name: posixpath.join(d, name) if d else name for name in ("karpenter-nodepools.yaml",
                                                                           "karpenter-values.yaml")}
        for f in files.values():
            if f in self.repo.files:
                _find(res, "MIG-CAS-006", "error", f, 1, f"{f} already exists; migrator writes the Karpenter "
                      "installation there", "rename that file, then run migrator again")
                return res
        label = convert.GROUP_LABEL if kept.group.flavour == "managed" else INSTALL["eksctl"]["self_group_label"]
        values = {"settings": {"clusterName": cluster, "interruptionQueue": names["queue"]},
                  "serviceAccount": {"name": INSTALL["service_account"]},
                  "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                      "nodeSelectorTerms": [{"matchExpressions": [
                          {"key": "karpenter.sh/nodepool", "operator": "DoesNotExist"},
                          {"key": label, "operator": "In", "values": [kept.group.name]}]}]}}}}
        if convert.tolerations(kept):
            values["tolerations"] = convert.tolerations(kept)
        res.groups = [g.name for g in self.cas.groups if g.source == "eksctl"]
        if cas0.kind == "helmfile":         # the charts as releases of Cluster Autoscaler's helmfile, NodePools beside it
            res.file = ""
            if self.helmfile(cas0, values, INSTALL["eksctl"]["controller_role"].format(cluster=cluster)):
                self.objects_beside(cas0, classes + pools)
            return res
        nl = self.repo.files[path].newline
        emit = yamlsrc.Emitter()
        res.edits.append(NewFile(files["karpenter-values.yaml"], to_newline(
            f"# Karpenter chart values ({MARK}); the runbook's helm\n"
            "# command installs the chart with them\n" + emit.emit(convert._cm(values)).text, nl), RULE))
        res.edits.append(NewFile(files["karpenter-nodepools.yaml"], to_newline(
            "---\n".join(emit.emit(o).text for o in classes + pools), nl), RULE))
        res.objects_file, res.values_file, res.file = files["karpenter-nodepools.yaml"], files["karpenter-values.yaml"], ""
        return res
