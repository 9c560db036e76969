"""Moving a terraform-aws-modules karpenter module call from one major to the next, from a data row.

knowledge/karpenter_module.yaml `majors` says, per move, which inputs are renamed (one pass over the old
argument set: v20 reuses v19's node-role names for the controller role), which are removed, which outputs are
renamed, and which old values are pinned so Terraform replaces nothing. This module applies such a row to one
`module` block and to every `module.<name>.<output>` reference of the Terraform module that calls it; the hops
decide when (knowledge/hops.yaml and their rules), and add what only they know (identity, v1 permissions).
"""
from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field

from . import knowledge
from .edits import TextEdit, comments_above, indent_at, line_start
from .sources import hcl as hclsrc
from .versions import constraint, parse_version  # noqa: F401 - the module version constraints live with the versions

FACTS = knowledge.load("karpenter_module")


def is_karpenter_module(source) -> bool:
    """Is a module call's source terraform-aws-modules' karpenter module (registry address, Terragrunt's tfr://, a
    git/https source of terraform-aws-eks)? Only its source says so: a local `./modules/karpenter` is the team's own."""
    return isinstance(source, str) and bool(re.search(FACTS["source"], source.split("?")[0]))


def major_row(frm: int) -> dict | None:
    return next((r for r in FACTS["majors"] if r["from"] == frm), None)


def repin(current: str, new: str) -> str:
    """`new` written the way the call pins today: exact, `= x`, `~> major.minor`, or a `>= x, < next` range."""
    op, ver = constraint(current)
    parts = new.split(".")
    if "," in current and op == ">=":
        return f">= {'.'.join(parts[:2])}, < {int(parts[0]) + 1}.0"
    if op == "~>":
        dotted = current.split("~>", 1)[1].strip().count(".")
        return f"~> {'.'.join(parts[:dotted + 1])}"
    if op == "=":
        return f"= {new}"
    if op in (">=", ">"):
        return f"{op} {'.'.join(parts[:2])}"
    return new


@dataclass
class Move:
    """The edits of one major move of one call, and what the finding says about it."""
    edits: list = field(default_factory=list)
    said: list[str] = field(default_factory=list)          # "x -> y", "x removed (why)", "x pinned"
    output_refs: list[tuple[str, int, str, str]] = field(default_factory=list)   # (path, line, old, new)
    instance_profile_refs: list[str] = field(default_factory=list)


def _line_after(text: str, offset: int) -> int:
    i = text.find("\n", offset)
    return len(text) if i < 0 else i + 1


def realigned(text: str, path: str, b: hclsrc.Block, new_names: dict[str, str], removed: set[str],
              extras: dict[str, list[str]], rule: str) -> tuple[list, dict[str, int]]:
    """Rename attributes and re-pad `=` for every run of consecutive one-line attributes they sit in
    (terraform fmt aligns such runs; `extras` are lines inserted after an attribute). Returns the edits and
    the width used for each renamed attribute's run."""
    attrs = sorted((a for a in b.attributes.values() if a.name not in removed), key=lambda a: a.start)
    groups: list[list] = []
    for a in attrs:
        one_line = hclsrc.line_of(text, a.start) == hclsrc.line_of(text, a.end)
        if groups and one_line and groups[-1][-1][1] and \
                hclsrc.line_of(text, a.start) == hclsrc.line_of(text, groups[-1][-1][0].end) + 1:
            groups[-1].append((a, one_line))
        else:
            groups.append([(a, one_line)])
    out = []
    widths: dict[str, int] = {}
    for g in groups:
        if not any(a.name in new_names for a, _ in g):
            continue
        width = max([len(new_names.get(a.name, a.name)) for a, _ in g] +
                    [len(x) for a, _ in g for x in extras.get(a.name, [])])
        widths.update({a.name: width for a, _ in g})
        for a, one_line in g:
            eq = text.index("=", a.start)
            name = new_names.get(a.name, a.name)
            repl = name.ljust(width) + " " if one_line or len(g) > 1 else name + " "
            if text[a.start:eq] != repl:
                out.append(TextEdit(path, a.start, eq, repl, rule))
    return out, widths


def remove_attributes(text: str, path: str, attrs: list[hclsrc.Attribute], rule: str) -> list[TextEdit]:
    """Delete attributes of one block, each with the comment lines above it. Lines removed together that were a whole
    paragraph (a blank line above, a blank line or the block's end below) take the blank line above with them; an
    attribute removed from a paragraph that keeps others leaves its blank lines as they were."""
    spans = sorted((comments_above(text, line_start(text, a.start)), _line_after(text, a.end)) for a in attrs)
    merged: list[list[int]] = []
    for s0, e in spans:
        if merged and s0 <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s0, e])
    out = []
    for s0, e in merged:
        after = text[e:_line_after(text, e)].strip()
        if s0 > 0 and not text[line_start(text, s0 - 1):s0].strip() and after in ("", "}"):
            s0 = line_start(text, s0 - 1)
        out.append(TextEdit(path, s0, e, "", rule))
    return out


def insert_block(text: str, path: str, b: hclsrc.Block, comment: str, pairs: list[tuple[str, str]], nl: str,
                 rule: str) -> TextEdit:
    """`# comment` and aligned `name = value` lines at the end of a block body."""
    ind = indent_at(text, next(iter(b.attributes.values())).start) if b.attributes else "  "
    width = max(len(k) for k, _ in pairs)
    body = "".join(f"{ind}{k.ljust(width)} = {v}{nl}" for k, v in pairs)
    pos = line_start(text, b.body_end)
    return TextEdit(path, pos, pos, f"{nl}{ind}# {comment}{nl}{body}", rule, order=2)


def pins(row: dict, b: hclsrc.Block) -> list[tuple[str, str]]:
    """The old values the row pins, computed from the call's arguments."""
    present = b.attributes
    out: list[tuple[str, str]] = []
    cluster = present.get("cluster_name")
    for p in row.get("pins", []):
        if any(u in present for u in p.get("unless", [])) or p["input"] in (k for k, _ in out):
            continue
        creates = p.get("when_creates")
        if creates and present.get(creates) is not None and present[creates].expr.literal() is False:
            continue
        if "when_set" in p and p["when_set"] not in present:
            continue
        if "from_input" in p:
            out.append((p["input"], present[p["from_input"]].expr.source))
        elif "template" in p:
            if cluster is None:
                continue
            out.append((p["input"], _with_cluster(p["template"], cluster.expr)))
        else:
            out.append((p["input"], hclsrc.quote(p["value"])))
    return out


def _with_cluster(template: str, expr) -> str:
    """An HCL string of `template` whose `${cluster_name}` is the call's cluster_name: its text when it is a string
    (a literal, or a quoted template's own sequences), else an interpolation of the expression as written."""
    before, after = template.split("${cluster_name}", 1)
    lit, src = expr.literal(), expr.source.strip()
    if isinstance(lit, str):
        inner = hclsrc.quote(lit)[1:-1]
    elif expr.kind == "string" and src.startswith('"') and src.endswith('"'):
        inner = src[1:-1]
    else:
        inner = "${" + src + "}"
    return '"' + hclsrc.quote(before)[1:-1] + inner + hclsrc.quote(after)[1:-1] + '"'


def module_files(repo, where: str) -> list[str]:
    """The .tf files of the Terraform module that calls a module: the only place `module.<name>.*` is visible."""
    return repo.tf_in_dir(posixpath.dirname(where))


def output_refs(repo, module: str, where: str, names, deleted=()) -> list[tuple[str, "re.Match"]]:
    if not names:
        return []
    pat = re.compile(rf"\bmodule\.{re.escape(module)}\.(" + "|".join(map(re.escape, names)) + r")\b")
    out = []
    for p in module_files(repo, where):
        for m in pat.finditer(repo.files[p].text):
            if any(dp == p and s <= m.start() < e for dp, s, e in deleted):
                continue              # removed by this phase (e.g. settings.aws.defaultInstanceProfile)
            out.append((p, m))
    return out


def move(repo, p: str, b: hclsrc.Block, row: dict, rule: str, *, extra: list[tuple[str, str]] = (),
         comment: str = "pinned by migrator: values the old major had, so Terraform replaces nothing",
         deleted=()) -> Move:
    """Apply a `majors` row to one module call: version, removed and renamed inputs, pins and `extra` inputs (a
    hop's own, e.g. enable_v1_permissions), and renamed outputs wherever the calling module references them."""
    text = repo.text(p)
    nl = repo.files[p].newline
    res = Move()
    v = b.attr("version")
    if v is not None and v.literal():
        res.edits.append(TextEdit(p, v.start, v.end, hclsrc.quote(repin(str(v.literal()), row["version"])), rule))
    present = dict(b.attributes)
    new_names: dict[str, str] = {}
    removed = [n for n in present if n in row["removed"]]
    res.edits += remove_attributes(text, p, [present[name] for name in removed], rule)
    res.said += [f"{name} removed ({row['removed'][name]})" for name in removed]
    for name in present:
        targets = row["inputs"].get(name)
        if targets:
            new_names[name] = targets[0]
            res.said.append(f"{name} -> {', '.join(targets)}")
    extras = {name: row["inputs"][name][1:] for name in new_names if len(row["inputs"][name]) > 1}
    edits, widths = realigned(text, p, b, new_names, set(removed), extras, rule)
    res.edits.extend(edits)
    ind = indent_at(text, next(iter(b.attributes.values())).start) if b.attributes else "  "
    for name, more in extras.items():
        a = present[name]
        for x in more:
            res.edits.append(TextEdit(p, _line_after(text, a.end), _line_after(text, a.end),
                                      f"{ind}{x.ljust(widths.get(name, len(x)))} = {a.expr.source}{nl}", rule, order=1))
    statement_keys(text, p, b, row, rule, res)
    pinned = [(k, val) for k, val in pins(row, b) if k not in new_names.values()]
    keep = row.get("keep_irsa")
    if keep and keep["when"] in present and keep["input"] not in present:
        pinned.append((keep["input"], "true"))
    ip = row.get("instance_profile")
    if ip:
        res.instance_profile_refs = [f"{rp}:{hclsrc.line_of(repo.files[rp].text, m.start())}"
                                     for rp, m in output_refs(repo, b.labels[0], p, ip["outputs"], deleted)]
        if res.instance_profile_refs and ip["input"] not in present:
            pinned.append((ip["input"], "true"))
    res.said += [f"{k} = {val} pinned" for k, val in pinned]
    pairs = pinned + [x for x in extra if x[0] not in present]
    if pairs:
        res.edits.append(insert_block(text, p, b, comment, pairs, nl, rule))
    for rp, m in output_refs(repo, b.labels[0], p, list(row["outputs"])):
        new = row["outputs"][m.group(1)]
        res.edits.append(TextEdit(rp, m.start(1), m.end(1), new, rule))
        res.output_refs.append((rp, hclsrc.line_of(repo.files[rp].text, m.start()), m.group(1), new))
    return res


def statement_keys(text: str, p: str, b: hclsrc.Block, row: dict, rule: str, res: Move) -> None:
    """Keys renamed inside the objects of a list input (v21: iam_policy_statements `conditions` -> `condition`)."""
    sk = row.get("statement_keys")
    e = b.attr(sk["input"]) if sk else None
    if e is None or e.kind != "tuple":
        return
    for item in e.items:
        for ent in item.entries if item.kind == "object" else []:
            new = sk["rename"].get(ent.key)
            if new and not any(x.key == new for x in item.entries):
                q = '"' if ent.key_quoted else ""
                res.edits.append(TextEdit(p, ent.key_start, ent.key_end, f"{q}{new}{q}", rule))
                res.said.append(f"{sk['input']}[].{ent.key} -> {new}")


# -- how the node role joins the cluster today ------------------------------------------------------------
def access_entry(repo, p: str, b: hclsrc.Block) -> tuple[bool | None, str]:
    """(create_access_entry value, why) decided from the repository; (None, what to check) when it does not say.

    The node role is referenced as the module's node role output (v19 or v20 name) or by its role name."""
    facts = FACTS["access_entry"]
    name = b.labels[0]
    refs = re.compile(rf"\bmodule\.{re.escape(name)}\.(" + "|".join(facts["node_role_outputs"]) + r")\b")
    for tp in module_files(repo, p):
        f = repo.hcl(tp)
        if f is None:
            continue
        for blk in f.walk():
            for a in blk.attributes.values():
                if a.name in facts["aws_auth_attributes"] and refs.search(a.expr.source):
                    return False, (f"the node role is mapped in aws-auth ({a.name} at {tp}:"
                                   f"{hclsrc.line_of(repo.text(tp), a.start)}); an access entry would conflict")
                if a.name in facts["access_entry_attributes"] and refs.search(a.expr.source):
                    return False, (f"the node role has an access entry already ({a.name} at {tp}:"
                                   f"{hclsrc.line_of(repo.text(tp), a.start)})")
            if blk.type == "resource" and blk.labels[:1] and blk.labels[0] in facts["access_entry_resources"] and \
                    refs.search(repo.text(tp)[blk.start:blk.end]):
                return False, (f"the node role has an access entry already ({blk.address} at {tp}:"
                               f"{hclsrc.line_of(repo.text(tp), blk.start)})")
    for tp, blk in repo.blocks("module", None, "terraform-aws-modules/"):      # cluster_source names it
        src = blk.attr("source").literal() if blk.attr("source") is not None else None
        if not isinstance(src, str) or not re.search(facts["cluster_source"], src) or \
                posixpath.dirname(tp) != posixpath.dirname(p):
            continue                # only the cluster this call sits beside: never another root's
        mode = blk.attr("authentication_mode")
        v = blk.attr("version")
        where = f"{blk.address} at {tp}:{hclsrc.line_of(repo.text(tp), blk.start)}"
        if mode is not None and mode.literal() in facts["api_modes"]:
            return True, f"the cluster accepts access entries (authentication_mode = {mode.literal()}, {where})"
        if mode is not None and mode.literal() == "CONFIG_MAP":
            return False, f"the cluster authenticates with aws-auth only (authentication_mode = CONFIG_MAP, {where})"
        _, ver = constraint(str(v.literal())) if v is not None and v.literal() else ("", None)
        if ver is not None and ver[0] < facts["cluster_no_access_entries_below"]:
            return False, (f"the cluster module is v{ver[0]} ({where}): it has no access entries, the node role "
                           "joins through aws-auth")
    return None, ("check how the node role joins the cluster: `aws eks describe-cluster --name <cluster> --query "
                  "cluster.accessConfig.authenticationMode` (CONFIG_MAP: set create_access_entry = false) and "
                  "`aws eks list-access-entries --cluster-name <cluster>` (an entry for the node role already: "
                  "set create_access_entry = false)")


def irsa_document(identity: dict, module: str, name: str, oidc_arn: str, service_accounts: str, test: str) -> str:
    """The IRSA trust document (knowledge/karpenter_module.yaml identity.irsa_document) filled in."""
    return identity["irsa_document"].replace("{module}", module).replace("{name}", name) \
        .replace("{oidc_arn}", oidc_arn).replace("{service_accounts}", service_accounts).replace("{test}", test)


def configuration_dirs(repo, d: str) -> list[str]:
    """The module folders of every configuration folder `d` is part of: up to the root modules that call it by
    relative source, then down through every module those call (one provider range holds them all)."""
    from .evaluate import roots_of_dir
    roots = roots_of_dir(repo, d)
    out, frontier = list(roots), list(roots)
    while frontier:
        x = frontier.pop()
        for down in sorted(repo.called_by(x if x != "." else "")):
            if down not in out:
                out.append(down)
                frontier.append(down)
    return out


def capped_eks(repo, d: str) -> list[tuple[str, hclsrc.Block, tuple[int, ...]]]:
    """The terraform-aws-modules/eks calls of the configurations of folder `d` whose release caps the AWS provider
    below what the karpenter module v21 requires (majors row v20 -> v21 `eks_caps_provider`): (file, call, release)."""
    cap = major_row(20)["eks_caps_provider"]
    source = re.compile(knowledge.load("cas")["detect"]["eks_module_source"])
    table = knowledge.load("karpenter_module_inputs")       # the same repository's tags: its last release per major
    low, high = parse_version(cap["from"]), parse_version(cap["below"])
    out = []
    for x in configuration_dirs(repo, d):
        for p in repo.tf_in_dir(x if x != "." else ""):
            f = repo.hcl(p)
            for b in (f.blocks if f is not None else []):
                src = b.attr("source") if b.type == "module" else None
                lit = src.literal() if src is not None else None
                ver = installed(b, table) if isinstance(lit, str) and source.search(lit) else None
                if ver is not None and low <= ver < high:
                    out.append((p, b, ver))
    return out


def installed(b, table: dict) -> tuple[int, ...] | None:
    """The terraform-aws-modules release a call runs: its pinned version; a `~>` constraint's newest match (terraform
    init installs it; modules are not in the lock file), no later than the last release of its major
    (`table["last_of_major"]`, the module repository's tags); an open lower bound (`>=`) read as that bound."""
    from .versions import newest_admitted
    v = b.attr("version")
    raw = str(v.literal()) if v is not None and v.literal() else ""
    if not raw:
        return None
    op, ver = constraint(raw)
    if op != "~>" or ver is None:
        return ver
    got = newest_admitted(raw, table["newest"])
    last = table["last_of_major"].get(str(got[0]))
    return min(got, parse_version(last)) if last else got
