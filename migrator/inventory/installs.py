"""Every Karpenter chart install of a repository, from every installer reader (one room each).
"""
from __future__ import annotations



from . import argocd, blueprints, eksctl, flux, helmcharts, helmcli, helmfile, terraform, terragrunt, umbrella
from .charts import ChartInstall
from .repo import Repo



def scan_charts(repo: Repo) -> list[ChartInstall]:
    """Every install of the karpenter and karpenter-crd charts, whichever installer holds it."""
    out: list[ChartInstall] = []
    for reader in (terraform.scan, flux.scan, argocd.scan, helmcharts.scan, blueprints.scan, helmcli.scan,
                   eksctl.scan, umbrella.scan, terragrunt.scan, helmfile.scan):
        out.extend(reader(repo))
    return out
