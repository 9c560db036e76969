"""The old objects removed at the cleanup, once their new counterparts exist: their documents, files, resources and
kustomization entries, and templates nothing uses any more."""
from __future__ import annotations

import posixpath
from dataclasses import dataclass, field


from ....edits import DeleteFile, TextEdit
from ....inventory import Manifest
from ....sources import yaml as yamlsrc
from ..convert import TARGET_KIND

from ....placement import block_span, file_calls
from .common import Result, _name_key, _scope


@dataclass
class Removals:
    """Objects to remove, grouped the way their containers remove them: YAML documents per file, Terraform blocks per
    file (a block once, however many objects it holds), template files per path."""
    docs: dict = field(default_factory=dict)
    blocks: dict = field(default_factory=dict)
    templates: dict = field(default_factory=dict)

    def add(self, m: Manifest) -> None:
        if m.container == "yaml":
            self.docs.setdefault(m.path, []).append(m)
            return
        bs = self.blocks.setdefault(m.tf_path, [])
        if all(b.start != m.block.start for b in bs):
            bs.append(m.block)
        if m.container == "template":
            self.templates.setdefault(m.path, []).append(m)
        if m.applier is not None:           # what applies a local_file's rendered file alone goes with it
            tf, ab = m.applier
            if all(b.start != ab.start for b in self.blocks.setdefault(tf, [])):
                self.blocks[tf].append(ab)


class OldObjects:
    """The old objects removed at the cleanup: their documents, files and resources, and templates nothing uses any
    more."""

    # -- cleanup -------------------------------------------------------------------------------
    def cleanup(self) -> Result:
        beta = self.beta_index()
        going = Removals()
        successor: dict[str, str] = {}         # a removed block's address -> the block holding its new counterpart
        for m in self.manifests:
            if m.era != "alpha" or m.kind == "Machine":
                continue
            name = _name_key(m, m.name)
            targets = [(TARGET_KIND[m.kind], name)]
            if m.kind == "Provisioner" and isinstance(m.obj.get("spec"), dict) and "provider" in m.obj["spec"]:
                targets.append(("EC2NodeClass", name))
            missing = [t for t in targets if (_scope(m), t[0], t[1]) not in beta]
            if missing:
                self.finding("MIG-CLN-001", "error", m.path, m.line,
                             f"{m.kind} {name} cannot be removed yet: no {', '.join(f'{k} {n}' for k, n in missing)} "
                             "exists next to it", "run `migrator apply --phase prepare --write` and roll the nodes first")
                continue
            self.res.removed.append(f"{m.kind} {name} ({m.path}:{m.line})")
            going.add(m)
            if m.block is not None and m.tf_path:
                new = next((n for n in self.manifests if n.era == "beta" and n.block is not None and n.tf_path and
                            posixpath.dirname(n.tf_path) == posixpath.dirname(m.tf_path) and _scope(n) == _scope(m)
                            and (n.kind, _name_key(n, n.name)) == targets[0]), None)
                successor.setdefault(m.block.address, new.block.address if new is not None else "")
        remove_blocks, remove_docs, templates = going.blocks, going.docs, going.templates
        for tf, blocks in remove_blocks.items():
            text = self.repo.text(tf)
            for b in blocks:
                s, e = block_span(text, b)
                self.res.edits.append(TextEdit(tf, s, e, "", self.rule))
        removed_starts = {(tf, b.start) for tf, bs in remove_blocks.items() for b in bs}
        self._relink(remove_blocks, successor)
        for tpath, ms in templates.items():
            if not self._template_still_used(tpath, removed_starts):
                self.res.edits.append(DeleteFile(tpath, self.rule))
        for path, ms in remove_docs.items():
            self.remove_yaml_docs(path, ms)
        return self.res

    def _relink(self, removed: dict, successor: dict[str, str]) -> None:
        """A `depends_on` in the same module naming a removed block names the block holding its new counterpart
        instead (a Deployment that waited for the AWSNodeTemplate waits for the EC2NodeClass), or loses the entry when
        the counterpart is not a block of its own; only the `depends_on` line is rewritten. Anything else still reading
        a removed block keeps the module's changes from being written (MIG-EDIT-006)."""
        from ....sources import hcl as hclsrc
        from ....tfgraph import depends_edits
        gone = {b.address for bs in removed.values() for b in bs}
        renamed = {a: s for a, s in successor.items() if a in gone and s and s not in gone}
        dropped = gone - set(renamed)
        for d in sorted({posixpath.dirname(tf) for tf in removed}):
            for p in self.repo.tf_in_dir(d):
                f = self.repo.hcl(p)
                text = self.repo.text(p)
                code = None
                for b in (f.blocks if f else []):
                    if b.address in gone or not any(a in text[b.start:b.end] for a in gone):
                        continue
                    code = code if code is not None else hclsrc.code_of(text)
                    for s, e, new in depends_edits(text, code, b.start, b.end, renamed, dropped):
                        self.res.edits.append(TextEdit(p, s, e, new, self.rule))

    def _template_still_used(self, tpath: str, removed: set[tuple[str, int]]) -> bool:
        return any(used == tpath and (p, start) not in removed
                   for p, start, used in self._file_references(posixpath.basename(tpath)))

    def _file_references(self, base: str) -> list[tuple[str, int, str]]:
        """(file, start of the block, the file it names) for every file()/templatefile() call in .tf files naming
        `base`: read once per run (every root of a fleet names the same template name)."""
        cache = self.repo.__dict__.setdefault("_file_references", {})
        if base not in cache:
            out = []
            for p in self.repo.tf_containing(base):
                f = self.repo.hcl(p)
                for b in (f.walk() if f else []):
                    for a in b.attributes.values():
                        for call in file_calls(a.expr):
                            if call.items:
                                out.append((p, b.start, self.repo.resolve_file_arg(p, call.items[0])))
            cache[base] = out
        return cache[base]

    def remove_yaml_docs(self, path: str, ms: list[Manifest]) -> None:
        text = self.repo.text(path)
        docs = yamlsrc.split_documents(text)
        gone = {m.doc_start for m in ms}
        if all(d.start in gone or _control_only(d.text) for d in docs):
            # nothing else stays: a `{{- range }}` left alone before its object's `---` goes with it
            self.res.edits.append(DeleteFile(path, self.rule))
            self.kustomization_entry(path, None, add=False)
            return
        for i, d in enumerate(docs):
            if d.start not in gone:
                continue
            if i + 1 < len(docs):
                self.res.edits.append(TextEdit(path, d.start, docs[i + 1].start, "", self.rule))
            else:
                prev_end = docs[i - 1].end if i > 0 else 0
                self.res.edits.append(TextEdit(path, prev_end, d.end, "", self.rule))


def _control_only(text: str) -> bool:
    """A document of template control actions, comments and blank lines only (the `{{- range .Values.pools }}` a
    chart writes before the `---` of the object it repeats): it renders no object of its own."""
    from ....sources.templates import CLOSERS, FREE, OPENERS, TemplateError, find_helm, helm_word
    try:
        actions = find_helm(text)
    except TemplateError:
        return False
    control = OPENERS | CLOSERS | FREE | {"else"}
    if any(helm_word(text[s:e]) not in control for s, e, _ in actions):
        return False
    rest = text
    for s, e, _ in reversed(actions):
        rest = rest[:s] + rest[e:]
    return all(not ln.strip() or ln.strip().startswith("#") for ln in rest.splitlines())
