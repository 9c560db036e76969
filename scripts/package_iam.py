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

VERSIONS = ["v0.31.5", "v0.32.10", "v0.37.8", "v1.0.14", "v1.1.10", "v1.2.8", "v1.3.8", "v1.4.4", "v1.5.8", "v1.6.8",
            "v1.7.6", "v1.8.8", "v1.9.2", "v1.10.2", "v1.11.3", "v1.12.2", "v1.13.1", "v1.14.1"]


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
        # one KarpenterControllerPolicy up to 1.8; from 1.9 split into several managed policies (minors §4 v1.9),
        # merged here in the file's order, each statement tagged with the managed policy it belongs to
        statements, parts = [], []
        for name, res in doc["Resources"].items():
            if res.get("Type") != "AWS::IAM::ManagedPolicy" or not name.endswith("Policy") \
                    or "ManagedPolicyName" in res["Properties"] and "KarpenterController" not in \
                    str(res["Properties"]["ManagedPolicyName"]):
                continue
            part = json.loads(str(res["Properties"]["PolicyDocument"]))
            parts.append(name)
            statements.extend(part["Statement"])
        policy = {"Version": "2012-10-17", "Statement": statements}
        data = {"source": f"aws/karpenter-provider-aws website/content/en/preview/getting-started/"
                          f"getting-started-with-karpenter/cloudformation.yaml @ {v}", "version": v.lstrip("v"),
                "managed_policies": parts, "policy": policy}
        (out / f"{v.lstrip('v')}.json").write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {v}: {len(policy['Statement'])} statements")


if __name__ == "__main__":
    main()
