"""Rule `v1beta1/kustomize`: overlay patches on Provisioners / AWSNodeTemplates get NodePool / EC2NodeClass twins.

An overlay that patches the old objects (prod limits, say) must patch the new ones too, or its settings
silently stop applying after the migration. Every form kustomize accepts is read (kustomize.py):
`patches:` (file or inline, strategic merge or JSON 6902, with or without `target:`), `patchesStrategicMerge`
and `patchesJson6902`.

prepare: for each patch of an alpha object, the object it patches is rebuilt the way kustomize would (the
kustomization's resources and its earlier patches), converted before and after the patch, and the new patch
is made from the difference, in the same form, place and style as the old one: a strategic-merge patch holds
the fields the overlay sets (mapped: `spec.limits.resources.cpu` -> `spec.limits.cpu`, `ttlSecondsAfterEmpty`
-> `disruption.consolidateAfter`, ...) plus whatever else the conversion changes because of them; a JSON 6902
patch keeps its ops with their paths mapped (`/spec/limits/resources/cpu` -> `/spec/limits/cpu`), falling back
to ops derived from the two converted objects when an op has no one-to-one image. Every new patch is proven:
applied to the converted base it must yield the converted patched object; a patch that cannot be proven is
not written (a finding says why and what to do). When the base object is not in the repository (a remote
base), the patch is converted field by field and a finding asks to check it.
cleanup: the old entries go (and their files, when nothing else uses them), once their twins exist.
"""
from __future__ import annotations

import copy
import posixpath
from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml.comments import CommentedMap

from ... import knowledge
from ...inventory import kustomizations as kz
from ...edits import DeleteFile, Edit, NewFile, TextEdit
from ...inventory import Repo
from ...model import Finding
from ...sources import yaml as yamlsrc
from ...validate import validate_object
from .convert import Converted, convert_nodeclass, convert_provisioner
from .manifests import derive_name

RULE = "v1beta1/kustomize"
FACTS = knowledge.load("v1beta1")
ROLE = "__MIG_ROLE__"           # stands for the node role on both sides of a diff (never written)


@dataclass
class KustomizeResult:
    edits: list[Edit] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    added: list[str] = field(default_factory=list)          # "kustomization:line" of the new patch entries
    removed: list[str] = field(default_factory=list)


@dataclass
class NewPatch:
    kind: str                   # NodePool | EC2NodeClass
    api: str
    docs: list                  # smp: objects; json6902: [ops]
    target: Any = None
    subst: list | None = None   # json6902 ops mapped one to one: (op index, key, new value)


def _new_kind(kind: str) -> tuple[str, str]:
    to = FACTS["kinds"][kind]["to"]
    return to["apiVersion"], to["kind"]


def _get(obj: Any, path: tuple) -> Any:
    for p in path:
        if isinstance(obj, dict) and p in obj:
            obj = obj[p]
        elif isinstance(obj, list) and isinstance(p, str) and p.isdigit() and int(p) < len(obj):
            obj = obj[int(p)]
        else:
            raise KeyError(p)
    return obj


def _leaves(obj: Any, path: tuple = ()) -> list[tuple]:
    """Paths of the leaves of a patch object (lists are leaves: a merge patch replaces them whole)."""
    if isinstance(obj, dict) and obj:
        out = []
        for k, v in obj.items():
            out += _leaves(v, path + (str(k),))
        return out
    return [path]


def _set(obj: dict, path: tuple, value: Any) -> None:
    for p in path[:-1]:
        if not isinstance(obj.get(p), dict):
            obj[p] = {}
        obj = obj[p]
    obj[path[-1]] = copy.deepcopy(value)


class KustomizeRule:
    def __init__(self, repo: Repo, phase: str, owns=lambda p: True, keep_alpha_defaults: bool = False):
        self.repo = repo
        self.phase = phase
        self.owns = owns
        self.keep = keep_alpha_defaults
        self.res = KustomizeResult()

    def finding(self, code, severity, path, line, message, manual=""):
        self.res.findings.append(Finding(code, severity, path, line, message, manual))

    def run(self) -> KustomizeResult:
        for k in kz.scan(self.repo):
            # a kustomization without a patch of alpha objects has nothing for either phase: its root is not asked
            # (a GitOps tree's hundreds of kustomizations, each a question of ownership)
            if not any(pt.era() == "alpha" for pt in k.patches) or not self.owns(k.path):
                continue
            for pt in k.patches:
                if pt.era() != "alpha":
                    continue
                if self.phase == "prepare":
                    self.prepare(k, pt)
            if self.phase == "cleanup":
                self.cleanup(k)
        return self.res

    # -- conversion --------------------------------------------------------------------------
    def convert(self, kind: str, obj: dict) -> tuple[dict[str, dict], dict[str, Converted], list]:
        """Converted objects (plain data) by new kind, the conversions, and their notes."""
        src = copy.deepcopy(obj)
        if kind == "Provisioner":
            np_, nc = convert_provisioner(src, self.keep)
            convs = {"NodePool": np_}
            if nc is not None:
                nc_full = convert_nodeclass({"metadata": {"name": np_.name}, "spec": src["spec"]["provider"]},
                                            inline=True, role=ROLE)
                for i, (s, d, vb) in enumerate(nc_full.moves):
                    if s[:1] == ("spec",):
                        nc_full.moves[i] = (("spec", "provider") + s[1:], d, vb)
                convs["EC2NodeClass"] = nc_full
        else:
            convs = {"EC2NodeClass": convert_nodeclass(src, role=ROLE)}
        objs = {k: kz.plain(c.obj) for k, c in convs.items() if c.ok}
        notes = [n for c in convs.values() for n in c.notes]
        return objs, convs, notes

    def neutral(self, kind: str, name: Any, pt: kz.Patch) -> dict:
        """A stand-in base when the patched object is not in the repository: only what conversion requires."""
        api = FACTS["kinds"][kind]["apiVersion"]
        patched = {}
        for d in pt.docs if pt.form == "smp" else []:
            if isinstance(d, dict):
                patched = kz.merge_patch(patched, kz.plain(d.get("spec") or {}))
        spec: dict = {}
        if kind == "Provisioner" and "provider" not in patched:
            spec["providerRef"] = {"name": str(name)}
        if kind == "AWSNodeTemplate":
            for sel in ("subnetSelector", "securityGroupSelector"):
                if sel not in patched:
                    spec[sel] = {"karpenter.sh/discovery": "__MIG_BASE__"}
        return {"apiVersion": api, "kind": kind, "metadata": {"name": str(name)}, "spec": spec}

    # -- prepare -----------------------------------------------------------------------------
    def prepare(self, k: kz.Kustomization, pt: kz.Patch) -> None:
        new: dict[str, NewPatch] = {}
        for api, kind, name in pt.aims():
            if name is None:
                self.finding("MIG-KUS-003", "warning", pt.kpath, pt.line,
                             f"patch {pt.where} targets every {kind} (no name); migrator converts patches of one "
                             "named object", f"add an equivalent patch for the {_new_kind(kind)[1]}s by hand")
                return
            base = kz.find_base(self.repo, pt, api, kind, name)
            known = base is not None
            if base is None:
                base = self.neutral(kind, name, pt)
            try:
                eff = kz.apply_patch(pt, base, api, kind)
            except kz.PatchError as e:
                self.finding("MIG-KUS-002", "error", pt.kpath, pt.line,
                             f"patch {pt.where} does not apply to {kind} {name}: {e}",
                             "fix the patch (kustomize build fails on it too); it is left untouched")
                return
            before, _, base_notes = self.convert(kind, base)
            after, convs, notes = self.convert(kind, eff)
            old_msgs = {(n.code, n.message) for n in base_notes}
            for n in notes:
                if (n.code, n.message) not in old_msgs and n.severity != "info":
                    self.finding(n.code, n.severity, pt.file or pt.kpath, 1 if pt.file else pt.line,
                                 f"{kind} {name} as patched by {pt.where}: {n.message}", n.manual_step)
            if set(after) != set(before) and not set(before) <= set(after):
                self.finding("MIG-KUS-002", "error", pt.kpath, pt.line,
                             f"{kind} {name} as patched by {pt.where} cannot be converted", "see the findings above")
                return
            for nk, obj in after.items():
                errs = validate_object(obj)
                if errs:
                    self.finding("MIG-VAL-001", "error", pt.kpath, pt.line,
                                 f"{nk} {name} as patched by {pt.where} fails the v1beta1 CRD: {'; '.join(errs[:3])}",
                                 "fix the overlay's patch; its twin is not written")
                    return
            for nk in after:
                got = self.new_patch(pt, kind, name, nk, before.get(nk), after[nk], convs[nk], known)
                if got is None:
                    return
                if got.docs:
                    new[nk] = got
        if not new:
            return
        if not known:
            self.finding("MIG-KUS-005", "warning", pt.kpath, pt.line,
                         f"the object patched by {pt.where} is not in this repository (remote base?): its "
                         f"{'/'.join(new)} patch is converted field by field and not proven against the base",
                         "check the new patch with `kustomize build` against the real base")
        self.write(k, pt, list(new.values()))

    def new_patch(self, pt: kz.Patch, kind: str, name: Any, nk: str, before: dict | None, after: dict,
                  conv: Converted, known: bool) -> NewPatch | None:
        api = after["apiVersion"]
        if before is None:
            before = {"apiVersion": api, "kind": nk, "metadata": {"name": str(name)}}
        if pt.form == "smp":
            diff = kz.merge_diff(before, after)
            for d in pt.docs:                          # the fields the overlay sets, even where they equal the base
                for leaf in _leaves(kz.plain(d.get("spec") or {}), ("spec",)):
                    dst = conv.map_path(leaf)
                    if dst is not None and (conv.is_verbatim(leaf) or dst in {d2 for s, d2, _ in conv.moves}):
                        try:
                            _set(diff, dst, _get(after, dst))
                        except KeyError:
                            pass
            meta = {"name": after["metadata"]["name"]}
            for d in pt.docs:
                ns = (d.get("metadata") or {}).get("namespace")
                if ns is not None:
                    meta["namespace"] = ns
            doc = {"apiVersion": api, "kind": nk, "metadata": meta}
            extra_meta = diff.pop("metadata", None) or {}
            doc["metadata"].update({k: v for k, v in extra_meta.items() if k != "name"})
            diff.pop("apiVersion", None)
            diff.pop("kind", None)
            doc.update(diff)
            if not diff and not extra_meta:
                return NewPatch(nk, api, [])
            if kz.merge_patch(before, doc) != after:
                return self.unproven(pt, nk)
            return NewPatch(nk, api, [doc], self.target(pt))
        mapped = self.map_ops(pt, conv, after, nk)
        if mapped is not None:
            ops, subst = mapped
            try:
                ok = kz.json_patch(before, ops) == after
            except kz.PatchError:
                ok = False
            if ok or not known:
                whole = len(ops) == len(pt.docs[0])
                return NewPatch(nk, api, [ops], self.target(pt), subst if whole else None) if ops else \
                    NewPatch(nk, api, [])
        if not known:
            self.finding("MIG-KUS-002", "error", pt.kpath, pt.line,
                         f"an op of {pt.where} has no {nk} equivalent and the patched object is not in this "
                         "repository to derive one", f"write the {nk} patch by hand")
            return None
        import jsonpatch
        derived = jsonpatch.make_patch(before, after).patch
        self.finding("MIG-KUS-006", "info", pt.kpath, pt.line,
                     f"the ops of {pt.where} have no one-to-one {nk} equivalent: the new patch holds ops derived "
                     "from the converted objects (same result)")
        return NewPatch(nk, api, [derived], self.target(pt)) if derived else NewPatch(nk, api, [])

    def unproven(self, pt: kz.Patch, nk: str) -> None:
        self.finding("MIG-KUS-002", "error", pt.kpath, pt.line,
                     f"the {nk} patch made from {pt.where} does not reproduce the converted patched object; "
                     "it is not written", f"write the {nk} patch by hand")
        return None

    def map_ops(self, pt: kz.Patch, conv: Converted, after: dict, nk: str) -> tuple[list, list] | None:
        out, subst = [], []
        prefix = ("spec", "provider") if nk == "EC2NodeClass" and pt.aims()[0][1] == "Provisioner" else ()
        for op in pt.docs[0]:
            if not isinstance(op, dict) or "path" not in op:
                return None
            try:
                path = kz.pointer(str(op["path"]))
            except kz.PatchError:
                return None
            if prefix and path[: len(prefix)] != prefix:
                continue
            if not prefix and nk == "NodePool" and path[:2] == ("spec", "provider"):
                continue
            dst = conv.map_path(path)
            if dst is None:
                return None
            i = len(out)
            new = dict(kz.plain(op))
            new["path"] = kz.to_pointer(dst)
            subst.append((i, "path", new["path"]))
            if "from" in op:
                src = conv.map_path(kz.pointer(str(op["from"])))
                if src is None:
                    return None
                new["from"] = kz.to_pointer(src)
                subst.append((i, "from", new["from"]))
            if "value" in op and not conv.is_verbatim(path):
                try:
                    new["value"] = _get(after, dst)
                except KeyError:
                    return None
                subst.append((i, "value", new["value"]))
            out.append(new)
        return out, subst

    def target(self, pt: kz.Patch) -> Any:
        t = pt.target
        if not isinstance(t, dict):
            return None
        kind = str(t.get("kind", ""))
        if kind not in FACTS["kinds"]:
            return t
        api, nk = _new_kind(kind)
        g, v = kz._group_version(api)
        out = CommentedMap()
        for key, val in t.items():
            out[key] = {"group": g, "version": v, "kind": nk}.get(key, val)
        return out

    # -- writing -----------------------------------------------------------------------------
    def write(self, k: kz.Kustomization, pt: kz.Patch, patches: list[NewPatch]) -> None:
        if self.has_twin(k, pt, patches):
            return
        items = k.obj[pt.field]
        start, end = entry_span(k.text, items, pt.index)
        groups = [patches] if pt.form == "smp" else [[p] for p in patches]
        text = ""
        for group in groups:
            body = self.render(pt, group)
            entry = self.entry(k, pt, group, body, start, end)
            if entry is None:
                return
            text += entry
        nl = self.repo.files[k.path].newline
        if not k.text[:end].endswith("\n"):
            text = nl + text.rstrip("\r\n")
        self.res.edits.append(TextEdit(k.path, end, end, text, RULE))
        self.res.added.append(pt.where)
        self.finding("MIG-KUS-001", "info", pt.kpath, pt.line,
                     f"{pt.form} patch {pt.where} ({', '.join(f'{a[1]} {a[2]}' for a in pt.aims())}): added its "
                     f"{' and '.join(p.kind for p in patches)} twin after it (the old one goes in cleanup)")

    def render(self, pt: kz.Patch, group: list[NewPatch]) -> str:
        """The new patch text: the old text with its paths replaced where ops map one to one, else emitted in
        the old text's style (JSON layout, YAML indentation, leading comments)."""
        like = pt.text.replace("\r\n", "\n")
        if pt.form == "json6902":
            np_ = group[0]
            if np_.subst is not None:
                copied = _substitute(like, pt.docs[0], np_.subst)
                if copied is not None:
                    return copied
            ops = np_.docs[0]
            if pt.json:
                return kz.dumps_json(ops, like)
            return _emit_seq(_yaml_ready(ops), yamlsrc.detect_style(like))
        docs = [d for p in group for d in p.docs]
        if pt.json:
            return kz.dumps_json(docs[0], like)
        em = yamlsrc.Emitter(yamlsrc.detect_style(like))
        head = ""
        for ln in like.splitlines(keepends=True):
            if not ln.lstrip().startswith("#"):
                break
            head += ln
        return head + "---\n".join(em.emit(_yaml_ready(d)).text for d in docs)

    def entry(self, k: kz.Kustomization, pt: kz.Patch, group: list[NewPatch], body: str, start: int,
              end: int) -> str | None:
        """The new kustomization entry: a copy of the old one's lines with its path, inline patch and target
        kind replaced."""
        nk = group[0].kind
        text = k.text
        subs: list[tuple[int, int, str]] = []
        new_rel = None
        if pt.file is not None:
            d, base = posixpath.split(pt.file)
            stem, dot, ext = base.rpartition(".")
            new_base = derive_name(stem or base, nk, pt.aims()[0][1], file=True) + (dot + ext if stem else "")
            if new_base == base:
                new_base = (stem or base) + FACTS["naming"]["file_fallback_suffix"] + (dot + ext if stem else "")
            new_file = posixpath.join(d, new_base) if d else new_base
            nl = self.repo.files[pt.file].newline
            if new_file in self.repo.files and self.repo.text(new_file) != body.replace("\n", nl):
                self.finding("MIG-MAN-002", "warning", new_file, 1,
                             f"{new_file} exists with other content; the {nk} twin of {pt.where} is not written",
                             "move that file away or write the patch by hand")
                return None
            if new_file not in self.repo.files:
                self.res.edits.append(NewFile(new_file, body.replace("\n", nl), RULE))
            new_rel = posixpath.relpath(new_file, k.dir or ".")
        items = k.obj[pt.field]
        holder, key = (items[pt.index], "path" if pt.file else "patch") if isinstance(pt.item, dict) \
            else (items, pt.index)          # the round-trip entry: its positions
        pos = kz.value_pos(text, holder, key)
        if pos is None:
            return None
        if new_rel is not None:
            s, e = kz.scalar_span(text, pos)
            old = text[s:e]
            subs.append((s, e, kz.quoted_like(old, ("./" if old.strip("'\"").startswith("./") else "") + new_rel)))
        elif text[pos] in "|>":
            bs, be, indent = _block_body(text, pos)      # the indicator (|, |-) keeps the old chomping
            subs.append((bs, be, "\n".join(indent + ln if ln.strip() else ""
                                           for ln in body.rstrip("\n").split("\n")) + "\n"))
        else:
            s, e = kz.scalar_span(text, pos)
            one_line = " ".join(x.strip() for x in body.splitlines())
            subs.append((s, e, kz.quoted_like(text[s:e], one_line)))
        tgt = items[pt.index].get("target") if isinstance(pt.item, dict) else None
        new_t = group[0].target
        if isinstance(tgt, dict) and isinstance(new_t, dict):
            for tk in ("group", "version", "kind"):
                if tk in tgt and tgt[tk] != new_t.get(tk):
                    tp = kz.value_pos(text, tgt, tk)
                    if tp is not None:
                        s, e = kz.scalar_span(text, tp)
                        subs.append((s, e, kz.quoted_like(text[s:e], new_t[tk])))
        out = text[start:end]
        for s, e, r in sorted(subs, reverse=True):
            if not start <= s <= e <= end:
                return None
            out = out[:s - start] + r + out[e - start:]
        nl = self.repo.files[k.path].newline
        return out if out.endswith("\n") else out + nl

    def has_twin(self, k: kz.Kustomization, pt: kz.Patch, patches: list[NewPatch]) -> bool:
        """A beta patch in the same kustomization doing exactly what this one would add (a second run)."""
        for other in k.patches:
            if other.era() != "beta" or other.form != pt.form:
                continue
            if pt.form == "smp":
                mine = [kz.plain(d) for p in patches for d in p.docs]
                if [kz.plain(d) for d in other.docs] == mine:
                    return True
            elif other.docs and any(kz.plain(other.docs[0]) == kz.plain(p.docs[0]) and
                                    other.aims()[:1] and other.aims()[0][1] == p.kind for p in patches):
                return True
        return False

    # -- cleanup -----------------------------------------------------------------------------
    def cleanup(self, k: kz.Kustomization) -> None:
        gone: dict[str, list[int]] = {}
        for pt in k.patches:
            if pt.era() != "alpha":
                continue
            self.res.removed.append(pt.where)
            gone.setdefault(pt.field, []).append(pt.index)
            if pt.file and not self.used_elsewhere(pt):
                self.res.edits.append(DeleteFile(pt.file, RULE))
        if not gone:
            return
        if not any(p.era() == "beta" for p in k.patches):
            self.finding("MIG-CLN-001", "error", k.path, 1,
                         f"{k.path} patches alpha objects but has no NodePool/EC2NodeClass patches yet; "
                         "the old patches stay", "run `migrator apply --phase prepare` first")
            self.res.removed.clear()
            self.res.edits = [e for e in self.res.edits if not (isinstance(e, DeleteFile) and
                                                                 any(e.path == p.file for p in k.patches))]
            return
        for fld, idxs in gone.items():
            items = k.obj[fld]
            if len(idxs) == len(items):
                ks, _ = key_span(k.text, k.obj, fld)
                _, end = entry_span(k.text, items, len(items) - 1)
                self.res.edits.append(TextEdit(k.path, ks, end, "", RULE))
                continue
            for i in idxs:
                s, e = entry_span(k.text, items, i)
                self.res.edits.append(TextEdit(k.path, s, e, "", RULE))
        self.finding("MIG-KUS-001", "info", k.path, 1,
                     f"removed {sum(map(len, gone.values()))} patch(es) of alpha objects from {k.path}")

    def used_elsewhere(self, pt: kz.Patch) -> bool:
        """The file of a patch of alpha objects stays when anything but another such patch reads it."""
        return kz.file_used_elsewhere(self.repo, pt, lambda other: other.era() != "alpha")


def _yaml_ready(v: Any) -> Any:
    """Plain data -> ruamel maps (the Emitter keeps key order; strings with newlines become block scalars)."""
    if isinstance(v, dict):
        return CommentedMap((k, _yaml_ready(x)) for k, x in v.items())
    if isinstance(v, list):
        return [_yaml_ready(x) for x in v]
    return v


_lines_offsets = kz.line_offsets


def _emit_seq(seq: list, style: yamlsrc.Style) -> str:
    em = yamlsrc.Emitter(style)
    em.lines = []
    em._seq(seq, 0, ())
    return "".join(ln + "\n" for ln in em.lines)


def _substitute(text: str, ops: Any, subst: list) -> str | None:
    """The old ops' text with mapped paths (and re-typed scalar values) replaced in place."""
    subs = []
    for i, key, value in subst:
        if key == "value" and isinstance(value, (dict, list)):
            return None
        pos = kz.value_pos(text, ops[i], key)
        if pos is None or (key == "value" and isinstance(ops[i][key], (dict, list))):
            return None
        s, e = kz.scalar_span(text, pos)
        subs.append((s, e, kz.quoted_like(text[s:e], value)))
    for s, e, r in sorted(subs, reverse=True):
        text = text[:s] + r + text[e:]
    return text


def _block_body(text: str, pos: int) -> tuple[int, int, str]:
    """Span and indentation of the body of the block scalar whose indicator is at pos."""
    offs = kz.line_offsets(text)
    lines = text.splitlines(keepends=True)
    ln = next(i for i in range(len(offs) - 1) if offs[i] <= pos < offs[i + 1])
    key_col = len(lines[ln]) - len(lines[ln].lstrip(" "))
    if lines[ln].lstrip(" ").startswith("- "):
        key_col += 2
    end = ln + 1
    last = end
    indent = None
    while end < len(lines):
        s = lines[end]
        ind = len(s) - len(s.lstrip(" "))
        if s.strip() and ind <= key_col:
            break
        if s.strip() and indent is None:
            indent = s[:ind]
        end += 1
        if s.strip():
            last = end
    return offs[ln + 1], offs[last], indent or " " * (key_col + 2)


def _dash_col(text: str, start: int) -> int:
    line = text[start:text.find("\n", start) if "\n" in text[start:] else len(text)]
    return len(line) - len(line.lstrip(" "))


def entry_span(text: str, items: Any, i: int) -> tuple[int, int]:
    """Offsets of the whole lines of list item i: its dash line to its last content line (comments and blank
    lines after it belong to what follows)."""
    offs = _lines_offsets(text)
    lines = text.splitlines(keepends=True)
    ln = items.lc.item(i)[0]
    while ln > 0 and not lines[ln].lstrip(" ").startswith("-"):
        ln -= 1
    dash = len(lines[ln]) - len(lines[ln].lstrip(" "))
    stop = len(lines)
    if i + 1 < len(items):
        stop = items.lc.item(i + 1)[0]
        while stop > ln and not lines[stop].lstrip(" ").startswith("-"):
            stop -= 1
    end = last = ln + 1
    while end < stop:
        s = lines[end]
        if s.strip() and len(s) - len(s.lstrip(" ")) <= dash and not s.lstrip().startswith("#"):
            break
        end += 1
        if s.strip() and not s.lstrip().startswith("#"):
            last = end
    return offs[ln], offs[last]


def key_span(text: str, obj: Any, key: str) -> tuple[int, int]:
    offs = _lines_offsets(text)
    ln = obj.lc.key(key)[0]
    return offs[ln], offs[ln + 1]
