"""Migration facts as data files; code interprets them. Each file cites its sources."""
from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any

from ruamel.yaml import YAML


@lru_cache(maxsize=None)
def load(name: str) -> Any:
    """Load `migrator/knowledge/<name>.yaml`."""
    text = resources.files(__package__).joinpath(f"{name}.yaml").read_text(encoding="utf-8")
    return YAML(typ="safe", pure=True).load(text)


PLAIN_RELEASES = ("0.32.10", "1.0.14")     # releases packaged in the plain version folders (scripts/package_crds.py)


@lru_cache(maxsize=None)
def crd_schema(api_version: str, kind: str, release: str = "") -> dict:
    """openAPIV3Schema of a packaged CRD, e.g. ('karpenter.sh/v1beta1', 'NodePool').

    `release` picks the CRD of a given Karpenter release where several are packaged (folder `<version>@<release>`);
    the plain folder holds the version's first release (v1beta1: 0.32.10, v1: 1.0.14).
    """
    version = api_version.split("/")[-1]
    folder = f"{version}@{release}" if release and release not in PLAIN_RELEASES else version
    path = resources.files(__package__).joinpath("crds", folder, f"{kind}.json")
    doc = json.loads(path.read_text(encoding="utf-8"))
    if doc["apiVersion"] != api_version:
        raise KeyError(f"no packaged schema for {api_version} {kind}")
    return doc["schema"]
