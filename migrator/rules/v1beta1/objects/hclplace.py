"""Where the new objects are written in Terraform: a copy of the old resource block beside it (a kubectl_manifest
heredoc, a kubernetes_manifest object, a templatefile() call pointed at a new template), and for a template a
local_file renders, a local_file of its own and a copy of the block that applies the old file alone
(inventory/localfiles.py)."""
from __future__ import annotations

import posixpath
import re

from ....edits import NewFile, TextEdit, indent_at, line_end, line_start, to_newline
from ....inventory import Manifest, localfiles
from ....placement import align_attributes, heredoc_body, manifest_object, relabel, splice
from ....sources import hcl as hclsrc
from ....sources import templates
from ..convert import Converted
from .common import FACTS, _unique


class TerraformPlacement:
    """The Terraform half of ObjectPlacement (placement.py): it reads `repo`, `res`, `rule`, the names the hop gives
    (`block_label`, `template_base`) and the YAML it renders (`yaml_text`)."""

    # -- placement: Terraform ------------------------------------------------------------------
    def taken(self, tf_path: str) -> set[str]:
        if tf_path not in self._taken_labels:
            taken = set()
            for p in self.repo.tf_in_dir(posixpath.dirname(tf_path)):
                if "resource" in self.repo.files[p].text:
                    f = self.repo.hcl(p)
                    for b in (f.blocks if f else []):
                        if b.type == "resource" and len(b.labels) == 2:
                            taken.add(b.labels[1])
            self._taken_labels[tf_path] = taken
        return self._taken_labels[tf_path]

    def place_hcl(self, m: Manifest, c: Converted, more: list | tuple = ()) -> None:
        """A copy of the object's block holding the converted object `c`; for a template, `more` are the other
        (object, conversion) pairs of the same template, written in the new template after it (a local_file's
        rendered file applies every document: inventory/localfiles.py)."""
        tf = m.tf_path
        text = self.repo.text(tf)
        nl = self.repo.files[tf].newline
        b = m.block
        label = _unique(self.block_label(b.labels[1], c.kind, m.kind), self.taken(tf))
        repl: list[tuple[int, int, str]] = [relabel(b, label)]
        if m.container == "kubectl_manifest" and not m.hcl:
            body = self.yaml_text(m, c)
            if body is None:
                return
            repl.append(heredoc_body(text, b, body))
        elif m.hcl:
            repl.append(manifest_object(text, b, m.expr, c.obj, m.masked.tokens))
            cf = b.attributes.get("computed_fields")
            if cf is not None and cf.expr.kind == "tuple":
                kept = []
                for item in cf.expr.items:
                    lit = item.literal()
                    mapped = c.map_path(tuple(lit.split("."))) if isinstance(lit, str) else None
                    if isinstance(lit, str) and mapped is None:
                        continue            # the field does not exist in this kind
                    kept.append(hclsrc.quote(".".join(map(str, mapped))) if mapped is not None else item.source)
                if kept:
                    repl.append((cf.expr.start, cf.expr.end, "[" + ", ".join(kept) + "]"))
                else:
                    s0, e0 = line_start(text, cf.start), line_end(text, cf.end)
                    repl.append((s0, e0, ""))
        else:   # template
            bodies = [self.yaml_text(x, y) for x, y in [(m, c), *more]]
            if any(t is None for t in bodies):
                return
            body = "---\n".join(bodies)
            tdir, tbase = posixpath.split(m.path)
            new_base = self.template_base(tbase, c.kind, m.kind)
            new_tpath = posixpath.join(tdir, new_base) if tdir else new_base
            path_expr = m.call.items[0]
            if tbase not in path_expr.source:
                self._template_path_fail(m)
                return
            i = path_expr.source.rfind(tbase)
            new_src = path_expr.source[:i] + new_base + path_expr.source[i + len(tbase):]
            repl.append((path_expr.start, path_expr.end, new_src))
            if b.labels[0] in localfiles.KINDS:     # a local_file: the rendered file gets the new template's name
                out = self.rendered_twin(m, text, b, c, label)
                if out is None:
                    return
                repl.append(out)
            if self.unused_template_variables_go:
                repl += _unused_variables(text, m.call, body)
            var = FACTS["naming"]["template_role_variable"]
            if "${" + var + "}" in body:
                r = self.role()
                args = m.call.items
                if len(args) < 2 or args[1].kind != "object":
                    self.finding("MIG-NC-014", "error", tf, hclsrc.line_of(text, m.call.start),
                                 f"the new template needs the node role as variable {var}, but the "
                                 f"{m.call.name}() variables are not an object literal migrator can extend",
                                 f"add {var} = {r.expression} to the template variables by hand, or re-run with "
                                 "--node-role")
                    return
                obj = args[1]
                if obj.entries:
                    last = obj.entries[-1]
                    if "\n" in obj.source:
                        ind = indent_at(text, last.start)
                        ins = f"\n{ind}{var} = {r.expression}"
                    else:
                        ins = f", {var} = {r.expression}"
                    repl.append((last.end, last.end, ins))
                else:
                    repl.append((obj.start, obj.end, f"{{ {var} = {r.expression} }}"))
            if new_tpath not in self.repo.files and new_tpath not in self._new_files:
                self._new_files.add(new_tpath)
                self.res.edits.append(NewFile(new_tpath, to_newline(body, self.repo.files[m.path].newline), self.rule))
                self.res.new_files.append(new_tpath)
                self.res.templates.append(new_tpath)
        clone = splice(text, b.start, b.end, repl)
        if m.hcl or m.container == "template":
            clone = align_attributes(clone)         # a dropped line (computed_fields, a variable) leaves `=` padding
        self.taken(tf).add(label)
        key = (tf, b.end)
        order = self._inserts_after.get(key, 0)
        self._inserts_after[key] = order + 1
        edit = TextEdit(tf, b.end, b.end, to_newline("\n\n" + clone, nl), self.rule, order=order)
        self.res.edits.append(edit)
        self.__dict__.setdefault("_placed", []).append((tf, f"{b.labels[0]}.{b.labels[1]}", f"{b.labels[0]}.{label}", edit))
        self.res.new_addresses.append(f"{b.labels[0]}.{label}")
        self.res.tf_targets.append((posixpath.dirname(tf), f"{b.labels[0]}.{label}"))

    def rendered_twin(self, m: Manifest, text: str, b: hclsrc.Block, c: Converted, label: str
                      ) -> tuple[int, int, str] | None:
        """The `filename` of a local_file's copy (the rendered file named as the new template is), and a copy of the
        block that applies the old file alone (`kubectl apply -f ${local_file.x.filename}`), on the new file
        (inventory/localfiles.py)."""
        r = localfiles.scan(self.repo).get(m.path)
        fn = b.attr("filename")
        new_base = self.template_base(r.out_base, c.kind, m.kind) if r is not None and r.out_base else None
        if r is None or fn is None or new_base is None or new_base == r.out_base or \
                fn.source.count(r.out_base) != 1:
            self.finding("MIG-TPL-002", "error", m.tf_path, hclsrc.line_of(text, b.start),
                         f"{b.address}: migrator cannot give the rendered file of a new local_file beside it a name of "
                         "its own (its filename does not write the file's name once, literally)",
                         "copy the block by hand, point it at the generated template and give it a file name of its own")
            return None
        new_src = localfiles.renamed(fn.source, r.out_base, new_base)
        if r.applier is None:               # applied outside Terraform: the runbook applies it
            out = localfiles.output_path(self.repo, m.tf_path, localfiles.renamed(r.raw, r.out_base, new_base))
            self.res.rendered.append(localfiles.apply_command(out, f"{b.labels[0]}.{label}", new_src))
        if r.applier is not None and (r.applier[1].start, label) not in self._applier_copies:
            self._applier_copies.add((r.applier[1].start, label))
            self.copy_applier(r, label, new_base, c, m)
        return fn.start, fn.end, new_src

    def copy_applier(self, r, label: str, new_base: str, c: Converted, m: Manifest) -> None:
        """The null_resource / terraform_data that applies the old rendered file alone, copied for the new one: its
        references name the new local_file and file."""
        ap, ab = r.applier
        text = self.repo.text(ap)
        old_ref, new_ref = f"{r.block.labels[0]}.{r.block.labels[1]}", f"{r.block.labels[0]}.{label}"
        alabel = _unique(self.block_label(ab.labels[1], c.kind, m.kind), self.taken(ap))
        body = text[ab.start:ab.end]
        body = re.sub(rf"(?<![\w.]){re.escape(old_ref)}(?![\w-])", new_ref, body)
        tail = localfiles.file_tail(r.raw, r.out_base)      # the old file as its command names it
        body = re.sub(rf"(?<![\w.-]){re.escape(tail)}(?![\w-])", localfiles.renamed(tail, r.out_base, new_base), body)
        s0, e0 = ab.label_spans[1]
        body = body[:s0 - ab.start] + hclsrc.quote(alabel) + body[e0 - ab.start:]
        self.taken(ap).add(alabel)
        key = (ap, ab.end)
        order = self._inserts_after.get(key, 0)
        self._inserts_after[key] = order + 1
        self.res.edits.append(TextEdit(ap, ab.end, ab.end, to_newline("\n\n" + body, self.repo.files[ap].newline),
                                       self.rule, order=order))
        self.res.new_addresses.append(f"{ab.labels[0]}.{alabel}")
        self.res.tf_targets.append((posixpath.dirname(ap), f"{ab.labels[0]}.{alabel}"))

    def _template_path_fail(self, m: Manifest) -> None:
        self.finding("MIG-TPL-002", "error", m.tf_path, hclsrc.line_of(self.repo.text(m.tf_path), m.call.start),
                     "the template path is not written literally; migrator cannot point a new block at a new template",
                     "copy the block by hand and point it at the generated template")


def _unused_variables(text: str, call: hclsrc.Expr, body: str) -> list[tuple[int, int, str]]:
    """The lines of a templatefile() call's variables (an object literal, one entry per line) that the new template
    `body` never reads: no `${...}` or `%{...}` of it names them."""
    if len(call.items) < 2 or call.items[1].kind != "object" or "\n" not in call.items[1].source:
        return []
    read = " ".join(body[s:e] for s, e, _kind in templates.find_sequences(body))
    out = []
    for e in call.items[1].entries:
        if re.search(r"(?<![\w.])" + re.escape(e.key) + r"(?![\w-])", read):
            continue
        s0, e0 = line_start(text, e.start), line_end(text, e.end)
        if text[s0:e.start].strip() or text[e.end:e0].strip().rstrip(",").strip():
            continue                    # not alone on its lines: kept (an unused variable does no harm)
        out.append((s0, e0, ""))
    return out
