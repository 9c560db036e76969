"""Terraform values from a real evaluator: tfparse (Cloud Custodian, Apache-2.0; trivy's evaluator behind it).

tfparse evaluates a root module whole (variable defaults, tfvars, locals, conditionals, `count`/`for_each`
expansions, local module calls) and returns every block instance with its evaluated attributes. migrator keeps
tree-sitter for spans and edits; it asks the evaluator what a block *is*: whether it exists at all (a `count = 0`,
an empty `for_each`, a module switched off), and the values of attributes written as expressions (a chart name
from a variable, one item of an add-ons list). An answer the evaluator cannot give is None: the caller keeps the
expression as it is written and never guesses.

A block of a module that root modules call by relative `source` is evaluated from each of those roots (a module's
switch is set by its caller); a block of a root module from that root.
"""
from __future__ import annotations

import logging
import multiprocessing
import os
import posixpath
import re
import threading
import time
from typing import Any

log = logging.getLogger(__name__)


def _installed() -> bool:
    """tfparse is installed (wheels for CPython 3.10-3.13 on Linux and macOS arm64). It is only ever loaded in the
    worker process: its Go runtime (~50 MB) never enters migrator's own."""
    import importlib.util
    try:
        return importlib.util.find_spec("tfparse") is not None
    except (ImportError, ValueError):
        return False

_INDEX = re.compile(r'\[(?:\d+|"[^"]*")\]$')


def available() -> bool:
    return os.environ.get("MIGRATOR_EVALUATOR", "").lower() != "off" and _installed()


def _seconds(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        return default


# how long one root module may take, and all of them in one run: the evaluator iterates a module up to 32 times until
# its values settle, and a root calling several slow modules can take minutes (PipeOpsHQ/nova-templates); past
# either limit the answer is "not known", as for a module it cannot read, and the run says so
LIMIT_S = _seconds("MIGRATOR_EVALUATOR_TIMEOUT", 8.0)
BUDGET_S = _seconds("MIGRATOR_EVALUATOR_BUDGET", 30.0)


def _serve(conn) -> None:
    """The worker: evaluates one root module per request, for as long as migrator asks. Its stderr is closed: a Go
    panic (tfparse aborts the process on some modules: "can't use ElementIterator on null value") ends the worker,
    never migrator, and prints no Go trace over the plan."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    import tfparse
    while True:
        try:
            path = conn.recv()
        except (EOFError, OSError):
            return
        try:
            out = tfparse.load_from_path(path)
        except Exception:               # noqa: BLE001 - a module it cannot evaluate: nothing is known from it
            out = None
        conn.send(out)


class _Worker:
    """One evaluator process per run, started on the first question and started again after it dies or runs late."""

    def __init__(self) -> None:
        self.proc = None
        self.conn = None
        self.lock = threading.Lock()

    def _start(self) -> None:
        ctx = multiprocessing.get_context("spawn")      # a fresh interpreter: no fork of migrator's threads
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_serve, args=(child,), name="tfparse", daemon=True)
        self.proc.start()
        child.close()

    def _stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.join(1)
        self.proc = self.conn = None

    def ask(self, path: str, limit: float) -> tuple[dict | None, str]:
        """(the answer, "" | "limit" | "failed")."""
        with self.lock:
            if self.proc is None or not self.proc.is_alive():
                self._start()
            try:
                self.conn.send(path)
                if not self.conn.poll(max(limit, 0.0)):
                    self._stop()
                    return None, "limit"
                return self.conn.recv(), ""
            except (EOFError, OSError, BrokenPipeError):
                log.debug("tfparse %s: the evaluator process ended", path)
                self._stop()
                return None, "failed"


_WORKER = _Worker()


def _evaluate(path: str, limit: float) -> tuple[dict | None, str]:
    """(the evaluator's answer for a root module, "" or why there is none: "limit" (it ran out of time), "failed"
    (its process ended on the module)). It runs in a worker process, so neither a late answer nor a crash of the
    evaluator holds or ends the run."""
    return _WORKER.ask(path, limit)


def _load(repo, d: str) -> dict | None:
    cache = repo.__dict__.setdefault("_tfparse", {})
    if d not in cache:
        out = None
        if available():
            clock = repo.__dict__.setdefault("_tfparse_clock", {"spent": 0.0, "late": []})
            left = BUDGET_S - clock["spent"]
            if left <= 0:
                clock["late"].append((d, "budget"))
            else:
                start = time.monotonic()
                out, why = _evaluate(str(repo.root / d) if d != "." else str(repo.root), min(LIMIT_S, left))
                clock["spent"] += time.monotonic() - start
                if why:
                    clock["late"].append((d, why))
        cache[d] = out
    return cache[d]


def unanswered(repo) -> list[tuple[str, str]]:
    """The root modules the evaluator gave no answer for: (directory, "limit" | "budget" | "failed")."""
    return list(repo.__dict__.get("_tfparse_clock", {}).get("late", []))


def share(src, dst) -> None:
    """Give a repository read from the same disk the evaluator's answers of another (it reads files on disk, never a
    plan's patched text: the answers are the same)."""
    for key in ("_tfparse", "_tfparse_clock"):
        if key in src.__dict__:
            dst.__dict__[key] = src.__dict__[key]


def roots_of(repo, tf_path: str) -> list[str]:
    """The root module directories a file's module is evaluated from: its own directory, or the roots that call it
    by relative source (directly or through other modules)."""
    d = posixpath.dirname(tf_path) or "."
    out: list[str] = []
    seen = {d}
    frontier = [d]
    while frontier:
        x = frontier.pop()
        ups = [posixpath.dirname(cp) or "." for cp, _ in repo.callers(x)]
        if not ups:
            out.append(x)
        for u in ups:
            if u not in seen:
                seen.add(u)
                frontier.append(u)
    return sorted(out)


def _key(block) -> tuple[str, str]:
    """(tfparse's top-level key, the address suffix) of a block."""
    if block.type == "resource" and len(block.labels) == 2:
        return block.labels[0], ".".join(block.labels)
    if block.type == "data" and len(block.labels) == 2:
        return block.labels[0], "data." + ".".join(block.labels)
    return block.type, ".".join([block.type, *block.labels])


def instances(repo, tf_path: str, block, line: int = 0) -> list[dict] | None:
    """Every evaluated instance of a block over the root modules that evaluate it ([] : switched off everywhere,
    `count = 0` or an empty `for_each`); None when the evaluator has no answer. A block is found by its file and
    address (not its line: the evaluator reads the files on disk, a plan's second pass reads them patched)."""
    kind, suffix = _key(block)
    found: list[dict] = []
    known = False
    for root in roots_of(repo, tf_path):
        data = _load(repo, root)
        if data is None:
            continue
        rel = posixpath.relpath(tf_path, root)
        file_known = False
        for item in data.get(kind, []):
            meta = item.get("__tfmeta") or {}
            if posixpath.normpath(str(meta.get("filename", ""))) != rel:
                continue
            file_known = True
            path = _INDEX.sub("", str(meta.get("path", "")))
            if path == suffix or path.endswith("." + suffix):
                found.append(item)
        # only a file the evaluator shows blocks of can say a block is absent (a file whose every block is
        # switched off looks like a file it never read: not known), and only in a root module: a library module's
        # switches are set by callers outside the repository, its defaults say nothing
        known = known or (file_known and is_root_module(repo, root))
    return found if found or known else None


_ROOT_MARK = re.compile(r'^\s*(?:provider\s+"[^"]+"\s*\{|backend\s+"[^"]+"\s*\{|cloud\s*\{)', re.M)


def is_root_module(repo, d: str) -> bool:
    """A directory Terraform is run in: it configures a provider or a backend, or holds tfvars."""
    cache = repo.__dict__.setdefault("_root_modules", {})
    if d not in cache:
        base = repo.root / d if d != "." else repo.root
        files = sorted(base.glob("*.tf")) if base.is_dir() else []
        # tfvars beside .tf files (a folder of only tfvars is the environments of a root module elsewhere)
        cache[d] = bool(files) and (any(base.glob("*.tfvars")) or any(base.glob("*.tfvars.json")) or
                                    any(_ROOT_MARK.search(f.read_text(errors="replace")) for f in files))
    return cache[d]


def values(repo, tf_path: str, block, line: int, attr: str) -> list[Any] | None:
    """The evaluated values of one attribute over the block's instances (None: not known)."""
    got = instances(repo, tf_path, block, line)
    if got is None:
        return None
    return [i.get(attr) for i in got]
