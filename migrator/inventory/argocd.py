"""Argo CD Applications and ApplicationSets of the karpenter charts: `targetRevision`, `helm.valuesObject`,
`helm.values`, `helm.parameters` and value files.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterator

from ruamel.yaml.comments import CommentedMap

from ..model import Finding
from ..versions import parse_version
from ..sources import yaml as yamlsrc
from ..sources.templates import TemplateError, mask
from .charts import ChartInstall, ValuesSource, _chart_name, line_end_of
from .documents import _parse_yaml_docs
from .repo import Repo



ARGO_KINDS = {"Application": ("spec",), "ApplicationSet": ("spec", "template", "spec")}


def scan(repo: Repo) -> Iterator[ChartInstall]:
    """Argo CD Applications / ApplicationSets installing the Karpenter charts: single `source` or `sources[]`."""
    from ..sources import keytree
    for p in repo.yaml_containing("karpenter"):
        sf = repo.files[p]
        if "argoproj.io" not in sf.text:
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
                if name is None and not src.get("chart") and str(src.get("repoURL") or "").startswith("oci://"):
                    name = _chart_name(str(src["repoURL"]))     # Argo CD 3 OCI source: the URL names the chart
                sites = []
                if name is None and obj["kind"] == "ApplicationSet":   # the chart a generator's values name
                    name, sites = _generated(sf.text, doc, obj, src)
                if name is None:
                    continue
                kl = _line_of_path(obj, path)
                ci = ChartInstall("argocd", name, p, doc.first_line + kl + 1, obj=obj, doc=doc, source=path)
                if not sites and m.helm and m.is_token(src.get("targetRevision")):
                    sites = chart_value_sites(repo, p, m.unmask(str(src["targetRevision"])))
                    sites = [((sp,), *rest) for sp, *rest in sites]
                if sites:
                    ci.sites = [(sp[0] if isinstance(sp, tuple) else p, *rest) for sp, *rest in sites]
                    found = [v for *_x, v, _h in sites if parse_version(v)]
                    ci.evaluated_version = min(found, key=parse_version) if found else None
                helm = src.get("helm")
                if isinstance(helm, dict):
                    _argo_values(repo, p, sf.text, doc, m, obj, path + ("helm",), helm, ci, keytree)
                    refs = {str(s.get("ref")): s for _, s in sources if s.get("ref")}
                    _ref_value_files(repo, p, ci, helm, refs)
                yield ci


_GEN_REF = re.compile(r"^\s*\{\{\s*\.?((?:values\.)?[A-Za-z_][\w-]*)\s*\}\}\s*$")


def _generator_items(gens, path: tuple) -> Iterator[tuple[tuple, Any]]:
    """(path, map) of every parameter map the generators give: list elements, and the `values` of cluster (and
    other) generators, through merge and matrix generators."""
    for i, g in enumerate(gens if isinstance(gens, list) else []):
        if not isinstance(g, dict):
            continue
        for kind, spec in g.items():
            if not isinstance(spec, dict):
                continue
            if kind == "list":
                for j, el in enumerate(spec.get("elements") or []):
                    if isinstance(el, dict):
                        yield path + (i, kind, "elements", j), el
            elif kind in ("merge", "matrix"):
                yield from _generator_items(spec.get("generators"), path + (i, kind, "generators"))
            if isinstance(spec.get("values"), dict):
                yield path + (i, kind, "values"), {"values": spec["values"]}


_PARAM = re.compile(r"\{\{\s*\.?((?:values\.)?[A-Za-z_][\w-]*)\s*\}\}")


def _fill(template: str, item: Any) -> str | None:
    """A template string with every generator parameter it names taken from one generator map (None when one is
    missing)."""
    missing = False

    def sub(m):
        nonlocal missing
        got = _lookup(item, m.group(1))
        if got is None or isinstance(got[0][got[1]], (dict, list)):
            missing = True
            return ""
        return str(got[0][got[1]])
    out = _PARAM.sub(sub, template)
    return None if missing else out


def _merge_of(where: tuple) -> tuple | None:
    """The merge generator a generator map sits in (its path), if any."""
    idx = [i for i, k in enumerate(where) if k == "merge"]
    return where[:idx[-1] + 2] if idx else None


def _lookup(item: Any, ref: str) -> tuple[Any, str] | None:
    """(container, key) of a parameter in a generator's map (`values.x` in a cluster generator's values)."""
    parts = ref.split(".")
    node = item
    for k in parts[:-1]:
        node = node.get(k) if isinstance(node, dict) else None
    return (node, parts[-1]) if isinstance(node, dict) and parts[-1] in node else None


def _generated(text: str, doc, obj: Any, src: dict) -> tuple[str | None, list[tuple]]:
    """(chart name, version sites) of an ApplicationSet source whose `chart` and `targetRevision` are generator
    parameters (`{{addonChart}}`, `{{.values.addonChartVersion}}`): only the generator maps that name a Karpenter
    chart; each site is (path, start, end, value, how)."""
    from .documents import scalar_at
    chart_tpl = str(src.get("chart") or "")
    if not _PARAM.search(chart_tpl):
        return None, []
    vref = _GEN_REF.match(str(src.get("targetRevision") or ""))
    name, sites = None, []
    items = list(_generator_items((obj.get("spec") or {}).get("generators"), ("spec", "generators")))
    charts = {}
    for where, item in items:
        charts[where] = _chart_name(_fill(chart_tpl, item))
    # a merge generator's other maps override the parameters of the clusters its first map selects (a version per
    # environment): they belong to the chart their merge names
    merged = {_merge_of(w): c for w, c in charts.items() if c is not None and _merge_of(w)}
    for where, item in items:
        chart = charts[where] or (merged.get(_merge_of(where)) if _fill(chart_tpl, item) is None else None)
        if chart is None:
            continue
        name = name or chart
        ver = _lookup(item, vref.group(1)) if vref else None
        span = scalar_at(text, doc.start, doc.text, ver[0], (ver[1],)) if ver else None
        if span is not None:
            at = where[:-1] if where[-1] == "values" and vref.group(1).startswith("values.") else where
            sites.append((None, *span, f"{'.'.join(map(str, at))}.{vref.group(1)} (a generator of "
                                      f"ApplicationSet {(obj.get('metadata') or {}).get('name')})"))
    return name, sites


def chart_value_sites(repo: Repo, p: str, raw: str) -> list[tuple]:
    """(path, start, end, value, how) of every literal the values files of the chart whose template p is give a value
    written `{{ .Values.a.b }}` (values.yaml, and the environments' values-*.yaml beside it): a version an
    app-of-apps chart takes from its values is moved there. [] where p is no chart template or nothing sets it."""
    import posixpath
    from .documents import in_chart_templates, scalar_at
    from .helmfile import _values_ref
    keys = _values_ref(raw)
    if not keys or not in_chart_templates(repo, p):
        return []
    parts = p.split("/")
    i = len(parts) - 2 - parts[-2::-1].index("templates")
    chart = "/".join(parts[:i])
    out = []
    for f in sorted(repo.files):
        d, base = posixpath.dirname(f), posixpath.basename(f)
        if d != chart or not base.startswith("values") or not base.endswith((".yaml", ".yml")):
            continue
        text = repo.text(f)
        for doc, _m, obj in _parse_yaml_docs(repo, f, text, 0, 0, f):
            got = scalar_at(text, doc.start, doc.text, obj, keys) if isinstance(obj, CommentedMap) else None
            if got:
                out.append((f, *got, f".Values.{'.'.join(keys)} in {f}, the values of the chart {chart or '.'}"))
    return out


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
        ci.values.append(ValuesSource("value_files", p, line))      # replaced where each file is read


def _ref_value_files(repo: Repo, p: str, ci: ChartInstall, helm: dict, refs: dict) -> None:
    """`valueFiles: [$values/values/karpenter.yaml]` with a `ref: values` source of a multi-source Application: the file
    of the repository at that path is read (and edited) as the values; only when every value file is such a file is
    the unreadable source dropped."""
    from .charts import _values_file
    files = [str(f) for f in helm.get("valueFiles") or []]
    found = []
    for f in files:
        ref, _, rest = f.partition("/")
        target = rest if ref.startswith("$") and ref[1:] in refs and rest else None
        if target is None or target not in repo.files:
            return
        found.append(target)
    if not found:
        return
    vs = next(v for v in ci.values if v.kind == "value_files")
    ci.values.remove(vs)
    for target in found:
        ci.values.extend(_values_file(repo, p, vs.line, target))


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


