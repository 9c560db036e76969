"""What goes with Cluster Autoscaler when it is removed: its own IAM role written by hand (with the policies and
documents nothing else reads), and the objects of its install (ServiceAccount, RBAC, ConfigMaps) in Terraform or YAML."""
from __future__ import annotations

import posixpath
import re

from ....cas import FACTS, CasInstall, set_entries, yaml_values
from ....inventory import value_at
from ....sources import hcl as hclsrc


def own_iam(repo, cas, owns) -> list[tuple[tuple[str, hclsrc.Block], list[tuple[str, hclsrc.Block]], str]]:
    """Cluster Autoscaler's own IAM role written by hand (knowledge/cas.yaml `hand_written_iam`): a role that a policy
    with its actions is given and that is bound to its service account, by a Pod Identity association or an IRSA
    trust. Returns (the role, every block that goes with it, how it is bound) per role: its association, attachments
    and inline policies, and the policies and documents nothing else reads."""
    from ....tfgraph import code_of, references
    conf = FACTS["detect"]["hand_written_iam"]
    if not cas.policies or not cas.installs:
        return []
    accounts: set[str] = set()
    for ci in cas.installs:
        accounts |= {a.format(release=ci.name) for a in conf["service_accounts"]}
        given = value_at(yaml_values(ci), tuple(conf["service_account_value"].split(".")))
        if isinstance(given, str):
            accounts.add(given)
        for n, v in (set_entries(ci.block) if ci.block is not None else []):
            if n is not None and n.literal() == conf["service_account_value"] and v is not None and v.literal():
                accounts.add(str(v.literal()))
    out = []
    for d in sorted({posixpath.dirname(p) or "." for p, _ in cas.policies}):
        blocks = {b.address: (p, b) for p in repo.tf_in_dir(d if d != "." else "") if owns(p)
                  for b in (repo.hcl(p).blocks if repo.hcl(p) else []) if b.type in ("resource", "data")}
        code = {a: code_of(b) for a, (_, b) in blocks.items()}
        reads = {a: references(c, blocks) - {a} for a, c in code.items()}
        readers = {a: {x for x, r in reads.items() if a in r} for a in blocks}
        cas_policies = {b.address for p, b in cas.policies if (posixpath.dirname(p) or ".") == d}

        def kind(a: str) -> str:
            b = blocks[a][1]
            return b.labels[0] if b.type == "resource" else "data." + b.labels[0]
        for r in sorted(a for a in blocks if kind(a) == conf["role"]):
            assoc = sorted(a for a in readers[r] if kind(a) == conf["association"])
            bound = [a for a in assoc if blocks[a][1].attr("service_account") is not None
                     and blocks[a][1].attr("service_account").literal() in accounts]
            trust = code[r] + "".join(code[x] for x in reads[r] if x.startswith("data."))
            subjects = re.findall(r"system:serviceaccount:([^:\s\"]+):([\w.-]+)", trust)
            how = f"the Pod Identity association {bound[0]}" if bound else \
                f"an IRSA trust for {subjects[0][0]}:{subjects[0][1]}" if subjects else ""
            attached = sorted(a for a in readers[r] if kind(a) in conf["attachments"])
            given = {r, *attached}          # what the role is given: an attached aws_iam_policy and the document it reads
            edge = set(given)
            while edge:
                edge = {x for a in edge for x in reads[a] if x not in given and kind(x).removeprefix("data.")
                        in conf["policy"]}
                given |= edge
            policies = given & cas_policies
            if not how or not policies or len(bound) < len(assoc) or any(sa not in accounts for _, sa in subjects):
                continue                    # a role another service account assumes too is not Cluster Autoscaler's
            going = {r, *assoc, *attached}
            changed = True
            while changed:                  # what only the going blocks read goes too (a policy, its document)
                changed = False
                for x in sorted({y for a in going for y in reads[a]} - going):
                    if kind(x) in conf["policy"] + ["data." + t for t in conf["policy"]] and readers[x] <= going:
                        going.add(x)
                        changed = True
            out.append((blocks[r], [blocks[a] for a in sorted(going)], how))
    return out


def _companion(obj, ci: CasInstall) -> bool:
    """An object of a Cluster Autoscaler installed from plain manifests, in the Deployment's own file: its
    ServiceAccount, the (Cluster)RoleBindings that bind it and the (Cluster)Roles they grant by the install's name
    (cluster-autoscaler's RBAC as its example manifests write it)."""
    if not isinstance(obj, dict):
        return False
    pod = ((((ci.obj or {}).get("spec") or {}).get("template") or {}).get("spec") or {})
    sa = pod.get("serviceAccountName") or pod.get("serviceAccount")
    meta = obj.get("metadata") or {}
    kind, name = obj.get("kind"), meta.get("name")
    if not sa or sa == "default":
        return False
    if kind == "ServiceAccount":
        return name == sa and meta.get("namespace", ci.namespace) == ci.namespace
    if kind in ("ClusterRoleBinding", "RoleBinding"):
        subjects = obj.get("subjects") or []
        return bool(subjects) and all(isinstance(x, dict) and x.get("kind") == "ServiceAccount" and
                                      x.get("name") == sa and x.get("namespace", ci.namespace) == ci.namespace
                                      for x in subjects)
    if kind in ("ClusterRole", "Role"):
        return name in (sa, ci.name)
    return False


def _module_objects(repo, d: str) -> list[tuple[str, hclsrc.Block]]:
    """Every addressable top-level block of one Terraform module (resources, data sources, modules, outputs)."""
    out = []
    for p in repo.tf_in_dir(d):
        f = repo.hcl(p)
        out += [(p, b) for b in (f.blocks if f else []) if b.type in ("resource", "data", "module", "output")
                and b.labels]
    return out


def _names(repo, d: str, b: hclsrc.Block) -> set[str]:
    """How a Kubernetes object written in Terraform can be named by another: its address, its metadata name."""
    from ....cas import nested, object_meta
    meta = nested(b, "metadata")
    name = object_meta(repo, d, meta.attr("name"), "name") if meta is not None else None
    return {b.address} | ({name} if name else set())


def tf_companions(repo, ci: CasInstall) -> tuple[list[tuple[str, hclsrc.Block]], dict[str, str]]:
    """What goes with a Cluster Autoscaler Deployment written in Terraform: itself, the ServiceAccount it runs as,
    the bindings whose every subject is that account, the roles only those bindings grant (knowledge/cas.yaml
    `terraform_objects`, in the Deployment's own module), as (file, block); and {address: why} for those that stay
    because a block outside the set reads them (an output does not hold one back: it is removed with it)."""
    from ....cas import FACTS as CAS, nested, object_meta
    from ....tfgraph import references
    types = CAS["detect"]["terraform_objects"]
    d = posixpath.dirname(ci.path)
    blocks = {b.address: (p, b) for p, b in _module_objects(repo, d)}
    body = {a: repo.text(p)[b.body_start:b.body_end] for a, (p, b) in blocks.items()}
    pod = nested(ci.block, "spec", "template", "spec")
    sa_expr = (pod.attr("service_account_name") or pod.attr("service_account")) if pod is not None else None
    sa_name = object_meta(repo, d, sa_expr, "name") if sa_expr is not None else None
    if sa_expr is None or sa_name == "default":
        accounts = set()
    else:
        accounts = {a for a, (p, b) in blocks.items() if b.labels[0] in types["service_account"] and
                    (a in references(sa_expr.source, blocks) or (sa_name is not None and sa_name in _names(repo, d, b)))}
    names = set().union(*(_names(repo, d, blocks[a][1]) for a in accounts)) if accounts else set()
    bindings = set()
    for a, (p, b) in blocks.items():
        subjects = b.sub("subject") if b.labels[0] in types["binding"] else []
        if subjects and all((s.attr("name") is not None and (references(s.attr("name").source, blocks) & accounts or
                             object_meta(repo, d, s.attr("name"), "name") in names)) for s in subjects):
            bindings.add(a)
    roles = set()
    for a in bindings:
        ref = next(iter(blocks[a][1].sub("role_ref")), None)
        e = ref.attr("name") if ref is not None else None
        if e is None:
            continue
        named = object_meta(repo, d, e, "name")
        roles |= {r for r, (p, b) in blocks.items() if b.labels[0] in types["role"] and
                  (r in references(e.source, blocks) or (named is not None and named in _names(repo, d, b)))}
    group = {ci.block.address} | accounts | bindings | roles
    kept: dict[str, str] = {}
    changed = True
    while changed:
        changed = False
        for a in sorted(group):
            readers = sorted(r for r in blocks if r not in group and blocks[r][1].type != "output" and
                             a in references(body[r], blocks))
            if readers:
                group.discard(a)
                kept[a] = f"{', '.join(readers)} reads it"
                changed = True
    if ci.block.address not in group:
        return [], kept
    going = [blocks[a] for a in sorted(group, key=lambda a: (blocks[a][0], blocks[a][1].start))]
    going += [(p, b) for a, (p, b) in blocks.items() if b.type == "output" and a not in group and
              references(body[a], blocks) & group and not references(body[a], blocks) - group]
    return going, kept
