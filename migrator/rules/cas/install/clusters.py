"""Facts about the cluster the install reads from the repository: its name expression, its node groups' names, its
subnets and zones, its OIDC provider and Pod Identity agent, its providers (kubectl, helm, the connection), and where
the Terragrunt units of the cluster and of Cluster Autoscaler are."""
from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from ....cas import FACTS, CasInventory, NodeGroup, scan, subnet_zones
from ....edits import line_start
from ....inventory.terragrunt import UNIT_FILE
from ....sources import hcl as hclsrc
from .common import INSTALL, MODULE


def cluster_expr(repo, cas: CasInventory, d: str) -> tuple[str | None, str]:
    """The Terraform expression naming the cluster in directory d, and the eks module's address if any."""
    for p, b in cas.eks_modules:
        if (posixpath.dirname(p) or ".") == d:
            return f"module.{b.labels[0]}.cluster_name", f"module.{b.labels[0]}"
    for p, b in repo.blocks("resource", "aws_eks_cluster"):
        if (posixpath.dirname(p) or ".") == d:
            return f"aws_eks_cluster.{b.labels[1]}.name", ""
    return None, ""


_REF = re.compile(r"(?<![\w.\"])([A-Za-z_][\w-]*)\.([A-Za-z_][\w-]*)")


def _independent(repo, d: str, source: str, depth: int = 0) -> bool:
    """An expression that reads only literals, variables, locals and resources or data sources made of those (a
    `random_string` suffix, the availability zones): none reads the cluster, the VPC module or a subnet, so it is
    safe to write into any block of the module without a dependency cycle."""
    text = re.sub(r'"(?:[^"\\$]|\\.|\$(?!\{))*"', '""', source)      # string literals without interpolations
    for m in _REF.finditer(text):
        head, name = m.group(1), m.group(2)
        if head in ("var", "path", "terraform"):
            continue
        if head == "local" and depth < 5:
            found = [b.attr(name) for p, b in repo.blocks("locals")
                     if (posixpath.dirname(p) or ".") == d and name in b.attributes]
            if found and all(_independent(repo, d, e.source, depth + 1) for e in found):
                continue
        elif head not in ("module", "each", "count", "self", INSTALL["tagged_resource"]) and depth < 5:
            if head == "data":                      # data.TYPE.NAME
                nxt = re.match(r"\.([A-Za-z_][\w-]*)", text[m.end():])
                kind, rtype, label = "data", name, nxt.group(1) if nxt else None
            else:
                kind, rtype, label = "resource", head, name
            found = [(p, b) for p, b in repo.blocks(kind, rtype)
                     if (posixpath.dirname(p) or ".") == d and b.labels[1:2] == [label]]
            if found and all(_independent(repo, d, repo.text(p)[b.body_start:b.body_end], depth + 1)
                             for p, b in found):
                continue
        return False
    return True


def terraform_clusters_named(repo, names: set[str], regions: set[str] | None = None) -> list[str]:
    """The Terraform files declaring a cluster (an eks module, an aws_eks_cluster) whose name, as the module states it,
    is one of these; with `regions`, not one whose module states its AWS provider's region as another (a cluster of
    the same name in another region is another cluster)."""
    from ....inventory.sites import static_value
    out = []
    blocks = [(p, b, ("name", "cluster_name")) for p, b in scan(repo).eks_modules] + \
        [(p, b, ("name",)) for p, b in repo.blocks("resource", "aws_eks_cluster")]
    for p, b, attrs in blocks:
        d = posixpath.dirname(p)
        if regions:
            stated = {static_value(repo, d, pb.attr("region")) for pp, pb in repo.blocks_in(d, "provider", "aws")
                      if pb.attr("alias") is None}
            if stated and None not in stated and not stated & regions:
                continue
        for a in attrs:
            e = b.attr(a)
            if e is not None and static_value(repo, d, e) in names:
                out.append(p)
                break
    return sorted(set(out))


def _shared_by(repo, d: str, cas_path: str) -> tuple[list[str], list[str]]:
    """(the root modules that call a module folder, those of them Cluster Autoscaler's install is not part of) where
    more than one root calls it: Karpenter written in the folder would reach the second kind's clusters too (a cluster
    module shared by environments that all run Cluster Autoscaler from it is written to: each applies when it will)."""
    from ....evaluate import is_root_module, roots_of
    files = repo.tf_in_dir(d if d != "." else "")
    if not files or not repo.callers(d if d != "." else ""):
        return [], []
    roots = [r for r in roots_of(repo, files[0]) if is_root_module(repo, r)]
    if len(roots) < 2:
        return [], []
    with_cas = set(roots_of(repo, cas_path)) if cas_path.endswith(".tf") else {posixpath.dirname(cas_path) or "."}
    return roots, [r for r in roots if r not in with_cas]


def _group_name_expr(g: NodeGroup, eks: str, key: str | None = None) -> str | None:
    """The EKS node group name as Terraform knows it (the eks.amazonaws.com/nodegroup label's value); `key`: the
    expression that gives the group's key in its map (a variable each environment sets) instead of the key itself."""
    if g.source == "module" and g.flavour == "managed":
        return f'split(":", {eks}.{g.attr}[{key or hclsrc.quote(str(g.entry.key))}].node_group_id)[1]'
    if g.source == "resource":
        return f"{g.block.address}[{key}].node_group_name" if key and g.key else f"{g.address}.node_group_name"
    return None


def _group_names_expr(g: NodeGroup, eks: str) -> tuple[str, str] | None:
    """(every group's EKS name by its key, as Terraform knows them; the group's key), for a group of a map (the eks
    module's, or an aws_eks_node_group's for_each): modules several environments apply read one environment's group
    by its key, never by a name one environment's text would hold."""
    if g.source == "module" and g.flavour == "managed" and g.entry is not None:
        return f'{{ for k, g in {eks}.{g.attr} : k => split(":", g.node_group_id)[1] }}', str(g.entry.key)
    if g.source == "resource" and g.key and g.block is not None:
        return f"{{ for k, g in {g.block.address} : k => g.node_group_name }}", str(g.key)
    return None


def _group_name_literal(g: NodeGroup) -> str | None:
    if g.source == "resource":
        n = g.literal("name")
        return n if g.block.attr("node_group_name") is not None and isinstance(n, str) and n else None
    if g.source == "module":
        entries = {x.key: x.value for x in g.entry.value.entries}
        prefix = entries.get("use_name_prefix")
        name = entries.get("name")
        if prefix is not None and prefix.literal() is False:
            return str(name.literal()) if name is not None and name.literal() else g.entry.key
    return None


def _agent(repo, cas: CasInventory, owns) -> bool:
    addon = MODULE["agent"]["addon"]
    for _, b in cas.eks_modules:
        for attr in ("addons", "cluster_addons"):
            e = b.attr(attr)
            if e is not None and e.kind == "object" and any(x.key == addon for x in e.entries):
                return True
    for p, b in repo.blocks("resource", "aws_eks_addon"):
        n = b.attr("addon_name")
        if owns(p) and n is not None and n.literal() == addon:
            return True
    return False


def _oidc_provider(repo, d: str) -> str | None:
    """The ARN of the cluster's IAM OIDC provider as the cluster's own module declares it (a hand-written cluster:
    `resource`/`data "aws_iam_openid_connect_provider"`, whatever file holds it); None when there is not exactly
    one."""
    found = [f"{'data.' if kind == 'data' else ''}aws_iam_openid_connect_provider.{b.labels[1]}"
             + ("" if b.attr("count") is None else "[0]") + ".arn"
             for kind in ("resource", "data") for p, b in repo.blocks(kind, "aws_iam_openid_connect_provider")
             if (posixpath.dirname(p) or ".") == d and b.attr("for_each") is None and _one(repo, d, b.attr("count"))]
    return found[0] if len(found) == 1 else None


def _one(repo, d: str, count) -> bool:
    """No `count`, `count = 1`, or `count = <condition> ? 1 : 0` whose condition the module's callers (calls,
    Terragrunt units) or defaults make true: the block's one instance exists (`[0]`)."""
    from ....inventory.sites import module_value
    if count is None or count.literal() == 1:
        return True
    parts = hclsrc.conditional(count)           # split by the parser, never by a pattern
    cond = parts[0] if parts is not None and parts[1].literal() == 1 and parts[2].literal() == 0 else None
    return cond is not None and module_value(repo, d if d != "." else "", cond) is True


def _subnet_set(source: str) -> frozenset:
    """A list of subnet expressions as written, as a set (order, spacing and trailing commas do not matter)."""
    inner = source.strip()
    if inner.startswith("[") and inner.endswith("]"):
        inner = inner[1:-1]
    return frozenset(x.strip().strip('"') for x in inner.replace("\n", " ").split(",") if x.strip())


def _subnets_of(g: NodeGroup) -> tuple[frozenset, str]:
    """A node group's subnet_ids as a set of expressions, and as the root writes them."""
    v = g.fields.get("subnet_ids")
    if v is None or v == "":
        return frozenset(), ""
    if isinstance(v, list):
        items = [g.masked.unmask(str(x)).strip() for x in v]
        return frozenset(x.strip('"') for x in items), "[" + ", ".join(items) + "]"
    src = g.masked.unmask(str(v)).strip()
    return _subnet_set(src), src


def cluster_subnets(repo, cas) -> dict[frozenset, str]:
    """The cluster's own subnets (aws_eks_cluster vpc_config, the eks module's subnet_ids): as a set of expressions ->
    as written."""
    out: dict[frozenset, str] = {}
    for p, b in repo.blocks("resource", "aws_eks_cluster"):
        for vc in b.sub("vpc_config"):
            if vc.attr("subnet_ids") is not None:
                src = vc.attr("subnet_ids").source.strip()
                out[_subnet_set(src)] = src
    for p, b in cas.eks_modules:
        if b.attr("subnet_ids") is not None:
            src = b.attr("subnet_ids").source.strip()
            out[_subnet_set(src)] = src
    return out


def _pinned_zones(repo, g: NodeGroup, cluster: dict) -> list[str] | None:
    """The zones a group's own subnets (not the cluster's) lie in, where every one is stated; None otherwise."""
    key, own = _subnets_of(g)
    if g.source != "eksctl" and not (own and cluster and key not in cluster):
        return None
    return subnet_zones(repo, g) or None


def zone_pinned(repo, cas, shapes: list) -> set[str]:
    """The groups kept to some zones only: the controller prefers a group that spans them all (the same choice in
    every phase: the install and the cutover ask this the same way)."""
    cluster = cluster_subnets(repo, cas)
    return {s.group.name for s in shapes if _pinned_zones(repo, s.group, cluster)}


def _kubectl_provider(repo, d: str) -> bool:
    for p in repo.tf_in_dir(d if d != "." else ""):
        t = repo.text(p)
        if "kubectl_manifest" in t or re.search(r'source\s*=\s*"[\w.-]*/kubectl"|provider\s+"kubectl"', t):
            return True
    return False


def _fields(node) -> dict[str, hclsrc.Expr]:
    """The arguments of a block, or of an object written where a block may be (helm provider v3 `kubernetes = {}`)."""
    if isinstance(node, hclsrc.Block):
        return {n: a.expr for n, a in node.attributes.items()}
    return {e.key: e.value for e in node.entries}


def _nested(node, name: str):
    """A nested block of that name, or an argument holding an object in its place."""
    if isinstance(node, hclsrc.Block) and node.sub(name):
        return node.sub(name)[0]
    e = _fields(node).get(name)
    return e if e is not None and e.kind == "object" else None


@dataclass
class Connection:
    """How the root's Kubernetes providers reach the cluster (the kubectl provider written beside them copies it)."""
    path: str
    line: int
    what: str                                       # provider "kubernetes" | the helm provider's kubernetes block
    args: dict[str, hclsrc.Expr]
    exec: dict[str, hclsrc.Expr]


def _connection(repo, d: str) -> Connection | None:
    """The root's own kubernetes provider (without alias), else its helm provider's `kubernetes` block or object:
    only one that states where the cluster is (a host or a kubeconfig)."""
    conf = INSTALL["kubectl_provider"]
    for kind in ("kubernetes", "helm"):
        for p in repo.tf_in_dir(d if d != "." else ""):
            f = repo.hcl(p)
            for b in f.blocks if f is not None else []:
                if b.type != "provider" or b.labels[:1] != [kind] or b.attr("alias") is not None:
                    continue
                node = b if kind == "kubernetes" else _nested(b, "kubernetes")
                if node is None:
                    continue
                args = {n: e for n, e in _fields(node).items() if n in conf["connection"]}
                if "host" not in args and "config_path" not in args:
                    continue
                ex = _nested(node, "exec")
                return Connection(p, hclsrc.line_of(repo.text(p), b.start),
                                  'provider "kubernetes"' if kind == "kubernetes" else
                                  'the helm provider\'s kubernetes block', args,
                                  {n: e for n, e in _fields(ex).items() if n in conf["exec"]} if ex is not None else {})
    return None


def _moved(text: str, e: hclsrc.Expr, indent: str) -> str:
    """An expression's source written at another indentation: its continuation lines keep their depth relative to
    the line it starts on."""
    ls = line_start(text, e.start)
    head = text[ls:e.start]
    old = len(head) - len(head.lstrip(" \t"))
    lines = e.source.replace("\r\n", "\n").split("\n")
    return "\n".join(lines[:1] + [indent + ln[old:] if not ln[:old].strip() else ln for ln in lines[1:]])


def _kubectl_block(repo, conn: Connection) -> list[str]:
    """A kubectl provider connected as the root's kubernetes provider is (the karpenter example's own settings)."""
    conf = INSTALL["kubectl_provider"]
    text = repo.text(conn.path)
    out = ['provider "kubectl" {', f'  apply_retry_count = {conf["apply_retry_count"]}']
    out += [f"  {n} = {_moved(text, conn.args[n], '  ')}" for n in conf["connection"] if n in conn.args]
    if "host" in conn.args:
        out.append("  load_config_file = false")
    if conn.exec:
        out += ["", "  exec {"] + [f"    {n} = {_moved(text, conn.exec[n], '    ')}" for n in conf["exec"]
                                    if n in conn.exec] + ["  }"]
    return out + ["}", ""]


_HELM = re.compile(r'provider\s+"helm"|resource\s+"helm_release"|"?hashicorp/helm"?')


def _helm_provider(repo, d: str) -> bool:
    """Can the Terraform in folder d install a chart: a helm provider or a helm_release there, or in a root module
    that calls d (a child module inherits its caller's providers), or in the Terragrunt units whose source d is (their
    generated providers)?"""
    from ....roots import _module_users
    from ....inventory.terragrunt import callers as unit_callers
    dirs = [d] + sorted(_module_users(repo, d) if d != "." else [])
    if any(_HELM.search(repo.text(p)) for x in dirs for p in repo.tf_in_dir(x if x != "." else "")):
        return True
    for u in unit_callers(repo, d, every=True) if d != "." else []:
        x = posixpath.dirname(u.path)          # the unit and the .hcl files it includes from above (generate blocks)
        while True:
            if any(_HELM.search(repo.text(p)) for p in repo.files
                   if p.endswith(".hcl") and (posixpath.dirname(p) or ".") == (x or ".")):
                return True
            if x in ("", "."):
                break
            x = posixpath.dirname(x)
    return False


def _nearest_first(d: str, dirs: set[str], near: bool = False) -> list[str]:
    """Folders by how much of their path they share with folder d (the nearest first), then by name; with `near`,
    only those that share all of d's path but its last two folders (stages/apps/lead: stages/cloud/aws)."""
    from ....roots import shared_depth
    out = sorted(dirs, key=lambda x: (-shared_depth(d, x), x))
    if near:
        return [x for x in out if shared_depth(d, x) >= max(1, len(d.split("/")) - 2)]
    return out


def _cluster_units(repo, cas0, owns) -> list[tuple[str, str, str]]:
    """(the unit installing Cluster Autoscaler, the unit it depends on that makes the cluster, that unit's module
    folder) when Terragrunt units of this root install Cluster Autoscaler from a module of the repository (or are
    the install themselves: a unit calling a registry Helm module)."""
    from ....inventory.terragrunt import UNIT_FILE, callers, terragrunt
    d = posixpath.dirname(cas0.path) or "."
    out = []
    own = terragrunt(repo).unit_at(d) if posixpath.basename(cas0.path) == UNIT_FILE else None
    for u in ([own] if own is not None else callers(repo, d, every=True)):  # or the unit calls a remote Helm module
        if not owns(u.path):
            continue
        for dep in u.dependencies:
            du = terragrunt(repo).unit_at(dep)
            md = du.module_dir if du is not None else None
            if md is not None and (any((posixpath.dirname(p) or ".") == md for p, _ in repo.blocks("resource", "aws_eks_cluster"))
                                   or any((posixpath.dirname(p) or ".") == md for p, _ in scan(repo).eks_modules)):
                out.append((u.dir, du.dir, md))
    return out


def _remote_cluster_unit(repo, cas0, owns) -> tuple[str, str, str, bool] | None:
    """(the unit installing Cluster Autoscaler, the unit it depends on, that unit's source, whether the installing unit
    applies a module from outside the repository too) when the cluster is made
    by a Terragrunt unit calling the eks module from outside the repository (`tfr:///terraform-aws-modules/eks/aws`,
    a git source): one unit applies one module, so nothing can be written beside that cluster."""
    from ....inventory.terragrunt import callers, terragrunt
    d = posixpath.dirname(cas0.path) or "."
    own = terragrunt(repo).unit_at(d) if posixpath.basename(cas0.path) == UNIT_FILE else None
    for u in ([own] if own is not None else callers(repo, d, every=True)):
        for dep in (u.dependencies if owns(u.path) else []):
            du = terragrunt(repo).unit_at(dep)
            if du is not None and du.remote and re.search(FACTS["detect"]["eks_unit_source"], du.remote.split("?")[0]):
                return u.dir, du.dir, du.remote, bool(u.remote)
    return None
