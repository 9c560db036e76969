"""Rule `v1/manifests`: NodePools and EC2NodeClasses rewritten in place from v1beta1 to v1.

Phase `manifests` (after the v1 CRDs and controller 1.0.x are running, before 1.1). Every object is
rewritten where it lives (raw YAML, `kubectl_manifest` heredocs, `templatefile()` targets,
`kubernetes_manifest` HCL objects) by span edits through key trees, so comments, order and quoting stay:
  NodePool      apiVersion; WhenUnderutilized -> WhenEmptyOrUnderutilized + consolidateAfter;
                disruption.expireAfter -> template.spec.expireAfter; nodeClassRef -> {group, kind, name}
  EC2NodeClass  apiVersion; amiFamily -> alias amiSelectorTerms; Ubuntu -> AL2 with its root device;
                metadataOptions made explicit (v1beta1 IMDS defaults)
  kubelet       NodePools grouped by EC2NodeClass: one kubelet moves into the class; different kubelets
                split the class (a new class per kubelet, NodePools repointed, their nodes replaced)
Every rewritten object is validated against the v1 CRD of Karpenter 1.0 and of the newest 1.x. A Terraform
resource whose apiVersion changes gets a warning and the state commands that avoid delete-and-recreate.
"""
from __future__ import annotations

import copy
import json
import posixpath
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ruamel.yaml.comments import CommentedMap

from ...edits import Edit, TextEdit, line_start, to_newline
from ...inventory import STRUCTURAL, Manifest, Repo
from ...inventory.repo import TFVARS
from ...model import Finding
from ...placement import heredoc_body, manifest_object, relabel, splice
from ...sources import hcl as hclsrc
from ...sources import keytree, templates
from ...sources import yaml as yamlsrc
from ...validate import unknown_fields, validate_object
from . import convert
from .convert import FACTS, Rewrite, apply_ops, get, is_templated, plain

RULE = "v1/manifests"
PHASE = "manifests"
SCHEMAS = FACTS["validate_against"]


@dataclass
class Result:
    edits: list[Edit] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    rewritten: list[tuple[str, str, str]] = field(default_factory=list)      # (kind, name, path:line)
    pending: list[tuple[str, str, str]] = field(default_factory=list)        # v1beta1 objects still to rewrite
    tf_objects: list[dict] = field(default_factory=list)   # Terraform resources whose apiVersion changes
    split: list[tuple[str, str, list[str]]] = field(default_factory=list)   # (class, new class, nodepools)
    files: list[str] = field(default_factory=list)


def _name(m: Manifest) -> str:
    return m.masked.unmask(str(m.name)) if m.name is not None else ""


@lru_cache(maxsize=1)
def _kubelet_fields() -> frozenset[str]:
    """spec.kubelet fields of the v1 EC2NodeClass (the packaged CRD)."""
    from ... import knowledge
    schema = knowledge.crd_schema("karpenter.k8s.aws/v1", "EC2NodeClass")
    return frozenset(schema["properties"]["spec"]["properties"]["kubelet"]["properties"])


class ManifestsRule:
    def __init__(self, repo: Repo, manifests: list[Manifest], phase: str):
        self.repo = repo
        self.manifests = manifests
        self.phase = phase
        self.res = Result()
        self._dropped_said: set[int] = set()

    def finding(self, code, severity, path, line, message, manual=""):
        self.res.findings.append(Finding(code, severity, path, line, message, manual))

    def run(self) -> Result:
        beta = [m for m in self.manifests if m.era == "beta" and m.kind in ("NodePool", "EC2NodeClass")]
        self.res.pending = [(m.kind, _name(m), f"{m.path}:{m.line}") for m in beta]
        if self.phase != PHASE:
            return self.res
        for m in self.manifests:
            if m.era == "beta" and m.kind == "NodeClaim":
                self.finding("MIG-V1-001", "info", m.path, m.line, FACTS["kinds"]["NodeClaim"]["note"])
        pools = [m for m in beta if m.kind == "NodePool"]
        classes = {(_name(m)): m for m in self.manifests if m.kind == "EC2NodeClass"}
        pinned = convert.pinned_ami_version([m.obj for m in classes.values()])
        kubelet_of, drop, repoint, splits, kubelet_src = self.plan_kubelets(pools, classes)
        for m in pools:
            if id(m) in drop and drop[id(m)] is False:
                continue            # its kubelet could not be placed: reported, object left as it is
            self.rewrite(m, convert.nodepool_ops(m.obj, drop_kubelet=True, repoint=repoint.get(id(m))))
        for name, m in classes.items():
            if m.era != "beta":
                if name in kubelet_of:
                    self.finding("MIG-V1-KL-004", "error", m.path, m.line,
                                 f"EC2NodeClass {name} is already v1 but NodePools referencing it still carry a "
                                 "kubelet", f"add spec.kubelet {plain(kubelet_of[name])} to it by hand")
                continue
            rw = convert.nodeclass_ops(m.obj, kubelet=kubelet_of.get(name), pinned=pinned,
                                       kubelet_lines=self.kubelet_lines(kubelet_src.get(name), m))
            if self.rewrite(m, rw):
                for new_name, kubelet, users in splits.get(name, []):
                    self.split(m, rw, new_name, kubelet, users)
        return self.res

    # -- kubelet -------------------------------------------------------------------------------------
    def kubelet(self, m: Manifest) -> Any:
        """A NodePool's kubelet as it can move: without the fields the v1 EC2NodeClass CRD lacks (a hand-edited
        object may still carry containerRuntime), each dropped with a finding; None when nothing is left."""
        k = get(m.obj, convert._path(convert.NP["kubelet"]))
        if not isinstance(k, dict):
            return k
        allowed = _kubelet_fields()
        gone = [x for x in k if x not in allowed]
        if not gone:
            return k
        if id(m) not in self._dropped_said:
            self._dropped_said.add(id(m))
            why = convert.NC.get("kubelet_dropped", {})
            for x in gone:
                self.finding("MIG-V1-KL-008", "warning", m.path, m.line_of(convert._path(convert.NP["kubelet"])),
                             f"NodePool {_name(m)}: kubelet.{x}={plain(k[x])} dropped: "
                             + why.get(x, f"the v1 EC2NodeClass has no spec.kubelet.{x}"))
        out = copy.deepcopy(k)
        for x in gone:
            del out[x]
        return out or None

    def plan_kubelets(self, pools: list[Manifest], classes: dict[str, Manifest]):
        """Which kubelet each class receives, which NodePools drop theirs, and which are repointed (KB G.3)."""
        kubelet_path = convert._path(convert.NP["kubelet"])
        get_kubelet = self.kubelet
        ref_name = convert._path(convert.NP["node_class_ref"]["path"]) + ("name",)
        by_class: dict[str, list[Manifest]] = {}
        for m in pools:
            by_class.setdefault(str(m.masked.unmask(str(get(m.obj, ref_name)))), []).append(m)
        kubelet_of: dict[str, Any] = {}
        kubelet_src: dict[str, Manifest] = {}          # the NodePool whose kubelet text a class receives
        drop: dict[int, bool] = {}
        repoint: dict[int, str] = {}
        splits: dict[str, list[tuple[str, Any, list[str]]]] = {}
        for cname, users in by_class.items():
            groups: list[tuple[Any, list[Manifest]]] = []
            for m in users:
                k = get_kubelet(m)
                key = plain(k) if k is not None else None
                for g in groups:
                    if g[0] == key:
                        g[1].append(m)
                        break
                else:
                    groups.append((key, [m]))
            if all(k is None for k, _ in groups):
                continue
            cls = classes.get(cname)
            if cls is None or is_templated(cname):
                for m in users:
                    if get_kubelet(m) is not None:
                        self.leave(m, drop, "MIG-V1-KL-001",
                                   f"NodePool {_name(m)} has a kubelet, which v1 keeps on its EC2NodeClass {cname}, "
                                   "and that class is not in this cluster root",
                                   f"add this kubelet to EC2NodeClass {cname} (spec.kubelet), then remove it from "
                                   "the NodePool and run migrator again")
                continue
            templated = [m for m in users if get_kubelet(m) is not None and m.container == "template"
                         and m.path != cls.path and m.masked.has_token(str(plain(get_kubelet(m))))]
            if templated:
                for m in templated:
                    self.leave(m, drop, "MIG-V1-KL-007",
                               f"NodePool {_name(m)}: its kubelet uses template variables of {m.path}, which the "
                               f"EC2NodeClass {cname} in {cls.path} does not receive",
                               f"move the kubelet into EC2NodeClass {cname} by hand (spec.kubelet, passing the "
                               "variables it needs), then run migrator again")
                continue
            # the group kept on the original class: the NodePools without kubelet, else the largest group
            keep = next((i for i, g in enumerate(groups) if g[0] is None), None)
            if keep is None:
                keep = max(range(len(groups)), key=lambda i: len(groups[i][1]))
            if groups[keep][0] is not None:
                kubelet_of[cname] = get_kubelet(groups[keep][1][0])
                kubelet_src[cname] = groups[keep][1][0]
            for i, (k, ms) in enumerate(groups):
                if i == keep:
                    continue
                new_name = f"{cname}{convert.NC['split_suffix']}{_name(ms[0])}"
                splits.setdefault(cname, []).append((new_name, get_kubelet(ms[0]), [_name(x) for x in ms]))
                for x in ms:
                    repoint[id(x)] = new_name
                    self.finding("MIG-V1-KL-002", "warning", x.path, x.line,
                                 f"NodePool {_name(x)} shares EC2NodeClass {cname} with NodePools whose kubelet "
                                 f"differs: it moves to a new class {new_name} carrying its kubelet, which replaces "
                                 "all its nodes (nodeClassRef is part of the node template)",
                                 "roll it out with a disruption budget, or give the NodePools one kubelet first")
            if len(groups) == 1:
                self.finding("MIG-V1-KL-003", "info", cls.path, cls.line,
                             f"kubelet of {', '.join(_name(m) for m in users)} moves into EC2NodeClass {cname} "
                             "(identical for all its NodePools: no drift)")
        return kubelet_of, drop, repoint, splits, kubelet_src

    def leave(self, m: Manifest, drop: dict, code: str, message: str, manual: str) -> None:
        """A NodePool whose kubelet cannot move is left as it is, with an error finding."""
        drop[id(m)] = False
        self.finding(code, "error", m.path, m.line_of(convert._path(convert.NP["kubelet"])), message, manual)

    def kubelet_lines(self, pool: Manifest | None, cls: Manifest) -> tuple[str, str] | None:
        """The NodePool's kubelet as written (comments kept), when both objects are YAML in the same file kind."""
        if pool is None or pool.hcl or cls.hcl:
            return None
        if self.kubelet(pool) is not get(pool.obj, convert._path(convert.NP["kubelet"])):
            return None                 # fields dropped: written from the value, not copied as text
        if pool.container == "template" and pool.path != cls.path:
            return None                 # template variables belong to that template's call
        tree = tree_of(self.repo, pool)
        e = tree.root.get(convert._path(convert.NP["kubelet"])) if tree else None
        if e is None or not e.is_map:
            return None
        return tree.text[line_start(tree.text, e.key_start):e.end], e.indent

    # -- rewriting -----------------------------------------------------------------------------------
    def rewrite(self, m: Manifest, rw: Rewrite) -> bool:
        if m.masked.directives and not rw.blocked and not self.directives_allow(m, rw.ops):
            return False
        for n in rw.notes:
            self.finding(n.code, n.severity, m.path, m.line_of(n.field),
                         m.masked.unmask(f"{m.kind} {_name(m)}: {n.message}"), m.masked.unmask(n.manual_step))
        if rw.blocked:
            return False
        after = apply_ops(m.obj, rw.ops)
        stale = self.pruned(m, after)
        if stale:
            rw.ops += [keytree.Op("remove", p, reason="not a field of either version") for p in stale]
            after = apply_ops(m.obj, rw.ops)
        if not self.valid(m, m.checked_obj(after)):
            return False
        tree = tree_of(self.repo, m)
        if tree is None:
            self.finding("MIG-V1-002", "error", m.path, m.line,
                         f"{m.kind} {_name(m)}: its container cannot be edited in place",
                         "rewrite it to v1 by hand (see docs/rules.md)")
            return False
        out = keytree.rewrite(tree, rw.ops)
        if out.problems:
            for op, e, why in out.problems:
                self.finding("MIG-V1-003", "error", m.path, hclsrc.line_of(tree.text, e.key_start or e.start),
                             f"{m.kind} {_name(m)}: cannot change {'.'.join(map(str, op.src or op.dst))}: {why}",
                             "rewrite this object to v1 by hand")
            return False
        nl = self.repo.files[tree.path].newline
        for s, e, t in out.edits:
            self.res.edits.append(TextEdit(tree.path, s, e, to_newline(t, nl), RULE))
        self.res.rewritten.append((m.kind, _name(m), f"{m.path}:{m.line}"))
        if m.path not in self.res.files:
            self.res.files.append(m.path)
        self.terraform_hazard(m)
        return True

    def directives_allow(self, m: Manifest, ops: list) -> bool:
        """A template's whole-line directives stay where they are; an op may not move a field out of an
        `if`/`range`/`with` block or out from under a `{{ toYaml ... }}` that writes part of its map, nor add to
        a map such an action writes entirely. Actions that write keys where the hop changes others get a warning."""
        ds = m.masked.directives
        lay = templates.layout(m.masked, m.line_map)
        if lay.error is not None:
            self.finding("MIG-TPL-001", "error", m.path, m.line + ds[lay.error[0]].index,
                         f"{m.kind} {_name(m)}: template directive `{ds[lay.error[0]].text}` {lay.error[1]}; "
                         "migrator leaves this object as it is", "rewrite it to v1 by hand (see docs/rules.md)")
            return False
        line_of = {p: ln for ln, p in m.line_map.items()}
        blocked: list[tuple[int, str]] = []
        for op in ops:
            if op.kind in ("set", "add"):
                touched = [op.dst or op.src]
            else:
                touched = [op.src]
            for pth in touched:
                ln = line_of.get(pth)
                for pair in lay.pairs:
                    lo, hi = lay.region(pair, ds)
                    # a value changed in place (set, or a scalar key renamed where it stands) stays inside its block
                    in_place = op.kind in ("set", "add") or (op.kind == "replace" and not isinstance(
                        m.value_at(op.src), (dict, list)))
                    if not in_place and ln is not None and pair[1] is not None and lo < ln < hi:
                        blocked.append((pair[0], ".".join(map(str, pth))))
                for i, owner in lay.content.items():
                    if owner is None:
                        continue
                    inside = owner[:len(pth)] == pth and op.kind not in ("set", "add")
                    generated = pth[:len(owner)] == owner and len(pth) > len(owner) and m.value_at(owner) is None
                    if inside or generated:
                        blocked.append((i, ".".join(map(str, pth))))
        for i, field_ in dict.fromkeys(blocked):
            self.finding("MIG-TPL-003", "error", m.path, m.line + ds[i].index,
                         f"{m.kind} {_name(m)}: v1 changes {field_}, which the template shapes with `{ds[i].text}`; "
                         "migrator leaves this object as it is rather than break the template",
                         f"rewrite {field_} by hand for v1 (see docs/rules.md, {RULE}) keeping `{ds[i].text}` around "
                         "what it governs, then run migrator again for the rest")
        if blocked:
            return False
        for i, owner in lay.content.items():
            under = sorted({".".join(map(str, q)) for op in ops for q in (op.src, op.dst)
                            if owner is not None and q and q[:len(owner)] == owner and q != owner})
            if owner is None or under or owner[-1] in STRUCTURAL:
                where = ".".join(map(str, owner)) if owner else "the top of the object"
                self.finding("MIG-TPL-004", "warning", m.path, m.line + ds[i].index,
                             f"{m.kind} {_name(m)}: `{ds[i].text}` writes keys under {where} that migrator cannot see",
                             "check that the values behind it hold v1 fields (v1 changes "
                             + (", ".join(under) if under else "apiVersion and several spec fields")
                             + " here; see docs/rules.md) and rewrite them in the chart's values by hand if not")
        return True

    def pruned(self, m: Manifest, after: Any) -> list[tuple]:
        """Fields of the object as written that neither its own CRD nor the v1 CRDs define: the API server has been
        dropping them all along (the live object has none), so the v1 object goes without them, said. A field that
        any target release defines is never one of them."""
        if not isinstance(m.obj, dict) or not isinstance(after, dict):
            return []
        target = set.intersection(*(set(unknown_fields(after, r)) for r in SCHEMAS))
        out = []
        for p in unknown_fields(m.obj):
            if p in target and not any(isinstance(k, int) or m.masked.has_token(str(k)) for k in p):
                out.append(p)
                self.finding("MIG-V1-005", "warning", m.path, m.line_of(p),
                             f"{m.kind} {_name(m)}: {'.'.join(map(str, p))} is not a field of {m.api_version} "
                             f"{m.kind} nor of v1 (the API server drops it when it stores the object, so the cluster "
                             "never had it): removed from the v1 object",
                             f"if {'.'.join(map(str, p))} was meant to do something, find the v1 field that does it "
                             "(docs/rules.md) and set it")
        return out

    def valid(self, m: Manifest, obj: Any) -> bool:
        errors = []
        for release in SCHEMAS:
            errors += [f"{e} (CRD of Karpenter {release})" for e in validate_object(obj, release)]
        if errors:
            self.finding("MIG-V1-004", "error", m.path, m.line,
                         f"{m.kind} {_name(m)}: the v1 object would not validate: " + "; ".join(errors[:3]),
                         "fix the source object (or rewrite it by hand); nothing is written for it")
            return False
        return True

    def terraform_hazard(self, m: Manifest) -> None:
        if m.block is None or m.tf_path is None:
            return
        rtype = m.block.labels[0]
        facts = FACTS["terraform_replacement"].get(rtype)
        if facts is None:
            return
        api = FACTS["kinds"][m.kind]["to"]
        name = _name(m)
        address = m.block.address
        multi = m.block.attr("for_each") is not None or m.block.attr("count") is not None
        where = f"{m.tf_path}:{hclsrc.line_of(self.repo.text(m.tf_path), m.block.start)}"
        instances = self.instances(m, name) if multi or is_templated(name) else [(address, name)]
        for addr, obj_name in instances or [(address, name)]:
            self.res.tf_objects.append({
                "address": addr, "dir": posixpath.dirname(m.tf_path) or ".", "kind": m.kind, "name": obj_name,
                "type": rtype, "import_id": facts["import_id"].format(api=api, kind=m.kind, name=obj_name),
                "templated": not instances, "where": where})
        obj = self.res.tf_objects[-1]
        self.finding("MIG-V1-TF-001", "warning", m.tf_path, hclsrc.line_of(self.repo.text(m.tf_path), m.block.start),
                     f"{address}: {facts['why']}",
                     "before `terraform apply`, move the state instead: `terraform state rm "
                     f"'{address}'` then `terraform import '{address}' '{obj['import_id']}'`"
                     + (" (once per instance: the name is templated or the resource uses for_each/count)"
                        if obj["templated"] else "") + "; `terraform plan` must then show an in-place update only")

    def instances(self, m: Manifest, name: str) -> list[tuple[str, str]]:
        """(address, object name) of each instance of a for_each resource whose keys the repository states
        (a map variable set in tfvars or its default) and whose object is named by each.key."""
        fe = m.block.attr("for_each")
        ref = re.fullmatch(r"var\.([A-Za-z0-9_-]+)", fe.source.strip()) if fe is not None else None
        if ref is None or not self._named_by_key(m, name):
            return []
        keys: list[str] = []
        for p in self.repo.tfvars_files() + self.repo.tf_containing("variable"):
            f = self.repo.hcl(p) if ref.group(1) in self.repo.text(p) else None
            if f is None:
                continue
            exprs = [f.attributes[ref.group(1)].expr] if p.endswith(TFVARS) and ref.group(1) in f.attributes else \
                [b.attr("default") for b in f.blocks if b.type == "variable" and b.labels == [ref.group(1)]
                 and b.attr("default") is not None]
            for e in exprs:
                if e.kind == "object":
                    keys += [en.key for en in e.entries if en.key not in keys]
        return [(f"{m.block.address}[{json.dumps(k)}]", k) for k in keys]

    @staticmethod
    def _named_by_key(m: Manifest, name: str) -> bool:
        if name.replace(" ", "") == "${each.key}":
            return True
        var = re.fullmatch(r"\$\{\s*([A-Za-z0-9_-]+)\s*\}", name)
        args = m.call.items[1] if m.call is not None and len(m.call.items) > 1 else None
        if var is None or args is None or args.kind != "object":
            return False
        return any(e.key == var.group(1) and e.value.source.strip() == "each.key" for e in args.entries)

    # -- splitting a class -----------------------------------------------------------------------------
    def split(self, m: Manifest, rw: Rewrite, new_name: str, kubelet: Any, users: list[str]) -> None:
        data = apply_ops(m.obj, rw.ops)
        data.pop("kubelet", None)
        spec = data.get("spec")
        if isinstance(spec, dict):
            spec.pop("kubelet", None)
            spec["kubelet"] = kubelet
        data["metadata"]["name"] = new_name
        if not self.valid(m, data):
            return
        self.res.split.append((_name(m), new_name, users))
        nl_of = self.repo.files[m.tf_path or m.path].newline
        by_hand = f"add an EC2NodeClass {new_name} (a copy of {_name(m)} with spec.kubelet {plain(kubelet)}) " \
            f"and point NodePools {', '.join(users)} at it"
        emitted = templates.keep_block_tokens(m.masked, yamlsrc.Emitter(m.style).emit(data).text)
        if emitted is None:
            self.finding("MIG-TPL-001", "error", m.path, m.line,
                         f"EC2NodeClass {_name(m)}: an interpolation that renders a block under its key cannot stay "
                         f"where it renders valid YAML in the split class {new_name}", by_hand)
            return
        if m.container == "yaml":
            text = self.repo.text(m.path)
            body = m.masked.unmask(emitted)
            sep = "" if text[:m.doc_end].endswith("\n") else "\n"
            self.res.edits.append(TextEdit(m.path, m.doc_end, m.doc_end, to_newline(f"{sep}---\n{body}", nl_of),
                                           RULE, order=1))
        elif m.container in ("kubectl_manifest", "kubernetes_manifest") and m.container == m.block.labels[0] \
                and (m.hcl or m.block.attr("yaml_body").kind == "heredoc"):
            self.split_block(m, data, new_name, emitted)
        else:
            self.finding("MIG-V1-KL-005", "error", m.path, m.line,
                         f"EC2NodeClass {_name(m)} lives in a template; migrator cannot add the split class "
                         f"{new_name} for NodePools {', '.join(users)}", by_hand)
            return
        self.finding("MIG-V1-KL-006", "info", m.path, m.line,
                     f"EC2NodeClass {new_name} added (copy of {_name(m)} with the kubelet of {', '.join(users)})")

    def split_block(self, m: Manifest, data: Any, new_name: str, emitted: str) -> None:
        tf = m.tf_path
        text = self.repo.text(tf)
        b = m.block
        label = f"{b.labels[1]}_{new_name.replace('-', '_')}"
        repl = [relabel(b, label)]
        if not m.hcl:
            repl.append(heredoc_body(text, b, m.masked.unmask(emitted)))
        else:
            repl.append(manifest_object(text, b, m.expr, data, m.masked.tokens))
        clone = splice(text, b.start, b.end, repl)
        self.res.edits.append(TextEdit(tf, b.end, b.end, to_newline("\n\n" + clone, self.repo.files[tf].newline),
                                       RULE, order=1))


def _content_end(repo: Repo, m: Manifest) -> int:
    """Where the object's own lines end: before the template directives that close the document (a Helm
    `{{- end }}` of a range over documents, a `%{ endfor }`), so keys added at the end stay inside the block."""
    if not m.masked.directives:
        return m.doc_end
    masked = m.masked.text.splitlines()
    cut = None
    for i in range(len(masked) - 1, -1, -1):
        ln = masked[i].strip()
        if ln.startswith("#__MIGDIR_"):
            cut = i
        elif ln and not ln.startswith("#"):
            break
    if cut is None:
        return m.doc_end
    lines = repo.text(m.path)[m.doc_start:m.doc_end].splitlines(keepends=True)
    return m.doc_start + sum(len(x) for x in lines[:cut])


def tree_of(repo: Repo, m: Manifest) -> keytree.Tree | None:
    """A key tree over one object wherever it lives (the span-editing view the rewrite uses)."""
    if m.hcl:
        tree = keytree.hcl_tree(repo.text(m.tf_path), m.tf_path, m.expr)
        tree.tokens = m.masked.tokens
        return tree
    if not isinstance(m.obj, CommentedMap):
        return None
    strip = 0
    if m.container == "kubectl_manifest":
        h = m.block.attr("yaml_body").heredoc
        strip = h.indent if h.trim else 0
    tree = keytree.yaml_tree(repo.text(m.path), m.path, m.doc_start, _content_end(repo, m), m.obj, strip=strip)
    tree.style = m.style
    tree.unmask = m.masked.unmask
    return tree
