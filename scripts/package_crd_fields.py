"""Regenerate migrator/knowledge/crd_fields.yaml: for each Karpenter CRD, a fingerprint of its field paths (every
served version's openAPIV3Schema properties) -> the releases whose CRD has exactly those fields. A vendored CRD
file (`helm show crds` output kept in a repository) is read as the releases its fields match; descriptions and
formatting do not count, so any patch of a minor matches when the minor's fields did not change.

Source: migrator/knowledge/crd_texts.json.xz (pkg/apis/crds of aws/karpenter-provider-aws at every release tag
since v0.32.0, scripts/package_crd_texts.py), so that a file is read as the exact patches it matches:

    python scripts/package_crd_fields.py
"""
from __future__ import annotations

import pathlib
import sys

from ruamel.yaml import YAML

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from migrator.sources.crd import crd_name, fingerprint  # noqa: E402

OUT = pathlib.Path(__file__).resolve().parent.parent / "migrator" / "knowledge" / "crd_fields.yaml"
_TAIL = "# CRDs a minor added"


def main() -> None:
    from migrator.crdfiles import _texts
    from migrator.path import parse_version
    from migrator.sources.yaml import values
    data = _texts()
    releases = sorted(data["releases"], key=parse_version)
    parsed: dict[str, object] = {}
    table: dict[str, dict[str, list[str]]] = {}
    for rel in releases:
        for _, blob in sorted(data["releases"][rel].items()):
            if blob not in parsed:
                parsed[blob] = values(data["texts"][blob])
            doc = parsed[blob]
            if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                table.setdefault(crd_name(doc), {}).setdefault(fingerprint(doc), []).append(rel)
    lines = ["# Field fingerprints of Karpenter's CRDs per release (scripts/package_crd_fields.py from",
             "# knowledge/crd_texts.json.xz, i.e. pkg/apis/crds of aws/karpenter-provider-aws at every tag; do not edit).",
             "# crd -> fingerprint of its field paths -> the releases that have exactly those fields.",
             "releases: [" + ", ".join(f'"{r}"' for r in releases) + "]", "crds:"]
    for name in sorted(table):
        lines.append(f"  {name}:")
        for fp, rels in table[name].items():
            lines.append(f'    "{fp}": [' + ", ".join(f'"{r}"' for r in rels) + "]")
    old = OUT.read_text() if OUT.exists() else ""
    tail = old[old.index(_TAIL):] if _TAIL in old else ""      # the hand-written part (new CRDs per minor) stays
    OUT.write_text("\n".join(lines) + "\n" + tail)
    print(OUT)


if __name__ == "__main__":
    main()
