"""Charts rendered with `helm template`, committed and applied with kubectl (seed 003's setup).

Recognised by the chart label (`helm.sh/chart: karpenter-v0.27.3`) on the rendered objects. migrator never
edits rendered output piecemeal: it reads back the values the chart was rendered with (the settings ConfigMap of
older charts, the controller's env vars of newer ones, the service account's annotations, the controller's
resources) so they feed node-role resolution and the plan, and it builds the exact `helm template` command that
re-renders the file for the target chart, with the hop's value renames applied.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from . import knowledge
from .inventory import HelmValue, Repo, _parse_yaml_docs

FACTS = knowledge.load("rendered")
_LABEL = re.compile(r"^(" + "|".join(map(re.escape, sorted(FACTS["charts"], key=len, reverse=True)))
                    + r")-(v?\d+\.\d+\.\d+(?:-[\w.]+)?)$")


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
    for p, sf in repo.files.items():
        if not p.endswith((".yaml", ".yml")) or FACTS["chart_label"] not in sf.text:
            continue
        found: dict[str, Rendered] = {}
        for doc, m, obj in _parse_yaml_docs(repo, p, sf.text, 0, 0, p):
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
            for e in c.get("env") or []:
                if isinstance(e, dict) and e.get("name") in FACTS["env"] and "value" in e and e["value"] != "":
                    key = FACTS["env"][e["name"]]
                    _add(rc, tuple(key.split(".")), e["value"], base + e.lc.key("value")[0] + 1)
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
    sets = [f"--set {shlex.quote(_set_key(k) + '=' + str(v).replace(',', chr(92) + ','))}" for k, v in values]
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


def _spelled(version: str, like: str) -> str:
    from .rules.v1beta1.helm import format_version
    return format_version(version, like)


def rerender(repo: Repo, hop_key: str, phase: str, phases: list[str], version: str,
             owns=lambda p: True) -> RenderResult:
    """Findings and runbook commands for the rendered charts of one root: what the hop's value table makes of
    the values read back (rows of this phase and the ones before), and the `helm template` commands."""
    from .model import Finding
    helm = knowledge.load("helm")
    rows = helm["values"].get(hop_key, [])
    upto = phases.index(phase) if phase in phases else len(phases)
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
    for v in ctl.values:
        keys = v.keys
        row = next((r for r in rows if r["key"] == v.key and (r.get("phase") not in phases or
                                                              phases.index(r["phase"]) <= upto)), None)
        if row is not None and row.get("remove") and not (row.get("needed_by_alpha") and phase == phases[0]):
            changes.append(f"{v.key} dropped ({row.get('why', 'removed')})")
            continue
        if row is not None and row.get("to_nodeclass_tags"):
            changes.append(f"{v.key} dropped (moved into the EC2NodeClasses)")
            continue
        if row is not None and row.get("rename"):
            changes.append(f"{v.key} -> {row['rename']}")
            keys = tuple(row["rename"].split("."))
        values.append((keys, v.value))
    repository = helm["chart"]["repository"]
    spelled = _spelled(version, ctl.version)
    res.chart_file = ctl.path
    res.chart_command = command(ctl, "karpenter", spelled, res.namespace, repository, values)
    from .rules.v1beta1.helm import parse_version
    through = (helm.get("hops", {}).get(hop_key) or {}).get("pass_through")
    if through and parse_version(ctl.version) and parse_version(ctl.version) < parse_version(through["below"]):
        res.pass_through = _spelled(through["version"], ctl.version)
        res.pass_command = command(ctl, "karpenter", res.pass_through, res.namespace, repository,
                                   [(v.keys, v.value) for v in ctl.values])
    d = ctl.path.rsplit("/", 1)[0] + "/" if "/" in ctl.path else ""
    res.crd_file = crd.path if crd is not None else d + "karpenter-crd.yaml"
    res.crd_command = command(crd or ctl, "karpenter-crd", spelled, res.namespace, repository, [])
    nl = "\n"
    res.findings.append(Finding(
        "MIG-RND-001", "warning", ctl.path, ctl.line,
        f"karpenter chart {ctl.version} rendered with `helm template` (release {ctl.release}, namespace "
        f"{res.namespace or 'not stated in the file: set KARPENTER_NAMESPACE'}): migrator does not edit rendered output; re-render it for chart {spelled} with the "
        f"{len(ctl.values)} value(s) read back from it" + (f" ({'; '.join(changes)})" if changes else ""),
        f"{res.crd_command} > {res.crd_file}{nl}{res.chart_command} > {res.chart_file}{nl}"
        "then re-apply the edits made to the rendered file by hand (compare with `git diff`; an affinity on "
        "karpenter.sh/provisioner-name becomes karpenter.sh/nodepool), and apply both with kubectl (the runbook "
        "gives the order)"))
    return res
