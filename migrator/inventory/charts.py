"""The install record every installer reader returns (`ChartInstall`: chart, version and where it is set, values
sources), and the chart values they hold (`values_of`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterator

from ruamel.yaml.comments import CommentedMap

from .. import knowledge
from ..sources import hcl as hclsrc
from ..sources import yaml as yamlsrc
from ..sources.templates import Masked, TemplateError, mask
from .documents import _dedent, _unparsed
from .repo import Repo



@dataclass
class HelmValue:
    """One Karpenter chart value found in the repository."""
    key: str                    # dotted chart key, e.g. settings.aws.defaultInstanceProfile
    value: Any                  # literal or placeholder token / HCL expression text
    expression: str | None      # Terraform expression when the value is computed (no ${})
    path: str
    line: int
    keys: tuple = ()            # the key as a path (tag keys may contain dots)


@dataclass
class SetEntry:
    key: str                    # dotted chart key with `\.` escapes resolved
    raw: str                    # the name as written
    name: hclsrc.Expr
    value: hclsrc.Expr | None
    start: int                  # span of the whole set block / list element (for removal)
    end: int
    line: int = 0


# values sources whose keys migrator cannot read (a key a rule looks for may be there)
UNREADABLE = ("dynamic_set", "set_list", "values_from", "value_files", "other", "release", "installer")


@dataclass
class ValuesSource:
    kind: str           # heredoc | yamlencode | file | flux | argocd | set | set_list | dynamic_set | values_from |
                        # argo_params | value_files | other | release (values only the Helm release holds: eksctl) |
                        # installer (values whoever installs an umbrella chart passes to its dependency)
    path: str
    line: int
    tree: Any = None            # keytree.Tree for heredoc / yamlencode / file / flux / argocd
    sets: list[SetEntry] = field(default_factory=list)
    masked: Masked | None = None
    params: list = field(default_factory=list)      # argo_params: ArgoParam entries
    scope: dict = field(default_factory=dict)       # a template's variables: name -> (literal, or None; expression)


@dataclass
class SharedModule:
    """A module of the repository whose one helm_release installs whatever chart each call passes (`chart =
    var.chart`), called for other charts than Karpenter's: nothing Karpenter-only may be written inside it."""
    dir: str                                    # the module's folder
    calls: list[str]                            # addresses of the calls that install this chart
    others: list[str]                           # addresses of the calls that install other charts
    chart_input: str                            # the input the calls pass the chart name in
    call_paths: dict = field(default_factory=dict)   # address -> file of each call
    charts: dict = field(default_factory=dict)       # address -> the chart each call states


@dataclass
class ChartInstall:
    kind: str                   # terraform | flux | argocd | kustomize | blueprints | helm (a script) | eksctl |
                                # umbrella (a Chart.yaml dependency)
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
    shared: "SharedModule | None" = None        # terraform: a release of a module other installs call too
    span: tuple[int, int] | None = None         # helm (scripts): where the version literal is written
    vendored: str | None = None                 # terraform: the repository folder the chart is installed from
    defaults: list = field(default_factory=list)  # vendored: the folder's own values.yaml (read, never edited)
    family: str = ""                            # blueprints: its row in knowledge/karpenter_module.yaml
    namespace: str | None = None                # helm (scripts): --namespace
    release: str | None = None                  # helm (scripts): the release name
    unit: Any = None                            # terragrunt: the unit (inventory/terragrunt.py `Unit`)
    module_path: str | None = None              # terragrunt: the module file holding the helm_release
    version_path: str | None = None             # terragrunt: the file where the version literal is written
    attrs: dict = field(default_factory=dict)   # terragrunt: the release's attributes, evaluated with the inputs
    ref: tuple | None = None                    # flux chartRef: (path, doc, obj) of the OCIRepository
    sites: list = field(default_factory=list)   # helmfile: (path, start, end, value, how) where environments set it

    @property
    def address(self) -> str:
        if self.kind == "terragrunt" or self.unit is not None:
            return f"terragrunt unit {self.unit.dir}"
        if self.block is not None:
            return self.block.address
        if self.kind == "kustomize":
            item = self.source_map
            return f"helmCharts/{item.get('releaseName') or item.get('name')}"
        if self.kind == "umbrella":
            return f"{self.path} dependency {self.chart}"
        if self.kind == "helmfile":
            return f"helmfile release {self.source_map.get('name') or self.chart}"
        if self.kind == "helm":             # a script's `helm upgrade --install`
            return f"the helm {'upgrade' if self.release is None else 'release ' + self.release} in {self.path}:{self.line}"
        kind = (self.obj or {}).get("kind", "HelmRelease")
        return f"{kind}/{(self.obj or {}).get('metadata', {}).get('name')}"

    @property
    def source_map(self) -> Any:
        node = self.obj
        for k in self.source:
            node = node[k]
        return node


CHART_NAMES = ("karpenter", "karpenter-crd")       # Karpenter's charts, as the last part of a chart reference


def _chart_name(chart: Any) -> str | None:
    if not isinstance(chart, str):
        return None
    name = chart.rstrip("/").split("/")[-1]
    return name if name in CHART_NAMES else None


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


def _values_file(repo: Repo, p: str, line: int, target: str) -> list[ValuesSource]:
    """A chart values file of the repository as a values source (a key tree over the whole file)."""
    from ..sources import keytree
    if target not in repo.files:
        return [ValuesSource("other", p, line)]
    repo.template_paths.add(target)
    vtext = repo.text(target)
    m = None
    try:
        m = mask(vtext, helm=target.endswith(".gotmpl"))    # helmfile renders a .gotmpl values file first
        obj = yamlsrc.load(m.text)
    except (TemplateError, yamlsrc.YamlParseError) as e:
        repo.findings.append(_unparsed(m, target, getattr(e, "line", 1), f"values file: {e}",
                                       "fix the values file; it is left untouched"))
        return [ValuesSource("other", p, line)]
    if not isinstance(obj, CommentedMap):
        return []
    return [ValuesSource("file", target, 1, masked=m, tree=keytree.yaml_tree(vtext, target, 0, len(vtext), obj))]


def _values_item(repo: Repo, p: str, item: hclsrc.Expr, line: int) -> list[ValuesSource]:
    """One item of a helm_release's `values` list as values sources: a YAML heredoc, `yamlencode({...})`, a values file
    (`file()` / `templatefile()`), else values migrator cannot read."""
    from ..sources import keytree
    text = repo.text(p)
    if item.kind == "heredoc":
        h = item.heredoc
        body = _dedent(text[h.body_start:h.body_end], h.indent if h.trim else 0)
        m = None
        try:
            m = mask(body)
            obj = yamlsrc.load(m.text)
        except (TemplateError, yamlsrc.YamlParseError) as e:
            repo.findings.append(_unparsed(m, p, line, f"values heredoc: {e}", "fix the values; they are left untouched"))
            return [ValuesSource("other", p, line)]
        if not isinstance(obj, CommentedMap):
            return []
        tree = keytree.yaml_tree(text, p, h.body_start, h.body_end, obj, strip=h.indent if h.trim else 0)
        return [ValuesSource("heredoc", p, line, tree=tree, masked=m)]
    obj = hclsrc.encoded_object(item)
    if obj is not None:
        return [ValuesSource("yamlencode", p, line, tree=keytree.hcl_tree(text, p, obj))]
    if item.kind == "call" and item.name in ("file", "templatefile") and item.items:
        target = repo.resolve_file_arg(p, item.items[0])
        return _values_file(repo, p, line, target) if target is not None else [ValuesSource("other", p, line)]
    return [ValuesSource("other", p, line)]


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
            for key in knowledge.load("karpenter_module")[ci.family or "blueprints_addons"]["sets"]:
                out.append(HelmValue(key, None, None, ci.path, ci.line, tuple(key.split("."))))
        for key in ((ci.attrs or {}).get("module") or {}).get("sets", []):     # a Helm-release module's own values
            out.append(HelmValue(key, None, None, ci.path, ci.line, tuple(key.split("."))))
        given = [v for vs in ci.values for v in _leaves(vs)]
        out.extend(given)
        keys = {v.key for v in given}
        out.extend(v for vs in ci.defaults for v in _leaves(vs) if v.key not in keys)   # what the release leaves set
    return out


def _leaves(vs: ValuesSource) -> Iterator[HelmValue]:
    """Every leaf value one values source sets."""
    if vs.tree is not None:
        text = vs.tree.text
        for e in vs.tree.root.walk():
            if not e.path or e.is_map:
                continue
            key = ".".join(e.path)
            v = e.value
            if isinstance(v, hclsrc.Expr):
                lit = v.literal()
                yield HelmValue(key, lit if lit is not None else "${" + v.source + "}",
                                None if lit is not None else v.source, vs.path,
                                hclsrc.line_of(text, e.key_start), e.path)
            else:
                src = vs.masked.unmask(v) if isinstance(v, str) and vs.masked else v
                expr = _strip_interp(src) if isinstance(src, str) else None
                if expr is not None and expr.strip() in vs.scope:    # a template variable: what it stands for
                    lit, expr = vs.scope[expr.strip()]
                    src = lit if lit is not None else "${" + expr + "}"
                    expr = None if lit is not None else expr
                yield HelmValue(key, src, expr, vs.path, hclsrc.line_of(text, e.key_start), e.path)
    for prm in vs.params:
        if isinstance(prm.value, (str, int, float, bool)):
            yield HelmValue(prm.name, prm.value, None, vs.path, prm.line, tuple(prm.name.split(".")))
    for s in vs.sets:
        if s.value is None:
            continue
        lit = s.value.literal()
        keys = tuple(k.replace("\x00", ".") for k in s.key.replace("\\.", "\x00").split("."))
        yield HelmValue(s.key.replace("\\.", "."), lit if lit is not None else "${" + s.value.source + "}",
                        None if lit is not None else s.value.source, vs.path, s.line, keys)


def _strip_interp(source: str) -> str | None:
    """`${module.x.y}` -> `module.x.y`; None when the text is not one whole interpolation."""
    s = source.strip()
    if s.startswith("${") and s.endswith("}") and s.count("${") == 1:
        return s[2:-1].strip()
    return None
