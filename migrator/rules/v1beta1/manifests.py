"""Rule `v1beta1/manifests`: new NodePools/EC2NodeClasses next to the old objects; old ones removed in cleanup.

prepare: every Provisioner / AWSNodeTemplate / inline provider is converted (convert.py), validated
against the v1beta1 CRD, and written next to its source in the same kind of container:
  raw YAML file        -> new YAML file beside it (+ kustomization.yaml entry)
  kubectl_manifest     -> new resource block after the old one (same provider, depends_on, for_each, ...)
  templatefile target  -> new template file beside the old one + new block calling it
  kubernetes_manifest  -> new resource block with the converted HCL object
cleanup: old objects whose new counterpart exists are removed (blocks, documents, files, entries).
"""
# Where the objects are written is in objects/: roles.py, placement.py, cleanup.py (docs/design.md).
from __future__ import annotations

import dataclasses
import posixpath
import re

from ...inventory import HelmValue, Manifest, Repo
from ...model import Finding
from ...resolve import Resolution
from ...sources import hcl as hclsrc
from ...validate import validate_object
from .convert import TARGET_KIND, Converted, convert_nodeclass, convert_provisioner
from ...options import Options  # noqa: F401  (re-exported for older imports)
from .objects.cleanup import OldObjects, Removals  # noqa: F401 - read from here by the Auto Mode hop
from .objects.common import FACTS, RULE, Result, _name_key, _scope, derive_name  # noqa: F401 - as above
from .objects.placement import ObjectPlacement, _eol_comment  # noqa: F401 - as above
from .objects.roles import NodeRoles


class ManifestsRule(NodeRoles, ObjectPlacement, OldObjects):
    """New objects next to the old ones, in the same kind of container. A later hop that also writes objects beside
    their sources (EKS Auto Mode) subclasses it: its own rule name, names and conversion."""
    rule = RULE

    # -- names of what is written beside the source (knowledge/v1beta1.yaml `naming`) --------------------
    def file_stem(self, stem: str, kinds: list[str]) -> str:
        for kind in ("Provisioner", "AWSNodeTemplate"):
            if kind in kinds:
                cand = derive_name(stem, TARGET_KIND[kind], kind, file=True)
                if cand != stem + FACTS["naming"][TARGET_KIND[kind]]["suffix"]["file"]:
                    return cand
        return stem + FACTS["naming"]["file_fallback_suffix"]

    def spare_stem(self, stem: str) -> str | None:
        """The file name (without extension) the converted objects take when the one file_stem gives is another
        file's; None: no other name is tried."""
        return stem + FACTS["naming"]["file_fallback_suffix"]

    def block_label(self, label: str, kind: str, old_kind: str) -> str:
        return derive_name(label, kind, old_kind)

    def template_base(self, tbase: str, kind: str, old_kind: str) -> str:
        new_base = derive_name(tbase, kind, old_kind, file=True)
        if new_base == tbase + FACTS["naming"][kind]["suffix"]["file"]:
            stem, ext = tbase.split(".", 1) if "." in tbase else (tbase, "")
            new_base = derive_name(stem, kind, old_kind, file=True) + ("." + ext if ext else "")
        return new_base

    def __init__(self, repo: Repo, manifests: list[Manifest], helm_values: list[HelmValue], options: Options,
                 owns=lambda p: True):
        self.owns = owns
        self.repo = repo
        self.manifests = manifests
        self.values = helm_values
        self.opts = options
        self.res = Result()
        self._role: Resolution | None = None
        self._role_value: HelmValue | None = None
        self._taken_labels: dict[str, set[str]] = {}
        self._new_files: set[str] = set()
        self._inserts_after: dict[tuple[str, int], int] = {}
        self._applier_copies: set[tuple[int, str]] = set()     # (applier, new local_file label) copied

    # -- shared ------------------------------------------------------------------------------
    def finding(self, code, severity, path, line, message, manual=""):
        self.res.findings.append(Finding(code, severity, path, line, message, manual))

    def beta_index(self) -> set[tuple[str, str, str]]:
        return {(_scope(m), m.kind, _name_key(m, m.name)) for m in self.manifests if m.era == "beta"}

    # -- prepare -------------------------------------------------------------------------------
    def prepare(self) -> Result:
        beta = self.beta_index()
        raw_by_file: dict[str, list[tuple[Manifest, list[Converted]]]] = {}
        for m in self.manifests:
            if m.era != "alpha":
                continue
            if m.kind == "Machine":
                self.finding("MIG-MAN-001", "info", m.path, m.line,
                             "Machine objects are created by the controller and migrated by Karpenter itself; "
                             "this manifest is not converted")
                continue
            for name in self.display_names(m):
                self.res.old_objects.append((m.kind, name, f"{m.path}:{m.line}"))
                taints = (m.obj.get("spec") or {}).get("taints") if m.kind == "Provisioner" else None
                if taints:
                    self.res.tainted.add(name)
                    if any(isinstance(t, dict) and t.get("key") == FACTS["nodepool"]["legacy_taint_key"]
                           for t in taints):
                        self.res.legacy.add(name)
            convs = self.convert(m)
            pending = [c for c in convs if (_scope(m), c.kind, _name_key(m, c.name)) not in beta]
            taken = self.taken_by_another(m, [c for c in convs if c not in pending]) \
                if self.not_prepared(m, pending, beta) else None
            if taken:                   # a name another object already has: nothing of this object is written
                self.finding("MIG-NC-018", "error", m.path, m.line,
                             f"{m.kind} {_name_key(m, m.name)} becomes {taken[0]} {taken[1]}, but the repository "
                             f"already holds an {taken[0]} of that name ({taken[2]}) that is not its conversion (it "
                             f"differs in {', '.join(taken[3])}): its NodePool would run on that one",
                             f"give one of them another name (the {m.kind}'s, or the existing {taken[0]}'s, with every "
                             "nodeClassRef to it), then run migrator again")
                continue
            if not pending:
                continue
            for c in pending:
                for n in c.notes:
                    self.finding(n.code, n.severity, m.path, m.line_of(n.field), m.masked.unmask(n.message),
                                 m.masked.unmask(n.manual_step))
            ok = [c for c in pending if c.ok and self.valid(m, c)]
            if not ok:
                continue
            if m.container == "yaml":
                raw_by_file.setdefault(m.path, []).append((m, ok))
            else:
                for c in ok:
                    self.place_hcl(m, c)
        for path, items in raw_by_file.items():
            self.place_yaml_file(path, items)
        self.follow_renames()
        return self.res

    def follow_renames(self) -> None:
        """A new block's `depends_on` copied from the old one names what the new one replaces: the NodePool twin of
        a Provisioner that depended on its AWSNodeTemplate depends on that template's EC2NodeClass twin. Otherwise the
        cleanup could never remove the AWSNodeTemplate (something still references it) and the walk would not end."""
        placed = getattr(self, "_placed", [])
        news: dict[tuple[str, str], set[str]] = {}
        for tf, old, new, _ in placed:
            news.setdefault((posixpath.dirname(tf), old), set()).add(new)
        rename = {k: next(iter(v)) for k, v in news.items() if len(v) == 1}
        for tf, old, new, edit in placed:
            try:
                f = hclsrc.parse(edit.text.strip("\r\n"))
            except hclsrc.HclParseError:
                continue
            dep = f.blocks[0].attr("depends_on") if f.blocks else None
            if dep is None or dep.kind != "tuple":
                continue
            lead = len(edit.text) - len(edit.text.lstrip("\r\n"))
            out = edit.text
            for item in sorted(dep.items, key=lambda i: i.start, reverse=True):
                to = rename.get((posixpath.dirname(tf), item.source.strip()))
                if to is not None:
                    out = out[:lead + item.start] + to + out[lead + item.end:]
            if out != edit.text:
                i = next(i for i, e in enumerate(self.res.edits) if e is edit)
                self.res.edits[i] = dataclasses.replace(edit, text=out)

    def display_names(self, m: Manifest) -> list[str]:
        """Object names as they exist in the cluster: a template's `${name}` fed by `each.key` of a
        `for_each = var.x` becomes the keys of x (tfvars, else default); [] when they cannot be known."""
        name = _name_key(m, m.name)
        if "${" not in name:
            return [name]
        var = re.fullmatch(r"\$\{([A-Za-z_][A-Za-z0-9_-]*)\}", name)
        fe = m.block.attr("for_each") if m.block is not None else None
        if not var or fe is None or m.call is None or len(m.call.items) < 2 or m.call.items[1].kind != "object":
            return []
        arg = next((e.value for e in m.call.items[1].entries if e.key == var.group(1)), None)
        src = re.fullmatch(r"var\.([A-Za-z0-9_-]+)", fe.source.strip())
        if arg is None or arg.source.strip() != "each.key" or not src:
            return []
        keys: list[str] = []
        for p in self.repo.tfvars_containing(src.group(1)):
            if not self.owns(p):
                continue            # another cluster root's tfvars set its own module's variable
            f = self.repo.hcl(p)
            if f and src.group(1) in f.attributes and f.attributes[src.group(1)].expr.kind == "object":
                keys.extend(e.key for e in f.attributes[src.group(1)].expr.entries if e.key not in keys)
        if not keys and m.tf_path:      # the variable of the manifest's own module folder, never another's
            for p, b in self.repo.blocks_in(posixpath.dirname(m.tf_path), "variable", src.group(1)):
                d = b.attr("default")
                if d is not None and d.kind == "object":
                    keys = [e.key for e in d.entries]
        return keys

    def not_prepared(self, m: Manifest, pending: list[Converted], beta: set) -> bool:
        """Was this object's prepare never written? A Provisioner whose NodePool is still to write; an AWSNodeTemplate
        some Provisioners name, none of which has its NodePool yet. Once it was, an EC2NodeClass of its name is the conversion,
        perhaps edited by hand since: never taken for another object's."""
        if m.kind == "Provisioner":
            return any(c.kind == "NodePool" for c in pending)
        refs = [o for o in self.manifests if o.era == "alpha" and o.kind == "Provisioner" and _scope(o) == _scope(m)
                and _provider_ref(o) == m.name]
        # a template no Provisioner names puts no NodePool on the class: nothing to hold
        return bool(refs) and not any((_scope(o), "NodePool", _name_key(o, o.name)) in beta for o in refs)

    def taken_by_another(self, m: Manifest, existing: list[Converted]) -> tuple | None:
        """(kind, name, where, differing fields) of an EC2NodeClass this object converts to whose name the repository
        already gives to a v1beta1 EC2NodeClass that is not its conversion (written by hand beside it): it differs
        from the conversion in a field the conversion takes from the source (the role and tags aside: they are
        resolved or merged per container). None when each is the conversion, as a prepare written before leaves it."""
        for c in existing:
            if c.kind != "EC2NodeClass":
                continue
            if c.obj is None:           # the role unresolved: the rest of the conversion is what is compared
                inline = m.kind == "Provisioner"
                c = convert_nodeclass(self.nodeclass_source(m, c.name, ("spec", "provider") if inline else ("spec",)),
                                      inline=inline, role="-")
            if c.obj is None or not isinstance(c.obj.get("spec"), dict):
                continue
            other = next((o for o in self.manifests if o.era == "beta" and o.kind == c.kind and _scope(o) == _scope(m)
                          and _name_key(o, o.name) == _name_key(m, c.name)), None)
            spec = (other.obj.get("spec") if other is not None and isinstance(other.obj, dict) else None)
            if not isinstance(spec, dict):
                continue
            skip = set(FACTS["nodeclass"]["resolved_per_container"])
            ours = {k: v for k, v in c.obj["spec"].items() if k not in skip}
            theirs = {k: v for k, v in spec.items() if k not in skip}
            differ = sorted(k for k in set(ours) | set(theirs)
                            if _plain(ours.get(k), m.masked) != _plain(theirs.get(k), other.masked))
            if differ:
                return c.kind, _name_key(m, c.name), f"{other.path}:{other.line}", differ
        return None

    def convert(self, m: Manifest) -> list[Converted]:
        if m.kind == "Provisioner":
            np, nc = convert_provisioner(m.obj, keep_alpha_defaults=self.opts.keep_alpha_defaults)
            out = [np]
            if nc is not None:
                out.append(self.global_tags(m, self.with_role(m, nc, ("spec", "provider"))))
            return out
        return [self.global_tags(m, self.with_role(m, convert_nodeclass(m.obj), ("spec",)))]

    def valid(self, m: Manifest, c: Converted) -> bool:
        errs = validate_object(c.obj)
        if errs:
            self.finding("MIG-VAL-001", "error", m.path, m.line,
                         f"generated {c.kind} {_name_key(m, c.name)} does not validate against the v1beta1 CRD: "
                         + "; ".join(errs), "fix the source object (see the messages) and re-run; nothing was written")
            return False
        return True


def _plain(v, masked=None):
    """A YAML value as plain Python (ruamel's maps and lists compared by content; scalars as the text they were
    written as, a template interpolation unmasked: a conversion writes `"true"` where a hand-written object may say
    true, and each document masks its `${...}` with tokens of its own)."""
    if isinstance(v, dict):
        return {str(k): _plain(x, masked) for k, x in v.items()}
    if isinstance(v, list):
        return [_plain(x, masked) for x in v]
    if v is None:
        return None
    return masked.unmask(str(v)) if masked is not None else str(v)


def _provider_ref(m: Manifest):
    """The AWSNodeTemplate a Provisioner names (spec.providerRef.name), or None."""
    spec = m.obj.get("spec") if isinstance(m.obj, dict) else None
    ref = spec.get("providerRef") if isinstance(spec, dict) else None
    return ref.get("name") if isinstance(ref, dict) else None
