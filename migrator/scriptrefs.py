"""Manifests that scripts apply by name, and what a plan does to them.

A hand-made setup applies its manifests from a script: `kubectl apply -f ./karpenter.yaml` in an install script, a
Makefile or justfile recipe, a CI workflow's `run:` step (and `kubectl delete -f` in the uninstall script). migrator
never edits scripts. So when a plan deletes a file a script applies by name, the script stops there the next time it
runs (under `set -e`) or no longer applies those objects; and when a plan writes a new manifest beside files a script
applies one by one, the script installs a cluster without it. Both are said, at the script's line, with the line to
write (MIG-EDIT-010, MIG-EDIT-011).

A path is resolved only where it is plain: relative to the folder the script runs in (its own folder or the
repository's root, or the folder of a `cd` before the command, a `cd "${REPO_ROOT}/x/y"` matched by its literal tail),
or, behind a variable, by its literal tail when exactly one file of the repository ends so. Anything else (a glob, a
URL, stdin, a path two files could be) is no reference: a warning is never given on a guess.
"""
from __future__ import annotations

import posixpath
import re
import shlex
from dataclasses import dataclass

from .inventory.repo import Repo
from .edits import FileChange
from .model import Finding

_SCRIPT_NAMES = ("Makefile", "makefile", "GNUmakefile", "justfile")
_WORKFLOW = re.compile(r"(^|/)\.github/workflows/[^/]+\.ya?ml$")
_VAR = re.compile(r"\$\{[^}]*\}|\$\([^)]*\)|\$[A-Za-z_][A-Za-z0-9_]*")
# the script's own folder: `$(dirname "$0")`, `$(dirname "${BASH_SOURCE[0]}")`, `${BASH_SOURCE%/*}`
_HOME = re.compile(r"""\$\(\s*dirname\s+["']?\$(?:0|\{?BASH_SOURCE(?:\[0\])?\}?)["']?\s*\)|\$\{BASH_SOURCE(?:\[0\])?%/\*\}""")
_WORTH = re.compile(r"kubectl|\b(?:cd|pushd|popd|tee)\b|>|-o\b|--output")
_ROOTED = "\x01"                # a word made relative to the repository's root (the script's folder spelled out)
_OPERATORS = {";", "&&", "||", "|", "&", "(", ")", "\n"}
_VERBS = ("apply", "create", "replace", "delete")
_MANIFEST = (".yaml", ".yml", ".json")
_DOES = {"apply": "applies", "create": "creates", "replace": "replaces", "delete": "deletes"}


@dataclass(frozen=True)
class Reference:
    script: str         # the script's path
    line: int           # 1-based line of the command
    verb: str           # apply | create | replace | delete
    arg: str            # the -f argument as written
    target: str         # the repository file it resolves to
    command: str        # the command as written (its first line)


def _kind(path: str) -> str | None:
    if path.endswith(".sh"):
        return "sh"
    if path.endswith((".yml", ".yaml")):
        return "workflow" if ".github/workflows/" in path and _WORKFLOW.search(path) else None
    if path.endswith(".mk") or path.endswith(_SCRIPT_NAMES) and posixpath.basename(path) in _SCRIPT_NAMES:
        return "make"
    return None


def references(repo: Repo) -> list[Reference]:
    """Every `kubectl apply|create|replace|delete -f <file>` of the repository's scripts that names one file of it
    (once per run)."""
    cached = repo.__dict__.get("_script_refs")
    if cached is not None:
        return cached
    out: list[Reference] = []
    folders: set[str] | None = None
    for p in _scripts(repo):
        kind, sf = _kind(p), repo.files[p]
        if "kubectl" not in sf.text or ("-f" not in sf.text and "--filename" not in sf.text):
            continue
        if folders is None:
            folders = _folders(repo)
        out += _script(repo, folders, p, sf.text, kind)
    repo.__dict__["_script_refs"] = out
    return out


def _scripts(repo: Repo) -> list[str]:
    """The files _kind reads, in discovery order: chosen by their paths (a tree's YAML files are CI workflows only
    under .github/workflows, and the rest are never searched for commands)."""
    return [p for p in repo.ending((".sh", ".yml", ".yaml", ".mk", *_SCRIPT_NAMES))
            if (".github/workflows/" in p or not p.endswith((".yml", ".yaml"))) and _kind(p) is not None]


def _folders(repo: Repo) -> set[str]:
    out = {""}
    for d in repo.dirs():
        while d and d not in out:
            out.add(d)
            d = posixpath.dirname(d)
    return out


def _lines(text: str):
    """(1-based line, logical line) with backslash continuations joined."""
    buf, start = [], 0
    for i, raw in enumerate(text.split("\n"), 1):
        if not buf:
            start = i
        if raw.rstrip().endswith("\\"):
            buf.append(raw.rstrip()[:-1])
            continue
        buf.append(raw)
        yield start, " ".join(buf)
        buf = []
    if buf:
        yield start, " ".join(buf)


# the words (quoted parts joined, their quotes taken off) and operator runs shlex makes of a line with no backslash
# or comment in it: one regex, where shlex reads a character at a time in Python (a tenth of a plan over a repository
# of scripts went there)
_TOKEN = re.compile(r"""[;&|()]+|(?:[^ \t\r\n;&|()'"]|"[^"]*"|'[^']*')+""")
_QUOTED = re.compile(r""""([^"]*)"|'([^']*)'""")


def _tokens(line: str, home: str = "") -> list[str]:
    masked = _VAR.sub("$V", _HOME.sub(lambda _m: _ROOTED + (home or "."), line))
    if "\\" not in masked and "#" not in masked and not _TOKEN.sub("", masked).strip(" \t\r\n"):
        return [_QUOTED.sub(_unquoted, t) if ('"' in t or "'" in t) else t for t in _TOKEN.findall(masked)]
    lex = shlex.shlex(masked, posix=True, punctuation_chars=";&|()")
    lex.whitespace_split = True
    try:
        return list(lex)
    except ValueError:          # an unbalanced quote: no command read from this line
        return []


def _unquoted(m: re.Match) -> str:
    return m.group(1) if m.group(1) is not None else m.group(2)


def _script(repo: Repo, folders: set[str], path: str, text: str, kind: str) -> list[Reference]:
    home = posixpath.dirname(path)
    starts = [home, ""] if kind == "sh" else [home] if kind == "make" else [""]
    cwd: list[str | None] | None = None         # the folders a `cd` moved to (None: unknown), else the starts
    stack: list = []
    written: set[str] = set()                   # what the script writes before it applies it (`> x.yaml`, `tee`)
    out = []
    for n, line in _lines(text):
        if not _WORTH.search(line):
            continue                            # neither a command migrator reads nor a write or a move
        if kind != "sh":
            cwd, stack = None, []               # each recipe line and each step runs in a shell of its own
        tokens = _tokens(line, home)
        segments: list[list[str]] = [[]]
        for t in tokens:
            if t in _OPERATORS or set(t) <= set(";&|()"):
                segments.append([])
            else:
                segments[-1].append(t)
        for seg in segments:
            words = [w.lstrip("@-+") if i == 0 and kind == "make" else w for i, w in enumerate(seg)]
            if not words:
                continue
            written |= _writes(words)
            head = posixpath.basename(words[0])
            if head in ("cd", "pushd"):
                if head == "pushd":
                    stack.append(cwd)
                if len(words) < 2 or words[1] == "-":
                    cwd = stack.pop() if words[1:] == ["-"] and stack else [None]
                    continue
                if head == "cd":
                    stack.append(cwd)
                found = {d for base in (cwd or starts) for d in [_dir(folders, base, words[1])] if d is not None}
                cwd = [found.pop()] if len(found) == 1 else [None]
            elif head == "popd":
                cwd = stack.pop() if stack else [None]
            elif "kubectl" in words:
                at = words.index("kubectl")
                out += [r for r in _kubectl(repo, path, n, line, words[at + 1:], cwd or starts)
                        if r.arg not in written]
    return out


def _writes(words: list[str]) -> set[str]:
    """The files a command writes: its redirections (`> f`, `>> f`, `>f`), `tee f`, `-o f` / `--output f`."""
    out = set()
    for i, w in enumerate(words):
        nxt = words[i + 1] if i + 1 < len(words) else None
        if w in (">", ">>", "-o", "-O", "--output", "--output-file") and nxt:
            out.add(nxt)
        elif w.startswith(">") and w.strip(">"):
            out.add(w.lstrip(">"))
        elif w.startswith(("--output=", "--output-file=")):
            out.add(w.split("=", 1)[1])
    if posixpath.basename(words[0]) == "tee":
        out |= {w for w in words[1:] if not w.startswith("-")}
    return out


def _kubectl(repo: Repo, path: str, n: int, line: str, words: list[str], bases: list) -> list[Reference]:
    verb = next((w for w in words if w in _VERBS), None)
    if verb is None:
        return []
    args = []
    for i, w in enumerate(words):
        if w in ("-f", "--filename") and i + 1 < len(words):
            args.append(words[i + 1])
        elif w.startswith(("--filename=", "-f=")):
            args.append(w.split("=", 1)[1])
    out = []
    for arg in (a for raw in args for a in raw.split(",") if a):
        if arg == "-" or "://" in arg or any(c in arg for c in "*?[~"):
            continue
        found = {t for base in bases for t in [_file(repo, base, arg)] if t}
        if len(found) == 1:
            out.append(Reference(path, n, verb, arg, found.pop(), " ".join(line.split())))
    return out


def _tail(arg: str) -> str | None:
    """What a path behind a variable (or an absolute one) states: its literal end."""
    if "$V" in arg:
        arg = arg.rsplit("$V", 1)[1]
    elif not arg.startswith("/"):
        return None
    tail = posixpath.normpath(arg.strip("/")) if arg.strip("/") else ""
    return tail if tail and not tail.startswith("..") else None


def _join(base: str | None, arg: str) -> str | None:
    if base is None:
        return None
    p = posixpath.normpath(posixpath.join(base, arg))
    return None if p.startswith("..") else ("" if p == "." else p)


def _rooted(arg: str) -> str | None:
    """A path that starts at the script's folder spelled out (`$(dirname "$0")/x`): relative to the root."""
    p = posixpath.normpath(arg[len(_ROOTED):].lstrip("/") or ".")
    return None if p.startswith("..") else ("" if p == "." else p)


def _dir(folders: set[str], base: str | None, arg: str) -> str | None:
    if arg.startswith(_ROOTED):
        p = _rooted(arg)
        return p if p in folders else None
    tail = _tail(arg)
    if tail is None and ("$V" in arg or arg.startswith("/")):
        return None
    if tail is not None:
        hits = [d for d in folders if d == tail or d.endswith("/" + tail)]
        return hits[0] if len(hits) == 1 else None
    p = _join(base, arg)
    return p if p in folders else None


def _file(repo: Repo, base: str | None, arg: str) -> str | None:
    if arg.startswith(_ROOTED):
        p = _rooted(arg)
        return p if p in repo.files else None
    tail = _tail(arg)
    if tail is None and ("$V" in arg or arg.startswith("/")):
        return None
    if tail is not None:
        hits = [q for q in repo.named(posixpath.basename(tail)) if q == tail or q.endswith("/" + tail)]
        return hits[0] if len(hits) == 1 else None
    p = _join(base, arg)
    return p if p in repo.files else None


def findings(repo: Repo, changes: list[FileChange]) -> list[Finding]:
    """What the plan's deletions and new manifests do to the scripts that apply files by name."""
    refs = [r for r in references(repo)] if any(c.action in ("delete", "create") for c in changes) else []
    if not refs:
        return []
    out = []
    gone = {c.path for c in changes if c.action == "delete"}
    for r in refs:
        if r.target in gone:
            does = "deletes the objects of" if r.verb == "delete" else _DOES[r.verb]
            out.append(Finding(
                "MIG-EDIT-010", "warning", r.script, r.line,
                f"`{r.command}` {does} {r.target}, which this plan deletes: run again, the command fails on the "
                "missing file (a script under `set -e` stops there)",
                "remove that line from the script (migrator does not edit scripts): the objects of that file are gone "
                "with this plan, or held by another file now"))
    named = {r.target for r in refs}
    for c in changes:
        if c.action != "create" or not c.path.endswith(_MANIFEST) or c.path in named or not _groups(c.new or ""):
            continue
        folder, groups = posixpath.dirname(c.path), _groups(c.new or "")
        seen = set()
        for r in refs:
            # a file of the same API groups in the same folder: the new file holds what it held, converted
            if posixpath.dirname(r.target) != folder or r.target in gone or r.script in seen or \
                    not groups & _groups(repo.text(r.target)):
                continue
            seen.add(r.script)
            new = _renamed(r.arg, r.target, c.path)
            out.append(Finding(
                "MIG-EDIT-011", "warning", r.script, r.line,
                f"`{r.command}` {_DOES[r.verb]} {r.target} by name, and this plan writes {c.path} beside it: run "
                f"again, the script {_DOES[r.verb]} the objects of one and not the other",
                f"add `kubectl {r.verb} -f {new}` beside that line (migrator does not edit scripts)"))
    return out


_API_VERSION = re.compile(r"^apiVersion:\s*[\"']?([\w.-]+)/[\w.-]+", re.M)


def _groups(text: str) -> set[str]:
    """The API groups of a manifest's top-level objects (the core group, which every setup applies, not counted)."""
    return set(_API_VERSION.findall(text))


def _renamed(arg: str, target: str, new: str) -> str:
    """The script's argument for the new file: the same path with the new file's name."""
    name, new_name = posixpath.basename(target), posixpath.basename(new)
    return arg[:-len(name)] + new_name if arg.endswith(name) else new
