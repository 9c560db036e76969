"""Regenerate migrator/knowledge/crd_texts.json.xz: the exact text of every Karpenter CRD file the controller chart
ships (its crds/ folder, which links to pkg/apis/crds) at every release tag from v0.31.0 on, so that CRDs a
repository keeps as files are rewritten at the chart version a plan leaves, byte for byte what `helm show crds`
gives, without network access.

Source: a git clone of aws/karpenter-provider-aws (tags vX.Y.Z; release candidates and backport tags are skipped).
Each text is stored once (the same file is shared by many patches), and the whole table is compressed with xz:

    python scripts/package_crd_texts.py /path/to/karpenter-provider-aws.git
"""
from __future__ import annotations

import json
import lzma
import pathlib
import re
import subprocess
import sys

OUT = pathlib.Path(__file__).resolve().parent.parent / "migrator" / "knowledge" / "crd_texts.json.xz"
TAG = re.compile(r"^v(\d+)\.(\d+)\.(\d+)$")
FOLDER = "pkg/apis/crds"


def _git(repo: str, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", repo, *args], check=True, capture_output=True, text=True).stdout


def main(repo: str) -> None:
    tags = [t for t in _git(repo, "tag").split() if TAG.match(t)]
    tags = sorted((t for t in tags if tuple(map(int, TAG.match(t).groups())) >= (0, 31, 0)),
                  key=lambda t: tuple(map(int, TAG.match(t).groups())))
    releases: dict[str, dict[str, str]] = {}
    texts: dict[str, str] = {}
    for t in tags:
        files = {}
        for row in _git(repo, "ls-tree", t, f"{FOLDER}/").splitlines():
            meta, path = row.split("\t", 1)
            mode, kind, blob = meta.split()
            name = path.rsplit("/", 1)[1]
            if kind != "blob" or mode != "100644" or not name.endswith(".yaml"):
                continue
            files[name] = blob
            if blob not in texts:
                texts[blob] = _git(repo, "cat-file", "-p", blob)
        releases[t[1:]] = files
    data = {"about": "aws/karpenter-provider-aws pkg/apis/crds (the chart's crds/ folder) at each release tag; "
                     "made by scripts/package_crd_texts.py, do not edit",
            "releases": releases, "texts": texts}
    OUT.write_bytes(lzma.compress(json.dumps(data, sort_keys=True).encode(), preset=9 | lzma.PRESET_EXTREME))
    print(f"{OUT}: {len(releases)} releases, {len(texts)} texts, {OUT.stat().st_size} bytes")


if __name__ == "__main__":
    main(sys.argv[1])
