"""Vendored CRDs: Karpenter's CustomResourceDefinitions kept as files in the repository (`helm show crds` output,
applied by kubectl, Flux, Argo CD or kustomize while the chart installs with CRDs skipped).

A CRD file is read as the releases whose CRD has exactly its fields (knowledge/crd_fields.yaml, fingerprints of the
field paths per release, so descriptions and formatting do not count); a set of them is stale when the chart the
root runs (or moves to) has fields or CRDs the files lack: the chart's controller then writes fields the API server
prunes, or watches kinds that do not exist. CRDs of a vendored chart (a folder with its own Chart.yaml) move with
that chart and are not read here.
"""
from __future__ import annotations

import copy
import posixpath
from dataclasses import dataclass, field

from . import knowledge
from .path import parse_version
from .sources import yaml as yamlsrc
from .sources.crd import read_crd

GROUPS = ("karpenter.sh", "karpenter.k8s.aws", "autoscaling.x-k8s.io")


@dataclass
class CrdFile:
    path: str
    line: int
    name: str
    releases: list[str]          # releases with exactly these fields ([]: none migrator knows)
    start: int = 0               # the document's span in the file (separator lines excluded)
    end: int = 0
    conversion: dict | None = None   # spec.conversion as the file has it


@dataclass
class VendoredSet:
    """The Karpenter CRD files of one folder."""
    folder: str
    files: list[CrdFile] = field(default_factory=list)

    @property
    def paths(self) -> list[str]:
        return sorted({f.path for f in self.files})


def _minor(v: str) -> tuple:
    return parse_version(v)[:2]


def vendored(repo, owns=lambda p: True) -> list[VendoredSet]:
    """Every folder of this root holding Karpenter CRD manifests (outside vendored charts)."""
    sets: dict[str, VendoredSet] = {}
    for p, files in _crd_files(repo).items():
        if owns(p):
            for f in files:
                sets.setdefault(posixpath.dirname(p), VendoredSet(posixpath.dirname(p))).files.append(f)
    return list(sets.values())


def _crd_files(repo) -> dict[str, list[CrdFile]]:
    """Every Karpenter CRD document of the repository by file, read once per run."""
    cached = repo.__dict__.get("_crd_files")
    if cached is not None:
        return cached
    facts = knowledge.load("crd_fields")
    out: dict[str, list[CrdFile]] = {}
    for p in repo.files:
        if not p.endswith((".yaml", ".yml")):
            continue
        text = repo.text(p)
        if "CustomResourceDefinition" not in text or not any(g in text for g in GROUPS):
            continue
        if _in_chart(repo, p):
            continue
        for doc in yamlsrc.split_documents(text):
            if "CustomResourceDefinition" not in doc.text or not any(g in doc.text for g in GROUPS):
                continue
            crd = read_crd(doc.text)            # a broken file is reported by the manifest reader
            if crd.kind != "CustomResourceDefinition" or not crd.name.endswith(GROUPS):
                continue
            rels = (facts["crds"].get(crd.name) or {}).get(crd.fingerprint, [])
            out.setdefault(p, []).append(CrdFile(p, doc.first_line + 1, crd.name, list(rels), doc.start, doc.end,
                                                 copy.deepcopy(crd.conversion)))
    repo.__dict__["_crd_files"] = out
    return out


def _in_chart(repo, p: str) -> bool:
    """Inside a Helm chart's folder (its own Chart.yaml above the file)."""
    d = posixpath.dirname(p)
    while True:
        if posixpath.join(d, "Chart.yaml") in repo.files or (repo.root / d / "Chart.yaml").is_file():
            return True
        if not d:
            return False
        d = posixpath.dirname(d)


def stale(vs: VendoredSet, chart: str) -> list[str]:
    """Why a vendored set is older than chart `chart` needs ([]: it serves it, or migrator cannot tell)."""
    facts = knowledge.load("crd_fields")
    known = [r for r in facts["releases"] if _minor(r) <= _minor(chart)]
    if not known:
        return []
    ref = known[-1]                          # the packaged release of the chart's minor (or the last before it)
    why = []
    names = {f.name for f in vs.files}
    for f in vs.files:
        if not f.releases:
            continue                         # fields of no known release: edited or a release migrator lacks
        if ref in f.releases or any(_minor(r) >= _minor(chart) for r in f.releases):
            continue
        newest = max(f.releases, key=parse_version)
        if parse_version(newest) < parse_version(ref):
            why.append(f"{f.name} ({f.path}) has the fields of Karpenter {_span(f.releases)}")
    for name, since in facts.get("new_crds", {}).items():
        group = home_group(name)
        if _minor(since + ".0") <= _minor(chart) and name not in names and \
                any(n.endswith("." + group) for n in names):
            why.append(f"{name} (new in {since}) is missing")
    return why


def _span(releases: list[str]) -> str:
    rs = sorted(releases, key=parse_version)
    return rs[0] if len(rs) == 1 else f"{rs[0]} to {rs[-1]}"


def version_of(vs: VendoredSet) -> str | None:
    """The releases every file of the set matches, as a span ("1.6.8 to 1.7.6"; None: they disagree or are
    unknown)."""
    common = None
    for f in vs.files:
        if not f.releases:
            return None
        common = set(f.releases) if common is None else common & set(f.releases)
    return _span(sorted(common)) if common else None


def home_group(name: str) -> str:
    """The API group whose CRDs a new CRD of `name` is kept beside: its own, or the one knowledge/crd_fields.yaml
    `new_crds_beside` names for a group Karpenter adds (autoscaling.x-k8s.io goes with karpenter.sh)."""
    return knowledge.load("crd_fields").get("new_crds_beside", {}).get(name) or name.split(".", 1)[1]


def chart_crds(version: str) -> dict[str, tuple[str, str]] | None:
    """The CRDs the controller chart `version` ships (its crds/ folder, as `helm show crds` gives them): CRD name ->
    (file name, exact text); None when migrator has no such release packaged (knowledge/crd_texts.json.xz)."""
    data = _texts()
    files = data["releases"].get(version)
    if files is None:
        return None
    out = {}
    for fname, blob in files.items():
        group, _, plural = fname[: -len(".yaml")].partition("_")
        out[f"{plural}.{group}"] = (fname, data["texts"][blob])
    return out


def verbatim(text: str) -> bool:
    """The text is exactly one of the packaged CRD files (its `---` line aside)."""
    data = _texts()
    known = data.get("_bodies")
    if known is None:
        known = data["_bodies"] = {body_of(t) for t in data["texts"].values()}
    return body_of(text) in known


def body_of(text: str) -> str:
    """A CRD file's text without its `---` line, blank lines around it and CRLF line endings."""
    return text.replace("\r\n", "\n").removeprefix("---\n").strip("\n")


_TEXTS: dict = {}


def _texts() -> dict:
    if not _TEXTS:
        import json
        import lzma
        from importlib import resources
        raw = resources.files(knowledge.__name__).joinpath("crd_texts.json.xz").read_bytes()
        _TEXTS.update(json.loads(lzma.decompress(raw)))
    return _TEXTS


def owners(repo, owns=lambda p: True) -> tuple[list[VendoredSet], list]:
    """What owns this root's Karpenter CRDs besides a CRD chart: the folders of files it keeps, the URLs of Karpenter's
    repository it fetches core CRDs from (crdurls.py). Either way no karpenter-crd release is added beside them."""
    from .crdurls import crd_urls
    return vendored(repo, owns), [u for u in crd_urls(repo, owns) if u.name.endswith(".karpenter.sh")]


def render_commands(vs: VendoredSet, version: str, namespace: str) -> list[str]:
    """Commands that render a vendored set from the karpenter-crd chart at `version`, its conversion webhook on the
    controller's Service in `namespace` (the chart's templates write it; the controller chart's crds/ name
    kube-system): one file gets the whole stream, a folder of one file per CRD gets the chart's files by name."""
    import shlex
    chart = "oci://public.ecr.aws/karpenter/karpenter-crd"
    sets = (f"--set webhook.enabled=true --set webhook.serviceName=karpenter --set webhook.serviceNamespace={namespace} "
            "--set webhook.port=8443")
    if len(vs.paths) == 1:
        return [f"helm template karpenter-crd {chart} --version {version} {sets} > {shlex.quote(vs.paths[0])}"]
    folder = shlex.quote(vs.folder or ".")
    return [f"d=\"$(mktemp -d)\" && helm template karpenter-crd {chart} --version {version} {sets} --output-dir \"$d\" "
            f"&& cp \"$d\"/karpenter-crd/templates/*.yaml {folder}/"]
