"""`--since REF`: where each cluster root stood at a git ref (the base branch of a pull request that bumped a version).

The repository at the ref is extracted from git (never checked out over the working tree) and planned like any
other; each root's chart version there is where it stands, its files now are where it goes.
"""
from __future__ import annotations

import io
import subprocess
import tarfile
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


class SinceError(ValueError):
    """The ref cannot be read (not a git repository, a ref the clone does not have)."""


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False)


def _extract(tar: tarfile.TarFile, dest: str) -> None:
    """git's own archive, extracted safely: regular files and folders inside dest only (no links, no absolute or
    upward paths), on every Python the tool supports (the `filter` argument is 3.10.12+)."""
    for m in tar.getmembers():
        if (m.isfile() or m.isdir()) and not m.name.startswith("/") and ".." not in m.name.split("/"):
            tar.extract(m, dest, set_attrs=False, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))


@contextmanager
def tree_at(root: Path, ref: str) -> Iterator[Path | None]:
    """The folder `root` as it was at `ref`, extracted from git into a temporary directory (None: the folder did not
    exist there, every root in it is new)."""
    root = root.resolve()
    base = root if root.is_dir() else root.parent
    top = _git(base, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        raise SinceError(f"--since {ref}: {root} is not in a git repository")
    top_dir = Path(top.stdout.decode().strip())
    if _git(base, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").returncode != 0:
        shallow = _git(base, "rev-parse", "--is-shallow-repository").stdout.decode().strip() == "true"
        raise SinceError(f"--since {ref}: this clone does not have {ref}"
                         + (" (a shallow clone: check it out with fetch-depth: 0, or `git fetch origin <base>`)"
                            if shallow else " (fetch it first: `git fetch origin <base>`)"))
    rel = base.relative_to(top_dir).as_posix()
    archive = _git(top_dir, "archive", "--format=tar", ref, *([rel] if rel != "." else []))
    with tempfile.TemporaryDirectory() as tmp:
        if archive.returncode == 0:
            with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
                _extract(tar, tmp)
        old = Path(tmp) / rel if rel != "." else Path(tmp)
        yield old if old.is_dir() else None
