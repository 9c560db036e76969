"""Rule `v1beta1/helm`: chart version, values renames, CRD chart, wherever the values live.

Values are rewritten from the hop's table (knowledge/helm.yaml) in every shape: heredoc YAML,
`yamlencode({...})`, values files, Flux `spec.values` (all through key trees) and `set` blocks / lists.
The chart version is bumped where it is defined (literal, variable default, every tfvars, local); a
frozen `https://charts.karpenter.sh` repository moves to OCI; a `karpenter-crd` release is bumped with
the controller, or added (Terraform `helm_release`, Flux `HelmRelease`) with the controller depending on it.
What cannot be edited statically is reported with the file, line and key.
"""
from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field

from ruamel.yaml.comments import CommentedMap

from ... import knowledge, templating
from ...edits import Edit, NewFile, TextEdit, comments_above, indent_at, line_end, line_start, to_newline
from ...inventory import ChartInstall, Manifest, Repo, ValuesSource
from ...inventory.charts import UNREADABLE, _chart_name
from ...model import Finding
from ...path import admits, chart_version, format_version, range_floor, shift_range, version_range  # noqa: F401 - the spelling rule lives with the versions
from ...resolve import definition_sites
from ...sources import hcl as hclsrc
from ...sources import keytree
from ...sources import yaml as yamlsrc

RULE = "v1beta1/helm"
HOP = "v1alpha5->v1beta1"
FACTS = knowledge.load("helm")


def parse_version(v: str) -> tuple[int, ...] | None:
    m = re.fullmatch(r"v?(\d+)\.(\d+)\.(\d+)(?:[-+].*)?", v.strip())
    return tuple(int(x) for x in m.groups()) if m else None


def with_aliases(rows: list[dict]) -> list[dict]:
    """A hop's value rows, each also for the older names of its key (knowledge/helm.yaml `aliases`: `alias` says
    before which chart the name was current; a leftover of it means the same later)."""
    out = []
    for row in rows:
        out.append(row)
        out += [{**row, "key": a["key"], "alias": a["before"],
                 "why": f"{a['key']} is {row['key']} before chart {a['before']}" + (f"; {row['why']}" if row.get("why") else "")}
                for a in FACTS["aliases"] if a["same_as"] == row["key"]]
    return out


@dataclass
class HelmResult:
    edits: list[Edit] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    new_crd_release: bool = False
    crd_release_name: str = ""          # the Helm release name of the karpenter-crd release migrator adds
    namespaces: set[str] = field(default_factory=set)
    controllers: list[str] = field(default_factory=list)       # addresses
    crd_releases: list[str] = field(default_factory=list)
    pass_through: str | None = None
    kinds: set[str] = field(default_factory=set)               # terraform / flux
    refs: list[str] = field(default_factory=list)              # path:line of every chart installation
    chart_tf: list[tuple[str, str]] = field(default_factory=list)   # (root module dir, address), all releases
    crd_tf: list[tuple[str, str]] = field(default_factory=list)     # (root module dir, address), CRD releases
    kustomizations: list[str] = field(default_factory=list)    # dirs `kustomize build --enable-helm` installs from
    umbrellas: list[tuple[str, str]] = field(default_factory=list)   # (dir, name) of umbrella charts installing it
    crd_umbrellas: list[tuple[str, str]] = field(default_factory=list)   # (dir, name) of those carrying karpenter-crd
    umbrella_apps: dict[str, str] = field(default_factory=dict)   # chart -> the Argo CD Application syncing its umbrella
    helmfiles: list[tuple[str, str, str]] = field(default_factory=list)  # (helmfile, release name, chart)
    held: tuple[str, str] | None = None  # 1.x hop: (the lower chart it stops at, why) when a required value is unset


class HelmRule:
    def __init__(self, repo: Repo, manifests: list[Manifest], charts: list[ChartInstall], phase: str,
                 blocked_alpha: set[tuple[str, str]] | None = None, *, hop: str = HOP, rule: str = RULE,
                 targets: dict[str, str] | None = None, rows: list[dict] | None = None, bump: bool | None = None,
                 add_crd_release: bool | None = None, crd_rows: list[dict] | None = None, owns=None):
        """Defaults are the first hop's; a later hop passes its own key, chart targets (chart -> version, a
        missing chart is left alone), value rows, and whether this phase bumps versions / adds a CRD release."""
        self.repo = repo
        self.manifests = manifests
        self.charts = charts
        self.phase = phase
        self.owns = owns            # this cluster root's files: a shared module's version is set where it passes it
        self.hop = hop
        self.rule = rule
        if targets is None:
            default = FACTS["hops"][hop]["version"]
            targets = {"karpenter": default, "karpenter-crd": default}
        self.targets = targets
        self._rows = rows
        self.crd_rows = crd_rows or []          # value rows for the karpenter-crd chart
        self.bumps = (phase == "prepare") if bump is None else bump
        self.adds_crd_release = self.bumps if add_crd_release is None else add_crd_release
        self.blocked = blocked_alpha or set()
        self.res = HelmResult()
        self._sites_done: set[tuple[str, int]] = set()

    def finding(self, code, severity, path, line, message, manual=""):
        self.res.findings.append(Finding(code, severity, path, line, message, manual))

    def run(self) -> HelmResult:
        for ci in self.charts:
            self.res.kinds.add(ci.kind)
            if ci.kind == "helmfile":
                self.res.helmfiles.append((ci.path, str(ci.source_map.get("name") or ci.chart), ci.chart))
            if ci.generic or ci.shared is not None:     # an install that brings no CRD chart of its own
                self.res.kinds.add("generic")
            self.res.refs.append(f"{ci.path}:{ci.line}")
            if ci.kind == "kustomize":
                self.deployed_by(ci)
            if ci.kind == "blueprints":
                self.res.chart_tf.append((posixpath.dirname(ci.path), ci.block.address))
                self.res.controllers.append(ci.address)
                for vs in ci.values if self.rows() else []:
                    self.values(ci, vs)         # its karpenter.values / set: the keys to check by hand
                if self.bumps:
                    self.blueprints_version(ci)
                continue
            if ci.kind in ("terraform", "terragrunt"):
                addr = ci.block.address     # terragrunt: the release in the unit's module, planned in the unit
                self.res.chart_tf.append((posixpath.dirname(ci.path), addr))
                if ci.chart != "karpenter":
                    self.res.crd_tf.append((posixpath.dirname(ci.path), addr))
            mark = (len(self.res.edits), len(self.res.findings))
            if ci.chart == "karpenter":
                self.res.controllers.append(ci.address)
                for vs in ci.values:
                    self.values(ci, vs)
            else:
                self.res.crd_releases.append(ci.address)
                for vs in ci.values if self.crd_rows else []:
                    self.values(ci, vs, self.crd_rows)
            if ci.chart == "karpenter":
                self.image(ci)
            if self.bumps:
                self.version(ci)
                self.repository(ci)
                self.withhold_values(ci, *mark)
        if self.adds_crd_release:
            for ci in self.charts:
                if ci.chart == "karpenter" and ci.generic:
                    if not any(c.chart == "karpenter-crd" for c in self.charts):
                        self.finding("MIG-HELM-021", "warning", ci.path, ci.line,
                                     f"{ci.address} installs the karpenter chart as one item of a list of add-ons, "
                                     "with no karpenter-crd item: Helm never upgrades CRDs from a chart's crds/ folder",
                                     f"add a karpenter-crd item (oci://public.ecr.aws/karpenter, chart karpenter-crd, "
                                     f"version {format_version(self.targets['karpenter'], 'v')}) to the list, applied "
                                     "before the karpenter item")
                elif ci.chart == "karpenter" and ci.kind != "blueprints":
                    self.crds(ci)
                elif ci.chart == "karpenter" and not any(c.chart == "karpenter-crd" for c in self.charts):
                    self.finding("MIG-HELM-020", "warning", ci.path, ci.line,
                                 f"{ci.address} ({_family(ci)}) installs the karpenter chart only, and Helm "
                                 "never upgrades CRDs from a chart's crds/ folder",
                                 f"install the CRDs of {format_version(self.targets['karpenter'], 'v')} before the "
                                 "controller moves: a helm_release of oci://public.ecr.aws/karpenter/karpenter-crd at "
                                 "that version (then terraform state is the CRDs' owner), or kubectl apply -f of the "
                                 "chart's crds/")
        return self.res

    def deployed_by(self, ci: ChartInstall) -> None:
        """A kustomization's helmCharts entry is installed by whatever builds the kustomization: an Argo CD
        Application (its CRDs come in the same sync) or `kustomize build --enable-helm` of the overlay."""
        from ...inventory.kustomizations import deployers
        for how, what in deployers(self.repo, ci.path):
            if how == "argocd":
                self.res.kinds.add("argocd")
                self.res.controllers.append(f"Application/{what}")
                self.res.crd_releases.append(f"Application/{what}")
            elif (what or ".") not in self.res.kustomizations:
                self.res.kustomizations.append(what or ".")

    # -- values ------------------------------------------------------------------------------
    def alpha_needs_default_profile(self) -> bool:
        """Do alpha node templates that rely on defaultInstanceProfile remain after this phase?"""
        for m in self.manifests:
            if m.era != "alpha" or not isinstance(m.obj, dict):
                continue
            spec = m.obj.get("spec") or {}
            if m.kind == "AWSNodeTemplate":
                relies = "instanceProfile" not in spec
            elif m.kind == "Provisioner" and isinstance(spec.get("provider"), dict):
                relies = "instanceProfile" not in spec["provider"]
            else:
                continue
            if not relies:
                continue
            if self.phase == "prepare" or (m.path, m.line) in self.blocked:
                return True
        return False

    def rows(self) -> list[dict]:
        if self._rows is not None:
            return self._rows
        rows = []
        for row in with_aliases(FACTS["values"][HOP]):
            if self.phase == "prepare" and row["phase"] != "prepare":
                if not (row.get("needed_by_alpha") and not self.alpha_needs_default_profile()):
                    continue
            if self.phase == "cleanup" and row.get("needed_by_alpha") and self.alpha_needs_default_profile():
                continue
            rows.append(row)
        return rows

    def values(self, ci: ChartInstall, vs: ValuesSource, rows: list[dict] | None = None) -> None:
        rows = self.rows() if rows is None else rows
        if vs.kind == "argo_params":
            self.param_values(ci, vs, rows)
            return
        if vs.kind == "cli_set":           # a script's --set: said, the shell command is not edited
            for prm in vs.params:
                for row in rows:
                    if row["key"] != prm.name or "add" in row or "note" in row:
                        continue
                    to = f"--set {row['rename']}=..." if "rename" in row else \
                        f"--set {prm.name}={row['set']}" if "set" in row else "no --set of it"
                    self.finding("MIG-HELM-037", "warning", vs.path, prm.line,
                                 f"{ci.address} passes --set {prm.name}: {row.get('why') or 'renamed by this hop'}",
                                 f"change it to {to} in the script, with the chart version")
            return
        if vs.kind in UNREADABLE:
            what = {"dynamic_set": 'a dynamic "set" block', "set_list": "a computed set list",
                    "values_from": "spec.valuesFrom (ConfigMaps/Secrets outside the repository's files)",
                    "value_files": "helm.valueFiles (files of the chart's own repository or a $values source)",
                    "other": "an expression migrator cannot read",
                    "release": "the values eksctl gave the Helm release when it created the cluster"}[vs.kind]
            old = parse_version(chart_version(self.repo, self.charts, self.owns) or "0.0.0") or (0, 0, 0)
            keys = ", ".join(r["key"] for r in rows if not r.get("alias") or old < parse_version(r["alias"]))
            self.finding("MIG-HELM-001", "warning", vs.path, vs.line,
                         f"{ci.address} passes chart values through {what}; migrator cannot rewrite them statically",
                         f"check these keys by hand: {keys}")
            return
        if vs.tree is not None:
            self.tree_values(ci, vs, rows)
        if vs.sets:
            self.set_values(ci, vs, rows)

    def tree_values(self, ci: ChartInstall, vs: ValuesSource, rows: list[dict]) -> None:
        tree = vs.tree
        ops = []
        for row in rows:
            src = tuple(row["path"]) if "path" in row else tuple(row["key"].split("."))    # path: keys with dots
            entry = tree.root.get(src)
            if "add" in row:            # a value the target needs, taken from the repository by the caller
                if entry is None:
                    ops.append(keytree.Op("add", dst=src, value=row["add"], reason=row.get("why", "")))
                continue
            if entry is None:
                continue
            if "note" in row:
                self.finding("MIG-HELM-016", "info", vs.path, hclsrc.line_of(tree.text, entry.key_start),
                             f"chart value {row['key']}: {row['note']}")
                continue
            if "set" in row:
                current = entry.value.literal() if isinstance(entry.value, hclsrc.Expr) else entry.value
                if "when" in row and str(current).lower() != str(row["when"]).lower():
                    continue
                ops.append(keytree.Op("set", src, value=row["set"], reason=row.get("why", "")))
            elif "rename" in row:
                ops.append(keytree.Op("rename", src, tuple(row["rename"].split("."))))
            else:
                ops.append(keytree.Op("remove", src, reason=row.get("why", "")))
        out = keytree.rewrite(tree, ops)
        for op, e, why in out.problems:
            self.finding("MIG-HELM-002", "error", vs.path, hclsrc.line_of(tree.text, e.key_start),
                         f"chart value {'.'.join(op.src)} cannot be rewritten: {why}",
                         f"change {'.'.join(op.src)} to {'.'.join(op.dst) or '(remove it)'} by hand")
        for op in out.applied:
            e = tree.root.get(op.src)
            if op.kind == "remove" and e.is_map and op.src == tuple(_tags_row()["key"].split(".")):
                self.tags_removed(vs.path, hclsrc.line_of(tree.text, e.key_start), list(e.children))
            self.finding("MIG-HELM-003", "info", vs.path, hclsrc.line_of(tree.text, e.key_start),
                         f"chart value {'.'.join(op.src or op.dst)} " + (f"-> {'.'.join(op.dst)}" if op.kind == "rename"
                                                               else f"set to {keytree.render_scalar(tree, op.value)} ({op.reason})"
                                                               if op.kind == "set" else
                                                               f"added: {op.value} ({op.reason})" if op.kind == "add"
                                                               else f"removed ({op.reason})"))
        edits = _emptied_block(tree, out.edits) if vs.kind in ("argocd", "flux") else out.edits
        for s, e, t in edits:
            self.res.edits.append(TextEdit(vs.path, s, e, to_newline(t, self.repo.files[vs.path].newline),
                                           self.rule))
        if self.bumps:
            self.affinity(vs)

    def set_values(self, ci: ChartInstall, vs: ValuesSource, rows: list[dict]) -> None:
        text = self.repo.text(vs.path)
        by_key = {r["key"]: r for r in rows}
        present = {s.key for s in vs.sets}
        for s in vs.sets:
            row = next((r for k, r in by_key.items() if s.key == k or s.key.startswith(k + ".")), None)
            if row is None:
                continue
            if "note" in row:
                self.finding("MIG-HELM-016", "info", vs.path, s.line, f"chart value {row['key']}: {row['note']}")
                continue
            if "set" in row:
                lit = s.value.literal() if s.value is not None else None
                if s.key != row["key"] or s.value is None or lit is None or \
                        ("when" in row and str(lit).lower() != str(row["when"]).lower()):
                    continue
                new = hclsrc.quote(str(row["set"]).lower() if isinstance(row["set"], bool) else str(row["set"])) \
                    if s.value.kind == "string" else hclsrc.render_value(row["set"], {})
                self.res.edits.append(TextEdit(vs.path, s.value.start, s.value.end, new, self.rule))
                self.finding("MIG-HELM-003", "info", vs.path, s.line, f"set {s.raw} = {row['set']} ({row.get('why', '')})")
                continue
            if "rename" in row and s.key == row["key"]:
                if row["rename"] in present:
                    self.res.edits.append(TextEdit(vs.path, s.start, s.end, "", self.rule))
                    self.finding("MIG-HELM-003", "info", vs.path, s.line,
                                 f"set {s.raw}: removed, {row['rename']} is already set")
                    continue
                self.res.edits.append(TextEdit(vs.path, s.name.start, s.name.end, hclsrc.quote(row["rename"]), self.rule))
                self.finding("MIG-HELM-003", "info", vs.path, s.line, f"set {s.raw} -> {row['rename']}")
            elif "rename" not in row:
                self.res.edits.append(TextEdit(vs.path, *_removal(text, s.start, s.end), "", self.rule))
                if row.get("to_nodeclass_tags"):
                    self.tags_removed(vs.path, s.line, [s.key[len(row["key"]) + 1:]])
                self.finding("MIG-HELM-003", "info", vs.path, s.line, f"set {s.raw} removed ({row.get('why', '')})")

    def param_values(self, ci: ChartInstall, vs: ValuesSource, rows: list[dict]) -> None:
        """Argo CD `helm.parameters` (name/value items): names renamed, items removed, like Terraform `set`."""
        text = self.repo.text(vs.path)
        names = {p.name for p in vs.params}
        for prm in vs.params:
            row = next((r for r in rows if prm.name == r["key"] or prm.name.startswith(r["key"] + ".")), None)
            if row is None:
                continue
            if "note" in row:
                self.finding("MIG-HELM-016", "info", vs.path, prm.line, f"chart value {row['key']}: {row['note']}")
            elif "set" in row or "add" in row:
                continue        # values of parameters are strings Argo CD passes through; set them by hand
            elif "rename" in row and prm.name == row["key"] and row["rename"] not in names:
                s0, e0 = prm.name_span
                quote = text[s0] if text[s0] in "\"'" else ""
                self.res.edits.append(TextEdit(vs.path, s0, e0, f"{quote}{row['rename']}{quote}", self.rule))
                self.finding("MIG-HELM-003", "info", vs.path, prm.line, f"parameter {prm.name} -> {row['rename']}")
            else:
                s0, e0 = prm.item_span
                self.res.edits.append(TextEdit(vs.path, s0, e0, "", self.rule))
                self.finding("MIG-HELM-003", "info", vs.path, prm.line,
                             f"parameter {prm.name} removed ({row.get('why', 'replaced by ' + row.get('rename', ''))})")

    def tags_removed(self, path: str, line: int, keys: list[str]) -> None:
        """settings.aws.tags goes away in cleanup: say so unless every EC2NodeClass already carries them."""
        classes = [m for m in self.manifests if m.kind == "EC2NodeClass"]
        missing = [m for m in classes if not all(k in ((m.obj.get("spec") or {}).get("tags") or {}) for k in keys)]
        if classes and not missing:
            return
        where = ", ".join(f"{m.path}:{m.line}" for m in missing) or "no EC2NodeClass in this repository"
        self.finding("MIG-HELM-014", "warning", path, line,
                     f"global tags {', '.join(keys)} are removed from the chart values (v0.33 ignores them); "
                     f"not every EC2NodeClass carries them ({where})",
                     "add these tags to spec.tags of every EC2NodeClass that should keep them")

    def affinity(self, vs: ValuesSource) -> None:
        """The chart's affinity keeping the controller off Karpenter nodes gains the nodepool key."""
        facts = FACTS["values"]["affinity"].get(self.hop)
        if facts is None:
            return
        tree = vs.tree
        aff = tree.root.get(("affinity",))
        if aff is None:
            return
        if tree.syntax != "yaml":
            src = tree.text[aff.start:aff.end]
            if facts["old"] in src and facts["add"] not in src:
                self.finding("MIG-HELM-004", "warning", vs.path, hclsrc.line_of(tree.text, aff.key_start),
                             f"affinity: add a `{facts['add']} DoesNotExist` expression next to `{facts['old']}`",
                             "edit the yamlencode() affinity by hand (migrator edits affinity in YAML values only)")
            return
        text = tree.text
        for seq, where in _expression_lists(aff.value):
            keys = [x.get("key") for x in seq if isinstance(x, dict)]
            if facts["old"] not in keys or facts["add"] in keys:
                continue
            i = keys.index(facts["old"])
            # lines of that item, found from the key's own line in the text
            ls, le = _item_lines(text, tree, aff, seq, i)
            if ls is None:
                self.finding("MIG-HELM-004", "warning", vs.path, hclsrc.line_of(text, aff.key_start),
                             f"affinity: add a `{facts['add']} DoesNotExist` expression next to `{facts['old']}`",
                             "edit the affinity by hand")
                return
            item = text[ls:le].replace(facts["old"], facts["add"])
            self.res.edits.append(TextEdit(vs.path, le, le, item if item.endswith("\n") else item + "\n", self.rule))
            self.finding("MIG-HELM-003", "info", vs.path, hclsrc.line_of(text, ls),
                         f"affinity: added {facts['add']} DoesNotExist next to {facts['old']}")

    def withhold_values(self, ci: ChartInstall, edits: int, findings: int) -> None:
        """Values renamed for a chart version that cannot be moved (MIG-HELM-006) would reach the old chart, which
        reads the old names (a controller without its cluster name): none of this install's value edits is kept."""
        if not any(f.code == "MIG-HELM-006" for f in self.res.findings[findings:]):
            return
        values = self.res.edits[edits:]
        if not values:
            return
        del self.res.edits[edits:]
        self.res.findings[findings:] = [f for f in self.res.findings[findings:] if f.code != "MIG-HELM-003"]
        self.finding("MIG-HELM-036", "warning", ci.path, ci.line,
                     f"{ci.address}: {len(values)} change(s) of its chart values are not written, because its chart "
                     "version cannot be moved with them (MIG-HELM-006): the chart it runs today would read the new "
                     "names as unknown keys",
                     "move the chart version where it is defined, then run migrator again: the values move with it")

    # -- version and repository -----------------------------------------------------------------
    def version(self, ci: ChartInstall) -> None:
        target = self.targets.get(ci.chart)
        if target is None:
            return
        if ci.kind in ("flux", "argocd", "kustomize", "eksctl", "umbrella", "helmfile"):
            self.flux_version(ci, target)
            return
        if ci.vendored:                     # a chart folder of the repository: replaced whole, never patched
            self.finding("MIG-HELM-026", "warning", ci.path, ci.line,
                         f"{ci.address} installs the {ci.chart} chart from the folder {ci.vendored} "
                         f"({ci.evaluated_version or 'version unknown'}): its files are the chart, so migrator does not "
                         "edit them",
                         f"replace the folder with the chart at {target}: rm -r {ci.vendored} && helm pull "
                         f"oci://public.ecr.aws/karpenter/{ci.chart} --version {target} --untar --untardir "
                         f"{posixpath.dirname(ci.vendored) or '.'}"
                         + (f" && mv {posixpath.join(posixpath.dirname(ci.vendored), ci.chart)} {ci.vendored}"
                            if posixpath.basename(ci.vendored) != ci.chart else "")
                         + ", then run migrator again" + _own_settings(ci))
            return
        if ci.kind == "terragrunt":         # the unit's input (or the shared .hcl it reads) that sets the version
            if ci.version is None:
                self.finding("MIG-HELM-006", "error", ci.path, ci.line,
                             f"{ci.address}: the chart version ({ci.evaluated_version or 'not set'}) is not written as "
                             "a literal migrator can follow (a dependency output, a function, or not set)",
                             f"set the unit's chart version input to {format_version(target, 'v')}")
                return
            if ci.unit.module_dir and ci.version_path.startswith(ci.unit.module_dir + "/"):
                # the module's own default: other units may install their charts with it, so it is not edited here
                from ...inventory.terragrunt import _input_of
                name = _input_of(ci.block, "version")
                self.finding("MIG-HELM-034", "warning", ci.path, ci.line,
                             f"{ci.address}: the chart version {ci.evaluated_version} is the default of the module's "
                             f"variable {name} ({ci.version_path}), which other units may use for their own charts",
                             f'set {name} = "{format_version(target, ci.evaluated_version or "")}" in the unit\'s inputs')
                return
            self.bump(ci.version_path, ci.version.start, ci.version.end, str(ci.version.literal()), target,
                      f"the input of {ci.address} in {ci.version_path}")
            return
        if ci.kind == "helm":               # a script: its --version literal, or the VAR=value it expands
            if ci.span is None:
                self.finding("MIG-HELM-022", "warning", ci.path, ci.line,
                             f"the script installs {ci.chart} with helm at "
                             f"{ci.evaluated_version or 'no pinned version'}, not written where migrator can change it",
                             f"pass --version {format_version(target, 'v')} in that command")
                return
            s, e = ci.span
            self.bump(ci.path, s, e, self.repo.text(ci.path)[s:e], target, f"--version in {ci.path}:{ci.line}")
            return
        if ci.attrs.get("module", {}).get("own_policy"):
            mv = ci.block.attr("version")
            self.finding("MIG-HELM-033", "warning", ci.path, ci.line,
                         f"{ci.address} ({ci.attrs['module']['name']} {mv.literal() if mv is not None else 'unpinned'}) "
                         f"makes the controller's IAM policy itself, for the chart of its own release: migrator does "
                         f"not read it, and the controller moves to {target}",
                         f"check that this module version's policy grants what Karpenter {target} needs (the official "
                         "policy of that release), or move the module to the release made for it")
        if ci.version is None and ci.attrs.get("module") and ci.evaluated_version:
            self.module_version_input(ci, target)       # the module's default: pinned with its version input
            return
        if ci.version is None:
            self.finding("MIG-HELM-005", "warning", ci.path, ci.line,
                         f"{ci.address} has no version: Helm installs the newest chart, which has no v1alpha5 support",
                         f'pin version = "{format_version(target, "v0")}" until the migration is done')
            return
        sites, why = definition_sites(self.repo, ci.path, ci.version,
                                      via=set(ci.shared.calls) if ci.shared is not None else None)
        if not sites and ci.generic:        # one item of an add-ons list: its own chart_version entry
            from ...inventory import item_entry
            from ...resolve import Site
            found = item_entry(self.repo, ci, "version")
            if found is not None and found[1].kind == "string" and found[1].value is not None:
                sites = [Site(found[0], found[1], f"the {ci.chart} item of the add-ons list {ci.block.address} installs")]
            else:
                why = "it is one item of the add-ons list the release iterates over, not written as a literal"
        if self.owns is not None:
            sites = [x for x in sites if self.owns(x.path)] or sites
        if not sites:
            self.finding("MIG-HELM-006", "error", ci.path, hclsrc.line_of(self.repo.text(ci.path), ci.version.start),
                         f"{ci.address}: the chart version ({ci.version.source}) cannot be changed here: {why}",
                         f"set it to {format_version(target, 'v')} where it is defined")
            return
        if len(sites) > 1:
            self.finding("MIG-HELM-007", "info", ci.path, ci.line,
                         f"{ci.address}: the chart version is set in {len(sites)} places; each is updated: "
                         + ", ".join(s.how for s in sites))
        for site in sites:
            self.bump(site.path, site.expr.start, site.expr.end, site.value, target, site.how)

    def image(self, ci: ChartInstall) -> None:
        """A controller image pinned in the values follows the chart version this run leaves (rules/images.py)."""
        from .. import images
        version = self.targets.get("karpenter") if self.bumps else chart_version(self.repo, self.charts, self.owns)
        if not version or not parse_version(version.lstrip("v")):
            return
        rows, said = images.check(ci, version)
        self.res.findings += said
        for vs in ci.values if rows else []:
            self.values(ci, vs, rows)

    def blueprints_version(self, ci: ChartInstall) -> None:
        """eks-blueprints-addons: the version lives at karpenter = { chart_version = ... } (else the add-on's
        default, which only the user can move by adding the key)."""
        target = self.targets.get(ci.chart)
        if target is None:
            return
        from ...modmajor import FACTS as MODULE
        from ...inventory.blueprints import stuck, unread_values
        last, facts = stuck(self.repo, ci), MODULE[ci.family or "blueprints_addons"]
        if last and parse_version(target)[:2] > tuple(int(x) for x in last.split(".")):
            unread = unread_values(self.repo, ci)      # it may give them: said, not a stop
            self.finding("MIG-HELM-027", "warning" if unread else "error", ci.path, ci.line,
                         f"{ci.address} ({facts['name']}) installs Karpenter with built-in values no chart after "
                         f"{last} reads (settings.aws.*): it cannot install {target}"
                         + (f" unless its {facts['input']}.{facts['value_keys'][0]} gives {facts['unstuck_by']}"
                            if facts.get("unstuck_by") else "")
                         + (f" ({unread} is an expression migrator does not read: nothing is written)" if unread
                            else ""),
                         f"{facts['move_out']}, then run migrator again")
            return
        if ci.version is not None:
            self.version(ci)
            return
        from ...path import blueprints_default
        default = blueprints_default(ci)
        new = format_version(target, "v")     # the add-ons install from OCI, where tags below 0.35 carry a v
        text = self.repo.text(ci.path)
        nl = self.repo.files[ci.path].newline
        b = ci.block
        from ...modmajor import FACTS as MODULE
        facts = MODULE[ci.family or "blueprints_addons"]
        key, value = facts["chart_version_key"], hclsrc.quote(new)
        cfg = b.attributes.get(facts["input"])
        ind = indent_at(text, next(iter(b.attributes.values())).start) if b.attributes else "  "
        if cfg is not None and cfg.expr.kind == "object":
            ents = cfg.expr.entries
            if ents and line_start(text, ents[0].start) > cfg.expr.start:       # one entry per line
                pos = line_start(text, ents[0].start)
                ins = f"{indent_at(text, ents[0].start)}{key} = {value}{nl}"
            elif ents:                                                           # { a = 1, b = 2 } on one line
                pos, ins = ents[0].start, f"{key} = {value}, "
            else:
                pos = cfg.expr.start + 1
                ins = f"{nl}{ind}  {key} = {value}{nl}{ind}"
            self.res.edits.append(TextEdit(ci.path, pos, pos, ins, self.rule))
        elif cfg is None:
            pos = line_start(text, b.body_end)
            self.res.edits.append(TextEdit(ci.path, pos, pos, f"{nl}{ind}{facts['input']} = {{{nl}{ind}  {key} = "
                                           f"{value}{nl}{ind}}}{nl}", self.rule))
        else:
            self.finding("MIG-HELM-019", "warning", ci.path, ci.line,
                         f"{ci.address} ({facts['name']}) installs its default Karpenter chart "
                         f"({default or 'unknown for this add-on version'}) and its karpenter input is an expression",
                         f'add chart_version = "{new}" to its karpenter input, then run migrator again')
            return
        self.finding("MIG-HELM-003", "info", ci.path, ci.line,
                     f"{ci.address} ({facts['name']}): {facts['input']}.{key} = {new} written (it installed "
                     f"the add-on's default, {default or 'unknown for this add-on version'})")

    def bump(self, path: str, start: int, end: int, current: str, target: str, how: str) -> None:
        if (path, start) in self._sites_done:
            return
        self._sites_done.add((path, start))
        cur = parse_version(current)
        if cur is None:
            self.finding("MIG-HELM-008", "warning", path, hclsrc.line_of(self.repo.text(path), start),
                         f"chart version {current!r} ({how}) is not a plain version", "set it by hand")
            return
        if cur >= parse_version(target):
            return
        below = FACTS["hops"].get(self.hop, {}).get("pass_through")
        if below and cur < parse_version(below["below"]):
            self.res.pass_through = format_version(below["version"], current)
            self.finding("MIG-HELM-009", "warning", path, hclsrc.line_of(self.repo.text(path), start),
                         f"chart {current} is older than {below['below']}: upgrade to {self.res.pass_through} first "
                         "and let it run before moving to v0.32 (" + "; ".join(below["notes"]) + ")",
                         f"apply {self.res.pass_through} on its own, then this plan")
        new = format_version(target, current)
        quoted = self.repo.text(path)[start:end]
        text = hclsrc.quote(new) if quoted.startswith('"') else quoted.replace(current, new)
        self.res.edits.append(TextEdit(path, start, end, text, self.rule))
        self.finding("MIG-HELM-003", "info", path, hclsrc.line_of(self.repo.text(path), start),
                     f"chart version {current} -> {new} ({how})")

    def flux_version(self, ci: ChartInstall, target: str) -> None:
        """The chart version of a Flux HelmRelease (spec.chart.spec.version), an Argo CD source (targetRevision) or
        a kustomization's helmCharts entry (version)."""
        path, doc = ci.path, ci.doc
        if ci.ref is not None:              # Flux chartRef: the OCIRepository's ref.tag (or ref.semver)
            path, doc, oci = ci.ref
            spec = oci["spec"].get("ref") if isinstance(oci["spec"].get("ref"), dict) else {}
            key = "tag" if "tag" in spec or "semver" not in spec else "semver"
            where = f"spec.ref.{key} of OCIRepository {(oci.get('metadata') or {}).get('name')}"
        else:
            spec, key = (ci.obj["spec"]["chart"]["spec"], "version") if ci.kind == "flux" else \
                (ci.source_map, "version" if ci.kind in ("kustomize", "eksctl", "umbrella", "helmfile")
                 else "targetRevision")
            where = "spec.chart.spec.version" if ci.kind == "flux" else ".".join(map(str, ci.source + (key,)))
        if key not in spec:
            self.finding("MIG-HELM-005", "warning", path, ci.line,
                         f"{ci.address} has no chart version: the newest chart gets installed",
                         f"pin {where} to {format_version(target, 'v')} until the migration is done")
            return
        if ci.sites:                        # helmfile: `{{ .Values.x }}`, set by each environment
            for site_path, s0, e0, value, how in ci.sites:
                self.bump(site_path, s0, e0, value, target, f"{how}, the version of {ci.address}")
            return
        text = self.repo.text(path)
        span = _scalar_span(text, doc, spec, key)
        if span is None:
            return
        s, e = span
        raw = text[s:e]
        current = raw.strip("\"'")
        cur = parse_version(current)
        if cur is None and version_range(current) and admits(current, target):
            self.finding("MIG-HELM-030", "info", path, hclsrc.line_of(text, s),
                         f"{where} of {ci.address} is the range {raw}, which admits {target}: it is kept (the "
                         f"installer moves to the newest release it admits on its next reconcile)",
                         f"check that the newest release {raw} admits is the one this step wants; pin {target} to "
                         "control when the controller moves")
            return
        moved = shift_range(current, target) if cur is None else None
        if moved is not None and (path, s) not in self._sites_done:     # the same range, at the target's minor
            self._sites_done.add((path, s))
            self.res.edits.append(TextEdit(path, s, e, raw.replace(current, moved), self.rule))
            self.finding("MIG-HELM-003", "info", path, hclsrc.line_of(text, s),
                         f"chart version range {current} -> {moved} ({where} of {ci.address}; it admits {target})")
            return
        if cur is None:
            floor = range_floor(current)
            self.finding("MIG-HELM-008", "warning", path, hclsrc.line_of(text, s),
                         f"chart version {raw} is " + (f"a range (from {floor}) that does not admit {target}"
                                                       if floor else "not a version"),
                         f"pin it to {target} (or a range that admits it)")
            return
        self.bump(path, s, e, current, target, f"{where} of {ci.address}")

    def module_version_input(self, ci: ChartInstall, target: str) -> None:
        """A module that installs the chart at its own default (knowledge/helm_modules.yaml `default_chart`): the
        version input is added under the call's `version` (or `source`) line."""
        cur = parse_version(ci.evaluated_version.lstrip("v")) or (0, 0, 0)
        if cur >= parse_version(target):
            return
        b, row = ci.block, ci.attrs["module"]
        text = self.repo.text(ci.path)
        anchor = b.attributes.get("version") or b.attributes.get("source")
        if anchor is None:
            return
        pos = line_end(text, anchor.end)
        new = format_version(target, ci.evaluated_version)
        line = f"{indent_at(text, anchor.start)}{row['version']} = {hclsrc.quote(new)}\n"
        if row.get("crd_version") and _installs_crds(ci) and row["crd_version"] not in b.attributes:
            line += f"{indent_at(text, anchor.start)}{row['crd_version']} = {hclsrc.quote(new)}\n"
        self.res.edits.append(TextEdit(ci.path, pos, pos, to_newline(line, self.repo.files[ci.path].newline), self.rule))
        self.finding("MIG-HELM-003", "info", ci.path, hclsrc.line_of(text, anchor.start),
                     f"chart version {ci.evaluated_version} (the default of {row['name']} at this module version) -> "
                     f"{new}: {row['version']} = \"{new}\" added to {ci.address}")

    def repository(self, ci: ChartInstall) -> None:
        frozen = FACTS["chart"]["frozen_repositories"]
        if ci.kind == "helmfile":
            if ci.namespace:
                self.res.namespaces.add(ci.namespace)
        elif ci.kind == "terragrunt":
            ns, url = ci.attrs.get("namespace"), ci.attrs.get("repository")
            if ns is not None and isinstance(ns.value, str) and ns.value:
                self.res.namespaces.add(ns.value)
            if url is not None and url.literal and url.value in frozen:
                self.res.edits.append(TextEdit(url.path, url.expr.start, url.expr.end,
                                               hclsrc.quote(FACTS["chart"]["repository"]), self.rule))
                self.finding("MIG-HELM-010", "info", url.path, hclsrc.line_of(self.repo.text(url.path), url.expr.start),
                             f"repository {url.value} is frozen (no releases after v0.16.3) -> "
                             f"{FACTS['chart']['repository']}")
        elif ci.kind in ("helm", "eksctl", "umbrella"):
            if ci.namespace:
                self.res.namespaces.add(ci.namespace)
            url = str(ci.source_map.get("repository", "")) if ci.kind == "umbrella" else ""
            if url.rstrip("/") in [u.rstrip("/") for u in frozen]:
                self.finding("MIG-HELM-010", "warning", ci.path, ci.line,
                             f"{ci.address} installs from the frozen {url} (no releases after v0.16.3)",
                             f"use repository: {FACTS['chart']['repository']}")
        elif ci.kind == "terraform":
            repo = ci.block.attr("repository")
            if repo is not None and repo.literal() in frozen:
                self.res.edits.append(TextEdit(ci.path, repo.start, repo.end,
                                               hclsrc.quote(FACTS["chart"]["repository"]), self.rule))
                self.finding("MIG-HELM-010", "info", ci.path, hclsrc.line_of(self.repo.text(ci.path), repo.start),
                             f"repository {repo.literal()} is frozen (no releases after v0.16.3) -> "
                             f"{FACTS['chart']['repository']}")
            ns = ci.block.attr("namespace")
            if ns is not None and ns.literal():
                self.res.namespaces.add(str(ns.literal()))
        elif ci.kind == "kustomize":
            item = ci.source_map
            ns = item.get("namespace") or ci.obj.get("namespace")
            if ns:
                self.res.namespaces.add(str(ns))
            url = str(item.get("repo", ""))
            if url.rstrip("/") in [u.rstrip("/") for u in FACTS["chart"]["frozen_repositories"]]:
                self.finding("MIG-HELM-010", "warning", ci.path, ci.line,
                             f"{ci.address} installs from the frozen {url} (no releases after v0.16.3)",
                             f"use repo: {FACTS['chart']['repository']}")
        elif ci.kind == "argocd":
            dest = ci.obj
            for k in ci.source[:-1] if ci.source[-1] == "source" else ci.source[:-2]:
                dest = dest[k]
            ns = ((dest.get("destination") or {}) if isinstance(dest, dict) else {}).get("namespace")
            if ns:
                self.res.namespaces.add(str(ns))
            url = str(ci.source_map.get("repoURL", ""))
            if url.rstrip("/") in [u.rstrip("/") for u in FACTS["chart"]["frozen_repositories"]]:
                self.finding("MIG-HELM-010", "warning", ci.path, ci.line,
                             f"{ci.address} installs from the frozen {url} (no releases after v0.16.3)",
                             "use repoURL: public.ecr.aws/karpenter with an OCI Helm repository in Argo CD "
                             "(enableOCI: \"true\" in the repository secret)")
        else:
            ns = (ci.obj.get("metadata") or {}).get("namespace") or (ci.obj.get("spec") or {}).get("targetNamespace")
            if ns:
                self.res.namespaces.add(str(ns))
            for p, sf in self.repo.files.items():
                if not p.endswith((".yaml", ".yml")) or "charts.karpenter.sh" not in sf.text:
                    continue
                line = sf.text[: sf.text.index("charts.karpenter.sh")].count("\n") + 1
                self.finding("MIG-HELM-010", "warning", p, line,
                             "a HelmRepository points at the frozen https://charts.karpenter.sh",
                             f"use type: oci and url: {FACTS['chart']['repository']}")

    # -- CRDs --------------------------------------------------------------------------------------
    def crds(self, ci: ChartInstall) -> None:
        crd = [c for c in self.charts if c.chart == "karpenter-crd" and c.kind == ci.kind]
        if ci.kind == "umbrella":
            self.res.umbrellas.append((posixpath.dirname(ci.path) or ".", str(ci.obj.get("name") or "")))
            for c in crd:                   # the CRD chart may ride in another umbrella (one chart of every CRD)
                self.res.crd_umbrellas.append((posixpath.dirname(c.path) or ".", str(c.obj.get("name") or "")))
            from ...inventory.kustomizations import argo_paths
            apps = argo_paths(self.repo)    # an Application whose git source's path is the umbrella's folder syncs it
            for c in [ci, *crd]:
                app = apps.get(posixpath.dirname(c.path) or ".")
                if app is not None:
                    self.res.umbrella_apps[c.chart] = app[0]
            if not crd:
                self.finding("MIG-HELM-025", "warning", ci.path, ci.line,
                             f"the umbrella chart {ci.obj.get('name')} carries the karpenter chart and no karpenter-crd "
                             "dependency: Helm never upgrades CRDs from a chart's crds/ folder",
                             "add karpenter-crd as a dependency at the same version (or install it with helm before "
                             "the umbrella: the runbook's CRD step)")
        elif ci.kind == "eksctl":           # installed once at creation: later versions go in with helm
            self.finding("MIG-HELM-024", "info", ci.path, ci.line,
                         "eksctl installed the karpenter chart when it created the cluster and never upgrades it: the "
                         "runbook's helm steps install the CRD chart and the controller; karpenter.version is kept in "
                         "step so the file says what runs")
        elif ci.kind == "helm":             # a script: the runbook's helm steps install the CRD chart first
            if not crd:
                self.finding("MIG-HELM-023", "warning", ci.path, ci.line,
                             "the script installs the karpenter chart with helm and no karpenter-crd chart: "
                             "Helm never upgrades CRDs from a chart's crds/ folder",
                             "add `helm upgrade --install karpenter-crd oci://public.ecr.aws/karpenter/karpenter-crd "
                             f"--version {format_version(self.targets['karpenter'], 'v')}` before it (the runbook's CRD "
                             "step runs it)")
        elif ci.kind == "terraform" and (ci.attrs.get("module") or any(c.attrs.get("module") for c in crd)):
            if ci.attrs.get("module") and _installs_crds(ci):
                return                      # the module installs the CRD chart itself (its version moved with it)
            if not crd:                     # a Helm-release module installs the controller: say what to add
                self.finding("MIG-HELM-032", "warning", ci.path, ci.line,
                             f"{ci.address} ({ci.attrs['module']['name']}) installs the karpenter chart and nothing "
                             "installs karpenter-crd: Helm never upgrades CRDs from a chart's crds/ folder",
                             "add a second call of the module with the karpenter-crd chart at "
                             f"{format_version(self.targets['karpenter'], 'v')} and make this one depend on it (the "
                             "runbook's CRD step installs them with helm until then)")
        elif ci.kind == "terraform" and ci.shared is not None:
            self.shared_module_crds(ci, crd)
        elif ci.kind == "terraform":
            if crd:
                self.depends_on(ci, crd[0].block.labels[1])
                return
            self.add_terraform_crd_release(ci)
        elif ci.kind == "helmfile":
            if not crd:
                self.finding("MIG-HELM-029", "warning", ci.path, ci.line,
                             f"{ci.address} installs the karpenter chart and no release of the helmfile installs "
                             "karpenter-crd: Helm never upgrades CRDs from a chart's crds/ folder",
                             "add a karpenter-crd release (chart oci://public.ecr.aws/karpenter/karpenter-crd, version "
                             f"{format_version(self.targets['karpenter'], 'v')}) and `needs` it from this release (the "
                             "runbook's CRD step installs them with helm until then)")
        elif ci.kind == "terragrunt":       # another unit of the same module installs the CRD chart, or none does
            if not crd:
                self.finding("MIG-HELM-028", "warning", ci.path, ci.line,
                             f"{ci.address} installs the karpenter chart and no unit installs karpenter-crd: Helm "
                             "never upgrades CRDs from a chart's crds/ folder",
                             f"add a unit beside it that calls the same module with the karpenter-crd chart at "
                             f"{format_version(self.targets['karpenter'], 'v')}, and a `dependency` on it in this unit "
                             "(the runbook's CRD step installs them with helm until then)")
        elif ci.kind == "argocd":
            if crd:
                return
            self.add_argo_crd_app(ci)
        elif ci.kind == "kustomize":
            if crd or ci.source_map.get("includeCRDs") is True:
                return           # includeCRDs renders the chart's crds/ at every build: they move with the chart
            self.add_kustomize_crd_chart(ci)
        else:
            if crd:
                return
            self.add_flux_crd_release(ci)

    def depends_on(self, ci: ChartInstall, crd_label: str) -> None:
        b = ci.block
        text = self.repo.text(ci.path)
        ref = f"helm_release.{crd_label}"
        dep = b.attr("depends_on")
        if dep is not None and dep.kind == "tuple":
            if any(i.source == ref for i in dep.items):
                return
            if dep.items:
                last = dep.items[-1]
                if "\n" in dep.source:
                    ins = f",\n{indent_at(text, last.start)}{ref}" if not text[last.end:dep.end].lstrip().startswith(",") \
                        else f"\n{indent_at(text, last.start)}{ref},"
                    pos = last.end if not ins.endswith(",") else text.index(",", last.end) + 1
                else:
                    ins, pos = f", {ref}", last.end
            else:
                ins, pos = ref, dep.start + 1
            self.res.edits.append(TextEdit(ci.path, pos, pos, ins, self.rule))
        elif dep is None:
            ind = indent_at(text, next(iter(b.attributes.values())).start) if b.attributes else "  "
            pos = line_start(text, b.body_end)
            nl = self.repo.files[ci.path].newline
            self.res.edits.append(TextEdit(ci.path, pos, pos, to_newline(f"\n{ind}depends_on = [{ref}]\n", nl), self.rule))
        else:
            self.finding("MIG-HELM-011", "warning", ci.path, hclsrc.line_of(text, dep.start),
                         f"{ci.address}.depends_on is not a list literal", f"add {ref} to it by hand")
            return
        self.finding("MIG-HELM-012", "info", ci.path, ci.line, f"{ci.address} now depends on {ref} (CRDs first)")

    def shared_module_crds(self, ci: ChartInstall, crd: list) -> None:
        """The karpenter chart installed by a module other installs call too (`chart = var.chart`): a karpenter-crd
        release or a depends_on inside it would reach every add-on it installs, so nothing is written there; the
        change belongs beside the Karpenter call, said with the place (issue 55)."""
        sm = ci.shared
        calls = ", ".join(f"{a} ({sm.call_paths.get(a)})" for a in sm.calls) or "the call that installs karpenter"
        if any(c.shared is not None and c.shared.dir == sm.dir for c in crd):
            self.finding("MIG-HELM-035", "info", ci.path, ci.line,
                         f"{ci.address} is a module shared by {len(sm.calls) + len(sm.others)} calls; another call of it "
                         "installs karpenter-crd: nothing is added inside the module",
                         f"make {calls} depend on the karpenter-crd call, so the CRDs move first")
            return
        off = [a for a in sm.others if _chart_name(sm.charts.get(a, "")) == "karpenter-crd"]
        self.finding("MIG-HELM-035", "warning", ci.path, ci.line,
                     f"{ci.address} installs the karpenter chart for {calls}, but the module in {sm.dir} installs other "
                     f"charts too ({', '.join(sm.others[:4])}{', ...' if len(sm.others) > 4 else ''}): a karpenter-crd "
                     "release written inside it would reach every one of them, so migrator writes none; Helm never "
                     "upgrades CRDs from a chart's crds/ folder",
                     (f"turn on {', '.join(off)} (it installs karpenter-crd through this module, and is switched "
                      "off) or " if off else "") +
                     f"add a second call of ./{sm.dir} beside {sm.calls[0] if sm.calls else 'the karpenter call'} "
                     f"with {sm.chart_input} = \"karpenter-crd\" at version "
                     f"{format_version(self.targets['karpenter'], 'v')}, and make the karpenter call depend on it "
                     "(the runbook's CRD step installs them with helm until then)")

    def add_terraform_crd_release(self, ci: ChartInstall) -> None:
        b = ci.block
        text = self.repo.text(ci.path)
        label = "karpenter_crd" if b.labels[1] == "karpenter" else f"{b.labels[1]}_crd"
        attrs = []
        for name in ("count", "for_each", "provider", "namespace", "create_namespace", "repository",
                     "repository_username", "repository_password", "version", "timeout"):
            a = b.attributes.get(name)
            if a is None:
                continue
            lit = a.expr.literal()
            if name == "version" and isinstance(lit, str):
                # the planned version, never the pre-edit literal (a literal is bumped in this same run) unless the
                # controller is already newer: CRDs never move below their controller
                target = self.targets.get("karpenter-crd") or lit
                newer = parse_version(lit) and parse_version(target) and parse_version(lit) > parse_version(target)
                attrs.append((name, hclsrc.quote(lit if newer else format_version(target, lit))))
            elif name == "version":
                # an expression (try(var.x, "1.0"), a conditional): copied with this run's bump inside it
                src, s0 = a.expr.source, a.expr.start
                for e in sorted((e for e in self.res.edits if isinstance(e, TextEdit) and e.path == ci.path
                                 and s0 <= e.start and e.end <= a.expr.end), key=lambda e: e.start, reverse=True):
                    src = src[:e.start - s0] + e.text + src[e.end - s0:]
                attrs.append((name, src))
            elif name == "repository" and lit in FACTS["chart"]["frozen_repositories"]:
                attrs.append((name, hclsrc.quote(FACTS["chart"]["repository"])))
            else:
                attrs.append((name, a.expr.source))
        rel = b.attr("name")
        self.res.crd_release_name = f"{rel.literal()}-crd" if rel is not None and rel.literal() else FACTS["chart"]["crds"]
        attrs.insert(0, ("name", hclsrc.quote(self.res.crd_release_name)))
        attrs.insert(1, ("chart", hclsrc.quote(FACTS["chart"]["crds"])))
        ind = indent_at(text, next(iter(b.attributes.values())).start) if b.attributes else "  "
        meta = [(n, v) for n, v in attrs if n in ("count", "for_each")]      # the release's switch, first as
        attrs = [(n, v) for n, v in attrs if n not in ("count", "for_each")]  # Terraform's style has it
        body = _render("helm_release_crd.tf.j2", label=label, meta=meta, attrs=_aligned(attrs), indent=ind)
        nl = self.repo.files[ci.path].newline
        pos = line_start(text, b.start)
        if comments_above(text, pos) > 0:       # the main release's comment stays on it (a file's header stays first)
            pos = comments_above(text, pos)
        self.res.edits.append(TextEdit(ci.path, pos, pos, to_newline(body.rstrip("\n") + "\n\n", nl), self.rule, order=-1))
        self.res.new_crd_release = True
        self.res.crd_releases.append(f"helm_release.{label}")
        self.res.crd_tf.append((posixpath.dirname(ci.path), f"helm_release.{label}"))
        self.res.chart_tf.append((posixpath.dirname(ci.path), f"helm_release.{label}"))
        self.finding("MIG-HELM-013", "info", ci.path, ci.line,
                     f"no karpenter-crd release: helm_release.{label} is added so the CRDs get installed "
                     "and upgraded (Helm never upgrades CRDs from the main chart's crds/ folder)")
        self.depends_on(ci, label)

    def add_flux_crd_release(self, ci: ChartInstall) -> None:
        obj = ci.obj
        spec = obj["spec"]
        if ci.ref is not None:              # chartRef: the CRD chart needs an OCIRepository of its own
            self.finding("MIG-HELM-031", "warning", ci.path, ci.line,
                         f"{ci.address} installs the karpenter chart from an OCIRepository (spec.chartRef) and no "
                         "release installs karpenter-crd: Helm never upgrades CRDs from a chart's crds/ folder",
                         "add an OCIRepository of oci://public.ecr.aws/karpenter/karpenter-crd (ref.tag "
                         f"{format_version(self.targets['karpenter'], 'v')}) and a HelmRelease with a chartRef to it, "
                         "and make this release dependsOn it (the runbook's CRD step installs them with helm until then)")
            return
        cs = spec["chart"]["spec"]
        current = str(cs.get("version", "v"))
        target = self.targets.get("karpenter-crd") or current
        newer = parse_version(current) and parse_version(target) and parse_version(current) > parse_version(target)
        version = current if newer else format_version(target, current)
        if "interval" not in spec:
            self.finding("MIG-HELM-015", "warning", ci.path, ci.line,
                         f"{ci.address} has no spec.interval to copy into a karpenter-crd HelmRelease; none is added",
                         "add a HelmRelease for chart karpenter-crd (same sourceRef and version) and make the "
                         "controller's release dependsOn it")
            return
        name = f"{obj['metadata']['name']}-crd"
        style = yamlsrc.detect_style(self.repo.text(ci.path))
        body = _render("flux_helmrelease_crd.yaml.j2", api=obj["apiVersion"], name=name,
                       namespace=(obj.get("metadata") or {}).get("namespace"), interval=spec["interval"],
                       chart=FACTS["chart"]["crds"], version=version, source=dict(cs.get("sourceRef") or {}),
                       ind=" " * style.indent)
        d, base = posixpath.split(ci.path)
        stem, ext = posixpath.splitext(base)
        new_path = posixpath.join(d, f"{stem}-crd{ext}") if d else f"{stem}-crd{ext}"
        if new_path in self.repo.files:
            return
        self.res.edits.append(NewFile(new_path, to_newline(body, self.repo.files[ci.path].newline), self.rule))
        self.res.new_crd_release = True
        self.res.crd_releases.append(f"HelmRelease/{name}")
        self.finding("MIG-HELM-013", "info", ci.path, ci.line,
                     f"no karpenter-crd release: {new_path} adds HelmRelease {name} so the CRDs get installed")
        _kustomize_add(self, ci.path, new_path)
        text = self.repo.text(ci.path)
        if "dependsOn" in spec:
            return
        kl, _ = spec.lc.key("chart")
        lines = ci.doc.text.splitlines(keepends=True)
        pos = ci.doc.start + sum(len(x) for x in lines[:kl])
        ind = indent_at(text, pos + len(lines[kl]) - len(lines[kl].lstrip()))
        seq = " " * style.indent if style.indent_sequences else ""
        ins = f"{ind}dependsOn:\n{ind}{seq}- name: {name}\n"
        self.res.edits.append(TextEdit(ci.path, pos, pos, to_newline(ins, self.repo.files[ci.path].newline), self.rule))


    def add_kustomize_crd_chart(self, ci: ChartInstall) -> None:
        """A karpenter-crd entry before the controller's in the kustomization's helmCharts, from the same repo."""
        item = ci.source_map
        items = ci.obj["helmCharts"]
        line, col = items.lc.item(ci.source[1])
        new = CommentedMap([("name", FACTS["chart"]["crds"])])
        for k in ("repo", "version", "releaseName", "namespace"):
            if k == "version" and "version" in item:
                new[k] = format_version(self.targets["karpenter-crd"], str(item["version"]))
            elif k == "releaseName" and k in item:
                new[k] = f"{item[k]}-crd"
            elif k in item:
                new[k] = item[k]
        style = yamlsrc.detect_style(self.repo.text(ci.path))
        # ruamel gives the column of the item's content; its dash is two to the left
        body = yamlsrc.Emitter(style).emit(new, base_indent=col).text
        body = " " * (col - 2) + "- " + body[col:]
        pos = ci.doc.start + sum(len(x) for x in ci.doc.text.splitlines(keepends=True)[:line])
        self.res.edits.append(TextEdit(ci.path, pos, pos, to_newline(body, self.repo.files[ci.path].newline),
                                       self.rule))
        self.res.new_crd_release = True
        self.res.crd_releases.append(f"helmCharts/{new.get('releaseName', new['name'])}")
        self.finding("MIG-HELM-013", "info", ci.path, ci.line,
                     f"no karpenter-crd chart and no includeCRDs: a helmCharts entry for {FACTS['chart']['crds']} "
                     "is added before the controller's so the CRDs get installed and upgraded")

    def add_argo_crd_app(self, ci: ChartInstall) -> None:
        """A karpenter-crd Application next to the controller's, synced in an earlier wave, from the same place."""
        obj = ci.obj
        if obj.get("kind") != "Application":
            self.finding("MIG-HELM-017", "warning", ci.path, ci.line,
                         f"{ci.address} has no karpenter-crd counterpart; migrator adds one only for Applications",
                         "add a karpenter-crd source or ApplicationSet (same repoURL, targetRevision of the target, "
                         "synced before the controller) by hand")
            return
        src = ci.source_map
        meta = obj.get("metadata") or {}
        ann = dict(meta.get("annotations") or {})
        wave = ann.get(FACTS["argocd"]["sync_wave"])
        try:
            crd_wave = str(int(str(wave)) - 1) if wave is not None else "-1"
        except ValueError:
            crd_wave = "-1"
        new_meta = CommentedMap()
        new_meta["name"] = f"{meta.get('name')}-crd"
        if meta.get("namespace"):
            new_meta["namespace"] = meta["namespace"]
        new_meta["annotations"] = CommentedMap([(FACTS["argocd"]["sync_wave"], crd_wave)])
        version = format_version(self.targets["karpenter-crd"], str(src.get("targetRevision", "v")))
        url = str(src.get("repoURL") or "")
        if not src.get("chart") and url.startswith("oci://"):    # Argo CD 3 OCI source: the URL names the chart
            new_src = CommentedMap([("repoURL", url.rstrip("/").rsplit("/", 1)[0] + "/" + FACTS["chart"]["crds"]),
                                    ("targetRevision", version)])
        else:
            new_src = CommentedMap([("repoURL", src.get("repoURL")), ("chart", FACTS["chart"]["crds"]),
                                    ("targetRevision", version)])
        spec = CommentedMap()
        for k, v in (obj.get("spec") or {}).items():
            if k in ("source", "sources"):
                spec["source"] = new_src
            elif k == "syncPolicy" and isinstance(v, dict) and isinstance(v.get("automated"), dict):
                # never prune CRDs automatically: deleting a CRD deletes every object of that kind and its nodes
                policy = CommentedMap(v)
                policy["automated"] = CommentedMap((a, False if a == "prune" else b) for a, b in v["automated"].items())
                spec[k] = policy
            elif k != "ignoreDifferences":
                spec[k] = v
        new = CommentedMap([("apiVersion", obj["apiVersion"]), ("kind", "Application"), ("metadata", new_meta),
                            ("spec", spec)])
        style = yamlsrc.detect_style(self.repo.text(ci.path))
        body = yamlsrc.Emitter(style).emit(new).text
        d, base = posixpath.split(ci.path)
        ext = posixpath.splitext(base)[1]
        new_path = posixpath.join(d, f"{new_meta['name']}{ext}") if d else f"{new_meta['name']}{ext}"
        if new_path in self.repo.files:
            return
        self.res.edits.append(NewFile(new_path, to_newline(body, self.repo.files[ci.path].newline), self.rule))
        self.res.new_crd_release = True
        self.res.crd_releases.append(f"Application/{new_meta['name']}")
        self.finding("MIG-HELM-013", "info", ci.path, ci.line,
                     f"no karpenter-crd release: {new_path} adds Application {new_meta['name']} (sync wave "
                     f"{crd_wave}, before the controller) so the CRDs get installed and upgraded")
        _kustomize_add(self, ci.path, new_path)


# -- helpers ------------------------------------------------------------------------------------------
def _installs_crds(ci: ChartInstall) -> bool:
    """Does a Helm-release module install the CRD chart itself (knowledge/helm_modules.yaml `crds_off` not set)?"""
    row = ci.attrs.get("module") or {}
    if not row.get("crd_version"):
        return False
    return not any(ci.block.attr(k) is not None and ci.block.attr(k).literal() is v
                   for k, v in (row.get("crds_off") or {}).items())


def _tags_row() -> dict:
    return next(r for r in FACTS["values"][HOP] if r.get("to_nodeclass_tags"))


def _eat_blank(text: str, end: int) -> int:
    """Extend a removal over one blank line that follows it, so no double blank line is left."""
    nxt = text.find("\n", end)
    if nxt >= 0 and not text[end:nxt].strip():
        return nxt + 1
    return end


def _removal(text: str, start: int, end: int) -> tuple[int, int]:
    """Span removing a whole block or attribute line: its indentation and newline too, and one blank line next
    to it (the one after, or the one before when it was the last item of its block), so no blank line is
    doubled or left before a closing brace."""
    ls = text.rfind("\n", 0, start) + 1
    s0 = ls if not text[ls:start].strip() else start
    if end > 0 and text[end - 1] == "\n":
        e0 = end
    else:
        nxt = text.find("\n", end)
        if nxt < 0 or text[end:nxt].strip():
            return start, end
        e0 = nxt + 1
    after = _eat_blank(text, e0)
    if after != e0:
        return s0, after
    if text[e0:].lstrip().startswith("}") and s0 > 1 and text[s0 - 2:s0] == "\n\n":
        return s0 - 1, e0
    return s0, e0


def _render(template: str, **kw) -> str:
    return templating.render(template, **kw)


def _aligned(attrs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    w = max(len(n) for n, _ in attrs)
    return [(n.ljust(w), v) for n, v in attrs]


def _kustomize_add(rule: HelmRule, old_path: str, new_path: str) -> None:
    from ...placement import kustomization_insert
    e = kustomization_insert(rule.repo, old_path, new_path, rule.rule)
    if e is not None:
        rule.res.edits.append(e)


def _scalar_span(text: str, doc: yamlsrc.DocSpan, m, key: str) -> tuple[int, int] | None:
    try:
        vl, vc = m.lc.value(key)
    except Exception:  # noqa: BLE001
        return None
    lines = doc.text.splitlines(keepends=True)
    ls = doc.start + sum(len(x) for x in lines[:vl])
    s = ls + vc
    line = text[s:text.find("\n", s) if text.find("\n", s) >= 0 else len(text)].rstrip("\r")
    if line[:1] in "\"'":
        q = line[0]
        e = line.find(q, 1)
        return s, s + e + 1
    tok = re.match(r"[^\s#]+", line)
    return (s, s + tok.end()) if tok else None


def _expression_lists(node, path=()):
    """matchExpressions lists anywhere under an affinity value."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "matchExpressions" and isinstance(v, list):
                yield v, path + (k,)
            else:
                yield from _expression_lists(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _expression_lists(v, path + (i,))


def _item_lines(text: str, tree, aff, seq, i: int) -> tuple[int | None, int | None]:
    """File span of the lines of item i of a YAML block sequence."""
    if tree.offset is None or (getattr(seq, "fa", None) is not None and seq.fa.flow_style()):
        return None, None
    line, col = seq.lc.item(i)
    dash = tree.offset(line, col)
    ls = line_start(text, dash)
    if i + 1 < len(seq):
        nline, ncol = seq.lc.item(i + 1)
        return ls, line_start(text, tree.offset(nline, ncol))
    item_indent = dash - ls
    pos = text.find("\n", dash) + 1
    le = pos
    while 0 < pos < len(text):
        nxt = text.find("\n", pos)
        nxt = len(text) if nxt < 0 else nxt + 1
        ln = text[pos:nxt]
        if ln.strip():
            if len(ln) - len(ln.lstrip(" ")) <= item_indent:
                break
            le = nxt
        pos = nxt
    return ls, le


def _family(ci: ChartInstall) -> str:
    """The name of the add-on module (knowledge/karpenter_module.yaml family) that installs the chart."""
    from ...modmajor import FACTS as MODULE
    return MODULE[ci.family or "blueprints_addons"]["name"]


def _own_settings(ci: ChartInstall) -> str:
    """What a vendored chart's own values.yaml sets under `settings` (the team's cluster name, instance profile,
    queue): the new folder's values.yaml must say them again, under the new chart's names."""
    from ...inventory.charts import values_of
    keys = [v.key for v in values_of([ChartInstall(ci.kind, ci.chart, ci.path, ci.line, values=ci.defaults)])
            if v.key.startswith("settings.") and v.value not in (None, "", [], {})]
    if not keys:
        return ""
    return (f"; its values.yaml sets {', '.join(keys)}: the pulled chart's values.yaml does not, so set them again "
            "(or pass them in the release's values) under the new chart's names")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _emptied_block(tree, edits: list) -> list:
    """The edits of a values mapping held under a key of its document (`helm.valuesObject:`, Flux `spec.values:`):
    when they leave it with no entry, the key goes too (an empty `valuesObject:` is null), and so does its parent when
    it held nothing else (`helm:` with only `valuesObject:`)."""
    root = tree.root
    inside = [x for x in edits if root.start <= x[0] and x[1] <= root.end]
    if not inside or len(inside) != len(edits) and any(root.start < x[1] and x[0] < root.end for x in edits
                                                        if x not in inside):
        return edits
    region = tree.text[root.start:root.end]
    for s, e, t in sorted(inside, key=lambda x: x[0], reverse=True):
        region = region[:s - root.start] + t + region[e - root.start:]
    lines = region.split("\n")
    if any(ln.strip() and not ln.strip().startswith("#") for ln in lines[1:]) or ":" not in lines[0]:
        return edits                        # entries are left: the key stays
    start, end, text = root.start, root.end, tree.text
    key_indent = _indent(text[start:text.find("\n", start)])
    above = text.rfind("\n", 0, max(start - 1, 0)) + 1 if start > 0 else None
    if above is not None and above < start:
        parent = text[above:start - 1]
        after = text[end:text.find("\n", end) if text.find("\n", end) >= 0 else len(text)]
        if parent.rstrip().endswith(":") and _indent(parent) < key_indent and \
                (not after.strip() or _indent(after) <= _indent(parent)):
            start = above                   # the parent held only this key
    return [x for x in edits if x not in inside] + [(start, end, "")]
