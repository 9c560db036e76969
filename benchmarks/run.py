"""Benchmark: migrator on generated monorepos, side by side with the naive alternatives, in one run.

    python benchmarks/run.py [--roots 50] [--unrelated 5000] [--runs 3] [--seed 7]
    python benchmarks/run.py --real /work/.mirror [--runs 1] [--top 15]     # the real repositories, slowest first

Every figure is a whole process (start-up included), the median of `--runs` runs (the naive full parse, which
takes minutes, runs once), with its peak RSS. Trees come from benchmarks/generate.py. Speed is measured here,
never asserted in tests; docs/performance.md records a run.

This machine's speed varies from day to day by up to 3x. Both modes read it from the naive python-hcl2 parse (seconds
a MB: the synthetic run's full parse, or a small tree's before and after `--real`) and print the figures scaled to
the speed of the days the targets were set (REFERENCE_S_PER_MB), beside the seconds measured.
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generate import EXAMPLE, generate  # noqa: E402

# runs a command as its child and reports wall time and the child's peak RSS (a fresh process per measurement)
PROBE = ("import resource, subprocess, sys, time\n"
         "t = time.perf_counter()\n"
         "r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
         "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, r.returncode)\n")
NAIVE = ("import pathlib, sys, hcl2\n"
         "for p in pathlib.Path(sys.argv[1]).rglob('*.tf'):\n"
         "    hcl2.loads(p.read_text())\n")
TREE_SITTER = ("import pathlib, sys, tree_sitter, tree_sitter_hcl\n"
               "parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_hcl.language()))\n"
               "for p in pathlib.Path(sys.argv[1]).rglob('*.tf'):\n"
               "    parser.parse(p.read_bytes())\n")


# this machine's speed varies from day to day by up to 3x: the naive python-hcl2 parse (pure Python, the same work every
# run, linear in bytes) is the yardstick. On the days the targets were set and met (2026-11-23 to 28) it parsed the
# 50-root + 5,000-file tree (10.38 MB) in 45-54 s: about 4.8 s a MB. A slow day's figures are read at that speed.
REFERENCE_S_PER_MB = 50.0 / 10.38


def migrator_cmd() -> list[str]:
    exe = Path(sys.executable).with_name("migrator")
    return [str(exe)] if exe.exists() else [shutil.which("migrator") or "migrator"]


def measure(cmd: list[str], runs: int) -> tuple[float, float]:
    """(median seconds, peak RSS in MB) of a whole process."""
    times, rss = [], 0
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", PROBE, *cmd], capture_output=True, text=True, check=True)
        t, kb, _rc = out.stdout.split()
        times.append(float(t))
        rss = max(rss, int(kb))
    return statistics.median(times), rss / 1024


def errors_in(tree: Path) -> int:
    out = subprocess.run(migrator_cmd() + ["plan", str(tree), "--format", "json"], capture_output=True, text=True)
    return sum(f["severity"] == "error" for f in json.loads(out.stdout)["findings"])


def _time_entry(mirrors: Path, entry: dict, runs: int) -> tuple[float, float, float] | None:
    """(cold, warm, peak MB) of one real repository extracted at its recorded commit; None where it is not mirrored."""
    import os
    from real_repos import extract
    bare = mirrors / entry["repo"].replace("/", "+") / "repo"
    if not bare.exists():
        return None
    with tempfile.TemporaryDirectory() as tmp:
        extract(bare, entry["commit"], Path(tmp))
        cmd = migrator_cmd() + ["plan", tmp, "--format", "json"]
        os.environ["MIGRATOR_EVALUATOR_CACHE"] = "off"
        cold, _ = measure(cmd, runs)
        os.environ["MIGRATOR_EVALUATOR_CACHE"] = "on"
        measure(cmd, 1)                                 # keeps the evaluator's answers
        warm, mb = measure(cmd, runs)
        os.environ.pop("MIGRATOR_EVALUATOR_CACHE")
    return cold, warm, mb


def real(mirrors: Path, runs: int, top: int, again: int = 5, again_runs: int = 5) -> None:
    """`--real DIR`: every repository of scripts/real-repos.yaml that DIR mirrors, at its recorded commit: `plan`
    as a whole process, cold (the evaluator asked: MIGRATOR_EVALUATOR_CACHE=off) and warm (its answers kept from the
    run before, as on a developer's second run or a pre-commit hook), the slowest first. The `again` slowest are
    measured again, `again_runs` times each, and listed at their medians: one run of a 10,000-file tree on a shared
    machine varies by a tenth either way."""
    from ruamel.yaml import YAML
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    from real_repos import LIST
    scale = REFERENCE_S_PER_MB / yardstick(3)
    print(f"machine speed: {1 / scale:.2f}x the reference days' time for the same work (the naive parse as yardstick)")
    rows = []
    entries = YAML(typ="safe").load(LIST.read_text())
    for i, entry in enumerate(entries):
        got = _time_entry(mirrors, entry, runs)
        if got is None:
            continue
        cold, warm, mb = got
        rows.append((cold, warm, mb, entry["repo"], i))
        print(f"  {entry['repo']}: {cold:.2f} s cold, {warm:.2f} s warm", flush=True)
    rows.sort(reverse=True)
    if again and again_runs > runs:
        print(f"\nthe {again} slowest again, {again_runs} runs each (medians):")
        for k, (_cold, _warm, _mb, name, i) in enumerate(rows[:again]):
            cold, warm, mb = _time_entry(mirrors, entries[i], again_runs)
            rows[k] = (cold, warm, mb, name, i)
            print(f"  {name}: {cold:.2f} s cold, {warm:.2f} s warm", flush=True)
        rows.sort(reverse=True)
    scale = (scale + REFERENCE_S_PER_MB / yardstick(3)) / 2      # the machine's speed before and after
    print(f"\n{len(rows)} real repositories; {sum(c <= 1 for c, *_ in rows)} plan in 1 s or less cold, "
          f"{sum(w <= 1 for _, w, *_ in rows)} warm; at the reference days' speed ({1 / scale:.2f}x faster than now) "
          f"{sum(c * scale <= 1 for c, *_ in rows)} cold, {sum(w * scale <= 1 for _, w, *_ in rows)} warm\n")
    print(f"| {'repository (slowest first)':<52} | {'cold s':>7} | {'warm s':>7} | {'cold, scaled':>12} | "
          f"{'peak RSS MB':>11} |")
    print(f"|{'-' * 54}|{'-' * 9}|{'-' * 9}|{'-' * 14}|{'-' * 13}|")
    for cold, warm, mb, name, _i in rows[:top]:
        print(f"| {name:<52} | {cold:7.2f} | {warm:7.2f} | {cold * scale:12.2f} | {mb:11.0f} |")


# the naive parse of a small tree, its start-up (python-hcl2 builds its grammar) left out: seconds a MB
YARDSTICK = ("import pathlib, sys, time, hcl2\n"
             "texts = [p.read_text() for p in sorted(pathlib.Path(sys.argv[1]).rglob('*.tf'))]\n"
             "hcl2.loads(texts[0])\n"
             "t = time.perf_counter()\n"
             "for x in texts:\n"
             "    hcl2.loads(x)\n"
             "print((time.perf_counter() - t) / (sum(len(x.encode()) for x in texts) / 1e6))\n")


def yardstick(runs: int) -> float:
    """This machine's seconds a MB for the naive python-hcl2 parse of a generated tree (1 root, 100 files), the
    median of `runs` processes."""
    with tempfile.TemporaryDirectory() as tmp:
        generate(Path(tmp), 1, 100, 7)
        got = [float(subprocess.run([sys.executable, "-c", YARDSTICK, tmp], capture_output=True, text=True,
                                    check=True).stdout) for _ in range(runs)]
    return statistics.median(got)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--real", type=Path, default=None, metavar="MIRRORS",
                    help="time the real repositories of scripts/real-repos.yaml mirrored in this folder instead")
    ap.add_argument("--top", type=int, default=15, help="with --real: how many of the slowest to list")
    ap.add_argument("--again", type=int, default=5,
                    help="with --real: how many of the slowest to measure again, --again-runs times each")
    ap.add_argument("--again-runs", type=int, default=5)
    ap.add_argument("--roots", type=int, default=50)
    ap.add_argument("--unrelated", type=int, default=5000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    if a.real is not None:
        real(a.real, a.runs, a.top, a.again, a.again_runs)
        return
    mig = migrator_cmd()
    with tempfile.TemporaryDirectory() as tmp:
        one, many, big = Path(tmp) / "one", Path(tmp) / "many", Path(tmp) / "big"
        mixed = Path(tmp) / "mixed"
        bundled = Path(tmp) / "bundled"
        generate(one, 1, 0, a.seed)
        generate(bundled, 1, 100, a.seed, bundle=True)
        plain = Path(tmp) / "plain"
        generate(plain, 1, 100, a.seed)
        generate(many, a.roots, 0, a.seed)
        double = Path(tmp) / "double"
        generate(double, 2 * a.roots, 0, a.seed)
        info = generate(big, a.roots, a.unrelated, a.seed)
        generate(mixed, a.roots, a.unrelated, a.seed, mixed=True)
        print(f"trees: 1 root; {a.roots} roots; {a.roots} roots + {a.unrelated} unrelated files "
              f"({info['files']} files, {info['bytes'] / 1e6:.1f} MB); median of {a.runs} runs, whole process\n")
        rows = [
            ("migrator --help", mig + ["--help"], a.runs),
            ("plan, bundled example", mig + ["plan", str(EXAMPLE)], a.runs),
            ("plan, 1 root", mig + ["plan", str(one), "--format", "json"], a.runs),
            ("plan, 1 root + 100 files", mig + ["plan", str(plain), "--format", "json"], a.runs),
            ("plan, 1 root + 100 files + 500 KB CRD bundle", mig + ["plan", str(bundled), "--format", "json"], a.runs),
            (f"plan, {a.roots} roots", mig + ["plan", str(many), "--format", "json"], a.runs),
            (f"plan, {2 * a.roots} roots", mig + ["plan", str(double), "--format", "json"], a.runs),
            (f"plan, {a.roots} roots + {a.unrelated} unrelated", mig + ["plan", str(big), "--format", "json"], a.runs),
            (f"plan, {a.roots} roots at 3 eras + {a.unrelated} unrelated",
             mig + ["plan", str(mixed), "--to", "latest", "--format", "json"], a.runs),
            ("grep -rlI karpenter (same tree)", ["grep", "-rlI", "karpenter", str(big)], a.runs),
            ("naive python-hcl2 parse of every .tf (same tree)", [sys.executable, "-c", NAIVE, str(big)], 1),
            ("tree-sitter-hcl parse of every .tf (same tree)", [sys.executable, "-c", TREE_SITTER, str(big)], a.runs),
        ]
        got = {}
        print(f"| {'what':<52} | {'seconds':>8} | {'peak RSS MB':>11} |")
        print(f"|{'-' * 54}|{'-' * 10}|{'-' * 13}|")
        for label, cmd, runs in rows:
            t, mb = measure(cmd, runs)
            got[label] = t
            print(f"| {label:<52} | {t:8.2f} | {mb:11.0f} |", flush=True)
        big_t = got[f"plan, {a.roots} roots + {a.unrelated} unrelated"]
        many_t, one_t = got[f"plan, {a.roots} roots"], got["plan, 1 root"]
        naive = got["naive python-hcl2 parse of every .tf (same tree)"]
        print(f"\nplan with unrelated files / naive full parse: {big_t / naive:.1%}")
        print(f"plan with / without the unrelated files: {big_t / many_t:.2f}x")
        print(f"{a.roots} roots / ({a.roots} x 1 root): {many_t / (a.roots * one_t):.2f}")
        print(f"{2 * a.roots} roots / {a.roots} roots: {got[f'plan, {2 * a.roots} roots'] / many_t:.2f}x "
              "(linear in roots: at most 2x)")
        mixed_t = got[f"plan, {a.roots} roots at 3 eras + {a.unrelated} unrelated"]
        print(f"{a.roots} roots at 3 eras / at one era (both + unrelated files): {mixed_t / big_t:.2f}x")
        cost = got["plan, 1 root + 100 files + 500 KB CRD bundle"] - got["plan, 1 root + 100 files"]
        print(f"a 500 KB CRD bundle (Flux gotk-components.yaml) adds {cost:.2f} s")
        print(f"error findings on the largest tree: {errors_in(big)}; on the mixed-era tree: {errors_in(mixed)}")
        rate = naive / (info["bytes"] / 1e6)
        scale = REFERENCE_S_PER_MB / rate
        print(f"machine speed: the naive parse took {rate:.1f} s a MB ({REFERENCE_S_PER_MB:.1f} on the reference "
              f"days); at that speed {a.roots} roots would take {many_t * scale:.2f} s (target 1.0 s), "
              f"{2 * a.roots} roots {got[f'plan, {2 * a.roots} roots'] * scale:.2f} s")


if __name__ == "__main__":
    main()
