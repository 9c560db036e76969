"""Package the official Karpenter controller policy per version into migrator/knowledge/iam/<version>.json.

Reads `Resources.KarpenterControllerPolicy.Properties.PolicyDocument` (a `!Sub` JSON string) from the
getting-started CloudFormation files in ../shared/karpenter/iam (see SOURCES.md there, karpenter-kb.md §E).
CloudFormation placeholders are kept as `${ClusterName}`, `${AWS::Region}`, ... for the tool to substitute.
Usage: python scripts/package_iam.py [--shared ../shared]
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from ruamel.yaml import YAML

VERSIONS = ["v0.31.5", "v0.32.10", "v0.37.8", "v1.0.14"]


def _loader() -> YAML:
    y = YAML(typ="rt")

    def sub(constructor, node):
        return constructor.construct_scalar(node) if node.id == "scalar" else constructor.construct_sequence(node)
    for tag in ("!Sub", "!GetAtt", "!Ref", "!Join"):
        y.constructor.add_constructor(tag, sub)
    return y


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default=str(Path(__file__).resolve().parents[2] / "shared"))
    args = ap.parse_args()
    out = Path(__file__).resolve().parents[1] / "migrator" / "knowledge" / "iam"
    out.mkdir(parents=True, exist_ok=True)
    for v in VERSIONS:
        src = Path(args.shared, "karpenter", "iam", f"{v}-cloudformation.yaml")
        doc = _loader().load(src.read_text())
        policy = json.loads(str(doc["Resources"]["KarpenterControllerPolicy"]["Properties"]["PolicyDocument"]))
        data = {"source": f"aws/karpenter-provider-aws website/content/en/preview/getting-started/"
                          f"getting-started-with-karpenter/cloudformation.yaml @ {v}", "version": v.lstrip("v"),
                "policy": policy}
        (out / f"{v.lstrip('v')}.json").write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {v}: {len(policy['Statement'])} statements")


if __name__ == "__main__":
    main()
