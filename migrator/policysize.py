"""IAM's policy size quotas, checked on what a plan leaves behind.

IAM refuses a managed policy over 6,144 characters and a role's inline policies over 10,240 together (whitespace
not counted: knowledge/iam.yaml `quotas`). The terraform-aws-modules karpenter module writes one managed controller
policy whose length grows with the cluster name (about twenty times), the region and the partition; from 21.18
it exceeds the quota in longer regions with ordinary names. Its policy per release is packaged as a template
(knowledge/iam/module/<version>.json); a call's size is the template with the call's own values put in, each
read where the root writes it (a literal, a variable's default, a local, the cluster's own name input through
`module.eks.cluster_name`, the Terraform evaluator). A value the root does not state is taken at its longest
plausible length, and the answer says which were.
"""
from __future__ import annotations

import dataclasses

import json
import posixpath
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources

from . import evaluate, knowledge
from .path import parse_version
from .sources import hcl as hclsrc

Q = knowledge.load("iam")["quotas"]
POLICY = knowledge.load("karpenter_module")["policy"]
_WS = re.compile(r"\s")


def stripped_len(text: str) -> int:
    """A policy document's size as IAM counts it: every character but whitespace."""
    return len(_WS.sub("", text))


@lru_cache(maxsize=None)
def templates() -> list[tuple[tuple[int, ...], dict]]:
    folder = resources.files("migrator.knowledge").joinpath("iam", "module")
    rows = [json.loads(f.read_text(encoding="utf-8")) for f in folder.iterdir() if f.name.endswith(".json")]
    return sorted(((parse_version(r["module"]), r) for r in rows), key=lambda t: t[0])


def template_for(version: tuple[int, ...]) -> dict | None:
    """The module's controller policy at a release (the newest packaged change at or before it)."""
    best = None
    for v, row in templates():
        if v <= tuple(version):
            best = row
    return best


def partition_of(region: str) -> dict:
    for row in Q["partitions"]:
        if region.startswith(row["prefix"]):
            return row
    return Q["default_partition"]


@dataclass
class Scope:
    """The values a module call's policy is rendered with; `assumed` names those taken at their longest."""
    cluster_name: str | None = None
    region: str | None = None
    queue_name: str | None = None           # None: the module's default from the cluster name
    node_role_arn: str | None = None        # None: the module's own node role (its default name)
    node_role_name: str | None = None
    node_role_path: str = "/"
    node_role_prefix: bool = True
    spot: bool = True
    ssm: list[str] | None = None
    statements: list[dict] = field(default_factory=list)
    assumed: list[str] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)


def render(row: dict, scope: Scope, cluster_name: str | None = None) -> str:
    """The policy JSON for a scope (`cluster_name` overrides the scope's, for the size per name length)."""
    name = cluster_name if cluster_name is not None else (scope.cluster_name or "")
    region = scope.region or Q["longest_region"]
    part = partition_of(region)
    account = "0" * Q["account_id_length"]
    queue = scope.queue_name if scope.queue_name is not None else POLICY["queue"]["default"].replace("${cluster_name}", name)
    if scope.node_role_arn is not None:
        role = scope.node_role_arn
    else:
        rname = scope.node_role_name if scope.node_role_name is not None else \
            POLICY["node_role"]["default_name"].replace("${cluster_name}", name)
        suffix = "x" * Q["name_prefix_suffix"] if scope.node_role_prefix else ""
        role = f"arn:{part['partition']}:iam::{account}:role{scope.node_role_path}{rname}{suffix}"
    doc = json.loads(row["template"])
    sts = [s for s in doc["Statement"]
           if scope.spot or s.get("Sid") not in row.get("optional", {}).get("enable_spot_termination", [])]
    doc["Statement"] = sts + scope.statements
    text = json.dumps(doc, separators=(",", ":"))
    ec2 = f"ec2.{part['dns_suffix']}"
    services = json.dumps(ec2 if ec2 == "ec2.amazonaws.com" else [ec2, "ec2.amazonaws.com"], separators=(",", ":"))
    text = text.replace('"${ec2_services}"', services)
    if scope.ssm:
        text = text.replace(json.dumps("arn:${partition}:ssm:${region}::parameter/aws/service/*"),
                            json.dumps(scope.ssm[0] if len(scope.ssm) == 1 else scope.ssm, separators=(",", ":")))
    for key, value in (("partition", part["partition"]), ("region", region), ("account_id", account),
                       ("cluster_name", name), ("queue_name", queue), ("node_role_arn", role),
                       ("dns_suffix", part["dns_suffix"])):
        text = text.replace("${" + key + "}", value)
    return text


@dataclass
class Size:
    chars: int                      # with the scope's values (the cluster name at its known value, or empty)
    per_name_char: int              # characters each character of the cluster name adds
    quota: int
    inline: bool
    known_name: bool
    assumed: list[str]

    @property
    def longest_name(self) -> int:
        """The longest cluster name that keeps the policy within its quota."""
        if self.per_name_char == 0:
            return Q["cluster_name_max"]
        return max(0, (self.quota - self.chars) // self.per_name_char)

    @property
    def over(self) -> bool | None:
        """True/False when the cluster name is known; None when it is not (see longest_name)."""
        return self.chars > self.quota if self.known_name else None


def size(row: dict, scope: Scope, inline: bool) -> Size:
    quota = Q["inline"] if inline else Q["managed"]
    if scope.cluster_name is not None:
        n = stripped_len(render(row, scope))
        k = stripped_len(render(row, scope, scope.cluster_name + "x")) - n
        return Size(n, k, quota, inline, True, scope.assumed)
    base = stripped_len(render(row, scope, ""))
    k = stripped_len(render(row, scope, "x")) - base
    return Size(base, k, quota, inline, False, scope.assumed)


# -- a module call's values ---------------------------------------------------------------------------------------

def _literal_of(repo, d: str, e: hclsrc.Expr | None, depth: int = 0):
    """A Terraform expression's value where the module states it: a literal, a variable's default, a local, a
    string template of those."""
    if e is None or depth > 4:
        return None
    lit = e.literal()
    if lit is not None and not (isinstance(lit, str) and "${" in lit):
        return lit
    if e.kind == "string" and e.parts:
        out = []
        for interp, text in e.parts:
            got = _ref(repo, d, text.strip().removeprefix("${").removesuffix("}").strip(), depth) if interp else text
            if not isinstance(got, (str, int, float)) or isinstance(got, bool):
                return None
            out.append(str(got))
        return "".join(out)
    return _ref(repo, d, e.source.strip(), depth)


def _ref(repo, d: str, src: str, depth: int):
    m = re.fullmatch(r"var\.([\w-]+)", src)
    if m:
        for p, b in repo.blocks("variable", m.group(1)):
            if (posixpath.dirname(p) or ".") == (d or "."):
                return _literal_of(repo, d, b.attr("default"), depth + 1)
    m = re.fullmatch(r"local\.([\w-]+)", src)
    if m:
        for p, b in repo.blocks("locals"):
            if (posixpath.dirname(p) or ".") == (d or ".") and m.group(1) in b.attributes:
                return _literal_of(repo, d, b.attr(m.group(1)), depth + 1)
    return None


class _Literal:
    """While on, no value is asked of the evaluator: the inputs it would have been asked for are noted instead."""
    on = False
    missed: list[str] = []


def _evaluated(repo, p: str, b, attr: str):
    if _Literal.on:
        if b.attr(attr) is not None:
            _Literal.missed.append(attr)
        return None
    e = b.attr(attr)
    if e is not None and _varies_by_caller(repo, posixpath.dirname(p), e.source):
        return None         # its instances disagree (one per caller): no one value to ask the evaluator for
    if e is not None and not evaluate.can_answer(repo, posixpath.dirname(p), e.source):
        return None         # it reads a value no evaluation has (a root variable with none, a downloaded module)
    if e is not None and _off_as_stated(repo, p, b):
        return None         # a call the files switch off: no instance to ask for
    switch = b.attr("for_each") if b.attr("for_each") is not None else b.attr("count")
    if e is not None and switch is not None and not evaluate.can_answer(repo, posixpath.dirname(p), switch.source):
        return None         # instances no evaluation can make (a remote state's map): none to ask for
    got = evaluate.values(repo, p, b, 0, attr) if e is not None else None
    if got and all(v == got[0] for v in got) and not isinstance(got[0], dict) and not evaluate.unknown(got[0]):
        return got[0]
    return None


def _off_as_stated(repo, p: str, b) -> bool:
    from .inventory.terraform import off_as_stated
    return (b.attr("count") is not None or b.attr("for_each") is not None) and off_as_stated(repo, p, b)


_REFS = re.compile(r"\b(var|local)\.([A-Za-z_][\w-]*)|\bmodule\.([\w-]+)\.([\w-]+)")


def _varies_by_caller(repo, d: str, source: str, depth: int = 0) -> bool:
    """Does an expression of module folder `d` take a different value for each module call that instantiates the
    folder? It does when it reads (through the folder's locals, or the cluster module's name input for its cluster
    name output) a variable that two callers give different literal values: the evaluator would answer with as many
    values as calls, none of them the call's. Only ever a reason not to ask: an expression it cannot follow is
    asked."""
    if depth > 6:
        return False
    for m in _REFS.finditer(source):
        kind, name, mod, out = m.groups()
        if kind == "var":
            given = {str(cb.attr(name).literal()) for _, cb in repo.callers(d or ".")
                     if cb.attr(name) is not None and cb.attr(name).literal() is not None}
            if len(given) > 1:
                return True
        elif kind == "local":
            for _, lb in repo.blocks_in(d or ".", "locals"):
                if lb.attr(name) is not None and _varies_by_caller(repo, d, lb.attr(name).source, depth + 1):
                    return True
        else:
            for row in POLICY["cluster_outputs"]:
                if "module" not in row or out not in row["outputs"]:
                    continue
                for _, mb in repo.blocks_in(d or ".", "module", mod):
                    src = mb.attr("source").literal() if mb.attr("source") is not None else None
                    if isinstance(src, str) and re.search(row["module"], src) and \
                            any(mb.attr(i) is not None and _varies_by_caller(repo, d, mb.attr(i).source, depth + 1)
                                for i in row["inputs"]):
                        return True
    return False


def value(repo, p: str, b, attr: str, known: dict | None = None):
    """An input's value where the root states it (None: not stated, or not known); `known`: values already
    evaluated elsewhere (a Terragrunt unit's inputs)."""
    if known and attr in known:
        return known[attr]
    d = posixpath.dirname(p)
    v = _literal_of(repo, d, b.attr(attr))
    return v if v is not None else _evaluated(repo, p, b, attr)


def cluster_name(repo, p: str, b, known: dict | None = None) -> tuple[str | None, str]:
    """(the cluster name the call is given, where it is written)."""
    name = value(repo, p, b, POLICY["cluster"], known)
    if isinstance(name, str):
        return name, f"{b.address} {POLICY['cluster']}"
    e = b.attr(POLICY["cluster"])
    src = e.source.strip() if e is not None else ""
    d = posixpath.dirname(p)
    for row in POLICY["cluster_outputs"]:
        if "module" in row:
            m = re.fullmatch(r"module\.([\w-]+)\.([\w-]+)", src)
            if not m or m.group(2) not in row["outputs"]:
                continue
            blocks = [(bp, bb) for bp, bb in repo.blocks("module", m.group(1))
                      if posixpath.dirname(bp) == d and bb.attr("source") is not None
                      and re.search(row["module"], str(bb.attr("source").literal() or ""))]
        else:
            m = re.fullmatch(rf"{row['resource']}\.([\w-]+)\.([\w-]+)", src)
            if not m or m.group(2) not in row["outputs"]:
                continue
            blocks = [(bp, bb) for bp, bb in repo.blocks("resource", row["resource"])
                      if posixpath.dirname(bp) == d and bb.labels[1:] == [m.group(1)]]
        for bp, bb in blocks:
            for inp in row["inputs"]:
                got = value(repo, bp, bb, inp)
                if isinstance(got, str):
                    return got, f"{bb.address} {inp}"
    return None, ""


def region_of(repo, p: str, b, known: dict | None = None) -> tuple[str | None, str]:
    r = value(repo, p, b, POLICY["region"], known)
    if isinstance(r, str):
        return r, f"{b.address} {POLICY['region']}"
    d = posixpath.dirname(p)
    found = set()
    where = ""
    for pp, pb in repo.blocks_in(d, "provider", "aws"):
        if pb.attr("alias") is not None:
            continue
        got = _literal_of(repo, d, pb.attr("region"))
        if isinstance(got, str):
            found.add(got)
            where = f'provider "aws" in {pp}'
    if len(found) == 1:
        return found.pop(), where
    return None, ""


def _statement(item) -> dict | None:
    """One of the caller's iam_policy_statements as the provider writes it (unknown values left empty)."""
    if not isinstance(item, dict):
        return None

    def one(xs):
        xs = [str(x) if x is not None else "" for x in (xs or [])]
        return xs[0] if len(xs) == 1 else xs
    st: dict = {}
    if item.get("sid"):
        st["Sid"] = str(item["sid"])
    st["Effect"] = str(item.get("effect") or "Allow")
    for key, out in (("actions", "Action"), ("not_actions", "NotAction"), ("resources", "Resource"),
                     ("not_resources", "NotResource")):
        if item.get(key):
            st[out] = one(item[key])
    cond: dict = {}
    for c in (item.get("condition") or item.get("conditions") or []):
        if isinstance(c, dict):
            cond.setdefault(str(c.get("test")), {})[str(c.get("variable"))] = one(c.get("values"))
    if cond:
        st["Condition"] = cond
    return st


def module_scope(repo, p: str, b, known: dict | None = None, region: tuple | None = None) -> Scope:
    s = Scope()
    s.cluster_name, where = cluster_name(repo, p, b, known)
    if s.cluster_name is None:
        s.assumed.append("cluster name")
    else:
        s.sources["cluster name"] = where
    s.region, where = region or region_of(repo, p, b, known)
    if s.region is None:
        s.assumed.append(f"region (taken as {Q['longest_region']})")
    else:
        s.sources["region"] = where
    q = POLICY["queue"]
    if value(repo, p, b, q["switch"], known) is False:
        s.spot = False
    if b.attr(q["input"]) is not None:
        got = value(repo, p, b, q["input"], known)
        s.queue_name = got if isinstance(got, str) else None
    nr = POLICY["node_role"]
    if value(repo, p, b, nr["create"], known) is False:
        arn = value(repo, p, b, nr["arn"], known)
        if isinstance(arn, str):
            s.node_role_arn = arn
    else:
        name = value(repo, p, b, nr["name"], known)
        s.node_role_name = name if isinstance(name, str) else None
        s.node_role_prefix = value(repo, p, b, nr["prefix"], known) is not False
        path = value(repo, p, b, nr["path"], known)
        s.node_role_path = path if isinstance(path, str) else "/"
    ssm = value(repo, p, b, POLICY["ssm"], known)
    if isinstance(ssm, list) and ssm and all(isinstance(x, str) for x in ssm):
        s.ssm = ssm
    if b.attr(POLICY["statements"]) is not None and _Literal.on:
        _Literal.missed.append(POLICY["statements"])
    elif b.attr(POLICY["statements"]) is not None:
        got = evaluate.values(repo, p, b, 0, POLICY["statements"])
        items = got[0] if got and isinstance(got[0], list) else None
        if items is None:
            s.assumed.append(f"{POLICY['statements']} (not readable: left out)")
        else:
            s.statements = [st for st in map(_statement, items) if st]
    return s


def module_policy(repo, p: str, b, version: tuple[int, ...], inline: bool | None = None,
                  given_name: str | None = None, known: dict | None = None,
                  region: tuple | None = None) -> tuple[Size, Scope] | None:
    """The size of the controller policy a karpenter module call at `version` makes (None: it makes none, or its
    policy is not one migrator has: before v20.24, or v20 without the v1 permissions). `inline`: as the call sets
    it when None; `given_name`: the cluster name the user gave (--cluster-name), used when the files do not say."""
    if version is None or tuple(version) < parse_version(POLICY["from"]):
        return None
    if value(repo, p, b, POLICY["own_role"], known) is False or value(repo, p, b, POLICY["create"], known) is False:
        return None
    if version[0] == 20 and value(repo, p, b, POLICY["v20_input"], known) is not True:
        return None
    row = template_for(version)
    if row is None:
        return None
    # the literal reading first: the evaluator (a subprocess over the whole configuration) only where a value it
    # would give can change the answer (issue 60): every input read, or only the cluster name missing while any
    # name EKS allows keeps the policy within its quota
    _Literal.on, _Literal.missed = True, []
    try:
        quick_inline = inline if inline is not None else \
            inline_allowed(version) and value(repo, p, b, POLICY["inline"]["input"], known) is True
        scope = module_scope(repo, p, b, known, region)
        missed = list(_Literal.missed)
    finally:
        _Literal.on, _Literal.missed = False, []
    if not missed or (not given_name and _fits_at_longest(row, scope, quick_inline, missed)):
        return size(row, scope, quick_inline), scope
    if inline is None:
        inline = inline_allowed(version) and value(repo, p, b, POLICY["inline"]["input"], known) is True
    scope = module_scope(repo, p, b, known, region)
    if scope.cluster_name is None and given_name:
        scope.cluster_name = given_name
        scope.assumed.remove("cluster name")
        scope.sources["cluster name"] = "--cluster-name"
    return size(row, scope, inline), scope


def _fits_at_longest(row: dict, scope: Scope, inline: bool, missed: list[str]) -> bool:
    """Does the policy fit its quota with every name input the literal reading missed at its longest (and the cluster
    name at any length EKS allows)? Then no value the evaluator could give changes the answer."""
    longest = Q["input_max"]
    if any(m not in longest for m in missed):
        return False
    worst = dataclasses.replace(scope, cluster_name="x" * longest["cluster_name"])
    if POLICY["node_role"]["name"] in missed and scope.node_role_name is None:
        worst.node_role_name = "x" * longest[POLICY["node_role"]["name"]]
    if POLICY["queue"]["input"] in missed and scope.queue_name is None:
        worst.queue_name = "x" * longest[POLICY["queue"]["input"]]
    return not size(row, worst, inline).over


def inline_allowed(version: tuple[int, ...]) -> bool:
    return tuple(version) >= parse_version(POLICY["inline"]["since"])
