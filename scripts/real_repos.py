"""Re-run migrator over the public repositories it was tried on (scripts/real-repos.yaml), whole, at the commit
recorded, and report each cluster root's standing and every error finding against what was judged by reading the
repository.

    python scripts/real_repos.py [--mirrors DIR] [--cache DIR] [--to latest] [NAME ...]

An entry may name the folder to plan (`path`, one blueprint of a repository of many) and its own target (`to`, e.g.
auto-mode for the commit before a team's own move, compared with what the team did next), and the findings it must say
(`said`: code and path, for a shape migrator says and does not plan).

A repository comes from a bare mirror (DIR/<owner>+<name>/repo, the layout the search tool's `fetch` writes) or is
cloned from GitHub into --cache. Its files are never copied into this project. For each repository the script
prints every root (path, era, chart, hop and phase), its error findings, and the time the plan took; a line starting
with `!` is a difference from the list: a root whose era or chart is not the one recorded, a root planned that the
list does not name (or one missing), an error finding not judged true, a plan slower than 2 s. Exit code 1 when
there is any.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))     # this checkout's migrator

from ruamel.yaml import YAML  # noqa: E402

from migrator.options import Options  # noqa: E402
from migrator.plan import make_plan  # noqa: E402

LIST = Path(__file__).with_name("real-repos.yaml")
LIMIT_S = 2.0


def git(*args: str, cwd: Path | None = None) -> bytes:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True).stdout


def source(entry: dict, mirrors: Path, cache: Path) -> Path:
    """A bare repository that holds the recorded commit."""
    owner_name = entry["repo"].replace("/", "+")
    bare = mirrors / owner_name / "repo"
    if bare.exists():
        return bare
    bare = cache / owner_name
    if not bare.exists():
        git("clone", "--bare", "--filter=blob:none", f"https://github.com/{entry['repo']}.git", str(bare))
    return bare


def extract(bare: Path, commit: str, dest: Path) -> int:
    """The tree of a commit, written under dest; blobs a snapshot lacks (its largest files) are skipped. Returns how
    many were skipped. A symbolic link is made as the link it is (its blob is the path it points to)."""
    listing = git("--git-dir", str(bare), "ls-tree", "-r", "-z", commit).split(b"\0")
    blobs = []
    links = set()
    for row in listing:
        if not row:
            continue
        meta, path = row.split(b"\t", 1)
        mode, kind, sha = meta.split()
        if kind == b"blob":
            blobs.append((sha, path.decode("utf-8", "replace")))
            if mode == b"120000":
                links.add(path.decode("utf-8", "replace"))
    proc = subprocess.run(["git", "--git-dir", str(bare), "cat-file", "--batch"], check=True, capture_output=True,
                          input=b"".join(sha + b"\n" for sha, _ in blobs))
    out, pos, skipped = proc.stdout, 0, 0
    for _, path in blobs:
        end = out.index(b"\n", pos)
        header = out[pos:end].split()
        pos = end + 1
        if header[-1] == b"missing":
            skipped += 1
            continue
        size = int(header[2])
        target = dest / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if path in links:
            os.symlink(out[pos:pos + size].decode("utf-8", "replace"), target)
        else:
            target.write_bytes(out[pos:pos + size])
        pos += size + 1
    return skipped


def options_of(entry: dict) -> Options:
    """`options`: what the user gives on the command line for this repository (e.g. auto_mode_node_role, as
    `--auto-mode-node-role` once MIG-AUTO-010 asks for it)."""
    return Options(**(entry.get("options") or {}))


def check(entry: dict, tree: Path, to: str) -> list[str]:
    """Lines of the report for one repository ('!' marks a difference from the list)."""
    out: list[str] = []
    t = time.perf_counter()
    plan = make_plan(tree, to=to, options=options_of(entry))
    took = time.perf_counter() - t
    expected = {str(k): v for k, v in (entry.get("roots") or {}).items()}
    seen = set()
    for r in plan.roots:
        hop = f"{r.hop_from} -> {r.hop_to} {r.phase}".strip() if r.hop else "-"
        row = [r.era, r.chart]
        mark = " "
        if r.path not in expected:
            mark = "!"
        elif list(expected[r.path]) != row:
            mark = "!"
            hop += f"   (recorded: {expected[r.path]})"
        seen.add(r.path)
        out.append(f"{mark}   {r.path}: {r.era}, chart {r.chart}, {hop}")
    out += [f"!   {p}: recorded, not planned" for p in sorted(set(expected) - seen)]
    true = {(e["code"], e["path"]) for e in entry.get("true_errors") or []}
    for f in plan.findings:
        if f.severity == "error" and not f.suppressed:
            mark = " " if (f.code, f.path) in true else "!"
            out.append(f"{mark}   error {f.code} {f.path}:{f.line}: {f.message[:160]}")
    for e in entry.get("said") or []:             # findings the list expects: each must still be said
        if not any(f.code == e["code"] and f.path == e["path"] for f in plan.findings):
            out.append(f"!   {e['code']} {e['path']}: recorded as said, not found")
    out.append(f"{'!' if took > LIMIT_S else ' '}   planned in {took:.2f} s")
    if entry.get("walk"):
        out += walk(entry, tree, to, true)
    return out


def walk(entry: dict, tree: Path, to: str, true: set) -> list[str]:
    """`walk`: apply run after run (as `migrator apply --write` does) until nothing changes; each root's phases with
    changes, in order, against the list; an error finding at any run, an internal placeholder in a written file, or a
    walk that does not end is a difference."""
    from migrator.apply import apply_changes
    out: list[str] = []
    phases: dict[str, list[str]] = {}
    for _ in range(10):
        plan = make_plan(tree, to=to, options=options_of(entry))
        for r in plan.roots:
            if r.changes:
                phases.setdefault(r.path, []).append(f"{r.hop_from}->{r.hop_to} {r.phase}")
        for f in plan.findings:
            if f.severity == "error" and not f.suppressed and (f.code, f.path) not in true:
                out.append(f"!   walk: error {f.code} {f.path}:{f.line}: {f.message[:160]}")
        if not plan.changes:
            break
        apply_changes(tree, plan.changes)
    else:
        out.append("!   walk: does not end in 10 runs")
    for c in (p for p in tree.rglob("*") if p.is_file()):
        if "__MIG_" in c.read_text(errors="replace"):
            out.append(f"!   walk: internal placeholder in {c.relative_to(tree)}")
    expected = {str(k): list(v) for k, v in entry["walk"].items()}
    for root in sorted(set(expected) | set(phases)):
        mark = " " if expected.get(root, []) == phases.get(root, []) else "!"
        out.append(f"{mark}   walk {root}: {', '.join(phases.get(root, [])) or 'nothing'}"
                   + ("" if mark == " " else f"   (recorded: {expected.get(root)})"))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help="owner/name of the repositories to check (default: all)")
    ap.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "migrator-real-repos")
    ap.add_argument("--to", default="latest")
    args = ap.parse_args()
    entries = YAML(typ="safe").load(LIST.read_text())
    args.cache.mkdir(parents=True, exist_ok=True)
    bad = 0
    for entry in entries:
        if args.names and entry["repo"] not in args.names:
            continue
        print(f"{entry['repo']} @ {entry['commit'][:12]} ({entry['shape']})")
        try:
            bare = source(entry, args.mirrors, args.cache)
        except subprocess.CalledProcessError as e:
            print(f"!   not available: {e.stderr.decode(errors='replace').strip()[:200]}")
            bad += 1
            continue
        with tempfile.TemporaryDirectory() as tmp:
            extract(bare, entry["commit"], Path(tmp))
            # `path`: the folder planned (one blueprint of a repository of many); `to`: the entry's own target
            lines = check(entry, Path(tmp) / entry.get("path", "."), entry.get("to", args.to))
        print("\n".join(lines))
        bad += sum(1 for ln in lines if ln.startswith("!"))
    print(f"{bad} difference(s) from scripts/real-repos.yaml")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
