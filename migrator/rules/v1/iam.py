"""Rule `v1/iam`: the controller policy gains the v1 permissions, in the user's own syntax.

patch-upgrade (before the controller moves to 1.0): statements named like the official ones that v1 changed
(knowledge/iam.yaml `v1beta1->v1`) and lack the `eks:eks-cluster-name` scoping, or the tagging statement whose
`aws:TagKeys` does not allow `eks:eks-cluster-name`, are replaced by the official v1 statement with the
cluster name and region this policy already uses. A statement that grants more than the official one is left
as it is, with the exact change to make. A coverage check lists actions the 1.0 controller uses that the
policy does not allow. Syntaxes: aws_iam_policy_document, jsonencode, JSON heredocs and files.
"""
from __future__ import annotations

import json

from ... import knowledge
from ...policies import Policy, Statement, scan_policies
from ...sources import hcl as hclsrc
from ...edits import TextEdit, to_newline
from ..v1beta1.iam import IamResult, IamRule, _as_list, _official_sid, _substitute

RULE = "v1/iam"
FACTS = knowledge.load("iam")["v1beta1->v1"]


class V1IamRule(IamRule):
    def run(self) -> IamResult:
        for pol in scan_policies(self.repo):
            if not self.owns(pol.path) or not pol.is_karpenter:
                continue
            self.res.policies.append(f"{pol.path}:{pol.line}")
            self.res.targets.extend(self.applied_by(pol))
            if pol.path.endswith(".json") and pol.path not in self.res.files:
                self.res.files.append(pol.path)
            self.handle(pol)
        return self.res

    def handle(self, pol: Policy) -> None:
        if self.phase == FACTS["phase"]:
            self.coverage(pol, self.upgrade(pol))

    def successor(self, st: Statement) -> str | None:
        """The official v1 Sid that replaces this statement, if it lacks what v1 needs."""
        tag = FACTS["cluster_tag"]
        if any(c.key == "aws:TagKeys" and tag not in map(str, c.values) for c in st.conditions) and \
                any(a.lower() == "ec2:createtags" for a in st.actions):
            return FACTS["tagging_sid"]
        # the first hop names its nodepool twins <Sid>NodePool: they are the same statements
        sid = next((x for x in FACTS["replace_sids"] if st.sid and st.sid.startswith(x)), None)
        if sid is not None and not any(c.key.endswith(tag) for c in st.conditions):
            return sid
        return None

    def upgrade(self, pol: Policy) -> set[str]:
        text = self.repo.text(pol.path)
        added: set[str] = set()
        subs = None
        for st in pol.statements:
            sid = self.successor(st)
            if sid is None:
                continue
            line = hclsrc.line_of(text, st.start)
            official = _official_sid(sid, FACTS["target"])
            extra = sorted({a for a in st.actions if a.lower() not in {x.lower() for x in _as_list(official["Action"])}})
            if extra:
                self.finding("MIG-V1-IAM-002", "warning", pol.path, line,
                             f"statement {st.sid or sid} of {pol.name} needs the v1 {FACTS['cluster_tag']} scoping but "
                             f"also grants {', '.join(extra)}, so it is not replaced",
                             f"add {FACTS['cluster_tag']} as the official v{FACTS['target']} {sid} statement does "
                             "(allowed tag key and aws:RequestTag condition)")
                continue
            subs = subs or self.substitutions(pol)
            body = None if subs is None else self.own_resources(json.loads(_substitute(json.dumps(official), subs)), st)
            if body is None:
                lacks = "the cluster name and region" if subs is None else "the region (the statement names it)"
                self.finding("MIG-V1-IAM-003", "error", pol.path, line,
                             f"{pol.name} needs the v1 statement {sid}, but migrator cannot tell {lacks} this policy "
                             "is scoped to",
                             f"replace statement {st.sid or sid} with {sid} from the v{FACTS['target']} "
                             "getting-started CloudFormation by hand (or give --cluster-name / --region)")
                continue
            wider = [r for r in st.resources if r != "*" and r not in _as_list(body["Resource"])]
            if wider:
                self.finding("MIG-V1-IAM-002", "warning", pol.path, line,
                             f"statement {st.sid or sid} of {pol.name} needs the v1 {FACTS['cluster_tag']} scoping but "
                             f"also covers {', '.join(wider)}, so it is not replaced",
                             f"add {FACTS['cluster_tag']} as the official v{FACTS['target']} {sid} statement does")
                continue
            if st.sid:
                body["Sid"] = st.sid            # the user's own name for it
            rendered = self.render(pol, body, text, st)
            self.res.edits.append(TextEdit(pol.path, st.start, st.end,
                                           to_newline(rendered, self.repo.files[pol.path].newline), RULE))
            added |= {a.lower() for a in _as_list(official["Action"])}
            self.finding("MIG-V1-IAM-001", "info", pol.path, line,
                         f"statement {st.sid or sid} of {pol.name} -> official v{FACTS['target']} {sid} "
                         f"(scoped by {FACTS['cluster_tag']}, which the v1 controller tags with)")
        return added


def run(ctx, phase: str) -> IamResult:
    return V1IamRule(ctx.repo, ctx.manifests, phase, ctx.helm_values, None, ctx.owns, facts=FACTS, rule=RULE,
                     options=ctx.options).run()
