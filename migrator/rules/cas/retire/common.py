"""What the rooms of Cluster Autoscaler's retirement share: the rule's name, its result, the cutover's mark, and
small readers and writers (replicaCount in a helm_release, an item added to a list as written)."""
from __future__ import annotations

import re

from dataclasses import dataclass, field

from ....cas import FACTS, CasInstall, set_entries
from ....edits import Edit, TextEdit, indent_at, line_end
from ....model import Finding
from ....sources import hcl as hclsrc


RULE = "cas/autoscaler"


def _scale_zero(ci: CasInstall) -> str:
    """The kubectl command that scales the chart's Deployment to zero: found by the name label the chart gives it
    (knowledge/cas.yaml `detect.app_name`, or the module's nameOverride, its row's `app_name`)."""
    name = (ci.row or {}).get("app_name") or FACTS["detect"]["app_name"]
    return f"kubectl -n {ci.namespace} scale deployment -l app.kubernetes.io/name={name} --replicas=0"


CUTOVER_MARK = "# Karpenter provisions nodes now (migrator: the move from Cluster Autoscaler, cutover)"


@dataclass
class AutoscalerResult:
    edits: list[Edit] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    scaled: list[tuple[str, str, str]] = field(default_factory=list)    # (address, namespace, replicas before)
    removed: list[str] = field(default_factory=list)                   # addresses removed (cleanup)
    targets: list[tuple[str, str]] = field(default_factory=list)       # (dir, address) for terraform -target
    deployments: list[tuple[str, str]] = field(default_factory=list)   # (namespace, name) to scale/delete by kubectl
    script_zero: list[str] = field(default_factory=list)    # commands scaling what a script installs to zero
    script_remove: list[str] = field(default_factory=list)  # commands removing it
    apps: list[str] = field(default_factory=list)                      # Argo CD Applications of Cluster Autoscaler
    kustomizations: list[str] = field(default_factory=list)            # folders whose helmCharts install it
    eksctl_sas: list[tuple[str, str]] = field(default_factory=list)     # eksctl IAM service accounts removed
    work_outside: bool = False          # Karpenter installed, no NodePool yet: the cutover waits (said on every plan)


def _replicas_tf(ci: CasInstall, text: str) -> tuple[object, tuple[int, int] | None, hclsrc.Expr | None]:
    """(replicaCount as written, span of its value, the yamlencode/jsonencode object to add it to)."""
    b = ci.block
    for n, v in set_entries(b):
        if n.literal() == "replicaCount" and v is not None:
            return v.literal(), (v.start, v.end), None
    vals = b.attr("values")
    obj = None
    for item in hclsrc.list_items(vals):
        if (found := hclsrc.encoded_object(item)) is not None:
            obj = found
            for e in obj.entries:
                if e.key == "replicaCount":
                    return e.value.literal(), (e.value.start, e.value.end), obj
    return None, None, obj


def _append_item(path: str, text: str, tup: hclsrc.Expr, item: str) -> TextEdit:
    """Add an item at the end of a list as written: on its line when the list is on one line, else on a line of its
    own at the items' indentation (with the comma the items are written with)."""
    if not tup.items:
        return TextEdit(path, tup.start, tup.end, f"[{item}]", RULE)
    last = tup.items[-1]
    if hclsrc.line_of(text, last.end) == hclsrc.line_of(text, tup.start):
        return TextEdit(path, last.end, last.end, f", {item}", RULE)
    ind = indent_at(text, last.start)
    rest = text[last.end:line_end(text, last.end)]
    comma = rest.lstrip().startswith(",")
    eol = last.end + len(rest.rstrip("\r\n"))
    nl = "\r\n" if rest.endswith("\r\n") else "\n"
    return TextEdit(path, last.end, eol, ("" if comma else ",") + text[last.end:eol] + f"{nl}{ind}{item}"
                    + ("," if comma else ""), RULE)


def _at_zero(ci: CasInstall) -> bool:
    """A Deployment of Cluster Autoscaler that its YAML already scales to zero."""
    return str((ci.obj.get("spec") or {}).get("replicas")) == "0"


def _load(text: str):
    from ....sources import yaml as yamlsrc
    try:
        return yamlsrc.load(text)
    except yamlsrc.YamlParseError:
        return None


def _is_configmap(obj, name: str) -> bool:
    return isinstance(obj, dict) and obj.get("kind") == "ConfigMap" and (obj.get("metadata") or {}).get("name") == name


def _indent_in(text: str, b: hclsrc.Block) -> str:
    """The indentation of a block's arguments (its first one's, else two spaces)."""
    first = min((e.start for e in b.attributes.values()), default=None)
    return (indent_at(text, first) if first is not None else "") or "  "


_RBAC = re.compile(r"kind:\s*(ServiceAccount|ClusterRole|Role|ClusterRoleBinding|RoleBinding)\b")
