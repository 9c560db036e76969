"""Cluster Autoscaler as a release of a helmfile: replicaCount 0 in its values at the cutover, the release removed at the
cleanup."""
from __future__ import annotations

import posixpath
import re
import shlex

from ....cas import CasInstall, yaml_values
from ....edits import DeleteFile, TextEdit, line_start, to_newline
from ....model import Finding
from ....sources import keytree
from ....sources.keytree import Op
from .common import CUTOVER_MARK, RULE


class HelmfileInstalls:
    """Cluster Autoscaler as a release of a helmfile."""

    def helmfile(self, ci: CasInstall) -> None:
        """A helmfile release: `replicaCount: 0` in its last inline values map (a values item appended when its last
        item is a file, a `values:` key when it has none: later values win in helmfile) at the cutover; at the cleanup
        the release goes from the helmfile (with the `repositories:` entry only it used) and the runbook uninstalls it
        (helmfile apply does not remove a release that is no longer listed)."""
        from ....sources.yamlspans import yaml_entry_span, yaml_item_span, yaml_list_end
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
