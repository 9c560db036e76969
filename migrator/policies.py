"""Controller IAM policies in every syntax, as one model with exact spans (part of the inventory).

Syntaxes: `data "aws_iam_policy_document"` (statement / condition blocks), `jsonencode({...})` HCL
objects (`=` or `:`, quoted keys), JSON heredocs, `file()` / `templatefile()` JSON files and standalone
`*.json` policy files. A policy counts as Karpenter's controller policy when it names Karpenter tag keys
or holds the controller's characteristic actions.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from . import knowledge
from .edits import line_start
from .inventory.repo import Repo
from .sources import hcl as hclsrc
from .sources import jsonspan
from .sources.templates import TemplateError, find_sequences

KARPENTER_KEY = re.compile(r"karpenter\.(sh|k8s\.aws)/")
CONTROLLER_ACTIONS = {"ec2:createfleet", "ec2:createlaunchtemplate", "ec2:runinstances"}
AUTO_MODE_TAG_KEYS = frozenset(knowledge.load("iam")["auto_mode_cluster_tag_keys"])


@dataclass
class Condition:
    test: str
    key: str
    values: list
    key_start: int              # span of the key text (string contents included, quotes excluded)
    key_end: int


@dataclass
class Statement:
    sid: str | None
    effect: str
    actions: list[str]
    resources: list[str]
    conditions: list[Condition]
    start: int                  # span of the statement (block / object) in the file
    end: int
    sid_span: tuple[int, int] | None = None    # span of the Sid value *contents*


@dataclass
class Policy:
    path: str
    line: int
    syntax: str                 # document | hcl | json
    name: str
    statements: list[Statement] = field(default_factory=list)
    dynamic_lines: list[int] = field(default_factory=list)
    style: dict = field(default_factory=dict)   # hcl: {"sep": "=" or ":"}; json: {"indent": str}

    def actions(self) -> set[str]:
        return {a.lower() for s in self.statements if s.effect.lower() == "allow" for a in s.actions}

    @property
    def is_karpenter(self) -> bool:
        keys = any(KARPENTER_KEY.search(c.key) for s in self.statements for c in s.conditions)
        sids = any(s.sid and "karpenter" in s.sid.lower() for s in self.statements)
        if keys or sids:
            return True
        if any(c.key in AUTO_MODE_TAG_KEYS for s in self.statements for c in s.conditions):
            return False        # EKS Auto Mode's cluster role custom-tag policy: its actions are not Karpenter's
        return "karpenter" in self.name.lower() and bool(self.actions() & CONTROLLER_ACTIONS) \
            or CONTROLLER_ACTIONS <= self.actions()


def _text(e: hclsrc.Expr) -> str:
    """A value as the template text of an HCL string: a literal's value, an interpolated string's contents, any
    other expression interpolated whole (`var.region` -> `${var.region}`), so that a value carried into generated
    text stays the expression it was, never the literal text of a reference."""
    if e.literal() is not None:
        return str(e.literal())
    if e.kind == "string":
        return e.source[1:-1]
    return "${" + e.source + "}"


def _strs(e: hclsrc.Expr | None, listy: bool = False) -> list[str]:
    """The items of a list value as template texts; `listy`: a non-tuple expression is a whole list (a document's
    `values = var.regions`), whose items are not known, so none is given."""
    if e is None:
        return []
    if e.kind == "tuple":
        return [_text(i) for i in e.items]
    if listy and e.literal() is None and e.kind != "string":
        return []
    return [_text(e)]


def _string_inner(e: hclsrc.Expr) -> tuple[int, int]:
    return (e.start + 1, e.end - 1) if e.source.startswith('"') else (e.start, e.end)


# -- aws_iam_policy_document ------------------------------------------------------------------------
def _document(repo: Repo, path: str, b: hclsrc.Block) -> Policy:
    text = repo.text(path)
    pol = Policy(path, hclsrc.line_of(text, b.start), "document", b.address)
    for st in b.blocks:
        if st.type == "dynamic" and st.labels[:1] == ["statement"]:
            pol.dynamic_lines.append(hclsrc.line_of(text, st.start))
        if st.type != "statement":
            continue
        conds = []
        for c in st.sub("condition"):
            var = c.attr("variable")
            if var is None:
                continue
            ks, ke = _string_inner(var)
            conds.append(Condition(str(c.attr("test").literal() if c.attr("test") else ""), _text(var),
                                   _strs(c.attr("values"), listy=True), ks, ke))
        sid = st.attr("sid")
        eff = st.attr("effect")
        pol.statements.append(Statement(
            sid.literal() if sid is not None else None, str(eff.literal()) if eff is not None else "Allow",
            _strs(st.attr("actions")), _strs(st.attr("resources")), conds, st.start, st.end,
            _string_inner(sid) if sid is not None else None))
    return pol


# -- jsonencode({...}) --------------------------------------------------------------------------------
def _entry(obj: hclsrc.Expr, key: str):
    return next((e for e in obj.entries if e.key == key), None)


def _jsonencode(repo: Repo, path: str, call: hclsrc.Expr, name: str) -> Policy | None:
    obj = call.items[0] if call.items else None
    if obj is None or obj.kind != "object":
        return None
    stmts = _entry(obj, "Statement")
    if stmts is None or stmts.value.kind != "tuple":
        return None
    text = repo.text(path)
    sep = ":" if re.search(r'"?Statement"?\s*:', obj.source) else "="
    pol = Policy(path, hclsrc.line_of(text, call.start), "hcl", name, style={"sep": sep})
    for s in stmts.value.items:
        if s.kind != "object":
            continue
        conds = []
        cond = _entry(s, "Condition")
        if cond is not None and cond.value.kind == "object":
            for test in cond.value.entries:
                if test.value.kind != "object":
                    continue
                for kv in test.value.entries:
                    ks, ke = (kv.key_start + 1, kv.key_end - 1) if kv.key_quoted else (kv.key_start, kv.key_end)
                    conds.append(Condition(test.key, kv.key, _strs(kv.value), ks, ke))
        sid = _entry(s, "Sid")
        eff = _entry(s, "Effect")
        pol.statements.append(Statement(
            sid.value.literal() if sid else None, str(eff.value.literal()) if eff else "Allow",
            _strs(_entry(s, "Action").value if _entry(s, "Action") else None),
            _strs(_entry(s, "Resource").value if _entry(s, "Resource") else None), conds, s.start, s.end,
            _string_inner(sid.value) if sid else None))
    return pol


# -- JSON (heredocs, files) -------------------------------------------------------------------------
def mask_json(text: str, start: int = 0, end: int | None = None) -> str:
    """Same-length masking of Terraform sequences so JSON offsets stay those of the file."""
    end = len(text) if end is None else end
    chars = list(text)
    in_string = False
    seqs = {s: e for s, e, _ in find_sequences(text[start:end])}
    i = start
    while i < end:
        rel = i - start
        if rel in seqs:
            e = seqs[rel] + start
            if in_string:
                for j in range(i, e):
                    if chars[j] in '"\\':
                        chars[j] = "_"
            else:
                chars[i] = '"'
                for j in range(i + 1, e - 1):
                    chars[j] = "_"
                chars[e - 1] = '"'
            i = e
            continue
        c = text[i]
        if c == "\\" and in_string:
            i += 2
            continue
        if c == '"':
            in_string = not in_string
        i += 1
    return "".join(chars)


def _json(repo: Repo, path: str, text: str, start: int, end: int, name: str, line: int) -> Policy | None:
    try:
        masked = mask_json(text, start, end)
        root = jsonspan.parse(masked, start, end)
    except (jsonspan.JsonSpanError, IndexError, TemplateError):
        return None             # not a JSON policy migrator can read (the file's own parse errors are reported)
    if root.kind != "object" or root.get("Statement") is None or root.get("Statement").kind not in ("array", "object"):
        return None
    st_node = root.get("Statement")
    items = st_node.items if st_node.kind == "array" else [st_node]
    pol = Policy(path, line, "json", name)
    for s in items:
        if s.kind != "object":
            continue
        conds = []
        cond = s.get("Condition")
        if cond is not None and cond.kind == "object":
            for test, body in cond.entries:
                for k, v in (body.entries if body.kind == "object" else []):
                    vals = v.plain()
                    conds.append(Condition(test.value, text[k.start + 1:k.end - 1], vals if isinstance(vals, list)
                                           else [vals], k.start + 1, k.end - 1))
        sid = s.get("Sid")

        def lst(n):
            if n is None:
                return []
            v = n.plain()
            return [str(x) for x in (v if isinstance(v, list) else [v])]
        pol.statements.append(Statement(
            sid.value if sid else None, str(s.get("Effect").value) if s.get("Effect") else "Allow",
            lst(s.get("Action")), lst(s.get("Resource")), conds, s.start, s.end,
            (sid.start + 1, sid.end - 1) if sid else None))
    if pol.statements:
        first = pol.statements[0]
        pol.style["indent"] = text[line_start(text, first.start):first.start]
    return pol


# -- scan -------------------------------------------------------------------------------------------
def _calls(e: hclsrc.Expr):
    if e.kind == "call":
        yield e
    for i in e.items:
        yield from _calls(i)
    for en in e.entries:
        yield from _calls(en.value)


def may_hold_karpenter_policy(text: str) -> bool:
    """Byte-level pre-filter, exact for `Policy.is_karpenter`: a Karpenter tag key, Sid or policy name (a block
    address, or the path of a JSON file: pass it with the text) says "karpenter"; otherwise all three controller
    actions must be spelled out."""
    low = text.lower()
    return "karpenter" in low or all(a in low for a in CONTROLLER_ACTIONS)


def scan_policies(repo: Repo) -> list[Policy]:
    """The repository's Karpenter controller policies, scanned once per run (every cluster root and phase
    shares the list; rules filter it by root). Files that cannot hold one are never parsed."""
    cached = getattr(repo, "_policies", None)
    if cached is not None:
        return cached
    repo._policies = _scan(repo)
    return repo._policies


def _scan(repo: Repo) -> list[Policy]:
    out: list[Policy] = []
    seen_files: set[str] = set()
    for p in repo.tf_files(interesting_only=False):
        if not p.endswith(hclsrc.TF_CODE):
            continue
        txt = repo.files[p].text
        if "aws_iam_policy_document" not in txt and "Statement" not in txt and "policy" not in txt:
            continue
        if not may_hold_karpenter_policy(txt):
            continue
        f = repo.hcl(p)
        if f is None:
            continue
        for b in f.walk():
            if b.type == "data" and b.labels[:1] == ["aws_iam_policy_document"]:
                out.append(_document(repo, p, b))
                continue
            for a in b.attributes.values():
                e = a.expr
                name = f"{b.address}.{a.name}"
                for call in _calls(e):
                    if call.name == "jsonencode":
                        pol = _jsonencode(repo, p, call, name)
                        if pol:
                            out.append(pol)
                    elif call.name in ("file", "templatefile") and call.items:
                        target = repo.resolve_file_arg(p, call.items[0])
                        if target and target.endswith(".json") and target in repo.files:
                            seen_files.add(target)
                if e.kind == "heredoc":
                    h = e.heredoc
                    pol = _json(repo, p, txt, h.body_start, h.body_end, name, hclsrc.line_of(txt, h.body_start))
                    if pol:
                        out.append(pol)
    for p in repo.containing('"Statement"', (".json",)):
        sf = repo.files[p]
        if may_hold_karpenter_policy(p + "\n" + sf.text):
            pol = _json(repo, p, sf.text, 0, len(sf.text), p, 1)
            if pol:
                out.append(pol)
    trusts = _trust_documents(repo)
    return [pol for pol in out if pol.is_karpenter and not _is_trust(pol, trusts)]


_TRUST_ACTIONS = re.compile(r"sts:(AssumeRole\w*|TagSession|SetSourceIdentity|\*)$", re.I)


def _trust_documents(repo: Repo) -> set[str]:
    """The policy documents a role uses as its trust policy (`assume_role_policy = data.aws_iam_policy_document.x.json`)."""
    out = set()
    for p in repo.tf_containing("assume_role_policy"):
        out |= {m.group(1) for m in re.finditer(r"assume_role_policy\s*=\s*(data\.aws_iam_policy_document\.[\w-]+)",
                                                repo.files[p].text)}
    return out


def _is_trust(pol: Policy, trusts: set[str]) -> bool:
    """A trust policy (who may assume a role), never a permissions policy: IAM rejects a trust policy holding the
    controller's actions, so no controller statement is ever added to one (issue 56). Known by where it is used (a
    role's assume_role_policy) or by what it allows (sts:AssumeRole* only)."""
    if pol.name in trusts or pol.name.endswith(".assume_role_policy"):
        return True
    actions = [a for s in pol.statements for a in s.actions]
    return bool(actions) and all(_TRUST_ACTIONS.match(a) for a in actions)
