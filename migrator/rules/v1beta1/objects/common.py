"""What the object rooms share: the rule's name, knowledge/v1beta1.yaml, the result the runbook reads, and the names
of what is written beside a source (derived from the old names, kept unique)."""
from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml.comments import CommentedMap

from .... import knowledge
from ....edits import Edit
from ....inventory import Manifest
from ....model import Finding



RULE = "v1beta1/manifests"


FACTS = knowledge.load("v1beta1")


@dataclass
class Result:
    edits: list[Edit] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    new_addresses: list[str] = field(default_factory=list)     # Terraform addresses created
    tf_targets: list[tuple[str, str]] = field(default_factory=list)   # (root module dir, address) created
    new_files: list[str] = field(default_factory=list)         # YAML files created (raw / templates)
    old_objects: list[tuple[str, str, str]] = field(default_factory=list)   # (kind, name, where)
    removed: list[str] = field(default_factory=list)           # what cleanup removes
    tainted: set[str] = field(default_factory=set)             # Provisioners that already have spec.taints
    legacy: set[str] = field(default_factory=set)              # ... and those already marked karpenter.sh/legacy
    rendered: list[str] = field(default_factory=list)          # files local_files render that kubectl applies
    templates: list[str] = field(default_factory=list)      # new templates (Terraform renders them: no kubectl)
    rendered_deletes: list[tuple[str, str]] = field(default_factory=list)  # (kind, name) of their removed objects


def _scope(m: Manifest) -> str:
    return posixpath.dirname(m.tf_path or m.path)


def _name_key(m: Manifest, name: Any) -> str:
    return m.masked.unmask(str(name)) if name is not None else ""


def derive_name(old: str, kind: str, kind_of_old: str, file: bool = False) -> str:
    rules = FACTS["naming"][kind]
    for a, b in rules["replace"]:
        if a in old:
            return old.replace(a, b)
    suffix = rules["suffix"]["file" if file else "label"]
    return old + suffix


def _unique(name: str, taken: set[str]) -> str:
    if name not in taken:
        return name
    i = 2
    while f"{name}{i}" in taken:
        i += 1
    return f"{name}{i}"


def _reorder_spec(spec: CommentedMap) -> CommentedMap:
    order = FACTS["ec2nodeclass"]["order"]["spec"]
    return CommentedMap(sorted(spec.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order)))
