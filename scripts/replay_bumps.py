"""Replay dependency-bot bumps of Karpenter from public repositories (issue 32 §6): for each bump in
scripts/real-bumps.yaml, a temporary git repository holds the tree before and after the bot's commit, and
`migrator plan --since HEAD~1` is compared with what the owners did next (`expect`: finding codes that must be there,
whether the plan may change files, and `files`: files that `apply --write` must leave byte for byte as the owners'
commit named beside each has them). Needs the bare mirrors under /work/.mirror (`fetch` brings them).

    python scripts/replay_bumps.py [owner/name]
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from real_repos import extract  # noqa: E402

from migrator.apply import apply_changes  # noqa: E402
from migrator.options import Options  # noqa: E402
from migrator.plan import make_plan  # noqa: E402

HERE = Path(__file__).resolve().parent


def _git(d: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=d, check=True, capture_output=True)


def replay(bare: Path, bump: dict) -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _git(root, "init", "-q")
        _git(root, "config", "user.email", "replay@example.com")
        _git(root, "config", "user.name", "replay")
        _git(root, "config", "gc.auto", "0")          # no detached gc racing the cleanup
        extract(bare, bump["commit"] + "~1", root)
        _git(root, "add", "-A")
        _git(root, "commit", "-qm", "base")
        for p in root.iterdir():
            if p.name != ".git":
                subprocess.run(["rm", "-rf", str(p)], check=True)
        extract(bare, bump["commit"], root)
        _git(root, "add", "-A")
        _git(root, "commit", "-qm", "bump", "--allow-empty")
        sub = root / bump.get("path", ".")
        plan = make_plan(sub, options=Options(since="HEAD~1"))
        codes = {f.code for f in plan.findings}
        out = []
        for code in bump.get("expect", {}).get("findings", []):
            if code not in codes:
                out.append(f"missing {code}")
        if bump.get("expect", {}).get("changes") is False and plan.changes:
            out.append("changes files: " + ", ".join(c.path for c in plan.changes))
        if bump.get("expect", {}).get("changes") is True and not plan.changes:
            out.append("changes no file")
        errors = [f for f in plan.findings if f.severity == "error"]
        if errors and not bump.get("expect", {}).get("errors"):
            out += [f"error {f.code} {f.path}:{f.line}: {f.message[:160]}" for f in errors]
        files = bump.get("expect", {}).get("files", {})
        if files:
            apply_changes(sub, plan.changes)
            for rel, commit in files.items():
                theirs = subprocess.run(["git", "--git-dir", str(bare), "show", f"{commit}:{rel}"],
                                        capture_output=True, check=True).stdout
                if (root / rel).read_bytes() != theirs:
                    out.append(f"{rel} is not what {commit} has")
        said = sorted(c for c in codes if not c.startswith(("MIG-SINCE", "MIG-HOP")))
        print(f"  {bump['commit'][:9]} {bump['what']}: findings {said or 'none'}; "
              f"changes {[c.path for c in plan.changes] or 'none'}")
        return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("repo", nargs="?")
    args = ap.parse_args()
    entries = yaml.safe_load((HERE / "real-bumps.yaml").read_text())
    differences = 0
    for entry in entries:
        if args.repo and entry["repo"] != args.repo:
            continue
        bare = Path("/work/.mirror") / entry["repo"].replace("/", "+") / "repo"
        print(f"{entry['repo']} ({entry['why']})")
        for bump in entry["bumps"]:
            for line in replay(bare, bump):
                differences += 1
                print("    DIFFERENCE", line)
    print(f"{differences} difference(s) from scripts/real-bumps.yaml")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
