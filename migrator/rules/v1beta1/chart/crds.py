"""The karpenter-crd chart: bumped with the controller, or added beside it (a Terraform helm_release, a Flux
HelmRelease, a kustomize helmCharts entry, an Argo CD Application), the controller depending on it."""
from __future__ import annotations

import posixpath
import re

from ruamel.yaml.comments import CommentedMap

from .... import templating
from ....edits import NewFile, TextEdit, comments_above, indent_at, line_start, to_newline
from ....inventory import ChartInstall
from ....inventory.charts import _chart_name
from ....path import format_version
from ....sources import hcl as hclsrc
from ....sources import yaml as yamlsrc
from .common import FACTS, _installs_crds, parse_version


def _render(template: str, **kw) -> str:
    return templating.render(template, **kw)


def _aligned(attrs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    w = max(len(n) for n, _ in attrs)
    return [(n.ljust(w), v) for n, v in attrs]


def _kustomize_add(rule: CrdChart, old_path: str, new_path: str) -> None:
    from ....placement import kustomization_insert
    e = kustomization_insert(rule.repo, old_path, new_path, rule.rule)
    if e is not None:
        rule.res.edits.append(e)


class CrdChart:
    """The karpenter-crd chart: bumped with the controller, or added beside it (a helm_release, a Flux HelmRelease, a
    kustomize helmCharts entry, an Argo CD Application) with the controller depending on it."""

    # -- CRDs --------------------------------------------------------------------------------------
    def crds(self, ci: ChartInstall) -> None:
        crd = [c for c in self.charts if c.chart == "karpenter-crd" and c.kind == ci.kind]
        if ci.kind == "umbrella":
            self.res.umbrellas.append((posixpath.dirname(ci.path) or ".", str(ci.obj.get("name") or "")))
            for c in crd:                   # the CRD chart may ride in another umbrella (one chart of every CRD)
                self.res.crd_umbrellas.append((posixpath.dirname(c.path) or ".", str(c.obj.get("name") or "")))
            from ....inventory.kustomizations import argo_paths
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
            if any(re.fullmatch(rf"(?:resource\.)?{re.escape(ref)}(?:\[[^\]]*\])?", i.source.strip()) for i in dep.items):
                return                  # (`resource.helm_release.x` and one instance, `helm_release.x[0]`, name it too)
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
        self._crd_release_file(ci, new_path, body, f"HelmRelease/{name}",
                               f"no karpenter-crd release: {new_path} adds HelmRelease {name} so the CRDs get installed")
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
        self._crd_release_file(ci, new_path, body, f"Application/{new_meta['name']}",
                               f"no karpenter-crd release: {new_path} adds Application {new_meta['name']} (sync "
                               f"wave {crd_wave}, before the controller) so the CRDs get installed and upgraded")

    def _crd_release_file(self, ci, new_path: str, body: str, release: str, message: str) -> None:
        """The karpenter-crd release in a new file beside the controller's, listed where that file is listed."""
        self.res.edits.append(NewFile(new_path, to_newline(body, self.repo.files[ci.path].newline), self.rule))
        self.res.new_crd_release = True
        self.res.crd_releases.append(release)
        self.finding("MIG-HELM-013", "info", ci.path, ci.line, message)
        _kustomize_add(self, ci.path, new_path)
