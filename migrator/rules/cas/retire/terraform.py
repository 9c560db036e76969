"""Cluster Autoscaler installed by Terraform: a helm_release (replicaCount in its values or `set`), an add-on or release
module (its switch or values), a kubernetes_deployment; to zero at the cutover, removed with what goes with it at
the cleanup."""
from __future__ import annotations

import posixpath
import re

from ....cas import CasInstall, helm_sets_are_lists
from ....sources.hcl import at_path
from ....edits import TextEdit, line_start, to_newline
from ....model import Finding
from ....sources import hcl as hclsrc
from ....sources import keytree
from ....sources.keytree import Op
from .common import CUTOVER_MARK, RULE, _append_item, _indent_in, _replicas_tf, _scale_zero
from .companions import _module_objects, tf_companions


class TerraformInstalls:
    """Cluster Autoscaler installed by Terraform: a helm_release, an add-on or release module, a kubernetes_deployment."""

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
