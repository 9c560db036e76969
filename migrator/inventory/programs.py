"""Infrastructure written as programs (AWS CDK apps, Pulumi programs): migrator neither reads nor edits their code,
but never takes a program that installs Karpenter or Cluster Autoscaler for an empty folder. A program is found by
its project file (`cdk.json`, `Pulumi.yaml`); its source files are searched for the constructs and resources that
install either (knowledge/programs.yaml), and what was found is said with its file, line and version.
"""
from __future__ import annotations

import os
import posixpath
import re
from dataclasses import dataclass
from pathlib import Path

from .. import knowledge
from ..model import Finding
from .repo import Repo

FACTS = knowledge.load("programs")
MAX_BYTES = 1024 * 1024


@dataclass
class Program:
    tool: str                   # AWS CDK | Pulumi
    dir: str                    # the project's folder
    what: str                   # karpenter | cluster-autoscaler
    path: str
    line: int
    text: str                   # the line that installs it
    version: str | None


def _sources(repo: Repo, d: str) -> list[tuple[str, str]]:
    """(path, text) of the program's source files that name what migrator looks for (read from disk: they are not
    among the files migrator discovers)."""
    out = []
    base = repo.root / d if d != "." else repo.root
    suffixes = tuple(FACTS["source_suffixes"])
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(n for n in dirnames if n not in FACTS["skip_dirs"] and not n.startswith("."))
        for name in sorted(filenames):
            if not name.endswith(suffixes):
                continue
            p = Path(dirpath) / name
            try:
                if p.stat().st_size > MAX_BYTES:
                    continue
                text = p.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            low = text.lower()
            if "karpenter" in low or "autoscaler" in low:
                out.append((p.relative_to(repo.root).as_posix(), text))
    return out


def programs(repo: Repo) -> list[Program]:
    """Every CDK app / Pulumi program of the repository that installs Karpenter or Cluster Autoscaler (once per run)."""
    got = getattr(repo, "_programs", None)
    if got is not None:
        return got
    got = []
    markers = {posixpath.dirname(p) or ".": tool
               for p in repo.named(*{n for names in FACTS["projects"].values() for n in names})
               for tool, names in FACTS["projects"].items() if posixpath.basename(p) in names}
    apps = list(markers)
    for tool, lib in FACTS["libraries"].items():     # a library: only where no app or program is marked (an app's
        for p in repo.named(*lib["files"]):         # package.json beside or below its cdk.json is the app's own)
            d = posixpath.dirname(p) or "."
            if not any(_under(d, a) or _under(a, d) for a in apps) and re.search(lib["needs"], repo.files[p].text):
                markers[d] = tool
    for d, tool in sorted(markers.items()):
        for p, text in _sources(repo, d):
            for what, patterns in FACTS["installs"].items():
                for pat in patterns:
                    m = re.search(pat, text, re.M)
                    if m is None:
                        continue
                    line = text.count("\n", 0, m.start()) + 1
                    near = "\n".join(text.splitlines()[line - 1:line + FACTS["version_window"]])
                    v = re.search(FACTS["version"], near)
                    got.append(Program(tool, d, what, p, line, text.splitlines()[line - 1].strip(),
                                       v.group(1) if v else None))
                    break
    libs = {pr.dir for pr in got if pr.tool in FACTS["libraries"]}
    for d in libs:                      # a library's own tests construct it too: said once, where its source does
        mine = [pr for pr in got if pr.dir == d]
        src = [pr for pr in mine if not _test_file(pr.path)] or mine
        got = [pr for pr in got if pr.dir != d] + src[:1]
    repo._programs = got
    return got


def _under(d: str, top: str) -> bool:
    return top == "." or d == top or d.startswith(top + "/")


def _test_file(path: str) -> bool:
    parts = path.split("/")
    return any(p in FACTS["test_dirs"] for p in parts[:-1]) or re.search(FACTS["test_file"], parts[-1]) is not None


def report(repo: Repo) -> None:
    """Each program that installs Karpenter or Cluster Autoscaler: a finding that says so and that it is not planned."""
    for pr in programs(repo):
        name = "Karpenter" if pr.what == "karpenter" else "Cluster Autoscaler"
        lib = pr.tool in FACTS["libraries"]
        repo.findings.append(Finding(
            "MIG-SRC-015", "warning", pr.path, pr.line,
            f"the {pr.tool} {'in' if lib else 'project in'} {pr.dir} installs {name}"
            + (f" ({pr.version})" if pr.version else "") + f": `{pr.text[:120]}`; migrator does not read or edit "
            + ("a library's code" if lib else f"{pr.tool} programs") + ", so nothing is planned for it",
            ("a library installs nothing itself: release a version of it that follows the hops migrator plans for "
             "a Helm install of the same version (docs/places/programs.md), then move each app that uses it"
             if lib else
             "move it by hand along the hops migrator plans for a Helm install of the same version (docs/places/"
             "programs.md): chart values, IAM, CRDs first, then the objects")))
