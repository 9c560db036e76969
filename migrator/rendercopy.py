"""Copies of the controller chart's `helm template` output kept for review, beside an install that a chart release
makes (a Makefile renders `helm template ... | yq -s` into `manifests/` so that a chart bump shows its diff).

They carry the templates' `# Source: karpenter/templates/...` comments but not the chart label (such Makefiles strip
`helm.sh/chart` to quiet the diff), so migrator/rendered.py does not read them as an install; and the kustomization
of their folder leaves them out, so nothing of the repository applies them. They are never edited piecemeal: when the
chart moves, the copy is made again the way it was made (the Makefile target that writes it, else `helm template`).
"""
from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from . import knowledge
from .inventory import Repo, _parse_yaml_docs
from .inventory.kustomizations import deployers, flux_paths, kustomization_in, leaf_kustomizations, left_out

_FACTS = knowledge.load("rendered")
_SOURCE = re.compile(r"^# Source: (?:" + "|".join(map(re.escape, _FACTS["charts"])) + r")/templates/", re.M)
_MAKEFILES = ("Makefile", "makefile", "GNUmakefile")
_RULE = re.compile(r"^([A-Za-z0-9_./$()-]+)\s*:(?!=)")


@dataclass
class Copy:
    folder: str
    files: list[str]
    version: str                # the controller image's tag (no v)
    path: str                   # the file of the controller's Deployment
    line: int
    left_out_by: str            # the kustomization that does not apply it
    make: str | None = None     # `make -C <dir> <target>` where a Makefile target renders it


def copies(repo: Repo, owns=lambda p: True) -> list[Copy]:
    return [c for c in _all(repo) if owns(c.path)]


def _all(repo: Repo) -> list[Copy]:
    cached = repo.__dict__.get("_render_copies")
    if cached is not None:
        return cached
    from .rendered import paths as labelled
    image = knowledge.load("helm")["controller_image"]["repository"] + ":"
    out: list[Copy] = []
    rendered: dict[str, list[str]] = {}
    found: list[tuple[str, str, int]] = []
    skip = labelled(repo)
    for p in repo.yaml_containing("# Source: "):
        sf = repo.files[p]
        if p in skip or not _SOURCE.search(sf.text):
            continue
        rendered.setdefault(posixpath.dirname(p), []).append(p)
        if image not in sf.text:
            continue
        for doc, _m, obj in _parse_yaml_docs(repo, p, sf.text, 0, 0, p, only=re.compile(re.escape(image))):
            tag = _controller_tag(obj, image)
            if tag:
                found.append((p, tag, doc.first_line + 1))
                break
    for p, tag, line in sorted(found):
        folder = posixpath.dirname(p)
        k = _leaving_out(repo, p)
        if k is None:
            continue
        out.append(Copy(folder, sorted(rendered.get(folder, [p])), tag, p, line, k, _make(repo, folder)))
    repo.__dict__["_render_copies"] = out
    return out


def _controller_tag(obj, image: str) -> str | None:
    if not isinstance(obj, dict) or obj.get("kind") != "Deployment":
        return None
    pod = ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}
    for c in pod.get("containers") or []:
        ref = c.get("image") if isinstance(c, dict) and c.get("name") == _FACTS["controller_container"] else None
        if isinstance(ref, str) and ref.startswith(image):
            tag = ref[len(image):].split("@", 1)[0]
            if re.fullmatch(r"v?\d+\.\d+\.\d+(?:-[\w.]+)?", tag):
                return tag.lstrip("v")
    return None


def _leaving_out(repo: Repo, p: str) -> str | None:
    """The kustomization of the file's folder or the nearest folder above that does not build it, when nothing else
    (another kustomization, an Argo CD Application, a Flux Kustomization's path) applies it; None otherwise."""
    if leaf_kustomizations(repo, p) or any(how == "argocd" for how, _ in deployers(repo, p)):
        return None
    d = posixpath.dirname(p)
    if any(f == "" or d == f or d.startswith(f + "/") for f in flux_paths(repo)) and left_out(repo, p) is None:
        return None                 # below a Flux Kustomization's path that applies it
    while True:
        k = kustomization_in(repo, d)
        if k is not None:
            return k
        if not d:
            return None
        d = posixpath.dirname(d)


def _make(repo: Repo, folder: str) -> str | None:
    """`make -C <dir> <target>` for the Makefile target (in the copy's folder or one above) whose recipe runs
    `helm template` into that folder."""
    d = folder
    while True:
        for name in _MAKEFILES:
            mk = posixpath.join(d, name) if d else name
            if mk in repo.files:
                target = _target(repo.text(mk), posixpath.relpath(folder, d or "."))
                if target is not None:
                    return f"make -C {d or '.'} {target}"
        if not d:
            return None
        d = posixpath.dirname(d)


def _target(text: str, sub: str) -> str | None:
    """The Makefile target whose recipe runs `helm template` naming the folder `sub` (relative to the Makefile)."""
    target = None
    for line in re.sub(r"\\\r?\n", " ", text).splitlines():      # a recipe continued over lines is one command
        if not line.startswith(("\t", " ")):
            m = _RULE.match(line)
            if m:                   # a new rule (special targets like .PHONY name no recipe of ours)
                target = None if m.group(1).startswith(".") else m.group(1)
            continue
        if target and "helm template" in line and (sub == "." or sub in line):
            return target
    return None
