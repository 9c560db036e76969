"""The typed model of what a repository contains, each item knowing where it lives.

`Repo` wraps discovery and caches parsed HCL. `scan_manifests` finds Karpenter objects in raw YAML
files, `kubectl_manifest.yaml_body` heredocs, `templatefile()`/`file()` targets and
`kubernetes_manifest.manifest` HCL objects. `scan_helm_values` finds the Karpenter chart values the
hop needs (defaultInstanceProfile, ...): Terraform `helm_release` values/set and Flux HelmReleases.
"""
from __future__ import annotations

import copy
import posixpath
import re
from types import SimpleNamespace
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from ruamel.yaml.comments import CommentedMap, CommentedSeq

from . import knowledge
from .discover import Discovery, SourceFile, discover
from .model import Finding
from .sources import hcl as hclsrc
from .sources import yaml as yamlsrc
from .sources.templates import Masked, TemplateError, mask

KARPENTER_KINDS = {(k["apiVersion"], k["kind"]): k["era"] for k in knowledge.load("hops")["kinds"]}
_KIND_RE = re.compile(r"\b(" + "|".join(sorted({k for _, k in KARPENTER_KINDS} - {"Machine", "NodeClaim"})) + r")\b")
_OLD_OBJECT = re.compile(r"^apiVersion:[ \t]*[\"']?(?P<api>karpenter\.(?:sh|k8s\.aws)/v1(?:alpha5|alpha1|beta1))[\"']?[ \t]*\r?\n"
                         r"(?:(?!---)[^\n]*\n)*?kind:[ \t]*[\"']?(?P<kind>\w+)", re.M)
_PATH_VARS = re.compile(r"\$\{path\.(module|root|cwd)\}")


@dataclass
class Manifest:
    kind: str
    api_version: str
    era: str
    obj: Any                    # parsed object; template syntax masked as placeholder tokens
    masked: Masked
    container: str              # yaml | kubectl_manifest | template | kubernetes_manifest
    path: str                   # file holding the object's text
    line: int                   # 1-based line of the object's first line in `path`
    doc_start: int = 0          # span of the document in `path` (yaml / template / heredoc body)
    doc_end: int = 0
    line_map: dict[int, tuple] = field(default_factory=dict)    # 0-based doc line -> object path
    style: yamlsrc.Style = field(default_factory=yamlsrc.Style)
    tf_path: str | None = None  # .tf file with the resource block (HCL containers)
    block: hclsrc.Block | None = None
    call: hclsrc.Expr | None = None     # templatefile()/file() call (template container)
    expr: hclsrc.Expr | None = None     # kubernetes_manifest object expression
    tf_text: str = ""                   # text of tf_path (kubernetes_manifest line numbers)

    @property
    def name(self) -> Any:
        meta = self.obj.get("metadata") if isinstance(self.obj, dict) else None
        return meta.get("name") if isinstance(meta, dict) else None

    def obj_at(self, path: tuple) -> Any:
        node = self.obj
        for k in path:
            node = node[k]
        return node

    def checked_obj(self, obj: Any = None) -> Any:
        """The object (or a rewrite of it, same paths) as validation should see it: a key whose value a Helm
        action writes (`taints:` then `{{- toYaml . | nindent 8 }}`) holds an unknown value, not null."""
        obj = self.obj if obj is None else obj
        if not self.masked.helm or not self.masked.directives:
            return obj
        from .sources.templates import UNKNOWN, layout
        owners = [o for o in layout(self.masked, self.line_map).content.values() if o and self.value_at(o) is None]
        if not owners:
            return obj
        out = copy.deepcopy(obj)
        for o in owners:
            parent = out
            for k in o[:-1]:
                parent = parent[k] if isinstance(parent, (dict, list)) else None
            if isinstance(parent, dict) and parent.get(o[-1]) is None:
                parent[o[-1]] = UNKNOWN
        return out

    def value_at(self, path: tuple) -> Any:
        """The value at a path, None where the path does not exist."""
        return value_at(self.obj, path)

    def line_of(self, path: tuple) -> int:
        """Best line for an object path: its own line, else its nearest ancestor's."""
        if self.container == "kubernetes_manifest" and self.expr is not None:
            return _hcl_line_of(self, path)
        best_line, best_len = None, -1
        for ln, p in self.line_map.items():
            if path[: len(p)] == p and len(p) > best_len:
                best_line, best_len = ln, len(p)
        return self.line + (best_line or 0)


def _hcl_line_of(m: Manifest, path: tuple) -> int:
    """Line of the deepest object entry along `path` in a kubernetes_manifest HCL object."""
    expr, offset = m.expr, m.expr.start
    for key in path:
        if expr is None or expr.kind != "object":
            break
        entry = next((e for e in expr.entries if e.key == key), None)
        if entry is None:
            break
        expr, offset = entry.value, entry.start
    return hclsrc.line_of(m.tf_text, offset)


@dataclass
class HelmValue:
    """One Karpenter chart value found in the repository."""
    key: str                    # dotted chart key, e.g. settings.aws.defaultInstanceProfile
    value: Any                  # literal or placeholder token / HCL expression text
    expression: str | None      # Terraform expression when the value is computed (no ${})
    path: str
    line: int
    keys: tuple = ()            # the key as a path (tag keys may contain dots)


class Repo:
    def __init__(self, root: Path, discovery: Discovery | None = None, exclude: list[str] | None = None):
        self.discovery = discovery or discover(root, exclude=exclude)
        self.root = self.discovery.root
        self._hcl: dict[str, hclsrc.HclFile | None] = {}
        self.yaml_docs: dict[tuple, list] = {}        # (path, offset, text) -> parsed documents
        self.findings: list[Finding] = []
        self.template_paths: set[str] = set()
        self.patch_paths: set[str] = set()            # kustomize strategic-merge patch files (kustomize.scan)
        self._kustomizations = None
        self._kustomize_includes = None                # kustomize.leaf_kustomizations, once per run
        self._policies = None                          # policies.scan_policies, once per run
        self._with_text: dict[str, list[str]] = {}     # tf_containing(): .tf files containing a needle
        self._tf_by_dir: dict[str, list[str]] | None = None
        self._tfvars: list[str] | None = None
        for s in self.discovery.skipped:
            self.findings.append(Finding("MIG-SRC-003", "info", s.path, 0, f"skipped: {s.reason}"))

    @property
    def files(self) -> dict[str, SourceFile]:
        return self.discovery.files

    def text(self, path: str) -> str:
        return self.files[path].text

    def hcl(self, path: str) -> hclsrc.HclFile | None:
        if path not in self._hcl:
            try:
                self._hcl[path] = hclsrc.parse(self.files[path].text)
            except hclsrc.HclParseError as e:
                self._hcl[path] = None
                self.findings.append(Finding("MIG-SRC-001", "error", path, e.line, str(e),
                                             "fix the syntax error; migrator leaves this file untouched"))
        return self._hcl[path]

    def tf_in_dir(self, d: str) -> list[str]:
        """The .tf files of one directory (a Terraform module), indexed once per run."""
        if self._tf_by_dir is None:
            self._tf_by_dir = {}
            for p in self.tf_files():
                if p.endswith(".tf"):
                    self._tf_by_dir.setdefault(posixpath.dirname(p), []).append(p)
        return self._tf_by_dir.get(d, [])

    def tfvars_files(self) -> list[str]:
        if self._tfvars is None:
            self._tfvars = [p for p in self.tf_files() if p.endswith(".tfvars")]
        return self._tfvars

    def tf_containing(self, needle: str) -> list[str]:
        """.tf files whose text contains `needle` (one pass over the files per needle and run)."""
        found = self._with_text.get(needle)
        if found is None:
            found = self._with_text[needle] = [p for p in self.tf_files()
                                               if p.endswith(".tf") and needle in self.files[p].text]
        return found

    def tf_files(self, interesting_only: bool = False) -> Iterator[str]:
        for p, f in self.files.items():
            if p.endswith((".tf", ".tfvars")) and (f.interesting or not interesting_only):
                yield p

    def blocks(self, type_: str, label0: str | None = None) -> Iterator[tuple[str, hclsrc.Block]]:
        """Top-level blocks of a type (and first label) in all .tf files; text pre-filter before parsing."""
        for p in self.tf_containing(label0 or type_):
            f = self.hcl(p)
            if f is None:
                continue
            for b in f.blocks:
                if b.type == type_ and (label0 is None or b.labels[:1] == [label0]):
                    yield p, b

    def resolve_file_arg(self, tf_path: str, arg: hclsrc.Expr) -> str | None:
        """Relative path of a templatefile()/file() target, if it is static enough to know."""
        if arg.kind != "string":
            return None
        raw = "".join(t for _, t in arg.parts)
        raw = _PATH_VARS.sub(lambda m: "." if m.group(1) == "module" else "<root>", raw)
        if "${" in raw or "<root>" in raw:
            return None
        base = posixpath.dirname(tf_path)
        return posixpath.normpath(posixpath.join(base, raw))


# ----------------------------------------------------------------------------------------------
def _era(obj: Any) -> tuple[str, str, str] | None:
    if not isinstance(obj, dict):
        return None
    key = (str(obj.get("apiVersion")), str(obj.get("kind")))
    era = KARPENTER_KINDS.get(key)
    return (key[0], key[1], era) if era else None


def value_at(obj: Any, path: tuple) -> Any:
    """The value at a path of a parsed document (keys and list indexes), None where the path does not exist."""
    for k in path:
        try:
            obj = obj[k]
        except (KeyError, IndexError, TypeError):
            return None
    return obj


def _parse_yaml_docs(repo: Repo, path: str, text: str, base_offset: int, base_line: int,
                     report_path: str, only: re.Pattern | None = None) -> Iterator[tuple[yamlsrc.DocSpan, Masked, Any]]:
    """Mask and parse each document of a YAML text (once per run: cached on the repository); parse errors
    become findings. `only`: documents whose bytes do not match it are never parsed (a 500 KB CRD bundle costs
    no more than reading it)."""
    full = (path, base_offset, text)
    if full in repo.yaml_docs:          # every document already parsed for another scan
        yield from (d for d in repo.yaml_docs[full] if only is None or only.search(d[0].text))
        return
    key = full if only is None else (path, base_offset, text, only.pattern)
    if key not in repo.yaml_docs:
        repo.yaml_docs[key] = list(_parse_docs(repo, text, base_line, report_path, only))
    yield from repo.yaml_docs[key]


def _parse_docs(repo: Repo, text: str, base_line: int, report_path: str, only: re.Pattern | None = None):
    for doc in yamlsrc.split_documents(text):
        if only is not None and not only.search(doc.text):
            continue
        helm = helm_chart_text(doc.text)
        try:
            m = mask(doc.text, helm=helm)
        except TemplateError as e:
            repo.findings.append(Finding("MIG-SRC-002", "error", report_path, base_line + doc.first_line + 1,
                                         f"template syntax: {e}", "fix the template; the file is left untouched"))
            continue
        try:
            obj = yamlsrc.load(m.text)
        except yamlsrc.YamlParseError as e:
            if helm:
                repo.findings.append(Finding(
                    "MIG-SRC-004", "warning", report_path, base_line + doc.first_line + e.line,
                    f"Helm template: with its {{{{ }}}} actions masked, this document is still not YAML ({e}); "
                    "migrator leaves it untouched",
                    "convert the Karpenter objects of this chart template by hand (see the objects migrator writes "
                    "elsewhere for the shape), or move the action that breaks the YAML onto a line of its own"))
            elif _KIND_RE.search(doc.text):
                repo.findings.append(_unparsed(m, report_path, base_line + doc.first_line + e.line, str(e),
                                               "fix the YAML (or the template directives that break it); "
                                               "the file is left untouched"))
            continue
        yield doc, m, obj


def _unparsed(m: Masked | None, path: str, line: int, error: str, manual: str) -> Finding:
    """YAML that does not parse: an error when it is plain YAML (the file is broken); a warning when it is a template
    that only stops being YAML once its interpolations are masked (a line that is only `${indent(4, x)}` renders a
    block): the template is fine, migrator cannot read it and leaves it untouched."""
    if m is not None and m.tokens:
        return Finding("MIG-SRC-013", "warning", path, line,
                       f"{error}: a template that is not YAML with its interpolations masked (an interpolation that "
                       "renders a whole block); migrator cannot read it and leaves it untouched",
                       "check it by hand against the hop's changes (migrator plan lists them for the files it reads)")
    return Finding("MIG-SRC-002", "error", path, line, error, manual)


_KARPENTER_API = re.compile(r"karpenter\.(?:sh|k8s\.aws)/v1")


def helm_chart_text(text: str) -> bool:
    """A document of a Helm chart template holding a Karpenter object: its `{{ }}` actions are masked."""
    return "{{" in text and _KARPENTER_API.search(text) is not None


def _manifest(obj, m: Masked, doc: yamlsrc.DocSpan, *, container: str, path: str, base_offset: int,
              base_line: int, style_text: str, **extra) -> Manifest | None:
    era = _era(obj)
    if era is None:
        return None
    return Manifest(kind=era[1], api_version=era[0], era=era[2], obj=obj, masked=m, container=container, path=path,
                    line=base_line + doc.first_line + 1, doc_start=base_offset + doc.start,
                    doc_end=base_offset + doc.end, line_map=yamlsrc.line_paths(obj),
                    style=yamlsrc.detect_style(style_text), **extra)


def hcl_to_obj(expr: hclsrc.Expr, m: Masked) -> Any:
    """An HCL object expression as a Python structure; computed parts become placeholder tokens."""
    if expr.kind == "object":
        out = CommentedMap()
        for e in expr.entries:
            key = e.key
            if not e.key_quoted and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", key):
                key = _token(m, key)
            out[key] = hcl_to_obj(e.value, m)
        return out
    if expr.kind == "tuple":
        return CommentedSeq([hcl_to_obj(i, m) for i in expr.items])
    if expr.kind == "string" and expr.value is not None:
        return expr.value
    if expr.kind in ("number", "bool"):
        return expr.value
    if expr.kind == "null":
        return None
    return _token(m, expr.source)


def _token(m: Masked, source: str) -> str:
    tok = f"__MIG_{len(m.tokens)}__"
    m.tokens[tok] = source
    return tok


STRUCTURAL = set(knowledge.load("hops")["structural_keys"])
MAPS = set(knowledge.load("hops")["structural_maps"])


def computed_structure(m: Manifest) -> tuple | None:
    """Path of a map or list the object builds with a Terraform expression (`spec = each.value.spec`), if any:
    such an object cannot be rewritten statically."""
    def walk(node, path):
        if isinstance(node, dict):
            for k, v in node.items():
                if k in STRUCTURAL and (m.masked.is_token(v) or (k in MAPS and v is not None and not isinstance(v, dict))):
                    return path + (k,)
                found = walk(v, path + (k,))
                if found:
                    return found
        elif isinstance(node, list):
            for i, v in enumerate(node):
                found = walk(v, path + (i,))
                if found:
                    return found
        return None
    return walk(m.obj, ())


def scan_manifests(repo: Repo) -> list[Manifest]:
    found = _scan_manifests(repo)
    out = []
    for m in found:
        where = computed_structure(m)
        if where is None:
            out.append(m)
            continue
        key = ".".join(map(str, where))
        value = m.obj_at(where)
        if m.masked.is_token(value):
            repo.findings.append(Finding(
                "MIG-SRC-008", "warning", m.tf_path or m.path, m.line_of(where),
                f"{m.kind} {m.masked.unmask(str(m.name))}: {key} is built by the expression "
                f"{m.masked.unmask(value)}; migrator cannot rewrite it statically and leaves this object alone",
                f"migrate the values behind that expression by hand (see docs/rules.md for the {m.kind} mapping)"))
        else:
            repo.findings.append(Finding(
                "MIG-SRC-009", "error", m.tf_path or m.path, m.line_of(where),
                f"{m.kind} {m.masked.unmask(str(m.name))}: {key} is {type(value).__name__} {value!r}, not a map; "
                "the object is not valid for any Karpenter version and is left alone",
                f"fix {key} in this object, then run migrator again"))
    return out


def _scan_manifests(repo: Repo) -> list[Manifest]:
    out: list[Manifest] = []
    # 1. Terraform containers (this also tells which YAML files are templates)
    for p in list(repo.tf_files(interesting_only=True)):
        if not p.endswith(".tf"):
            continue
        f = repo.hcl(p)
        if f is None:
            continue
        text = f.text
        for b in f.blocks:
            if b.type != "resource" or len(b.labels) < 2:
                continue
            if b.labels[0] == "kubectl_manifest":
                out.extend(_scan_kubectl(repo, p, text, b))
            elif b.labels[0] == "kubernetes_manifest":
                out.extend(_scan_kubernetes(repo, p, text, b))
    # 2. raw YAML files (an object in a kustomize patch file is a partial one: rules/v1beta1|v1/kustomize.py)
    from .kustomize import patch_files
    patches = patch_files(repo)
    for p, sf in repo.files.items():
        if p in repo.template_paths or not sf.interesting:
            continue
        if not p.endswith((".yaml", ".yml")) and not (p.endswith((".tpl", ".tmpl")) and helm_chart_text(sf.text)):
            continue
        for doc, m, obj in _parse_yaml_docs(repo, p, sf.text, 0, 0, p, only=_KIND_RE):
            man = _manifest(obj, m, doc, container="yaml", path=p, base_offset=0, base_line=0, style_text=sf.text)
            if man and p in patches:
                continue
            if man:
                out.append(man)
    # 3. template files no Terraform call renders: never skipped silently
    for p, sf in repo.files.items():
        if not p.endswith((".tftpl", ".tmpl", ".tpl")) or p in repo.template_paths or not sf.interesting:
            continue
        if not p.endswith(".tftpl") and helm_chart_text(sf.text):
            continue            # a Helm chart template: read with the YAML files above
        for m in _OLD_OBJECT.finditer(sf.text):
            repo.findings.append(Finding(
                "MIG-SRC-010", "warning", p, sf.text.count("\n", 0, m.start()) + 1,
                f"{m.group('kind')} ({m.group('api')}) in the template {p} is not converted: no kubectl_manifest or "
                "kubernetes_manifest of the repository renders it with templatefile(), so migrator cannot tell its "
                "variables",
                "render it from a kubectl_manifest with templatefile() (migrator then converts it around its ${} and "
                "%{} placeholders), or convert it by hand (see the objects migrator writes elsewhere for the shape)"))
    return out


def _scan_kubectl(repo: Repo, p: str, text: str, b: hclsrc.Block) -> Iterator[Manifest]:
    body = b.attr("yaml_body")
    if body is None:
        return
    if body.kind == "heredoc":
        h = body.heredoc
        raw = text[h.body_start:h.body_end]
        dedented = _dedent(raw, h.indent if h.trim else 0)
        base_line = hclsrc.line_of(text, h.body_start) - 1
        for doc, m, obj in _parse_yaml_docs(repo, p, dedented, h.body_start, base_line, p):
            man = _manifest(obj, m, doc, container="kubectl_manifest", path=p, base_offset=h.body_start,
                            base_line=base_line, style_text=dedented, tf_path=p, block=b)
            if man:
                man.doc_start, man.doc_end = h.body_start, h.body_end
                yield man
        return
    if body.kind == "call" and body.name in ("templatefile", "file") and body.items:
        yield from _scan_template(repo, p, b, body, "kubectl_manifest")
        return
    if _KIND_RE.search(body.source) or "karpenter" in " ".join(b.labels).lower():
        repo.findings.append(Finding(
            "MIG-SRC-005", "warning", p, hclsrc.line_of(text, body.start),
            f"{b.address}.yaml_body is built by an expression migrator cannot read statically",
            "if it renders a Provisioner or AWSNodeTemplate, convert it by hand"))


def _scan_template(repo: Repo, p: str, b: hclsrc.Block, call: hclsrc.Expr, container: str) -> Iterator[Manifest]:
    target = repo.resolve_file_arg(p, call.items[0])
    text = repo.text(p)
    if target is None:
        repo.findings.append(Finding("MIG-SRC-006", "warning", p, hclsrc.line_of(text, call.start),
                                     f"{b.address}: the {call.name}() path is computed; migrator cannot find the file",
                                     "convert the Karpenter objects in that template by hand"))
        return
    if target not in repo.files:
        repo.findings.append(Finding("MIG-SRC-006", "warning", p, hclsrc.line_of(text, call.start),
                                     f"{b.address}: {call.name}() target {target} is not in the repository",
                                     "convert the Karpenter objects in that template by hand"))
        return
    repo.template_paths.add(target)
    ttext = repo.text(target)
    for doc, m, obj in _parse_yaml_docs(repo, target, ttext, 0, 0, target):
        man = _manifest(obj, m, doc, container="template", path=target, base_offset=0, base_line=0,
                        style_text=ttext, tf_path=p, block=b, call=call)
        if man:
            yield man


def _scan_kubernetes(repo: Repo, p: str, text: str, b: hclsrc.Block) -> Iterator[Manifest]:
    expr = b.attr("manifest")
    if expr is None:
        return
    if expr.kind == "object":
        m = Masked(text="")
        obj = hcl_to_obj(expr, m)
        era = _era(obj)
        if era:
            man = Manifest(kind=era[1], api_version=era[0], era=era[2], obj=obj, masked=m,
                           container="kubernetes_manifest", path=p, line=hclsrc.line_of(text, expr.start),
                           tf_path=p, block=b, expr=expr, tf_text=text)
            yield man
        return
    if expr.kind == "call" and expr.name == "yamldecode" and expr.items:
        inner = expr.items[0]
        if inner.kind == "call" and inner.name in ("templatefile", "file") and inner.items:
            yield from _scan_template(repo, p, b, inner, "kubernetes_manifest")
            return
    if _KIND_RE.search(expr.source):
        repo.findings.append(Finding(
            "MIG-SRC-007", "warning", p, hclsrc.line_of(text, expr.start),
            f"{b.address}.manifest is built with {expr.name or 'an expression'}(); migrator converts only literal "
            "objects and yamldecode(templatefile/file) targets",
            "convert this manifest by hand (see the rule reference in docs/ for the field mapping)"))


def _dedent(text: str, n: int) -> str:
    if n <= 0:
        return text
    out = []
    for ln in text.splitlines(keepends=True):
        strip = 0
        while strip < n and strip < len(ln) and ln[strip] in " \t":
            strip += 1
        out.append(ln[strip:])
    return "".join(out)


def _strip_interp(source: str) -> str | None:
    """`${module.x.y}` -> `module.x.y`; None when the text is not one whole interpolation."""
    s = source.strip()
    if s.startswith("${") and s.endswith("}") and s.count("${") == 1:
        return s[2:-1].strip()
    return None


# ----------------------------------------------------------------------------------------------
# Chart installations and their values, in every shape (the Helm capability)
# ----------------------------------------------------------------------------------------------
@dataclass
class SetEntry:
    key: str                    # dotted chart key with `\.` escapes resolved
    raw: str                    # the name as written
    name: hclsrc.Expr
    value: hclsrc.Expr | None
    start: int                  # span of the whole set block / list element (for removal)
    end: int
    line: int = 0


@dataclass
class ValuesSource:
    kind: str           # heredoc | yamlencode | file | flux | argocd | set | set_list | dynamic_set | values_from |
                        # argo_params | value_files | other
    path: str
    line: int
    tree: Any = None            # keytree.Tree for heredoc / yamlencode / file / flux / argocd
    sets: list[SetEntry] = field(default_factory=list)
    masked: Masked | None = None
    params: list = field(default_factory=list)      # argo_params: ArgoParam entries


@dataclass
class ChartInstall:
    kind: str                   # terraform | flux | argocd | kustomize
    chart: str                  # karpenter | karpenter-crd
    path: str
    line: int
    block: hclsrc.Block | None = None           # terraform
    version: hclsrc.Expr | None = None          # terraform version expression
    obj: Any = None                             # flux HelmRelease / Argo CD Application(Set) document
    doc: yamlsrc.DocSpan | None = None
    values: list[ValuesSource] = field(default_factory=list)
    source: tuple = ()                          # argocd / kustomize: path of the chart's entry in the document
    evaluated_version: str | None = None        # terraform: the version the evaluator gives for an expression
    generic: bool = False                       # terraform: one helm_release installing a list of add-ons

    @property
    def address(self) -> str:
        if self.block is not None:
            return self.block.address
        if self.kind == "kustomize":
            item = self.source_map
            return f"helmCharts/{item.get('releaseName') or item.get('name')}"
        kind = (self.obj or {}).get("kind", "HelmRelease")
        return f"{kind}/{(self.obj or {}).get('metadata', {}).get('name')}"

    @property
    def source_map(self) -> Any:
        node = self.obj
        for k in self.source:
            node = node[k]
        return node


def _chart_name(chart: Any) -> str | None:
    if not isinstance(chart, str):
        return None
    name = chart.rstrip("/").split("/")[-1]
    return name if name in ("karpenter", "karpenter-crd") else None


def split_set_name(raw: str) -> str:
    """`a.b\\.c` -> 'a.b.c' as a dotted key whose parts are a / b.c (escapes resolved, dots kept)."""
    parts, cur, i = [], "", 0
    while i < len(raw):
        if raw[i] == "\\" and i + 1 < len(raw) and raw[i + 1] == ".":
            cur += "\x00"
            i += 2
            continue
        if raw[i] == ".":
            parts.append(cur)
            cur = ""
        else:
            cur += raw[i]
        i += 1
    parts.append(cur)
    return ".".join(p.replace("\x00", "\\.") for p in parts)


_FLUX_KIND = re.compile(r"""^kind:[ \t]*["']?HelmRelease\b""", re.M)


def scan_charts(repo: Repo) -> list[ChartInstall]:
    from .sources import keytree
    out: list[ChartInstall] = []
    for p, b in repo.blocks("resource", "helm_release"):
        for name, evaluated in _terraform_charts(repo, p, b):
            out.append(_terraform_install(repo, p, b, name, evaluated))
    for p, sf in repo.files.items():
        # decided on bytes before any parse: a Karpenter HelmRelease names the chart and is a top-level kind (a Flux
        # gotk-components.yaml mentions HelmRelease only inside its CRDs)
        if not p.endswith((".yaml", ".yml")) or "karpenter" not in sf.text or not _FLUX_KIND.search(sf.text):
            continue
        for doc, m, obj in _parse_yaml_docs(repo, p, sf.text, 0, 0, p):
            if not isinstance(obj, dict) or obj.get("kind") != "HelmRelease":
                continue
            chart = (((obj.get("spec") or {}).get("chart") or {}).get("spec") or {}).get("chart")
            name = _chart_name(chart)
            if name is None:
                continue
            ci = ChartInstall("flux", name, p, doc.first_line + 1, obj=obj, doc=doc)
            if (obj.get("spec") or {}).get("valuesFrom"):
                kl = obj["spec"].lc.key("valuesFrom")[0]
                ci.values.append(ValuesSource("values_from", p, doc.first_line + kl + 1))
            if isinstance((obj.get("spec") or {}).get("values"), CommentedMap):
                tree = keytree.yaml_tree(sf.text, p, doc.start, doc.end, obj, under=("spec", "values"))
                ci.values.append(ValuesSource("flux", p, ci.line, tree=tree, masked=m))
            out.append(ci)
    out.extend(_scan_argocd(repo))
    out.extend(_scan_kustomize_charts(repo))
    out.extend(_scan_blueprints(repo))
    return out


def _terraform_install(repo: Repo, p: str, b: hclsrc.Block, name: str, evaluated: str | None) -> ChartInstall:
    """A helm_release of a Karpenter chart: its version and its values in every shape it writes them."""
    from .sources import keytree
    text = repo.text(p)
    ci = ChartInstall("terraform", name, p, hclsrc.line_of(text, b.start), block=b, version=b.attr("version"),
                      evaluated_version=evaluated, generic=b.attr("for_each") is not None and
                      not isinstance(b.attr("chart").literal(), str))
    values = b.attr("values")
    if values is not None and values.kind != "tuple":      # values = each.value.values, var.values, concat(...)
        ci.values.append(ValuesSource("other", p, hclsrc.line_of(text, values.start)))
    for item in (values.items if values is not None and values.kind == "tuple" else []):
        line = hclsrc.line_of(text, item.start)
        if item.kind == "heredoc":
            h = item.heredoc
            body = _dedent(text[h.body_start:h.body_end], h.indent if h.trim else 0)
            m = None
            try:
                m = mask(body)
                obj = yamlsrc.load(m.text)
            except (TemplateError, yamlsrc.YamlParseError) as e:
                repo.findings.append(_unparsed(m, p, line, f"values heredoc: {e}",
                                               "fix the values; they are left untouched"))
                ci.values.append(ValuesSource("other", p, line))
                continue
            if isinstance(obj, CommentedMap):
                tree = keytree.yaml_tree(text, p, h.body_start, h.body_end, obj, strip=h.indent if h.trim else 0)
                ci.values.append(ValuesSource("heredoc", p, line, tree=tree, masked=m))
        elif item.kind == "call" and item.name == "yamlencode" and item.items and item.items[0].kind == "object":
            ci.values.append(ValuesSource("yamlencode", p, line, tree=keytree.hcl_tree(text, p, item.items[0])))
        elif item.kind == "call" and item.name in ("file", "templatefile") and item.items:
            target = repo.resolve_file_arg(p, item.items[0])
            ci.values.extend(_values_file(repo, p, line, target) if target is not None
                             else [ValuesSource("other", p, line)])
        else:
            ci.values.append(ValuesSource("other", p, line))
    sets = ValuesSource("set", p, ci.line)
    for s in b.sub("set") + b.sub("set_sensitive"):
        name, value = s.attr("name"), s.attr("value")
        if name is not None and isinstance(name.literal(), str):
            raw = name.literal()
            sets.sets.append(SetEntry(split_set_name(raw), raw, name, value, line_start_of(text, s.start),
                                      line_end_of(text, s.end), hclsrc.line_of(text, s.start)))
    for attr in ("set", "set_sensitive"):
        lst = b.attr(attr)
        if lst is not None and lst.kind == "tuple":
            for item in lst.items:
                if item.kind != "object":
                    continue
                ent = {e.key: e.value for e in item.entries}
                if "name" in ent and isinstance(ent["name"].literal(), str):
                    raw = ent["name"].literal()
                    sets.sets.append(SetEntry(split_set_name(raw), raw, ent["name"], ent.get("value"),
                                              *_item_span(text, item.start, item.end),
                                              hclsrc.line_of(text, item.start)))
        elif lst is not None:
            ci.values.append(ValuesSource("set_list", p, hclsrc.line_of(text, lst.start)))
    if sets.sets:
        ci.values.append(sets)
    for d in b.sub("dynamic"):
        if d.labels[:1] in (["set"], ["set_sensitive"]):
            ci.values.append(_dynamic_set(repo, p, text, d))
    return ci


def _terraform_charts(repo: Repo, p: str, b: hclsrc.Block) -> list[tuple[str, str | None]]:
    """[(karpenter | karpenter-crd, the version the evaluator gives when the block's own is an expression)] of a
    helm_release: none for another chart, or one switched off (`count = 0`, an empty `for_each`) in every root module
    that evaluates it. A chart name written as an expression (a variable, the items of an add-ons list) is
    evaluated (migrator/evaluate.py)."""
    from . import evaluate
    chart = b.attr("chart")
    if chart is None:
        return []
    lit = chart.literal()
    line = hclsrc.line_of(repo.text(p), b.start)
    if isinstance(lit, str):
        name = _chart_name(lit)
        if name is None:
            return []
        switched = b.attr("count") is not None or b.attr("for_each") is not None
        if switched and evaluate.instances(repo, p, b, line) == []:      # the evaluator only where a switch is
            _switched_off(repo, p, line, b.address, "count = 0 or an empty for_each in every root that uses it")
            return []
        return [(name, None)]
    out: dict[str, str | None] = {}
    for i in evaluate.instances(repo, p, b, line) or []:
        name = _chart_name(i.get("chart")) if isinstance(i.get("chart"), str) else None
        if name is not None and name not in out:
            v = i.get("version")
            out[name] = str(v) if isinstance(v, (str, int, float)) else None
    return sorted(out.items())


_EACH = re.compile(r"^\s*each\.value\.([A-Za-z_][\w-]*)\s*$")
_COLLECTION = re.compile(r"(?:\bin\s+|^\s*)((?:var|local)\.[A-Za-z_][\w-]*)\s*(?::|$)")


def item_entry(repo: Repo, ci: "ChartInstall", attr: str) -> tuple[str, hclsrc.Expr] | None:
    """(file, expression) of one attribute of the add-ons list item a generic `for_each` helm_release installs the
    chart from (`chart = each.value.chart_name`, `version = each.value.chart_version` over a list or map written
    inline, in a local or in a variable default): where that item's value is written."""
    b = ci.block
    fe, chart, want = b.attr("for_each"), b.attr("chart"), b.attr(attr)
    if fe is None or chart is None or want is None:
        return None
    ck, wk = _EACH.match(chart.source), _EACH.match(want.source)
    ref = _COLLECTION.search(fe.source) if fe.kind not in ("tuple", "object") else None
    if ck is None or wk is None or (ref is None and fe.kind not in ("tuple", "object")):
        return None
    where = fe if ref is None else SimpleNamespace(kind="ref", source=ref.group(1))   # the collection it names
    path, coll = _static_collection(repo, ci.path, repo.text(ci.path), where)
    if coll is None:
        return None
    items = coll.items if coll.kind == "tuple" else [e.value for e in coll.entries]
    for item in items:
        if item.kind != "object":
            continue
        ent = {e.key: e.value for e in item.entries}
        name = ent.get(ck.group(1))
        if name is not None and _chart_name(name.literal()) == ci.chart and wk.group(1) in ent:
            return path, ent[wk.group(1)]
    return None


def _switched_off(repo: Repo, p: str, line: int, address: str, why: str) -> None:
    repo.findings.append(Finding("MIG-SRC-011", "info", p, line,
                                 f"{address} installs Karpenter, but it is switched off ({why}): not planned",
                                 "switch it on first if this cluster should run Karpenter"))


def _scan_blueprints(repo: Repo) -> Iterator[ChartInstall]:
    """eks-blueprints-addons with enable_karpenter: the karpenter chart, its version at karpenter.chart_version
    (None: the add-on's default, knowledge/karpenter_module.yaml blueprints_addons)."""
    facts = knowledge.load("karpenter_module")["blueprints_addons"]
    for p, b in repo.blocks("module"):
        src = b.attr("source").literal() if b.attr("source") is not None else None
        enabled = b.attr(facts["enable"])
        if not isinstance(src, str) or not re.search(facts["source"], src) or enabled is None \
                or enabled.literal() is False:
            continue
        line = hclsrc.line_of(repo.text(p), b.start)
        from . import evaluate
        plain = enabled.literal() is True and b.attr(facts["no_chart"]) is None and b.attr("count") is None \
            and b.attr("for_each") is None
        got = None if plain else evaluate.instances(repo, p, b, line)     # the evaluator only where a switch is
        if got is not None and not any(i.get(facts["enable"]) is True for i in got):
            _switched_off(repo, p, line, b.address, f"{facts['enable']} is false" if got else "the module is not created")
            continue
        if got and all(i.get(facts["no_chart"]) is False for i in got):
            repo.findings.append(Finding(
                "MIG-SRC-012", "info", p, line,
                f"{b.address} makes Karpenter's IAM only ({facts['no_chart']} = false): the chart is installed "
                "elsewhere (GitOps), where migrator reads it if it is in this repository",
                "if the chart is installed from another repository, run migrator there"))
            continue
        cfg = b.attr(facts["input"])
        entries = {e.key: e for e in (cfg.entries if cfg is not None and cfg.kind == "object" else [])}
        version = entries[facts["chart_version_key"]].value if facts["chart_version_key"] in entries else None
        ci = ChartInstall("blueprints", "karpenter", p, hclsrc.line_of(repo.text(p), b.start), block=b,
                          version=version)
        for key in facts["value_keys"]:         # the user's own chart values: reported, not rewritten
            if key in entries:
                ci.values.append(ValuesSource("other", p, hclsrc.line_of(repo.text(p), entries[key].start)))
        yield ci


KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")


def _scan_kustomize_charts(repo: Repo) -> Iterator[ChartInstall]:
    """`helmCharts:` entries of kustomizations (kustomize build --enable-helm): version, valuesInline,
    valuesFile and additionalValuesFiles (relative to the kustomization)."""
    from .sources import keytree
    for p, sf in repo.files.items():
        if posixpath.basename(p) not in KUSTOMIZATION_FILES or "helmCharts" not in sf.text:
            continue
        for doc, m, obj in _parse_yaml_docs(repo, p, sf.text, 0, 0, p):
            items = obj.get("helmCharts") if isinstance(obj, dict) else None
            if not isinstance(items, list):
                continue
            for i, item in enumerate(items):
                name = _chart_name(item.get("name")) if isinstance(item, dict) else None
                if name is None:
                    continue
                ci = ChartInstall("kustomize", name, p, doc.first_line + items.lc.item(i)[0] + 1, obj=obj, doc=doc,
                                  source=("helmCharts", i))
                if isinstance(item.get("valuesInline"), CommentedMap):
                    tree = keytree.yaml_tree(sf.text, p, doc.start, doc.end, obj, under=ci.source + ("valuesInline",))
                    ci.values.append(ValuesSource("kustomize", p, ci.line, tree=tree, masked=m))
                files = [item.get("valuesFile")] + list(item.get("additionalValuesFiles") or [])
                for rel in [f for f in files if f]:
                    ci.values.extend(_values_file(repo, p, ci.line, posixpath.normpath(
                        posixpath.join(posixpath.dirname(p), str(rel)))))
                yield ci


def _values_file(repo: Repo, p: str, line: int, target: str) -> list[ValuesSource]:
    """A chart values file of the repository as a values source (a key tree over the whole file)."""
    from .sources import keytree
    if target not in repo.files:
        return [ValuesSource("other", p, line)]
    repo.template_paths.add(target)
    vtext = repo.text(target)
    m = None
    try:
        m = mask(vtext)
        obj = yamlsrc.load(m.text)
    except (TemplateError, yamlsrc.YamlParseError) as e:
        repo.findings.append(_unparsed(m, target, getattr(e, "line", 1), f"values file: {e}",
                                       "fix the values file; it is left untouched"))
        return [ValuesSource("other", p, line)]
    if not isinstance(obj, CommentedMap):
        return []
    return [ValuesSource("file", target, 1, masked=m, tree=keytree.yaml_tree(vtext, target, 0, len(vtext), obj))]


ARGO_KINDS = {"Application": ("spec",), "ApplicationSet": ("spec", "template", "spec")}


def _scan_argocd(repo: Repo) -> Iterator[ChartInstall]:
    """Argo CD Applications / ApplicationSets installing the Karpenter charts: single `source` or `sources[]`."""
    from .sources import keytree
    for p, sf in repo.files.items():
        if not p.endswith((".yaml", ".yml")) or "karpenter" not in sf.text or "argoproj.io" not in sf.text:
            continue                # an Argo CD install bundle is all CRDs: no chart named karpenter
        for doc, m, obj in _parse_yaml_docs(repo, p, sf.text, 0, 0, p):
            if not isinstance(obj, dict) or not str(obj.get("apiVersion", "")).startswith("argoproj.io/") \
                    or obj.get("kind") not in ARGO_KINDS:
                continue
            spec_path = ARGO_KINDS[obj["kind"]]
            spec = obj
            for k in spec_path:
                spec = spec.get(k) if isinstance(spec, dict) else None
            if not isinstance(spec, dict):
                continue
            sources = [(spec_path + ("source",), spec["source"])] if isinstance(spec.get("source"), dict) else []
            if isinstance(spec.get("sources"), list):
                sources += [(spec_path + ("sources", i), s) for i, s in enumerate(spec["sources"]) if isinstance(s, dict)]
            for path, src in sources:
                name = _chart_name(src.get("chart"))
                if name is None:
                    continue
                kl = _line_of_path(obj, path)
                ci = ChartInstall("argocd", name, p, doc.first_line + kl + 1, obj=obj, doc=doc, source=path)
                helm = src.get("helm")
                if isinstance(helm, dict):
                    _argo_values(repo, p, sf.text, doc, m, obj, path + ("helm",), helm, ci, keytree)
                yield ci


def _line_of_path(obj: Any, path: tuple) -> int:
    node, line = obj, 0
    for k in path:
        try:
            line = node.lc.key(k)[0] if isinstance(node, dict) else node.lc.item(k)[0]
        except Exception:  # noqa: BLE001
            pass
        node = node[k]
    return line


def _argo_values(repo, p, text, doc, m, obj, helm_path, helm, ci, keytree) -> None:
    line = doc.first_line + _line_of_path(obj, helm_path) + 1
    if isinstance(helm.get("valuesObject"), CommentedMap):
        tree = keytree.yaml_tree(text, p, doc.start, doc.end, obj, under=helm_path + ("valuesObject",))
        ci.values.append(ValuesSource("argocd", p, line, tree=tree, masked=m))
    if isinstance(helm.get("values"), str):
        ci.values.extend(_argo_values_string(repo, p, text, doc, helm, line, keytree))
    if isinstance(helm.get("parameters"), list):
        ci.values.append(ValuesSource("argo_params", p, line, tree=None))
        ci.values[-1].params = _argo_params(text, doc, helm["parameters"])
    if helm.get("valueFiles"):
        ci.values.append(ValuesSource("value_files", p, line))


def _argo_values_string(repo, p, text, doc, helm, line, keytree) -> list[ValuesSource]:
    """`helm.values: |` (a YAML document inside a YAML string): a key tree over its own lines."""
    vl, _ = helm.lc.value("values")
    lines = doc.text.splitlines(keepends=True)
    start = doc.start + sum(len(x) for x in lines[:vl + 1])           # the line after `values: |`
    if text[doc.start + sum(len(x) for x in lines[:vl]):start].split(":", 1)[-1].strip()[:1] not in "|>":
        return [ValuesSource("other", p, line)]
    body_lines = []
    pos = start
    indent = None
    for ln in text[start:doc.end].splitlines(keepends=True):
        if ln.strip():
            ind = len(ln) - len(ln.lstrip(" "))
            if indent is None:
                indent = ind
            elif ind < indent:
                break
        body_lines.append(ln)
        pos += len(ln)
    while body_lines and not body_lines[-1].strip():
        pos -= len(body_lines.pop())
    if indent is None:
        return []
    body = "".join(ln[indent:] if ln.strip() else ln.lstrip(" ") for ln in body_lines)
    try:
        mm = mask(body)
        obj = yamlsrc.load(mm.text)
    except (TemplateError, yamlsrc.YamlParseError) as e:
        repo.findings.append(Finding("MIG-SRC-002", "error", p, line, f"helm.values: {e}",
                                     "fix the values; they are left untouched"))
        return []
    if not isinstance(obj, CommentedMap):
        return [ValuesSource("other", p, line)]
    return [ValuesSource("argocd", p, line, tree=keytree.yaml_tree(text, p, start, pos, obj, strip=indent),
                         masked=mm)]


@dataclass
class ArgoParam:
    name: str
    name_span: tuple[int, int]
    value: Any
    item_span: tuple[int, int]      # the list item's lines (for removal)
    line: int


def _argo_params(text, doc, params) -> list[ArgoParam]:
    lines = doc.text.splitlines(keepends=True)

    def off(line, col):
        return doc.start + sum(len(x) for x in lines[:line]) + col
    out = []
    for i, item in enumerate(params):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            continue
        vl, vc = item.lc.value("name")
        s = off(vl, vc)
        q = text[s]
        e = text.index(q, s + 1) + 1 if q in "\"'" else s + len(item["name"])
        il, _ = params.lc.item(i)
        start = off(il, 0)
        nxt = params.lc.item(i + 1)[0] if i + 1 < len(params) else None
        end = off(nxt, 0) if nxt is not None else line_end_of(text, off(max(ln for ln in (
            item.lc.value(k)[0] for k in item)), 0))
        out.append(ArgoParam(item["name"], (s, e), item.get("value"), (start, end), doc.first_line + vl + 1))
    return out


def _dynamic_set(repo: Repo, p: str, text: str, d: hclsrc.Block) -> ValuesSource:
    """`dynamic "set"` over a list of {name, value} objects or a map of name -> value, written inline or in a local
    or a variable default of the same module: its entries as `set` entries (renamed and removed in place, where the
    list is written); anything else stays a `dynamic_set` the rules report."""
    unread = ValuesSource("dynamic_set", p, hclsrc.line_of(text, d.start))
    fe = d.attr("for_each")
    content = next(iter(d.sub("content")), None)
    if fe is None or content is None or content.attr("name") is None:
        return unread
    it = d.attr("iterator")
    var = (it.source if it is not None else d.labels[0]).strip()
    name_src, value_src = content.attr("name").source.strip(), (content.attr("value").source.strip()
                                                               if content.attr("value") is not None else "")
    where, lst = _static_collection(repo, p, text, fe)
    if lst is None:
        return unread
    wtext = repo.text(where)
    out = ValuesSource("set", where, hclsrc.line_of(wtext, lst.start))
    if lst.kind == "tuple" and re.fullmatch(rf"{var}\.value(\.name|\[\"name\"\])", name_src) and \
            re.fullmatch(rf"{var}\.value(\.value|\[\"value\"\])", value_src):
        for item in lst.items:
            ent = {e.key: e.value for e in item.entries} if item.kind == "object" else {}
            if "name" not in ent or not isinstance(ent["name"].literal(), str):
                return unread
            raw = ent["name"].literal()
            out.sets.append(SetEntry(split_set_name(raw), raw, ent["name"], ent.get("value"),
                                     *_item_span(wtext, item.start, item.end),
                                     hclsrc.line_of(wtext, item.start)))
        return out
    if lst.kind == "object" and name_src == f"{var}.key" and value_src == f"{var}.value":
        for e in lst.entries:
            if not e.key_quoted and "." in e.key:
                return unread
            key = hclsrc.Expr("string", e.key_start, e.key_end, wtext[e.key_start:e.key_end], value=e.key)
            out.sets.append(SetEntry(split_set_name(e.key), e.key, key, e.value, *_item_span(wtext, e.start, e.end),
                                     hclsrc.line_of(wtext, e.start)))
        return out
    return unread


def _static_collection(repo: Repo, p: str, text: str, fe: hclsrc.Expr) -> tuple[str, hclsrc.Expr | None]:
    """The literal list / map a for_each names: inline, a local, or a variable default of the same module."""
    if fe.kind in ("tuple", "object"):
        return p, fe
    m = re.fullmatch(r"\s*(local|var)\.([A-Za-z_][\w-]*)\s*", fe.source)
    if not m:
        return p, None
    for tp in repo.tf_in_dir(posixpath.dirname(p)):
        f = repo.hcl(tp) if m.group(2) in repo.text(tp) else None
        for blk in f.blocks if f else []:
            if m.group(1) == "local" and blk.type == "locals" and m.group(2) in blk.attributes:
                e = blk.attributes[m.group(2)].expr
                return tp, (e if e.kind in ("tuple", "object") else None)
            if m.group(1) == "var" and blk.type == "variable" and blk.labels == [m.group(2)]:
                if any(m.group(2) in repo.text(t) for t in repo.tfvars_files()):
                    return tp, None         # set per environment: not one place to edit
                e = blk.attr("default")
                if e is None or not (e.items or e.entries):
                    return tp, None         # no default, or an empty one: the values come from the callers
                return tp, (e if e.kind in ("tuple", "object") else None)
    return p, None


def _item_span(text: str, start: int, end: int) -> tuple[int, int]:
    """What removing one element of a list or object takes: its whole lines when it has them to itself, else the
    element and the comma after it (a neighbour on the same line stays)."""
    ls, le = line_start_of(text, start), line_end_of(text, end)
    after = text[end:le].strip()
    if not text[ls:start].strip() and after in ("", ","):
        return ls, le
    m = re.match(r"\s*,[ \t]*", text[end:])
    return start, end + (m.end() if m else 0)


def line_start_of(text: str, offset: int) -> int:
    return text.rfind("\n", 0, offset) + 1


def line_end_of(text: str, offset: int) -> int:
    i = text.find("\n", offset)
    return len(text) if i < 0 else i + 1


def values_of(charts: list[ChartInstall]) -> list[HelmValue]:
    """Every leaf value of the controller chart installations, flattened (for the resolver)."""
    out: list[HelmValue] = []
    for ci in charts:
        if ci.chart != "karpenter":
            continue
        if ci.kind == "blueprints":     # the values the add-on passes itself
            for key in knowledge.load("karpenter_module")["blueprints_addons"]["sets"]:
                out.append(HelmValue(key, None, None, ci.path, ci.line, tuple(key.split("."))))
        for vs in ci.values:
            if vs.tree is not None:
                text = vs.tree.text
                for e in vs.tree.root.walk():
                    if not e.path or e.is_map:
                        continue
                    key = ".".join(e.path)
                    v = e.value
                    if isinstance(v, hclsrc.Expr):
                        lit = v.literal()
                        out.append(HelmValue(key, lit if lit is not None else "${" + v.source + "}",
                                             None if lit is not None else v.source, vs.path,
                                             hclsrc.line_of(text, e.key_start), e.path))
                    else:
                        src = vs.masked.unmask(v) if isinstance(v, str) and vs.masked else v
                        out.append(HelmValue(key, src, _strip_interp(src) if isinstance(src, str) else None,
                                             vs.path, hclsrc.line_of(text, e.key_start), e.path))
            for prm in vs.params:
                if isinstance(prm.value, (str, int, float, bool)):
                    out.append(HelmValue(prm.name, prm.value, None, vs.path, prm.line, tuple(prm.name.split("."))))
            for s in vs.sets:
                if s.value is None:
                    continue
                lit = s.value.literal()
                keys = tuple(k.replace("\x00", ".") for k in s.key.replace("\\.", "\x00").split("."))
                out.append(HelmValue(s.key.replace("\\.", "."), lit if lit is not None else "${" + s.value.source + "}",
                                     None if lit is not None else s.value.source, vs.path, s.line, keys))
    return out
