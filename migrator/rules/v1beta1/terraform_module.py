"""Rule `v1beta1/terraform_module`: the terraform-aws-modules karpenter module during alpha -> beta.

Stay on v19 (v20's controller policy is scoped by `karpenter.sh/nodepool` and cannot terminate alpha
nodes), at least the safe patch (19.18.0-19.19.0 delete the module's instance profile when instance-profile
creation is enabled), and set `enable_karpenter_instance_profile_creation = true` when EC2NodeClasses use
`spec.role`. v19 scopes instance termination by its discovery tag (`irsa_tag_key`), so every new
EC2NodeClass must tag instances with it. eks-blueprints-addons' karpenter inputs are reported.
"""
from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field

from ... import knowledge
from ...edits import TextEdit, comments_above, indent_at, line_start, to_newline
from ...inventory import Manifest, Repo
from ...model import Finding
from ...sources import hcl as hclsrc
from .helm import parse_version

RULE = "v1beta1/terraform_module"
HOP = "v1alpha5->v1beta1"
FACTS = knowledge.load("iam")["module"]
V20 = knowledge.load("iam")["module_v20"]


@dataclass
class ModuleResult:
    edits: list = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    modules: list[str] = field(default_factory=list)        # addresses
    tf_targets: list[tuple[str, str]] = field(default_factory=list)   # (root module dir, address)
    refs: list[str] = field(default_factory=list)


def _realigned(text: str, path: str, b: hclsrc.Block, new_names: dict[str, str], removed: set[str],
               extras: dict[str, list[str]]) -> tuple[list, dict[str, int]]:
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
                out.append(TextEdit(path, a.start, eq, repl, RULE))
    return out, widths


def _line_after(text: str, offset: int) -> int:
    i = text.find("\n", offset)
    return len(text) if i < 0 else i + 1


def _constraint_version(v: str) -> tuple[str, tuple[int, ...] | None]:
    """('~> ', (19, 16, 0)) from '~> 19.16' / '19.16.0' / '>= 19.0'."""
    m = re.fullmatch(r"\s*(~>|>=|=|<=|>|<)?\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?\s*", v)
    if not m:
        return "", None
    return (m.group(1) or ""), tuple(int(x or 0) for x in m.group(2, 3, 4))


class ModuleRule:
    def __init__(self, repo: Repo, manifests: list[Manifest], phase: str, uses_role: bool,
                 blocked: set[tuple[str, int]] | None = None, deleted: list | None = None, owns=None):
        self.owns = owns or (lambda path: True)
        self.blocked = blocked or set()
        self.deleted = deleted or []          # spans other rules delete in this phase
        self.repo = repo
        self.manifests = manifests
        self.phase = phase
        self.uses_role = uses_role
        self.res = ModuleResult()

    def finding(self, *a):
        self.res.findings.append(Finding(*a))

    def run(self) -> ModuleResult:
        facts = FACTS[HOP]
        for p, b in self.repo.blocks("module"):
            if not self.owns(p):
                continue
            src = b.attr("source").literal() if b.attr("source") is not None else None
            if not isinstance(src, str):
                continue
            if "eks-blueprints-addons" in src and "karpenter" in self.repo.text(p)[b.start:b.end]:
                self.blueprints(p, b)
                continue
            if not re.search(FACTS["source"], src):
                continue
            self.res.modules.append(b.address)
            self.res.tf_targets.append((posixpath.dirname(p), b.address))
            self.res.refs.append(f"{p}:{hclsrc.line_of(self.repo.text(p), b.start)}")
            if self.phase == "prepare" and self.version(p, b, facts):
                # v19-only inputs: the instance-profile flag exists from 19.18 (the version is moved there)
                self.instance_profile_input(p, b, facts)
                self.discovery_tag(p, b, facts)
            elif self.phase == "cleanup":
                self.to_v20(p, b)
        return self.res

    # -- cleanup: v19 -> v20 in one mapping pass ------------------------------------------------------
    def to_v20(self, p: str, b: hclsrc.Block) -> None:
        text = self.repo.text(p)
        v = b.attr("version")
        op, ver = _constraint_version(str(v.literal())) if v is not None and v.literal() else ("", None)
        if ver is None or ver[0] != FACTS[HOP]["stay_major"]:
            return
        if self.blocked:
            self.finding("MIG-MOD-007", "info", p, hclsrc.line_of(text, b.start),
                         f"{b.address} stays on v19 while v1alpha5 objects remain; it moves to v20 in the cleanup "
                         "that removes the last of them")
            return
        nl = self.repo.files[p].newline
        ind = indent_at(text, next(iter(b.attributes.values())).start) if b.attributes else "  "
        edits: list[TextEdit] = [TextEdit(p, v.start, v.end, hclsrc.quote(V20["pin"] if op in ("", "=")
                                                                          else ".".join(V20["pin"].split(".")[:2])
                                                                          if op != "~>" else "~> 20.37"), RULE)]
        present = dict(b.attributes)
        renamed = []
        new_names: dict[str, str] = {}
        for name, a in present.items():
            if name in V20["removed"]:
                s0 = comments_above(text, line_start(text, a.start))
                if s0 > 0 and not text[line_start(text, s0 - 1):s0].strip():
                    s0 = line_start(text, s0 - 1)          # and the blank line that separated it
                edits.append(TextEdit(p, s0, _line_after(text, a.end), "", RULE))
                renamed.append(f"{name} removed")
                continue
            targets = V20["inputs"].get(name)
            if not targets:
                continue
            new_names[name] = targets[0]
            renamed.append(f"{name} -> {', '.join(targets)}")
        extras = {name: V20["inputs"][name][1:] for name in new_names if len(V20["inputs"][name]) > 1}
        realigned, widths = _realigned(text, p, b, new_names, set(V20["removed"]), extras)
        edits.extend(realigned)
        for name, more in extras.items():
            a = present[name]
            for extra in more:
                edits.append(TextEdit(p, _line_after(text, a.end), _line_after(text, a.end),
                                      f"{ind}{extra.ljust(widths.get(name, len(extra)))} = {a.expr.source}{nl}",
                                      RULE, order=1))
        # pins against replacement and behaviour changes (computed from the v19 argument set)
        pins = []
        cluster = present.get("cluster_name")
        creates_controller = not (present.get("create_irsa") and present["create_irsa"].expr.literal() is False)
        if creates_controller and "irsa_name" not in present and cluster is not None:
            name_expr = V20["pins"]["controller_name"].replace("${cluster_name}", "${" + cluster.expr.source + "}")
            pins.append(("iam_role_name", hclsrc.quote_template(name_expr)))
            if "irsa_policy_name" not in present:
                pins.append(("iam_policy_name", hclsrc.quote_template(name_expr)))
        if creates_controller and "irsa_description" not in present:
            pins.append(("iam_policy_description", hclsrc.quote(V20["pins"]["policy_description"])))
        if V20["enable_irsa_when"] in present and "enable_irsa" not in present:
            pins.append(("enable_irsa", "true"))
        refs = self.instance_profile_refs(b.labels[0], p)
        if refs and "create_instance_profile" not in present:
            pins.append(("create_instance_profile", "true"))
        if pins:
            width = max(len(k) for k, _ in pins)
            body = "".join(f"{ind}{k.ljust(width)} = {val}{nl}" for k, val in pins)
            pos = line_start(text, b.body_end)
            edits.append(TextEdit(p, pos, pos, f"{nl}{ind}# pinned by migrator: v19 values v20 would change{nl}{body}",
                                  RULE, order=2))
        self.res.edits.extend(edits)
        self.outputs(b.labels[0], p)
        line = hclsrc.line_of(text, b.start)
        self.finding("MIG-MOD-008", "info", p, line,
                     f"{b.address} -> v{V20['pin']} in one mapping pass: " + "; ".join(renamed + [
                         f"{k} pinned" for k, _ in pins]))
        if not refs and "create_instance_profile" not in present:
            self.finding("MIG-MOD-009", "info", p, line,
                         f"{b.address}: nothing references the module's instance profile any more; v20 "
                         "(create_instance_profile = false) removes it")
        self.finding("MIG-MOD-010", "warning", p, line,
                     f"{b.address} v20 creates an EKS access entry for the node role (create_access_entry = true)",
                     "if the node role is mapped in aws-auth or has an access entry already, set "
                     "create_access_entry = false before applying")

    def module_files(self, where: str) -> list[str]:
        """The .tf files of the Terraform module that calls a module (its directory): the only place
        `module.<name>.*` can be referenced."""
        return self.repo.tf_in_dir(posixpath.dirname(where))

    def instance_profile_refs(self, module: str, where: str) -> list[str]:
        pat = re.compile(rf"\bmodule\.{re.escape(module)}\.(" + "|".join(V20["instance_profile_outputs"]) + r")\b")
        out = []
        for p in self.module_files(where):
            for m in pat.finditer(self.repo.files[p].text):
                if any(dp == p and s <= m.start() < e for dp, s, e in self.deleted):
                    continue              # removed by this phase (e.g. settings.aws.defaultInstanceProfile)
                out.append(f"{p}:{hclsrc.line_of(self.repo.files[p].text, m.start())}")
        return out

    def outputs(self, module: str, where: str) -> None:
        """Follow renamed outputs into every reference in the calling module (one regex pass per file)."""
        pat = re.compile(rf"\bmodule\.{re.escape(module)}\.(" + "|".join(V20["outputs"]) + r")\b")
        for p in self.module_files(where):
            text = self.repo.files[p].text
            for m in pat.finditer(text):
                self.res.edits.append(TextEdit(p, m.start(1), m.end(1), V20["outputs"][m.group(1)], RULE))
                self.finding("MIG-MOD-011", "info", p, hclsrc.line_of(text, m.start()),
                             f"module.{module}.{m.group(1)} -> module.{module}.{V20['outputs'][m.group(1)]}")

    def version(self, p: str, b: hclsrc.Block, facts: dict) -> bool:
        """Check / move the module version; True when the module is (now) on the v19 line."""
        text = self.repo.text(p)
        v = b.attr("version")
        line = hclsrc.line_of(text, b.start)
        if v is None or v.literal() is None:
            self.finding("MIG-MOD-001", "warning", p, line,
                         f"{b.address}: the module version is not pinned; v20+ cannot manage v1alpha5 nodes",
                         f'pin version = "{facts["pin"]}" until the nodes have rolled')
            return False
        op, ver = _constraint_version(str(v.literal()))
        if ver is None:
            self.finding("MIG-MOD-001", "warning", p, line, f"{b.address}: version {v.literal()!r} not understood",
                         f'pin version = "{facts["pin"]}"')
            return False
        if ver[0] > facts["stay_major"]:
            self.finding("MIG-MOD-002", "error", p, hclsrc.line_of(text, v.start),
                         f"{b.address} is v{ver[0]}: its controller policy is scoped by karpenter.sh/nodepool and "
                         "cannot terminate nodes launched by v1alpha5 Provisioners",
                         f'go back to version = "{facts["pin"]}" until every Machine is gone, then move to v20 '
                         "(inputs renamed: see the v1 hop)")
            return False
        if ver < parse_version(facts["min_safe"]) or ver[0] < facts["stay_major"]:
            new = facts["pin"] if op in ("", "=") else ".".join(facts["pin"].split(".")[:2])
            rendered = f"{op} {new}".strip() if op and op != "=" else new
            if op == "=":
                rendered = f"= {new}"
            self.res.edits.append(TextEdit(p, v.start, v.end, hclsrc.quote(rendered), RULE))
            self.finding("MIG-MOD-003", "info", p, hclsrc.line_of(text, v.start),
                         f"{b.address}: version {v.literal()} -> {rendered} (19.18.0-19.19.0 delete the module's "
                         f"instance profile with {facts['instance_profile_input']}; v{facts['stay_major']} keeps "
                         "managing the alpha nodes)")
        return True

    def instance_profile_input(self, p: str, b: hclsrc.Block, facts: dict) -> None:
        if not self.uses_role:
            return
        name = facts["instance_profile_input"]
        text = self.repo.text(p)
        cur = b.attr(name)
        if cur is not None:
            if cur.literal() is True:
                return
            self.res.edits.append(TextEdit(p, cur.start, cur.end, "true", RULE))
        else:
            last = max(b.attributes.values(), key=lambda a: a.end) if b.attributes else None
            ind = indent_at(text, last.start) if last else "  "
            pos = line_start(text, b.body_end)
            ins = f"\n{ind}# v1beta1: Karpenter creates instance profiles from EC2NodeClass.spec.role\n{ind}{name} = true\n"
            self.res.edits.append(TextEdit(p, pos, pos, to_newline(ins, self.repo.files[p].newline), RULE))
        self.finding("MIG-MOD-004", "info", p, hclsrc.line_of(text, b.start),
                     f"{b.address}: {name} = true (EC2NodeClasses use spec.role; the controller needs the "
                     "iam:*InstanceProfile permissions)")

    def discovery_tag(self, p: str, b: hclsrc.Block, facts: dict) -> None:
        attr = b.attr(facts["discovery_tag_input"])
        key = attr.literal() if attr is not None and attr.literal() else facts["discovery_tag_default"]
        for m in self.manifests:
            if m.era != "alpha" or m.kind != "AWSNodeTemplate":
                continue
            tags = (m.obj.get("spec") or {}).get("tags") or {}
            if key not in tags:
                self.finding("MIG-MOD-005", "warning", m.path, m.line,
                             f"{b.address} (v19) lets the controller terminate only instances tagged {key}; "
                             f"AWSNodeTemplate {m.masked.unmask(str(m.name))} (and its EC2NodeClass) does not set it",
                             f"add tag {key}: <cluster name> to spec.tags, or nodes cannot be terminated")

    def blueprints(self, p: str, b: hclsrc.Block) -> None:
        text = self.repo.text(p)
        self.finding("MIG-MOD-006", "warning", p, hclsrc.line_of(text, b.start),
                     f"{b.address} (eks-blueprints-addons) installs Karpenter: its karpenter inputs (chart version, "
                     "values, karpenter_enable_instance_profile_creation) are not rewritten by migrator",
                     "set the chart version to 0.32.10, move settings.aws.* values to settings.*, and keep "
                     "karpenter_enable_instance_profile_creation = true")
