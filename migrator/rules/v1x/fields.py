"""Fields of a root's v1 objects that no v1 CRD defines (v1beta1's `kubelet` left on a
NodePool, a taint written with a toleration's `operator`): the API server drops them when it stores the object, so
what they say has never been in effect. Said, with where v1 keeps what they were meant to do (knowledge/v1.yaml
`dropped_on_v1`); never removed or moved by migrator: putting kubelet settings where v1 reads them changes the
nodes, which is the team's decision.
"""
from __future__ import annotations

from ... import knowledge
from ...model import Finding
from ...validate import unknown_fields

HINTS = knowledge.load("v1")["dropped_on_v1"]


def _dotted(path: tuple) -> str:
    return ".".join(f"[{k}]" if isinstance(k, int) else str(k) for k in path).replace(".[", "[")


RELEASES = knowledge.load("v1")["validate_against"]     # the first v1 release and the newest: a field either defines
#                                                         (one a later minor added, `replicas`) is a v1 field


def dropped(ctx) -> list[Finding]:
    """One warning per such field of the root's v1 NodePools and EC2NodeClasses."""
    out = []
    for m in ctx.manifests:                 # the root's objects, as the plan read them
        if not isinstance(m.obj, dict) or m.kind not in HINTS \
                or not str(m.obj.get("apiVersion", "")).endswith("/v1"):
            continue
        for path in sorted(set.intersection(*(set(unknown_fields(m.obj, r)) for r in RELEASES)), key=str):
            if any(isinstance(k, str) and m.masked.has_token(k) for k in path):
                continue                    # a key written by a template action: the chart's
            shape = ".".join("[]" if isinstance(k, int) else str(k) for k in path).replace(".[]", "[]")
            row = HINTS[m.kind].get(shape)
            row = {"hint": row} if isinstance(row, str) else (row or {})
            hint, severity = row.get("hint"), "warning"
            beside = row.get("harmless_beside")
            if beside is not None and isinstance(parent := m.obj_at(path[:-1]), dict) and beside in parent:
                severity = row.get("severity", "info")      # what it meant, a v1 field beside it says
            name = (m.obj.get("metadata") or {}).get("name", "?")
            field = _dotted(path)
            out.append(Finding(
                "MIG-V1X-OBJ-001", severity, m.path, m.line_of(path),
                f"{m.kind} {m.masked.unmask(str(name))}: {field} is not a field of the v1 {m.kind} (the CRDs of "
                f"Karpenter {RELEASES[0]} to {RELEASES[-1]}): the API server drops it when it stores the object, so it has never been in "
                "effect" + (f"; {hint}" if hint else ""),
                (f"if {field} was meant to apply, move it where v1 reads it ({hint}): that changes the nodes, which "
                 "are replaced; else delete it" if hint else f"delete {field}, or find the v1 field that does what it "
                 "was meant to do")))
    return out
