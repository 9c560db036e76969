"""Atmos stacks (cloudposse): YAML files whose `components.terraform.<name>.vars` set a Terraform component's
variables. A component is the folder `components/terraform/<metadata.component or name>` (the base path
`atmos.yaml` gives, when it gives one). Every stack that sets a variable of a component is one place its value is
written: read and edited there, as a tfvars file would be.
"""
from __future__ import annotations

import posixpath
from typing import Iterator

from ruamel.yaml.comments import CommentedMap

from ..sources import hcl as hclsrc
from .documents import _parse_yaml_docs, scalar_at
from .repo import Repo

DEFAULT_BASE = "components/terraform"


def _base(repo: Repo) -> str:
    """components.terraform.base_path of atmos.yaml, else Atmos' default."""
    for p in ("atmos.yaml", "atmos.yml"):
        if p in repo.files:
            for _doc, _m, obj in _parse_yaml_docs(repo, p, repo.text(p), 0, 0, p):
                base = (((obj or {}).get("components") or {}).get("terraform") or {}).get("base_path") \
                    if isinstance(obj, dict) else None
                if isinstance(base, str) and base:
                    return posixpath.normpath(base.lstrip("./") or ".")
    return DEFAULT_BASE


def stacks(repo: Repo) -> list[tuple[str, object, object, str, CommentedMap]]:
    """(path, doc, masked, component folder, vars) of every component section of every stack, once per run."""
    got = getattr(repo, "_atmos", None)
    if got is not None:
        return got
    got = []
    base = None
    for p in repo.yaml_containing("components:"):
        sf = repo.files[p]
        if "vars:" not in sf.text or "terraform:" not in sf.text:
            continue
        for doc, m, obj in _parse_yaml_docs(repo, p, sf.text, 0, 0, p, gotmpl=True):
            tf = ((obj.get("components") or {}).get("terraform") if isinstance(obj, dict) else None)
            for name, comp in (tf.items() if isinstance(tf, dict) else []):
                if not isinstance(comp, CommentedMap) or not isinstance(comp.get("vars"), CommentedMap):
                    continue
                base = base if base is not None else _base(repo)
                component = ((comp.get("metadata") or {}).get("component") if isinstance(comp.get("metadata"), dict)
                             else None) or name
                got.append((p, doc, m, posixpath.join(base, str(component)), comp["vars"]))
    repo._atmos = got
    return got


def variable_sites(repo: Repo, module_dir: str, name: str) -> Iterator[tuple[str, hclsrc.Expr, str]]:
    """(stack file, the literal as an expression span, how) of every stack that sets the variable `name` of the
    component in module_dir."""
    for p, doc, _m, component, vars_ in stacks(repo):
        if component != module_dir or name not in vars_:
            continue
        got = scalar_at(repo.text(p), doc.start, doc.text, vars_, (name,))
        if got is None:
            continue
        s, e, value = got
        yield p, hclsrc.Expr("string", s, e, repo.text(p)[s:e], value=value), \
            f"vars.{name} of component {posixpath.relpath(component, _base(repo))} in the stack {p}"
