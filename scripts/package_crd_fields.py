"""Regenerate migrator/knowledge/crd_fields.yaml: for each Karpenter CRD, a fingerprint of its field paths (every
served version's openAPIV3Schema properties) -> the releases whose CRD has exactly those fields. A vendored CRD
file (`helm show crds` output kept in a repository) is read as the releases its fields match; descriptions and
formatting do not count, so any patch of a minor matches when the minor's fields did not change.

Source: ../shared/karpenter/crds/<release>/*.yaml (pkg/apis/crds of aws/karpenter-provider-aws at each tag,
../shared/karpenter/SOURCES.md):

    python scripts/package_crd_fields.py ../shared/karpenter/crds
"""
from __future__ import annotations

import pathlib
import sys

from ruamel.yaml import YAML

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from migrator.crdfiles import crd_name, fingerprint  # noqa: E402

OUT = pathlib.Path(__file__).resolve().parent.parent / "migrator" / "knowledge" / "crd_fields.yaml"


def main(src: str) -> None:
    table: dict[str, dict[str, list[str]]] = {}
    releases = []
    root = pathlib.Path(src)
    for d in sorted(root.iterdir(), key=lambda p: tuple(int(x) for x in p.name.lstrip("v").split("."))):
        rel = d.name.lstrip("v")
        releases.append(rel)
        for f in sorted(d.glob("*.yaml")):
            for doc in YAML(typ="safe").load_all(f.read_text()):
                if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                    table.setdefault(crd_name(doc), {}).setdefault(fingerprint(doc), []).append(rel)
    lines = ["# Field fingerprints of Karpenter's CRDs per release (scripts/package_crd_fields.py from",
             "# ../shared/karpenter/crds, i.e. pkg/apis/crds of aws/karpenter-provider-aws at each tag; do not edit).",
             "# crd -> fingerprint of its field paths -> the releases that have exactly those fields.",
             "releases: [" + ", ".join(f'"{r}"' for r in releases) + "]", "crds:"]
    for name in sorted(table):
        lines.append(f"  {name}:")
        for fp, rels in table[name].items():
            lines.append(f'    "{fp}": [' + ", ".join(f'"{r}"' for r in rels) + "]")
    OUT.write_text("\n".join(lines) + "\n")
    print(OUT)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else str(pathlib.Path(__file__).resolve().parents[2] / "shared" / "karpenter" / "crds"))
