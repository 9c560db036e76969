"""What the chart rule's rooms share: the rule's name and hop, knowledge/helm.yaml, the result the runbook reads, and
small readers (a version, the value rows with their aliases, whether an install carries the CRDs)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field


from .... import knowledge
from ....edits import Edit
from ....inventory import ChartInstall
from ....model import Finding


RULE = "v1beta1/helm"


HOP = "v1alpha5->v1beta1"


FACTS = knowledge.load("helm")


def parse_version(v: str) -> tuple[int, ...] | None:
    m = re.fullmatch(r"v?(\d+)\.(\d+)\.(\d+)(?:[-+].*)?", v.strip())
    return tuple(int(x) for x in m.groups()) if m else None


def with_aliases(rows: list[dict]) -> list[dict]:
    """A hop's value rows, each also for the older names of its key (knowledge/helm.yaml `aliases`: `alias` says
    before which chart the name was current; a leftover of it means the same later)."""
    out = []
    for row in rows:
        out.append(row)
        out += [{**row, "key": a["key"], "alias": a["before"],
                 "why": f"{a['key']} is {row['key']} before chart {a['before']}" + (f"; {row['why']}" if row.get("why") else "")}
                for a in FACTS["aliases"] if a["same_as"] == row["key"]]
    return out


@dataclass
class HelmResult:
    edits: list[Edit] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    new_crd_release: bool = False
    crd_release_name: str = ""          # the Helm release name of the karpenter-crd release migrator adds
    namespaces: set[str] = field(default_factory=set)
    controllers: list[str] = field(default_factory=list)       # addresses
    crd_releases: list[str] = field(default_factory=list)
    pass_through: str | None = None
    kinds: set[str] = field(default_factory=set)               # terraform / flux
    refs: list[str] = field(default_factory=list)              # path:line of every chart installation
    chart_tf: list[tuple[str, str]] = field(default_factory=list)   # (root module dir, address), all releases
    crd_tf: list[tuple[str, str]] = field(default_factory=list)     # (root module dir, address), CRD releases
    kustomizations: list[str] = field(default_factory=list)    # dirs `kustomize build --enable-helm` installs from
    umbrellas: list[tuple[str, str]] = field(default_factory=list)   # (dir, name) of umbrella charts installing it
    crd_umbrellas: list[tuple[str, str]] = field(default_factory=list)   # (dir, name) of those carrying karpenter-crd
    umbrella_apps: dict[str, str] = field(default_factory=dict)   # chart -> the Argo CD Application syncing its umbrella
    helmfiles: list[tuple[str, str, str]] = field(default_factory=list)  # (helmfile, release name, chart)
    held: tuple[str, str] | None = None  # 1.x hop: (the lower chart it stops at, why) when a required value is unset


# -- helpers ------------------------------------------------------------------------------------------
def _installs_crds(ci: ChartInstall) -> bool:
    """Does a Helm-release module install the CRD chart itself (knowledge/helm_modules.yaml `crds_off` not set)?"""
    row = ci.attrs.get("module") or {}
    if not row.get("crd_version"):
        return False
    return not any(ci.block.attr(k) is not None and ci.block.attr(k).literal() is v
                   for k, v in (row.get("crds_off") or {}).items())


def _family(ci: ChartInstall) -> str:
    """The name of the add-on module (knowledge/karpenter_module.yaml family) that installs the chart."""
    from ....modmajor import FACTS as MODULE
    return MODULE[ci.family or "blueprints_addons"]["name"]


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))
