"""The charts as releases of the helmfile that installs Cluster Autoscaler, through an OCI repository entry, with their
values in a file beside it."""
from __future__ import annotations

import posixpath

from ....edits import NewFile, TextEdit, to_newline
from ....sources import yaml as yamlsrc
from .. import convert
from .common import INSTALL, MARK, RULE, _find, _items_text, _spaced


class Helmfile:
    """The charts as releases of the helmfile that installs Cluster Autoscaler."""

    # -- helmfile -------------------------------------------------------------------------------------------------
    def helmfile(self, cas0, values: dict, role: str) -> bool:
        """The charts as releases of the helmfile that installs Cluster Autoscaler: karpenter-crd, then karpenter
        (`needs` it), appended to its `releases:`, through an OCI `repositories:` entry; the chart values in
        karpenter-values.yaml beside it. The controller's IRSA role is annotated by its ARN: in the account of
        Cluster Autoscaler's own role ARN, else read from the environment (`requiredEnv "AWS_ACCOUNT_ID"` in a
        .yaml.gotmpl values file, which helmfile renders)."""
        from ....sources.yamlspans import yaml_list_end
        res = self.res
        from ....inventory import _parse_yaml_docs
        envs = []                   # environments of any document of the file (a layered helmfile splits them)
        for _doc, _m, o in _parse_yaml_docs(self.repo, cas0.path, self.repo.text(cas0.path), 0, 0, cas0.path,
                                            gotmpl=True):
            e = o.get("environments") if isinstance(o, dict) else None
            envs += [str(k) for k in e if str(k) not in envs] if isinstance(e, dict) else []
        if len(envs) > 1:
            _find(res, "MIG-CAS-057", "warning", cas0.path, cas0.line,
                  f"{cas0.path} has environments {', '.join(envs[:4])}: one helmfile for several clusters, and "
                  "Karpenter's releases written there would carry one cluster's name, queue and node groups to every "
                  "environment; nothing is written for this root",
                  "give the karpenter releases environment values (clusterName, interruptionQueue, the controller "
                  "role) and the NodePools per environment by hand, following docs/from-cluster-autoscaler.md")
            res.edits.clear()
            return False
        ns = INSTALL["namespace"]
        text = self.repo.text(cas0.path)
        d = posixpath.dirname(cas0.path)
        account = self.account()
        templated = self.res.identity == "irsa" and account is None
        if self.res.identity == "irsa":
            part, acct = account or ("aws", '{{ requiredEnv "AWS_ACCOUNT_ID" }}')
            values["serviceAccount"]["annotations"] = {INSTALL["irsa_annotation"]: INSTALL["role_arn"].format(
                partition=part, account=acct, name=role)}
        vname = "karpenter-values.yaml" + (".gotmpl" if templated else "")
        vfile = posixpath.join(d, vname)
        if vfile in self.repo.files:
            _find(res, "MIG-CAS-006", "error", vfile, 1, f"{vfile} already exists; migrator writes the Karpenter chart "
                  "values there", "rename that file, then run migrator again")
            return False
        repos = cas0.obj.get("repositories")
        oci = INSTALL["chart_repository"].split("://", 1)[1]
        repo_name = next((str(r.get("name")) for r in repos or [] if isinstance(r, dict)
                          and str(r.get("url", "")).removeprefix("oci://").rstrip("/") == oci), None)
        names_taken = {str(r.get("name")) for r in repos or [] if isinstance(r, dict)}
        nl = self.repo.files[cas0.path].newline
        emit = yamlsrc.Emitter()
        if repo_name is None:
            repo_name = "karpenter" if "karpenter" not in names_taken else "karpenter-oci"
            entry = {"name": repo_name, "url": oci, "oci": True}
            if isinstance(repos, list) and repos:
                pos, col = yaml_list_end(text, cas0.doc.start, repos)
                res.edits.append(TextEdit(cas0.path, pos, pos, to_newline(_items_text(emit, [entry], col), nl), RULE))
            else:
                pos = cas0.doc.start
                res.edits.append(TextEdit(cas0.path, pos, pos, to_newline(
                    emit.emit(convert._cm({"repositories": [entry]})).text + "\n", nl), RULE))
        releases = [{"name": "karpenter-crd", "namespace": ns, "chart": f"{repo_name}/karpenter-crd",
                     "version": self.target},
                    {"name": "karpenter", "namespace": ns, "chart": f"{repo_name}/karpenter", "version": self.target,
                     "needs": [f"{ns}/karpenter-crd"], "values": [vname]}]
        pos, col = yaml_list_end(text, cas0.doc.start, cas0.obj["releases"])
        res.edits.append(TextEdit(cas0.path, pos, pos, to_newline(_items_text(
            emit, releases, col, _spaced(text, cas0.doc.start, cas0.obj["releases"])), nl), RULE))
        res.edits.append(NewFile(vfile, to_newline(
            f"# Karpenter chart values ({MARK})" + ("; helmfile renders this file,\n# AWS_ACCOUNT_ID comes from "
                                                     "the environment" if templated else "") + "\n"
            + emit.emit(convert._cm(values)).text, nl), RULE))
        res.helmfile, res.values_file = cas0.path, vfile
        if templated:
            _find(res, "MIG-CAS-060", "info", vfile, 1,
                  f"the controller's IRSA role ARN in {vfile} reads the AWS account from the environment "
                  '(`requiredEnv "AWS_ACCOUNT_ID"`): Cluster Autoscaler\'s values name no role ARN to take it from',
                  "export AWS_ACCOUNT_ID before helmfile applies the karpenter release (or write the account in the "
                  "file)")
        return True
