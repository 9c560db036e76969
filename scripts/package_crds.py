"""Package Karpenter CRD schemas into migrator/knowledge/crds/<apiVersion>/<kind>.json.

Reads the CRDs copied from aws/karpenter-provider-aws (see ../shared/karpenter/SOURCES.md), keeps the
openAPIV3Schema of one served version, strips `description` fields (size) and writes stable JSON.
Usage: python scripts/package_crds.py [--shared ../shared]
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from ruamel.yaml import YAML

# (source CRD dir under shared/karpenter/crds, CRD file, served version, output folder)
# v1 is checked twice: against Karpenter 1.0 (the hop's target, still serving v1beta1) and against the newest
# 1.x, so a rewritten object is valid at every step of the onward path (knowledge/minors.yaml `newest`).
SOURCES = [
    ("v0.32.10", "karpenter.sh_nodepools.yaml", "v1beta1", "v1beta1"),
    ("v0.32.10", "karpenter.k8s.aws_ec2nodeclasses.yaml", "v1beta1", "v1beta1"),
    ("v1.0.14", "karpenter.sh_nodepools.yaml", "v1", "v1"),
    ("v1.0.14", "karpenter.k8s.aws_ec2nodeclasses.yaml", "v1", "v1"),
    # the newest 1.2: the chart installed beside the matched karpenter module v20 (knowledge/cas.yaml
    # install.matched_v20, whose policy serves Karpenter up to 1.2)
    ("v1.2.8", "karpenter.sh_nodepools.yaml", "v1", "v1@1.2.8"),
    ("v1.2.8", "karpenter.k8s.aws_ec2nodeclasses.yaml", "v1", "v1@1.2.8"),
    ("v1.14.1", "karpenter.sh_nodepools.yaml", "v1", "v1@1.14.1"),
    ("v1.14.1", "karpenter.k8s.aws_ec2nodeclasses.yaml", "v1", "v1@1.14.1"),
]


def strip(node):
    if isinstance(node, dict):
        return {k: strip(v) for k, v in node.items() if k != "description"}
    if isinstance(node, list):
        return [strip(v) for v in node]
    return node


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default=str(Path(__file__).resolve().parents[2] / "shared"))
    args = ap.parse_args()
    out_root = Path(__file__).resolve().parents[1] / "migrator" / "knowledge" / "crds"
    yaml = YAML(typ="safe")
    for tag, fname, version, folder in SOURCES:
        crd = yaml.load(Path(args.shared, "karpenter", "crds", tag, fname).read_text())
        kind = crd["spec"]["names"]["kind"]
        group = crd["spec"]["group"]
        (ver,) = [v for v in crd["spec"]["versions"] if v["name"] == version]
        doc = {
            "source": f"aws/karpenter-provider-aws pkg/apis/crds/{fname} @ {tag}",
            "apiVersion": f"{group}/{version}",
            "kind": kind,
            "schema": strip(ver["schema"]["openAPIV3Schema"]),
        }
        out = out_root / folder / f"{kind}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
        print(f"wrote {out.relative_to(out_root.parents[1])}")


if __name__ == "__main__":
    main()
