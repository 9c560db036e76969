"""NodePools and EC2NodeClasses declared as chart values of the eks-data-addons module (knowledge/data_addons.yaml):
`karpenter_resources_helm_config = { <release> = { values = [<<-EOT ... EOT] } }` installs one release of the module's
own karpenter-resources chart per entry, and each release renders one EC2NodeClass and one NodePool. They are read
here as the chart renders them, so that the rules see the pools a cluster really runs (inventory/objects.py makes
them Manifests of container `chart_values`). Terraform expressions in the values (`${module.eks.cluster_name}`) stay
expressions (masked tokens).

Read only where the facts are established: the module's version pins a release whose templates migrator knows, the
switch is a literal true, and the input is a literal map of entries whose values are strings or heredocs. Anything
else is said (MIG-SRC-024) and nothing is synthesized.
"""
from __future__ import annotations

import copy
import re
from dataclasses import dataclass

from .. import knowledge
from ..model import Finding
from ..versions import parse_version
from ..sources import hcl as hclsrc
from ..sources import yaml as yamlsrc
from ..sources.templates import Masked, mask

FACTS = knowledge.load("data_addons")
_VERSION = re.compile(r"(\d+\.\d+(?:\.\d+)?)")


@dataclass
class Rendered:
    obj: dict
    masked: Masked
    entry: hclsrc.ObjEntry          # the release's entry in the input map
    line: int                       # the entry's first line


def is_call(b: hclsrc.Block) -> bool:
    src = b.attr("source")
    lit = src.literal() if src is not None else None
    return isinstance(lit, str) and any(lit == s or lit.startswith(s) or f"//{s}" in lit or s in lit
                                        for s in FACTS["sources"])


def _version(b: hclsrc.Block) -> str | None:
    """The module release the call pins (an exact version, or the lowest a `~>`/`>=` constraint allows)."""
    v = b.attr("version")
    lit = v.literal() if v is not None else None
    if not isinstance(lit, str):
        src = b.attr("source").literal()
        m = re.search(r"[?&]ref=v?(\d+\.\d+\.\d+)$", src or "")
        return m.group(1) if m else None
    if "<" in lit or "!" in lit:
        return None
    m = _VERSION.search(lit)
    if not m:
        return None
    return m.group(1) if m.group(1).count(".") == 2 else m.group(1) + ".0"


def render(repo, p: str, text: str, b: hclsrc.Block) -> list[Rendered]:
    """The objects each release of the call renders; what cannot be read is said on repo.findings."""
    sw, cfg = b.attr(FACTS["switch"]), b.attr(FACTS["input"])
    if cfg is None or sw is None or sw.literal() is not True:
        return []

    def say(line: int, why: str) -> None:
        repo.findings.append(Finding(
            "MIG-SRC-024", "warning", p, line,
            f"{b.address}: the NodePools and EC2NodeClasses of {FACTS['input']} are not read: {why}",
            "migrate them by hand, or pin the module to a release from "
            f"{FACTS['renders_v1_from']} to {FACTS['known_through']} and run migrator again"))

    line = hclsrc.line_of(text, cfg.start)
    version = _version(b)
    if version is None:
        say(line, "the module's version is not pinned to a release migrator can read")
        return []
    if parse_version(version) < parse_version(FACTS["renders_v1_from"]):
        say(line, f"module {version} renders them at karpenter.sh/v1beta1 (v1 from {FACTS['renders_v1_from']})")
        return []
    if parse_version(version)[:2] > parse_version(FACTS["known_through"])[:2]:
        say(line, f"module {version} is newer than the releases whose chart migrator knows "
                  f"(up to {FACTS['known_through']})")
        return []
    if cfg.kind != "object":
        say(line, f"{FACTS['input']} is an expression ({cfg.brief()}), not a map")
        return []
    out = []
    for e in cfg.entries:
        eline = hclsrc.line_of(text, e.start)
        if e.value.kind != "object":
            say(eline, f"release {e.key} is an expression, not a map")
            continue
        keys = {x.key for x in e.value.entries}
        other = sorted(keys & set(FACTS["other_chart"]))
        if other:
            say(eline, f"release {e.key} sets {', '.join(other)}: another chart than the module's own")
            continue
        values = next((x.value for x in e.value.entries if x.key == "values"), None)
        merged, masks = copy.deepcopy(FACTS["defaults"]), []
        ok = True
        for item in (values.items if values is not None and values.kind == "tuple" else []):
            src = _string(text, item)
            if src is None:
                say(eline, f"release {e.key}'s values are not a string or heredoc ({item.brief()})")
                ok = False
                break
            mk = mask(src)
            try:
                data = yamlsrc.values(mk.text)
            except yamlsrc.YamlParseError as err:
                say(eline, f"release {e.key}'s values do not parse ({err})")
                ok = False
                break
            masks.append(mk)
            _merge(merged, data if isinstance(data, dict) else {})
        if not ok or values is not None and values.kind != "tuple":
            if ok:
                say(eline, f"release {e.key}'s values are an expression ({values.brief()})")
            continue
        m = Masked(text="", tokens={k: v for mk in masks for k, v in mk.tokens.items()})
        for obj in _objects(merged):
            out.append(Rendered(obj, m, e, eline))
    return out


def _string(text: str, item: hclsrc.Expr) -> str | None:
    if item.kind == "heredoc" and item.heredoc is not None:
        h = item.heredoc
        raw = text[h.body_start:h.body_end]
        if h.trim:
            lines = raw.splitlines(keepends=True)
            ind = min((len(ln) - len(ln.lstrip(" ")) for ln in lines if ln.strip()), default=0)
            raw = "".join(ln[ind:] if ln.strip() else ln.lstrip(" ") for ln in lines)
        return raw
    if item.kind == "string" and all(not interp for interp, _ in item.parts):
        return item.literal()
    if item.kind == "string":
        return "".join(("${" + t + "}") if interp else t for interp, t in item.parts)
    return None


def _merge(base: dict, over: dict) -> None:
    """Helm's merge of a values file over the chart's: maps deep, anything else replaced (null removes)."""
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(base.get(k), dict):
            _merge(base[k], v)
        elif v is None and k in base and not isinstance(base.get(k), dict):
            base.pop(k)
        elif v is not None:
            base[k] = v


def _objects(v: dict) -> list[dict]:
    """The EC2NodeClass and NodePool the chart's templates render from merged values `v`."""
    name = v.get("name")
    cls, pool = v.get("ec2NodeClass") or {}, v.get("nodePool") or {}
    out = []
    if cls.get("enabled"):
        spec: dict = {}
        for key in ("amiFamily", "amiSelectorTerms"):
            if cls.get(key):
                spec[key] = cls[key]
        subnets, groups = cls.get("subnetSelectorTerms") or {}, cls.get("securityGroupSelectorTerms") or {}
        spec["subnetSelectorTerms"] = ([{"tags": {k: str(x) for k, x in subnets["tags"].items()}}]
                                       if isinstance(subnets.get("tags"), dict) else []) + \
            ([{"id": subnets["id"]}] if subnets.get("id") else [])
        spec["securityGroupSelectorTerms"] = [{k: groups[k]} for k in ("name", "id") if k in groups] + \
            ([{"tags": {k: str(x) for k, x in groups["tags"].items()}}] if isinstance(groups.get("tags"), dict) else [])
        spec["role"] = cls.get("karpenterRole")
        spec["tags"] = {"Name": f"karpenter-{name}"}
        spec["metadataOptions"] = dict(cls.get("metadataOptions") or {})
        if cls.get("blockDeviceMappings"):
            spec["blockDeviceMappings"] = cls["blockDeviceMappings"]
        spec["detailedMonitoring"] = cls.get("detailedMonitoring")
        for key in ("instanceStorePolicy", "userData"):
            if cls.get(key):
                spec[key] = cls[key]
        out.append({"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": name},
                    "spec": spec})
    if pool.get("enabled"):
        labels = {"NodePool": name, "NodeGroupType": name}
        for item in pool.get("labels") or []:
            if isinstance(item, dict):
                labels.update(item)         # rendered after the chart's two keys: a repeated key takes its value
        tspec: dict = {"nodeClassRef": {"name": name, "group": "karpenter.k8s.aws", "kind": "EC2NodeClass"}}
        for key in ("taints", "requirements"):
            if pool.get(key):
                tspec[key] = pool[key]
        tspec["expireAfter"] = pool.get("expireAfter")
        tspec["terminationGracePeriod"] = pool.get("terminationGracePeriod")
        dis = pool.get("disruption") or {}
        disruption = {"consolidationPolicy": dis.get("consolidationPolicy"),
                      "consolidateAfter": dis.get("consolidateAfter")}
        if dis.get("budgets"):
            disruption["budgets"] = dis["budgets"]
        limits = pool.get("limits") or {}
        out.append({"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name},
                    "spec": {"template": {"metadata": {"labels": labels}, "spec": tspec}, "disruption": disruption,
                             "limits": {"cpu": limits.get("cpu"), "memory": limits.get("memory")},
                             "weight": pool.get("weight")}})
    return out
