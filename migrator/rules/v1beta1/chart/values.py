"""The chart's values rewritten from the hop's rows wherever they live: YAML (heredocs, values files, Flux and Argo CD
values) through key trees, `set` blocks and lists, module parameters; a value removed with its block when it empties it."""
from __future__ import annotations



from ....edits import TextEdit, line_start, to_newline
from ....inventory import ChartInstall, ValuesSource
from ....inventory.charts import UNREADABLE
from ....path import chart_version
from ....sources import hcl as hclsrc
from ....sources import keytree
from .common import FACTS, HOP, _indent, parse_version, with_aliases


def _tags_row() -> dict:
    return next(r for r in FACTS["values"][HOP] if r.get("to_nodeclass_tags"))


def _eat_blank(text: str, end: int) -> int:
    """Extend a removal over one blank line that follows it, so no double blank line is left."""
    nxt = text.find("\n", end)
    if nxt >= 0 and not text[end:nxt].strip():
        return nxt + 1
    return end


def _removal(text: str, start: int, end: int) -> tuple[int, int]:
    """Span removing a whole block or attribute line: its indentation and newline too, and one blank line next
    to it (the one after, or the one before when it was the last item of its block), so no blank line is
    doubled or left before a closing brace."""
    ls = text.rfind("\n", 0, start) + 1
    s0 = ls if not text[ls:start].strip() else start
    if end > 0 and text[end - 1] == "\n":
        e0 = end
    else:
        nxt = text.find("\n", end)
        if nxt < 0 or text[end:nxt].strip():
            return start, end
        e0 = nxt + 1
    after = _eat_blank(text, e0)
    if after != e0:
        return s0, after
    if text[e0:].lstrip().startswith("}") and s0 > 1 and text[s0 - 2:s0] == "\n\n":
        return s0 - 1, e0
    return s0, e0


def _expression_lists(node, path=()):
    """matchExpressions lists anywhere under an affinity value."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "matchExpressions" and isinstance(v, list):
                yield v, path + (k,)
            else:
                yield from _expression_lists(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _expression_lists(v, path + (i,))


def _item_lines(text: str, tree, aff, seq, i: int) -> tuple[int | None, int | None]:
    """File span of the lines of item i of a YAML block sequence."""
    if tree.offset is None or (getattr(seq, "fa", None) is not None and seq.fa.flow_style()):
        return None, None
    line, col = seq.lc.item(i)
    at = tree.offset(line, col)                 # where the item's node starts: its first key, after the dash
    ls = line_start(text, at)
    if i + 1 < len(seq):
        nline, ncol = seq.lc.item(i + 1)
        return ls, line_start(text, tree.offset(nline, ncol))
    dash = text.rfind("-", ls, at)
    if dash < 0:
        return None, None
    item_indent = dash - ls                     # the item's other lines are indented past its dash
    pos = text.find("\n", at) + 1
    le = pos
    while 0 < pos < len(text):
        nxt = text.find("\n", pos)
        nxt = len(text) if nxt < 0 else nxt + 1
        ln = text[pos:nxt]
        if ln.strip():
            if len(ln) - len(ln.lstrip(" ")) <= item_indent:
                break
            le = nxt
        pos = nxt
    return ls, le


def _emptied_block(tree, edits: list) -> list:
    """The edits of a values mapping held under a key of its document (`helm.valuesObject:`, Flux `spec.values:`):
    when they leave it with no entry, the key goes too (an empty `valuesObject:` is null), and so does its parent when
    it held nothing else (`helm:` with only `valuesObject:`)."""
    root = tree.root
    inside = [x for x in edits if root.start <= x[0] and x[1] <= root.end]
    if not inside or len(inside) != len(edits) and any(root.start < x[1] and x[0] < root.end for x in edits
                                                        if x not in inside):
        return edits
    region = tree.text[root.start:root.end]
    for s, e, t in sorted(inside, key=lambda x: x[0], reverse=True):
        region = region[:s - root.start] + t + region[e - root.start:]
    lines = region.split("\n")
    if any(ln.strip() and not ln.strip().startswith("#") for ln in lines[1:]) or ":" not in lines[0]:
        return edits                        # entries are left: the key stays
    start, end, text = root.start, root.end, tree.text
    key_indent = _indent(text[start:text.find("\n", start)])
    above = text.rfind("\n", 0, max(start - 1, 0)) + 1 if start > 0 else None
    if above is not None and above < start:
        parent = text[above:start - 1]
        after = text[end:text.find("\n", end) if text.find("\n", end) >= 0 else len(text)]
        if parent.rstrip().endswith(":") and _indent(parent) < key_indent and \
                (not after.strip() or _indent(after) <= _indent(parent)):
            start = above                   # the parent held only this key
    return [x for x in edits if x not in inside] + [(start, end, "")]


class ChartValues:
    """The chart's values rewritten from the hop's rows, wherever they live: YAML (heredocs, files, Flux and Argo CD
    values) through key trees, set blocks and lists, module parameters."""

    def rows(self) -> list[dict]:
        if self._rows is not None:
            return self._rows
        rows = []
        for row in with_aliases(FACTS["values"][HOP]):
            if self.phase == "prepare" and row["phase"] != "prepare":
                if not (row.get("needed_by_alpha") and not self.alpha_needs_default_profile()):
                    continue
            if self.phase == "cleanup" and row.get("needed_by_alpha") and self.alpha_needs_default_profile():
                continue
            rows.append(row)
        return rows

    def values(self, ci: ChartInstall, vs: ValuesSource, rows: list[dict] | None = None) -> None:
        rows = self.rows() if rows is None else rows
        if vs.kind == "argo_params":
            self.param_values(ci, vs, rows)
            return
        if vs.kind == "cli_set":           # a script's --set: said, the shell command is not edited
            for prm in vs.params:
                for row in rows:
                    if row["key"] != prm.name or "add" in row or "note" in row:
                        continue
                    to = f"--set {row['rename']}=..." if "rename" in row else \
                        f"--set {prm.name}={row['set']}" if "set" in row else "no --set of it"
                    self.finding("MIG-HELM-037", "warning", vs.path, prm.line,
                                 f"{ci.address} passes --set {prm.name}: {row.get('why') or 'renamed by this hop'}",
                                 f"change it to {to} in the script, with the chart version")
            return
        if vs.kind in UNREADABLE:
            what = {"dynamic_set": 'a dynamic "set" block', "set_list": "a computed set list",
                    "values_from": "spec.valuesFrom (ConfigMaps/Secrets outside the repository's files)",
                    "value_files": "helm.valueFiles (files of the chart's own repository or a $values source)",
                    "other": "an expression migrator cannot read",
                    "release": "the values eksctl gave the Helm release when it created the cluster",
                    "installer": "values its installer may add under the dependency's key (an Argo CD Application, "
                                 "a helm command, a catalog installing the umbrella chart)"}[vs.kind]
            old = parse_version(chart_version(self.repo, self.charts, self.owns) or "0.0.0") or (0, 0, 0)
            keys = ", ".join(r["key"] for r in rows if not r.get("alias") or old < parse_version(r["alias"]))
            if not keys and vs.kind == "installer":
                return                      # nothing this hop renames or removes: nothing to check there
            self.finding("MIG-HELM-001", "warning", vs.path, vs.line,
                         f"{ci.address} passes chart values through {what}; migrator cannot rewrite them statically",
                         f"check these keys by hand: {keys}")
            return
        if vs.tree is not None:
            self.tree_values(ci, vs, rows)
        if vs.sets:
            self.set_values(ci, vs, rows)

    def tree_values(self, ci: ChartInstall, vs: ValuesSource, rows: list[dict]) -> None:
        tree = vs.tree
        ops = []
        for row in rows:
            src = tuple(row["path"]) if "path" in row else tuple(row["key"].split("."))    # path: keys with dots
            entry = tree.root.get(src)
            if "add" in row:            # a value the target needs, taken from the repository by the caller
                if entry is None:
                    ops.append(keytree.Op("add", dst=src, value=row["add"], reason=row.get("why", "")))
                continue
            if entry is None:
                continue
            if "note" in row:
                self.finding("MIG-HELM-016", "info", vs.path, hclsrc.line_of(tree.text, entry.key_start),
                             f"chart value {row['key']}: {row['note']}")
                continue
            if "set" in row:
                current = entry.value.literal() if isinstance(entry.value, hclsrc.Expr) else entry.value
                if "when" in row and str(current).lower() != str(row["when"]).lower():
                    continue
                ops.append(keytree.Op("set", src, value=row["set"], reason=row.get("why", "")))
            elif "rename" in row:
                ops.append(keytree.Op("rename", src, tuple(row["rename"].split(".")), reason=row.get("why", "")))
            else:
                ops.append(keytree.Op("remove", src, reason=row.get("why", "")))
        out = keytree.rewrite(tree, ops)
        for op, e, why in out.problems:
            self.finding("MIG-HELM-002", "error", vs.path, hclsrc.line_of(tree.text, e.key_start),
                         f"chart value {'.'.join(op.src)} cannot be rewritten: {why}",
                         f"change {'.'.join(op.src)} to {'.'.join(op.dst) or '(remove it)'} by hand")
        for op in out.applied:
            e = tree.root.get(op.src)
            if op.kind == "remove" and e.is_map and op.src == tuple(_tags_row()["key"].split(".")):
                self.tags_removed(vs.path, hclsrc.line_of(tree.text, e.key_start), list(e.children))
            self.finding("MIG-HELM-003", "info", vs.path, hclsrc.line_of(tree.text, e.key_start),
                         f"chart value {'.'.join(op.src or op.dst)} " + (f"-> {'.'.join(op.dst)}" + (f" ({op.reason})" if op.reason else
                                                                                   "") if op.kind == "rename"
                                                               else f"set to {keytree.render_scalar(tree, op.value)} ({op.reason})"
                                                               if op.kind == "set" else
                                                               f"added: {op.value} ({op.reason})" if op.kind == "add"
                                                               else f"removed ({op.reason})"))
        edits = _emptied_block(tree, out.edits) if vs.kind in ("argocd", "flux") else out.edits
        for s, e, t in edits:
            self.res.edits.append(TextEdit(vs.path, s, e, to_newline(t, self.repo.files[vs.path].newline),
                                           self.rule))
        if self.bumps:
            self.affinity(vs)

    def set_values(self, ci: ChartInstall, vs: ValuesSource, rows: list[dict]) -> None:
        text = self.repo.text(vs.path)
        by_key = {r["key"]: r for r in rows}
        present = {s.key for s in vs.sets}
        for s in vs.sets:
            row = next((r for k, r in by_key.items() if s.key == k or s.key.startswith(k + ".")), None)
            if row is None:
                continue
            if "note" in row:
                self.finding("MIG-HELM-016", "info", vs.path, s.line, f"chart value {row['key']}: {row['note']}")
                continue
            if "set" in row:
                lit = s.value.literal() if s.value is not None else None
                if s.key != row["key"] or s.value is None or lit is None or \
                        ("when" in row and str(lit).lower() != str(row["when"]).lower()):
                    continue
                new = hclsrc.quote(str(row["set"]).lower() if isinstance(row["set"], bool) else str(row["set"])) \
                    if s.value.kind == "string" else hclsrc.render_value(row["set"], {})
                self.res.edits.append(TextEdit(vs.path, s.value.start, s.value.end, new, self.rule))
                self.finding("MIG-HELM-003", "info", vs.path, s.line, f"set {s.raw} = {row['set']} ({row.get('why', '')})")
                continue
            if "rename" in row and s.key == row["key"]:
                if row["rename"] in present:
                    self.res.edits.append(TextEdit(vs.path, s.start, s.end, "", self.rule))
                    self.finding("MIG-HELM-003", "info", vs.path, s.line,
                                 f"set {s.raw}: removed, {row['rename']} is already set")
                    continue
                self.res.edits.append(TextEdit(vs.path, s.name.start, s.name.end, hclsrc.quote(row["rename"]), self.rule))
                self.finding("MIG-HELM-003", "info", vs.path, s.line, f"set {s.raw} -> {row['rename']}"
                             + (f" ({row['why']})" if row.get("why") else ""))
            elif "rename" not in row:
                self.res.edits.append(TextEdit(vs.path, *_removal(text, s.start, s.end), "", self.rule))
                if row.get("to_nodeclass_tags"):
                    self.tags_removed(vs.path, s.line, [s.key[len(row["key"]) + 1:]])
                self.finding("MIG-HELM-003", "info", vs.path, s.line, f"set {s.raw} removed ({row.get('why', '')})")

    def param_values(self, ci: ChartInstall, vs: ValuesSource, rows: list[dict]) -> None:
        """Argo CD `helm.parameters` (name/value items): names renamed, items removed, like Terraform `set`."""
        text = self.repo.text(vs.path)
        names = {p.name for p in vs.params}
        for prm in vs.params:
            row = next((r for r in rows if prm.name == r["key"] or prm.name.startswith(r["key"] + ".")), None)
            if row is None:
                continue
            if "note" in row:
                self.finding("MIG-HELM-016", "info", vs.path, prm.line, f"chart value {row['key']}: {row['note']}")
            elif "set" in row or "add" in row:
                continue        # values of parameters are strings Argo CD passes through; set them by hand
            elif "rename" in row and prm.name == row["key"] and row["rename"] not in names:
                s0, e0 = prm.name_span
                quote = text[s0] if text[s0] in "\"'" else ""
                self.res.edits.append(TextEdit(vs.path, s0, e0, f"{quote}{row['rename']}{quote}", self.rule))
                self.finding("MIG-HELM-003", "info", vs.path, prm.line, f"parameter {prm.name} -> {row['rename']}"
                             + (f" ({row['why']})" if row.get("why") else ""))
            else:
                s0, e0 = prm.item_span
                self.res.edits.append(TextEdit(vs.path, s0, e0, "", self.rule))
                self.finding("MIG-HELM-003", "info", vs.path, prm.line,
                             f"parameter {prm.name} removed ({row.get('why', 'replaced by ' + row.get('rename', ''))})")

    def tags_removed(self, path: str, line: int, keys: list[str]) -> None:
        """settings.aws.tags goes away in cleanup: say so unless every EC2NodeClass already carries them."""
        classes = [m for m in self.manifests if m.kind == "EC2NodeClass"]
        missing = [m for m in classes if not all(k in ((m.obj.get("spec") or {}).get("tags") or {}) for k in keys)]
        if classes and not missing:
            return
        where = ", ".join(f"{m.path}:{m.line}" for m in missing) or "no EC2NodeClass in this repository"
        self.finding("MIG-HELM-014", "warning", path, line,
                     f"global tags {', '.join(keys)} are removed from the chart values (v0.33 ignores them); "
                     f"not every EC2NodeClass carries them ({where})",
                     "add these tags to spec.tags of every EC2NodeClass that should keep them")

    def affinity(self, vs: ValuesSource) -> None:
        """The chart's affinity keeping the controller off Karpenter nodes gains the nodepool key."""
        facts = FACTS["values"]["affinity"].get(self.hop)
        if facts is None:
            return
        tree = vs.tree
        aff = tree.root.get(("affinity",))
        if aff is None:
            return
        if tree.syntax != "yaml":
            src = tree.text[aff.start:aff.end]
            if facts["old"] in src and facts["add"] not in src:
                self.finding("MIG-HELM-004", "warning", vs.path, hclsrc.line_of(tree.text, aff.key_start),
                             f"affinity: add a `{facts['add']} DoesNotExist` expression next to `{facts['old']}`",
                             "edit the yamlencode() affinity by hand (migrator edits affinity in YAML values only)")
            return
        text = tree.text
        for seq, where in _expression_lists(aff.value):
            keys = [x.get("key") for x in seq if isinstance(x, dict)]
            if facts["old"] not in keys or facts["add"] in keys:
                continue
            i = keys.index(facts["old"])
            # lines of that item, found from the key's own line in the text
            ls, le = _item_lines(text, tree, aff, seq, i)
            if ls is None:
                self.finding("MIG-HELM-004", "warning", vs.path, hclsrc.line_of(text, aff.key_start),
                             f"affinity: add a `{facts['add']} DoesNotExist` expression next to `{facts['old']}`",
                             "edit the affinity by hand")
                return
            item = text[ls:le].replace(facts["old"], facts["add"])
            # it continues the list that ends there: first among what is inserted at that point (a key moved before
            # the next top-level key, `logConfig:` before `controller:`, comes after it)
            self.res.edits.append(TextEdit(vs.path, le, le, item if item.endswith("\n") else item + "\n", self.rule,
                                           order=-1))
            self.finding("MIG-HELM-003", "info", vs.path, hclsrc.line_of(text, ls),
                         f"affinity: added {facts['add']} DoesNotExist next to {facts['old']}")

    def withhold_values(self, ci: ChartInstall, edits: int, findings: int) -> None:
        """Values renamed for a chart version that cannot be moved (MIG-HELM-006) would reach the old chart, which
        reads the old names (a controller without its cluster name): none of this install's value edits is kept."""
        if not any(f.code == "MIG-HELM-006" for f in self.res.findings[findings:]):
            return
        values = self.res.edits[edits:]
        if not values:
            return
        del self.res.edits[edits:]
        self.res.findings[findings:] = [f for f in self.res.findings[findings:] if f.code != "MIG-HELM-003"]
        self.finding("MIG-HELM-036", "warning", ci.path, ci.line,
                     f"{ci.address}: {len(values)} change(s) of its chart values are not written, because its chart "
                     "version cannot be moved with them (MIG-HELM-006): the chart it runs today would read the new "
                     "names as unknown keys",
                     "move the chart version where it is defined, then run migrator again: the values move with it")
