"""Benchmark: generate a synthetic monorepo and time `migrator plan` over it.

    python benchmarks/run.py [--clusters 50] [--noise 500] [--repeat 3]

Each cluster folder copies the bundled fixtures (Terraform + Flux + raw YAML); `--noise` adds unrelated
Terraform/YAML files that the pre-filter should skip cheaply. Prints seconds per run and MB/s of
candidate text. Speed is measured here, never asserted in tests.
"""
from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from migrator.plan import make_plan
from migrator.options import Options

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
NOISE_TF = 'resource "aws_s3_bucket" "b{i}" {{\n  bucket = "bucket-{i}"\n  tags = {{ team = "x" }}\n}}\n' * 20
NOISE_YAML = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{i}\ndata:\n  k: v\n---\n" * 20


def generate(root: Path, clusters: int, noise: int) -> int:
    size = 0
    for c in range(clusters):
        for fx in ("terraform-eks", "gitops-flux", "kubernetes-manifest"):
            dest = root / f"cluster-{c}" / fx
            shutil.copytree(FIXTURES / fx / "input", dest)
    for i in range(noise):
        d = root / "noise" / f"mod-{i % 50}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"main{i}.tf").write_text(NOISE_TF.format(i=i))
        (d / f"cm{i}.yaml").write_text(NOISE_YAML.format(i=i))
    for p in root.rglob("*"):
        if p.is_file():
            size += p.stat().st_size
    return size


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--clusters", type=int, default=50)
    ap.add_argument("--noise", type=int, default=500)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        size = generate(root, args.clusters, args.noise)
        print(f"repository: {args.clusters} clusters, {args.noise} noise files, {size / 1e6:.1f} MB")
        for r in range(args.repeat):
            t0 = time.perf_counter()
            plan = make_plan(root, options=Options(node_role="bench-node-role"))
            dt = time.perf_counter() - t0
            print(f"run {r + 1}: {dt:.2f}s ({size / 1e6 / dt:.2f} MB/s), {len(plan.changes)} changes, "
                  f"{len(plan.findings)} findings")


if __name__ == "__main__":
    main()
