"""Rule `v1beta1/workloads`: pods, Helm values and Kustomize patches that use Karpenter keys.

prepare: `karpenter.sh/do-not-evict` / `do-not-consolidate` gain `karpenter.sh/do-not-disrupt` next to them
(same value, same quoting); selectors on `karpenter.sh/provisioner-name` are reported with the OR affinity
that lets pods run on old and new nodes during the roll.
cleanup: the old annotations are removed and `karpenter.sh/provisioner-name` selectors become
`karpenter.sh/nodepool` (NodePools keep the Provisioner's name, so the value is unchanged).
Any YAML file counts (manifests, values files of other charts, patches); Karpenter's own objects and chart
values are handled by the other rules; Helm chart templates are reported, not edited.
"""
from __future__ import annotations

from ...rendered import paths as rendered_paths

from dataclasses import dataclass, field

from ruamel.yaml.comments import CommentedMap, CommentedSeq

from ... import knowledge
from ...edits import TextEdit, line_end, line_start
from ...inventory import KARPENTER_KINDS, Repo, _parse_yaml_docs
from ...model import Finding

RULE = "v1beta1/workloads"
FACTS = knowledge.load("workloads")["v1alpha5->v1beta1"]


@dataclass
class WorkloadsResult:
    edits: list = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    files: list[str] = field(default_factory=list)


def _hits(node, facts: dict, path=()):
    """(map, key, path) for every Karpenter workload key in a parsed document."""
    keys = set(facts["annotations"]) | set(facts["selector_labels"])
    if isinstance(node, CommentedMap):
        for k, v in node.items():
            if k in keys:
                yield node, k, path + (k,)
            elif k == "key" and v in facts["selector_labels"]:
                yield node, k, path + (k,)
            yield from _hits(v, facts, path + (k,))
    elif isinstance(node, CommentedSeq):
        for i, v in enumerate(node):
            yield from _hits(v, facts, path + (i,))


class WorkloadsRule:
    def __init__(self, repo: Repo, phase: str, owns=None, *, facts: dict | None = None, rule: str = RULE):
        """`phase` prepare adds the new keys beside the old ones, anything else replaces them; a later hop
        passes its own table (knowledge/workloads.yaml) and rule name."""
        self.owns = owns or (lambda path: True)
        self.repo = repo
        self.phase = phase
        self.facts = facts or FACTS
        self.rule = rule
        self.res = WorkloadsResult()

    def finding(self, *a):
        self.res.findings.append(Finding(*a))

    def run(self) -> WorkloadsResult:
        FACTS = self.facts
        needles = tuple(sorted(set(FACTS["annotations"]) | set(FACTS["selector_labels"])))
        # every key names Karpenter: one C-speed check before the per-key ones
        common = "karpenter" if all("karpenter" in n for n in needles) else ""
        for p in self.repo.yaml_containing(common):
            sf = self.repo.files[p]
            if not any(n in sf.text for n in needles) or not self.owns(p):
                continue
            if p in self.repo.template_paths:      # Karpenter's own templates and chart values files
                continue
            if p in rendered_paths(self.repo):     # the chart's own output: re-rendered, never edited (MIG-RND-001)
                continue
            if "{{" in sf.text:
                self.finding("MIG-WL-003", "warning", p, 1,
                             "Helm chart template uses Karpenter workload keys; migrator does not edit chart templates",
                             f"replace {', '.join(sorted(n for n in needles if n in sf.text))} by hand: "
                             + self._advice(FACTS))
                continue
            before = len(self.res.edits)
            for doc, m, obj in _parse_yaml_docs(self.repo, p, sf.text, 0, 0, p):
                if isinstance(obj, CommentedMap) and ((obj.get("apiVersion"), obj.get("kind")) in KARPENTER_KINDS or self._karpenter_chart(obj)):
                    continue
                self.document(p, sf, doc, obj)
            if len(self.res.edits) > before:
                self.res.files.append(p)
        return self.res

    @staticmethod
    def _karpenter_chart(obj) -> bool:
        spec = obj.get("spec") if obj.get("kind") == "HelmRelease" else None
        chart = (((spec or {}).get("chart") or {}).get("spec") or {}).get("chart")
        return isinstance(chart, str) and chart.split("/")[-1] in ("karpenter", "karpenter-crd")

    @staticmethod
    def _advice(facts: dict) -> str:
        return "; ".join(f"{a} -> {b}" for a, b in {**facts["annotations"], **facts["selector_labels"]}.items())

    def document(self, p, sf, doc, obj) -> None:
        FACTS = self.facts
        RULE = self.rule
        text = sf.text
        lines = doc.text.splitlines(keepends=True)

        def offset(line: int, col: int) -> int:
            return doc.start + sum(len(x) for x in lines[:line]) + col

        for mp, key, path in _hits(obj, FACTS):
            kl, kc = mp.lc.key(key)
            ks = offset(kl, kc)
            ls, le = line_start(text, ks), line_end(text, ks)
            lineno = text.count("\n", 0, ks) + 1
            if key in FACTS["annotations"]:
                new = FACTS["annotations"][key]
                if self.phase == "prepare":
                    if new in mp:
                        continue
                    line = text[ls:le]
                    added = line.replace(key, new, 1)
                    if not added.endswith(("\n", "\r")):
                        added = sf.newline + added
                    self.res.edits.append(TextEdit(p, le, le, added, RULE))
                    self.finding("MIG-WL-001", "info", p, lineno, f"{key} -> also {new} (v0.32 honours both)", "")
                else:
                    self.res.edits.append(TextEdit(p, ls, le, "", RULE))
                    if new not in mp:
                        added = text[ls:le].replace(key, new, 1)
                        self.res.edits.append(TextEdit(p, ls, ls, added, RULE, order=-1))
                    self.finding("MIG-WL-001", "info", p, lineno, f"{key} removed ({new} replaces it)", "")
                continue
            # selectors on an old node label (key of a nodeSelector, or the `key` of a match expression)
            old_label = mp[key] if key == "key" else key
            new_label = FACTS["selector_labels"][old_label]
            is_expr = key == "key"
            if self.phase == "prepare":
                value = mp.get("values") if is_expr else mp[key]
                self.finding(
                    "MIG-WL-002", "warning", p, lineno,
                    f"pods select nodes by {old_label}{'' if is_expr else ' (nodeSelector)'}: once "
                    "the old nodes are tainted they can only run on nodes that no longer get created",
                    f"until cleanup, let them run on both: nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
                    f".nodeSelectorTerms with one term `{old_label} In {value}` and another "
                    f"`{new_label} In {value}` (terms are ORed); cleanup renames the key to {new_label}")
            else:
                if is_expr and "value" in mp and old_label in FACTS.get("valueless", {}):
                    self.finding("MIG-WL-004", "warning", p, lineno,
                                 f"toleration of {old_label} with value {mp['value']!r}: "
                                 f"{FACTS['valueless'][old_label]}",
                                 f"use key {new_label} with operator: Exists and no value")
                    continue
                if is_expr:
                    vl, vc = mp.lc.value("key")
                    vs = offset(vl, vc)
                    ve = vs + len(text[vs:le].rstrip().split("#")[0].rstrip())
                    raw = text[vs:ve]
                    self.res.edits.append(TextEdit(p, vs, ve, raw.replace(old_label, new_label), RULE))
                else:
                    ke = ks + len(text[ks:le].split(":")[0]) if text[ks] not in "\"'" else \
                        text.index(text[ks], ks + 1) + 1
                    raw = text[ks:ke]
                    self.res.edits.append(TextEdit(p, ks, ke, raw.replace(old_label, new_label), RULE))
                self.finding("MIG-WL-002", "info", p, lineno, f"selector {old_label} -> {new_label}", "")
