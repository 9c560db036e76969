"""The typed model of what a repository contains, each item knowing where it lives (one room per thing read):

- `repo`: the discovered files, parsed HCL cached; `documents`: YAML documents parsed once, templates masked;
- `objects`: Karpenter objects in every container (`scan_manifests`);
- `charts`: the install record (`ChartInstall`) and its values; `installs`: every installer reader (`scan_charts`):
  `terraform`, `flux`, `argocd`, `helmcharts` (kustomize), `blueprints`. A new installer shape is one small file.
"""
from .argocd import ARGO_KINDS
from .charts import ChartInstall, HelmValue, SetEntry, ValuesSource, values_of
from .documents import KARPENTER_KINDS, _parse_yaml_docs, value_at
from .installs import scan_charts
from .objects import STRUCTURAL, Manifest, hcl_to_obj, scan_manifests
from .repo import Repo
from .terraform import item_entry

__all__ = ["ARGO_KINDS", "KARPENTER_KINDS", "STRUCTURAL", "ChartInstall", "HelmValue", "Manifest", "Repo", "SetEntry",
           "ValuesSource", "_parse_yaml_docs", "hcl_to_obj", "item_entry", "scan_charts", "scan_manifests",
           "value_at", "values_of"]
