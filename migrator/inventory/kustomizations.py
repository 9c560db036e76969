"""Kustomize: kustomizations, the patches they apply to Karpenter objects, and a small build emulation.

Kustomize applies a strategic-merge patch to a custom resource as a JSON merge patch (there is no schema with
merge keys: maps merge, lists are replaced whole, `null` deletes a key) and a JSON 6902 patch op by op. That
is all migrator needs to know what an overlay does to a Provisioner or AWSNodeTemplate, and to prove that the
NodePool/EC2NodeClass patch it writes does the same to the converted object.

Every kustomization is read once per run (cached on the repository); patch files referenced by one are
partial objects and are never reported as broken manifests.
"""
from __future__ import annotations

import copy
import json
import posixpath
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from .. import knowledge
from .repo import YAML, Repo
from ..model import Finding
from ..sources import yaml as yamlsrc

KFILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
PATCH_FIELDS = ("patchesStrategicMerge", "patchesJson6902", "patches")
KINDS = {(k["apiVersion"], k["kind"]): k["era"] for k in knowledge.load("hops")["kinds"]}
_GROUPS = sorted({api.rpartition("/")[0] for api, _ in KINDS})     # karpenter.sh, karpenter.k8s.aws, ...


def _group_version(api: str) -> tuple[str, str]:
    g, _, v = str(api).rpartition("/")
    return g, v


@dataclass
class Patch:
    kpath: str                  # the kustomization listing it
    field: str                  # patches | patchesStrategicMerge | patchesJson6902
    index: int                  # position in that list
    item: Any                   # the list item, plain values (a path string, an inline string or a map)
    form: str                   # smp | json6902
    file: str | None            # repository path of the patch file, when it is one
    text: str                   # the patch text (file contents or the inline string)
    loaded: list | None         # smp: the patch objects; json6902: one list of ops (None: parsed when first read)
    target: Any = None          # the entry's `target:` selector, if any
    line: int = 0               # 1-based line of the entry in the kustomization
    json: bool = False          # the patch text is JSON (keep it JSON)
    plain: list | None = field(default=None, repr=False)     # its documents' plain values (libyaml), on first use

    @property
    def docs(self) -> list:
        """The patch's documents, parsed round-trip on first use (most patches of a repository patch other kinds
        and are never read)."""
        if self.loaded is None:
            docs = _load_all(self.text)
            self.loaded = ([docs[0]] if docs and isinstance(docs[0], list) else []) if self.form == "json6902" \
                else docs
        return self.loaded

    def entry(self, k: "Kustomization") -> Any:
        """The entry as the round-trip tree holds it (positions for edits; `item` is its plain value)."""
        return k.obj[self.field][self.index]

    @property
    def heads(self) -> list:
        """The patch's documents as plain values (libyaml: what each patch is for, without the round-trip parse
        that only an edit needs)."""
        if self.plain is None:
            out = []
            for doc in yamlsrc.split_documents(self.text):
                try:
                    out.append(yamlsrc.values(doc.text))
                except yamlsrc.YamlParseError:
                    out = []
                    break
            self.plain = out
        return self.plain

    @property
    def where(self) -> str:
        return f"{self.kpath}:{self.line}"

    def aims(self) -> list[tuple[str, str, Any]]:
        """(apiVersion or group/version, kind, name) of the Karpenter objects this patch is for."""
        out = []
        t = self.target if isinstance(self.target, dict) else {}
        if self.form == "smp":
            if not any(g in self.text for g in _GROUPS):
                return out                      # no document of it can have one of those apiVersions
            for d in (self.docs if self.loaded is not None else self.heads):
                if isinstance(d, dict):
                    api, kind = str(d.get("apiVersion", "")), str(d.get("kind", ""))
                    name = (d.get("metadata") or {}).get("name") if isinstance(d.get("metadata"), dict) else None
                    if (api, kind) in KINDS:
                        out.append((api, kind, name if name is not None else t.get("name")))
            return out
        kind = t.get("kind")
        for (api, k) in KINDS:
            g, v = _group_version(api)
            if k == kind and t.get("group", g) == g and t.get("version", v) == v:
                out.append((api, k, t.get("name")))
                break
        return out

    def era(self) -> str | None:
        eras = {KINDS[(a, k)] for a, k, _ in self.aims()}
        return eras.pop() if len(eras) == 1 else None


@dataclass
class Kustomization:
    path: str
    text: str
    values: Any                                             # its plain values (libyaml)
    resources: list[str] = field(default_factory=list)     # repository paths (files or folders)
    patches: list[Patch] = field(default_factory=list)
    tree: Any = None                                        # the round-trip tree, parsed when positions are needed

    @property
    def obj(self) -> Any:
        """The round-trip tree (positions for edits), parsed on first use."""
        if self.tree is None:
            self.tree = yamlsrc.load(self.text)
        return self.tree

    @cached_property
    def dir(self) -> str:
        return posixpath.dirname(self.path)


def _join(base: str, rel: str) -> str:
    return posixpath.normpath(posixpath.join(base, rel)) if base else posixpath.normpath(rel)


def kustomization_in(repo: Repo, d: str) -> str | None:
    """The kustomization file of folder `d` ("" for the top folder), the first of KFILES there; read from an index of
    every kustomization file by folder, made once per run."""
    if d and (d.endswith("/") or posixpath.normpath(d) != d):
        return next((p for name in KFILES if (p := posixpath.join(d, name)) in repo.files), None)
    index = repo.__dict__.get("_kustomization_files")
    if index is None:
        index = {}
        for name in reversed(KFILES):       # the first of KFILES wins
            for p in repo.named(name):
                index[posixpath.dirname(p)] = p
        repo.__dict__["_kustomization_files"] = index
    return index.get(d) if d != "." else None


def scan(repo: Repo) -> list[Kustomization]:
    """Every kustomization of the repository (parsed once per run)."""
    cached = repo._kustomizations
    if cached is not None:
        return cached
    out = []
    for p in sorted(repo.named(*KFILES)):
        k = _read(repo, p)
        if k is not None:
            out.append(k)
    repo._kustomizations = out
    repo.patch_paths = {pt.file for k in out for pt in k.patches if pt.file and pt.form == "smp"}
    return out


def at(repo: Repo, path: str) -> Kustomization | None:
    """The kustomization read from file `path` (None: none there), looked up in an index of `scan`'s list."""
    ks = scan(repo)
    index = repo.__dict__.get("_kustomization_at")
    if index is None or index[0] is not ks:
        index = repo.__dict__["_kustomization_at"] = (ks, {k.path: k for k in reversed(ks)})     # the first wins
    return index[1].get(path)


def file_used_elsewhere(repo, pt, staying=lambda other: True) -> bool:
    """Does anything else still read a patch's file: another patch that stays (`staying(other)`), or a kustomization
    listing it as a resource? Then the file stays when the patch goes."""
    return any(pt.file in k.resources or any(o.file == pt.file and o is not pt and staying(o) for o in k.patches)
               for k in scan(repo))


def patch_files(repo: Repo) -> set[str]:
    scan(repo)
    return repo.patch_paths


_UNREAD = object()


def _read(repo: Repo, p: str) -> Kustomization | None:
    text = repo.text(p)
    # by text, once per run: repositories copy kustomizations (an overlay per environment, a vendored tree twice);
    # the copies share their plain values, which no reader changes
    parsed = repo.__dict__.setdefault("_kustomization_values", {})
    obj = parsed.get(text, _UNREAD)
    if obj is _UNREAD:
        try:
            obj = parsed[text] = yamlsrc.values(text)
        except yamlsrc.YamlParseError:
            obj = parsed[text] = None           # reported by the manifest scan when it matters
    if not isinstance(obj, dict):
        return None
    k = Kustomization(p, text, obj)
    d = posixpath.dirname(p)
    for r in obj.get("resources") or obj.get("bases") or []:
        if isinstance(r, str) and "://" not in r and not r.startswith(("github.com/", "git@")):
            k.resources.append(_join(d, r))
    for fld in PATCH_FIELDS:
        if not isinstance(obj.get(fld), list):
            continue
        items, lines = obj[fld], _item_lines(text, fld, len(obj[fld]))
        if lines is None:                       # a layout the line reader does not follow: the round-trip tree
            try:
                tree = k.obj.get(fld)
            except yamlsrc.YamlParseError:
                return None
            if not isinstance(tree, list) or len(tree) != len(items):
                return None
            lines = [tree.lc.item(i)[0] + 1 for i in range(len(tree))]
        for i, item in enumerate(items):
            pt = _patch(repo, k, fld, i, item)
            if pt is not None:
                pt.line = lines[i]
                k.patches.append(pt)
                if any(x in pt.text for x in ("Provisioner", "AWSNodeTemplate")) and not pt.docs:
                    parse_error(repo, pt)           # once per run: kustomizations are read once
    return k


# a YAML anchor or alias (`&name`, `*name`) where a node can start: not a `*` in a comment's prose (`# * item`) or in
# a quoted string (`name: "*"`), which kubeflow's kustomizations have by the dozen
_ANCHOR_OR_ALIAS = re.compile(r"(?:^|[\s\[{,])[&*][^\s,\[\]{}]", re.M)


def _item_lines(text: str, fld: str, count: int) -> list[int] | None:
    """1-based lines of the `count` items of the top-level block sequence `fld:`, read from the text (a kustomization
    is small, but the round-trip parser costs milliseconds each); None unless exactly that many are found (a flow
    sequence, an anchor, a layout this reading does not follow)."""
    if count == 0:                          # (`patches: []`: no item to place)
        return []
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if re.match(rf"{re.escape(fld)}:[ \t]*(#.*)?$", ln)), None)
    if start is None or (("&" in text or "*" in text) and _ANCHOR_OR_ALIAS.search(text)):
        return None
    out, dash = [], None
    for i in range(start + 1, len(lines)):
        ln = lines[i]
        body = ln.lstrip(" ")
        if not body or body.startswith("#"):
            continue
        ind = len(ln) - len(body)
        if ind == 0 and not body.startswith("-"):
            break                               # the next top-level key
        if body == "-" or body.startswith("- "):
            if dash is None:
                dash = ind
            if ind == dash:
                out.append(i + 1)
        elif dash is not None and ind <= dash:
            break
    return out if len(out) == count else None


def _patch(repo: Repo, k: Kustomization, fld: str, i: int, item: Any) -> Patch | None:
    d = k.dir
    target = None
    if isinstance(item, dict):
        target = item.get("target")
        rel, inline = item.get("path"), item.get("patch")
    elif isinstance(item, str):
        inline = item if "\n" in item or ":" in item else None
        rel = None if inline is not None else item
    else:
        return None
    file = None
    if rel is not None:
        file = _join(d, str(rel))
        if file not in repo.files:
            return None
        text = repo.text(file)
    elif isinstance(inline, str):
        text = inline
    else:
        return None
    is_json = text.lstrip().startswith(("[", "{"))
    if fld == "patchesJson6902":
        form = "json6902"
    elif fld == "patchesStrategicMerge":
        form = "smp"
    else:                               # `patches`: a list of operations is a JSON 6902 patch
        first = next(iter(yamlsrc.split_documents(text)), None)
        try:
            top = yamlsrc.values(first.text) if first is not None else None
        except yamlsrc.YamlParseError:
            top = None
        form = "json6902" if isinstance(top, list) else "smp"
    return Patch(k.path, fld, i, item, form, file, text, None, target, json=is_json)


def _load_all(text: str) -> list:
    out = []
    for doc in yamlsrc.split_documents(text):
        try:
            out.append(yamlsrc.load(doc.text))
        except yamlsrc.YamlParseError:
            return []
    return out


# ----------------------------------------------------------------------------------------------
# build emulation (Karpenter kinds only)
# ----------------------------------------------------------------------------------------------
def plain(v: Any) -> Any:
    """ruamel structures -> plain JSON-like data (for comparison and JSON patches)."""
    from ..validate import to_plain
    return to_plain(v)


def merge_patch(obj: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: how kustomize applies a strategic-merge patch to a custom resource."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(obj) if isinstance(obj, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def merge_diff(old: Any, new: Any) -> dict:
    """The smallest merge patch turning old into new (maps recurse, lists and scalars are replaced)."""
    out: dict = {}
    for k, v in new.items():
        if k not in old:
            out[k] = copy.deepcopy(v)
        elif isinstance(v, dict) and isinstance(old[k], dict):
            sub = merge_diff(old[k], v)
            if sub:
                out[k] = sub
        elif v != old[k]:
            out[k] = copy.deepcopy(v)
    for k in old:
        if k not in new:
            out[k] = None
    return out


class PatchError(ValueError):
    pass


def pointer(path: str) -> tuple:
    if path == "":
        return ()
    if not path.startswith("/"):
        raise PatchError(f"JSON pointer {path!r} does not start with /")
    return tuple(p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/"))


def to_pointer(path: tuple) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def json_patch(obj: Any, ops: list) -> Any:
    import jsonpatch
    try:
        return jsonpatch.apply_patch(obj, plain(ops))
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, TypeError, KeyError, IndexError) as e:
        raise PatchError(str(e)) from e


def _matches(pt: Patch, api: str, kind: str, name: Any) -> bool:
    t = pt.target if isinstance(pt.target, dict) else None
    if pt.form == "json6902" and t is not None and t.get("kind") == kind:
        # a target selects by what it states: with no group or version, every version of the kind (kustomize)
        g, v = _group_version(api)
        return t.get("group", g) == g and t.get("version", v) == v and \
            (t.get("name") is None or str(t.get("name")) == str(name))
    for a, k, n in pt.aims():
        if a == api and k == kind and (n is None or str(n) == str(name)):
            return True
    return False


def apply_patch(pt: Patch, obj: dict, api: str, kind: str) -> dict:
    name = (obj.get("metadata") or {}).get("name")
    if not _matches(pt, api, kind, name):
        return obj
    if pt.form == "json6902":
        return json_patch(obj, pt.docs[0]) if pt.docs else obj
    for d in pt.docs:
        if isinstance(d, dict) and (str(d.get("apiVersion")), str(d.get("kind"))) == (api, kind) and \
                str(((d.get("metadata") or {}).get("name"))) == str(name):
            obj = merge_patch(obj, plain(d))
    return obj


def build(repo: Repo, kpath: str, upto: Patch | None = None, _seen: frozenset = frozenset()) -> list[dict] | None:
    """The Karpenter objects a kustomization yields (plain data), its patches applied in order; with `upto`,
    only the patches before that one. None when a resource it names is not in the repository."""
    if kpath in _seen:
        return None
    k = at(repo, kpath)
    if k is None:
        return None
    objs: list[dict] = []
    for r in k.resources:
        sub = kustomization_in(repo, r)
        if sub is not None:
            got = build(repo, sub, None, _seen | {kpath})
            if got is None:
                return None
            objs.extend(got)
        elif r in repo.files:
            for d in _load_all(repo.text(r)):
                if isinstance(d, dict) and (str(d.get("apiVersion")), str(d.get("kind"))) in KINDS:
                    objs.append(plain(d))
        else:
            return None
    for pt in k.patches:
        if pt is upto:
            break
        objs = [apply_patch(pt, o, str(o.get("apiVersion")), str(o.get("kind"))) for o in objs]
    return objs


def find_base(repo: Repo, pt: Patch, api: str, kind: str, name: Any) -> dict | None:
    """The object `pt` patches, as the kustomization's resources and earlier patches leave it."""
    try:
        objs = build(repo, pt.kpath, pt)
    except PatchError:
        return None
    for o in objs or []:
        if (str(o.get("apiVersion")), str(o.get("kind"))) == (api, kind) and \
                str((o.get("metadata") or {}).get("name")) == str(name):
            return o
    return None


def parse_error(repo: Repo, pt: Patch) -> None:
    repo.findings.append(Finding("MIG-KUS-004", "error", pt.file or pt.kpath, pt.line if not pt.file else 1,
                                 "kustomize patch does not parse as YAML/JSON", "fix the patch; it is left untouched"))


def dumps_json(v: Any, like: str) -> str:
    """JSON text in the indentation of an existing JSON text."""
    indent = None
    for ln in like.splitlines()[1:]:
        if ln.strip():
            lead = ln[: len(ln) - len(ln.lstrip())]
            indent = "\t" if lead.startswith("\t") else len(lead) or None
            break
    return json.dumps(v, indent=indent) + ("\n" if like.endswith("\n") else "")


# ----------------------------------------------------------------------------------------------
# spans inside YAML/JSON text (ruamel keeps line/column of every key and value)
# ----------------------------------------------------------------------------------------------
def line_offsets(text: str) -> list[int]:
    offs, pos = [], 0
    for ln in text.splitlines(keepends=True):
        offs.append(pos)
        pos += len(ln)
    offs.append(pos)
    return offs


def scalar_span(text: str, pos: int) -> tuple[int, int]:
    """[start, end) of the scalar token starting at pos (quoted or plain, block or flow context)."""
    q = text[pos:pos + 1]
    if q in ("'", '"'):
        i = pos + 1
        while i < len(text):
            c = text[i]
            if q == '"' and c == "\\":
                i += 2
                continue
            if c == q:
                if q == "'" and text[i + 1:i + 2] == "'":
                    i += 2
                    continue
                return pos, i + 1
            i += 1
        return pos, len(text)
    i = pos
    while i < len(text) and text[i] not in "\n\r,]}":
        if text[i] == "#" and text[i - 1] in " \t":
            break
        i += 1
    return pos, pos + len(text[pos:i].rstrip())


def quoted_like(old: str, value: Any) -> str:
    """A scalar in the quoting of the token it replaces."""
    if isinstance(value, bool) or value is None or isinstance(value, (int, float)):
        return json.dumps(value)
    s = str(value)
    if old.startswith('"'):
        return json.dumps(s)
    if old.startswith("'"):
        return "'" + s.replace("'", "''") + "'"
    return yamlsrc.format_scalar(s)


def value_pos(text: str, node: Any, key: Any) -> int | None:
    try:
        ln, col = node.lc.value(key) if isinstance(node, dict) else node.lc.item(key)
    except (AttributeError, KeyError, IndexError, TypeError):
        return None
    return line_offsets(text)[ln] + col


# -- who applies a file: an Argo CD Application, a kustomization build, or kubectl on the file itself --------------

def _documents(repo: Repo, group: str, kind: str) -> list:
    """(file, document) of every YAML document of a kind in an API group (`argoproj.io/...`), read once per run (a
    second pass over the patched files carries them when no changed file mentions the group: plan.second_pass)."""
    cache = repo.__dict__.setdefault("_kind_docs", {})
    found = cache.get((group, kind))
    if found is None:
        found = cache[(group, kind)] = list(_read_documents(repo, group, kind))
    return found


def _read_documents(repo: Repo, group: str, kind: str):
    from ..sources.anchored import AtLineStart
    from ..sources.crd import DOCUMENT as CRD
    from .documents import _parse_yaml_docs
    only = AtLineStart(rf"kind:\s*['\"]?{re.escape(kind)}['\"]?\s*$", lead=None)  # other documents are never parsed
    for p in repo.containing_both("kind", group, YAML):       # (a file without `kind` has no such document)
        sf = repo.files[p]
        if not only.search(sf.text):
            continue
        for doc in yamlsrc.split_documents(sf.text):
            if not only.search(doc.text) or CRD.search(doc.text):
                continue    # (a CustomResourceDefinition names its kind in its schema: Flux's gotk-components)
            try:            # values only: the fast loader; a template (or anything it refuses) the masking parse
                objs = [yamlsrc.values(doc.text)] if "{{" not in doc.text and "{%" not in doc.text else None
            except yamlsrc.YamlParseError:
                objs = None
            if objs is None:
                objs = [o for d, _m, o in _parse_yaml_docs(repo, p, sf.text, 0, 0, p, only=only) if d.text == doc.text]
            for obj in objs:
                if isinstance(obj, dict) and obj.get("kind") == kind and \
                        str(obj.get("apiVersion", "")).startswith(group + "/"):
                    yield p, obj


def argo_paths(repo: Repo) -> dict[str, tuple[str, bool, str]]:
    """Directories of this repository that Argo CD Applications deploy (a git source's `path:`):
    dir -> (Application name, directory.recurse, the Application's file). Templated paths (ApplicationSet
    generators) are skipped."""
    cached = getattr(repo, "_argo_paths", None)
    if cached is not None:
        return cached
    from .argocd import ARGO_KINDS
    out: dict[str, tuple[str, bool, str]] = {}
    for p, obj in _documents(repo, "argoproj.io", "Application"):
        spec = obj
        for k in ARGO_KINDS["Application"]:
            spec = spec.get(k) if isinstance(spec, dict) else None
        if not isinstance(spec, dict):
            continue
        sources = [spec["source"]] if isinstance(spec.get("source"), dict) else []
        sources += [s for s in spec.get("sources") or [] if isinstance(s, dict)]
        name = str((obj.get("metadata") or {}).get("name", ""))
        for src in sources:
            path = src.get("path")
            if not isinstance(path, str) or "{{" in path or src.get("chart"):
                continue
            d = posixpath.normpath(path.strip("/")) if path.strip("/") not in ("", ".") else ""
            if d == "" or repo.with_prefix(d + "/"):          # (found by bisection, not a pass over every file)
                recurse = bool(((src.get("directory") or {}).get("recurse")) if isinstance(src.get("directory"), dict) else False)
                out.setdefault(d, (name, recurse, p))
    repo._argo_paths = out
    return out


def _includes(repo: Repo, k: Kustomization, _seen: frozenset = frozenset()) -> set[str]:
    """Every file and kustomization directory a kustomization's build reads (resources, bases, folders)."""
    out: set[str] = set()
    for r in k.resources:
        sub = kustomization_in(repo, r)
        if sub is not None and r not in _seen:
            out.add(r)
            inner = at(repo, sub)
            if inner is not None:
                out |= _includes(repo, inner, _seen | {r})
        elif r in repo.files:
            out.add(r)
    for pt in k.patches:
        if pt.file:
            out.add(pt.file)
    return out


def built_by(repo: Repo, d: str) -> set[str] | None:
    """Every file and kustomization directory the kustomization of directory d builds; None when d holds none."""
    k = kustomization_in(repo, d)
    kz = at(repo, k) if k is not None else None
    return _includes(repo, kz) if kz is not None else None


def leaf_kustomizations(repo: Repo, path: str) -> list[str]:
    """The directories of the kustomizations that build `path` (a file, or a kustomization directory) and that no
    other kustomization includes: what `kubectl apply -k` or a GitOps tool is pointed at."""
    ks = scan(repo)
    inc = repo._kustomize_includes
    if inc is None:              # once per run: every file's question is answered from the same map
        inc = repo._kustomize_includes = {k.dir: _includes(repo, k) for k in ks}
    holders = [k.dir for k in ks if path in inc[k.dir] or k.path == path or k.dir == path]
    memo = repo.__dict__.get("_kustomizations_included")
    if memo is None or memo[0] is not inc:      # the kustomization folders another one builds, once per map
        memo = repo.__dict__["_kustomizations_included"] = (inc, {d for k in ks for d in inc[k.dir] if d in inc})
    included = memo[1]
    return sorted(d for d in holders if d not in included)


def deployers(repo: Repo, path: str) -> list[tuple[str, str]]:
    """How a file reaches the cluster: ("argocd", Application), ("kustomize", directory) or ("yaml", file)."""
    apps = argo_paths(repo)

    def app_of(d: str) -> str | None:
        if d in apps:
            return apps[d][0]
        chart = next((a for a in apps if (a == "" or d.startswith(a + "/"))
                      and posixpath.join(a, "Chart.yaml") in repo.files), None)
        if chart is not None:           # a Helm chart the Application renders: every file of it is synced with it
            return apps[chart][0]
        return next((n for a, (n, rec, _f) in apps.items() if rec and (a == "" or d.startswith(a + "/"))), None)
    out: list[tuple[str, str]] = []
    leaves = leaf_kustomizations(repo, path)
    if not leaves and kustomization_in(repo, posixpath.dirname(path)) is not None:
        # a file this plan creates is listed in its folder's kustomization by the same plan
        leaves = leaf_kustomizations(repo, posixpath.dirname(path))
    for d in leaves or [None]:
        where = d if d is not None else posixpath.dirname(path)
        app = app_of(where)
        item = ("argocd", app) if app else ("kustomize", d) if d is not None else ("yaml", path)
        if item not in out:
            out.append(item)
    return out


def flux_paths(repo: Repo) -> dict[str, tuple[str, str]]:
    """Directories of this repository that Flux Kustomizations apply (`spec.path`, with every folder below it when
    no kustomization.yaml says otherwise): dir -> (Kustomization name, its file)."""
    cached = getattr(repo, "_flux_paths", None)
    if cached is not None:
        return cached
    out: dict[str, tuple[str, str]] = {}
    every: dict[str, set[str]] = {}
    for p, obj in _documents(repo, "kustomize.toolkit.fluxcd.io", "Kustomization"):
        path = (obj.get("spec") or {}).get("path")
        if not isinstance(path, str) or "${" in path:
            continue
        rel = path.strip()
        rel = (rel[2:] if rel.startswith("./") else rel).strip("/")
        d = posixpath.normpath(rel) if rel not in ("", ".") else ""
        while d == ".." or d.startswith("../"):      # Flux joins the path inside its source: `..` stops at its root
            d = d[3:] if d != ".." else ""
        out.setdefault(d, (str((obj.get("metadata") or {}).get("name", "")), p))
        every.setdefault(d, set()).add(posixpath.dirname(p) or ".")
    repo._flux_paths = out
    repo._flux_appliers = every
    return out


def flux_appliers(repo: Repo) -> dict[str, set[str]]:
    """Path a Flux Kustomization applies -> the folders whose files hold the Kustomizations that apply it (a
    cluster's folder, `clusters/prod`, holds the Kustomizations of that one cluster)."""
    flux_paths(repo)
    return repo._flux_appliers


def left_out(repo: Repo, path: str) -> tuple[str, str] | None:
    """(Flux Kustomization, its path) when the file lies below the paths of Flux Kustomizations only and none of
    them applies it: the kustomization.yaml the path (or a folder on the way down, when the path has none - Flux
    applies every manifest below it then) holds does not build it, as a folder left out or commented out of its
    `resources`. None when something applies it, or when no Flux Kustomization's path holds it."""
    d = posixpath.dirname(path)
    under = [(f, v) for f, v in flux_paths(repo).items() if f == "" or d == f or d.startswith(f + "/")]
    if not under or any(how == "argocd" for how, _ in deployers(repo, path)):
        return None                                 # an Argo CD Application syncs it
    for f, _ in under:
        x, k = f, kustomization_in(repo, f)
        while k is None and x != d:                 # Flux's own build of the path: down to the first kustomization
            x = posixpath.join(x, d[len(x):].lstrip("/").split("/")[0]) if x else d.split("/")[0]
            k = kustomization_in(repo, x)
        if k is None:
            return None
        kz = at(repo, k)
        if kz is None or path in _includes(repo, kz) or k == path:
            return None
    return under[0][1][0], under[0][0]


def commented_out(repo: Repo, path: str) -> tuple[str, int] | None:
    """(kustomization, line) where the folder holding `path` (or a folder above it) is commented out of the
    `resources` of the kustomization one folder up (`# - cluster-autoscaler`) and that kustomization does not build
    it otherwise: the owners switched it off there. None when it is built, or no such comment says so."""
    d = posixpath.dirname(path)
    if any(how == "argocd" for how, _ in deployers(repo, path)):
        return None                                 # an Argo CD Application syncs it
    here = d
    while d:
        parent, name = posixpath.dirname(d), posixpath.basename(d)
        if any((f == d or f.startswith(d + "/")) and (here == f or here.startswith(f + "/")) for f in flux_paths(repo)):
            return None                             # a Flux Kustomization applies the folder itself
        k = kustomization_in(repo, parent)
        if k is not None:
            kz = at(repo, k)
            if kz is not None and d in _includes(repo, kz):
                return None                 # built: whatever else is commented out does not matter
            pat = re.compile(r"^[ \t]*#[ \t]*-[ \t]*(?:\./)?" + re.escape(name) + r"/?[ \t]*$", re.M)
            m = pat.search(repo.text(k))
            if m is not None:
                return k, repo.text(k).count("\n", 0, m.start()) + 1
        d = parent
    return None


def unused_example(repo: Repo, path: str) -> str | None:
    """The examples / test folder (knowledge/resolve.yaml `example_folders`) a file lies in when nothing outside that
    folder applies it: no Argo CD Application syncs it, no Flux Kustomization's path holds it, no kustomization
    outside the folder builds it. A module's example is no cluster's configuration (issue 56)."""
    from .. import knowledge
    names = set(knowledge.load("resolve")["example_folders"])
    parts = path.split("/")[:-1]
    at = next((i for i, x in enumerate(parts) if x in names), None)
    if at is None:
        return None
    folder = "/".join(parts[:at + 1])
    if any(how == "argocd" for how, _ in deployers(repo, path)):
        return None
    d = posixpath.dirname(path)
    if any(f == "" or d == f or d.startswith(f + "/") for f in flux_paths(repo)):
        return None
    if any(not (k == folder or k.startswith(folder + "/")) for k in leaf_kustomizations(repo, path)):
        return None
    return folder


def app_files(repo: Repo) -> dict[str, str]:
    """Argo CD Application name -> the file that defines it (for Applications with a repository `path:`)."""
    return {name: f for name, _rec, f in argo_paths(repo).values()}
