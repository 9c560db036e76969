"""Write a plan's changes: atomic, inside the root only, never over a file that changed since the plan."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from .edits import FileChange


class ApplyError(RuntimeError):
    pass


def _target(root: Path, rel: str, through: bool = False) -> Path:
    """Where a change to `rel` is written: inside the root only; `through`: a link's own file (writing over the link
    would replace it by a copy that no longer follows the file it shares)."""
    p = (root / rel)
    try:
        real = p.resolve()
        real.relative_to(root.resolve())
    except ValueError:
        raise ApplyError(f"{rel}: outside the root, refusing to write") from None
    return real if through and p.is_symlink() else p


def _umask() -> int:
    """The process's umask (read by setting it and putting it back: the only portable way)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def new_file_mode() -> int:
    """The mode an editor gives a new file: 0666 less the umask (mkstemp's temporary file is 0600)."""
    return 0o666 & ~_umask()


def _atomic_write(p: Path, text: str, mode: int | None) -> None:
    """Write through a temporary file in the same folder, fsync, rename. `mode`: the file's own (kept); None for a
    new file, which gets the umask's mode."""
    data = text.encode("utf-8")
    if mode is None:
        mode = new_file_mode()
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".migrator", dir=p.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode & 0o7777)
        if p.exists():
            st = p.stat()
            try:                                    # keep the owner where the user may (root, or same owner)
                os.chown(tmp, st.st_uid, st.st_gid)
            except (PermissionError, AttributeError):
                pass
        os.replace(tmp, p)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def write_file(p: Path, text: str) -> None:
    """Atomically write a standalone output file (e.g. the runbook), keeping its mode if it exists."""
    p = Path(p)
    mode = p.stat().st_mode if p.exists() else None
    _atomic_write(p, text, mode)


def read_text(p: Path) -> str | None:
    """A file's text as migrator reads it (UTF-8, BOM removed); None when it does not exist."""
    return _current(p)


def _current(p: Path) -> str | None:
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        return None
    text = raw.decode("utf-8")
    return text[1:] if text.startswith("\ufeff") else text


def apply_changes(root: Path, changes: list[FileChange], backup: bool = False) -> list[str]:
    """Write every change; returns the paths written (see :func:`done` for what was done to each). Checks all files
    before writing any. With `backup`, each
    existing file is first copied to `<file>.orig` (atomically, mode kept). Every patched HCL file is parsed
    again by a second, independent parser (python-hcl2) before anything is written."""
    from .validate import second_parser
    root = Path(root).resolve()
    for c in changes:
        p = _target(root, c.path)
        now = _current(p)
        if now != c.old:
            raise ApplyError(f"{c.path} changed since the plan was made (or was created); re-run migrator")
        err = second_parser(c.path, c.old, c.new)
        if err:
            raise ApplyError(f"{c.path}: the patched file does not parse with python-hcl2 ({err}) although the "
                             "original does; please report this as a bug with the file attached")
    written = []
    for c in changes:
        p = _target(root, c.path, through=c.action != "delete")
        if backup and p.exists():
            _atomic_write(p.with_name(p.name + ".orig"), p.read_bytes().decode("utf-8"), p.stat().st_mode)
        if c.action == "delete":
            p.unlink()
        else:
            bom = False
            mode = None
            if p.exists():
                bom = p.read_bytes().startswith(b"\xef\xbb\xbf")
                mode = p.stat().st_mode
            p.parent.mkdir(parents=True, exist_ok=True)
            _atomic_write(p, ("\ufeff" if bom else "") + c.new, mode)
        written.append(c.path)
    return written


VERBS = {"create": "created", "modify": "wrote", "delete": "deleted"}


def done(changes: list[FileChange], written: list[str]) -> list[str]:
    """What apply did to each file, as it says it: `created x`, `wrote y`, `deleted z`."""
    action = {c.path: c.action for c in changes}
    return [f"{VERBS.get(action.get(w, 'modify'), 'wrote')} {w}" for w in written]
