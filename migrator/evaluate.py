"""Terraform values from a real evaluator: tfparse (Cloud Custodian, Apache-2.0; trivy's evaluator behind it).

tfparse evaluates a root module whole (variable defaults, locals, conditionals, `count`/`for_each` expansions, local
module calls) and returns every block instance with its evaluated attributes. It is given no tfvars (Terraform
loads terraform.tfvars by itself, tfparse does not): a root variable with no default is not known to it. migrator
keeps tree-sitter for spans and edits; it asks the evaluator what a block *is*: whether it exists at all (a `count = 0`,
an empty `for_each`, a module switched off), and the values of attributes written as expressions (a chart name
from a variable, one item of an add-ons list). An answer the evaluator cannot give is None: the caller keeps the
expression as it is written and never guesses.

A block of a module that root modules call by relative `source` is evaluated from each of those roots (a module's
switch is set by its caller); a block of a root module from that root.
"""
from __future__ import annotations

import atexit
import logging
import os
import posixpath
import re
import select
import subprocess
import sys
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


class _Worker:
    """One evaluator process per run (migrator/evalworker.py, a plain child process: nothing else is started beside
    it), started on the first question and started again after it dies or runs late."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None
        self.lock = threading.Lock()

    def _start(self) -> None:
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))     # the directory holding migrator/
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")])))
        self.proc = subprocess.Popen([sys.executable, "-c", "from migrator.evalworker import serve; serve()"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env=env, close_fds=True)

    def _stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(5)
            for f in (self.proc.stdin, self.proc.stdout):
                f.close()
        self.proc = None

    def _read(self, n: int, deadline: float) -> bytes | None:
        """n bytes of the answer, or None at the deadline (b"" at the end of the stream: the worker died)."""
        fd, got = self.proc.stdout.fileno(), b""
        while len(got) < n:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, n - len(got))
            if not chunk:
                return b""
            got += chunk
        return got

    def ask(self, path: str, limit: float) -> tuple[dict | None, str]:
        """(the answer, "" | "limit" | "failed")."""
        import pickle
        import struct
        with self.lock:
            if self.proc is None or self.proc.poll() is not None:
                self._start()
            deadline = time.monotonic() + max(limit, 0.0)
            try:
                self.proc.stdin.write(path.encode() + b"\n")
                self.proc.stdin.flush()
                head = self._read(8, deadline)
                body = self._read(struct.unpack(">Q", head)[0], deadline) if head else head
            except (OSError, ValueError):
                head = body = b""
            if head is None or body is None:
                self._stop()
                return None, "limit"
            if not body and not head:
                log.debug("tfparse %s: the evaluator process ended", path)
                self._stop()
                return None, "failed"
            return pickle.loads(body), ""


_WORKER = _Worker()
atexit.register(_WORKER._stop)                 # gone before migrator exits, never left behind


def _evaluate(path: str, limit: float) -> tuple[dict | None, str]:
    """(the evaluator's answer for a root module, "" or why there is none: "limit" (it ran out of time), "failed"
    (its process ended on the module)). It runs in a worker process, so neither a late answer nor a crash of the
    evaluator holds or ends the run."""
    return _WORKER.ask(path, limit)


_TF_FILES = (".tf", ".tofu", ".tf.json", ".tfvars", ".tfvars.json")


def _disk_key(repo, d: str) -> str | None:
    """The key of a root module's answer: tfparse's version, the root's folder inside the repository, and the path
    and contents of every Terraform file of the repository as the evaluator reads them, on disk (any edit, anywhere,
    is a new key; the same files in another clone or folder are the same answer, whose paths are relative). The
    files are hashed once per run, whatever the number of roots."""
    import hashlib
    if os.environ.get("MIGRATOR_EVALUATOR_CACHE", "").lower() == "off":
        return None
    digest = repo.__dict__.get("_tf_digest")
    try:
        if digest is None:
            from importlib.metadata import version
            h = hashlib.sha256(f"tfparse {version('tfparse')}\n".encode())
            for p in sorted(repo.files):
                if p.endswith(_TF_FILES):
                    h.update(f"{p}\0".encode() + hashlib.sha256((repo.root / p).read_bytes()).digest())
            digest = repo.__dict__["_tf_digest"] = h.hexdigest()
    except Exception:       # noqa: BLE001 - no key: the answer is not kept
        return None
    return hashlib.sha256(f"{digest}\n{d}".encode()).hexdigest()[:40]


def _cached(key: str | None) -> tuple[bool, dict | None]:
    """(found, answer) of a root module evaluated before with the same files (MIGRATOR_EVALUATOR_CACHE=off: never)."""
    if key is None:
        return False, None
    import json
    from .knowledge import _cache_dir
    try:
        return True, json.loads((_cache_dir() / f"tfparse-{key}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False, None


def _keep(key: str | None, out: dict | None) -> None:
    """Keep an answer for the next run over the same files (JSON, written atomically; what JSON cannot carry is not
    kept)."""
    if key is None or out is None:
        return
    import json
    import tempfile
    from .knowledge import _cache_dir
    try:
        dumped = json.dumps(out)
        if json.loads(dumped) != out:
            return
        folder = _cache_dir()
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(dumped)
        os.replace(tmp, folder / f"tfparse-{key}.json")
    except (OSError, TypeError, ValueError):
        pass


def _load(repo, d: str) -> dict | None:
    cache = repo.__dict__.setdefault("_tfparse", {})
    if d in cache:
        return cache[d]
    out = None
    if available():
        key = _disk_key(repo, d)
        found, out = _cached(key)
        if not found:                       # not evaluated before with the same files: ask the evaluator
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
                else:
                    _keep(key, out)
    cache[d] = out
    return out


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
    return roots_of_dir(repo, posixpath.dirname(tf_path) or ".")


def roots_of_dir(repo, d: str) -> list[str]:
    """The root module directories of a module folder: itself, or the roots that call it (directly or through other
    modules) by relative source."""
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
    if not found and known and _added(repo, tf_path, block):
        return None         # a plan's second pass: a block the plan adds, which the files on disk lack
    return found if found or known else None


def absent(repo, tf_path: str, block, line: int = 0) -> bool:
    """Does the evaluator say the block makes no instance (`instances(...) == []`)? Only a root module can say so
    (a library module's switches are set by its callers): where none of the module's roots is one, the answer is
    False without starting the evaluator."""
    if not from_a_root(repo, tf_path):
        return False
    return instances(repo, tf_path, block, line) == []


def from_a_root(repo, tf_path: str) -> bool:
    """Is the file's module evaluated from a root module (itself, or a root above that calls it)? Only then can the
    evaluator say what its blocks are; a library module's instances are not known."""
    return any(is_root_module(repo, r) for r in roots_of(repo, tf_path))


def _added(repo, tf_path: str, block) -> bool:
    """Is `block` one a plan added to `tf_path`, read in the plan's second pass? The evaluator read the files before
    the change: it knows nothing of such a block, and its absence from the answer says nothing."""
    based = getattr(repo, "_based_on", None)
    if based is None or tf_path not in based[1]:
        return False
    first = based[0].hcl(tf_path) if tf_path in based[0].files else None
    return first is None or not any(b.type == block.type and b.labels == block.labels for b in first.blocks)


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


_PLACEHOLDER = re.compile(r"[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}")


def unknown(v: Any) -> bool:
    """A value the evaluator could not know: None; a template it left (`${...}`); a reference it could not resolve
    (`{'__attribute__': 'var.x'}`); or the id it makes up for a computed attribute (`aws_iam_role.r.arn` and `.id`
    come back as the block's own uuid: no provider is asked)."""
    if v is None:
        return True
    if isinstance(v, str):
        return "${" in v or _PLACEHOLDER.fullmatch(v) is not None
    return isinstance(v, dict) and "__attribute__" in v


def values(repo, tf_path: str, block, line: int, attr: str) -> list[Any] | None:
    """The evaluated values of one attribute over the block's instances (None: not known)."""
    got = instances(repo, tf_path, block, line)
    if got is None:
        return None
    return [i.get(attr) for i in got]


# -- what the evaluator can answer ------------------------------------------------------------------------------------

_READS = re.compile(r"\b(var|local)\.([A-Za-z_][\w-]*)|\bmodule\.([A-Za-z_][\w-]*)\.([A-Za-z_][\w-]*)")
# an expression that can stand without one of its parts (a condition's other branch, a fallback)
_CHOOSES = re.compile(r"\?|\b(?:try|can|coalesce|coalescelist|lookup)\s*\(")
# what no evaluation has: a remote state's outputs (never fetched) and a resource's or data source's computed `arn`
# or `id` (made up: unknown)
_COMPUTED = re.compile(r"\bdata\.terraform_remote_state\.[\w-]+(?:\[[^\]]*\])?\.outputs\b"
                       r"|(?<![\w.])(?:data\.)?[a-z][a-z0-9]*_[a-z0-9_]*\.[\w-]+(?:\[[^\]]*\])?\.(?:arn|id)\b")


def can_answer(repo, d: str, source: str, depth: int = 0) -> bool:
    """Could the evaluator give an expression of module folder `d` a value? False only where it provably cannot:
    the expression needs a value no evaluation has. That is a remote state's outputs or a resource's computed `arn`
    or `id`; a root module's variable with no default (tfparse reads no tfvars: a terraform.tfvars beside it gives
    the evaluator nothing) and no caller giving it; an output of a module the repository does not hold (the
    evaluator downloads nothing); or a local or caller's argument made of those. Anything else (a resource's
    attribute, a function over what it knows, a condition) may be answered, and is asked."""
    if depth > 8 or _CHOOSES.search(source):
        return True
    if _COMPUTED.search(source):
        return False
    d = d or "."
    for m in _READS.finditer(source):
        kind, name, mod, out = m.groups()
        if mod is not None:
            known = _module_output(repo, d, mod, out, depth)
        elif kind == "local":
            known = True
            for _, lb in repo.blocks_in(d, "locals"):
                if lb.attr(name) is not None:
                    known = can_answer(repo, d, lb.attr(name).source, depth + 1)
        else:
            known = _variable(repo, d, name, depth)
        if not known:
            return False
    return True


def _variable(repo, d: str, name: str, depth: int) -> bool:
    decl = [b for _, b in repo.blocks_in(d, "variable", name)]
    if len(decl) > 1:
        return False                        # declared twice: Terraform rejects the module, the evaluator leaves it
    if not decl:
        return True                         # not declared here: not judged
    default = decl[0].attr("default")
    own = default is not None and default.kind != "null"        # a value of its own where nothing passes one
    callers = repo.callers(d)
    if not callers:                         # a root: only its tfvars could give it more, and the evaluator is given none
        return own
    return any(can_answer(repo, posixpath.dirname(cp) or ".", cb.attr(name).source, depth + 1)
               if cb.attr(name) is not None else own for cp, cb in callers)


def _module_output(repo, d: str, mod: str, out: str, depth: int) -> bool:
    calls = [b for _, b in repo.blocks_in(d, "module", mod)]
    if len(calls) != 1 or calls[0].attr("source") is None:
        return True
    src = calls[0].attr("source").literal()
    if not isinstance(src, str):
        return True
    if not src.startswith(("./", "../")):   # the evaluator reads only what is on disk: a downloaded module is not
        return (repo.root / d / ".terraform").exists()
    child = posixpath.normpath(posixpath.join(d, src))
    outputs = [b for _, b in repo.blocks_in(child, "output", out)]
    if len(outputs) != 1 or outputs[0].attr("value") is None:
        return True
    return can_answer(repo, child, outputs[0].attr("value").source, depth + 1)
