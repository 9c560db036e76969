"""Rule `v1beta1/helm`: chart version, values renames, CRD chart, wherever the values live.

Values are rewritten from the hop's table (knowledge/helm.yaml) in every shape: heredoc YAML,
`yamlencode({...})`, values files, Flux `spec.values` (all through key trees) and `set` blocks / lists.
The chart version is bumped where it is defined (literal, variable default, every tfvars, local); a
frozen `https://charts.karpenter.sh` repository moves to OCI; a `karpenter-crd` release is bumped with
the controller, or added (Terraform `helm_release`, Flux `HelmRelease`) with the controller depending on it.
What cannot be edited statically is reported with the file, line and key.
"""
# What the rule writes is in chart/: values.py, version.py (and the repository), crds.py (docs/design.md).
from __future__ import annotations

import posixpath

from ...inventory import ChartInstall, Manifest, Repo
from ...model import Finding
from ...path import format_version  # noqa: F401 - the spelling rule lives with the versions
from .chart.common import FACTS, HOP, RULE, HelmResult, _family, parse_version  # noqa: F401 - read from here by the hops
from .chart.common import _installs_crds
from .chart.crds import CrdChart
from .chart.values import ChartValues
from .chart.version import ChartVersion


class HelmRule(ChartValues, ChartVersion, CrdChart):
    """The Karpenter chart's install moved to a hop's target: run() goes over the installs; the rooms of chart/ write
    the values, the version and repository, and the CRD chart."""

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
            if ci.generic or ci.shared is not None or (ci.attrs.get("module") and not _installs_crds(ci)):
                self.res.kinds.add("generic")           # an install that brings no CRD chart of its own
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
        """Do alpha node templates that rely on defaultInstanceProfile remain after this phase? In prepare, where the
        root's Provisioners and AWSNodeTemplates are not in the repository (applied by hand, or from elsewhere), they
        may: the value stays until cleanup (cradules/aws-eks)."""
        if self.phase == "prepare" and not any(m.era == "alpha" and m.kind in ("Provisioner", "AWSNodeTemplate")
                                               for m in self.manifests):
            return True
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

