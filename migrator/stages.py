"""Terraform stages: root modules of one cluster that keep separate states and read each other's outputs.

A team often splits a cluster's Terraform into stages applied one after the other: the cluster and its node groups in
one root module, the charts in another that reads the first one's outputs through `data "terraform_remote_state"`.
Two root modules are linked when one reads the state the other's backend writes: the same S3 bucket and key, GCS
bucket and prefix, azurerm container and key, HCP Terraform organization and workspace, or local state file. The
values must be written as literals (or variables and locals with one literal); a partial backend configuration
(`-backend-config` at init) links nothing.
"""
from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from .inventory import Repo
from .sources import hcl as hclsrc

# the config keys that name one state, per backend type (knowledge of Terraform's backends, not of a cluster)
_IDENTITY = {
    "s3": ("bucket", "key"),
    "gcs": ("bucket", "prefix"),
    "azurerm": ("storage_account_name", "container_name", "key"),
    "remote": ("organization", "workspaces.name"),
    "cloud": ("organization", "workspaces.name"),
    "local": ("path",),
}


@dataclass(frozen=True)
class StateLink:
    reader: str         # the folder of the Terraform that reads the state (a data source's module)
    name: str           # data.terraform_remote_state.<name>
    producer: str       # the root module whose backend writes that state
    path: str           # the file of the data source
    line: int


def _value(repo: Repo, p: str, e: hclsrc.Expr | None) -> str | None:
    if e is None:
        return None
    if e.literal() is not None:
        return str(e.literal())
    from .inventory.sites import definition_sites
    sites, _ = definition_sites(repo, p, e)
    values = {x.value for x in sites}
    return values.pop() if len(values) == 1 else None


def _entries(e: hclsrc.Expr | None) -> dict[str, hclsrc.Expr]:
    """An object's entries, nested objects flattened with dots (workspaces.name)."""
    out: dict[str, hclsrc.Expr] = {}
    for x in e.entries if e is not None and e.kind == "object" else []:
        if x.value.kind == "object":
            out.update({f"{x.key}.{k}": v for k, v in _entries(x.value).items()})
        else:
            out[x.key] = x.value
    return out


def _identity(repo: Repo, p: str, kind: str, values: dict[str, hclsrc.Expr], base: str) -> tuple | None:
    keys = _IDENTITY.get(kind)
    if keys is None:
        return None
    got = [_value(repo, p, values.get(k)) for k in keys]
    if kind == "local":
        got = [posixpath.normpath(posixpath.join(base, got[0] or "terraform.tfstate"))]
    if any(v is None or "${" in v for v in got):
        return None
    return ("remote" if kind == "cloud" else kind, *got)


def _backends(repo: Repo) -> tuple[dict[tuple, set[str]], set[str]]:
    """The state each root module's backend writes -> the root modules writing it; the folders declaring a backend."""
    got = repo.__dict__.get("_stage_backends")
    if got is not None:
        return got
    out: dict[tuple, set[str]] = {}
    declared: set[str] = set()
    for p in set(repo.tf_containing("backend")) | set(repo.tf_containing("cloud")):
        d = posixpath.dirname(p) or "."
        f = repo.hcl(p)
        for b in f.blocks if f is not None else []:
            if b.type != "terraform":
                continue
            for x in b.sub("backend") + b.sub("cloud"):
                declared.add(d)
                kind = x.labels[0] if x.type == "backend" and x.labels else x.type
                values = dict(_entries_of_block(x))
                key = _identity(repo, p, kind, values, d)
                if key is not None:
                    out.setdefault(key, set()).add(d)
    repo.__dict__["_stage_backends"] = out, declared
    return out, declared


def _writers(repo: Repo, key: tuple) -> list[str]:
    """The root modules whose backend writes a state; for a local state file, also the root module beside it that
    declares no backend (Terraform's default: terraform.tfstate in the folder it runs in)."""
    from .evaluate import is_root_module
    backends, declared = _backends(repo)
    out = set(backends.get(key, ()))
    if key[0] == "local" and posixpath.basename(key[1]) == "terraform.tfstate":
        d = posixpath.dirname(key[1]) or "."
        if d not in declared and repo.tf_in_dir(d if d != "." else "") and is_root_module(repo, d):
            out.add(d)
    return sorted(out)


def _entries_of_block(b: hclsrc.Block) -> dict[str, hclsrc.Expr]:
    out = {k: a.expr for k, a in b.attributes.items()}
    for sub in b.blocks:                # cloud { workspaces { name = ... } }
        out.update({f"{sub.type}.{k}": a.expr for k, a in sub.attributes.items()})
    return out


def links(repo: Repo) -> list[StateLink]:
    """Every terraform_remote_state data source whose state is written by one root module of the repository."""
    got = repo.__dict__.get("_stage_links")
    if got is not None:
        return got
    out: list[StateLink] = []
    for p, b in repo.blocks("data", "terraform_remote_state"):
        d = posixpath.dirname(p) or "."
        if b.attr("count") is not None or b.attr("for_each") is not None:
            continue                    # its outputs are read by instance: not one state
        kind = b.attr("backend").literal() if b.attr("backend") is not None else None
        key = _identity(repo, p, str(kind), _entries(b.attr("config")), d) if kind else None
        writers = _writers(repo, key) if key is not None else []
        if len(writers) == 1 and writers[0] != d:
            out.append(StateLink(d, b.labels[1] if len(b.labels) > 1 else "", writers[0], p,
                                 hclsrc.line_of(repo.text(p), b.start)))
    repo.__dict__["_stage_links"] = out
    return out


def module_tree(repo: Repo, d: str) -> set[str]:
    """Folder d and every folder its modules call by relative source, through their own calls."""
    out = {d}
    frontier = [d]
    while frontier:
        for t in repo.called_by(frontier.pop()) - out:
            out.add(t)
            frontier.append(t)
    return out


# what connects Terraform to its cluster: the cluster's providers, its data sources, its node groups
_CONNECTS = {"provider": ("kubernetes", "helm", "kubectl"),
             "data": ("aws_eks_cluster", "aws_eks_cluster_auth"),
             "resource": ("aws_eks_node_group", "aws_eks_addon", "aws_eks_access_entry")}


def reads_cluster(repo: Repo, link: StateLink) -> bool:
    """Does the Terraform reading the state connect to its cluster through it: a kubernetes, helm or kubectl provider,
    an aws_eks_cluster(_auth) data source or a node group of the reading folder naming data.terraform_remote_state.<name>
    (directly or through a local)? A state read for anything else (a VPC id, another cluster's endpoint for a
    bootstrap) does not make two folders one cluster."""
    from .tfgraph import code_of
    ref = re.compile(rf"\bdata\.terraform_remote_state\.{re.escape(link.name)}\b")
    blocks = [b for p in repo.tf_in_dir(link.reader if link.reader != "." else "")
              for b in (repo.hcl(p).blocks if repo.hcl(p) else [])]
    local = {n: a.expr.source for b in blocks if b.type == "locals" for n, a in b.attributes.items()}
    via: set[str] = set()
    while True:                     # the locals that read the state, directly or through other locals
        more = {n for n, src in local.items() if n not in via and (ref.search(src) or any(
            re.search(rf"\blocal\.{re.escape(v)}\b", src) for v in via))}
        if not more:
            break
        via |= more
    for b in blocks:
        if b.labels[:1] and b.labels[0] in _CONNECTS.get(b.type, ()):
            code = code_of(b)
            if ref.search(code) or any(re.search(rf"\blocal\.{re.escape(n)}\b", code) for n in via):
                return True
    return False
