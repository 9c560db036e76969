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

import functools
import posixpath
import re

from .edits import TextEdit
from .sources import hcl as hclsrc

_STRING = re.compile(r'"(?:[^"\\$]|\\.|\$(?!\{))*"')       # a string literal without interpolation
_REF = re.compile(r"(?<![\w.\-\"])([A-Za-z_][\w-]*)\.([A-Za-z_][\w-]*)(?:\.([A-Za-z_][\w-]*))?")


def code_of(b: hclsrc.Block) -> str:
    """The expressions of a block, nested blocks' included, without its comments (a comment reads nothing)."""
    return "\n".join([a.expr.source for a in b.attributes.values()] + [code_of(x) for x in b.blocks])


def _nodes(files: dict[str, str], variables: bool = False) -> dict[str, str]:
    """node -> the source text it reads, for every top-level block of a module's files (and its variables: their
    validations read themselves, never a cycle)."""
    out: dict[str, str] = {}
    for text in files.values():
        out.update(_file_nodes(text, variables))
    return out


@functools.lru_cache(maxsize=4096)
def _file_nodes(text: str, variables: bool) -> dict[str, str]:
    """The nodes of one file's text (the same text before and after a plan, in both of its passes: read once)."""
    out: dict[str, str] = {}
    try:
        f = hclsrc.parse(text)
    except Exception:           # noqa: BLE001 - a file that does not parse is reported by its own check
        return out
    for b in f.blocks:
        if b.type == "module" and b.labels:
            out[f"module.{b.labels[0]}"] = code_of(b)
        elif b.type == "resource" and len(b.labels) > 1:
            out[f"{b.labels[0]}.{b.labels[1]}"] = code_of(b)
        elif b.type == "data" and len(b.labels) > 1:
            out[f"data.{b.labels[0]}.{b.labels[1]}"] = code_of(b)
        elif b.type == "locals":
            for name, a in b.attributes.items():
                out[f"local.{name}"] = a.expr.source
        elif b.type == "output" and b.labels:
            out[f"output.{b.labels[0]}"] = code_of(b)
        elif b.type == "variable" and b.labels and variables:
            out[f"var.{b.labels[0]}"] = code_of(b)
    return out


def references(body: str, names) -> set[str]:
    """The addresses among `names` (`aws_iam_role.x`, `data.t.y`, `module.z`, `local.w`) a block's text reads."""
    out: set[str] = set()
    for a, b, c in _candidates(body):
        # `resource.t.y` is Terraform's escape prefix for a managed resource (the same as `t.y`)
        cand = next((x for x in ((f"data.{b}.{c}" if a == "data" and c else None),
                                 (f"{b}.{c}" if a == "resource" and c else None), f"{a}.{b}") if x and x in names),
                    None)
        if cand:
            out.add(cand)
    return out


@functools.lru_cache(maxsize=16384)
def _candidates(body: str) -> tuple[tuple[str, str, str | None], ...]:
    """Every dotted name a text reads outside string literals, as (first, second, third or None)."""
    return tuple(m.groups() for m in _REF.finditer(_STRING.sub('""', body)))


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


def _module_texts(repo, changes) -> dict[str, tuple[dict[str, str], dict[str, str]]]:
    """Per Terraform module directory the plan changes: its files' texts before and after."""
    by_dir: dict[str, list] = {}
    for c in changes:
        if c.path.endswith(hclsrc.TF_CODE):
            by_dir.setdefault(posixpath.dirname(c.path), []).append(c)
    out = {}
    for d in sorted(by_dir):
        old = {p: repo.files[p].text for p in repo.in_dir(d) if p.endswith(hclsrc.TF_CODE)}
        new = dict(old)
        for c in by_dir[d]:
            if c.new is None:
                new.pop(c.path, None)
            else:
                new[c.path] = c.new
        out[d] = (old, new)
    return out


def new_cycles(repo, changes) -> dict[str, list[list[str]]]:
    """Per Terraform module directory the plan changes: the cycles its new files have and its old ones had not."""
    out: dict[str, list[list[str]]] = {}
    for d, (old, new) in _module_texts(repo, changes).items():
        before = {tuple(x) for x in cycles(old)}
        added = [x for x in cycles(new) if tuple(x) not in before]
        if added:
            out[d] = added
    return out


def new_dangling(repo, changes) -> dict[str, list[tuple[str, str]]]:
    """Per Terraform module directory the plan changes: (reader, what it reads) where a block, local or variable the
    changes remove is still read by what stays (`terraform validate`: "Reference to undeclared resource")."""
    out: dict[str, list[tuple[str, str]]] = {}
    for d, (old, new) in _module_texts(repo, changes).items():
        before, after = _nodes(old, True), _nodes(new, True)
        gone = {n for n in before if n not in after and not n.startswith("output.")}
        if not gone:
            continue
        found = sorted((n, r) for n, body in after.items() for r in references(body, gone))
        if found:
            out[d] = found
    return out


_DEPENDS = re.compile(r"^((?:[ \t]*(?:#|//)[^\n]*\n)*)([ \t]*)depends_on\s*=\s*\[([^\]]*)\][ \t]*\r?\n", re.M)


def relink(text: str, renamed: dict, dropped: set) -> str:
    """`depends_on` lists of a block's text with addresses renamed or dropped (the attribute goes when empty, with
    the comment lines above it)."""
    def name(x: str) -> str:            # `resource.kubectl_manifest.x` names kubectl_manifest.x
        return x[len("resource."):] if x.startswith("resource.") else x

    def one(mt: re.Match) -> str:
        if "#" in mt.group(3) or "//" in mt.group(3):
            return _relink_commented(mt, renamed, dropped, name)
        items = [x.strip() for x in mt.group(3).split(",") if x.strip()]
        new = [x[:len(x) - len(name(x))] + renamed.get(name(x), name(x)) for x in items if name(x) not in dropped]
        if new == items:
            return mt.group(0)
        if not new:
            return ""
        nl = "\r\n" if mt.group(0).endswith("\r\n") else "\n"
        return f"{mt.group(1)}{mt.group(2)}depends_on = [{', '.join(new)}]{nl}"
    out = _DEPENDS.sub(one, text)
    return re.sub(r"\n[ \t]*\r?\n(\s*\})\s*$", r"\n\1", out) if out != text else out


def _relink_commented(mt: re.Match, renamed: dict, dropped: set, name) -> str:
    """A `depends_on` list with comments among its items (one per line, notes and old items commented out): each item
    renamed or dropped where it is written, every line of comments kept; the attribute goes when no item is left."""
    lines = mt.group(3).split("\n")
    out, left = [], 0
    for ln in lines:
        cut = min([i for i in (ln.find("#"), ln.find("//")) if i >= 0] or [len(ln)])
        code, note = ln[:cut], ln[cut:]
        items = [x.strip() for x in code.split(",") if x.strip()]
        kept = [x[:len(x) - len(name(x))] + renamed.get(name(x), name(x)) for x in items if name(x) not in dropped]
        left += len(kept)
        if items and not kept and not note.strip():
            continue                            # a line of dropped items only
        if kept != items:
            pad = code[:len(code) - len(code.lstrip())]
            code = pad + ", ".join(kept) + ("," if code.rstrip().endswith(",") and kept else "") + \
                (" " if note and kept else "")
        out.append(code + note)
    if not left:
        return ""
    head = mt.group(0)[:mt.start(3) - mt.start(0)]
    tail = mt.group(0)[mt.end(3) - mt.start(0):]
    return head + "\n".join(out) + tail


def depends_edits(text: str, code: str, start: int, end: int, renamed: dict, dropped: set) -> list[tuple[int, int, str]]:
    """(start, end, new text) for each `depends_on` of the block at text[start:end] that names `renamed` or `dropped`
    addresses (`code`: the text with comments blanked, hcl.code_of): only its lines change. One that ends empty goes
    with the comment lines above it, and with the blank line before it when the block's `}` follows."""
    out = []
    for m in _DEPENDS.finditer(text, start, end):
        if not code[m.start(2):m.end()].strip():
            continue                            # a commented-out depends_on
        new = relink(m.group(0), renamed, dropped)
        if new == m.group(0):
            continue
        s = m.start()
        if not new and re.match(r"[ \t]*\}", text[m.end():]) and text[:s].endswith(("\n\n", "\n\r\n")):
            kept = text[:s].rstrip("\r\n")     # the line before the blank one keeps its newline
            s = len(kept) + (2 if text.startswith("\r\n", len(kept)) else 1)
        out.append((s, m.end(), new))
    return out


def unlink(repo, addresses: dict, rule: str, edits: list) -> tuple[list, dict]:
    """What else in their modules reads blocks that go (`addresses`: address -> (file, block)): a `depends_on` entry
    is dropped (its edit appended to `edits`), an output that reads them goes too (returned first); every other
    reader is returned as {its address: (file, block, the addresses it reads)} for the caller to judge."""
    dirs = {posixpath.dirname(p) or "." for p, _ in addresses.values()}
    outputs, readers = [], {}
    for d in sorted(dirs):
        for p in repo.tf_in_dir("" if d == "." else d):
            f = repo.hcl(p)
            text = repo.text(p)
            code = None
            for b in (f.blocks if f else []):
                if b.address in addresses:
                    continue
                body = text[b.start:b.end]
                if not any(a in body for a in addresses):
                    continue
                code = code if code is not None else hclsrc.code_of(text)     # comments read nothing
                hits = [a for a in addresses if re.search(r"\b" + re.escape(a) + r"\b", code[b.start:b.end])]
                if not hits:
                    continue
                if b.type == "output":
                    outputs.append((p, b))
                    continue
                fixed = relink(body, {}, set(hits))
                left = relink(code[b.start:b.end], {}, set(hits))      # what the code still reads without them
                if not any(re.search(r"\b" + re.escape(a) + r"\b", left) for a in hits):
                    edits.append(TextEdit(p, b.start, b.end, fixed, rule))
                    continue
                readers[b.address] = (p, b, hits)
    return outputs, readers
