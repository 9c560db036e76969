"""Configuration: `.migrator.yaml` (or `[tool.migrator]` in `pyproject.toml`) at the repository root, then
`MIGRATOR_*` environment variables, then command-line flags; a later source wins.

Keys: `to`, `phase`, `exclude` (path globs), `node_role`, `node_roles` (cluster root -> role), `select`, `ignore`
(finding codes or prefixes), `keep_alpha_defaults`, `cluster_name` / `region` / `account_id` / `chart_version` (facts the
repository lacks), `roots` (cluster root -> {cluster_name, region, account_id, node_role, node_group_keep}), `node_group_keep` (the node group
that stays for the Karpenter controller when moving from Cluster Autoscaler), `widen_instance_types` (NodePools from node
groups require instance families and sizes instead of the exact types), `identity` (irsa | pod-identity: the controller's identity
on terraform-aws-modules karpenter v21), `docs_url` (where the docs site is published: SARIF help links). A malformed file is an error naming the file and line.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError

KEYS = {"to": str, "phase": str, "exclude": list, "node_role": str, "node_roles": dict, "select": list,
        "ignore": list, "keep_alpha_defaults": bool, "docs_url": str, "identity": str, "cluster_name": str,
        "region": str, "account_id": str, "roots": dict, "node_group_keep": str, "widen_instance_types": bool,
        "chart_version": str, "auto_mode_node_role": str}
ROOT_KEYS = ("cluster_name", "region", "account_id", "node_role", "node_group_keep", "chart_version",
             "auto_mode_node_role")
ENV = {"to": "MIGRATOR_TO", "phase": "MIGRATOR_PHASE", "exclude": "MIGRATOR_EXCLUDE", "node_role": "MIGRATOR_NODE_ROLE",
       "select": "MIGRATOR_SELECT", "ignore": "MIGRATOR_IGNORE", "keep_alpha_defaults": "MIGRATOR_KEEP_ALPHA_DEFAULTS",
       "docs_url": "MIGRATOR_DOCS_URL", "identity": "MIGRATOR_IDENTITY", "cluster_name": "MIGRATOR_CLUSTER_NAME",
       "region": "MIGRATOR_REGION", "account_id": "MIGRATOR_ACCOUNT_ID", "node_group_keep": "MIGRATOR_NODE_GROUP_KEEP",
       "widen_instance_types": "MIGRATOR_WIDEN_INSTANCE_TYPES", "auto_mode_node_role": "MIGRATOR_AUTO_MODE_NODE_ROLE"}


class ConfigError(ValueError):
    """A configuration file or variable migrator cannot use (message names the file and line)."""


@dataclass
class Config:
    values: dict[str, Any] = field(default_factory=dict)
    source: str = ""                # the file the values came from, if any

    def get(self, key: str, default=None):
        return self.values.get(key, default)


def _check(values: Any, where: str, lines: dict[str, int]) -> dict[str, Any]:
    if values is None:
        return {}
    if not isinstance(values, dict):
        raise ConfigError(f"{where}:1: the configuration must be a mapping of keys ({', '.join(KEYS)})")
    out = {}
    for k, v in values.items():
        at = f"{where}:{lines.get(k, 1)}"
        if k not in KEYS:
            raise ConfigError(f"{at}: unknown key {k!r} (known: {', '.join(KEYS)})")
        if k == "roots":
            if not isinstance(v, dict) or not all(isinstance(x, dict) and set(x) <= set(ROOT_KEYS)
                                                  and all(isinstance(y, str) for y in x.values()) for x in v.values()):
                raise ConfigError(f"{at}: roots must map a cluster root to keys among {', '.join(ROOT_KEYS)} "
                                  "(strings)")
            out[k] = {str(r).strip("/").removeprefix("./") or ".": dict(x) for r, x in v.items()}
            continue
        if not isinstance(v, KEYS[k]) or (KEYS[k] is list and not all(isinstance(x, str) for x in v)) or \
                (KEYS[k] is dict and not all(isinstance(x, str) for x in v.values())):
            raise ConfigError(f"{at}: {k} must be {KEYS[k].__name__}" + (" of strings" if KEYS[k] is not str else ""))
        out[k] = dict(v) if isinstance(v, dict) else list(v) if isinstance(v, list) else v
    return out


def load(root: Path) -> Config:
    root = root if root.is_dir() else root.parent
    for name in (".migrator.yaml", ".migrator.yml"):
        p = root / name
        if p.is_file():
            try:
                data = YAML(typ="rt").load(p.read_text(encoding="utf-8"))
            except MarkedYAMLError as e:
                mark = e.problem_mark or e.context_mark
                raise ConfigError(f"{p}:{(mark.line + 1) if mark else 1}: {e.problem or e}") from None
            lines = {k: data.lc.key(k)[0] + 1 for k in data} if hasattr(data, "lc") and isinstance(data, dict) else {}
            return Config(_check(data, str(p), lines), str(p))
    p = root / "pyproject.toml"
    if p.is_file():
        try:
            import tomllib
        except ModuleNotFoundError:         # Python 3.10
            import tomli as tomllib
        text = p.read_text(encoding="utf-8")
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"{p}: {e}") from None
        section = (data.get("tool") or {}).get("migrator")
        if section is not None:
            lines = {}
            for i, ln in enumerate(text.splitlines(), 1):
                key = ln.split("=", 1)[0].strip()
                if key in KEYS and key not in lines:
                    lines[key] = i
            return Config(_check(section, f"{p} [tool.migrator]", lines), str(p))
    return Config()


def from_env(env: dict[str, str] | None = None) -> dict[str, Any]:
    env = os.environ if env is None else env
    out: dict[str, Any] = {}
    for key, var in ENV.items():
        raw = env.get(var)
        if raw is None or raw == "":
            continue
        if KEYS[key] is list:
            out[key] = [x.strip() for x in raw.split(",") if x.strip()]
        elif KEYS[key] is bool:
            if raw.lower() not in ("1", "true", "yes", "0", "false", "no"):
                raise ConfigError(f"{var}={raw!r}: expected true or false")
            out[key] = raw.lower() in ("1", "true", "yes")
        else:
            out[key] = raw
    return out


def resolve(root: Path, flags: dict[str, Any], env: dict[str, str] | None = None) -> dict[str, Any]:
    """Effective settings: configuration file < MIGRATOR_* variables < flags (a flag left unset does not count)."""
    merged = dict(load(root).values)
    merged.update(from_env(env))
    merged.update({k: v for k, v in flags.items() if v not in (None, [], False)})
    return merged
