"""Facts a repository already states somewhere else: the node role and the cluster's name and region.

When the usual trail (the chart's defaultInstanceProfile -> an aws_iam_instance_profile -> its role) breaks,
as in setups made with aws-cli, the answer is often written down elsewhere:
  node role: the controller policy's `iam:PassRole` resource (the only role the controller may hand to nodes),
             EKS access entries of type EC2_LINUX, `aws-auth` mapRoles entries in the `system:nodes` group;
  cluster and region: the EKS cluster ARN (eks:DescribeCluster) or any regional ARN in the controller policy,
             the chart's clusterName, the Terraform aws provider's region.
Each fact says where it was read; the most specific source wins, and an ambiguous one is not used.
"""
from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from . import knowledge
from .inventory.charts import HelmValue
from .inventory.repo import Repo
from .sources import hcl as hclsrc
from .sources import yaml as yamlsrc

ROLE_ARN = re.compile(r"^arn:aws[\w-]*:iam::[^:]*:role/(?:[^*]*/)?([\w+=,.@-]+)$")
TF_ROLE_ARN = re.compile(r"^\$\{(aws_iam_role\.[A-Za-z0-9_-]+)\.arn\}$")
STATED = knowledge.load("resolve")["stated_node_role"]
# an EKS cluster ARN, literal or interpolated (arn:${partition}:eks:${region}:${account}:cluster/${name})
EKS_ARN = re.compile(r"^arn:(?:aws[\w-]*|\$\{[^}]+\}):eks:([a-z0-9-]+|\$\{[^}]+\}):[^:]*:cluster/([\w.-]+|\$\{[^}]+\})$")
REGIONAL_ARN = re.compile(r"^arn:aws[\w-]*:(?:ec2|eks|sqs|ssm):([a-z]{2}(?:-[a-z]+)+-\d):")


@dataclass
class Fact:
    value: str
    source: str                 # "iam:PassRole in iam/controller-policy.json:44"
    expression: bool = False    # a Terraform expression (no ${ })


def _role_of(raw: str) -> tuple[str, bool] | None:
    m = ROLE_ARN.match(raw)
    if m and "${" not in raw:
        return m.group(1), False
    m = TF_ROLE_ARN.match(raw)
    if m:
        return f"{m.group(1)}.name", True
    return None


def _distinct(found: list[Fact]) -> Fact | None:
    values = {(f.value, f.expression) for f in found}
    return found[0] if len(values) == 1 else None


def passrole_roles(repo: Repo, owns=lambda p: True) -> list[Fact]:
    from .policies import scan_policies
    out = []
    for pol in scan_policies(repo):
        if not owns(pol.path) or not pol.is_karpenter:
            continue
        text = repo.text(pol.path)
        for st in pol.statements:
            if st.effect.lower() != "allow" or not any(a.lower() in STATED["passrole_actions"] for a in st.actions):
                continue
            for r in st.resources:
                got = _role_of(r)
                if got:
                    out.append(Fact(got[0], f"iam:PassRole in {pol.path}:{hclsrc.line_of(text, st.start)}", got[1]))
    return out


def access_entry_roles(repo: Repo, owns=lambda p: True) -> list[Fact]:
    out = []
    for p, b in repo.blocks("resource", "aws_eks_access_entry"):
        t, arn = b.attr("type"), b.attr("principal_arn")
        if not owns(p) or t is None or t.literal() not in STATED["access_entry_types"] or arn is None:
            continue
        raw = str(arn.literal()) if arn.literal() is not None else "${" + arn.source + "}"
        got = _role_of(raw)
        if got:
            out.append(Fact(got[0], f"{t.literal()} access entry {b.address} ({p}:{hclsrc.line_of(repo.text(p), b.start)})",
                            got[1]))
    return out


def aws_auth_roles(repo: Repo, owns=lambda p: True) -> list[Fact]:
    out = []
    for p in repo.yaml_containing("aws-auth"):
        sf = repo.files[p]
        if "mapRoles" not in sf.text or not owns(p):
            continue
        for doc in yamlsrc.split_documents(sf.text):
            try:
                obj = yamlsrc.safe_load(doc.text)
            except Exception:  # noqa: BLE001 - not ours to report
                continue
            if not isinstance(obj, dict) or obj.get("kind") != "ConfigMap" or \
                    (obj.get("metadata") or {}).get("name") != "aws-auth":
                continue
            raw = (obj.get("data") or {}).get("mapRoles")
            try:
                entries = yamlsrc.safe_load(raw) if isinstance(raw, str) else None
            except Exception:  # noqa: BLE001
                continue
            for e in entries if isinstance(entries, list) else []:
                if isinstance(e, dict) and STATED["aws_auth_group"] in (e.get("groups") or []):
                    got = _role_of(str(e.get("rolearn", "")))
                    if got:
                        line = doc.first_line + doc.text[:doc.text.find(str(e.get("rolearn")))].count("\n") + 1
                        out.append(Fact(got[0], f"aws-auth mapRoles ({STATED['aws_auth_group']}) in {p}:{line}", got[1]))
    return out


def node_role(repo: Repo, owns=lambda p: True) -> tuple[Fact | None, str]:
    """The node role the repository states, most specific source first; (None, why) when none or ambiguous."""
    passed = passrole_roles(repo, owns)
    entries = access_entry_roles(repo, owns)
    auth = aws_auth_roles(repo, owns)
    one = _distinct(passed)
    if one is not None:
        also = [f.source for f in entries + auth if f.value == one.value]
        if also:
            one = Fact(one.value, one.source + " (also " + ", ".join(also) + ")", one.expression)
        return one, ""
    for found, what in ((entries, "EC2_LINUX access entries"), (auth, "aws-auth node roles")):
        if not found:
            continue
        if passed:             # the controller may pass several roles: keep the ones nodes also use
            found = [f for f in found if f.value in {p.value for p in passed}]
        karpenter = [f for f in found if STATED["prefer"] in f.value.lower()]
        pick = _distinct(found) or _distinct(karpenter)
        if pick is not None:
            return pick, ""
        if found:
            return None, f"{what} name several roles ({', '.join(sorted({f.value for f in found}))})"
    if passed:
        return None, "iam:PassRole names several roles (" + ", ".join(sorted({f.value for f in passed})) + ")"
    return None, ""


def cluster_and_region(repo: Repo, pol, values: list[HelmValue], owns=lambda p: True) -> dict[str, Fact]:
    """ClusterName and AWS::Region for a policy: its own ARNs first, then the chart values and the provider."""
    out: dict[str, Fact] = {}
    text = repo.text(pol.path)
    # a policy outside Terraform (a JSON file for aws-cli) takes a variable's literal from the tfvars; one in Terraform
    # keeps the expression (terraform_scope), so the value stays what Terraform evaluates
    outside = not pol.path.endswith(hclsrc.TF_CODE)
    for st in pol.statements:
        where = f"{pol.path}:{hclsrc.line_of(text, st.start)}"
        for r in st.resources:
            m = EKS_ARN.match(r)
            if m and "ClusterName" not in out:
                out["ClusterName"] = Fact(m.group(2), f"the EKS cluster ARN in {where}")
                out.setdefault("AWS::Region", Fact(m.group(1), f"the EKS cluster ARN in {where}"))
            m = REGIONAL_ARN.match(r)
            if m and "AWS::Region" not in out:
                out["AWS::Region"] = Fact(m.group(1), f"the ARN {r} in {where}")
    if "ClusterName" not in out:
        names = [v for v in values if v.key in knowledge.load("resolve")["cluster_name_values"]
                 and v.expression is None and isinstance(v.value, str) and "${" not in v.value]
        if len({str(v.value) for v in names}) == 1:
            out["ClusterName"] = Fact(str(names[0].value), f"{names[0].key} in {names[0].path}:{names[0].line}")
        else:           # the chart is given the cluster's own attribute: the name its module states
            stated = {}
            for v in values:
                if v.key in knowledge.load("resolve")["cluster_name_values"] and v.expression and v.path.endswith(".tf"):
                    got = stated_cluster_name(repo, posixpath.dirname(v.path) or ".", v.expression) or \
                        (_stated_variable(repo, v.path, v.expression) if outside else None)
                    if got is not None:
                        stated.setdefault(got[0], Fact(got[0], f"{v.key} = {v.expression} ({v.path}:{v.line}), "
                                                              f"named in {got[1]}"))
            if len(stated) == 1:
                out["ClusterName"] = next(iter(stated.values()))
    if "AWS::Region" not in out:
        regions = []
        for p, b in repo.blocks("provider", "aws"):
            r = b.attr("region")
            if not owns(p) or r is None:
                continue
            where = f"provider \"aws\" region in {p}:{hclsrc.line_of(repo.text(p), b.start)}"
            if isinstance(r.literal(), str):
                regions.append(Fact(str(r.literal()), where))
            elif outside and (got := _stated_variable(repo, p, r.source)) is not None:    # var.region, in tfvars
                regions.append(Fact(got[0], f"{where} ({r.source.strip()}, set in {got[1]})"))
        if not regions:                 # Terragrunt: the region its units pass their modules
            from .inventory.terragrunt import region_of, units
            for u in units(repo):
                got = region_of(repo, u) if owns(u.path) else None
                if got is not None:
                    regions.append(Fact(got[0], got[1]))
        one = _distinct(regions)
        if one is not None:
            out["AWS::Region"] = one
    return out


def _stated_variable(repo: Repo, path: str, expression: str) -> tuple[str, str] | None:
    """The literal a `var.x` of the Terraform module of `path` has where the module states it whole (the one tfvars
    beside it that sets it, else its default), with where; None for anything else or when tfvars disagree."""
    from .inventory.sites import _expr, definition_sites, static_value
    if not re.fullmatch(r"\s*var\.[A-Za-z_][\w-]*\s*", expression or ""):
        return None
    e = _expr(expression.strip())
    v = static_value(repo, posixpath.dirname(path), e) if e is not None else None
    if not isinstance(v, str) or not v or "${" in v:
        return None
    sites = definition_sites(repo, path, e)[0]
    return v, (f"{sites[0].path}:{hclsrc.line_of(repo.text(sites[0].path), sites[0].expr.start)}" if len(sites) == 1
               else expression.strip())


def stated_cluster_name(repo: Repo, module: str, expression: str) -> tuple[str, str] | None:
    """The literal name of the cluster an expression of module folder `module` references (knowledge/resolve.yaml
    `cluster_name_sources`: aws_eks_cluster.x.name / .id, module.eks.cluster_name ...), where that module states it
    whole; with where it is named (path:line)."""
    from .inventory.sites import static_value
    for src in knowledge.load("resolve")["cluster_name_sources"]:
        for p, b in repo.blocks(src["block"], src.get("type")):
            if (posixpath.dirname(p) or ".") != module:
                continue
            if expression.strip() not in {t.format(name=b.labels[-1]) for t in [src["expression"]] + src["also"]}:
                continue
            if src["block"] == "module" and not re.search(src["source"], str(b.attr("source").literal() or "")
                                                          if b.attr("source") is not None else ""):
                continue
            for a in src["named_by"]:
                v = static_value(repo, module, b.attr(a))
                if isinstance(v, str) and v:
                    return v, f"{p}:{hclsrc.line_of(repo.text(p), b.start)}"
    return None


def given_scope(options) -> dict[str, Fact]:
    """ClusterName / AWS::Region / AWS::AccountId the user gave (--cluster-name, --region, --account-id, or
    .migrator.yaml, per cluster root under `roots:`)."""
    out: dict[str, Fact] = {}
    for key, attr, flag in (("ClusterName", "cluster_name", "--cluster-name"), ("AWS::Region", "region", "--region"),
                            ("AWS::AccountId", "account_id", "--account-id")):
        v = getattr(options, attr, None) if options is not None else None
        if v:
            out[key] = Fact(str(v), f"{flag} (or .migrator.yaml)")
    return out


_EXPR_ONLY = re.compile(r"^\$\{([^{}]+)\}$")


def terraform_scope(repo: Repo, pol, values: list[HelmValue]) -> dict[str, tuple[Fact, tuple[str, str] | None]]:
    """Scope facts of a controller policy written in Terraform, as Terraform expressions of its own module: the
    cluster name the chart's settings.clusterName is given there, the region and account from the module's
    aws_region / aws_caller_identity data sources (or the provider's region variable). A data source the module
    lacks is named as the block to add ((type, name)), as the terraform-aws-modules module does it."""
    import posixpath
    d = posixpath.dirname(pol.path)
    out: dict[str, tuple[Fact, tuple[str, str] | None]] = {}
    names = []
    for v in values:
        if v.key not in knowledge.load("resolve")["cluster_name_values"] or posixpath.dirname(v.path) != d:
            continue
        expr = v.expression or (_EXPR_ONLY.match(v.value).group(1) if isinstance(v.value, str)
                                and _EXPR_ONLY.match(v.value) else None)
        if expr:
            names.append(Fact(expr.strip(), f"{v.key} in {v.path}:{v.line}", expression=True))
    one = _distinct(names) or _module_cluster(repo, d)
    if one is not None:
        out["ClusterName"] = (one, None)

    def data_source(kind: str, attr: str, what: str) -> tuple[Fact, tuple[str, str] | None]:
        for p, b in repo.blocks("data", kind):
            if posixpath.dirname(p) == d and len(b.labels) > 1:
                return (Fact(f"data.{kind}.{b.labels[1]}.{attr}", f'data "{kind}" "{b.labels[1]}" in {p}',
                             expression=True), None)
        return (Fact(f"data.{kind}.current.{attr}", f'data "{kind}" "current" (added: {what})', expression=True),
                (kind, "current"))

    region = None
    for p, b in repo.blocks_in(d, "provider", "aws"):
        r = b.attr("region")
        if r is not None and r.literal() is None and r.kind == "ref" and \
                b.attr("alias") is None:
            region = (Fact(r.source.strip(), f'provider "aws" region in {p}:{hclsrc.line_of(repo.text(p), b.start)}',
                           expression=True), None)
    out["AWS::Region"] = region or data_source("aws_region", "name", "the provider's region")
    out["AWS::AccountId"] = data_source("aws_caller_identity", "account_id", "the caller's account")
    partition = data_source("aws_partition", "partition", "")
    if partition[1] is None:            # only a data source the module already has (else the ARNs say aws)
        out["AWS::Partition"] = partition
    return out


def _module_cluster(repo: Repo, d: str) -> Fact | None:
    """The cluster a Terraform module states it belongs to (knowledge/resolve.yaml `cluster_name_sources`, then
    `cluster_name_variables`), as an expression of that module; None when it states none or several."""
    facts = knowledge.load("resolve")
    found: list[Fact] = []
    for src in facts["cluster_name_sources"]:
        for p, b in repo.blocks(src["block"], src.get("type")):
            if (posixpath.dirname(p) or ".") != (d or "."):
                continue
            if src["block"] == "module":
                lit = b.attr("source").literal() if b.attr("source") is not None else None
                if not isinstance(lit, str) or not re.search(src["source"], lit):
                    continue
            name = b.labels[-1]
            found.append(Fact(src["expression"].format(name=name), f"{b.address} in {p}", expression=True))
    if len({f.value for f in found}) == 1:
        return found[0]
    if found:
        return None
    for p, b in repo.blocks("variable"):
        if (posixpath.dirname(p) or ".") == (d or ".") and b.labels[:1] and b.labels[0] in facts["cluster_name_variables"]:
            return Fact(f"var.{b.labels[0]}", f'variable "{b.labels[0]}" in {p}', expression=True)
    return None


def interruption_queue(pol, values: list[HelmValue], subs: dict[str, str]) -> tuple[bool, str | None, str]:
    """(the chart names an interruption queue, the queue's ARN as the policy can write it, where it was read) for
    the official statement scoped to ${KarpenterInterruptionQueue.Arn} (knowledge/iam.yaml interruption_queue)."""
    import posixpath
    q = knowledge.load("iam")["interruption_queue"]
    found = [v for v in values if v.key in q["chart_keys"] and v.value not in (None, "")]
    if not found:
        return False, None, ""
    arns = set()
    for v in found:
        expr = v.expression or (_EXPR_ONLY.match(v.value).group(1) if isinstance(v.value, str)
                                and _EXPR_ONLY.match(v.value) else None)
        if expr:
            same_module = pol.path.endswith((".tf", ".tofu")) and posixpath.dirname(v.path) == posixpath.dirname(pol.path)
            row = next((r for r in q["name_to_arn"] if re.fullmatch(r["pattern"], expr.strip())), None)
            arns.add("${" + re.sub(row["pattern"], row["arn"], expr.strip()) + "}" if same_module and row else None)
        elif "AWS::Region" in subs and "AWS::AccountId" in subs:
            arns.add(q["arn"].format(partition=subs.get("AWS::Partition", "aws"), region=subs["AWS::Region"],
                                     account=subs["AWS::AccountId"], name=v.value))
        else:
            arns.add(None)
    where = f"{found[0].key} in {found[0].path}:{found[0].line}"
    return True, (arns.pop() if len(arns) == 1 else None), where
