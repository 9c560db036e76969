"""Karpenter objects passed to a chart in its values (a "raw" chart that renders the objects it is given, or a chart of
the team's own that does), which migrator does not render.

A `helm_release` whose `values` hold a NodePool or EC2NodeClass (a YAML heredoc, `yamlencode({...})`, a values
file), an Argo CD Application whose `helm.values` / `helm.valuesObject` hold one, a Flux HelmRelease whose
`spec.values` hold one: each object is found where it is written, with its line. migrator does not edit them (their
chart decides what they become), so they count for where the root stands (plan._standing_of, as shell heredocs'
objects do), an object a hop must change is said (MIG-SRC-025) and an Auto Mode move holds its cutover for it
(rules/auto/unconverted.py), instead of going on as if the root held no pool. The karpenter-resources
chart of the eks-data-addons module is read by inventory/dataaddons.py, not here.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..model import Finding
from ..sources import hcl as hclsrc
from ..sources import yaml as yamlsrc
from .documents import KARPENTER_KINDS, auto_mode_text, auto_mode_value
from .repo import Repo

_NEEDLES = ("karpenter.sh/", "karpenter.k8s.aws/")
_FLUX = "helm.toolkit.fluxcd.io"
_RELEASE = re.compile(r"^kind:[ \t]*[\"']?(Application|HelmRelease)[\"']?[ \t]*$", re.M)


@dataclass(frozen=True)
class ValueObject:
    path: str
    line: int
    kind: str
    api_version: str
    era: str                    # alpha | beta | v1 (knowledge/hops.yaml `kinds`)
    name: str
    release: str                # the release that passes it: helm_release.x, Application/x, HelmRelease/x
    chart: str
    auto_mode: bool = False     # an EKS Auto Mode NodePool or NodeClass (documents.auto_mode_value): AWS runs it


def scan(repo: Repo) -> list[ValueObject]:
    """Every Karpenter object a chart release of the repository is given in its values (once per run)."""
    cached = repo.__dict__.get("_value_objects")
    if cached is not None:
        return cached
    out: list[ValueObject] = []
    from .terraform import switched_off
    for p, b in repo.blocks("resource", "helm_release"):
        if any(n in repo.text(p)[b.start:b.end] for n in _NEEDLES) or b.attr("values") is not None and \
                any(i.kind == "call" for i in (b.attr("values").items or [])):
            found = _terraform(repo, p, b)
            if found and not switched_off(repo, p, b, hclsrc.line_of(repo.text(p), b.start)):
                out += found                # a release that never exists (count = 0) passes nothing
    files = set(repo.yaml_containing(_NEEDLES[0])) | set(repo.yaml_containing(_NEEDLES[1]))
    for p in sorted(f for f in files if "Application" in repo.text(f) or "HelmRelease" in repo.text(f)):
        for doc in yamlsrc.split_documents(repo.text(p)):
            if _RELEASE.search(doc.text) and any(n in doc.text for n in _NEEDLES):
                out += _release_document(p, doc)
    repo.__dict__["_value_objects"] = out
    return out


def _release_document(p: str, doc) -> list[ValueObject]:
    """An Argo CD Application's `helm.valuesObject` / `helm.values`, a Flux HelmRelease's `spec.values`: the objects
    in them, lines counted in the file (the document read again with its positions)."""
    from ..sources.templates import TemplateError, mask
    try:
        obj = yamlsrc.load(mask(doc.text).text)
    except (TemplateError, yamlsrc.YamlParseError, ValueError):
        return []
    spec = obj.get("spec") if isinstance(obj, dict) else None
    if not isinstance(spec, dict):
        return []
    name, base = str((obj.get("metadata") or {}).get("name")), doc.first_line
    if str(obj.get("apiVersion", "")).startswith("argoproj.io/") and obj.get("kind") == "Application":
        out = []
        for src in [spec.get("source")] + list(spec.get("sources") or []):
            if isinstance(src, dict) and isinstance(src.get("helm"), dict):
                chart = str(src.get("chart") or src.get("path") or "")
                out += _walk(p, src["helm"].get("valuesObject"), base, f"Application/{name}", chart)
                out += _text_values(p, src["helm"], "values", base, f"Application/{name}", chart)
        return out
    if str(obj.get("apiVersion", "")).startswith(_FLUX + "/") and obj.get("kind") == "HelmRelease":
        chart = str((((spec.get("chart") or {}).get("spec") or {}).get("chart")) or "")
        return _walk(p, spec.get("values"), base, f"HelmRelease/{name}", chart)
    return []


def _terraform(repo: Repo, p: str, b: hclsrc.Block) -> list[ValueObject]:
    text = repo.text(p)
    values = b.attr("values")
    if values is None or values.kind != "tuple":
        return []
    chart = b.attr("chart")
    chart_name = str(chart.literal()) if chart is not None and chart.literal() is not None else \
        (chart.source.strip() if chart is not None else "")
    out: list[ValueObject] = []
    for item in values.items:
        if item.kind == "heredoc" and any(n in text[item.start:item.end] for n in _NEEDLES):
            h = item.heredoc
            body = text[h.body_start:h.body_end]
            out += _yaml_text(p, body, hclsrc.line_of(text, h.body_start) - 1, b.address, chart_name)
        elif item.kind == "call" and item.name in ("file", "templatefile") and item.items:
            target = repo.resolve_file_arg(p, item.items[0])
            if target in repo.files and any(n in repo.text(target) for n in _NEEDLES):
                out += _yaml_text(target, repo.text(target), 0, b.address, chart_name)
        elif any(n in text[item.start:item.end] for n in _NEEDLES):
            obj = hclsrc.encoded_object(item)
            if obj is not None:
                from .objects import Masked, hcl_to_obj
                out += _walk(p, hcl_to_obj(obj, Masked(text="")), hclsrc.line_of(text, obj.start), b.address,
                             chart_name, hcl=True)
    return out


def _text_values(p: str, helm: dict, key: str, base: int, release: str, chart: str) -> list[ValueObject]:
    """A values string in a YAML document (Argo CD `helm.values: |`): its objects, lines counted in the file."""
    raw = helm.get(key)
    if not isinstance(raw, str) or not any(n in raw for n in _NEEDLES):
        return []
    try:
        line = base + helm.lc.key(key)[0] + 1      # the block scalar starts on the line below its key
    except (AttributeError, KeyError, TypeError):
        return []
    return _yaml_text(p, raw, line, release, chart)


def _yaml_text(p: str, body: str, base_line: int, release: str, chart: str) -> list[ValueObject]:
    from ..sources.templates import TemplateError, mask
    try:
        obj = yamlsrc.load(mask(body).text)
    except (TemplateError, yamlsrc.YamlParseError, ValueError):
        return []                   # values that do not parse are said by the chart readers where they matter
    return _walk(p, obj, base_line, release, chart)


def _walk(p: str, node, base_line: int, release: str, chart: str, hcl: bool = False) -> list[ValueObject]:
    """Karpenter objects anywhere in a values tree: a mapping with a Karpenter apiVersion, one of its kinds and a
    metadata mapping (a nodeClassRef names a kind too, but has no metadata)."""
    out: list[ValueObject] = []
    stack = [node]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            era = KARPENTER_KINDS.get((str(x.get("apiVersion")), str(x.get("kind"))))
            if era is not None and isinstance(x.get("metadata"), dict):
                line = base_line if hcl else base_line + _line(x)
                out.append(ValueObject(p, line, str(x["kind"]), str(x["apiVersion"]), era,
                                       str(x["metadata"].get("name")), release, chart, auto_mode_value(x)))
                continue
            stack.extend(reversed(list(x.values())))
        elif isinstance(x, list):
            stack.extend(reversed(x))
    return sorted(out, key=lambda o: (o.path, o.line))


def _line(x) -> int:
    try:
        return x.lc.key("kind")[0] + 1
    except (AttributeError, KeyError, TypeError):
        return 1


def said(objs: list[ValueObject], to_era: str) -> list[Finding]:
    """The objects a hop to `to_era` must change, said: migrator does not render the chart they are passed to."""
    return [Finding(
        "MIG-SRC-025", "warning", o.path, o.line,
        f"{o.kind} {o.name} ({o.api_version}) is passed in the values of {o.release} (chart {o.chart or '?'}): "
        "migrator does not render that chart, so the object is not converted",
        "move the object into a YAML file or a kubectl_manifest (migrator converts those), or convert it in the "
        "values by hand as the runbook's steps for this hop describe") for o in objs if o.era != to_era]


@dataclass(frozen=True)
class RenderedObject:
    """A Karpenter object in a template a local_file renders to a file applied outside Terraform."""
    path: str
    line: int
    kind: str
    api_version: str
    era: str
    release: str                # the local_file that renders it
    auto_mode: bool = False     # an EKS Auto Mode NodePool or NodeClass (documents.auto_mode_text): AWS runs it


_TOP_API = re.compile(r"^apiVersion:[ \t]*[\"']?([\w./-]+)[\"']?[ \t]*$", re.M)
_TOP_KIND = re.compile(r"^kind:[ \t]*[\"']?(\w+)[\"']?[ \t]*$", re.M)


def rendered(repo: Repo) -> list[RenderedObject]:
    """Every Karpenter object of the templates local_file resources render (once per run): they count for where the
    root stands, since migrator converts none of them (MIG-SRC-010 says the older ones); those it reads are objects of their own
    (inventory/localfiles.py)."""
    cached = repo.__dict__.get("_rendered_objects")
    if cached is not None:
        return cached
    from .localfiles import scan
    out: list[RenderedObject] = []
    for target, r in scan(repo).items():
        text = repo.text(target) if target in repo.files and target not in repo.template_paths else ""
        if not any(n in text for n in _NEEDLES):
            continue                        # (a template a kubectl_manifest renders too is read as its object)
        for doc in yamlsrc.split_documents(text):
            api, kind = _TOP_API.search(doc.text), _TOP_KIND.search(doc.text)
            era = KARPENTER_KINDS.get((api.group(1), kind.group(1))) if api and kind else None
            if era is not None:
                out.append(RenderedObject(target, doc.first_line + doc.text.count("\n", 0, kind.start()) + 1,
                                          kind.group(1), api.group(1), era, r.block.address,
                                          auto_mode_text(kind.group(1), api.group(1), doc.text)))
    repo.__dict__["_rendered_objects"] = out
    return out
