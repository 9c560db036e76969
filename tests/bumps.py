"""Bump fixtures (issue 58): fixtures/<name>/bump.json marks a dependency bot's bump, replayed end to end.

    base/       the repository before the bot's commit
    bumped/     the repository after it (only the bot's edit)
    expected/   after `migrator apply --since <the bot's parent> --write`
    runbook.md  the runbook `migrator plan --since <the bot's parent>` prints

bump.json {"bot": "what the bot moved"}. Both the fixture script and the tests replay a bump with `replay`, in a
temporary git repository: base committed, then bumped committed, planned with `--since HEAD~1`.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path


def _git(d: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.email=bot@example.com", "-c", "user.name=bot", *args], cwd=d, check=True,
                   capture_output=True)


def repository(fx: Path, work: Path) -> Path:
    """A git repository at `work` whose last commit is the bot's bump of fixture `fx` (its parent is base/)."""
    # files written now (shutil.copy, not copy2): git compares stat data, and a bump keeps a file's size
    shutil.copytree(fx / "base", work, symlinks=True, copy_function=shutil.copy)
    _git(work, "init", "-q", "-b", "main")
    _git(work, "add", "-A")
    _git(work, "commit", "-qm", "base")
    for p in list(work.iterdir()):
        if p.name != ".git":
            shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
    shutil.copytree(fx / "bumped", work, symlinks=True, dirs_exist_ok=True, copy_function=shutil.copy)
    _git(work, "add", "-A")
    _git(work, "commit", "-qm", "bump")
    return work


def names(fixtures: Path) -> list[str]:
    return sorted(p.name for p in fixtures.iterdir() if (p / "bump.json").is_file())
