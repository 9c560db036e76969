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


@lru_cache(maxsize=None)
def crd_schema(api_version: str, kind: str) -> dict:
    """openAPIV3Schema of a packaged CRD, e.g. ('karpenter.sh/v1beta1', 'NodePool')."""
    version = api_version.split("/")[-1]
    path = resources.files(__package__).joinpath("crds", version, f"{kind}.json")
    doc = json.loads(path.read_text(encoding="utf-8"))
    if doc["apiVersion"] != api_version:
        raise KeyError(f"no packaged schema for {api_version} {kind}")
    return doc["schema"]
