"""Rule `v1beta1/iam`: the controller policy, in the user's own syntax, for both node generations.

prepare: every statement scoped by `karpenter.sh/provisioner-name` gets a twin scoped by
`karpenter.sh/nodepool` right after it (old nodes stay manageable, new ones become manageable); a statement
using a key with no successor gets the official successor statement; the instance-profile statements of the
official v0.32 policy are added when an EC2NodeClass uses `spec.role`. A coverage check compares the result
with the official policy of the target and lists what is still missing.
cleanup: the provisioner-name statements (and those replaced by official ones) are removed.

Where the cluster name, region and account of the official statements are read from, first found wins (the same
in every hop): the policy's own ARNs and `kubernetes.io/cluster/<name>` conditions; an EKS cluster ARN; the chart's
literal settings.clusterName; the provider's literal region; `--cluster-name` / `--region` / `--account-id` or
`.migrator.yaml` (per cluster root under `roots:`); for a policy written in Terraform, Terraform values of its own
module: the expression the chart's settings.clusterName gets there, the provider's region variable, the module's
`aws_region` / `aws_caller_identity` / `aws_partition` data sources (`data "aws_region" "current" {}` is added
when the module has none, MIG-IAM-010). MIG-IAM-004 / MIG-V1-IAM-003 only when no source has the fact.
"""
from __future__ import annotations

import json
import posixpath
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources

from ... import knowledge
from ...edits import TextEdit, indent_at, line_end, line_start, to_newline
from ...inventory import Manifest, Repo
from ...model import Finding
from ...policies import Policy, Statement, scan_policies
from ...placement import align_attributes
from ...sources import hcl as hclsrc

RULE = "v1beta1/iam"
HOP = "v1alpha5->v1beta1"
FACTS = knowledge.load("iam")[HOP]
QUEUE = knowledge.load("iam")["interruption_queue"]


@lru_cache(maxsize=None)
def official(version: str) -> list[dict]:
    text = resources.files("migrator.knowledge").joinpath("iam", f"{version}.json").read_text(encoding="utf-8")
    return json.loads(text)["policy"]["Statement"]


def _as_list(v) -> list:
    return v if isinstance(v, list) else [v]


def _allows(actions: set[str], action: str) -> bool:
    """Does a policy's set of actions (`ec2:*`, `ec2:describe*`, `*` as IAM reads wildcards) allow an action?"""
    exact, wild = _matcher(frozenset(actions))
    a = action.lower()
    return a in exact or (wild is not None and wild.fullmatch(a) is not None)


@lru_cache(maxsize=64)
def _matcher(actions: frozenset) -> tuple[frozenset, "re.Pattern | None"]:
    """The actions without a wildcard, and one pattern for those with one: built once per set of actions (the
    coverage check asks it of every action of every official statement)."""
    wild = sorted(p for p in actions if "*" in p)
    pattern = "|".join(f"(?:{re.escape(p).replace(chr(92) + '*', '.*')})" for p in wild)
    return frozenset(p for p in actions if "*" not in p), re.compile(pattern) if wild else None


@dataclass
class IamResult:
    edits: list = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    policies: list[str] = field(default_factory=list)       # path:line of each controller policy
    targets: list[tuple[str, str]] = field(default_factory=list)   # (root module dir, address) applying them
    files: list[str] = field(default_factory=list)          # standalone JSON policy files


class IamRule:
    def __init__(self, repo: Repo, manifests: list[Manifest], phase: str, values: list | None = None,
                 deleted: list | None = None, owns=None, *, facts: dict | None = None, rule: str = RULE,
                 options=None):
        """A later hop passes its own facts table (knowledge/iam.yaml) and rule name; the rendering of official
        statements in the user's syntax, the insertion and the coverage check are shared."""
        self.facts = facts or FACTS
        self.rule = rule
        self.options = options
        self.owns = owns or (lambda path: True)
        self.values = values or []          # chart values (which instance profile served defaultInstanceProfile)
        self.deleted = deleted or []        # spans other rules delete in this phase
        self.repo = repo
        self.manifests = manifests
        self.phase = phase
        self.res = IamResult()

    def finding(self, *a):
        self.res.findings.append(Finding(*a))

    def applied_by(self, pol: Policy) -> list[str]:
        """Terraform addresses that apply a policy: the resource holding it, or those using a document."""
        if pol.syntax == "json" and pol.path.endswith(".json"):
            self.res.files.append(pol.path)
            return []
        if pol.syntax == "document":
            ref = pol.name + ".json"
            out = []
            for p in self.repo.tf_containing(ref):
                f = self.repo.hcl(p)
                out += [(posixpath.dirname(p), b.address) for b in (f.blocks if f else [])
                        if b.type == "resource" and ref in self.repo.files[p].text[b.start:b.end]]
            return out
        return [(posixpath.dirname(pol.path), pol.name.rsplit(".", 1)[0])]

    def uses_role(self) -> bool:
        """Will any EC2NodeClass use spec.role (Karpenter-managed instance profiles)?"""
        for m in self.manifests:
            spec = (m.obj.get("spec") or {}) if isinstance(m.obj, dict) else {}
            if m.kind == "EC2NodeClass" and "role" in spec:
                return True
            if m.kind == "AWSNodeTemplate" and "instanceProfile" not in spec:
                return True
            if m.kind == "Provisioner" and isinstance(spec.get("provider"), dict) and \
                    "instanceProfile" not in spec["provider"]:
                return True
        return False

    def run(self) -> IamResult:
        for pol in scan_policies(self.repo):
            if not self.owns(pol.path):
                continue
            self.res.policies.append(f"{pol.path}:{pol.line}")
            self.res.targets.extend(self.applied_by(pol))
            for ln in pol.dynamic_lines:
                self.finding("MIG-IAM-001", "warning", pol.path, ln,
                             f"{pol.name} builds statements with a dynamic block; migrator cannot rewrite them",
                             "add a karpenter.sh/nodepool twin of every provisioner-name condition by hand")
            if self.phase == "prepare":
                self.prepare(pol)
            else:
                self.cleanup(pol)
        if self.phase == "cleanup":
            self.instance_profiles()
        return self.res

    def instance_profiles(self) -> None:
        """Remove the Terraform-managed instance profile that served defaultInstanceProfile, once nothing else
        in the repository refers to it (by address or by name) after this phase's deletions."""
        from ...resolve import default_instance_profile
        served = {str(v.value) for v in default_instance_profile(self.values)} | \
                 {v.expression for v in default_instance_profile(self.values) if v.expression}
        if not served:
            return
        for p, b in self.repo.blocks("resource", "aws_iam_instance_profile"):
            if not self.owns(p):
                continue
            name = b.attr("name").literal() if b.attr("name") is not None else None
            addr = b.address
            if not ({name, f"{addr}.name", f"{addr}.id"} & served):
                continue
            refs = self._references(p, b, [addr + ".", name] if name else [addr + "."])
            text = self.repo.text(p)
            line = hclsrc.line_of(text, b.start)
            if refs:
                self.finding("MIG-IAM-007", "info", p, line,
                             f"{addr} served settings.aws.defaultInstanceProfile; it is kept because "
                             + ", ".join(refs[:3]) + " still refer to it",
                             "remove it by hand once nothing uses it (alpha nodes are gone)")
                continue
            from ...edits import comments_above
            s0, e0 = comments_above(text, line_start(text, b.start)), line_end(text, b.end)
            nxt = line_end(text, e0)
            if e0 < len(text) and not text[e0:nxt].strip():
                e0 = nxt
            self.res.edits.append(TextEdit(p, s0, e0, "", self.rule))
            self.finding("MIG-IAM-007", "info", p, line,
                         f"{addr} served settings.aws.defaultInstanceProfile and nothing refers to it any more: removed "
                         "(EC2NodeClasses use spec.role; Karpenter manages their instance profiles)")

    def _references(self, path: str, block, needles: list[str]) -> list[str]:
        out = []
        files = self.repo.files
        for needle in needles:          # the files that hold the needle: one search per needle and run
            for p in self.repo.containing(needle):
                sf = files[p]
                start = 0
                while True:
                    i = sf.text.find(needle, start)
                    if i < 0:
                        break
                    start = i + 1
                    if p == path and block.start <= i < block.end:
                        continue
                    if any(dp == p and s <= i < e for dp, s, e in self.deleted):
                        continue
                    out.append(f"{p}:{hclsrc.line_of(sf.text, i)}")
        return sorted(set(out))

    # -- prepare ------------------------------------------------------------------------------------
    def prepare(self, pol: Policy) -> None:
        text = self.repo.text(pol.path)
        old, new = next(iter(self.facts["tag_keys"].items()))
        added_actions: set[str] = set()
        have_sids = {s.sid for s in pol.statements if s.sid}
        for i, st, line, replaced in _alpha_scoped(pol, text, self.facts):
            if replaced:
                if replaced not in have_sids:
                    self.add_official(pol, [replaced], after=st)
                    have_sids.add(replaced)
                continue
            if self.twin(pol, st) is not None:
                continue
            clone = text[st.start:st.end]
            if st.sid_span:                  # suffix first: the tag key rename below changes offsets
                rel = st.sid_span[1] - st.start
                clone = clone[:rel] + self.facts["twin_sid_suffix"] + clone[rel:]
            clone = clone.replace(old, new)
            if pol.syntax in ("document", "hcl"):   # new HCL text is written as terraform fmt writes it
                clone = align_attributes(clone)
            self.insert_after(pol, st, clone)
            self.finding("MIG-IAM-002", "info", pol.path, line,
                         f"statement {st.sid or '#' + str(i + 1)} of {pol.name}: added a twin scoped by {new} "
                         f"(the {old} one stays until cleanup)")
        if self.uses_role():
            missing = [sid for sid in self.facts["instance_profile_sids"] if sid not in have_sids
                       and not all(_allows(pol.actions() | added_actions, a)
                                   for a in _as_list(_official_sid(sid, self.facts["target"])["Action"]))]
            if missing:
                self.add_official(pol, missing, after=pol.statements[-1] if pol.statements else None)
                for sid in missing:
                    added_actions |= {a.lower() for a in _as_list(_official_sid(sid, self.facts["target"])["Action"])}
        self.coverage(pol, added_actions)

    def twin(self, pol: Policy, st: Statement) -> Statement | None:
        old, new = next(iter(self.facts["tag_keys"].items()))
        want = sorted((c.test, c.key.replace(old, new)) for c in st.conditions)
        for other in pol.statements:
            if other is not st and sorted(other.actions) == sorted(st.actions) and \
                    sorted((c.test, c.key) for c in other.conditions) == want:
                return other
        return None

    def coverage(self, pol: Policy, added: set[str]) -> None:
        allowed = pol.actions() | added
        needed = []
        from ...facts import interruption_queue
        lacking: dict[str, list[str]] = {}
        for s in official(self.facts["target"]):
            if s.get("Sid") in self.facts["instance_profile_sids"] and not self.uses_role():
                continue
            if s.get("Sid") == QUEUE["sid"] and not interruption_queue(pol, self.values, {})[0]:
                continue
            got = [a for a in _as_list(s["Action"]) if not _allows(allowed, a)]
            if got:
                lacking[s.get("Sid") or ""] = got
        elsewhere = _sids_elsewhere(self.repo, pol, [x for x in lacking if x])   # the role's other policy has them
        needed = [a for sid, acts in lacking.items() if sid not in elsewhere for a in acts]
        if needed:
            self.finding("MIG-IAM-003", "warning", pol.path, pol.line,
                         f"{pol.name} lacks permissions the v{self.facts['target']} controller uses: "
                         + ", ".join(sorted(set(needed))),
                         "add them from the official policy (karpenter.sh getting-started CloudFormation "
                         f"v{self.facts['target']}), scoped like the rest of this policy")

    # -- rendering official statements in the user's syntax ------------------------------------------
    def substitutions(self, pol: Policy) -> dict[str, str] | None:
        subs: dict[str, str] = {}
        for st in pol.statements:
            for c in st.conditions:
                m = re.search(r"Tag/kubernetes\.io/cluster/(.+)$", c.key)
                if m and "ClusterName" not in subs:
                    subs["ClusterName"] = m.group(1)
                if re.search(r"Tag/eks:eks-cluster-name$", c.key) and c.values and "ClusterName" not in subs:
                    subs["ClusterName"] = str(c.values[0])
                if c.key == "aws:RequestedRegion" and c.values and "AWS::Region" not in subs:
                    subs["AWS::Region"] = str(c.values[0])
            for r in st.resources:
                m = re.match(r"arn:([^:]+):ec2:([^:*]+):", r)
                if m and "AWS::Region" not in subs:
                    subs["AWS::Region"] = m.group(2)
                m = re.match(r"arn:[^:]+:[^:]+:[^:]*:([^:*]+):", r)
                if m and "AWS::AccountId" not in subs:
                    subs["AWS::AccountId"] = m.group(1)
        if not {"ClusterName", "AWS::Region", "AWS::AccountId"} <= set(subs):
            from ...facts import cluster_and_region, given_scope, terraform_scope
            stated = cluster_and_region(self.repo, pol, self.values, self.owns)
            for key, fact in given_scope(self.options).items():
                stated.setdefault(key, fact)
            if pol.path.endswith((".tf", ".tofu")):        # Terraform values: expressions, with the data sources they need
                for key, (fact, block) in terraform_scope(self.repo, pol, self.values).items():
                    if key == "AWS::Partition" and "AWS::Partition" not in subs:
                        subs[key] = "${" + fact.value + "}"
                    if key in stated or key in subs or (key == "AWS::AccountId" and block is not None):
                        continue
                    stated[key] = fact
                    if block is not None:
                        self.add_data_source(pol.path, block)
            for key in ("ClusterName", "AWS::Region", "AWS::AccountId"):
                if key not in subs and key in stated:
                    subs[key] = "${" + stated[key].value + "}" if stated[key].expression else stated[key].value
                    told = self.__dict__.setdefault("_told", set())
                    if (pol.path, key) in told:
                        continue
                    told.add((pol.path, key))
                    what = {"ClusterName": "cluster name", "AWS::Region": "region", "AWS::AccountId": "account"}[key]
                    self.finding("MIG-IAM-009", "info", pol.path, pol.line,
                                 f"{pol.name}: {what} for the scoped statements is {stated[key].value}, from "
                                 f"{stated[key].source}")
        if "ClusterName" not in subs:
            return None                 # a statement replacing one of the policy's keeps its resources when the
        #                                 region is unknown (own_resources); a new statement needs it (add_official)
        from ...facts import interruption_queue
        configured, arn, _ = interruption_queue(pol, self.values, subs)
        if arn is not None:
            subs[QUEUE["placeholder"]] = arn
        return subs

    @staticmethod
    def own_resources(body: dict, st: Statement) -> dict | None:
        """An official statement that replaces one of the policy's, with the policy's own resources where the
        official ones need a fact the policy does not state (its account, its region, the queue); None when such a
        fact is needed outside the resources (a region condition)."""
        if re.search(r"\$\{(AWS::AccountId|AWS::Region|KarpenterInterruptionQueue)", json.dumps(body.get("Resource"))):
            body["Resource"] = st.resources if len(st.resources) != 1 else st.resources[0]
        return None if "${AWS::Region}" in json.dumps(body) else body

    def queue_statement(self, pol: Policy, subs: dict[str, str] | None) -> bool:
        """Whether the official interruption-queue statement can be added to pol: the chart names a queue and its
        ARN is known; else a finding says why it is left out."""
        from ...facts import interruption_queue
        configured, arn, where = interruption_queue(pol, self.values, subs or {})
        if not configured:
            self.finding("MIG-IAM-012", "info", pol.path, pol.line,
                         f"{pol.name}: {QUEUE['sid']} not added: no chart values name an interruption queue "
                         f"({', '.join(QUEUE['chart_keys'][:1])}), so the controller reads none",
                         f"when you turn interruption handling on, add {QUEUE['sid']} scoped to the queue's ARN")
            return False
        if subs is None or QUEUE["placeholder"] not in subs:
            self.finding("MIG-IAM-011", "warning", pol.path, pol.line,
                         f"{pol.name} needs {QUEUE['sid']} for the interruption queue named by {where}, but migrator "
                         "cannot write that queue's ARN here",
                         f"add {QUEUE['sid']} (sqs:DeleteMessage, sqs:GetQueueUrl, sqs:ReceiveMessage) scoped to the "
                         "queue's ARN by hand")
            return False
        return True

    def add_data_source(self, path: str, block: tuple[str, str]) -> None:
        """`data "<type>" "<name>" {}` at the end of a policy's file, once (the scoped statements refer to it)."""
        done = self.__dict__.setdefault("_data_added", set())
        if (path, block) in done:
            return
        done.add((path, block))
        text = self.repo.text(path)
        nl = self.repo.files[path].newline
        sep = "" if text.endswith(nl + nl) else nl if text.endswith(nl) else nl + nl
        self.res.edits.append(TextEdit(path, len(text), len(text),
                                       f'{sep}data "{block[0]}" "{block[1]}" {{}}{nl}', self.rule, order=9))
        self.finding("MIG-IAM-010", "info", path, hclsrc.line_of(text, len(text)),
                     f'data "{block[0]}" "{block[1]}" added: the scoped statements of the controller policy use it')

    def add_official(self, pol: Policy, sids: list[str], after: Statement | None,
                     already: tuple[str, set[str]] | None = None) -> None:
        """Add the official statements `sids` after `after`, scoped as the policy is. `already`: the chart version the
        root runs and those of `sids` it uses too (the root runs without them): one of those that cannot be scoped is
        a warning, not a stop, since the move does not depend on it."""
        text = self.repo.text(pol.path)
        subs = self.substitutions(pol)
        account = None          # a new statement scoped by account (eks:DescribeCluster on the cluster's ARN, the
        if subs is not None and "AWS::AccountId" not in subs:                                         # queue's)
            from ...facts import interruption_queue, terraform_scope
            if pol.path.endswith((".tf", ".tofu")):     # the module's aws_caller_identity, added if needed
                fact, account = terraform_scope(self.repo, pol, self.values)["AWS::AccountId"]
                subs = {**subs, "AWS::AccountId": "${" + fact.value + "}"}
            else:                                       # a policy document stating no account: any account, which
                subs = {**subs, "AWS::AccountId": "*"}  # is the role's own (a role acts in its account only)
                account = ("*", "*")
            arn = interruption_queue(pol, self.values, subs)[1]
            if arn is not None:
                subs[QUEUE["placeholder"]] = arn
        if QUEUE["sid"] in sids and not self.queue_statement(pol, subs):
            sids = [s for s in sids if s != QUEUE["sid"]]
            if not sids:
                return
        if subs is None or after is None or "AWS::Region" not in subs:
            # a statement the official policy scopes by nothing (iam:ListInstanceProfiles on "*") needs no fact
            free = [sid for sid in sids if after is not None and
                    "${" not in json.dumps(_official_sid(sid, self.facts["target"]))]
            held = [sid for sid in sids if sid not in free]
            gaps = [sid for sid in held if already is not None and sid in already[1]]
            held = [sid for sid in held if sid not in gaps]
            if gaps:
                self.finding("MIG-V1X-IAM-006", "warning", pol.path, pol.line,
                             f"{pol.name} lacks the official statement{'s' if len(gaps) > 1 else ''} "
                             f"{', '.join(gaps)}, which Karpenter {already[0]} uses too, and the cluster runs it without "
                             "them (an EC2NodeClass naming its instanceProfile needs no instance profile actions, a "
                             "clusterEndpoint in the chart values no eks:DescribeCluster): the move does not depend "
                             "on them, and migrator cannot tell the cluster name and region to scope them",
                             f"add {', '.join(gaps)} from the v{self.facts['target']} getting-started CloudFormation "
                             "by hand if the cluster needs them (a NodeClass naming its role, no clusterEndpoint)")
            if held:
                self.finding("MIG-IAM-004", "error", pol.path, pol.line,
                             f"{pol.name} needs the official statement{'s' if len(held) > 1 else ''} "
                             f"{', '.join(held)}, but migrator cannot tell the cluster name and region this policy "
                             "is scoped to",
                             f"add {', '.join(held)} from the v{self.facts['target']} getting-started CloudFormation "
                             "by hand")
            if not free:
                return
            sids, subs, account = free, subs or {}, None
        rendered = []
        for sid in sids:
            raw = json.dumps(_official_sid(sid, self.facts["target"]))
            body = _substitute(raw, subs)
            if account == ("*", "*") and ("${AWS::AccountId}" in raw or "${" + QUEUE["placeholder"] in raw):
                account = None
                self.finding("MIG-IAM-009", "info", pol.path, pol.line,
                             f"{pol.name}: account for the scoped statements is * (the role's own account: nothing "
                             "in the policy, the chart values or the options names one)",
                             "give --account-id (or account_id in .migrator.yaml) to name it")
            elif account is not None and account != ("*", "*") and subs["AWS::AccountId"] in body:
                self.add_data_source(pol.path, account)
            # every CloudFormation placeholder of the statement must have its value (the node role's ARN of
            # AllowPassingInstanceRole too: left as written, it would be an interpolation of nothing)
            unknown = sorted({k for k in re.findall(r"\$\{([^}]+)\}", raw)} - set(subs) - {"AWS::Partition"})
            if unknown:
                self.finding("MIG-IAM-004", "error", pol.path, pol.line,
                             f"{pol.name} needs the official statement {sid}, but migrator cannot tell the "
                             + ", ".join(unknown) + " it is scoped to",
                             f"add {sid} from the v{self.facts['target']} getting-started CloudFormation by hand "
                             "(or give --account-id / --region)")
                continue
            st = json.loads(body)
            rendered.append(self.render(pol, st, text, after))
            self.finding("MIG-IAM-005", "info", pol.path, hclsrc.line_of(text, after.start),
                         f"{pol.name}: added official statement {sid} (v{self.facts['target']})")
        if rendered:
            self.insert_after(pol, after, rendered)

    def render(self, pol: Policy, st: dict, text: str, like: Statement) -> str:
        ind = indent_at(text, like.start)
        if pol.syntax == "document":
            step = "  "
            rows = [("sid", hclsrc.quote(st["Sid"])), ("effect", hclsrc.quote(st["Effect"])),
                    ("actions", _hlist(_as_list(st["Action"]), ind + step)),
                    ("resources", _hlist(_as_list(st["Resource"]), ind + step))]
            lines = ["statement {"] + [f"{ind}{step}{k} = {v}" for k, v in rows]
            for test, kv in (st.get("Condition") or {}).items():
                for k, v in kv.items():
                    lines += ["", f"{ind}{step}condition {{", f"{ind}{step * 2}test     = {hclsrc.quote(test)}",
                              f"{ind}{step * 2}variable = {hclsrc.quote_template(k)}",
                              f"{ind}{step * 2}values   = {_hlist(_as_list(v))}", f"{ind}{step}}}"]
            # `=` aligned as terraform fmt does: a value spanning several lines ends the run
            return align_attributes("\n".join(lines + [f"{ind}}}"]))
        if pol.syntax == "hcl":
            body = hclsrc.render_value(st, {}, ind, "  ", template_strings=True)
            return body if pol.style.get("sep", "=") == "=" else re.sub(r"^(\s*\S+)( +)= ", r"\1\2: ", body, flags=re.M)
        lead = pol.style.get("indent", "    ")     # statements sit two levels deep: half of it is one level
        seen: list[tuple[int, int, list[str]]] = []     # the author's key order: the fullest statement's,
        for i, other in enumerate(pol.statements):      # the neighbour's among equals
            try:
                keys = list(json.loads(text[other.start:other.end]).keys())
            except ValueError:
                continue
            seen.append((-len(keys), 0 if other is like else 1, keys))
        order: list[str] = []
        for _, _, keys in sorted(seen, key=lambda x: x[:2]):
            order += [k for k in keys if k not in order]
        if order:
            st = dict(sorted(st.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order)))
        out = json.dumps(st, indent=lead[: len(lead) // 2])
        return out.replace("\n", "\n" + ind)

    def insert_after(self, pol: Policy, st: Statement, clones) -> None:
        text = self.repo.text(pol.path)
        ind = indent_at(text, st.start)
        clones = [clones] if isinstance(clones, str) else clones
        if pol.syntax == "document":
            ins = "".join(f"\n\n{ind}{c}" for c in clones)
            pos = st.end
        else:
            rest = text[st.end:]
            comma = re.match(r"\s*,", rest)
            if comma:
                pos = st.end + comma.end()
                ins = "".join(f"\n{ind}{c}," for c in clones)
            else:
                pos = st.end
                ins = "".join(f",\n{ind}{c}" for c in clones)
        self.res.edits.append(TextEdit(pol.path, pos, pos, to_newline(ins, self.repo.files[pol.path].newline), self.rule,
                                       order=len(self.res.edits)))

    # -- cleanup ---------------------------------------------------------------------------------------
    def cleanup(self, pol: Policy) -> None:
        text = self.repo.text(pol.path)
        old = next(iter(self.facts["tag_keys"]))
        sids = {s.sid for s in pol.statements}
        for i, st, line, replaced in _alpha_scoped(pol, text, self.facts):
            if (replaced and replaced not in sids) or (not replaced and self.twin(pol, st) is None):
                self.finding("MIG-IAM-006", "error", pol.path, line,
                             f"statement {st.sid or '#' + str(i + 1)} of {pol.name} is scoped by {old} and has no "
                             "karpenter.sh/nodepool successor yet; removing it would leave nodes unmanaged",
                             "run the prepare phase first")
                continue
            s, e = _statement_span(text, pol, i)
            self.res.edits.append(TextEdit(pol.path, s, e, "", self.rule))
            self.finding("MIG-IAM-002", "info", pol.path, line,
                         f"statement {st.sid or '#' + str(i + 1)} of {pol.name} (scoped by {old}) removed")


def _alpha_scoped(pol: Policy, text: str, facts: dict = FACTS):
    """(index, statement, line, official successor Sid or None) of each statement scoped by an alpha tag key."""
    old = next(iter(facts["tag_keys"]))
    for i, st in enumerate(pol.statements):
        if not any(old in c.key for c in st.conditions):
            continue
        replaced = next((sid for key, sid in facts["replaced_by_official"].items()
                         if any(c.key == key for c in st.conditions)), None)
        yield i, st, hclsrc.line_of(text, st.start), replaced


def _official_sid(sid: str, version: str = FACTS["target"]) -> dict:
    return next(s for s in official(version) if s.get("Sid") == sid)


def _substitute(s: str, subs: dict[str, str]) -> str:
    s = s.replace("${AWS::Partition}", subs.get("AWS::Partition", "aws"))
    for k, v in subs.items():
        s = s.replace("${" + k + "}", v.replace("\\", "\\\\").replace('"', '\\"'))
    return s


def _hlist(items: list, indent: str = "") -> str:
    """An HCL list of strings: on one line when short, else one item per line (trailing commas, fmt style)."""
    quoted = [hclsrc.quote_template(str(i)) for i in items]
    one = "[" + ", ".join(quoted) + "]"
    if len(one) + len(indent) <= 100 or not indent:
        return one
    return "[\n" + "".join(f"{indent}  {q},\n" for q in quoted) + indent + "]"


def _statement_span(text: str, pol: Policy, i: int) -> tuple[int, int]:
    st = pol.statements[i]
    if pol.syntax == "document":
        s, e = line_start(text, st.start), line_end(text, st.end)
        nxt = line_end(text, e)
        if e < len(text) and not text[e:nxt].strip():
            e = nxt
        return s, e
    if i + 1 < len(pol.statements):
        return line_start(text, st.start), line_start(text, pol.statements[i + 1].start)
    prev = pol.statements[i - 1] if i > 0 else None
    if prev is None:
        return st.start, st.end
    return prev.end, st.end


def _sid_written(text: str, sid: str) -> int:
    """Where a statement id is written in Terraform or JSON text (`"Sid": "X"`, `sid = "X"`), else -1."""
    if sid not in text:                 # the id is written as is: most files never hold it
        return -1
    m = re.search(r'(?i)["\']?sid["\']?\s*[:=]\s*["\']' + re.escape(sid) + r'["\']', text)
    return m.start() if m else -1


def _sids_elsewhere(repo, pol: Policy, sids: list[str]) -> dict[str, str]:
    """Official statement ids written in a policy of the same module that migrator cannot read (a heredoc with
    `%{ if }` directives): sid -> where. That policy grants them to the same controller, so they are neither missing
    nor added to this one; the policies migrator reads are each judged on their own."""
    from ...policies import scan_policies
    d = posixpath.dirname(pol.path)
    read = {}
    for other in scan_policies(repo):
        if posixpath.dirname(other.path) == d and other.statements:
            read.setdefault(other.path, []).append((min(st.start for st in other.statements),
                                                    max(st.end for st in other.statements)))
    out: dict[str, str] = {}
    for p in repo.tf_in_dir(d) if pol.path.endswith(hclsrc.TF_CODE) else []:
        text = repo.text(p)
        for sid in sids:
            at = _sid_written(text, sid)
            if at >= 0 and sid not in out and not any(lo <= at < hi for lo, hi in read.get(p, [])):
                out[sid] = f"{p}:{hclsrc.line_of(text, at)}"
    return out
