"""Karpenter in files no reader of migrator takes (knowledge/hops.yaml `unread`): a Jinja template that holds a
Karpenter object (Ansible renders it), a YAML file that runs `helm install|upgrade` of the karpenter chart in a command
(an Ansible shell task, a CI step). Asked only when a root would otherwise be "no Karpenter": such a root stands
unknown, with these files named, instead."""
from __future__ import annotations

import os
import posixpath

from .. import knowledge
from ..sources.shell import helm_calls
from .charts import _chart_name
from .repo import YAML, Repo

FACTS = knowledge.load("hops")["unread"]


def _templates(repo: Repo, root: str) -> list[str]:
    """Jinja templates under `root` that hold a Karpenter API group (read from disk: discovery does not keep them)."""
    out = []
    base = repo.root if root in ("", ".") else repo.root / root
    suffixes, skip = tuple(FACTS["template_suffixes"]), set(FACTS["skip_dirs"])
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(n for n in dirnames if n not in skip)
        for name in sorted(filenames):
            if not name.endswith(suffixes):
                continue
            full = os.path.join(dirpath, name)
            try:
                if os.path.getsize(full) > FACTS["max_bytes"]:
                    continue
                with open(full, encoding="utf-8", errors="replace") as fh:
                    text = fh.read()
            except OSError:
                continue
            if any(g in text for g in FACTS["api_groups"]):
                out.append(posixpath.relpath(full.replace(os.sep, "/"), repo.root.as_posix()))
    return out


def _helm_commands(repo: Repo, root: str) -> list[str]:
    """YAML files under `root` whose commands install the karpenter chart with the helm CLI, at the command's line."""
    out = []
    for p in repo.containing("karpenter", YAML):
        if root not in ("", ".") and not p.startswith(root.rstrip("/") + "/"):
            continue
        text = repo.text(p)
        if "helm" not in text:
            continue
        for call in helm_calls(p, text):
            if _chart_name(call.chart) == "karpenter":
                out.append(f"{p}:{call.line}")
                break
    return out


def files(repo: Repo, root: str) -> list[str]:
    """The files (with a line where one is known) under `root` that hold Karpenter where no reader looks."""
    return _helm_commands(repo, root) + _templates(repo, root)
