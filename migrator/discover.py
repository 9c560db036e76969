"""Walk a repository root and keep the files migrator may need.

Skips VCS/tool directories, symlinks that leave the root, oversized and binary files. A cheap text
pre-filter marks the files worth scanning for Karpenter objects; other Terraform files stay available
to the resolver (variables, instance profiles) and are parsed only when asked for.
"""
from __future__ import annotations

import fnmatch
import operator
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from .edits import newline_of

CANDIDATE_SUFFIXES = (".tf", ".tofu", ".tfvars", ".hcl", ".gotmpl", ".yaml", ".yml", ".tmpl", ".tftpl", ".tpl", ".json", ".sh",
                      ".mk")
# build files read for the commands they run (CRD URLs, `helm template` targets): make and just
CANDIDATE_NAMES = ("Makefile", "makefile", "GNUmakefile", "justfile")
SKIP_DIRS = {".git", ".terraform", ".terragrunt-cache", "node_modules", "vendor", ".venv", "__pycache__"}
MAX_BYTES = 2 * 1024 * 1024

# what marks a file worth scanning for Karpenter objects (case-insensitive substrings: one lower() and C-speed `in`
# checks, several times faster than a case-insensitive regex alternation on large trees)
INTERESTING = ("karpenter", "provisioner", "awsnodetemplate", "nodepool", "ec2nodeclass", "kubectl_manifest",
               "kubernetes_manifest", "aws_iam_instance_profile", "kustomization")


def interesting(text: str) -> bool:
    low = text.lower()
    return any(n in low for n in INTERESTING)


class SourceFile:
    """A file read: its POSIX path relative to the root, where it is on disk, its text and mode. Its line ending style
    and whether it is worth scanning for Karpenter objects are worked out when first asked (most files of a large tree
    are never asked)."""
    __slots__ = ("path", "abs_path", "text", "_mode", "_newline", "_interesting")

    def __init__(self, path: str, abs_path, text: str, newline: str | None = None, mode: int | None = 0o644,
                 interesting: bool | None = None):
        self.path, self.abs_path, self.text, self._mode = path, abs_path, text, mode
        self._newline, self._interesting = newline, interesting

    @property
    def mode(self) -> int:
        """The file's mode (None given: looked up on disk when first asked; 0o644 when it is gone)."""
        if self._mode is None:
            try:
                self._mode = os.stat(self.abs_path).st_mode
            except OSError:
                self._mode = 0o644
        return self._mode

    @property
    def newline(self) -> str:
        if self._newline is None:
            self._newline = newline_of(self.text)
        return self._newline

    @property
    def interesting(self) -> bool:
        if self._interesting is None:
            self._interesting = interesting(self.text)
        return self._interesting

    def __repr__(self) -> str:
        return f"SourceFile({self.path!r})"


@dataclass
class Skipped:
    path: str
    reason: str


@dataclass
class Discovery:
    root: Path
    files: dict[str, SourceFile] = field(default_factory=dict)
    skipped: list[Skipped] = field(default_factory=list)
    links: set[str] = field(default_factory=set)        # files read through a symbolic link (migrator/links.py)


def _within(root: Path, p: Path) -> bool:
    try:
        p.resolve().relative_to(root)
        return True
    except ValueError:
        return False


def excluded(rel: str, patterns: list[str]) -> bool:
    """Does a POSIX relative path match one of the configured exclude globs (a glob or a folder prefix)?"""
    return any(fnmatch.fnmatch(rel, pat) or rel.startswith(pat.rstrip("/") + "/") for pat in patterns)


def discover(root: Path, max_bytes: int = MAX_BYTES, exclude: list[str] | None = None) -> Discovery:
    root = root.resolve()
    out = Discovery(root=root)
    exclude = exclude or []
    if root.is_file():
        _add(out, root.parent, root, max_bytes)
        out.root = root.parent
        return out
    _walk(out, root, str(root), "", exclude, max_bytes)
    return out


_name = operator.attrgetter("name")


def _walk(out: Discovery, root: Path, top: str, reld: str, exclude: list[str], max_bytes: int) -> None:
    """One folder, as os.walk(followlinks=False) visits it top-down: its folders and files sorted by name, its files
    before its subfolders' (the discovery order every reader sees). A folder that cannot be listed is passed over.
    Paths are strings: pathlib's parsing was a fifth of discovery on trees of ten thousand files."""
    try:
        with os.scandir(top) as it:
            entries = list(it)
    except OSError:
        return
    dirs, files = [], []
    for e in entries:
        try:
            is_dir = e.is_dir()                 # a symlink to a folder is a folder here, as os.walk lists it
        except OSError:
            is_dir = False
        if is_dir:
            dirs.append(e)
        elif e.name.endswith(CANDIDATE_SUFFIXES) or e.name in CANDIDATE_NAMES:     # other files are never read
            files.append(e)
    keep = []
    for e in sorted(dirs, key=_name):
        if e.name in SKIP_DIRS:
            continue
        rel = f"{reld}/{e.name}" if reld else e.name
        if exclude and excluded(rel, exclude):
            out.skipped.append(Skipped(rel, "excluded by the configuration"))
            continue
        if e.is_symlink():
            out.skipped.append(Skipped(rel, "symlinked directory (not followed)"))
            continue
        keep.append((e.path, rel))
    for e in sorted(files, key=_name):
        name = e.name
        rel = f"{reld}/{name}" if reld else name
        if exclude and excluded(rel, exclude):
            out.skipped.append(Skipped(rel, "excluded by the configuration"))
            continue
        if e.is_file(follow_symlinks=False):
            _add_plain(out, e.path, max_bytes, rel)
        elif e.is_symlink():
            _add(out, root, e.path, max_bytes, rel)
            if rel in out.files:
                out.links.add(rel)
        else:                                   # a FIFO, socket or device: opening it could block or never end
            out.skipped.append(Skipped(rel, "not a regular file"))
    for path, rel in keep:
        _walk(out, root, path, rel, exclude, max_bytes)


_FIRST_READ = 1 << 16


def _add_plain(out: Discovery, name: str, max_bytes: int, rel: str) -> None:
    """A file that is not a symlink: opened once and read in one call when it is small (a short read of a regular file
    is its end), as most files of a tree are; a larger one's size and mode from the open file (no second path
    lookup). A small file's mode is looked up when asked (SourceFile.mode)."""
    try:
        fd = os.open(name, os.O_RDONLY)
    except OSError as e:
        out.skipped.append(Skipped(rel, f"unreadable: {e.strerror}"))
        return
    mode = None
    try:
        head = min(_FIRST_READ, max_bytes + 1)
        raw = os.read(fd, head)
        if len(raw) == head:                        # more may follow: the file's size decides
            st = os.fstat(fd)
            mode = st.st_mode
            if st.st_size > max_bytes:
                out.skipped.append(Skipped(rel, f"larger than {max_bytes} bytes"))
                return
            rest = [raw]
            while got := os.read(fd, max(st.st_size + 1 - len(raw), 1 << 16)):    # (it may grow meanwhile)
                rest.append(got)
                if sum(map(len, rest)) > max_bytes:
                    break
            raw = b"".join(rest)
            if len(raw) > max_bytes:
                out.skipped.append(Skipped(rel, f"larger than {max_bytes} bytes"))
                return
    except OSError as e:
        out.skipped.append(Skipped(rel, f"unreadable: {e.strerror}"))
        return
    finally:
        os.close(fd)
    _keep_text(out, rel, name, raw, mode)


def _add(out: Discovery, root: Path, p, max_bytes: int, rel: str | None = None) -> None:
    rel = rel if rel is not None else Path(p).relative_to(root).as_posix()
    name = str(p)
    try:
        st = os.lstat(name)             # one call for a plain file; a symlink is followed below
        if stat.S_ISLNK(st.st_mode):
            if not _within(root, Path(p)):
                out.skipped.append(Skipped(rel, "symlink leaving the root"))
                return
            st = os.stat(name)
    except OSError as e:
        out.skipped.append(Skipped(rel, f"unreadable: {e.strerror}"))
        return
    if st.st_size > max_bytes:
        out.skipped.append(Skipped(rel, f"larger than {max_bytes} bytes"))
        return
    try:
        with open(name, "rb") as fh:
            raw = fh.read()
    except OSError as e:
        out.skipped.append(Skipped(rel, f"unreadable: {e.strerror}"))
        return
    _keep_text(out, rel, name, raw, st.st_mode)


def _keep_text(out: Discovery, rel: str, name: str, raw: bytes, mode: int | None) -> None:
    if raw.find(b"\0", 0, 8192) >= 0:         # (no copy of the head)
        out.skipped.append(Skipped(rel, "binary file"))
        return
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        out.skipped.append(Skipped(rel, "not UTF-8 text"))
        return
    if text.startswith("\ufeff"):
        text = text[1:]
    out.files[rel] = SourceFile(rel, name, text, mode=mode)
