"""Karpenter CRDs fetched by URL: a Terraform `data "http"` whose `url` names a CRD file of Karpenter's repository at
a release (`.../karpenter-provider-aws/v1.3.3/pkg/apis/crds/karpenter.sh_nodepools.yaml`, applied by a
`kubernetes_manifest` or `kubectl_manifest`), or a script or manifest applying one (`kubectl apply -f <url>`).

Those URLs own the cluster's CRDs the way CRD files kept in the repository do: the chart's own CRD release must not
be added beside them, and they must name the release the chart moves to. A URL pinned to a release is read as that
release; one that takes its release from a variable (`v${var.karpenter_version}`, `${KARPENTER_VERSION}`) follows
that variable; one on a branch (`main`) follows no release at all.
"""
from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field

_URL = re.compile(
    r"https://(?:raw\.githubusercontent\.com/aws/karpenter(?:-provider-aws)?/(?P<ref>[^/\s\"'`]+)"
    r"|github\.com/aws/karpenter(?:-provider-aws)?/(?:raw|blob)/(?P<ref2>[^/\s\"'`]+))"
    r"/(?P<dir>pkg/apis/crds|charts/karpenter-crd/templates|charts/karpenter/crds)/(?P<file>[A-Za-z0-9._-]+\.yaml)")
_VERSION = re.compile(r"^v?(\d+\.\d+\.\d+)$")
_EXTS = (".tf", ".hcl", ".yaml", ".yml", ".sh", ".bash", ".mk")
_NAMES = ("Makefile", "makefile", "GNUmakefile", "justfile", "Taskfile.yml")


@dataclass
class CrdUrl:
    path: str
    line: int
    url: str
    file: str                    # karpenter.sh_nodepools.yaml
    folder: str                  # pkg/apis/crds
    version: str | None          # the release it names (None: a variable or a branch)
    ref: str                     # as written: v1.3.3, v${var.karpenter_version}, main
    span: tuple[int, int]        # the release digits in the file (a pinned URL)
    data: str | None = None      # the Terraform data source holding it (data.http.<name>)
    users: list[str] = field(default_factory=list)    # resources applying what it fetches (-target addresses)

    @property
    def name(self) -> str:
        group, _, plural = self.file[: -len(".yaml")].partition("_")
        return f"{plural}.{group}"

    @property
    def pinned(self) -> bool:
        return self.version is not None

    @property
    def variable(self) -> bool:
        return "$" in self.ref


def _scanned(p: str) -> bool:
    return p.endswith(_EXTS) or posixpath.basename(p) in _NAMES


def crd_urls(repo, owns=lambda p: True) -> list[CrdUrl]:
    """Every Karpenter CRD URL of this root's files, outside comments."""
    return [u for u in _all(repo) if owns(u.path)]


def _all(repo) -> list[CrdUrl]:
    cached = repo.__dict__.get("_crd_urls")
    if cached is not None:
        return cached
    out: list[CrdUrl] = []
    for p in sorted(repo.files):
        if not _scanned(p):
            continue
        text = repo.text(p)
        if "karpenter" not in text or "/crds/" not in text and "karpenter-crd/templates" not in text:
            continue
        found = []
        for m in _URL.finditer(text):
            ls = text.rfind("\n", 0, m.start()) + 1
            head = text[ls:m.start()].lstrip()
            if head.startswith(("#", "//")):
                continue                        # commented out
            ref = m.group("ref") or m.group("ref2")
            key = "ref" if m.group("ref") else "ref2"
            v = _VERSION.match(ref)
            a = m.start(key) + (ref.index(v.group(1)) if v else 0)
            found.append(CrdUrl(p, text.count("\n", 0, m.start()) + 1, m.group(0), m.group("file"), m.group("dir"),
                                v.group(1) if v else None, ref, (a, a + len(v.group(1))) if v else (0, 0)))
        if found and p.endswith(".tf"):
            _terraform(repo, p, found)
        out += found
    repo.__dict__["_crd_urls"] = out
    return out


def _terraform(repo, p: str, found: list[CrdUrl]) -> None:
    """The `data "http"` each URL of a Terraform file sits in, and the resources of its folder that use it."""
    hf = repo.hcl(p)
    if hf is None:
        return
    for u in found:
        at = sum(len(ln) for ln in repo.text(p).splitlines(keepends=True)[: u.line - 1])
        b = next((b for b in hf.blocks if b.type == "data" and b.labels[:1] == ["http"] and b.start <= at < b.end),
                 None)
        if b is None or len(b.labels) < 2:
            continue
        u.data = f"data.http.{b.labels[1]}"
    want = {u.data for u in found if u.data}
    if not want:
        return
    d = posixpath.dirname(p)
    users: dict[str, list[str]] = {}
    for q in sorted(repo.files):
        if posixpath.dirname(q) != d or not q.endswith(".tf"):
            continue
        hq = repo.hcl(q)
        if hq is None:
            continue
        text = repo.text(q)
        for b in hq.blocks:
            if b.type != "resource" or len(b.labels) < 2:
                continue
            body = text[b.body_start:b.body_end]
            for w in want:
                if re.search(re.escape(w) + r"\b", body):
                    users.setdefault(w, []).append(f"{b.labels[0]}.{b.labels[1]}")
    for u in found:
        u.users = sorted(set(users.get(u.data, []))) if u.data else []
