"""Flux `HelmRelease`s of the karpenter charts (`spec.chart.spec`), with `spec.values` and `valuesFrom`.
"""
from __future__ import annotations

import posixpath
import re
from typing import Iterator

from ruamel.yaml.comments import CommentedMap

from ..sources import yaml as yamlsrc
from ..versions import version_of
from .charts import ChartInstall, ValuesSource, _chart_name
from .documents import _parse_yaml_docs
from .repo import Repo



_FLUX_KIND = re.compile(r"""^kind:[ \t]*["']?HelmRelease\b""", re.M)




_OCI_KIND = re.compile(r"""^kind:[ \t]*["']?OCIRepository\b""", re.M)


def _oci_repositories(repo: Repo) -> list[tuple]:
    """Every Flux OCIRepository of the repository: (path, doc, obj), read once per run."""
    got = getattr(repo, "_oci_repositories", None)
    if got is None:
        got = []
        for p, sf in repo.files.items():
            if p.endswith((".yaml", ".yml")) and _OCI_KIND.search(sf.text):
                for doc, _m, obj in _parse_yaml_docs(repo, p, sf.text, 0, 0, p):
                    if isinstance(obj, dict) and obj.get("kind") == "OCIRepository" and \
                            isinstance(obj.get("spec"), dict):
                        got.append((p, doc, obj))
        repo._oci_repositories = got
    return got


def _chart_ref(repo: Repo, release: dict, path: str) -> tuple | None:
    """(path, doc, obj) of the OCIRepository a HelmRelease's `spec.chartRef` names (its namespace defaults to the
    release's)."""
    ref = (release.get("spec") or {}).get("chartRef") or {}
    if ref.get("kind") != "OCIRepository" or not ref.get("name"):
        return None
    ns = ref.get("namespace") or (release.get("metadata") or {}).get("namespace")
    found = [o for o in _oci_repositories(repo) if (o[2].get("metadata") or {}).get("name") == ref["name"]]
    same = [o for o in found if (o[2].get("metadata") or {}).get("namespace") in (ns, None)] or found
    # clusters of one repository each keep an OCIRepository of that name: the one nearest the release is its own
    return max(same, key=lambda o: _shared_prefix(o[0], path), default=None)


def _shared_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a.split("/")[:-1], b.split("/")[:-1]):
        if x != y:
            break
        n += 1
    return n


def scan(repo: Repo) -> Iterator[ChartInstall]:
    from ..sources import keytree
    for p in repo.yaml_containing("karpenter"):
        sf = repo.files[p]
        # decided on bytes before any parse: a Karpenter HelmRelease names the chart and is a top-level kind (a Flux
        # gotk-components.yaml mentions HelmRelease only inside its CRDs)
        if not _FLUX_KIND.search(sf.text):
            continue
        for doc, m, obj in _parse_yaml_docs(repo, p, sf.text, 0, 0, p, only=_FLUX_KIND):   # its other documents: never
            if not isinstance(obj, dict) or obj.get("kind") != "HelmRelease":
                continue
            chart = (((obj.get("spec") or {}).get("chart") or {}).get("spec") or {}).get("chart")
            name = _chart_name(chart)
            oci = None
            if name is None:                # Flux 2.3+: spec.chartRef names an OCIRepository holding the chart
                oci = _chart_ref(repo, obj, p)
                name = _chart_name(str(oci[2]["spec"].get("url") or "")) if oci is not None else None
            if name is None:
                continue
            ci = ChartInstall("flux", name, p, doc.first_line + 1, obj=obj, doc=doc)
            if oci is not None:
                ci.ref = oci
                ref = oci[2]["spec"].get("ref") or {}
                raw = ref.get("tag") if ref.get("tag") is not None else ref.get("semver")
                ci.evaluated_version = version_of(raw) if raw is not None else None
            if (obj.get("spec") or {}).get("valuesFrom"):
                kl = obj["spec"].lc.key("valuesFrom")[0]
                generated = _generated_values(repo, p, obj["spec"]["valuesFrom"], doc.first_line + kl + 1)
                ci.values.extend(generated if generated is not None else
                                 [ValuesSource("values_from", p, doc.first_line + kl + 1)])
            if isinstance((obj.get("spec") or {}).get("values"), CommentedMap):
                tree = keytree.yaml_tree(sf.text, p, doc.start, doc.end, obj, under=("spec", "values"))
                ci.values.append(ValuesSource("flux", p, ci.line, tree=tree, masked=m))
            yield ci


def _generated_values(repo: Repo, p: str, refs, line: int) -> list[ValuesSource] | None:
    """The values files behind `valuesFrom` ConfigMaps that kustomize's `configMapGenerator` builds (in the
    kustomization of the HelmRelease's folder or a folder above it) from files of the repository, the key
    `valuesKey` (default values.yaml) names; None when any reference is not such a file."""
    from .charts import _values_file
    from .kustomizations import kustomization_in
    out: list[ValuesSource] = []
    for ref in refs if isinstance(refs, list) else []:
        if not isinstance(ref, dict) or ref.get("kind") != "ConfigMap" or not ref.get("name"):
            return None
        name, key = str(ref["name"]), str(ref.get("valuesKey") or "values.yaml")
        target, d = None, posixpath.dirname(p)
        while target is None:
            k = kustomization_in(repo, d)
            try:
                kobj = yamlsrc.load(repo.text(k)) if k is not None else None
            except yamlsrc.YamlParseError:
                kobj = None
            gens = kobj.get("configMapGenerator") if isinstance(kobj, dict) else None
            for gen in gens if isinstance(gens, list) else []:
                if not isinstance(gen, dict) or gen.get("name") != name:
                    continue
                for f in gen.get("files") or []:
                    f = str(f)
                    fk, rel = f.split("=", 1) if "=" in f else (posixpath.basename(f), f)
                    if fk == key:
                        target = posixpath.normpath(posixpath.join(posixpath.dirname(k), rel))
            if target is not None or not d:
                break
            d = posixpath.dirname(d)
        if target is None or target not in repo.files:
            return None
        out.extend(_values_file(repo, p, line, target))
    return out
