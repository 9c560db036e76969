"""The names a pool chart of the repository gives its NodePools, from the releases that install it (issue 57).

A chart template names its pool from the release (`name: {{ .Values.name }}`, `{{ .Release.Name }}-spot`): which
names the cluster runs is stated by what installs the chart from its folder, each release read as its installer
merges the values:
  - Terraform `helm_release` blocks, one per pool or one per instance of a `for_each` over a stated set or map: its
    `set` entries, its `values` heredocs and `yamlencode()` objects (with `each.key` and `each.value`), then the
    chart's values.yaml;
  - Argo CD Applications whose source `path` is the chart's folder: `helm.parameters`, `valuesObject`, `values`,
    `valueFiles`, then values.yaml (release name: `helm.releaseName`, else the Application's name);
  - Flux HelmReleases installing it from the GitRepository: `spec.values`, the chart's `valuesFiles`, then values.yaml
    (release name: `spec.releaseName`, else `<targetNamespace>-<name>`).
Every name must be stated: a value the repository does not state (a variable no file sets, a `count`, Flux's
`valuesFrom`, a values file of another source), or installs of one folder by several kinds of installer (or by a
script) leave the names unknown (None), and the workloads' selectors of such a pool are said, never guessed
(MIG-AUTO-054).
"""
from __future__ import annotations

import posixpath
import re
from typing import Any

from ... import knowledge
from ...cas import set_entries
from ...inventory.sites import static_value
from ...inventory.terraform import _vendored
from ...sources import hcl as hclsrc
from ...sources import yaml as yamlsrc

# a name written as one value with literal text around it: `{{ .Values.pool.name }}`, `{{ .Release.Name }}-spot`
_NAME = re.compile(r"^(?P<pre>[\w.-]*)\{\{-?\s*\.(?P<what>Values(?:\.[A-Za-z_][\w-]*)+|Release\.Name)\s*-?\}\}"
                   r"(?P<post>[\w.-]*)$")
_FLUX_NAME_LIMIT = knowledge.load("helm")["flux_release_name_limit"]
_EACH = re.compile(r"\$\{\s*each\.(key|value)\s*\}")
# a YAML value that is one reference and nothing else (`role: ${module.karpenter.node_iam_role_name}`): a scalar the
# values do not state, which cannot add keys of its own
_REF_VALUE = re.compile(r"^([ \t]*(?:-[ \t]+)?[\w.-]+:[ \t]+)\$\{\s*(?!each\.)[A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*|\[\d+\])+\s*\}[ \t]*$",
                        re.M)
_UNSTATED = "migrator-unstated-value"


def chart_folder(template_path: str) -> str | None:
    """The chart a template file belongs to: the folder above its `templates/`."""
    parts = template_path.split("/")
    return "/".join(parts[:parts.index("templates")]) if "templates" in parts[:-1] else None


def chart_releases(repo, chart: str) -> list[tuple[str, hclsrc.Block]]:
    """The Terraform helm_release blocks that install a chart of the repository from its folder, when nothing else
    installs it (else none: who renders it is not told by Terraform alone)."""
    releases = [(p, b) for p, b in repo.blocks("resource", "helm_release")
                if (v := _vendored(repo, p, b)) is not None and v[0] == chart]
    return [] if not releases or _installed_otherwise(repo, chart, {p for p, _ in releases}) else releases


def argo_releases(repo, chart: str) -> list[tuple[str, dict, dict]]:
    """(file, Application, its source) of each Argo CD Application that renders a chart of the repository from its
    folder (a source whose `path` is the chart's), when nothing else installs it (else none)."""
    from ...inventory.kustomizations import _documents
    found = []
    for p, obj in _documents(repo, "argoproj.io", "Application"):
        spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
        sources = ([spec["source"]] if isinstance(spec.get("source"), dict) else []) + \
            [s for s in spec.get("sources") or [] if isinstance(s, dict)]
        for s in sources:
            path = s.get("path")
            if isinstance(path, str) and not s.get("chart") and posixpath.normpath(path.strip("/") or ".") == chart:
                found.append((p, obj, s))
    return [] if not found or _installed_otherwise(repo, chart, {p for p, _, _ in found}) else found


def flux_releases(repo, chart: str) -> list[tuple[str, dict]]:
    """(file, HelmRelease) of each Flux HelmRelease that installs a chart of the repository from its path in a
    GitRepository (`spec.chart.spec.chart: ./charts/pools`), when nothing else installs it (else none)."""
    from ...inventory.kustomizations import _documents
    found = []
    for p, obj in _documents(repo, "helm.toolkit.fluxcd.io", "HelmRelease"):
        cs = ((obj.get("spec") or {}).get("chart") or {}).get("spec") or {}
        ref = cs.get("sourceRef") if isinstance(cs.get("sourceRef"), dict) else {}
        name = cs.get("chart")
        if isinstance(name, str) and ref.get("kind") == "GitRepository" and \
                posixpath.normpath(name.strip().removeprefix("./").strip("/") or ".") == chart:
            found.append((p, obj))
    return [] if not found or _installed_otherwise(repo, chart, {p for p, _ in found}) else found


def rendered_names(repo, template_path: str, raw_name: str) -> set[str] | None:
    """Every name the NodePool of `template_path`, named `raw_name` as written, takes over the chart's releases; None
    when one of them is not stated by the repository."""
    m = _NAME.match(raw_name.strip())
    chart = chart_folder(template_path)
    if m is None or chart is None or posixpath.join(chart, "Chart.yaml") not in repo.files:
        return None
    defaults = _load(repo.text(posixpath.join(chart, "values.yaml"))) \
        if posixpath.join(chart, "values.yaml") in repo.files else {}
    if defaults is None:
        return None
    apps = argo_releases(repo, chart)
    if apps:
        return _argo_names(repo, chart, apps, m, defaults)
    fluxed = flux_releases(repo, chart)
    if fluxed:
        return _flux_names(repo, fluxed, m, defaults)
    releases = chart_releases(repo, chart)
    if not releases:
        return None
    names: set[str] = set()
    for p, b in releases:
        instances = _instances(repo, p, b)
        if instances is None:
            return None
        for each in instances:
            got = _release_name(repo, p, b, each) if m.group("what") == "Release.Name" else \
                _value(repo, p, b, each, tuple(m.group("what").split(".")[1:]), defaults)
            name = _named(m, got)
            if name is None:
                return None
            names.add(name)
    return names


def _argo_names(repo, chart: str, apps: list, m: re.Match, defaults: dict) -> set[str] | None:
    """The names each Application gives: its release name (`helm.releaseName`, else the Application's name), or the
    value as Argo CD merges it: `helm.parameters` over `helm.valuesObject` over `helm.values` over `helm.valueFiles`
    (later files over earlier, read from the chart's folder) over the chart's values.yaml."""
    names: set[str] = set()
    path = tuple(m.group("what").split(".")[1:])
    for _p, obj, src in apps:
        helm = src.get("helm") if isinstance(src.get("helm"), dict) else {}
        if m.group("what") == "Release.Name":
            got = helm.get("releaseName") or (obj.get("metadata") or {}).get("name")
        else:
            got = _argo_value(repo, chart, helm, path, defaults)
        name = _named(m, got)
        if name is None:
            return None
        names.add(name)
    return names


def _flux_names(repo, releases: list, m: re.Match, defaults: dict) -> set[str] | None:
    """The names each HelmRelease gives: its release name (`spec.releaseName`, else `<targetNamespace>-<name>`, else
    its name), or the value as Flux merges it: `spec.values` over the chart's `valuesFiles` (later over earlier, paths
    in the repository) over values.yaml; `valuesFrom` (a ConfigMap or Secret) is not in the files: unknown."""
    names: set[str] = set()
    path = tuple(m.group("what").split(".")[1:])
    for _p, obj in releases:
        spec = obj.get("spec") or {}
        if m.group("what") == "Release.Name":
            meta = obj.get("metadata") or {}
            got = spec.get("releaseName") or (f"{spec['targetNamespace']}-{meta.get('name')}"
                                              if spec.get("targetNamespace") else meta.get("name"))
            if not spec.get("releaseName") and len(str(got)) > _FLUX_NAME_LIMIT:
                return None             # Flux shortens it with a hash: not a name the files state
        elif spec.get("valuesFrom"):
            return None
        else:
            layers = [spec.get("values")]
            for f in reversed(((spec.get("chart") or {}).get("spec") or {}).get("valuesFiles") or []):
                q = posixpath.normpath(str(f).removeprefix("./"))
                loaded = _load(repo.text(q)) if q in repo.files else None
                if loaded is None:
                    return None
                layers.append(loaded)
            got = next((x for x in (_at(o, path) for o in layers if isinstance(o, dict)) if x is not _MISSING),
                       _MISSING)
            got = _at(defaults, path) if got is _MISSING else got
            got = None if got is _MISSING else got
        name = _named(m, got)
        if name is None:
            return None
        names.add(name)
    return names


def _argo_value(repo, chart: str, helm: dict, path: tuple[str, ...], defaults: dict) -> Any:
    for x in reversed(helm.get("parameters") or []):
        if isinstance(x, dict) and x.get("name") == ".".join(path):
            return x.get("value")
    layers: list[Any] = [helm.get("valuesObject")]
    raw = helm.get("values")
    layers.append(_load(raw) if isinstance(raw, str) else raw)
    if isinstance(raw, str) and layers[-1] is None:
        return None                     # values text the repository does not state whole (a template, bad YAML)
    for f in reversed(helm.get("valueFiles") or []):
        q = posixpath.normpath(posixpath.join(chart, str(f)))
        got = _load(repo.text(q)) if not str(f).startswith("$") and q in repo.files else None
        if got is None:
            return None                 # a file of another source, or one the repository does not hold (or read)
        layers.append(got)
    for obj in layers:
        if obj is None:
            continue
        if not isinstance(obj, dict):
            return None
        got = _at(obj, path)
        if got is not _MISSING:
            return got
    got = _at(defaults, path)
    return None if got is _MISSING else got


def _named(m: re.Match, got: Any) -> str | None:
    """The pool's name with this value, when the value is a plain scalar (not an expression or a template left
    unrendered)."""
    if not isinstance(got, (str, int)) or isinstance(got, bool) or not str(got) or \
            any(x in str(got) for x in ("{{", "${", "%{")):
        return None
    return f"{m.group('pre')}{got}{m.group('post')}"


def _installed_otherwise(repo, chart: str, tf: set[str]) -> bool:
    """Does anything but the Terraform releases name the chart's folder (a HelmRelease, an Application, a script)?"""
    return any(chart in sf.text for p, sf in repo.files.items()
               if p not in tf and not p.startswith(chart + "/") and not p.endswith((".md", ".txt")))


def _instances(repo, p: str, b: hclsrc.Block) -> list[dict] | None:
    """each.key / each.value of every instance of the release: one (no each) without count or for_each; None when
    the for_each is not stated (or the release uses count)."""
    if b.attr("count") is not None:
        return None
    fe = b.attr("for_each")
    if fe is None:
        return [{}]
    if fe.kind == "call" and fe.name == "toset" and len(fe.items) == 1:
        fe = fe.items[0]
    got = static_value(repo, posixpath.dirname(p), fe)
    if isinstance(got, list) and all(isinstance(x, str) for x in got):
        return [{"key": x, "value": x} for x in dict.fromkeys(got)]
    if isinstance(got, dict):
        return [{"key": str(k), "value": v} for k, v in got.items()]
    return None


def _with_each(text: str, each: dict) -> str | None:
    """Text with `${each.key}` / `${each.value}` as the instance has them; None when another interpolation is left or
    each.value is not a scalar."""
    def put(m: re.Match) -> str:
        v = each.get(m.group(1))
        if not isinstance(v, (str, int, float)) or isinstance(v, bool):
            raise ValueError
        return str(v)
    try:
        out = _EACH.sub(put, text)
    except ValueError:
        return None
    return None if "${" in out or "%{" in out else out


def _string(repo, p: str, e: hclsrc.Expr | None, each: dict) -> Any:
    """An argument's value with the instance's each: a literal, a string template of each and stated values."""
    if e is None:
        return None
    if e.kind == "string" and any(_EACH.search(part) for interp, part in e.parts if interp):
        text = _with_each(e.source.strip()[1:-1], each)
        return text if text is not None else None
    if e.kind == "ref" and e.source.strip() in ("each.key", "each.value"):
        return each.get(e.source.strip().split(".")[1])
    return static_value(repo, posixpath.dirname(p), e)


def _release_name(repo, p: str, b: hclsrc.Block, each: dict) -> Any:
    return _string(repo, p, b.attr("name"), each)


def _value(repo, p: str, b: hclsrc.Block, each: dict, path: tuple[str, ...], defaults: dict) -> Any:
    """The chart value at `path` for one instance, as Helm merges them: `set` over `values` (later items over
    earlier) over the chart's values.yaml."""
    dotted = ".".join(path)
    for n, v in reversed(set_entries(b)):
        if n is not None and n.literal() == dotted:
            return _string(repo, p, v, each)
    text = repo.text(p)
    for item in reversed(hclsrc.list_items(b.attr("values"))):
        if item.kind in ("heredoc", "string"):
            body = hclsrc.text_of(text, item)
            body = _with_each(_REF_VALUE.sub(r"\1" + _UNSTATED, body), each) if body is not None else None
            obj = _load(body) if body is not None else None
            if obj is None:
                return None             # values the repository does not state whole
        else:
            enc = hclsrc.encoded_object(item)
            if enc is None:
                return None
            obj = {}
            for e in enc.entries:
                obj[e.key] = _string(repo, p, e.value, each) if e.value.kind != "object" else \
                    {x.key: _string(repo, p, x.value, each) for x in e.value.entries}
        got = _at(obj, path)
        if got is not _MISSING:
            return None if _UNSTATED in str(got) else got
    got = _at(defaults, path)
    return None if got is _MISSING else got


_MISSING = object()


def _at(obj: Any, path: tuple[str, ...]) -> Any:
    for k in path:
        if not isinstance(obj, dict) or k not in obj:
            return _MISSING
        obj = obj[k]
    return obj


def _load(text: str | None) -> dict | None:
    if text is None or "{{" in text:
        return None
    try:
        got = yamlsrc.values(text)
    except yamlsrc.YamlParseError:
        return None
    return got if isinstance(got, dict) else {} if got is None else None
