"""The pools an AWS CDK app or a Pulumi program declares (EKS Blueprints' `nodePoolSpec` / `ec2NodeClassSpec`,
cdk-eks-karpenter's addNodePool / addEC2NodeClass, a manifest of Karpenter's kinds written in the code), read as text
to say, when a cluster moves to EKS Auto Mode, what a team must write by hand: migrator edits no programs.

A spec is read where it is written: the object literal after the prop or the call, or the `const` the prop names (in
any source file of the program). Only those object literals are searched for requirement keys and EC2NodeClass
settings, so an unrelated `userData` elsewhere in the code is never taken for the class's.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .. import knowledge
from ..model import Finding
from .programs import FACTS, Program, _sources
from .repo import Repo


@dataclass
class PoolMention:
    path: str
    line: int
    kind: str                   # NodePool | EC2NodeClass | Provisioner | AWSNodeTemplate
    body: tuple[str, int, int] | None = None    # (file, start, end) of the spec's object literal, where it is read


def pool_mentions(repo: Repo, d: str) -> list[PoolMention]:
    """Where the program in folder `d` declares Karpenter's pools (knowledge/programs.yaml `pools`), each with the
    object literal of its spec where it can be found (once per folder and run)."""
    cache = repo.__dict__.setdefault("_program_pools", {})
    if d in cache:
        return cache[d]
    sources = dict(_sources(repo, d))
    found: dict[tuple, PoolMention] = {}
    for p, text in sources.items():
        for row in FACTS["pools"]:
            for m in re.finditer(row["pattern"], text):
                kind = row["kind"] or m.group("kind")
                key = (p, _line(text, m.start()), kind)
                if key not in found:
                    found[key] = PoolMention(*key, body=_spec_body(sources, p, text, m) if row["kind"] else None)
    cache[d] = sorted(found.values(), key=lambda f: (f.path, f.line, f.kind))
    return cache[d]


_IDENT = r"[A-Za-z_$][\w$]*"


def _spec_body(sources: dict[str, str], p: str, text: str, m: re.Match) -> tuple[str, int, int] | None:
    """The object literal of a spec: `{...}` right after the prop's colon or the call's parenthesis
    (`nodePoolSpec: {`, `.addNodePool('id', {`), after a typed declaration (`const nodePoolSpec: NodePoolV1Spec = {`),
    else the declaration of the identifier given (`nodePoolSpec: webPool`, or the shorthand `nodePoolSpec,`) in this
    file or another of the program's."""
    at = m.end() - 1                                 # the pattern's last character: `:` `,` `}` `)` or `(`
    tail = text[at:]
    lit = re.match(r"[:(]\s*(?:['\"][^'\"\n]*['\"]\s*,\s*)?\{", tail)
    if lit is None and re.search(r"\b(?:const|let|var)\s+$", text[:m.start()]):
        lit = re.match(r":[^=;{}\n]*=\s*\{", tail)
    if lit is not None:
        start = at + lit.end() - 1
        end = _closing(text, start)
        return (p, start, end) if end is not None else None
    ident = re.match(rf":\s*({_IDENT})\s*[,}})\n]", tail)
    word = re.match(r"\w+", m.group(0))                # the shorthand `nodePoolSpec,` names its own const
    name = ident.group(1) if ident else word.group(0) if word and tail[:1] in (",", "}", ")") else None
    if name is None:
        return None
    decl = re.compile(rf"\b(?:const|let|var)\s+{re.escape(name)}\b[^=;]*=\s*\{{")
    for q in sorted(sources, key=lambda q: q != p):           # this file first, then the program's others
        d = decl.search(sources[q])
        if d is not None:
            end = _closing(sources[q], d.end() - 1)
            return (q, d.end() - 1, end) if end is not None else None
    return None


def _closing(text: str, start: int) -> int | None:
    """The offset just past the `}` that closes the `{` at `start` (strings, template literals and comments
    skipped); None when it never closes."""
    depth, i, n = 0, start, len(text)
    while i < n:
        c = text[i]
        if c in "'\"`":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        if text.startswith("//", i) or (c == "#" and text[i - 1:i] in ("", "\n", " ")):
            i = text.find("\n", i)
            i = n if i < 0 else i
            continue
        if text.startswith("/*", i):
            k = text.find("*/", i + 2)
            i = n if k < 0 else k + 2
            continue
        if c in "{[(":
            depth += 1
        elif c in "}])":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return None


def auto_mode_findings(repo: Repo, prog: Program) -> list[Finding]:
    """Moving to EKS Auto Mode: the pools a program declares, said once per program with what a team must write by
    hand: the requirement keys to rename, the root volume, the EC2NodeClass settings Auto Mode does not carry and
    those that keep a pool on Karpenter (MIG-AUTO-062)."""
    mentions = pool_mentions(repo, prog.dir)
    if not mentions:
        return []
    auto = knowledge.load("auto_mode")
    labels, nodeclass = auto["node_pool"]["labels"], auto["node_class"]
    sources = dict(_sources(repo, prog.dir))
    where = "; ".join(f"{k} at " + ", ".join(ls) for k, ls in _by_kind(mentions).items())
    bodies = sorted({m.body for m in mentions if m.body is not None})
    said = []
    renames = _found(sources, bodies, r"karpenter\.k8s\.aws/(?!v\d)[\w.-]+")      # (never an API version)
    if renames:
        said.append("requirement and label keys to rename: " + ", ".join(
            f"{k} ({at}) → {labels[k]}" if k in labels else f"{k} ({at}): no Auto Mode key, not carried"
            for k, at in renames))
    class_bodies = sorted({m.body for m in mentions if m.body is not None and m.kind in ("EC2NodeClass",
                                                                                           "AWSNodeTemplate")})
    volumes = _found(sources, class_bodies, r"(?<![\w$.])[\"']?blockDeviceMappings[\"']?\s*[:=]")
    if volumes:
        said.append(f"blockDeviceMappings ({volumes[0][1]}): the root volume becomes the NodeClass's ephemeralStorage "
                    f"({', '.join(sorted(set(nodeclass['ephemeral_storage'].values())))}); other volumes are not "
                    "carried")
    fields = [f for f in nodeclass["dropped"] if f not in FACTS["program_generic_fields"]]
    dropped = _found(sources, class_bodies,
                     r"(?<![\w$.])[\"']?(" + "|".join(map(re.escape, fields)) + r")[\"']?\s*[:=]", group=1)
    if dropped:
        said.append("EC2NodeClass settings Auto Mode does not carry: " + "; ".join(
            f"{f} ({at}): {nodeclass['dropped'][f][0]}" for f, at in dropped))
    blocking = sorted({f for f, _ in dropped if f in FACTS["program_blocking_fields"]})
    if blocking:
        said.append("a pool whose class sets " + " or ".join(blocking) + " stays on Karpenter (with its controller) "
                    "until that is moved out: " + "; ".join(nodeclass["blocking_fields"][f][1] for f in blocking))
    unread = [f"{m.path}:{m.line}" for m in mentions if m.body is None and m.kind in ("NodePool", "EC2NodeClass")]
    blueprints = any(re.search(FACTS["blueprints_addon"], t) for t in sources.values())
    first = mentions[0]
    return [Finding(
        "MIG-AUTO-062", "warning", first.path, first.line,
        f"the {prog.tool} program in {prog.dir} declares Karpenter's pools ({where}); migrator does not edit programs, "
        "so no Auto Mode NodeClass or NodePool is written for them" + (": " + "; ".join(said) if said else "")
        + (f"; the specs at {', '.join(unread)} are not object literals migrator can read: check them by hand"
           if unread and not bodies else ""),
        ("EKS Blueprints for CDK runs Auto Mode through " + FACTS["blueprints_auto_mode"] + ": run `cdk diff` to see "
         "whether changing the cluster provider would replace your cluster before you move; " if blueprints else "")
        + "write an Auto Mode NodeClass (eks.amazonaws.com/v1) for each EC2NodeClass and a NodePool on it for each "
        "NodePool, and keep Karpenter's pools and controller until the workloads run on the new pools (the phases of "
        "docs/hops/auto-mode.md)")]


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _by_kind(mentions: list[PoolMention]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for m in mentions:
        at = f"{m.path}:{m.line}"
        if at not in out.setdefault(m.kind, []):
            out[m.kind].append(at)
    return out


def _found(sources: dict[str, str], bodies: list[tuple[str, int, int]], pattern: str, group: int = 0
           ) -> list[tuple[str, str]]:
    """(match, `file:line` of its first occurrence) of each distinct match inside the spec bodies, in their order."""
    seen: dict[str, str] = {}
    for p, start, end in bodies:
        text = sources[p]
        for m in re.finditer(pattern, text[start:end]):
            seen.setdefault(m.group(group), f"{p}:{_line(text, start + m.start())}")
    return list(seen.items())
