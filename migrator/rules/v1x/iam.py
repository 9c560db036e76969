"""Rule `v1x/iam`: a hand-written controller policy aligned with the official policy of the target minor.

For every statement of the official policy (packaged per minor, knowledge/minors.yaml `iam`): a statement with
the same Sid that lacks some of its actions and grants nothing more is replaced by the official one (in the
user's syntax, with the cluster name, region and account the policy already uses); a missing statement is
added; actions only needed with an opt-in feature are reported, not added. The 1.9 split into several managed
policies changes no permission: a single hand-written policy stays one policy.
"""
from __future__ import annotations

import json
import re

from ... import knowledge
from ...model import Finding
from ...path import MINORS
from ...policies import Policy
from ...sources import hcl as hclsrc
from ...edits import TextEdit, to_newline
from ..v1.iam import V1IamRule
from ..v1beta1.iam import IamResult, _allows, _as_list, _sids_elsewhere, official, _substitute
from .plan import minor_of, stop

RULE = "v1x/iam"
BASE = knowledge.load("iam")["v1beta1->v1"]


class OnwardIamRule(V1IamRule):
    def sids_elsewhere(self, pol: Policy, sids: list[str]) -> dict[str, str]:
        return _sids_elsewhere(self.repo, pol, sids) if sids else {}

    def handle(self, pol: Policy) -> None:
        text = self.repo.text(pol.path)
        version = self.facts["target"]
        allowed = pol.actions()
        by_sid = {s.sid: s for s in pol.statements if s.sid}
        missing_sids, conditional = [], []
        subs = None
        for off in official(version):
            actions = _as_list(off["Action"])
            sid = off.get("Sid")
            st = by_sid.get(sid)
            if all(a in MINORS["conditional_actions"] for a in actions):
                if not all(_allows(allowed, a) for a in actions):
                    conditional += [f"{a} ({MINORS['conditional_actions'][a]})" for a in actions]
                continue
            if st is None:
                if not all(_allows(allowed, a) for a in actions):
                    missing_sids.append(sid)
                continue
            mine = {a.lower() for a in st.actions}
            lacking = [a for a in actions if not _allows(mine, a) and a not in MINORS["conditional_actions"]]
            if not lacking:
                continue
            extra = sorted(a for a in st.actions if a.lower() not in {x.lower() for x in actions}
                           and a not in MINORS["obsolete_actions"])
            line = hclsrc.line_of(text, st.start)
            subs = subs or self.substitutions(pol)
            if extra or subs is None:
                self.finding("MIG-V1X-IAM-001", "warning", pol.path, line,
                             f"statement {sid} of {pol.name} lacks {', '.join(lacking)}, which Karpenter {version} uses",
                             f"add {', '.join(lacking)} to it (official {version} policy, Sid {sid})")
                continue
            body = self.own_resources(json.loads(_substitute(json.dumps(off), subs)), st)
            if body is None:
                self.finding("MIG-V1X-IAM-001", "warning", pol.path, line,
                             f"statement {sid} of {pol.name} lacks {', '.join(lacking)}, which Karpenter {version} uses",
                             f"add {', '.join(lacking)} to it (official {version} policy, Sid {sid})")
                continue
            self.res.edits.append(TextEdit(pol.path, st.start, st.end,
                                           to_newline(self.render(pol, body, text, st),
                                                      self.repo.files[pol.path].newline), self.rule))
            self.finding("MIG-V1X-IAM-002", "info", pol.path, line,
                         f"statement {sid} of {pol.name} -> official Karpenter {version} statement "
                         f"(adds {', '.join(lacking)})")
        elsewhere = self.sids_elsewhere(pol, missing_sids)
        if elsewhere:                       # the same role's other policy of this module holds them
            self.finding("MIG-V1X-IAM-004", "info", pol.path, pol.line,
                         f"{pol.name}: statements " + ", ".join(sorted(elsewhere)) + " are not added here: a policy of "
                         "the same module that migrator cannot read (template directives) has them ("
                         + ", ".join(sorted(set(elsewhere.values()))) + ")",
                         "check that policy against the official one of the target by hand")
            missing_sids = [x for x in missing_sids if x not in elsewhere]
        current = self.facts.get("current")      # (chart version, its official policy) the root runs now
        had = {s.get("Sid") for s in official(current[1])} if current else set()
        if missing_sids and pol.statements:     # those lacking already under the chart it runs are not this move's
            self.add_official(pol, missing_sids, after=pol.statements[-1],
                              already=(current[0], {x for x in missing_sids if x in had}) if current else None)
        if conditional:
            self.finding("MIG-V1X-IAM-003", "info", pol.path, pol.line,
                         f"{pol.name} lacks actions Karpenter {version} uses only for opt-in features: "
                         + ", ".join(conditional), "add them when you turn the feature on")


def run(ctx, phase: str, done: dict) -> IamResult:
    target, _ = stop(ctx, done)
    row = next(r for r in MINORS["minors"] if r["minor"] == minor_of(target))
    now = next((r for r in MINORS["minors"] if r["minor"] == minor_of(ctx.chart_version)), None)
    facts = {**BASE, "target": row["iam"], "current": (ctx.chart_version, now["iam"]) if now else None}
    res = OnwardIamRule(ctx.repo, ctx.manifests, phase, ctx.helm_values, None, ctx.owns, facts=facts,
                        rule=RULE, options=ctx.options).run()
    quota(ctx, res)
    return res


def quota(ctx, res: IamResult) -> None:
    """Every controller policy the plan adds statements to, checked against IAM's quota as it will be written
    (whitespace not counted): a JSON file exactly; a policy in Terraform (aws_iam_policy_document, jsonencode, a
    JSON heredoc) as the JSON it renders, its interpolations counted as written (said as an estimate). Over it, the
    plan says so and what to split."""
    from ...edits import apply_edits
    from ...policysize import Q, stripped_len
    for path in sorted({e.path for e in res.edits if e.path.endswith(".tf")}):
        before = ctx.repo.text(path)
        after = apply_edits(before, [e for e in res.edits if e.path == path])
        old = {p.name: p for p in _policies_of(path, before)}
        for pol in _policies_of(path, after):
            n = _rendered_len(pol)
            inline = re.search(r'resource\s+"aws_iam_role_policy"[^{]*\{[^}]*' + re.escape(pol.name.split(".")[-1])
                               + r"\b", after) is not None
            quota_ = Q["inline"] if inline else Q["managed"]
            was = _rendered_len(old[pol.name]) if pol.name in old else 0
            if n > quota_ and n > was:
                res.findings.append(Finding(
                    "MIG-V1X-IAM-005", "warning", path, pol.line,
                    f"{pol.name} renders about {n:,} characters once the plan's statements are in (interpolations "
                    f"counted as written), over IAM's {quota_:,}-character quota for "
                    f"{'a role' + chr(39) + 's inline policies' if inline else 'a managed policy'} (LimitExceeded: "
                    "Cannot exceed quota for PolicySize)",
                    "split it in two policies attached to the same role (statements are independent: any split "
                    "works)" + ("" if inline else f", or attach it as an inline role policy (up to {Q['inline']:,})")))
    for path in sorted({e.path for e in res.edits if e.path.endswith(".json")}):
        before = ctx.repo.text(path)
        after = apply_edits(before, [e for e in res.edits if e.path == path])
        n = stripped_len(after)
        if n > Q["managed"]:
            res.findings.append(Finding(
                "MIG-V1X-IAM-005", "warning", path, 1,
                f"{path} is {n:,} characters once the plan's statements are in (whitespace not counted), over IAM's "
                f"{Q['managed']:,}-character quota for a managed policy (LimitExceeded: Cannot exceed quota for "
                "PolicySize)",
                "split it in two policies attached to the same role (statements are independent: any split works), or "
                f"attach it as an inline role policy (up to {Q['inline']:,} characters for all of a role's inline "
                "policies)"))


def _policies_of(path: str, text: str) -> list[Policy]:
    """The Karpenter controller policies of one Terraform file's text (the file alone, parsed in a scratch folder)."""
    import tempfile
    from pathlib import Path

    from ...inventory.repo import Repo
    from ...policies import scan_policies
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "main.tf").write_text(text, encoding="utf-8")
        return [p for p in scan_policies(Repo(Path(tmp))) if p.is_karpenter and p.syntax in ("document", "hcl")]


def _rendered_len(pol: Policy) -> int:
    """The minified JSON a policy renders (one-element lists as strings, as the AWS provider writes them)."""
    def one(xs):
        return xs[0] if len(xs) == 1 else xs
    sts = []
    for st in pol.statements:
        d: dict = {"Effect": st.effect or "Allow", "Action": one(st.actions), "Resource": one(st.resources)}
        if st.sid:
            d["Sid"] = st.sid
        cond: dict = {}
        for c in st.conditions:
            cond.setdefault(c.test, {})[c.key] = one([str(v) for v in c.values])
        if cond:
            d["Condition"] = cond
        sts.append(d)
    return len(json.dumps({"Version": "2012-10-17", "Statement": sts}, separators=(",", ":")))
