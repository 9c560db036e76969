"""Rule `v1x/terraform_module`: can the terraform-aws-modules karpenter module give the target its IAM?

The module's policy covers Karpenter up to a minor (knowledge/minors.yaml `module_coverage`). When the target is
beyond it: a v21 module moves to the newest v21 (same major, no input changes); a v20 module moves to v21
(knowledge/karpenter_module.yaml `majors`: IRSA inputs, enable_pod_identity and enable_v1_permissions removed,
iam_policy_statements `conditions` -> `condition`) with an explicit controller identity: IRSA kept the v21 way
(a trust document the caller owns through iam_role_source_assume_policy_documents, no Pod Identity association)
or EKS Pod Identity (association on, namespace and service account matched to the chart, the role-arn annotation
removed from the chart values, the Pod Identity Agent add-on checked). Default: what the root uses today;
`--identity` / `.migrator.yaml identity` chooses. Any other module is held where its policy reaches.
"""
from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field

from ... import knowledge, modmajor, policysize
from ...edits import TextEdit
from ...model import Finding
from ...path import MINORS, newest_patch, parse_version
from ...sources import hcl as hclsrc
from ..v1 import terraform_module as v1mod
from .plan import minor_of

RULE = "v1x/terraform_module"


@dataclass
class ModuleResult(v1mod.ModuleResult):
    cap: str | None = None              # newest chart version the module's IAM allows, when below the target
    cap_reason: str | None = None
    value_rows: list = field(default_factory=list)    # chart value rows the module move needs (v1x/helm applies them)
    to_v21: list = field(default_factory=list)        # (address, identity) of calls moved to v21
    after: dict = field(default_factory=dict)         # address -> the module version the plan leaves
    remapped: set = field(default_factory=set)        # calls given the v19 -> v20 pass (nothing else this run)
    unsure: set = field(default_factory=set)          # calls given the inline policy for a name migrator cannot read


def unit_modules(ctx):
    """(unit, module block, version) of every Terragrunt unit of this root whose source is the karpenter module
    (`tfr:///terraform-aws-modules/eks/aws//modules/karpenter?version=...`): its inputs as the call's arguments."""
    from ...inventory.terragrunt import karpenter_module_units, module_block
    for u in karpenter_module_units(ctx.repo):
        if ctx.owns(u.path):
            b = module_block(ctx.repo, u, "karpenter")
            v = b.attr("version") if b is not None else None
            if b is not None:
                yield u, b, (tuple(int(x) for x in v.literal().split(".")) if v is not None else None)


def _units(ctx, res: ModuleResult, want: str) -> None:
    """A unit of the karpenter module whose policy does not cover the target: said, with the release that does (the
    unit's source is not edited: the version is inside its `?version=` and a major move renames inputs)."""
    for u, b, version in unit_modules(ctx):
        covered = v1mod.covers(version, b)
        line = 1 + ctx.repo.text(u.path)[: ctx.repo.text(u.path).find("source")].count("\n")
        if version is None or covered is None or parse_version(covered) >= parse_version(want):
            continue
        newest = v1mod.V1["newest"]
        src = u.source
        at = src.expr.source.find("version=") if src is not None and src.literal else -1
        if version[0] >= 21 and at >= 0:    # same major: only the version inside the source moves
            start = src.expr.start + at + len("version=")
            old = re.match(r"v?[\d.]+", src.expr.source[at + len("version="):]).group(0)
            res.edits.append(TextEdit(src.path, start, start + len(old), newest, RULE))
            res.after[u.path] = parse_version(newest)
            res.modules.append(f"terragrunt unit {u.dir}")
            res.tf_targets.append((u.dir, ""))         # the unit is the module: applied whole
            res.findings.append(Finding(
                "MIG-V1X-MOD-001", "info", src.path, hclsrc.line_of(ctx.repo.text(src.path), src.expr.start),
                f"terragrunt unit {u.dir}: karpenter module {old} -> {newest} in its source: its controller policy "
                f"covers Karpenter {covered} only; {newest} covers {want}"))
            continue
        cap = newest_patch(covered) if parse_version(covered) >= (1, 0) else None
        res.cap = cap if res.cap is None or (cap and parse_version(cap) < parse_version(res.cap)) else res.cap
        res.cap_reason = (f"terragrunt unit {u.dir} calls the karpenter module {'.'.join(map(str, version))}, whose "
                          f"policy covers Karpenter {covered} at most")
        res.findings.append(Finding(
            "MIG-V1X-MOD-009", "warning", u.path, line,
            f"terragrunt unit {u.dir} calls the terraform-aws-modules karpenter module "
            f"{'.'.join(map(str, version))}: its controller policy covers Karpenter {covered} at most, and {want} needs "
            f"more; the chart is held at {cap or covered}",
            f"move the unit's source to ?version={newest} (v21 renamed and removed inputs: see docs/hops/minors.md), "
            "then run migrator again"))


INPUTS = knowledge.load("karpenter_module_inputs")
META = {"source", "version", "providers", "count", "for_each", "depends_on"}


def installed(b) -> tuple[int, ...] | None:
    return modmajor.installed(b, INPUTS)


def _span(name: str):
    got = INPUTS["inputs"].get(name)
    return None if got is None else (parse_version(got[0]), parse_version(got[1]) if got[1] else None)


def stale_inputs(ctx, res: ModuleResult) -> None:
    """Every input a call passes that the release it runs does not have (knowledge/karpenter_module_inputs.yaml,
    from the module's variables.tf per release): terraform plan would fail on it. An input a later release of the
    same major added: the version raised to that release (the smallest that has it); v20 inputs on v21 (a bot bumped
    the major): removed where v21 always has their meaning, an error for the IRSA trust; v19 inputs on v20: the v20
    move in one mapping pass (several names changed meaning), the pinned version kept; anything else said."""
    row = V21
    irsa = set(row["identity"]["irsa_inputs"]) | {"irsa_namespace_service_accounts", "irsa_assume_role_condition_test"}
    newest = parse_version(INPUTS["newest"])
    for p, b, _ver in v1mod.modules(ctx):
        at = installed(b)
        if at is None:
            continue
        text = ctx.repo.text(p)
        shown = ".".join(map(str, at)).replace(".999", ".x")
        v19: list[str] = []
        raise_to: list[tuple[str, tuple]] = []
        dropped: list = []
        for name, a in b.attributes.items():
            if name in META:
                continue
            line = hclsrc.line_of(text, a.start)
            span = _span(name)
            if span is None:
                if at <= newest:              # a newer release than migrator read may have added it: not said
                    res.findings.append(Finding(
                        "MIG-V1X-MOD-012", "warning", p, line,
                        f"{b.address} runs {shown}, which has no input {name}: terraform plan fails",
                        f"remove {name} or find its name in the module's UPGRADE documents"))
                continue
            first, last = span
            if at < first:
                if at[0] == first[0]:
                    raise_to.append((name, first))
                else:
                    res.findings.append(Finding(
                        "MIG-V1X-MOD-012", "warning", p, line,
                        f"{b.address} runs {shown}; {name} arrived in {'.'.join(map(str, first))}: terraform plan "
                        "fails", f"remove {name}, or move the module to {'.'.join(map(str, first))} or newer"))
            elif last is not None and at > last and last[0] == 19:
                v19.append(name)
            elif last is not None and at > last and last[0] == 20:
                why = row["removed"].get(name)
                if name in irsa:
                    res.findings.append(Finding(
                        "MIG-V1X-MOD-010", "error", p, line,
                        f"{b.address} is pinned at v21, which has no {name} ({why}): terraform plan fails, and "
                        "removing it alone would leave the controller without the IRSA trust",
                        f"give the trust through {row['identity']['trust_input']} (docs/hops/minors.md, the v20 -> v21 "
                        "move), or set the version back to v20 and let migrator plan the move"))
                elif why is not None:
                    dropped.append(a)
                    res.findings.append(Finding("MIG-V1X-MOD-011", "info", p, line,
                                                f"{b.address} is pinned at v21: {name} removed ({why})"))
                else:
                    res.findings.append(Finding(
                        "MIG-V1X-MOD-012", "warning", p, line,
                        f"{b.address} runs {shown}, whose inputs have no {name} (v20's last was "
                        f"{'.'.join(map(str, last))}): terraform plan fails",
                        f"remove {name} or find its v21 name in the module's UPGRADE-21.0.md"))
        res.edits += modmajor.remove_attributes(text, p, dropped, RULE)
        if v19:
            _v19_leftovers(ctx, res, p, b, at, v19)
        if raise_to:
            _raise(ctx, res, p, b, raise_to)


def _v19_leftovers(ctx, res: ModuleResult, p: str, b, at: tuple, names: list[str]) -> None:
    """A call pinned at v20+ that still passes v19's inputs (a bot bumped the major). On v20, when v20's policy
    serves the target, the v19 -> v20 mapping pass is planned with the v1 permissions, the pinned version kept;
    otherwise (v21, or a target beyond v20's policy, which needs v21 next) the renames are an error that lists them:
    two majors of renames in one run cannot be checked (several names changed meaning)."""
    line = hclsrc.line_of(ctx.repo.text(p), b.start)
    v19 = modmajor.major_row(19)
    v20_covers = next(r["karpenter"] for r in reversed(MINORS["module_coverage"]) if parse_version(r["from"])[0] == 20)
    want = minor_of(ctx.target.chart)
    v1_input = v1mod.V1["input"]
    if at[0] == 20 and want and parse_version(want) <= parse_version(v20_covers) and at >= parse_version(v1mod.V1["min"]):
        from ..v1beta1.terraform_module import v20_move
        edits: list = []
        said = v20_move(ctx.repo, p, b, RULE, edits, extra=[(v1_input, "true")])
        v = b.attr("version")
        res.edits.extend(e for e in edits if not (v is not None and e.path == p and e.start == v.start))  # kept
        res.remapped.add(b.address)
        res.findings.append(Finding(
            "MIG-V1X-MOD-017", "info", p, line,
            f"{b.address} is pinned at v20 but passes v19's inputs ({', '.join(names)}): the v19 -> v20 mapping pass "
            f"is planned with {v1_input} = true, the pinned version kept"))
        res.findings.extend(said)
        return
    renames = [f"{n} -> {', '.join(v19['inputs'][n])}" for n in b.attributes if n in v19["inputs"]]
    removed = [n for n in b.attributes if n in v19["removed"]]
    res.remapped.add(b.address)
    res.findings.append(Finding(
        "MIG-V1X-MOD-018", "error", p, line,
        f"{b.address} runs {'.'.join(map(str, at))} but passes v19's inputs ({', '.join(names)}): terraform plan "
        "fails; v19 -> v20 renamed them in one pass where several names changed meaning (iam_role_* was the node "
        "role's), so migrator does not guess them here",
        "rename in one pass: " + "; ".join(renames + [f"{n} removed" for n in removed]) +
        " (and pin the v19 names: docs/places/terraform.md), then run migrator again"))


def _raise(ctx, res: ModuleResult, p: str, b, wanted: list[tuple[str, tuple]]) -> None:
    """Inputs a later release of the pinned major added: the version moves to the first release that has them."""
    v = b.attr("version")
    to = max(f for _, f in wanted)
    new = ".".join(map(str, to))
    raw = str(v.literal())
    from ...versions import constraint
    op, _ = constraint(raw)
    rendered = new if op in ("", "=") and "," not in raw else None
    if op == "=":
        rendered = f"= {new}"
    line = hclsrc.line_of(ctx.repo.text(p), v.start)
    names = ", ".join(n for n, _ in wanted)
    if rendered is None:
        res.findings.append(Finding(
            "MIG-V1X-MOD-012", "warning", p, line,
            f"{b.address} ({raw}) may run a release without {names} (from {new}): terraform plan fails there",
            f"raise the constraint to {new} or newer"))
        return
    res.edits.append(TextEdit(p, v.start, v.end, hclsrc.quote(rendered), RULE))
    res.after[b.address] = to
    res.findings.append(Finding(
        "MIG-V1X-MOD-019", "info", p, line,
        f"{b.address}: version {raw} -> {rendered}, the first release with {names} (the call passes them; "
        f"{raw} has not: terraform plan fails)"))


def run(ctx, phase: str) -> ModuleResult:
    res = ModuleResult()
    if ctx.only_rules is not None:
        # a root whose Karpenter version is not known: only what is right at any version (the inputs the pinned
        # release has, the policy within IAM's quota); nothing that moves the module for a target
        stale_inputs(ctx, res)
        quota(ctx, res)
        res.modules = [b.address for _, b, _ in v1mod.modules(ctx)] if res.edits else []
        res.tf_targets = [(posixpath.dirname(p), b.address) for p, b, _ in v1mod.modules(ctx)] if res.edits else []
        return res
    base = v1mod.run(ctx, phase)
    stale_inputs(ctx, res)
    for k in ("modules", "refs", "tf_targets", "findings"):
        getattr(res, k).extend(getattr(base, k))
    target = ctx.target.chart
    want = minor_of(target)
    _units(ctx, res, want)
    for p, b, ver in v1mod.modules(ctx):
        if b.address in res.remapped:
            continue                    # its inputs move first; the next run sees a v20 call
        text = ctx.repo.text(p)
        line = hclsrc.line_of(text, b.start)
        version = ver[1] if ver else None
        covered = v1mod.covers(version, b)
        if covered is None or parse_version(covered) >= parse_version(want):
            continue
        newest = v1mod.V1["newest"]
        if version[0] == V21["from"]:
            to_v21(ctx, res, p, b, want, covered)
            continue
        if version[0] >= 21 and not v1mod.uses_irsa(b):
            v = b.attr("version")
            op = ver[0]
            if getattr(ctx, "since", None):     # a bump: the smallest release that covers it, not the newest
                newest = floor(want, version[0]) or newest
            res.after[b.address] = parse_version(newest)
            new = newest if op in ("", "=") else ".".join(newest.split(".")[:2])
            rendered = f"{op} {new}".strip() if op and op != "=" else (f"= {new}" if op == "=" else new)
            res.edits.append(TextEdit(p, v.start, v.end, hclsrc.quote(rendered), RULE))
            res.findings.append(Finding("MIG-V1X-MOD-001", "info", p, hclsrc.line_of(text, v.start),
                                        f"{b.address}: version {v.literal()} -> {rendered}: its controller policy "
                                        f"covers Karpenter {covered} only; {newest} covers {want}"))
            continue
        cap = newest_patch(covered) if parse_version(covered) >= (1, 0) else None
        why = (f"{b.address} ({'.'.join(map(str, version))}) gives the controller the IAM of Karpenter {covered} at "
               f"most; {want} needs more")
        res.cap = cap if res.cap is None or (cap and parse_version(cap) < parse_version(res.cap)) else res.cap
        res.cap_reason = why
        irsa = v1mod.uses_irsa(b)
        res.findings.append(Finding(
            "MIG-V1X-MOD-002", "warning", p, line,
            why + (f": the chart is held at {cap}" if cap else "") + (" (it uses IRSA, which v21 removed)" if irsa else ""),
            f"either move the module to {newest} with EKS Pod Identity (v21 has no IRSA: set "
            "create_pod_identity_association = true, drop enable_irsa/irsa_* and enable_v1_permissions, remove the "
            "role-arn service-account annotation, AWS provider >= 6), or keep it and add the missing statements of "
            f"the official {want} policy through iam_policy_statements; then run migrator again"))
    quota(ctx, res)
    return res


def floor(want: str, major: int) -> str | None:
    """The first release of a module major whose policy covers a Karpenter minor (knowledge/minors.yaml
    module_coverage)."""
    rows = [r for r in MINORS["module_coverage"] if parse_version(r["from"])[0] == major
            and parse_version(r["karpenter"]) >= parse_version(want)]
    return rows[0]["from"] if rows else None


POLICY = modmajor.FACTS["policy"]
Q = policysize.Q


def _left(ctx, res: ModuleResult, b) -> tuple[int, ...] | None:
    """The module release a call installs once the plan is applied (unpinned: the newest)."""
    if b.address in res.after:
        return res.after[b.address]
    return installed(b) if b.attr("version") is not None else parse_version(v1mod.V1["newest"])


def _where(scope) -> str:
    said = [f"{k} from {w}" for k, w in scope.sources.items()]
    return "; ".join(said + [f"{a} not stated" for a in scope.assumed])


def policy_size(ctx, res: ModuleResult, p: str, b, version: tuple[int, ...], moved: bool = False,
                known: dict | None = None, region: tuple | None = None) -> bool:
    """Check the controller policy a call leaves behind against IAM's quota; True when enable_inline_policy = true
    must be added (the caller adds it: a fresh attribute, or its move's extra inputs). A release the plan moves the
    call to (`moved`) gets the inline policy also when the cluster name is not known and a plausible one exceeds."""
    given = getattr(ctx.options, "cluster_name", None)
    got = policysize.module_policy(ctx.repo, p, b, version, given_name=given, known=known, region=region)
    if got is None:
        return False
    sz, scope = got
    line = hclsrc.line_of(ctx.repo.text(p), b.start)
    at = ".".join(map(str, version)).replace(".999", ".x")
    inline_in = POLICY["inline"]["input"]
    kind = "inline role policy" if sz.inline else "managed policy"
    if sz.over is None and moved and not sz.inline and policysize.inline_allowed(version) and \
            sz.longest_name < Q["plausible_name"]["typical"]:
        res.findings.append(Finding(
            "MIG-V1X-MOD-013", "info", p, line,
            f"{b.address} -> {at}: migrator cannot read the cluster name, and the controller managed policy of {at} "
            f"is {sz.chars:,} characters plus {sz.per_name_char} per character of it ({_where(scope)}): a name longer "
            f"than {sz.longest_name} characters would exceed IAM's {Q['managed']:,}-character quota, so "
            f"{inline_in} = true is planned with the move (an inline role policy may hold {Q['inline']:,})"))
        res.unsure.add(b.address)
        return True
    if sz.over is None:
        if sz.longest_name < Q["plausible_name"]["long"]:
            way = (f"set {inline_in} = true (an inline policy may hold {Q['inline']:,})" if
                   policysize.inline_allowed(version) and not sz.inline else
                   f"keep the name within {sz.longest_name} characters")
            res.findings.append(Finding(
                "MIG-V1X-MOD-015", "warning", p, line,
                f"{b.address} at {at}: migrator cannot read the cluster name, and the controller {kind} is "
                f"{sz.chars:,} characters plus {sz.per_name_char} per character of it ({_where(scope)}): a name longer "
                f"than {sz.longest_name} characters exceeds IAM's {sz.quota:,}-character quota (LimitExceeded: "
                "Cannot exceed quota for PolicySize)",
                f"if the cluster's name is longer, {way}; or give the name (--cluster-name) to have it checked"))
        return False
    if not sz.over:
        return False
    if sz.inline:
        res.findings.append(Finding(
            "MIG-V1X-MOD-016", "warning", p, line,
            f"{b.address} at {at}: the controller inline policy is {sz.chars:,} characters ({_where(scope)}), over "
            f"IAM's {Q['inline']:,}-character quota for a role's inline policies",
            "set create_iam_role = false and give the module a role of your own whose policy is split in two "
            "managed policies"))
        return False
    if policysize.inline_allowed(version):
        inline = policysize.module_policy(ctx.repo, p, b, version, inline=True, given_name=given, known=known,
                                          region=region)[0]
        res.findings.append(Finding(
            "MIG-V1X-MOD-013", "info" if inline.chars <= Q["inline"] else "warning", p, line,
            f"{b.address} at {at}: the controller managed policy is {sz.chars:,} characters ({_where(scope)}), over "
            f"IAM's {Q['managed']:,}-character quota (LimitExceeded: Cannot exceed quota for PolicySize): "
            f"{inline_in} = true planned, an inline role policy of up to {Q['inline']:,} "
            "(Terraform replaces the policy and its attachment by aws_iam_role_policy.controller)"))
        return True
    res.findings.append(Finding(
        "MIG-V1X-MOD-014", "warning", p, line,
        f"{b.address} at {at}: the controller managed policy is {sz.chars:,} characters ({_where(scope)}), over IAM's "
        f"{Q['managed']:,}-character quota: terraform apply fails with LimitExceeded: Cannot exceed quota for "
        "PolicySize",
        f"move the module to {POLICY['inline']['since']} or newer and set {inline_in} = true (an inline policy may hold "
        f"{Q['inline']:,}), or use a shorter cluster name"))
    return False


def _unit_quota(ctx, res: ModuleResult) -> None:
    """Terragrunt units of the registry karpenter module: the same check with the unit's evaluated inputs (its
    locals, includes and dependencies) and region; the input goes into the unit's `inputs`."""
    from ...inventory.terragrunt import region_of
    for u, b, ver in unit_modules(ctx):
        version = res.after.get(u.path) or ver
        if version is None:
            continue
        known = {k: v.value for k, v in u.inputs.items() if v.value is not None and not isinstance(v.value, dict)}
        region = region_of(ctx.repo, u)
        if not policy_size(ctx, res, u.path, b, tuple(version), moved=u.path in res.after, known=known,
                           region=region):
            continue
        cur = b.attr(POLICY["inline"]["input"])
        if cur is not None and cur.end > cur.start:
            res.edits.append(TextEdit(u.path, cur.start, cur.end, "true", RULE))
        else:
            res.edits.append(modmajor.insert_block(
                ctx.repo.text(u.path), u.path, b,
                "set by migrator: the controller policy " + ("may be, with a longer cluster name, " if b.address in
                                                              res.unsure else "is ")
                + "over IAM's 6,144-character managed-policy quota",
                [(POLICY["inline"]["input"], "true")], ctx.repo.files[u.path].newline, RULE))


def _bumped(ctx, p: str, b) -> bool:
    """--since: the bump moved this call's version (a release the bump chose, as if the plan had)."""
    pins = getattr(ctx.options, "since_modules", None) or {}
    key = f"{p}|{b.address}"
    v = b.attr("version")
    return key in pins and v is not None and str(v.literal()) != pins[key]


def quota(ctx, res: ModuleResult) -> None:
    """Every karpenter module call of the root, at the release the plan leaves it on: its policy within quota."""
    _unit_quota(ctx, res)
    moved = {a for a, _ in res.to_v21}
    for p, b, _ver in v1mod.modules(ctx):
        if b.address in moved or b.address in res.remapped:
            continue                    # checked by its move (the input rides with it)
        if not policy_size(ctx, res, p, b, _left(ctx, res, b), moved=b.address in res.after or _bumped(ctx, p, b)):
            continue
        cur = b.attr(POLICY["inline"]["input"])
        if cur is not None:
            res.edits.append(TextEdit(p, cur.start, cur.end, "true", RULE))
        else:
            res.edits.append(modmajor.insert_block(
                ctx.repo.text(p), p, b,
                "set by migrator: the controller policy " + ("may be, with a longer cluster name, " if b.address in
                                                              res.unsure else "is ")
                + "over IAM's 6,144-character managed-policy quota",
                [(POLICY["inline"]["input"], "true")], ctx.repo.files[p].newline, RULE))


V21 = modmajor.major_row(20)
ID = V21["identity"]


def identity_of(ctx, b) -> str:
    """The controller identity after the move: --identity / .migrator.yaml, else what the call uses today."""
    chosen = getattr(ctx.options, "identity", None)
    if chosen:
        return chosen
    uses_irsa = any(k in b.attributes for k in ID["irsa_inputs"]) and _literal(b, "enable_irsa") is not False
    return "irsa" if uses_irsa else "pod-identity"


def _literal(b, name):
    e = b.attr(name)
    return e.literal() if e is not None else None


def to_v21(ctx, res: ModuleResult, p: str, b, want: str, covered: str) -> None:
    repo = ctx.repo
    text = repo.text(p)
    line = hclsrc.line_of(text, b.start)
    need = V21["requires"]["aws_provider"]
    capped = modmajor.capped_eks(repo, posixpath.dirname(p) or ".")
    if capped:
        # terraform init could not install v21 beside this eks module: no move is written (a plan never contradicts
        # its own finding); the chart stops where v20's policy reaches until the eks module moves (issue 55)
        cap = newest_patch(covered) if parse_version(covered) >= (1, 0) else None
        res.cap = cap if res.cap is None or (cap and parse_version(cap) < parse_version(res.cap)) else res.cap
        res.cap_reason = (f"{b.address} stays on v{V21['from']} (its policy covers Karpenter {covered} at most): "
                          f"v{V21['version']} needs the AWS provider >= {need}.0, which the eks module caps below")
        for ep, eb, ver in capped:
            v = eb.attr("version")
            res.findings.append(Finding(
                "MIG-V1X-MOD-020", "warning", ep, hclsrc.line_of(repo.text(ep), v.start),
                f"{eb.address} ({v.literal()}) installs v{'.'.join(map(str, ver))}, which allows the AWS provider "
                f"below {need}.0 only; {b.address} v{V21['version']} needs >= {need}.0: terraform init cannot satisfy "
                f"both, so {b.address} stays on v{V21['from']} and the chart stops at {cap or covered} "
                f"(its policy's reach; {want} needs v{V21['version']})" + _past(ctx, cap or covered),
                f"move {eb.address} to v{ver[0] + 1} first (its UPGRADE-{ver[0] + 1}.0 guide), then run migrator "
                "again: the karpenter module and the chart move on then"))
        return
    ident = identity_of(ctx, b)
    extra: list[tuple[str, str]] = []
    notes: list[str] = []
    assoc = ID["association"]
    if _literal(b, ID["own_role_input"]) is False:
        ident = "none"              # the controller role is the user's own: its trust is theirs too
        extra.append((assoc, "false"))
        notes.append("the controller role is not the module's (create_iam_role = false): its trust is left as it is")
    elif ident == "irsa":
        oidc = b.attr("irsa_oidc_provider_arn")
        if oidc is None:
            res.findings.append(Finding("MIG-V1X-MOD-005", "error", p, line,
                                        f"{b.address}: IRSA asked for, but the call has no irsa_oidc_provider_arn to "
                                        "build the trust document from", "set irsa_oidc_provider_arn (or choose "
                                        "--identity pod-identity), then run migrator again"))
            return
        name = f"{b.labels[0]}_irsa"
        extra.append((assoc, "false"))
        if ID["trust_input"] not in b.attributes:
            extra.append((ID["trust_input"], f"[data.aws_iam_policy_document.{name}.json]"))
        here = posixpath.dirname(p)
        if not any(blk.labels[1:] == [name] and posixpath.dirname(dp) == here
                   for dp, blk in repo.blocks("data", "aws_iam_policy_document")):
            sas = b.attr("irsa_namespace_service_accounts")
            test = b.attr("irsa_assume_role_condition_test")
            doc = modmajor.irsa_document(ID, b.labels[0], name, oidc.source,
                                         sas.source if sas is not None else ID["irsa_defaults"]["namespace_service_accounts"],
                                         test.source if test is not None else ID["irsa_defaults"]["condition_test"])
            nl = repo.files[p].newline
            res.edits.append(TextEdit(p, b.end, b.end, (nl + nl + doc.rstrip("\n")).replace("\n", nl), RULE, order=3))
        notes.append(f"IRSA kept: data.aws_iam_policy_document.{name} carries v20's trust statement, "
                     f"{assoc} = false")
    else:
        extra.append((assoc, "true"))
        ci = next((c for c in ctx.charts if c.chart == "karpenter"), None)
        for key, got in (("namespace", _chart_namespace(ci, p)), ("service_account", _chart_account(ctx, p))):
            inp, default = ID[key]["input"], ID[key]["default"]
            if b.attr(inp) is not None or got == hclsrc.quote(default) or (
                    got is not None and re.search(rf"\bmodule\.{re.escape(b.labels[0])}\.", got)):
                continue        # the chart already reads this call's own output: set from it, it would be a cycle
            if got is None:
                res.findings.append(Finding(
                    "MIG-V1X-MOD-008", "warning", p, line,
                    f"{b.address}: the Pod Identity association is made for {key} {default!r} (the module's "
                    f"default); migrator cannot read the chart's {key} where this call could use it",
                    f"set {inp} on the module to the chart's {key}, or the controller gets no credentials"))
            elif got != "default":
                extra.append((inp, got))
        ann = ID["annotation"]
        res.value_rows.append({"key": "serviceAccount.annotations." + ann.replace(".", "\\."),
                               "path": ["serviceAccount", "annotations", ann], "remove": True,
                               "why": "the controller uses EKS Pod Identity; an IRSA annotation would take precedence"})
        notes.append(f"EKS Pod Identity: {assoc} = true, the role-arn annotation removed from the chart values")
        if not _agent(repo):
            res.findings.append(Finding(
                "MIG-V1X-MOD-004", "warning", p, line,
                f"{b.address}: Pod Identity needs the EKS Pod Identity Agent add-on ({ID['agent']['addon']}); "
                "the repository does not install it",
                f"add it before applying: cluster_addons = {{ {ID['agent']['addon']} = {{}} }} on the eks module, an "
                f"aws_eks_addon resource, or `aws eks create-addon --cluster-name <cluster> --addon-name "
                f"{ID['agent']['addon']}`"))
    if policy_size(ctx, res, p, b, parse_version(V21["version"]), moved=True):
        extra.append((POLICY["inline"]["input"], "true"))
    mv = modmajor.move(repo, p, b, V21, RULE, extra=extra,
                       comment=f"set by migrator for v21: the controller's identity ({ident})")
    res.edits.extend(mv.edits)
    res.to_v21.append((b.address, ident))
    res.findings.append(Finding("MIG-V1X-MOD-003", "info", p, line,
                                f"{b.address} -> v{V21['version']} (its v20 policy covers Karpenter {covered} "
                                f"only; {want} needs v21): "
                                + "; ".join(mv.said + notes)))
    low = V21.get("min_target")
    if low and parse_version(want) < parse_version(low["minor"]):
        res.findings.append(Finding("MIG-V1X-MOD-007", "warning", p, line,
                                    f"{b.address}: the target {want} is below {low['minor']}: {low['why']}",
                                    f"go to Karpenter {low['minor']} or newer with module v{V21['version']} "
                                    "(migrator plan --to latest), or stay on v20 and add the missing statements "
                                    "through iam_policy_statements"))
    prov = _provider_pin(repo, p)
    if prov:
        res.findings.append(Finding("MIG-V1X-MOD-006", "warning", *prov))


def _chart_namespace(ci, p: str) -> str | None:
    """The chart's release namespace as an HCL value usable in the module call's file: a literal (any installer),
    an expression of the same Terraform module; None when unknown."""
    if ci is None:
        return None
    if ci.kind == "terraform":
        ns = ci.block.attr("namespace")
        if ns is None:
            return hclsrc.quote("default")          # helm_release installs into "default" without one
        if ns.literal() is not None:
            return hclsrc.quote(str(ns.literal()))
        return ns.source if posixpath.dirname(ci.path) == posixpath.dirname(p) else None
    from ..v1.helm import _namespace
    lit = _namespace(ci)
    return hclsrc.quote(lit) if lit else None


def _chart_account(ctx, p: str) -> str | None:
    """The controller's service account name from the chart values ("default" when they do not set it: the
    chart's own name, which the module's default matches for a release named karpenter)."""
    sa = next((v for v in ctx.helm_values if v.key == "serviceAccount.name"), None)
    if sa is None:
        return "default"
    if sa.expression is None:
        return hclsrc.quote(str(sa.value))
    return sa.expression if posixpath.dirname(sa.path) == posixpath.dirname(p) else None


def _agent(repo) -> bool:
    name = ID["agent"]["addon"]
    return any(name in repo.files[p].text for p in repo.files if p.endswith((".tf", ".yaml", ".yml", ".json")))


def _provider_pin(repo, p: str):
    """An AWS provider constraint in the calling module's configuration (up to its root, down through what the root
    calls) that stops below 6.0 (v21 requires >= 6.0)."""
    for tp in (t for x in modmajor.configuration_dirs(repo, posixpath.dirname(p) or ".")
               for t in repo.tf_in_dir(x if x != "." else "")):
        text = repo.text(tp)
        for m in re.finditer(r'(?<![\w-])aws\s*=\s*\{[^{}]*?version\s*=\s*"([^"]+)"', text):
            op, ver = modmajor.constraint(m.group(1))
            upper = re.search(r"<\s*(\d+)", m.group(1))
            need = V21["requires"]["aws_provider"]
            below = ver is not None and ver[0] < need
            if below and (op in ("~>", "", "=") or (upper and int(upper.group(1)) <= need)):
                return (tp, hclsrc.line_of(text, m.start()),
                        f"the AWS provider is pinned to {m.group(1)!r}; module v{V21['to']} requires hashicorp/aws "
                        f">= {need}.0 (and Terraform >= {V21['requires']['terraform']})",
                        f"widen the provider constraint to >= {need}.0 (read the AWS provider {need}.0 upgrade guide "
                        "for the rest of this root), then terraform init -upgrade")
    return None


def _past(ctx, reach: str) -> str:
    """A chart already past the module policy's reach is held where it runs, never set back: said."""
    cur = ctx.chart_version
    if not (cur and parse_version(cur) and parse_version(reach) and parse_version(cur) > parse_version(reach)):
        return ""
    return (f"; the chart already runs {cur}, past that reach: it stays at {cur}, never set back (check the controller "
            f"role against the official policy of {cur}: what it added after {reach} is not in the module's)")
