"""Karpenter's AWS side written by hand: what goes with the controller when it is removed (part of `auto/cleanup`).

Teams that do not use the karpenter module write the controller's IAM role and policy, the node role with its
instance profile and access entry, the interruption queue with its policy and EventBridge rules as plain resources.
They are found from what certainly is Karpenter's (the controller policy, the controller release and the karpenter
module being removed, the node role the policy passes to the nodes it launches) through references among the AWS
types of knowledge/auto_mode.yaml `cleanup.handwritten` only, in the same Terraform module. A block that anything
staying reads stays (with a finding naming the reader); an attachment of a role or queue that stays stays with it.
"""
from __future__ import annotations

import posixpath
import re
from fnmatch import fnmatchcase

from ...model import Finding
from ...policies import scan_policies
from ...sources import hcl as hclsrc
from ...tfgraph import references
from . import convert

FACTS = convert.FACTS["cleanup"]["handwritten"]
TYPES = set(FACTS["types"])
OWNERS = set(FACTS["owners"])
LEAVES = set(FACTS["leaves"])
NODE_ROLE = convert.FACTS["naming"]["node_role_label"]
_ROLE_IN_ARN = re.compile(r":role/(.+)$")


def _kind(b) -> str | None:
    return b.labels[0] if b.type in ("resource", "data") and b.labels else None


def _glob(e) -> str | None:
    """A name attribute as a glob: interpolations become `*`."""
    if e is None or e.kind != "string":
        return None
    return "".join("*" if interp else text for interp, text in e.parts) if e.parts else e.value


def _passed_roles(ctx, d: str) -> list[str]:
    """The role-name patterns the Karpenter controller policies of this module pass to their nodes."""
    out = []
    for pol in scan_policies(ctx.repo):
        if not pol.is_karpenter or (posixpath.dirname(pol.path) or ".") != d:
            continue
        for st in pol.statements:
            if st.effect.lower() == "allow" and any(a.lower() == "iam:passrole" for a in st.actions):
                out += [re.sub(r"\$\{[^}]*\}", "*", m.group(1)) for r in st.resources
                        for m in [_ROLE_IN_ARN.search(r)] if m]
    return [n for n in out if n.strip("*/")]          # `role/*` names no role in particular


def _passed_refs(ctx, d: str) -> set[str]:
    """The roles the Karpenter controller policies of this module pass by reference (`aws_iam_role.x.arn`)."""
    out = set()
    for pol in scan_policies(ctx.repo):
        if not pol.is_karpenter or (posixpath.dirname(pol.path) or ".") != d:
            continue
        for st in pol.statements:
            if st.effect.lower() == "allow" and any(a.lower() == "iam:passrole" for a in st.actions):
                out |= {m.group(1) for r in st.resources for m in re.finditer(r"\b(aws_iam_role\.[\w-]+)\.", r)}
    return out


def _ec2_role(repo, p: str, b, blocks: dict) -> bool:
    """Is a role assumed by EC2 (a node role), in its own trust policy or a document it reads?"""
    body = repo.text(p)[b.body_start:b.body_end]
    docs = [blocks[d] for d in references(body, blocks) if d.startswith("data.aws_iam_policy_document.")]
    return any("ec2.amazonaws.com" in repo.text(dp)[db.body_start:db.body_end] for dp, db in [(p, b), *docs])


def _node_roles(repo, blocks: dict, names: list[str]) -> set[str]:
    """The roles of `blocks` whose name the controller policy passes (`names`, globs) and that EC2 assumes."""
    out = set()
    for a, (p, b) in blocks.items():
        if _kind(b) == "aws_iam_role":
            g = _glob(b.attr("name")) or ((_glob(b.attr("name_prefix")) or "") + "*" if b.attr("name_prefix") else None)
            if g and any(fnmatchcase(g, n) or fnmatchcase(n, g) for n in names) and _ec2_role(repo, p, b, blocks):
                out.add(a)
    return out


def node_extras(ctx, d: str) -> list[tuple[str, str, int, str, bool]]:
    """The policies attached by hand to Karpenter's node role in module folder `d` (a role the controller policy
    passes, assumed by EC2) beyond what the Auto Mode node role's own policies replace: (address, path, line,
    policy_arn as written, one plain attachment: no count or for_each)."""
    repo = ctx.repo
    names = _passed_roles(ctx, d)
    refs = _passed_refs(ctx, d)
    if not names and not refs:
        return []
    blocks: dict[str, tuple[str, object]] = {}
    for p in repo.tf_in_dir("" if d == "." else d):
        f = repo.hcl(p)
        for b in (f.blocks if f else []):
            if b.type in ("resource", "data") and b.labels:
                blocks[b.address] = (p, b)
    roles = _node_roles(repo, blocks, names) | {a for a in refs if a in blocks and _kind(blocks[a][1]) == "aws_iam_role"}
    out = []
    for a, (p, b) in sorted(blocks.items()):
        if _kind(b) != "aws_iam_role_policy_attachment":
            continue
        role = b.attr("role")
        if role is None or not (references(role.source, blocks) & roles):
            continue
        e = b.attr("policy_arn")
        arn = e.source.strip() if e is not None else ""
        each = b.attr("for_each")
        if each is not None and arn in ("each.value", "each.key"):
            # a set of ARNs written out: only those the Auto Mode node role's own policies do not replace count
            arns = re.findall(r'"(arn:[^"]+)"', each.source)
            left = [x for x in arns if x.rsplit("/", 1)[-1] not in FACTS["node_role_replaced"]]
            if arns and not left:
                continue
            arn = ", ".join(left) if arns else arn
        if arn.rstrip('"').rsplit("/", 1)[-1] in FACTS["node_role_replaced"]:
            continue
        plain = "count" not in b.attributes and each is None and "each." not in arn
        out.append((a, p, hclsrc.line_of(repo.text(p), b.start), arn, plain))
    return out


def _rendered_by(repo, path: str) -> list[tuple[str, int]]:
    """(file, line) of each policy block whose `policy` is the document at `path`, read by `templatefile()` or
    `file()` (an aws_iam_policy whose JSON lives beside it)."""
    out = []
    for kind in FACTS["policy_types"]:
        for p, b in repo.blocks("resource", kind):
            e = b.attr("policy")
            if e is not None and e.kind == "call" and e.name in ("templatefile", "file") and e.items and \
                    repo.resolve_file_arg(p, e.items[0]) == path:
                out.append((p, hclsrc.line_of(repo.text(p), b.start)))
    return out


def aws_side(ctx, going: dict[str, list]) -> tuple[dict[str, list], list[Finding]]:
    """Blocks to remove beside `going` (path -> blocks already removed: the release, the module), per path, and a
    finding for every Karpenter block that stays because something else reads it."""
    repo = ctx.repo
    dirs = {posixpath.dirname(p) or "." for p in going}
    seeds: dict[str, set[str]] = {}
    from ...roots import _module_users
    for pol in scan_policies(repo):
        if not pol.is_karpenter:
            continue
        # a policy written in HCL, or a JSON document a policy block of the repository renders (templatefile/file)
        at = [(pol.path, pol.line)] if pol.path.endswith(".tf") else _rendered_by(repo, pol.path)
        for path, line in at:
            if not ctx.owns(path):
                continue
            d = posixpath.dirname(path) or "."
            if _module_users(repo, "" if d == "." else d):
                continue                    # inside a module called by relative source: it goes with its call
            dirs.add(d)
            seeds.setdefault(d, set()).add(f"{path}:{line}")
    out: dict[str, list] = {}
    findings: list[Finding] = []
    for d in sorted(dirs):
        blocks: dict[str, tuple[str, object]] = {}
        for p in repo.tf_in_dir("" if d == "." else d):
            f = repo.hcl(p)
            for b in (f.blocks if f else []):
                if b.type in ("resource", "data", "module", "output") and b.labels:
                    blocks[b.address] = (p, b)
        gone = {b.address for p, bs in going.items() if (posixpath.dirname(p) or ".") == d for b in bs}
        start = set(gone)
        for spec in seeds.get(d, ()):
            path, line = spec.rsplit(":", 1)
            text = repo.text(path)
            at = next((a for a, (p, b) in blocks.items() if p == path and
                       hclsrc.line_of(text, b.start) <= int(line) <= hclsrc.line_of(text, b.end)), None)
            if at is not None and _kind(blocks[at][1]) in TYPES:
                start.add(at)
        nodes = _node_roles(repo, blocks, _passed_roles(ctx, d))
        start |= nodes
        if not start:
            continue
        refs = {a: references(repo.text(p)[b.body_start:b.body_end], blocks) - {a} for a, (p, b) in blocks.items()}
        readers: dict[str, set[str]] = {a: set() for a in blocks}
        for a, rs in refs.items():
            for r in rs:
                readers[r].add(a)
        # what is certainly Karpenter's reads (its roles, queue, documents), and what hangs on it (attachments,
        # profiles, access entries, targets): through these types only
        group, todo = set(start), list(start)
        while todo:
            a = todo.pop()
            hangers = readers[a] if a in start or _kind(blocks[a][1]) in OWNERS else set()
            for n in refs[a] | {h for h in hangers if _kind(blocks[h][1]) not in OWNERS | LEAVES}:
                if n not in group and _kind(blocks[n][1]) in TYPES:
                    group.add(n)
                    todo.append(n)
        group -= gone
        why: dict[str, str] = {}
        changed = True
        while changed:
            changed = False
            for a in sorted(group):
                kind = _kind(blocks[a][1])
                stays = sorted(r for r in readers[a] if r not in group and r not in gone
                               and blocks[r][1].type != "output")
                owner = None if kind in OWNERS else next(
                    (r for r in sorted(refs[a]) if r not in group and r not in gone and _kind(blocks[r][1]) in OWNERS),
                    None)
                if stays or owner:
                    group.discard(a)
                    why[a] = f"{', '.join(stays)} reads it" if stays else f"it belongs to {owner}, which stays"
                    changed = True
        for a in sorted(group):
            p, b = blocks[a]
            out.setdefault(p, []).append(b)
            if _kind(b) in ("aws_iam_instance_profile", "aws_eks_access_entry"):
                nodes |= {r for r in refs[a] if _kind(blocks[r][1]) == "aws_iam_role"}
        findings += _not_carried(repo, blocks, refs, group, nodes)
        for a in sorted(why):
            if a not in start:
                continue                    # only what is certainly Karpenter's is said
            p, b = blocks[a]
            findings.append(Finding(
                "MIG-AUTO-045", "warning", p, hclsrc.line_of(repo.text(p), b.start),
                f"{a} is Karpenter's but stays: {why[a]}",
                f"once nothing needs {a} for Karpenter, remove it by hand (with what reads it)"))
    for bs in out.values():
        bs.sort(key=lambda b: b.start)
    return out, findings


def _not_carried(repo, blocks: dict, refs: dict, group: set[str], nodes: set[str]) -> list[Finding]:
    """A policy attached to Karpenter's node role that the Auto Mode node role's own policies do not replace: its
    nodes had it, Auto Mode's nodes will not."""
    out = []
    for a in sorted(group):
        p, b = blocks[a]
        if _kind(b) != "aws_iam_role_policy_attachment" or not (refs[a] & nodes & group):
            continue
        e = b.attr("policy_arn")
        arn = e.source.strip() if e is not None else ""
        name = arn.rstrip('"').rsplit("/", 1)[-1]
        if name in FACTS["node_role_replaced"] or _carried(blocks, arn):
            continue
        note = FACTS["node_role_notes"].get(name, "")
        out.append(Finding(
            "MIG-AUTO-046", "warning", p, hclsrc.line_of(repo.text(p), b.start),
            f"{a} gives Karpenter's nodes {arn}, which the Auto Mode node role does not have" + (f" ({note})" if note
                                                                                                  else ""),
            "if workloads on the new nodes need it, attach it to the Auto Mode node role (the eks module's "
            "node_iam_role_additional_policies, or an attachment to the role migrator wrote)"))
    return out


def _carried(blocks: dict, arn: str) -> bool:
    """The Auto Mode node role already has this policy (carried at the enable phase): an eks module call of the
    folder lists it in node_iam_role_additional_policies, or it is attached to the Auto Mode node role migrator
    writes beside a hand-written cluster."""
    for a, (_, b) in blocks.items():
        if b.type == "module":
            extra = b.attr("node_iam_role_additional_policies")
            if extra is not None and arn and arn in extra.source:
                return True
        elif _kind(b) == "aws_iam_role_policy_attachment":
            pa, role = b.attr("policy_arn"), b.attr("role")
            if pa is not None and pa.source.strip() == arn and role is not None and \
                    f"aws_iam_role.{NODE_ROLE}" in references(role.source, blocks):
                return True
    return False
