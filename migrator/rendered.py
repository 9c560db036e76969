"""Charts rendered with `helm template`, committed and applied with kubectl (seed 003's setup).

Recognised by the chart label (`helm.sh/chart: karpenter-v0.27.3`) on the rendered objects. migrator never
edits rendered output piecemeal: it reads back the values the chart was rendered with (the settings ConfigMap of
older charts, the controller's env vars of newer ones, the service account's annotations, the controller's
resources) so they feed node-role resolution and the plan, and it builds the exact `helm template` command that
re-renders the file for the target chart, with the hop's value renames applied.
"""
from __future__ import annotations

import posixpath
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from . import knowledge
from .inventory import HelmValue, Repo, _parse_yaml_docs
from .inventory.repo import YAML

FACTS = knowledge.load("rendered")
_LABEL = re.compile(r"^(" + "|".join(map(re.escape, sorted(FACTS["charts"], key=len, reverse=True)))
                    + r")-(v?\d+\.\d+\.\d+(?:-[\w.]+)?)$")
# a document carrying one of these charts' label: the only ones parsed (other rendered charts cost a text search)
_ONLY = re.compile(re.escape(FACTS["chart_label"]) + r"""['"]?\s*:\s*['"]?(?:"""
                   + "|".join(map(re.escape, FACTS["charts"])) + r")-v?\d")
# what every chart name above starts with (`karpenter`): the label is looked for only in the files that hold it
_CHART_WORD = posixpath.commonprefix(FACTS["charts"])


@dataclass
class Rendered:
    path: str
    chart: str                  # karpenter | karpenter-crd
    version: str                # as labelled (v0.27.3)
    line: int
    release: str = "karpenter"
    namespace: str | None = None
    values: list[HelmValue] = field(default_factory=list)


def scan(repo: Repo) -> list[Rendered]:
    cached = getattr(repo, "_rendered", None)
    if cached is not None:
        return cached
    out: list[Rendered] = []
    for p in repo.containing_both(_CHART_WORD, FACTS["chart_label"], YAML) if _CHART_WORD else \
            repo.yaml_containing(FACTS["chart_label"]):
        sf = repo.files[p]
        if not _ONLY.search(sf.text):
            continue
        found: dict[str, Rendered] = {}
        for doc, m, obj in _parse_yaml_docs(repo, p, sf.text, 0, 0, p, only=_ONLY):
            meta = obj.get("metadata") if isinstance(obj, dict) else None
            labels = meta.get("labels") if isinstance(meta, dict) else None
            if not isinstance(labels, dict):
                continue
            hit = _LABEL.match(str(labels.get(FACTS["chart_label"], "")))
            if not hit:
                continue
            chart, version = hit.group(1), hit.group(2)
            rc = found.setdefault(chart, Rendered(p, chart, version, doc.first_line + 1))
            rc.release = str(labels.get(FACTS["instance_label"], rc.release))
            if meta.get("namespace") and rc.namespace is None:
                rc.namespace = str(meta["namespace"])
            _values(rc, obj, doc.first_line)
        out.extend(found.values())
    repo._rendered = out
    return out


def _add(rc: Rendered, keys: tuple, value: Any, line: int) -> None:
    rc.values.append(HelmValue(".".join(keys), value, None, rc.path, line, keys))


def _line(node: Any, key: Any, base: int) -> int:
    try:
        return base + node.lc.key(key)[0] + 1
    except Exception:  # noqa: BLE001
        return base + 1


def _values(rc: Rendered, obj: dict, base: int) -> None:
    kind, meta = obj.get("kind"), obj.get("metadata") or {}
    if kind == "ConfigMap" and meta.get("name") == FACTS["settings_configmap"] and isinstance(obj.get("data"), dict):
        prefix = tuple(FACTS["settings_prefix"].rstrip(".").split("."))
        for k, v in obj["data"].items():
            if v not in (None, ""):
                _add(rc, prefix + tuple(str(k).split(".")), v, _line(obj["data"], k, base))
    elif kind == "ServiceAccount" and isinstance(meta.get("annotations"), dict):
        prefix = tuple(FACTS["service_account_annotations"].split("."))
        for k, v in meta["annotations"].items():
            _add(rc, prefix + (str(k),), v, _line(meta["annotations"], k, base))
    elif kind == "Deployment":
        pod = ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}
        for c in pod.get("containers") or []:
            if not isinstance(c, dict) or c.get("name") != FACTS["controller_container"]:
                continue
            gates = FACTS["feature_gates"]
            for e in c.get("env") or []:
                if not isinstance(e, dict) or "value" not in e or e["value"] in ("", None):
                    continue
                line = base + e.lc.key("value")[0] + 1
                if e.get("name") in FACTS["env"]:
                    _add(rc, tuple(FACTS["env"][e["name"]].split(".")), e["value"], line)
                elif e.get("name") == gates["env"]:
                    for item in str(e["value"]).split(","):
                        name, _, val = item.strip().partition("=")
                        if name and val.lower() in ("true", "false"):
                            key = gates["names"].get(name, name[:1].lower() + name[1:])
                            _add(rc, tuple(gates["prefix"].split(".")) + (key,), val.lower() == "true", line)
            res = c.get("resources")
            for kind_, vals in (res.items() if isinstance(res, dict) else []):
                for r, v in (vals.items() if isinstance(vals, dict) else []):
                    _add(rc, tuple(FACTS["controller_resources"].split(".")) + (kind_, r), v, _line(vals, r, base))


def paths(repo: Repo) -> set[str]:
    return {rc.path for rc in scan(repo)}


def helm_values(repo: Repo) -> list[HelmValue]:
    return [v for rc in scan(repo) if rc.chart == "karpenter" for v in rc.values]


def _set_key(keys: tuple) -> str:
    return ".".join(k.replace(".", "\\.") for k in keys)


def command(rc: Rendered, chart: str, version: str, namespace: str, repository: str,
            values: list[tuple[tuple, Any]]) -> str:
    base = FACTS["command"].format(release=shlex.quote(rc.release if chart == rc.chart else chart),
                                   repository=repository, chart=chart, version=version,
                                   namespace=shlex.quote(namespace) if namespace else '"${KARPENTER_NAMESPACE}"')
    # --set splits on commas: a value holding one keeps it escaped
    sets = [f"--set {shlex.quote(_set_key(k) + '=' + _arg(v).replace(',', chr(92) + ','))}" for k, v in values]
    return " ".join([base] + sets)


@dataclass
class RenderResult:
    edits: list = field(default_factory=list)
    findings: list = field(default_factory=list)
    charts: list[Rendered] = field(default_factory=list)
    chart_command: str = ""         # re-renders the controller chart into chart_file
    chart_file: str = ""
    crd_command: str = ""           # renders the karpenter-crd chart into crd_file
    crd_file: str = ""
    namespace: str = ""
    pass_through: str = ""          # an older chart must first go through this version (helm.yaml pass_through)
    pass_command: str = ""
    work_outside: bool = False      # the rendered chart must move to another version (work left, but no edits)


def runbook_values(res: RenderResult, name: str = "") -> dict:
    """Runbook placeholders for one phase's re-render: render[_<name>]_command / _crd_command (with the file they
    write), rendered_file and rendered_crd_file."""
    q = shlex.quote
    sfx = f"_{name}" if name else ""
    return {f"render{sfx}_command": f"{res.chart_command} > {q(res.chart_file)}" if res.chart_command else "",
            f"render{sfx}_crd_command": f"{res.crd_command} > {q(res.crd_file)}" if res.crd_command else "",
            "rendered_file": q(res.chart_file) if res.chart_file else "",
            "rendered_crd_file": q(res.crd_file) if res.crd_file else ""}


def _spelled(version: str, like: str) -> str:
    from .path import format_version
    return format_version(version, like)


def version(repo: Repo, owns=lambda p: True) -> str | None:
    """The controller chart version a root's rendered output was made from (without a v prefix)."""
    ctl = next((rc for rc in scan(repo) if rc.chart == "karpenter" and owns(rc.path)), None)
    return ctl.version.lstrip("v") if ctl is not None else None


def _arg(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def rerender(repo: Repo, rows: list[dict], target: str | None, owns=lambda p: True, through: dict | None = None,
             note: str = "") -> RenderResult:
    """Findings and runbook commands for the rendered charts of one root: `rows` (the hop's value rows that apply
    by this phase: rename / remove / to_nodeclass_tags / add) applied to the values read back, and the
    `helm template` commands for chart `target` (None: the version it was rendered with)."""
    from .model import Finding
    from .path import parse_version
    helm = knowledge.load("helm")
    res = RenderResult()
    mine = [rc for rc in scan(repo) if owns(rc.path)]
    res.charts = mine
    ctl = next((rc for rc in mine if rc.chart == "karpenter"), None)
    crd = next((rc for rc in mine if rc.chart == "karpenter-crd"), None)
    if ctl is None:
        return res
    # helm template writes the namespace into every namespaced object; without one it is not guessed
    res.namespace = ctl.namespace or ""
    values: list[tuple[tuple, Any]] = []
    changes: list[str] = []
    by_key = {r["key"]: r for r in rows}
    for v in ctl.values:
        keys = v.keys
        row = by_key.get(v.key)
        if row is not None and row.get("remove"):
            changes.append(f"{v.key} dropped ({row.get('why', 'removed')})")
            continue
        if row is not None and row.get("to_nodeclass_tags"):
            changes.append(f"{v.key} dropped (moved into the EC2NodeClasses)")
            continue
        if row is not None and row.get("rename"):
            changes.append(f"{v.key} -> {row['rename']}")
            keys = tuple(row["rename"].split("."))
        values.append((keys, v.value))
    have = {".".join(k) for k, _ in values}
    for r in rows:
        if "add" in r and r["key"] not in have:
            changes.append(f"{r['key']}={r['add']} added ({r.get('why', 'required')})")
            values.append((tuple(r["key"].split(".")), r["add"]))
    repository = helm["chart"]["repository"]
    current = ctl.version.lstrip("v")
    spelled = _spelled(target or current, ctl.version)
    res.chart_file = ctl.path
    res.chart_command = command(ctl, "karpenter", spelled, res.namespace, repository, values)
    if through and parse_version(current) and parse_version(current) < parse_version(through["below"]):
        res.pass_through = _spelled(through["version"], ctl.version)
        res.pass_command = command(ctl, "karpenter", res.pass_through, res.namespace, repository,
                                   [(v.keys, v.value) for v in ctl.values])
    d = ctl.path.rsplit("/", 1)[0] + "/" if "/" in ctl.path else ""
    res.crd_file = crd.path if crd is not None else d + "karpenter-crd.yaml"
    res.crd_command = command(crd or ctl, "karpenter-crd", spelled, res.namespace, repository, [])
    # a new chart version is work the phase waits for; value changes alone are reported, but cannot hold the
    # phase: a rendered file shows chart defaults as if they were set, so they would never read as done
    res.work_outside = target is not None and parse_version(target) != parse_version(current)
    if not (res.work_outside or changes):
        return res
    nl = "\n"
    res.findings.append(Finding(
        "MIG-RND-001", "warning", ctl.path, ctl.line,
        f"karpenter chart {ctl.version} rendered with `helm template` (release {ctl.release}, namespace "
        f"{res.namespace or 'not stated in the file: set KARPENTER_NAMESPACE'}): migrator does not edit rendered "
        f"output; re-render it for chart {spelled} with the {len(ctl.values)} value(s) read back from it"
        + (f" ({'; '.join(changes)})" if changes else ""),
        f"{res.crd_command} > {res.crd_file}{nl}{res.chart_command} > {res.chart_file}{nl}"
        "then re-apply the edits made to the rendered file by hand (compare with `git diff`"
        + (f"; {note}" if note else "") + "), and apply both with kubectl (the runbook gives the order)"))
    return res
