"""Rule `v1beta1/manifests`: new NodePools/EC2NodeClasses next to the old objects; old ones removed in cleanup.

prepare: every Provisioner / AWSNodeTemplate / inline provider is converted (convert.py), validated
against the v1beta1 CRD, and written next to its source in the same kind of container:
  raw YAML file        -> new YAML file beside it (+ kustomization.yaml entry)
  kubectl_manifest     -> new resource block after the old one (same provider, depends_on, for_each, ...)
  templatefile target  -> new template file beside the old one + new block calling it
  kubernetes_manifest  -> new resource block with the converted HCL object
cleanup: old objects whose new counterpart exists are removed (blocks, documents, files, entries).
"""
from __future__ import annotations

import dataclasses
import posixpath
import re
from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml.comments import CommentedMap

from ... import knowledge
from ...edits import (DeleteFile, Edit, NewFile, TextEdit, indent_at, line_end, line_start,
                      to_newline)
from ...inventory import HelmValue, Manifest, Repo
from ...model import Finding
from ...resolve import Resolution, resolve_node_role
from ...sources import hcl as hclsrc
from ...sources import templates
from ...sources import yaml as yamlsrc
from ...validate import validate_object
from .convert import TARGET_KIND, Converted, convert_nodeclass, convert_provisioner, needs_role

from ...options import Options  # noqa: F401  (re-exported for older imports)
from ...placement import (align_attributes, block_span, file_calls, heredoc_body, kustomization_inserts,
                          kustomization_removes, manifest_object, relabel, splice)

RULE = "v1beta1/manifests"
FACTS = knowledge.load("v1beta1")


@dataclass
class Result:
    edits: list[Edit] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    new_addresses: list[str] = field(default_factory=list)     # Terraform addresses created
    tf_targets: list[tuple[str, str]] = field(default_factory=list)   # (root module dir, address) created
    new_files: list[str] = field(default_factory=list)         # YAML files created (raw / templates)
    old_objects: list[tuple[str, str, str]] = field(default_factory=list)   # (kind, name, where)
    removed: list[str] = field(default_factory=list)           # what cleanup removes
    tainted: set[str] = field(default_factory=set)             # Provisioners that already have spec.taints
    legacy: set[str] = field(default_factory=set)              # ... and those already marked karpenter.sh/legacy


def _scope(m: Manifest) -> str:
    return posixpath.dirname(m.tf_path or m.path)


def _name_key(m: Manifest, name: Any) -> str:
    return m.masked.unmask(str(name)) if name is not None else ""


def derive_name(old: str, kind: str, kind_of_old: str, file: bool = False) -> str:
    rules = FACTS["naming"][kind]
    for a, b in rules["replace"]:
        if a in old:
            return old.replace(a, b)
    suffix = rules["suffix"]["file" if file else "label"]
    return old + suffix


def _unique(name: str, taken: set[str]) -> str:
    if name not in taken:
        return name
    i = 2
    while f"{name}{i}" in taken:
        i += 1
    return f"{name}{i}"


@dataclass
class Removals:
    """Objects to remove, grouped the way their containers remove them: YAML documents per file, Terraform blocks per
    file (a block once, however many objects it holds), template files per path."""
    docs: dict = field(default_factory=dict)
    blocks: dict = field(default_factory=dict)
    templates: dict = field(default_factory=dict)

    def add(self, m: Manifest) -> None:
        if m.container == "yaml":
            self.docs.setdefault(m.path, []).append(m)
            return
        bs = self.blocks.setdefault(m.tf_path, [])
        if all(b.start != m.block.start for b in bs):
            bs.append(m.block)
        if m.container == "template":
            self.templates.setdefault(m.path, []).append(m)


class ManifestsRule:
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

    # -- shared ------------------------------------------------------------------------------
    def finding(self, code, severity, path, line, message, manual=""):
        self.res.findings.append(Finding(code, severity, path, line, message, manual))

    def beta_index(self) -> set[tuple[str, str, str]]:
        return {(_scope(m), m.kind, _name_key(m, m.name)) for m in self.manifests if m.era == "beta"}

    def role(self) -> Resolution:
        if self._role is None:
            if self.opts.node_role:
                self._role = Resolution(literal=self.opts.node_role, trail=["--node-role"])
            else:
                self._role, self._role_value = resolve_node_role(self.repo, self.values, self.owns)
        return self._role

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
        for p in self.repo.tfvars_files():
            f = self.repo.hcl(p) if src.group(1) in self.repo.files[p].text else None
            if f and src.group(1) in f.attributes and f.attributes[src.group(1)].expr.kind == "object":
                keys.extend(e.key for e in f.attributes[src.group(1)].expr.entries if e.key not in keys)
        if not keys:
            for p, b in self.repo.blocks("variable"):
                d = b.attr("default") if b.labels == [src.group(1)] else None
                if d is not None and d.kind == "object":
                    keys = [e.key for e in d.entries]
        return keys

    def convert(self, m: Manifest) -> list[Converted]:
        if m.kind == "Provisioner":
            np, nc = convert_provisioner(m.obj, keep_alpha_defaults=self.opts.keep_alpha_defaults)
            out = [np]
            if nc is not None:
                out.append(self.global_tags(m, self.with_role(m, nc, ("spec", "provider"))))
            return out
        return [self.global_tags(m, self.with_role(m, convert_nodeclass(m.obj), ("spec",)))]

    def global_tags(self, m: Manifest, conv: Converted) -> Converted:
        """Chart value settings.aws.tags (dropped in v0.33) merged into the EC2NodeClass's own tags."""
        prefix = tuple(FACTS["global_tags_key"].split("."))
        tags = [v for v in self.values if v.keys[: len(prefix)] == prefix and len(v.keys) == len(prefix) + 1]
        if not tags or conv.obj is None:
            return conv
        spec = conv.obj["spec"]
        own = spec.get("tags")
        merged = CommentedMap(own) if isinstance(own, dict) else CommentedMap()
        added = []
        for v in tags:
            key = v.keys[-1]
            if key in merged:
                continue
            if v.expression is None:
                merged[key] = v.value
            elif m.container in ("kubectl_manifest", "kubernetes_manifest"):
                merged[key] = m.expression_token(v.expression)
            else:
                self.finding("MIG-NC-015", "warning", m.path, m.line,
                             f"global tag {key} ({v.path}:{v.line}) is the Terraform expression {v.expression}, "
                             f"which cannot be written into {m.path}",
                             f"add tag {key} to the EC2NodeClass by hand before the cleanup phase removes "
                             "settings.aws.tags")
                continue
            added.append(f"{key} ({v.path}:{v.line})")
        if added:
            spec["tags"] = merged
            if own is None:
                conv.obj["spec"] = _reorder_spec(spec)
            self.finding("MIG-NC-016", "info", m.path, m.line,
                         f"global chart tags merged into EC2NodeClass {_name_key(m, conv.name)}: {', '.join(added)}")
        return conv

    def with_role(self, m: Manifest, conv: Converted, spec_path: tuple) -> Converted:
        """Re-run the EC2NodeClass conversion with the node role resolved for this container."""
        spec_src = m.obj
        for p in spec_path:
            spec_src = spec_src.get(p) if isinstance(spec_src, dict) else None
        src = CommentedMap([("metadata", CommentedMap([("name", conv.name)])), ("spec", spec_src)]) \
            if spec_path != ("spec",) else m.obj
        if not needs_role(src):
            return conv
        if any(n.severity == "error" for n in conv.notes):
            return conv
        role = self.role_for(m)
        profile = self.profile_for(m) if role is None and (not self.role().ok or self.profile_literal()) else None
        if role is None and profile is None:
            if not self.role().ok:
                self.role_unresolved(m)
            return conv
        again = convert_nodeclass(src, inline=spec_path != ("spec",), role=role, instance_profile=profile)
        again.moves = conv.moves if spec_path != ("spec",) else again.moves
        again.notes = conv.notes
        return again

    def role_for(self, m: Manifest) -> Any:
        """Role value for the container of m: a literal, or a placeholder for a Terraform expression."""
        r = self.role()
        name = _name_key(m, m.obj.get("metadata", {}).get("name") if isinstance(m.obj, dict) else "")
        if not r.ok:
            return None
        trail = " -> ".join(r.trail)
        if m.container == "yaml" or (m.container == "template" and m.call is not None and m.call.name == "file"):
            literal = r.literal if r.literal is not None else self.literal_of(r.expression)
            if literal is not None and r.literal is None:
                self.finding("MIG-NC-013", "info", m.path, m.line,
                             f"role {literal!r} resolved: {trail} (the value {r.expression} has)")
                return literal
            if r.literal is None and self.profile_literal():
                return None             # the literal instance profile its nodes use is kept instead (MIG-NC-017)
            if r.literal is None:
                self.finding("MIG-NC-012", "error", m.path, m.line,
                             f"EC2NodeClass for {name} needs a literal role name in {m.path}, but the role is only "
                             f"known as the Terraform expression {r.expression} ({trail})",
                             f"re-run with --node-role <the value of {r.expression}>")
                return None
            self.finding("MIG-NC-013", "info", m.path, m.line, f"role {r.literal!r} resolved: {trail}")
            return r.literal
        if r.literal is not None and r.expression is None:
            self.finding("MIG-NC-013", "info", m.path, m.line, f"role {r.literal!r} resolved: {trail}")
            return r.literal
        expr = r.expression or hclsrc.quote(r.literal or "")
        # a template takes the role as its own variable (added to the templatefile() call), never the expression
        tok = m.expression_token(FACTS["naming"]["template_role_variable"] if m.container == "template" else expr)
        self.finding("MIG-NC-013", "info", m.tf_path or m.path, m.line, f"role {expr} resolved: {trail}")
        return tok

    def literal_of(self, expression: str | None) -> str | None:
        """The one literal a Terraform expression of the chart values' module has (a variable's default or its tfvars
        value, a local), for files that cannot hold an expression."""
        v = self._role_value
        if not expression or v is None or not v.path.endswith((".tf", ".tofu")):
            return None
        from ...resolve import definition_sites
        from ...sources.hcl import Expr
        sites, _ = definition_sites(self.repo, v.path, Expr("ref", 0, 0, expression.strip()))
        values = {s.value for s in sites}
        return values.pop() if len(values) == 1 else None

    def profile_literal(self) -> bool:
        v = self._role_value
        return v is not None and v.expression is None and v.value not in (None, "")

    def role_unresolved(self, m: Manifest) -> None:
        name = _name_key(m, m.obj.get("metadata", {}).get("name") if isinstance(m.obj, dict) else "")
        self.finding("MIG-NC-011", "error", m.path, m.line,
                     f"EC2NodeClass for {m.kind} {name} needs spec.role (the node IAM role name) or the instance "
                     f"profile its nodes use, and migrator can resolve neither: {self.role().reason}",
                     "re-run with --node-role <role name>, or add an aws_iam_instance_profile with a role for the "
                     "profile in settings.aws.defaultInstanceProfile, or set spec.instanceProfile on the "
                     "AWSNodeTemplate to keep using an unmanaged instance profile")

    def profile_for(self, m: Manifest) -> Any:
        """The instance profile the old nodes used (the chart's defaultInstanceProfile), when the role behind it
        cannot be resolved: the EC2NodeClass keeps it (spec.instanceProfile), so new nodes get the same identity."""
        v = self._role_value
        if v is None or v.value in (None, ""):
            return None
        name = _name_key(m, m.obj.get("metadata", {}).get("name") if isinstance(m.obj, dict) else "")
        how = (f"EC2NodeClass for {m.kind} {name}: spec.instanceProfile {v.expression or v.value} kept from "
               f"{v.key} ({v.path}:{v.line}), the profile its nodes use today, because the role behind it cannot "
               f"be resolved ({self.role().reason})")
        later = ("to move to spec.role later (Karpenter then manages the instance profiles, and the controller needs "
                 "the iam:*InstanceProfile permissions): replace spec.instanceProfile by spec.role = <the profile's "
                 "role name>; that change replaces the nodes")
        if v.expression is None:
            self.finding("MIG-NC-017", "info", m.path, m.line, how, later)
            return str(v.value)
        if m.container in ("yaml", "template"):
            return None         # a Terraform expression cannot be written into a plain file or another's template
        tok = m.expression_token(v.expression)
        self.finding("MIG-NC-017", "info", m.tf_path or m.path, m.line, how, later)
        return tok

    def valid(self, m: Manifest, c: Converted) -> bool:
        errs = validate_object(c.obj)
        if errs:
            self.finding("MIG-VAL-001", "error", m.path, m.line,
                         f"generated {c.kind} {_name_key(m, c.name)} does not validate against the v1beta1 CRD: "
                         + "; ".join(errs), "fix the source object (see the messages) and re-run; nothing was written")
            return False
        return True

    # -- rendering -------------------------------------------------------------------------------
    def yaml_text(self, m: Manifest, c: Converted) -> str | None:
        em = yamlsrc.Emitter(m.style).emit(c.obj)
        lines = self.carry_comments(m, c, em, em.text.splitlines())
        if m.masked.directives:
            placed = self.place_directives(m, c, em, lines)
            if placed is None:
                return None
            lines = placed
        if m.masked.helm:
            lines = self.reindent_tokens(m, lines)
        return m.masked.unmask("\n".join(lines) + "\n")

    def carry_comments(self, m: Manifest, c: Converted, em: yamlsrc.Emitted, lines: list[str]) -> list[str]:
        """Full-line comments go above the field they described; end-of-line comments follow their scalar."""
        src = m.masked.text.splitlines()
        lines = list(lines)
        above: dict[int, list[str]] = {}
        for ln, path in sorted(m.line_map.items()):
            q = _comment_target(c, path)
            if q is None or q not in em.ranges:
                continue
            first, last = em.ranges[q]
            block = []
            i = ln - 1
            while i >= 0 and src[i].strip().startswith("#") and not src[i].strip().startswith("#__MIGDIR_"):
                block.insert(0, src[i].strip())
                i -= 1
            if block:
                ind = lines[first][: len(lines[first]) - len(lines[first].lstrip())]
                above.setdefault(first, []).extend(ind + b for b in block)
            eol = _eol_comment(m.obj, path, src)
            if eol and first == last and "#" not in lines[first] and not lines[first].rstrip().endswith((":", "|", "|-")):
                lines[first] = f"{lines[first]} {eol}"
        if not above:
            return lines
        out = []
        for i, ln in enumerate(lines):
            out.extend(above.get(i, []))
            out.append(ln)
        # emitted ranges shift; recompute them for directive placement
        shift = 0
        starts = {}
        for i in range(len(lines)):
            shift += len(above.get(i, []))
            starts[i] = i + shift
        em.ranges.update({p: (starts[a], starts[b]) for p, (a, b) in em.ranges.items()})
        return out

    def place_directives(self, m: Manifest, c: Converted, em: yamlsrc.Emitted, lines: list[str]) -> list[str] | None:
        """Carry whole-line template directives (%{ if }, %{ for }; Helm's {{- if }}, {{- range }}, {{- with }},
        {{ toYaml ... | nindent N }}) to where their content moved."""
        ds = m.masked.directives
        src = m.masked.text.splitlines()
        lay = templates.layout(m.masked, m.line_map)
        if lay.error is not None:
            return self._directive_fail(m, ds[lay.error[0]].text, lay.error[1])
        content_lines = sorted(m.line_map)
        before: dict[int, list[str]] = {}
        after: dict[int, list[str]] = {}

        def mapped_range(p: tuple, text: str) -> tuple[int, int] | None:
            q = c.map_path(p)
            if q is None or not c.is_verbatim(p) or q not in em.ranges:
                self._directive_fail(m, text, f"wraps {'.'.join(map(str, p))}, which is converted into a different "
                                              "shape")
                return None
            return em.ranges[q]

        def delta_of(p: tuple) -> int:
            """How far the key at p moved right (negative: left) in the converted object."""
            old = next((ln for ln, q in m.line_map.items() if q == p), None)
            new = em.ranges.get(c.map_path(p))
            return 0 if old is None or new is None else \
                templates.indent_of(lines[new[0]]) - templates.indent_of(src[old])

        def moved(i: int, delta: int) -> str:
            ind = max(0, templates.indent_of(src[ds[i].index]) + delta)
            return " " * ind + templates.reindent(ds[i].text, delta)

        # directives that write YAML: after their owner's previous child (or its key line), re-indented
        anchor: dict[int, tuple[int, int]] = {}          # directive -> (line to insert after, delta)
        for i, owner in lay.content.items():
            if owner is None:
                return self._directive_fail(m, ds[i].text, "writes keys at the top of the object, where the hop "
                                                           "renames and moves fields")
            rng = mapped_range(owner, ds[i].text)
            if rng is None:
                return None
            prev = [m.line_map[ln] for ln in content_lines if ln < ds[i].index
                    and len(m.line_map[ln]) == len(owner) + 1 and m.line_map[ln][:len(owner)] == owner]
            at = rng[0]
            if prev and c.map_path(prev[-1]) in em.ranges:
                at = em.ranges[c.map_path(prev[-1])][1]
            anchor[i] = (at, delta_of(owner))
            if m.value_at(owner) is None:          # `labels:` filled only by the action
                lines[rng[0]] = re.sub(r":\s*(null|~)?\s*$", ":", lines[rng[0]])
        groups: dict[int, list[int]] = {}                # content directive -> the directives placed with it
        for oi, ci in sorted(lay.pairs, key=lambda p: p[0]):
            lo, hi = lay.region((oi, ci), ds)
            hi = hi if ci is not None else lo + 10 ** 9
            inside = [ln for ln in content_lines if lo < ln < hi]
            if ci is None:
                inside = inside[:1]
            if not inside:
                inner = [i for i in anchor if lo < ds[i].index < hi]
                if not inner:
                    return self._directive_fail(m, ds[oi].text, "wraps no YAML content")
                groups.setdefault(inner[0], []).insert(0, oi)
                if ci is not None:
                    groups.setdefault(inner[-1], []).append(ci)
                continue
            paths = [m.line_map[ln] for ln in inside]
            depth = min(len(p) for p in paths)
            mapped = []
            for p in [p for p in paths if len(p) == depth]:
                r = mapped_range(p, ds[oi].text)
                if r is None:
                    return None
                mapped.append(r)
            mapped.sort()
            for (a1, b1), (a2, _) in zip(mapped, mapped[1:]):
                if a2 != b1 + 1:
                    return self._directive_fail(m, ds[oi].text, "wraps fields that are no longer next to each other")
            first, last = mapped[0][0], mapped[-1][1]
            ind = lines[first][: len(lines[first]) - len(lines[first].lstrip())]
            before.setdefault(first, []).append(ind + ds[oi].text)
            if ci is not None:
                after.setdefault(last, []).insert(0, ind + ds[ci].text)
        for i, (at, delta) in sorted(anchor.items()):
            own = groups.get(i, [])
            openers = [j for j in own if ds[j].index < ds[i].index]
            closers = [j for j in own if ds[j].index > ds[i].index]
            after.setdefault(at, []).extend(moved(j, delta) for j in openers + [i] + closers)
        head = [ds[i].text for i in lay.lead] + [ds[o].text for o, _ in lay.whole]
        for i in lay.free:                   # comments and assignments: where they stood, else at the top
            nxt = next((ln for ln in content_lines if ln > ds[i].index), None)
            q = c.map_path(m.line_map[nxt]) if nxt is not None else None
            if nxt is not None and ds[i].index > content_lines[0] and q in em.ranges:
                first = em.ranges[q][0]
                before.setdefault(first, []).insert(0, moved(i, templates.indent_of(lines[first])
                                                             - templates.indent_of(src[nxt])))
            else:
                head.append(ds[i].text)
        tail = [ds[c_].text for _, c_ in reversed(lay.whole)] + [ds[i].text for i in lay.trail]
        out = list(head)
        for i, ln in enumerate(lines):
            out.extend(before.get(i, []))
            out.append(ln)
            out.extend(after.get(i, []))
        return out + tail

    def reindent_tokens(self, m: Manifest, lines: list[str]) -> list[str]:
        """Helm values written with `| nindent N` inline (`labels: {{ toYaml . | nindent 4 }}`) follow their key."""
        src = m.masked.text.splitlines()
        moved = {tok: orig for tok, orig in m.masked.tokens.items() if "indent" in orig}
        if not moved:
            return lines
        where = {tok: templates.indent_of(ln) for ln in src for tok in templates.TOKEN_RE.findall(ln)
                 for tok in [f"__MIG_{tok}__"] if tok in moved}
        out = []
        for ln in lines:
            for tok in {f"__MIG_{t}__" for t in templates.TOKEN_RE.findall(ln)} & moved.keys():
                ln = ln.replace(tok, templates.reindent(moved[tok], templates.indent_of(ln) - where.get(tok, 0)))
            out.append(ln)
        return out

    def _directive_fail(self, m: Manifest, text: str, why: str) -> None:
        self.finding("MIG-TPL-001", "error", m.path, m.line,
                     f"template directive `{text}` {why}; migrator cannot place it in the converted object",
                     "write the new template by hand from the plan's other objects; nothing was generated for it")
        return None

    # -- placement: raw YAML -------------------------------------------------------------------
    def place_yaml_file(self, path: str, items: list[tuple[Manifest, list[Converted]]]) -> None:
        sf = self.repo.files[path]
        docs = []
        for m, convs in items:
            for c in convs:
                t = self.yaml_text(m, c)
                if t is None:
                    return
                docs.append(t)
        d, base = posixpath.split(path)
        stem, ext = posixpath.splitext(base)
        new_base = self.file_stem(stem, [m.kind for m, _ in items])
        new_path = posixpath.join(d, new_base + ext) if d else new_base + ext
        if new_path in self.repo.files or new_path in self._new_files:
            self.finding("MIG-MAN-002", "warning", path, items[0][0].line,
                         f"{new_path} already exists, but does not hold the converted objects of {path}",
                         f"move the converted objects into {new_path} by hand, or rename that file and re-run")
            return
        lead = "---\n" if sf.text.lstrip().startswith("---") else ""
        text = lead + "---\n".join(docs)
        self._new_files.add(new_path)
        self.res.edits.append(NewFile(new_path, to_newline(text, sf.newline), self.rule))
        self.res.new_files.append(new_path)
        self.kustomization_entry(path, new_path, add=True)

    def kustomization_entry(self, old_path: str, new_path: str | None, add: bool) -> None:
        # every kustomization that lists the file: each environment that builds it gets the new one, loses the old
        self.res.edits += kustomization_inserts(self.repo, old_path, new_path, self.rule) if add else \
            kustomization_removes(self.repo, old_path, self.rule)

    # -- placement: Terraform ------------------------------------------------------------------
    def taken(self, tf_path: str) -> set[str]:
        if tf_path not in self._taken_labels:
            taken = set()
            for p in self.repo.tf_in_dir(posixpath.dirname(tf_path)):
                if "resource" in self.repo.files[p].text:
                    f = self.repo.hcl(p)
                    for b in (f.blocks if f else []):
                        if b.type == "resource" and len(b.labels) == 2:
                            taken.add(b.labels[1])
            self._taken_labels[tf_path] = taken
        return self._taken_labels[tf_path]

    def place_hcl(self, m: Manifest, c: Converted) -> None:
        tf = m.tf_path
        text = self.repo.text(tf)
        nl = self.repo.files[tf].newline
        b = m.block
        label = _unique(self.block_label(b.labels[1], c.kind, m.kind), self.taken(tf))
        repl: list[tuple[int, int, str]] = [relabel(b, label)]
        if m.container == "kubectl_manifest" and not m.hcl:
            body = self.yaml_text(m, c)
            if body is None:
                return
            repl.append(heredoc_body(text, b, body))
        elif m.hcl:
            repl.append(manifest_object(text, b, m.expr, c.obj, m.masked.tokens))
            cf = b.attributes.get("computed_fields")
            if cf is not None and cf.expr.kind == "tuple":
                kept = []
                for item in cf.expr.items:
                    lit = item.literal()
                    mapped = c.map_path(tuple(lit.split("."))) if isinstance(lit, str) else None
                    if isinstance(lit, str) and mapped is None:
                        continue            # the field does not exist in this kind
                    kept.append(hclsrc.quote(".".join(map(str, mapped))) if mapped is not None else item.source)
                if kept:
                    repl.append((cf.expr.start, cf.expr.end, "[" + ", ".join(kept) + "]"))
                else:
                    s0, e0 = line_start(text, cf.start), line_end(text, cf.end)
                    repl.append((s0, e0, ""))
        else:   # template
            body = self.yaml_text(m, c)
            if body is None:
                return
            tdir, tbase = posixpath.split(m.path)
            new_base = self.template_base(tbase, c.kind, m.kind)
            new_tpath = posixpath.join(tdir, new_base) if tdir else new_base
            path_expr = m.call.items[0]
            if tbase not in path_expr.source:
                self._template_path_fail(m)
                return
            i = path_expr.source.rfind(tbase)
            new_src = path_expr.source[:i] + new_base + path_expr.source[i + len(tbase):]
            repl.append((path_expr.start, path_expr.end, new_src))
            var = FACTS["naming"]["template_role_variable"]
            if "${" + var + "}" in body:
                r = self.role()
                args = m.call.items
                if len(args) < 2 or args[1].kind != "object":
                    self.finding("MIG-NC-014", "error", tf, hclsrc.line_of(text, m.call.start),
                                 f"the new template needs the node role as variable {var}, but the "
                                 f"{m.call.name}() variables are not an object literal migrator can extend",
                                 f"add {var} = {r.expression} to the template variables by hand, or re-run with "
                                 "--node-role")
                    return
                obj = args[1]
                if obj.entries:
                    last = obj.entries[-1]
                    if "\n" in obj.source:
                        ind = indent_at(text, last.start)
                        ins = f"\n{ind}{var} = {r.expression}"
                    else:
                        ins = f", {var} = {r.expression}"
                    repl.append((last.end, last.end, ins))
                else:
                    repl.append((obj.start, obj.end, f"{{ {var} = {r.expression} }}"))
            if new_tpath not in self.repo.files and new_tpath not in self._new_files:
                self._new_files.add(new_tpath)
                self.res.edits.append(NewFile(new_tpath, to_newline(body, self.repo.files[m.path].newline), self.rule))
                self.res.new_files.append(new_tpath)
        clone = splice(text, b.start, b.end, repl)
        if m.hcl:
            clone = align_attributes(clone)         # a dropped computed_fields line leaves `=` padding
        self.taken(tf).add(label)
        key = (tf, b.end)
        order = self._inserts_after.get(key, 0)
        self._inserts_after[key] = order + 1
        edit = TextEdit(tf, b.end, b.end, to_newline("\n\n" + clone, nl), self.rule, order=order)
        self.res.edits.append(edit)
        self.__dict__.setdefault("_placed", []).append((tf, f"{b.labels[0]}.{b.labels[1]}", f"{b.labels[0]}.{label}", edit))
        self.res.new_addresses.append(f"{b.labels[0]}.{label}")
        self.res.tf_targets.append((posixpath.dirname(tf), f"{b.labels[0]}.{label}"))

    def _template_path_fail(self, m: Manifest) -> None:
        self.finding("MIG-TPL-002", "error", m.tf_path, hclsrc.line_of(self.repo.text(m.tf_path), m.call.start),
                     "the template path is not written literally; migrator cannot point a new block at a new template",
                     "copy the block by hand and point it at the generated template")

    # -- cleanup -------------------------------------------------------------------------------
    def cleanup(self) -> Result:
        beta = self.beta_index()
        going = Removals()
        for m in self.manifests:
            if m.era != "alpha" or m.kind == "Machine":
                continue
            name = _name_key(m, m.name)
            targets = [(TARGET_KIND[m.kind], name)]
            if m.kind == "Provisioner" and isinstance(m.obj.get("spec"), dict) and "provider" in m.obj["spec"]:
                targets.append(("EC2NodeClass", name))
            missing = [t for t in targets if (_scope(m), t[0], t[1]) not in beta]
            if missing:
                self.finding("MIG-CLN-001", "error", m.path, m.line,
                             f"{m.kind} {name} cannot be removed yet: no {', '.join(f'{k} {n}' for k, n in missing)} "
                             "exists next to it", "run `migrator apply --phase prepare --write` and roll the nodes first")
                continue
            self.res.removed.append(f"{m.kind} {name} ({m.path}:{m.line})")
            going.add(m)
        remove_blocks, remove_docs, templates = going.blocks, going.docs, going.templates
        for tf, blocks in remove_blocks.items():
            text = self.repo.text(tf)
            for b in blocks:
                s, e = block_span(text, b)
                self.res.edits.append(TextEdit(tf, s, e, "", self.rule))
        removed_starts = {(tf, b.start) for tf, bs in remove_blocks.items() for b in bs}
        for tpath, ms in templates.items():
            if not self._template_still_used(tpath, removed_starts):
                self.res.edits.append(DeleteFile(tpath, self.rule))
        for path, ms in remove_docs.items():
            self.remove_yaml_docs(path, ms)
        return self.res

    def _template_still_used(self, tpath: str, removed: set[tuple[str, int]]) -> bool:
        return any(used == tpath and (p, start) not in removed
                   for p, start, used in self._file_references(posixpath.basename(tpath)))

    def _file_references(self, base: str) -> list[tuple[str, int, str]]:
        """(file, start of the block, the file it names) for every file()/templatefile() call in .tf files naming
        `base`: read once per run (every root of a fleet names the same template name)."""
        cache = self.repo.__dict__.setdefault("_file_references", {})
        if base not in cache:
            out = []
            for p in self.repo.tf_containing(base):
                f = self.repo.hcl(p)
                for b in (f.walk() if f else []):
                    for a in b.attributes.values():
                        for call in file_calls(a.expr):
                            if call.items:
                                out.append((p, b.start, self.repo.resolve_file_arg(p, call.items[0])))
            cache[base] = out
        return cache[base]

    def remove_yaml_docs(self, path: str, ms: list[Manifest]) -> None:
        text = self.repo.text(path)
        docs = yamlsrc.split_documents(text)
        gone = {m.doc_start for m in ms}
        if all(d.start in gone for d in docs):
            self.res.edits.append(DeleteFile(path, self.rule))
            self.kustomization_entry(path, None, add=False)
            return
        for i, d in enumerate(docs):
            if d.start not in gone:
                continue
            if i + 1 < len(docs):
                self.res.edits.append(TextEdit(path, d.start, docs[i + 1].start, "", self.rule))
            else:
                prev_end = docs[i - 1].end if i > 0 else 0
                self.res.edits.append(TextEdit(path, prev_end, d.end, "", self.rule))


def _reorder_spec(spec: CommentedMap) -> CommentedMap:
    order = FACTS["ec2nodeclass"]["order"]["spec"]
    return CommentedMap(sorted(spec.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order)))


def _comment_target(c: Converted, path: tuple) -> tuple | None:
    q = c.map_path(path)
    if q is not None:
        return q
    below = [d for s, d, _ in c.moves if s[: len(path)] == path]
    return below[0] if len(below) == 1 else None


def _eol_comment(obj: Any, path: tuple, src: list[str]) -> str | None:
    """The end-of-line comment of a scalar entry in the source (`expireAfter: 1440h # 60 days`), read from the text
    at the scalar's position (the parsed tree's positions are the masked text's, `src`); None if there is none."""
    parent = obj
    for p in path[:-1]:
        try:
            parent = parent[p]
        except (KeyError, IndexError, TypeError):
            return None
    key = path[-1]
    try:
        value = parent[key]
        line, col = parent.lc.value(key) if isinstance(parent, dict) else parent.lc.item(key)
    except (KeyError, IndexError, TypeError, AttributeError):
        return None
    if isinstance(value, (dict, list)) or value is None or line >= len(src):
        return None
    rest = _after_scalar(src[line][col:])
    if rest is None:
        return None
    m = re.match(r"[ \t]+(#.*)$", rest)
    return m.group(1).strip() if m else None


def _after_scalar(text: str) -> str | None:
    """What follows a one-line scalar at the start of `text`: after its closing quote, or after a plain scalar (which
    a ` #` ends); None for a quoted scalar that goes on to the next line."""
    if text[:1] == "'":
        i = 1
        while True:
            j = text.find("'", i)
            if j < 0:
                return None
            if text[j + 1:j + 2] == "'":
                i = j + 2
                continue
            return text[j + 1:]
    if text[:1] == '"':
        i = 1
        while i < len(text):
            if text[i] == "\\":
                i += 2
                continue
            if text[i] == '"':
                return text[i + 1:]
            i += 1
        return None
    m = re.search(r"[ \t]#", text)
    return text[m.start():] if m else ""
