"""Releases of charts from outside the repository that render Karpenter's pools (knowledge/pool_charts.yaml): a
Terraform `helm_release`, a Flux HelmRelease (a HelmRepository chart or an OCIRepository `chartRef`), an Argo CD
Application or ApplicationSet (`source.chart` / `sources[].chart`), a helmfile release. migrator renders no remote
chart, so the NodePools and EC2NodeClasses such a release makes are neither read nor converted: each release is said
with its chart, where it comes from and its version (MIG-SRC-026), and moving to EKS Auto Mode it holds the cutover
and the cleanup like any pool migrator does not write (rules/auto/unconverted.py). A chart of the repository (a path)
is read from its templates elsewhere, never here.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import posixpath

from .. import knowledge
from ..model import Finding
from ..sources import hcl as hclsrc
from .repo import YAML, Repo

FACTS = knowledge.load("pool_charts")
# what only EKS Auto Mode's pools carry (its API group and label keys; never an IRSA annotation's
# eks.amazonaws.com/role-arn): a release given these renders Auto Mode pools
_AUTO_MARK = re.compile(r"eks\.amazonaws\.com/v1\b|group:\s*[\"']?eks\.amazonaws\.com\b|"
                        r"eks\.amazonaws\.com/(?:instance-|compute-type|nodeclass)")
_VALUES_FILE = re.compile(r"""["'](?:\$\{path\.module\}/)?([^"'\s${}]+\.ya?ml)["']""")
_ARGO_KIND = re.compile(r"""^kind:[ \t]*["']?Application(?:Set)?["']?[ \t]*$""", re.M)
_NAME = re.compile(FACTS["name"])


@dataclass(frozen=True)
class PoolRelease:
    path: str
    line: int
    address: str        # helm_release.x, HelmRelease/x, Application/x
    chart: str
    source: str         # the repository or registry it comes from
    version: str | None
    auto_mode: bool = False     # its values (or a values file they name) set EKS Auto Mode's pools: not Karpenter's


def pool_chart(name) -> bool:
    return isinstance(name, str) and name not in FACTS["excluded"] and _NAME.search(name) is not None


def scan(repo: Repo) -> list[PoolRelease]:
    """Every release of a remote pool chart in the repository (once per run)."""
    got = repo.__dict__.get("_pool_releases")
    if got is None:
        got = repo.__dict__["_pool_releases"] = _terraform(repo) + _flux(repo) + _argocd(repo) + _helmfile(repo)
    return got


def _auto_mode(repo: Repo, d: str, text: str) -> bool:
    """Does a release's own text, or a values file of the repository it names (relative to its folder), set Auto
    Mode's pools?"""
    if _AUTO_MARK.search(text):
        return True
    for m in _VALUES_FILE.finditer(text):
        f = posixpath.normpath(posixpath.join(d, m.group(1)))
        if f in repo.files and _AUTO_MARK.search(repo.text(f)):
            return True
    return False


def _naming(repo: Repo, needle: str) -> list[str]:
    """YAML files holding `needle` and a word every pool chart's name holds (knowledge/pool_charts.yaml `words`):
    no other document is parsed for this (an unrelated chart template that does not parse stays unread). The words
    are looked for only in the files that hold `needle` (a few, where every YAML file of the tree is many), and
    `needle` only in those that hold `kind` (each reader wants a document of a kind)."""
    return [p for p in repo.containing_both("kind", needle, YAML) if _names_a_pool_chart(repo.text(p))]


def _names_a_pool_chart(text: str) -> bool:
    return any(w in text for w in FACTS["words"])


def _terraform(repo: Repo) -> list[PoolRelease]:
    from .sites import static_value
    out = []
    for p, b in repo.blocks("resource", "helm_release"):
        chart = b.attr("chart")
        name = chart.literal() if chart is not None else None
        if name is None and chart is not None:
            name = static_value(repo, posixpath.dirname(p), chart)
        if not isinstance(name, str):
            continue
        source = b.attr("repository").literal() if b.attr("repository") is not None else None
        if source is None and not name.startswith("oci://"):
            continue                # a chart folder of the repository (or a repository migrator cannot tell)
        if not pool_chart(name.rstrip("/").split("/")[-1]):
            continue
        version = b.attr("version").literal() if b.attr("version") is not None else None
        out.append(PoolRelease(p, hclsrc.line_of(repo.text(p), b.start), b.address, name.rstrip("/").split("/")[-1],
                               str(source if source is not None else name), str(version) if version else None,
                               _auto_mode(repo, posixpath.dirname(p), repo.text(p)[b.start:b.end])))
    return out


def _flux(repo: Repo) -> list[PoolRelease]:
    from .documents import _parse_yaml_docs
    from .flux import _FLUX_KIND, _chart_ref
    out = []
    for p in _naming(repo, "HelmRelease"):
        text = repo.text(p)
        for doc, _m, obj in _parse_yaml_docs(repo, p, text, 0, 0, p, only=_FLUX_KIND):     # (never a CRD bundle)
            if not isinstance(obj, dict) or obj.get("kind") != "HelmRelease" or \
                    not str(obj.get("apiVersion", "")).startswith("helm.toolkit.fluxcd.io/"):
                continue
            spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
            chart = ((spec.get("chart") or {}).get("spec") or {}) if isinstance(spec.get("chart"), dict) else {}
            name, version, source = chart.get("chart"), chart.get("version"), None
            ref = chart.get("sourceRef") if isinstance(chart.get("sourceRef"), dict) else {}
            if name is not None and ref.get("kind") in ("HelmRepository", None):
                source = f"HelmRepository/{ref.get('name')}"
            elif name is None:
                oci = _chart_ref(repo, obj, p)
                url = ((oci[2].get("spec") or {}).get("url")) if oci is not None else None
                if isinstance(url, str):            # the chart is the artifact: named by the URL or the source
                    name, source = url.rstrip("/").split("/")[-1], url
                    if not pool_chart(name):
                        name = (oci[2].get("metadata") or {}).get("name")
                    version = ((oci[2].get("spec") or {}).get("ref") or {}).get("tag")
            if source is None or not pool_chart(name):
                continue
            out.append(PoolRelease(p, doc.first_line + 1, f"HelmRelease/{(obj.get('metadata') or {}).get('name')}",
                                   str(name), source, str(version) if version is not None else None,
                                   _auto_mode(repo, posixpath.dirname(p), doc.text)))
    return out


def _argocd(repo: Repo) -> list[PoolRelease]:
    from .argocd import ARGO_KINDS
    from .documents import _parse_yaml_docs
    out = []
    for p in _naming(repo, "argoproj.io"):
        text = repo.text(p)
        for doc, _m, obj in _parse_yaml_docs(repo, p, text, 0, 0, p, only=_ARGO_KIND):
            if not isinstance(obj, dict) or obj.get("kind") not in ARGO_KINDS or \
                    not str(obj.get("apiVersion", "")).startswith("argoproj.io/"):
                continue
            spec = obj
            for k in ARGO_KINDS[obj["kind"]]:
                spec = spec.get(k) if isinstance(spec, dict) else None
            if not isinstance(spec, dict):
                continue
            sources = [spec["source"]] if isinstance(spec.get("source"), dict) else []
            sources += [s for s in spec.get("sources") or [] if isinstance(s, dict)]
            for src in sources:
                if pool_chart(src.get("chart")):
                    out.append(PoolRelease(p, doc.first_line + 1,
                                           f"{obj['kind']}/{(obj.get('metadata') or {}).get('name')}",
                                           str(src["chart"]), str(src.get("repoURL") or "?"),
                                           str(src["targetRevision"]) if src.get("targetRevision") else None,
                                           _auto_mode(repo, posixpath.dirname(p), doc.text)))
    return out


def _helmfile(repo: Repo) -> list[PoolRelease]:
    """helmfile releases: `chart: <repository>/<name>` (its `repositories:` entry's URL) or `oci://.../<name>`; a chart
    folder (`./charts/x`) is the repository's own."""
    from .documents import _parse_yaml_docs
    from .helmfile import helmfiles
    out = []
    for p in helmfiles(repo):
        if not _names_a_pool_chart(repo.text(p)):
            continue
        for doc, _m, obj in _parse_yaml_docs(repo, p, repo.text(p), 0, 0, p, gotmpl=True):
            if not isinstance(obj, dict):
                continue
            urls = {str(r.get("name")): str(r.get("url")) for r in obj.get("repositories") or []
                    if isinstance(r, dict) and r.get("name")}
            rels = obj.get("releases") or []
            lines = doc.text.splitlines()
            for i, rel in enumerate(rels):
                chart = rel.get("chart") if isinstance(rel, dict) else None
                if not isinstance(chart, str) or chart.startswith((".", "/")) or "/" not in chart:
                    continue
                name = chart.rstrip("/").split("/")[-1]
                if not pool_chart(name):
                    continue
                head = chart.split("/", 1)[0]
                source = chart.rsplit("/", 1)[0] if chart.startswith("oci://") else urls.get(head, head)
                line = doc.first_line + 1 + (rel.lc.line if hasattr(rel, "lc") else 0)
                version = rel.get("version")
                end = rels[i + 1].lc.line if i + 1 < len(rels) and hasattr(rels[i + 1], "lc") else len(lines)
                own = "\n".join(lines[rel.lc.line:end]) if hasattr(rel, "lc") else doc.text
                out.append(PoolRelease(p, line, f"helmfile release {rel.get('name') or name}", name, source,
                                       str(version) if version is not None else None,
                                       _auto_mode(repo, posixpath.dirname(p), own)))
    return out


def said(releases: list[PoolRelease], moving: bool) -> list[Finding]:
    """Each release, said: a warning while the root's pools must change (a hop of the Karpenter API, or the move to
    Auto Mode), else for information."""
    return [Finding(
        "MIG-SRC-026", "warning" if moving else "info", r.path, r.line,
        f"{r.address} installs the chart {r.chart} ({r.source}{', ' + r.version if r.version else ''}), which renders "
        "Karpenter NodePools and EC2NodeClasses from its values: migrator does not render charts from outside the "
        "repository, so those pools are neither read nor converted",
        "check that the chart's version renders the Karpenter API each hop moves to (its changelog) and move it with "
        "the controller; moving to EKS Auto Mode, write the pools' Auto Mode twins (a NodeClass of "
        "eks.amazonaws.com/v1 and NodePools naming it) before the cutover") for r in releases]
