"""Karpenter objects wherever they are kept: raw YAML (and Helm chart templates), `kubectl_manifest` heredocs,
`templatefile()` / `file()` targets, `kubernetes_manifest` HCL objects. Each `Manifest` knows its exact spans.
"""
from __future__ import annotations

import copy
import posixpath
import re
from dataclasses import dataclass, field
from typing import Any, Iterator

from ruamel.yaml.comments import CommentedMap, CommentedSeq

from .. import knowledge
from ..model import Finding
from ..sources import hcl as hclsrc
from ..sources import yaml as yamlsrc
from ..sources.templates import Masked
from . import dataaddons, localfiles
from .documents import _KIND_RE, KIND_DOCUMENTS, _dedent, _era, _parse_yaml_docs, helm_chart_text, value_at
from .repo import Repo



_OLD_OBJECT = re.compile(r"^apiVersion:[ \t]*[\"']?(?P<api>karpenter\.(?:sh|k8s\.aws)/v1(?:alpha5|alpha1|beta1))[\"']?[ \t]*\r?\n"
                         r"(?:(?!---)[^\n]*\n)*?kind:[ \t]*[\"']?(?P<kind>\w+)", re.M)
@dataclass
class Manifest:
    kind: str
    api_version: str
    era: str
    obj: Any                    # parsed object; template syntax masked as placeholder tokens
    masked: Masked
    container: str              # yaml | kubectl_manifest | template | kubernetes_manifest | chart_values
    path: str                   # file holding the object's text
    line: int                   # 1-based line of the object's first line in `path`
    doc_start: int = 0          # span of the document in `path` (yaml / template / heredoc body)
    doc_end: int = 0
    line_map: dict[int, tuple] = field(default_factory=dict)    # 0-based doc line -> object path
    style: yamlsrc.Style = field(default_factory=yamlsrc.Style)
    tf_path: str | None = None  # .tf file with the resource block (HCL containers)
    block: hclsrc.Block | None = None
    call: hclsrc.Expr | None = None     # templatefile()/file() call (template container)
    expr: hclsrc.Expr | None = None     # the object as an HCL expression: kubernetes_manifest's `manifest`, the
                                        # argument of a kubectl_manifest's `yaml_body = yamlencode({...})`
    tf_text: str = ""                   # text of tf_path (line numbers in the HCL object)
    entry_key: str = ""                 # chart_values: the release's key in the module input (inventory/dataaddons.py)
    applier: tuple | None = None        # (file, block) applying the file a local_file renders it to, alone

    @property
    def hcl(self) -> bool:
        """The object is written as an HCL expression (edited through it, Terraform expressions kept as written)."""
        return self.expr is not None

    def expression_token(self, expression: str) -> str:
        """A placeholder for a Terraform expression, as this container holds one: the expression itself in an HCL
        object, `${...}` in a heredoc's YAML."""
        return _token(self.masked, expression if self.hcl else "${" + expression + "}")

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
        from ..sources.templates import UNKNOWN, layout
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
        if self.hcl:
            return _hcl_line_of(self, path)
        best_line, best_len = None, -1
        for ln, p in self.line_map.items():
            if path[: len(p)] == p and len(p) > best_len:
                best_line, best_len = ln, len(p)
        return self.line + (best_line or 0)


def _hcl_line_of(m: Manifest, path: tuple) -> int:
    """Line of the deepest object entry along `path` in an HCL object."""
    expr, offset = m.expr, m.expr.start
    for key in path:
        if expr is None or expr.kind != "object":
            break
        entry = next((e for e in expr.entries if e.key == key), None)
        if entry is None:
            break
        expr, offset = entry.value, entry.start
    return hclsrc.line_of(m.tf_text, offset)


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


def left_alone(repo: Repo) -> list[tuple[Manifest, tuple]]:
    """(object, the path of its structure an expression builds) of every Karpenter object scan_manifests leaves alone
    (MIG-SRC-008/009): a rule that needs it whole (an Auto Mode twin) knows it is there and not converted."""
    if "_left_alone" not in repo.__dict__:
        scan_manifests(repo)
    return repo.__dict__["_left_alone"]


def scan_manifests(repo: Repo) -> list[Manifest]:
    found = _scan_manifests(repo)
    out = []
    alone = repo.__dict__["_left_alone"] = []
    for m in found:
        where = computed_structure(m)
        if where is None:
            out.append(m)
            continue
        alone.append((m, where))
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


def _examples(repo: Repo, examples: dict, out: list) -> None:
    """Karpenter objects in a module's examples / test folder that nothing applies are no cluster's (issue 56): said,
    never planned, while the repository holds Karpenter elsewhere; a repository of nothing but such folders is
    planned as it is (its examples are what the user asked about)."""
    for folder in list(examples):
        if not _is_example(repo, folder):
            out.extend(examples.pop(folder))
    if not examples:
        return
    elsewhere = bool(out) or any(_INSTALL.search(sf.text) for p, sf in repo.files.items()
                                 if p.endswith(_KARPENTER_PLACES) and "karpenter" in sf.text
                                 and not any(p.startswith(f + "/") for f in examples))
    if not elsewhere:
        out.extend(m for ms in examples.values() for m in ms)
        return
    for folder, ms in sorted(examples.items()):
        kinds = ", ".join(sorted({m.kind for m in ms}))
        repo.findings.append(Finding(
            "MIG-SRC-022", "info", ms[0].path, ms[0].line,
            f"{len(ms)} Karpenter object(s) ({kinds}) in {folder}/, an examples or test folder that nothing in the "
            "repository applies (no kustomization, Argo CD Application or Flux Kustomization outside it): no cluster's "
            "configuration, not planned",
            f"if a cluster applies them by hand, run `migrator plan {folder}` to plan them on their own"))


def _is_example(repo: Repo, folder: str) -> bool:
    """An examples / test folder is no cluster's when it installs nothing itself (no Terraform, no chart install) and,
    for a folder named test or tests (an environment may be named so), when it belongs to a module or chart (Terraform
    files or a Chart.yaml in the folder above it)."""
    inside = [p for p in repo.files if p.startswith(folder + "/")]
    if any(p.endswith((".tf", ".tofu", ".hcl")) or _INSTALL.search(repo.text(p)) for p in inside):
        return False
    if posixpath.basename(folder) in ("test", "tests"):
        parent = posixpath.dirname(folder)
        return any((posixpath.dirname(p) or "") == parent and (p.endswith((".tf", ".tofu")) or
                                                               posixpath.basename(p) == "Chart.yaml")
                   for p in repo.files)
    return True


_KARPENTER_PLACES = (".tf", ".tofu", ".hcl", ".yaml", ".yml", ".json", ".tfvars")
# a Karpenter install somewhere: a chart named karpenter, or a karpenter module (not a mere mention of the API group)
_INSTALL = re.compile(r"""(?m)^\s*["']?chart["']?\s*[:=]\s*["']?[\w./:@-]*karpenter|modules/karpenter|enable_karpenter""")


# what makes a .tf file worth parsing here (besides naming the move, where a broken file is an error): a manifest
# resource, the data add-ons module, a Karpenter kind as written, an instance profile the IAM rules may need, a
# kustomization (lowercase words: as the text lowered holds them). Terraform's own `provisioner` blocks, or another
# product's node pools, are no reason to read a file (discovery's `interesting` words are case-insensitive).
_TF_WORDS = ("kubectl_manifest", "kubernetes_manifest", "aws_iam_instance_profile", "kustomization")
_TF_TEXTS = (*dataaddons.FACTS["sources"], *_KIND_RE.words)


def _worth_parsing(text: str) -> bool:
    from .terragrunt import names_the_move
    if names_the_move(text) or any(w in text for w in _TF_TEXTS):
        return True
    low = text.lower()
    return any(w in low for w in _TF_WORDS)


def _scan_manifests(repo: Repo) -> list[Manifest]:
    out: list[Manifest] = []
    # 1. Terraform containers (this also tells which YAML files are templates)
    for p in list(repo.tf_files(interesting_only=True)):
        if not p.endswith(hclsrc.TF_CODE) or not _worth_parsing(repo.files[p].text):
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
        for b in f.blocks:
            if b.type == "module" and len(b.labels) == 1 and dataaddons.is_call(b):
                out.extend(_chart_values(repo, p, text, b))
    # ... and the templates a local_file renders to a file applied by kubectl (inventory/localfiles.py)
    for target, r in localfiles.scan(repo).items():
        if not r.why_not and target not in repo.template_paths:
            for man in _scan_template(repo, r.tf, r.block, r.block.attr("content"), "local_file"):
                man.applier = r.applier
                out.append(man)
    for o in localfiles.inline(repo):
        repo.findings.append(Finding(
            "MIG-SRC-027", "warning", o.tf, o.line,
            f"{o.block.address} writes a {o.kind} ({o.api}) from {o.how} into the file it renders: migrator converts "
            "the templates a local_file renders, not an object written in the block, so it is left as it is",
            "move the object into a template rendered with templatefile() (migrator converts it and applies it in the "
            "runbook), or convert it by hand where it is written"))
    # 2. raw YAML files (an object in a kustomize patch file is a partial one: rules/v1beta1|v1/kustomize.py)
    from .kustomizations import patch_files, unused_example
    patches = patch_files(repo)
    charts = local_charts(repo)
    examples: dict[str, list[Manifest]] = {}        # an examples/test folder nothing applies -> its objects
    # a file none of whose documents names a Karpenter kind is never split (the same words KIND_DOCUMENTS looks for
    # first: searched once per run, and in a second pass only in the files the plan changed), nor one without the
    # word `kind`: a document KIND_DOCUMENTS reads declares its kind (or a CRD its names.kind)
    # (the shortest first: EC2NodeClass is then looked for only where NodeClass is)
    named = {q for w in sorted(_KIND_RE.words, key=len)
             for q in repo.containing_both("kind", w, (".yaml", ".yml", ".tpl", ".tmpl"))}
    for p, sf in repo.files.items():
        if p not in named or p in repo.template_paths:
            continue
        if not p.endswith((".yaml", ".yml")) and not helm_chart_text(sf.text):
            continue
        rendered: list[tuple[Manifest, str]] = []
        for doc, m, obj in _parse_yaml_docs(repo, p, sf.text, 0, 0, p, only=KIND_DOCUMENTS):
            man = _manifest(obj, m, doc, container="yaml", path=p, base_offset=0, base_line=0, style_text=sf.text)
            if man and p in patches:
                continue
            source = _RENDERED_FROM.match(doc.text) if man and charts else None
            if source and source.group(1) in charts:
                rendered.append((man, charts[source.group(1)]))
                continue
            if man:
                folder = unused_example(repo, p) if "/" in p else None
                if folder is not None:
                    examples.setdefault(folder, []).append(man)
                    continue
                out.append(man)
            elif _templated_version(obj, m):
                api = m.unmask(str(obj.get("apiVersion")))
                repo.findings.append(Finding(
                    "MIG-SRC-017", "warning", p, doc.first_line + 1,
                    f"{obj.get('kind')} ({api}): its API version is a template value, so migrator cannot tell which "
                    "Karpenter API it is; it is left untouched",
                    "convert it by hand for each API version the chart is given (see the objects migrator writes "
                    "elsewhere for the shape), or write the version in the template"))
        if rendered:
            man, chart = rendered[0]
            kinds = sorted({f"{r.kind}" for r, _ in rendered})
            repo.findings.append(Finding(
                "MIG-SRC-018", "warning", p, man.line,
                f"{p} holds {len(rendered)} Karpenter object(s) ({', '.join(kinds)}) that `helm template` rendered from "
                f"the chart in {chart} (their `# Source:` comments): the output is made again from the chart's "
                "templates, so migrator neither edits it nor plans it as a cluster",
                f"move the chart's templates in {chart} to the Karpenter API the cluster runs, then render this file "
                "again as it was made (`helm template`)"))
    _examples(repo, examples, out)
    # 3. template files no Terraform call renders: never skipped silently
    local_files = None
    old_api = set(repo.containing("karpenter.", (".tftpl", ".tmpl", ".tpl")))      # what _OLD_OBJECT needs
    for p, sf in repo.files.items():
        if p not in old_api or p in repo.template_paths:
            continue
        if not p.endswith(".tftpl") and helm_chart_text(sf.text):
            continue            # a Helm chart template: read with the YAML files above
        for m in _OLD_OBJECT.finditer(sf.text):
            if local_files is None:
                local_files = localfiles.scan(repo)
            how = (f"{local_files[p].block.address} renders it, and migrator leaves it alone: {local_files[p].why_not}"
                   ) if p in local_files else \
                ("no kubectl_manifest, kubernetes_manifest or local_file of the repository renders it with "
                 "templatefile(), so migrator cannot tell its variables")
            repo.findings.append(Finding(
                "MIG-SRC-010", "warning", p, sf.text.count("\n", 0, m.start()) + 1,
                f"{m.group('kind')} ({m.group('api')}) in the template {p} is not converted: {how}",
                "render it from a kubectl_manifest with templatefile() (migrator then converts it around its ${} and "
                "%{} placeholders), or convert it by hand (see the objects migrator writes elsewhere for the shape)"))
    return out


# `helm template` output: each document starts with the template it came from (`# Source: <chart>/templates/x.yaml`)
_RENDERED_FROM = re.compile(r"\s*(?:#(?! Source:)[^\n]*\n\s*)*# Source: ([^/\s]+)/templates/")


def local_charts(repo: Repo) -> dict[str, str]:
    """The Helm charts the repository holds: their name (Chart.yaml `name`) -> their folder."""
    cached = repo.__dict__.get("_local_charts")
    if cached is None:
        cached = {}
        for p in repo.named("Chart.yaml"):
            m = re.search(r"""^name:\s*["']?([\w.-]+)""", repo.files[p].text, re.M)
            if m:
                cached.setdefault(m.group(1), posixpath.dirname(p) or ".")
        repo.__dict__["_local_charts"] = cached
    return cached


def _templated_version(obj, m) -> bool:
    """A Karpenter kind whose apiVersion is a Karpenter group with a template value for its version
    (`karpenter.sh/{{ .Values.apiVersion }}`)."""
    if not isinstance(obj, dict) or obj.get("kind") not in _KIND_RE.words:
        return False
    api = str(obj.get("apiVersion", ""))
    return api.startswith(("karpenter.sh/", "karpenter.k8s.aws/")) and m.has_token(api)


def _chart_values(repo: Repo, p: str, text: str, b: hclsrc.Block) -> Iterator[Manifest]:
    """The objects a module's chart renders from its inputs (inventory/dataaddons.py): read, never edited in place."""
    for r in dataaddons.render(repo, p, text, b):
        era = _era(r.obj)
        if era is None:
            continue
        yield Manifest(kind=era[1], api_version=era[0], era=era[2], obj=r.obj, masked=r.masked,
                       container="chart_values", path=p, line=r.line, doc_start=r.entry.start, doc_end=r.entry.end,
                       tf_path=p, block=b, tf_text=text, entry_key=r.entry.key)


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
    obj = hclsrc.encoded_object(body)
    if obj is not None:
        yield from _hcl_object(p, text, b, obj, "kubectl_manifest")
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


def _hcl_object(p: str, text: str, b: hclsrc.Block, expr: hclsrc.Expr, container: str) -> Iterator[Manifest]:
    """A Karpenter object written as an HCL object literal (kubernetes_manifest, kubectl_manifest + yamlencode)."""
    m = Masked(text="")
    obj = hcl_to_obj(expr, m)
    era = _era(obj)
    if era:
        yield Manifest(kind=era[1], api_version=era[0], era=era[2], obj=obj, masked=m, container=container, path=p,
                       line=hclsrc.line_of(text, expr.start), tf_path=p, block=b, expr=expr, tf_text=text)


def _scan_kubernetes(repo: Repo, p: str, text: str, b: hclsrc.Block) -> Iterator[Manifest]:
    expr = b.attr("manifest")
    if expr is None:
        return
    if expr.kind == "object":
        yield from _hcl_object(p, text, b, expr, "kubernetes_manifest")
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


# ----------------------------------------------------------------------------------------------
# Chart installations and their values, in every shape (the Helm capability)
# ----------------------------------------------------------------------------------------------
