"""The chart's version set where it is defined (a literal, a variable's default and every tfvars, a local, a module
input, a Flux source, an EKS Blueprints default), the controller image where it is pinned, and a frozen repository
moved to OCI."""
from __future__ import annotations

import posixpath
import re


from ....edits import TextEdit, indent_at, line_end, line_start, to_newline
from ....inventory import ChartInstall
from ....path import admits, chart_version, format_version, range_floor, shift_range, version_range
from ....resolve import definition_sites
from ....sources import hcl as hclsrc
from ....sources import yaml as yamlsrc
from .common import FACTS, _installs_crds, parse_version


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


def _own_settings(ci: ChartInstall) -> str:
    """What a vendored chart's own values.yaml sets under `settings` (the team's cluster name, instance profile,
    queue): the new folder's values.yaml must say them again, under the new chart's names."""
    from ....inventory.charts import values_of
    keys = [v.key for v in values_of([ChartInstall(ci.kind, ci.chart, ci.path, ci.line, values=ci.defaults)])
            if v.key.startswith("settings.") and v.value not in (None, "", [], {})]
    if not keys:
        return ""
    return (f"; its values.yaml sets {', '.join(keys)}: the pulled chart's values.yaml does not, so set them again "
            "(or pass them in the release's values) under the new chart's names")


class ChartVersion:
    """The chart's version set where it is defined (a literal, a variable's default and every tfvars, a local, a module
    input, a Flux source), the image where it is pinned, and the repository moved to OCI."""

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
                from ....inventory.terragrunt import _input_of
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
            old_api = self.hop.split("->")[0]           # the API the hop moves from
            why = f"which has no {old_api} support" if old_api != "v1" else \
                "so the version the cluster runs is whichever was newest at its last apply, not one the files state"
            self.finding("MIG-HELM-005", "warning", ci.path, ci.line,
                         f"{ci.address} has no version: Helm installs the newest chart, {why}",
                         f'pin version = "{format_version(target, "v0")}" until the migration is done')
            return
        sites, why = definition_sites(self.repo, ci.path, ci.version,
                                      via=set(ci.shared.calls) if ci.shared is not None else None)
        if not sites and ci.generic:        # one item of an add-ons list: its own chart_version entry
            from ....inventory import item_entry
            from ....resolve import Site
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
        from ... import images
        version = self.targets.get("karpenter") if self.bumps else chart_version(self.repo, self.charts, self.owns)
        if not version or not parse_version(version.lstrip("v")):
            return
        rows, said = images.check(ci, version, self.repo.text(ci.path) if ci.kind == "helm" else None)
        self.res.findings += said
        for vs in ci.values if rows else []:
            self.values(ci, vs, rows)

    def blueprints_version(self, ci: ChartInstall) -> None:
        """eks-blueprints-addons: the version lives at karpenter = { chart_version = ... } (else the add-on's
        default, which only the user can move by adding the key)."""
        target = self.targets.get(ci.chart)
        if target is None:
            return
        from ....modmajor import FACTS as MODULE
        from ....inventory.blueprints import stuck, unread_values
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
        from ....path import blueprints_default
        default = blueprints_default(ci)
        new = format_version(target, "v")     # the add-ons install from OCI, where tags below 0.35 carry a v
        text = self.repo.text(ci.path)
        nl = self.repo.files[ci.path].newline
        b = ci.block
        from ....modmajor import FACTS as MODULE
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
