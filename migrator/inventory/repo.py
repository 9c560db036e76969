"""`Repo`: the discovered files of a repository, their parsed HCL cached, and the findings made while reading them.
"""
from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Iterator


from ..discover import Discovery, SourceFile, discover
from ..model import Finding
from ..sources import hcl as hclsrc
from ..sources.anchored import AtLineStart, word_start
from ..sources import jsonvars

# Terraform's variable files in JSON: read as .tfvars are (sources/jsonvars.py)
JSON_TFVARS = ".tfvars.json"
TFVARS = (".tfvars", JSON_TFVARS)
YAML = (".yaml", ".yml")


_PATH_VARS = re.compile(r"\$\{path\.(module|root|cwd)\}")


# a relative module source as written (`source = "../eks"`): the directory it names, and its closing quote (none: the
# string goes on past the line's end, or holds a quote escaped). The word starts the pattern (a literal start is
# searched for at C speed; a leading `\b` made the engine try every character): `word_start` checks the boundary.
_RELATIVE_SOURCE = re.compile(r'source\s*=\s*"(\.\.?/[^"\n]*)(")?')


_CRD_KIND = "kind: CustomResourceDefinition"
_HEADER = re.compile(r"(?:#[^\n]*(?:\n\s*|$))*")
_LEADING_SPACE = re.compile(r"\s*")


def _only_foreign_crds(text: str) -> bool:
    """Repo.inert: a YAML text of CustomResourceDefinition documents only, naming neither Karpenter nor an autoscaler
    (decided with C-speed substring searches: a regular expression over tens of megabytes costs more than it saves)."""
    if _CRD_KIND not in text:
        return False
    kinds, at = 0, (0 if text.startswith("kind:") else text.find("\nkind:"))
    while at >= 0:
        start = at if at == 0 and text.startswith("kind:") else at + 1
        end = start + len(_CRD_KIND)
        if not text.startswith(_CRD_KIND, start) or (end < len(text) and text[end] not in "\r\n \t#"):
            return False
        kinds += 1
        at = text.find("\nkind:", end)
    first, last = _LEADING_SPACE.match(text).end(), len(text)      # the text without its outer blanks (no copy)
    while last > first and text[last - 1].isspace():
        last -= 1
    at = _HEADER.match(text, first, last).end()     # a header of comments before the first `---` is no document
    docs = text.count("\n---") + (0 if text.startswith("---", at, last) else 1) - \
        (1 if last - 4 >= first and text.startswith("\n---", last - 4) else 0)
    return kinds >= max(docs, 1) and "arpenter" not in text and "utoscaler" not in text


def _dir_of(path: str) -> str:
    """The folder of a repository path, "" for the top folder."""
    return path.rsplit("/", 1)[0] if "/" in path else ""


_HEADERS: dict[tuple[str, str | None], AtLineStart] = {}


def _header(type_: str, label0: str | None) -> AtLineStart:
    """A line that can open a block of this type (and first label, quoted or bare). HCL puts a block's header at the
    start of its line (after blanks); only a `/* */` comment can stand before it, so a text with no `/*` and no such
    line holds no such block and is not parsed for it."""
    got = _HEADERS.get((type_, label0))
    if got is None:
        label = (rf'(?:\s*"{re.escape(label0)}"|\s+{re.escape(label0)}(?=[\s{{"]))' if label0 is not None else
                 r'(?=[\s{"])')
        got = _HEADERS[(type_, label0)] = AtLineStart(rf"{re.escape(type_)}{label}", lead=" \t")
    return got


class Repo:
    def __init__(self, root: Path, discovery: Discovery | None = None, exclude: list[str] | None = None):
        self.discovery = discovery or discover(root, exclude=exclude)
        self.root = self.discovery.root
        self._hcl: dict[str, hclsrc.HclFile | None] = {}
        self.yaml_docs: dict[tuple, list] = {}        # (path, offset, text) -> parsed documents
        # parsed documents of a file the plan changed, by their text (no offset): a second pass reads a changed
        # file's unchanged heredocs again at shifted offsets
        self.yaml_carried: dict = {}
        self.findings: list[Finding] = []
        self.template_paths: set[str] = set()
        self.patch_paths: set[str] = set()            # kustomize strategic-merge patch files (kustomize.scan)
        self._kustomizations = None
        self._kustomize_includes = None                # kustomize.leaf_kustomizations, once per run
        self._policies = None                          # policies.scan_policies, once per run
        self._containing: dict[tuple, list[str]] = {}  # containing(): the files whose text holds a needle
        self._based_on: tuple["Repo", frozenset[str]] | None = None     # a second pass: (first pass, changed files)
        self._tf_by_dir: dict[str, list[str]] | None = None
        self._tfvars: list[str] | None = None
        self._callers: dict[str, list] | None = None     # callers(): module blocks by the directory they call, as asked
        for s in self.discovery.skipped:
            self.findings.append(Finding("MIG-SRC-003", "info", s.path, 0, f"skipped: {s.reason}"))

    def without(self, paths: set[str]) -> "Repo":
        """The repository as one environment's root reads it: every file but `paths` (the other environments' tfvars
        of its root module). Parsed files and the evaluator's answers are shared; its indexes and findings are its own."""
        from .. import evaluate
        view = Repo(self.root, Discovery(self.root, {p: f for p, f in self.files.items() if p not in paths}, []))
        view._hcl, view.yaml_docs, view.yaml_carried = self._hcl, self.yaml_docs, self.yaml_carried
        for key, empty in (("_tfparse", {}), ("_tfparse_clock", {"spent": 0.0, "late": []})):
            self.__dict__.setdefault(key, empty)
        evaluate.share(self, view)
        return view

    @property
    def files(self) -> dict[str, SourceFile]:
        return self.discovery.files

    def text(self, path: str) -> str:
        return self.files[path].text

    def hcl(self, path: str) -> hclsrc.HclFile | None:
        if path not in self._hcl:
            try:
                self._hcl[path] = (jsonvars.parse if path.endswith(JSON_TFVARS) else hclsrc.parse)(self.files[path].text)
            except hclsrc.HclParseError as e:
                self._hcl[path] = None
                self.findings.append(Finding("MIG-SRC-001", "error", path, e.line, str(e),
                                             "fix the syntax error; migrator leaves this file untouched"))
        return self._hcl[path]

    def named(self, *names: str) -> list[str]:
        """The files whose base name is one of `names`, in discovery order, indexed once per run (the files never
        change after discovery)."""
        index = self._path_index("_by_name", lambda q: q.rsplit("/", 1)[-1])
        if len(names) == 1:
            return index.get(names[0], [])
        found = {q for n in names for q in index.get(n, [])}
        return sorted(found, key=self._order().__getitem__)

    def ending(self, suffixes: tuple[str, ...]) -> list[str]:
        """The files whose path ends in one of `suffixes`, in discovery order, listed once per run."""
        lists = self.__dict__.setdefault("_ending", {})
        found = lists.get(suffixes)
        if found is None:
            found = lists[suffixes] = [p for p in self.files if p.endswith(suffixes)]
        return found

    def _path_index(self, name: str, key_of) -> dict[str, list[str]]:
        """An index of the files' paths by `key_of(path)`, lists in discovery order, built once per run; a second
        pass derives it from the first pass's (the files the plan added appended, the ones it deleted left out)."""
        index = self.__dict__.get(name)
        if index is not None:
            return index
        prior = self._based_on[0].__dict__.get(name) if self._based_on is not None else None
        if prior is None:
            index = {}
            for q in self.files:
                index.setdefault(key_of(q), []).append(q)
        else:
            gone, added = self._path_delta()
            index = dict(prior) if not gone else {k: [q for q in v if q not in gone] for k, v in prior.items()}
            for q in added:                     # after every file of the first pass, as the second pass lists them
                k = key_of(q)
                index[k] = [*index.get(k, []), q]
        self.__dict__[name] = index
        return index

    def _path_delta(self) -> tuple[set[str], list[str]]:
        """(paths of the first pass gone from this one, paths this one added in its order): a second pass only."""
        got = self.__dict__.get("_delta")
        if got is None:
            first = self._based_on[0].files
            got = self.__dict__["_delta"] = ({q for q in first if q not in self.files},
                                             [q for q in self.files if q not in first])
        return got

    def with_prefix(self, prefix: str) -> list[str]:
        """The files (sorted) whose path starts with `prefix`, found by bisection in the sorted paths (once per run)."""
        import bisect
        paths = self.__dict__.get("_sorted_paths")
        if paths is None:
            paths = self.__dict__["_sorted_paths"] = sorted(self.files)
        i = bisect.bisect_left(paths, prefix)
        out = []
        while i < len(paths) and paths[i].startswith(prefix):
            out.append(paths[i])
            i += 1
        return out

    def in_dir(self, d: str) -> list[str]:
        """The files directly in folder `d` ("" or "." for the root), in discovery order, indexed once per run."""
        index = self._path_index("_by_dir", _dir_of)
        return index.get("" if d == "." else d, [])

    def dirs(self) -> list[str]:
        """Every folder that holds a file ("" for the top folder), once each (from the index of `in_dir`)."""
        return list(self._path_index("_by_dir", _dir_of))

    def tf_in_dir(self, d: str) -> list[str]:
        """The .tf files of one directory (a Terraform module), indexed once per run."""
        if self._tf_by_dir is None:
            self._tf_by_dir = {}
            for p in self.tf_files():
                if p.endswith(hclsrc.TF_CODE):
                    self._tf_by_dir.setdefault(posixpath.dirname(p), []).append(p)
        return self._tf_by_dir.get(d, [])

    def tfvars_files(self) -> list[str]:
        if self._tfvars is None:
            self._tfvars = [p for p in self.tf_files() if p.endswith(TFVARS)]
        return self._tfvars

    def tf_containing(self, needle: str) -> list[str]:
        """.tf files whose text contains `needle` (one pass over the files per needle and run)."""
        return self.containing(needle, hclsrc.TF_CODE)

    def tfvars_containing(self, needle: str) -> list[str]:
        """tfvars files whose text contains `needle` (one pass over them per needle and run)."""
        return self.containing(needle, TFVARS)

    def tf_files(self, interesting_only: bool = False) -> Iterator[str]:
        every = self.__dict__.get("_tf_list")
        if every is None:           # the files never change after discovery: listed once per run
            every = self.__dict__["_tf_list"] = [p for p in self.files if p.endswith((*hclsrc.TF_CODE, *TFVARS))]
        return iter(every) if not interesting_only else (p for p in every if self.files[p].interesting)

    def yaml_containing(self, needle: str) -> list[str]:
        """YAML files whose text contains `needle` (one pass over the files per needle and run)."""
        return self.containing(needle, YAML)

    def containing(self, needle: str, suffixes: tuple[str, ...] | None = None) -> list[str]:
        """The files (ending in one of `suffixes`; None: any) whose text contains `needle`, in discovery order: one
        pass over the files per needle and run. A plan's second pass (`based_on`) tests only the files the plan
        changed and takes the others' answers from the first pass."""
        key = (needle, suffixes)
        found = self._containing.get(key)
        if found is not None:
            return found
        base = self._based_on
        prior = base[0]._containing.get(key) if base is not None else None
        narrower = next(((among, got) for (part, among), got in self._containing.items() if part == needle
                         and among is not None and (suffixes is None or set(among) < set(suffixes))), None)
        if prior is None and narrower is not None:     # answered over some of these files: the others searched
            among, got = narrower
            files = self.files
            found = got + [p for p in self._searched(suffixes) if not p.endswith(among) and needle in files[p].text]
            found.sort(key=self._order().__getitem__)
        elif prior is None:
            among = self._holding_part(needle, suffixes)
            if among is self._searched(suffixes):       # every file: each distinct text searched once
                texts, paths = self._distinct(suffixes)
                hits = [ps for t, ps in zip(texts, paths) if needle in t]
                found = [p for ps in hits for p in ps]
                if any(len(ps) > 1 for ps in hits):
                    found.sort(key=self._order().__getitem__)
            else:
                files = self.files
                found = [p for p in among if needle in files[p].text]
        else:                                   # the first pass's answer, the changed files searched again
            changed, files = base[1], self.files
            found = [p for p in prior if p not in changed and p in files] + \
                [p for p in changed if p in files and (suffixes is None or p.endswith(suffixes))
                 and needle in files[p].text]
            found.sort(key=self._order().__getitem__)
        self._containing[key] = found
        return found

    def containing_both(self, first: str, needle: str, suffixes: tuple[str, ...] | None = None) -> list[str]:
        """The files (ending in one of `suffixes`; None: any) whose text holds both `first` and `needle`, in discovery
        order: `needle` is looked for only in the files that hold `first`, a word the files a reader wants all hold
        and many others do not (`kind` for a Kubernetes document: an Ansible playbook or a values file has none).
        Answered once per run; a second pass tests only the changed files."""
        key = (first, needle, suffixes)
        both = self.__dict__.setdefault("_containing_both", {})
        found = both.get(key)
        if found is not None:
            return found
        base = self._based_on
        prior = base[0].__dict__.get("_containing_both", {}).get(key) if base is not None else None
        files = self.files
        if prior is not None:                   # the first pass's answer, the changed files searched again
            changed = base[1]
            found = [p for p in prior if p not in changed and p in files] + \
                [p for p in changed if p in files and (suffixes is None or p.endswith(suffixes))
                 and first in files[p].text and needle in files[p].text]
            found.sort(key=self._order().__getitem__)
        elif (needle, suffixes) in self._containing:    # already searched in every file: those that hold `first`
            held = set(self.containing(first, suffixes))
            found = [p for p in self._containing[(needle, suffixes)] if p in held]
        else:                                   # among the files holding `first` (or a part of `needle` and it)
            among = min((got for (f, part, sfx), got in both.items() if f == first and sfx == suffixes
                         and part in needle), key=len, default=None)
            if among is not None:
                found = [p for p in among if needle in files[p].text]
            else:                               # each distinct text that holds `first` searched once
                hits = [ps for t, ps in self._distinct_holding(first, suffixes) if needle in t]
                found = [p for ps in hits for p in ps]
                if len(hits) > 1:
                    found.sort(key=self._order().__getitem__)
        both[key] = found
        return found

    def _distinct_holding(self, first: str, suffixes: tuple[str, ...] | None) -> list[tuple[str, list[str]]]:
        """The distinct texts of the files holding `first` (the search for it, shared with every other asker) and the
        paths holding each, texts by their first path; once per run."""
        lists = self.__dict__.setdefault("_distinct_holding_lists", {})
        got = lists.get((first, suffixes))
        if got is None:
            copies, groups = self._copies(), {}
            for p in self.containing(first, suffixes):
                groups.setdefault(copies[p], []).append(p)
            files = self.files
            got = lists[(first, suffixes)] = [(files[q].text, ps) for q, ps in groups.items()]
        return got

    def _order(self) -> dict[str, int]:
        order = self.__dict__.get("_positions")
        if order is None:
            order = self.__dict__["_positions"] = {p: i for i, p in enumerate(self.files)}
        return order

    def _holding_part(self, needle: str, suffixes: tuple[str, ...] | None):
        """The files a search for `needle` must read: those of an answered search for a part of it (over the same
        files or more) when there is one, the fewest; else every file ending in `suffixes`. A file without
        `karpenter` holds no `karpenter.sh/`."""
        best = None
        for (part, among), got in self._containing.items():
            if part in needle and (among is None or suffixes is not None and set(suffixes) <= set(among)) \
                    and (best is None or len(got) < len(best)):
                best = got
        if best is None:
            return self._searched(suffixes)
        return best if suffixes is None else [p for p in best if p.endswith(suffixes)]

    def _searched(self, suffixes: tuple[str, ...] | None) -> list[str]:
        """The files a text search over `suffixes` (None: every file) reads: all of them but the inert ones, listed
        once per run."""
        lists = self.__dict__.setdefault("_searched_lists", {})
        got = lists.get(suffixes)
        if got is None:
            if suffixes is None:
                copies, inert = self._copies(), self._inert_copies()
                got = [p for p in self.files if not (p.endswith(YAML) and copies[p] in inert)]
            else:                           # of the files of every search, those ending in `suffixes`
                got = [p for p in self._searched(None) if p.endswith(suffixes)]
            lists[suffixes] = got
        return got

    def _distinct(self, suffixes: tuple[str, ...] | None) -> tuple[list[str], list[list[str]]]:
        """The distinct texts of the files `_searched(suffixes)` lists, and the paths holding each (in discovery
        order, the texts by their first path), once per run. Repositories copy files: an environment's manifests,
        a vendored chart twice, a lesson's folder into the next; a third to two fifths of the bytes of the largest
        real repositories are such copies, and a search reads each text once."""
        lists = self.__dict__.setdefault("_distinct_lists", {})
        got = lists.get(suffixes)
        if got is None:
            first, groups = self._copies(), {}
            for p in self._searched(suffixes):
                groups.setdefault(first[p], []).append(p)
            files = self.files
            got = lists[suffixes] = ([files[q].text for q in groups], list(groups.values()))
        return got

    def _copies(self) -> dict[str, str]:
        """Every file's first copy: the first file in discovery order with the same text (itself when none comes
        before it). Texts are compared once per run; every list of distinct texts is then grouped by path."""
        first = self.__dict__.get("_first_copies")
        if first is None:
            by_text: dict[str, str] = {}
            first = self.__dict__["_first_copies"] = {p: by_text.setdefault(f.text, p) for p, f in self.files.items()}
        return first

    def inert(self, path: str) -> bool:
        """Is a YAML file only CustomResourceDefinitions that name neither Karpenter nor an autoscaler (a vendored CRD
        bundle: cert-manager's, Argo CD's, Prometheus')? No reader looks for anything in one: text searches pass it
        over, and they were most of the time of a plan over repositories that vendor tens of megabytes of CRDs.
        Decided on the text alone: every top-level `kind:` line reads `kind: CustomResourceDefinition`, there is one
        per document, and neither word is anywhere in it; anything else (a quoted kind, a template, a document
        without a kind) is not inert."""
        return self._copies()[path] in self._inert_copies()

    def _inert_copies(self) -> set[str]:
        """The first copies of the inert YAML texts: each distinct text decided once per run."""
        got = self.__dict__.get("_inert")
        if got is None:
            files, copies = self.files, self._copies()
            got = self.__dict__["_inert"] = {q for q in {copies[p] for p in files if p.endswith(YAML)}
                                             if _only_foreign_crds(files[q].text)}
        return got

    def based_on(self, first: "Repo", changed: set[str]) -> None:
        """This repository is `first` with the files `changed` (written, added or deleted) by a plan: text searches
        already made over `first` are answered again from the changed files only."""
        self._based_on = (first, frozenset(changed))

    def blocks(self, type_: str, label0: str | None = None, mentioning: str | None = None
               ) -> Iterator[tuple[str, hclsrc.Block]]:
        """Top-level blocks of a type (and first label) in all .tf files; text pre-filter before parsing: the files
        that contain `mentioning` (else the label, else the type), and the type and label words too (a file that holds
        `provider "aws"` names both: the many files naming `aws` alone are never parsed for it). Answered once per
        question and run: what was found is replayed to the next asker, and the search goes on only as far as some
        asker reads (files are parsed as lazily as a fresh search would; per-root rules ask the same question once per
        root)."""
        memo = self.__dict__.setdefault("_blocks_memo", {})
        got = memo.get((type_, label0, mentioning))
        if got is None:
            got = memo[(type_, label0, mentioning)] = [[], self._blocks(type_, label0, mentioning)]
        found = got[0]
        i = 0
        while True:
            if i < len(found):
                yield found[i]
                i += 1
                continue
            if got[1] is None:
                return
            nxt = next(got[1], None)
            if nxt is None:
                got[1] = None
                return
            found.append(nxt)

    def _blocks(self, type_: str, label0: str | None, mentioning: str | None) -> Iterator[tuple[str, hclsrc.Block]]:
        words = [w for w in (type_, label0) if w and w != mentioning]
        header = _header(type_, label0)
        for p in self.tf_containing(mentioning or label0 or type_):
            text = self.files[p].text
            if not all(w in text for w in words) or ("/*" not in text and not header.search(text)):
                continue
            f = self.hcl(p)
            if f is None:
                continue
            for b in f.blocks:
                if b.type == type_ and (label0 is None or b.labels[:1] == [label0]):
                    yield p, b

    def blocks_in(self, d: str, type_: str, label0: str | None = None) -> Iterator[tuple[str, hclsrc.Block]]:
        """Top-level blocks of a type (and first label) in the .tf files of one folder ("" or "." for the root): only
        that module's files are parsed."""
        needle = label0 or type_
        for p in self.tf_in_dir("" if d == "." else d):
            if needle not in self.files[p].text:
                continue
            f = self.hcl(p)
            for b in (f.blocks if f is not None else []):
                if b.type == type_ and (label0 is None or b.labels[:1] == [label0]):
                    yield p, b

    def resolve_file_arg(self, tf_path: str, arg: hclsrc.Expr) -> str | None:
        """Relative path of a templatefile()/file() target, if it is static enough to know. A plain relative path is
        Terraform's working directory's, the root module's folder: read beside the file, as before, where it is there;
        else in the folder of the root modules that apply the file's module, where they all name the same file
        (`values = [file("helm-values/karpenter.yaml")]` in a module the root calls)."""
        if arg.kind != "string":
            return None
        raw = "".join(t for _, t in arg.parts)
        target = self.resolve_file_text(tf_path, raw)
        if target is None or target in self.files or "${" in raw or raw.startswith("/"):
            return target
        from ..evaluate import roots_of
        found = {posixpath.normpath(posixpath.join("" if r == "." else r, raw)) for r in roots_of(self, tf_path)}
        return found.pop() if len(found) == 1 and next(iter(found)) in self.files else target

    @staticmethod
    def resolve_file_text(tf_path: str, raw: str) -> str | None:
        """Relative path of a file()/templatefile() target written `raw` (the string's text, `${path.module}/x`) in
        `tf_path`, if it is static enough to know."""
        raw = _PATH_VARS.sub(lambda m: "." if m.group(1) == "module" else "<root>", raw)
        if "${" in raw or "<root>" in raw:
            return None
        base = posixpath.dirname(tf_path)
        return posixpath.normpath(posixpath.join(base, raw))

    def callers(self, module_dir: str) -> list[tuple[str, hclsrc.Block]]:
        """`module` blocks whose relative `source` is this directory (the roots and modules that call it), in discovery
        order. Only the files whose text names this directory as a relative source are parsed for it."""
        key = module_dir or "."
        if self._callers is None:
            self._callers = {}
        asked = self._callers
        got = asked.get(key)
        if got is None:
            by_target, unsure = self._relative_sources()
            got = asked[key] = [(p, b) for p in self._in_order(set(by_target.get(key, ())) | unsure)
                                for b, target in self._module_sources(p) if target == key]
        return list(got)

    def called_by(self, d: str) -> set[str]:
        """The directories the `module` blocks of directory d call by relative source."""
        d = d or "."
        by_target, unsure = self._relative_sources()
        return {target for p in {q for qs in by_target.values() for q in qs} | unsure
                if (posixpath.dirname(p) or ".") == d for _b, target in self._module_sources(p)}

    def _relative_sources(self) -> tuple[dict[str, list[str]], set[str]]:
        """The .tf files that name a relative module source, by the directory each source names as written, and those
        whose sources cannot be read from their text (an escape, an interpolation or a directive in the string): once
        per run, from the text alone (a library of thousands of .tf files stays fast; each file is parsed when a
        question names a directory it may call)."""
        got = self.__dict__.get("_source_dirs")
        if got is None:
            by_target: dict[str, list[str]] = {}
            unsure: set[str] = set()
            for p in self.tf_containing("module"):
                text = self.files[p].text       # (a relative source holds `"./` or `"../`: searched for first)
                if '"./' not in text and '"../' not in text:
                    continue
                base = posixpath.dirname(p)
                for m in _RELATIVE_SOURCE.finditer(text):
                    if not word_start(text, m.start()):
                        continue
                    raw = m.group(1)
                    if m.group(2) is None or any(c in raw for c in "\\$%"):
                        unsure.add(p)
                    else:
                        by_target.setdefault(posixpath.normpath(posixpath.join(base, raw)), []).append(p)
            got = self.__dict__["_source_dirs"] = (by_target, unsure)
        return got

    def _in_order(self, paths: set[str]) -> list[str]:
        return sorted(paths, key=self._order().__getitem__)

    def _module_sources(self, p: str) -> list[tuple[hclsrc.Block, str]]:
        """The `module` blocks of a file with a relative literal source, and the directory each calls."""
        f = self.hcl(p)
        out = []
        for b in (f.blocks if f is not None else []):
            if b.type != "module":
                continue
            src = b.attr("source")
            lit = src.literal() if src is not None else None
            if isinstance(lit, str) and lit.startswith(("./", "../")):
                out.append((b, posixpath.normpath(posixpath.join(posixpath.dirname(p), lit))))
        return out

