"""Dependency cycles in a Terraform module, checked on what a plan would write.

Terraform refuses a configuration whose blocks depend on each other in a circle ("Cycle: ..." from `terraform
validate`), and a block that references itself ("Self-referential block"). The graph: one node per resource, data
source, local and output, an edge for every reference in its body (Terraform's own granularity for them: a resource
waits for everything its body reads). A module call is only checked for referencing itself: Terraform plans a
module's inputs and outputs one by one (module.karpenter reading module.eks.cluster_name while module.eks maps
module.karpenter's node role in aws-auth is valid), and which output reads which input is the module's own
business, so a cycle through modules is not judged here (migrator avoids writing one: a discovery tag takes the
value the cluster's name comes from, never the cluster's output). A cycle the files did not have before the plan is
the plan's: its Terraform changes are not written.
"""
from __future__ import annotations

import posixpath
import re

from .sources import hcl as hclsrc

_STRING = re.compile(r'"(?:[^"\\$]|\\.|\$(?!\{))*"')       # a string literal without interpolation
_REF = re.compile(r"(?<![\w.\-\"])([A-Za-z_][\w-]*)\.([A-Za-z_][\w-]*)(?:\.([A-Za-z_][\w-]*))?")


def _nodes(files: dict[str, str]) -> dict[str, str]:
    """node -> the source text it reads, for every top-level block of a module's files."""
    out: dict[str, str] = {}
    for path, text in files.items():
        try:
            f = hclsrc.parse(text)
        except Exception:           # noqa: BLE001 - a file that does not parse is reported by its own check
            continue
        for b in f.blocks:
            body = text[b.body_start:b.body_end]
            if b.type == "module" and b.labels:
                out[f"module.{b.labels[0]}"] = body
            elif b.type == "resource" and len(b.labels) > 1:
                out[f"{b.labels[0]}.{b.labels[1]}"] = body
            elif b.type == "data" and len(b.labels) > 1:
                out[f"data.{b.labels[0]}.{b.labels[1]}"] = body
            elif b.type == "locals":
                for name, a in b.attributes.items():
                    out[f"local.{name}"] = text[a.start:a.end]
            elif b.type == "output" and b.labels:
                out[f"output.{b.labels[0]}"] = body
    return out


def references(body: str, names) -> set[str]:
    """The addresses among `names` (`aws_iam_role.x`, `data.t.y`, `module.z`, `local.w`) a block's text reads."""
    out: set[str] = set()
    for m in _REF.finditer(_STRING.sub('""', body)):
        a, b, c = m.group(1), m.group(2), m.group(3)
        cand = next((x for x in ((f"data.{b}.{c}" if a == "data" and c else None), f"{a}.{b}") if x and x in names),
                    None)
        if cand:
            out.add(cand)
    return out


def _edges(nodes: dict[str, str]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {n: set() for n in nodes}
    for n, body in nodes.items():
        for cand in references(body, nodes):
            if (n.startswith("module.") or cand.startswith("module.")) and cand != n:
                continue            # through a module: planned input by input, not judged here
            graph[n].add(cand)
    return graph


def cycles(files: dict[str, str]) -> list[list[str]]:
    """The dependency cycles among a module's blocks (each as its nodes; a self-reference is a cycle of one)."""
    graph = _edges(_nodes(files))
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def strong(v: str) -> None:                     # Tarjan, iterative enough for module-sized graphs
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in graph[v]:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


def new_cycles(repo, changes) -> dict[str, list[list[str]]]:
    """Per Terraform module directory the plan changes: the cycles its new files have and its old ones had not."""
    dirs = sorted({posixpath.dirname(c.path) for c in changes if c.path.endswith(hclsrc.HCL_FILES)
                   and not c.path.endswith(".hcl")})
    out: dict[str, list[list[str]]] = {}
    for d in dirs:
        old = {p: repo.files[p].text for p in repo.files
               if posixpath.dirname(p) == d and p.endswith((".tf", ".tofu"))}
        new = dict(old)
        for c in changes:
            if posixpath.dirname(c.path) == d and c.path.endswith((".tf", ".tofu")):
                if c.new is None:
                    new.pop(c.path, None)
                else:
                    new[c.path] = c.new
        before = {tuple(x) for x in cycles(old)}
        added = [x for x in cycles(new) if tuple(x) not in before]
        if added:
            out[d] = added
    return out
