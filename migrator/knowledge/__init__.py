"""Migration facts as data files; code interprets them. Each file cites its sources."""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any


def _cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "migrator"


@lru_cache(maxsize=None)
def load(name: str) -> Any:
    """Load `migrator/knowledge/<name>.yaml`.

    The YAML files are the source of truth; parsing them with the pure-Python YAML loader costs a noticeable part
    of a small run, so the parsed data is also kept as JSON in the user's cache directory, keyed by the file's
    SHA-256 (a changed file is parsed again). Data that does not survive the JSON round trip is never cached."""
    text = resources.files(__package__).joinpath(f"{name}.yaml").read_text(encoding="utf-8")
    key = hashlib.sha256(text.encode()).hexdigest()[:32]
    cached = _cache_dir() / f"knowledge-{name}-{key}.json"
    try:
        return json.loads(cached.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        pass
    from ruamel.yaml import YAML
    data = YAML(typ="safe", pure=True).load(text)
    try:
        dumped = json.dumps(data)
        if json.loads(dumped) == data:
            cached.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=cached.parent, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(dumped)
            os.replace(tmp, cached)
    except (OSError, TypeError, ValueError):
        pass                # no cache (read-only home, data JSON cannot hold): parse every time
    return data


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
