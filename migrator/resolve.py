"""Follow the Terraform references that matter for the migration.

The node role an EC2NodeClass needs is usually written down only indirectly: the chart's
`defaultInstanceProfile` names an instance profile, whose `role` is the answer. The resolver follows
literals, `var.x` (defaults and tfvars), `aws_iam_instance_profile` resources, the terraform-aws-modules
karpenter module and node-group outputs, and returns a literal, a Terraform expression, or the reason
it could not.
"""
from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field

from . import knowledge
from .inventory.charts import HelmValue
from .inventory.repo import Repo
from .sources import hcl as hclsrc

FACTS = knowledge.load("resolve")


@dataclass
class Resolution:
    literal: str | None = None
    expression: str | None = None       # Terraform expression, without ${ }
    trail: list[str] = field(default_factory=list)      # how it was found, for the plan
    reason: str = ""                    # why not, when neither literal nor expression

    @property
    def ok(self) -> bool:
        return self.literal is not None or self.expression is not None


def _where(repo: Repo, path: str, offset: int) -> str:
    return f"{path}:{hclsrc.line_of(repo.text(path), offset)}"


def _here(items, where: str | None, named: bool = False):
    """The (path, block) pairs of module folder `where`: a reference (aws_iam_role.x, var.x, module.x) means its own
    module's block, never another folder's; a block looked up by the AWS name it gives (`named`) is searched in the
    module first, then anywhere. All of them when where is None (the folder is not known)."""
    items = list(items)
    if where is None:
        return items
    mine = [x for x in items if (posixpath.dirname(x[0]) or ".") == where]
    return mine or (items if named else [])


def variable_values(repo: Repo, name: str, where: str | None = None) -> list[tuple[str, int, object]]:
    """Literal values a variable gets: tfvars assignments if any, else its default (of module folder `where`'s own
    variable and tfvars when it has them)."""
    found: list[tuple[str, int, object]] = []
    for p in repo.tfvars_files():
        if where is not None and (posixpath.dirname(p) or ".") != where:
            continue                # another module folder's tfvars set another root module's variable
        f = repo.hcl(p) if name in repo.files[p].text else None
        if f and name in f.attributes:
            a = f.attributes[name]
            found.append((p, hclsrc.line_of(f.text, a.start), a.expr.literal()))
    if found:
        return found
    for p, b in _here([(p, b) for p, b in repo.blocks("variable") if b.labels == [name]], where):
        if b.attr("default") is not None:
            e = b.attr("default")
            found.append((p, hclsrc.line_of(repo.text(p), e.start), e.literal()))
    return found


def resolve_profile_to_role(repo: Repo, value: str, expression: str | None, where: str | None = None) -> Resolution:
    """Node role for an instance profile given as a literal name or a Terraform expression (written in module folder
    `where`: its references are that module's blocks)."""
    res = Resolution()
    if expression:
        return _from_expression(repo, expression.strip(), res, where)
    return _from_literal_profile(repo, str(value), res, where)


def _from_literal_profile(repo: Repo, name: str, res: Resolution, where: str | None = None) -> Resolution:
    for p, b in _here(repo.blocks("resource", "aws_iam_instance_profile"), where, named=True):
        n = b.attr("name")
        if n is not None and n.literal() == name:
            res.trail.append(f"instance profile {name!r} is {b.address} ({_where(repo, p, b.start)})")
            return _role_of_profile(repo, p, b, res)
    from .sources.shell import profile_roles
    for p in repo.containing("instance-profile", (".sh",)):
        sf = repo.files[p]
        for pr in profile_roles(p, sf.text):
            if pr.profile == name and pr.role:
                res.literal = pr.role
                res.trail.append(f"instance profile {name!r} gets role {pr.role!r} from "
                                 f"`aws iam add-role-to-instance-profile` ({p}:{pr.line})")
                return res
    res.reason = (f"no aws_iam_instance_profile named {name!r} in the repository (nor an `aws iam "
                  "add-role-to-instance-profile` in its scripts), so its role is unknown")
    return res


def _role_of_profile(repo: Repo, path: str, b: hclsrc.Block, res: Resolution) -> Resolution:
    role = b.attr("role")
    if role is None:
        res.reason = f"{b.address} has no role attribute"
        return res
    if role.literal() is not None:
        res.literal = str(role.literal())
        res.trail.append(f"its role is {res.literal!r}")
        return res
    res.expression = role.source
    res.trail.append(f"its role is {role.source}")
    m = re.fullmatch(r"aws_iam_role\.([A-Za-z0-9_-]+)\.(name|id)", role.source)
    if m:       # the role of the profile's own module
        for p2, rb in _here([x for x in repo.blocks("resource", "aws_iam_role") if x[1].labels[1:] == [m.group(1)]],
                            posixpath.dirname(path) or "."):
            if rb.attr("name") is not None and rb.attr("name").literal():
                res.literal = str(rb.attr("name").literal())
                res.trail.append(f"{rb.address} is named {res.literal!r} ({_where(repo, p2, rb.start)})")
                break
    return res


def _from_expression(repo: Repo, expr: str, res: Resolution, where: str | None = None) -> Resolution:
    m = re.fullmatch(r"aws_iam_instance_profile\.([A-Za-z0-9_-]+)\.(name|id)", expr)
    if m:
        for p, b in _here(repo.blocks("resource", "aws_iam_instance_profile"), where):
            if b.labels[1:] == [m.group(1)]:
                res.trail.append(f"{expr} is {b.address} ({_where(repo, p, b.start)})")
                return _role_of_profile(repo, p, b, res)
        res.reason = f"{expr} refers to a resource that is not in the repository"
        return res
    m = re.fullmatch(r"var\.([A-Za-z0-9_-]+)", expr)
    if m:
        vals = variable_values(repo, m.group(1), where)
        lits = {v for _, _, v in vals if v is not None}
        if len(lits) == 1:
            (lit,) = lits
            res.trail.append(f"{expr} = {lit!r} ({', '.join(f'{p}:{ln}' for p, ln, _ in vals)})")
            return _from_literal_profile(repo, str(lit), res, where)
        res.reason = (f"{expr} has {'several values' if len(lits) > 1 else 'no literal value'} in the repository")
        return res
    m = re.fullmatch(r"module\.([A-Za-z0-9_-]+)((?:\.[A-Za-z0-9_]+)+)", expr)
    if m:
        mod = _module(repo, m.group(1), where)
        if mod is not None:
            r = _from_module(repo, mod, m.group(2).lstrip("."), expr, res)
            if r is not None:
                return r
    for rule in FACTS["expression_rewrites"]:
        if re.search(rule["match"], expr):
            res.expression = re.sub(rule["match"], rule["replace"], expr)
            res.trail.append(f"{expr} -> {res.expression} ({rule['why']})")
            return res
    res.reason = f"migrator cannot tell which IAM role the instance profile {expr} uses"
    return res


def _module(repo: Repo, name: str, where: str | None = None) -> tuple[str, hclsrc.Block] | None:
    found = _here([(p, b) for p, b in repo.blocks("module", None, f'"{name}"') if b.labels == [name]], where)
    return found[0] if found else None


def _from_module(repo: Repo, mod: tuple[str, hclsrc.Block], output: str, expr: str, res: Resolution):
    p, b = mod
    source = (b.attr("source").literal() if b.attr("source") is not None else "") or ""
    version = (b.attr("version").literal() if b.attr("version") is not None else "") or ""
    for known in FACTS["modules"]:
        pattern = knowledge.load(known["source_of"])["source"] if "source_of" in known else known["source"]
        if not re.search(pattern, source.split("?")[0]):
            continue
        out = known["outputs"].get(output)
        if out is None:
            return None
        # module told to use an existing role: that role is the node role
        flag = known.get("existing_role")
        if flag:
            create = b.attr(flag["create"])
            given = b.attr(flag["role_arn"])
            if create is not None and create.literal() is False and given is not None:
                res.trail.append(f"module.{b.labels[0]} uses an existing node role "
                                 f"({flag['role_arn']} = {given.source}, {_where(repo, p, given.start)})")
                return _from_expression(repo, given.source, res, posixpath.dirname(p) or ".") \
                    if not re.search(r"arn$", given.source) \
                    else _rewrite_arn(given.source, res)
        major = re.search(r"(\d+)", version)
        target = out.get(f"v{major.group(1)}" if major else "default", out["default"])
        res.expression = f"module.{b.labels[0]}.{target}"
        res.trail.append(f"{expr} is created by {known['name']} ({_where(repo, p, b.start)}); "
                         f"its node role is output {target}")
        return res
    return None


def _rewrite_arn(expr: str, res: Resolution) -> Resolution:
    for rule in FACTS["expression_rewrites"]:
        if re.search(rule["match"], expr):
            res.expression = re.sub(rule["match"], rule["replace"], expr)
            res.trail.append(f"{expr} -> {res.expression} ({rule['why']})")
            return res
    res.reason = f"cannot derive a role name from {expr}"
    return res


def default_instance_profile(values: list[HelmValue]) -> list[HelmValue]:
    keys = set(FACTS["default_instance_profile_keys"])
    return [v for v in values if v.key in keys and v.value not in (None, "")]


def _eksctl_profile(repo: Repo, owns) -> list[HelmValue]:
    """The instance profile eksctl gave the chart it installed (a ClusterConfig with `karpenter:` in this root)."""
    from .inventory.eksctl import scan as eksctl_installs
    spec = FACTS["eksctl_instance_profile"]
    out = []
    for ci in eksctl_installs(repo):
        cluster = str((ci.obj.get("metadata") or {}).get("name") or "")
        given = (ci.obj.get("karpenter") or {}).get(spec["key"])
        if owns(ci.path) and (given or cluster):
            out.append(HelmValue(f"karpenter.{spec['key']} (eksctl)", str(given or spec["default"].format(cluster=cluster)),
                                 None, ci.path, ci.line, ("karpenter", spec["key"])))
    return out


def _loose_values_profile(repo: Repo, owns) -> list[HelmValue]:
    """The instance profile a Karpenter values file of this root states when no installer of the repository uses the
    file (`karpenter/values.yaml` beside the manifests, for a `helm upgrade -f` run by hand): a key only Karpenter's
    chart has, read where it is written (the file is not edited: no installer says which chart it feeds)."""
    from .sources import yaml as yamlsrc
    out = []
    for p in sorted(repo.containing("defaultInstanceProfile")):     # the key's text first: owns() is the cost
        if not p.endswith((".yaml", ".yml")) or p in repo.template_paths or not owns(p):
            continue
        try:
            obj = yamlsrc.load(repo.text(p))
        except Exception:                   # noqa: BLE001 - a file that does not parse states nothing here
            continue
        if not isinstance(obj, dict) or "apiVersion" in obj or "kind" in obj:
            continue                        # a Kubernetes object, not chart values
        for key in FACTS["default_instance_profile_keys"]:
            v = obj
            for k in key.split("."):
                v = v.get(k) if isinstance(v, dict) else None
            if isinstance(v, str) and v and "{{" not in v:
                line = next((i + 1 for i, ln in enumerate(repo.text(p).splitlines())
                             if ln.strip().startswith(key.split(".")[-1] + ":")), 1)
                out.append(HelmValue(key + " (a values file no installer of the repository uses)", v, None, p, line,
                                     tuple(key.split("."))))
    return out


def resolve_node_role(repo: Repo, values: list[HelmValue], owns=lambda p: True) -> tuple[Resolution, HelmValue | None]:
    """Node role from the chart's defaultInstanceProfile (the alpha fallback every template used); when that
    trail breaks, from what the repository states elsewhere (facts.py: iam:PassRole, access entries, aws-auth)."""
    found = default_instance_profile(values) or _eksctl_profile(repo, owns) or _loose_values_profile(repo, owns)
    if not found:
        res, v = Resolution(reason="no defaultInstanceProfile is set in the Karpenter chart values found in the "
                                   "repository"), None
    elif len({(str(x.value), x.expression) for x in found}) > 1:
        return Resolution(reason="defaultInstanceProfile has different values in "
                                 + ", ".join(f"{x.path}:{x.line}" for x in found)), found[0]
    else:
        v = found[0]
        res = resolve_profile_to_role(repo, str(v.value), v.expression,
                                      (posixpath.dirname(v.path) or ".") if v.path.endswith(".tf") else None)
        res.trail.insert(0, f"{v.key} = {v.value} ({v.path}:{v.line})")
    if res.ok:
        return res, v
    from .facts import node_role
    fact, why = node_role(repo, owns)
    if fact is None:
        if why:
            res.reason += f"; the repository does not settle it either: {why}"
        return res, v
    stated = Resolution(trail=res.trail + [f"({res.reason})", f"node role {fact.value} from {fact.source}"])
    if fact.expression:
        stated.expression = fact.value
    else:
        stated.literal = fact.value
    return stated, v


# where a value is written (inventory/sites.py); kept importable from here
from .inventory.sites import Site, _entry, _with_default, callers, definition_sites  # noqa: E402,F401
