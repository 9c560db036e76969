"""Terragrunt units: a `terragrunt.hcl` whose `terraform { source }` names a module, and whose `inputs` (with the
`include`d files' inputs, `locals`, `read_terragrunt_config` of shared `.hcl` files and `dependency` outputs) set that
module's variables. Each value is evaluated with the place it is written, so an edit lands in the unit's `inputs`, the
shared `.hcl` or the values file, never in a downloaded module copy.

Only what Terragrunt would compute without running anything is evaluated: literals, objects and lists, `local.*`,
`include.*`, `dependency.*` (unknown, or its `mock_outputs`), string templates, and the functions that locate files
(`find_in_parent_folders`, `get_terragrunt_dir`, `get_parent_terragrunt_dir`, `get_repo_root`, `dirname`,
`read_terragrunt_config`, `merge`, `try`, `lookup`, `coalesce`). Anything else is unknown, never guessed.
"""
from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from typing import Any, Iterator

from ..sources import hcl as hclsrc
from .repo import Repo

UNIT_FILE = "terragrunt.hcl"
STACK_FILE = "terragrunt.stack.hcl"


class _Unknown:
    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN = _Unknown()


@dataclass
class Val:
    """An evaluated value and where it is written (the literal to edit, when it is one)."""
    value: Any                          # str | int | float | bool | None | dict[str, Val] | list[Val] | UNKNOWN | Call
    path: str | None = None
    expr: hclsrc.Expr | None = None

    def plain(self) -> Any:
        if isinstance(self.value, dict):
            return {k: v.plain() for k, v in self.value.items()}
        if isinstance(self.value, list):
            return [v.plain() for v in self.value]
        return self.value

    @property
    def literal(self) -> bool:
        """Is it a string written as one literal (an edit site)?"""
        return self.expr is not None and self.expr.kind == "string" and self.expr.value is not None


@dataclass
class Call:
    """A function whose result is not a value migrator computes (`file()`, `templatefile()`, `yamlencode()`): kept as
    the expression, in its file, for the readers that know it (a chart values file)."""
    name: str


@dataclass
class Unit:
    path: str                           # the unit's terragrunt.hcl
    source: Val | None                  # terraform.source as evaluated
    inputs: dict[str, Val]              # read lazily (`_Inputs`)
    dependencies: list[str] = field(default_factory=list)    # directories of the `dependency` blocks
    includes: list[str] = field(default_factory=list)        # files the unit includes
    var_files: list[str] = field(default_factory=list)       # -var-file of `extra_arguments` that exist
    at: str | None = None               # a stack's unit: the folder Terragrunt generates it in (path is the stack file)
    own: str | None = None              # a stack's unit: its `unit` block and its catalog file (what it says itself)
    line: int | None = None             # a stack's unit: the line of its `unit` block in the stack file

    @property
    def dir(self) -> str:
        return self.at or posixpath.dirname(self.path) or "."

    @property
    def home(self) -> str:
        """The folder of the file that declares the unit: a stack's unit is its stack's (one cluster's units)."""
        return posixpath.dirname(self.path) or "."

    @property
    def module_dir(self) -> str | None:
        """The repository folder of a local `terraform.source` (`../../modules//helm`, `${get_repo_root()}/x`);
        worked out once per folder the unit stands in (asked tens of thousands of times in a large live tree)."""
        got = self.__dict__.get("_module_dir")
        if got is not None and got[0] == self.at:
            return got[1]
        src = self.source.value if self.source is not None else None
        md = None
        if isinstance(src, str) and not _REMOTE.match(src):
            if src.startswith("//"):        # `${get_repo_root()}/modules/x`: the root is "/", not a `//` subfolder
                src = src[1:]
            left, _, sub = src.partition("//")
            left = left.split("?", 1)[0]
            md = repo_path(self.dir, posixpath.join(left, sub.strip("/")))
        self.__dict__["_module_dir"] = (self.at, md)
        return md

    @property
    def remote(self) -> str | None:
        """A `terraform.source` outside the repository (registry, git, http)."""
        got = self.__dict__.get("_remote")
        if got is None:
            src = self.source.value if self.source is not None else None
            got = self.__dict__["_remote"] = (src if isinstance(src, str) and _REMOTE.match(src) else None,)
        return got[0]


def repo_path(base: str, p: str) -> str | None:
    """A path as a unit writes it (relative to the unit's folder, or absolute from a function below: `/` is the
    repository's root) as a repository path; None outside the repository."""
    full = posixpath.normpath(p if p.startswith("/") else posixpath.join(_abs(base), p))
    if not p.startswith("/") and posixpath.normpath(posixpath.join(base, p)).startswith(".."):
        return None
    return full.lstrip("/") or "."


def _abs(d: str) -> str:
    """A repository folder as the functions return it (absolute, `/` the repository's root)."""
    return "/" + d if d not in (".", "") else "/"


_REMOTE = re.compile(r"^(tfr:|git::|git@|github\.com/|bitbucket\.org/|https?://|s3::|gcs::|hg::|[\w.-]+\.\w+/[\w-]+/)")
def names_the_move(text: str) -> bool:
    """Does a text name Karpenter or Cluster Autoscaler?"""
    low = text.lower()
    return "karpenter" in low or "autoscaler" in low


_REF_PART = re.compile(r'\.([A-Za-z_][\w-]*)|\[\s*"([^"]*)"\s*\]|\[\s*(\d+)\s*\]')


class _Config:
    """One Terragrunt configuration file, evaluated for a unit: functions see the unit's directory (as Terragrunt
    evaluates an included file), `read_terragrunt_config` files see their own."""

    def __init__(self, tg: "Terragrunt", path: str, unit_dir: str, parent: str | None = None,
                 origin: str | None = None, values: Val | None = None):
        self.tg, self.path, self.unit_dir, self.parent = tg, path, unit_dir, parent
        self.values = values                    # a stack's unit: the `values` its `unit` block gives (`values.x`)
        self.origin = origin or unit_dir        # the unit whose evaluation reads this file (get_original_terragrunt_dir)
        self.file = tg.repo.hcl(path)
        self._locals: dict[str, Val] = {}
        self._busy: set[str] = set()
        self._includes: dict[str, _Config] | None = None

    def block(self, type_: str) -> list[hclsrc.Block]:
        return [b for b in (self.file.blocks if self.file else []) if b.type == type_]

    # -- the names a file may use -----------------------------------------------------------------------------------
    def local(self, name: str) -> Val:
        if name in self._locals:
            return self._locals[name]
        if name in self._busy:
            return Val(UNKNOWN)
        self._busy.add(name)
        got = Val(UNKNOWN)
        for b in self.block("locals"):
            e = b.attr(name)
            if e is not None:
                got = self.eval(e)
        self._busy.discard(name)
        self._locals[name] = got
        return got

    def includes(self) -> dict[str, "_Config"]:
        if self._includes is None:
            self._includes = {}
            for b in self.block("include"):
                p = b.attr("path")
                target = self.eval(p).value if p is not None else None
                target = repo_path(self.unit_dir, target) if isinstance(target, str) else None
                if target in self.tg.repo.files:
                    self._includes[b.labels[0] if b.labels else ""] = \
                        _Config(self.tg, target, self.unit_dir, parent=posixpath.dirname(target) or ".",
                                origin=self.origin)
        return self._includes

    def dependency(self, name: str) -> Val:
        """`dependency.<name>`: its `outputs` are what the other unit's module outputs when that is written in the
        repository (an output of a resource attribute or variable the unit sets), else its `mock_outputs`."""
        for b in self.block("dependency"):
            if b.labels[:1] == [name]:
                cp = b.attr("config_path")
                target = self.eval(cp).value if cp is not None else None
                where = repo_path(self.unit_dir, target) if isinstance(target, str) else None
                mock = b.attr("mock_outputs")
                outs = self.eval(mock) if mock is not None else Val(UNKNOWN)
                return Val({"outputs": Val(_Outputs(self.tg, where, outs))})
        return Val(UNKNOWN)

    def as_object(self) -> Val:
        """What `read_terragrunt_config` returns: locals, inputs and the other attributes of the file."""
        out: dict[str, Val] = {}
        names = [n for b in self.block("locals") for n in b.attributes]
        out["locals"] = Val({n: self.local(n) for n in names})
        for n, a in (self.file.attributes.items() if self.file else []):
            out[n] = self.eval(a.expr)
        return Val(out)

    # -- evaluation -------------------------------------------------------------------------------------------------
    def eval(self, e: hclsrc.Expr) -> Val:
        k = e.kind
        if k in ("number", "bool"):
            return Val(e.value, self.path, e)
        if k == "null":
            return Val(None, self.path, e)
        if k == "string":
            if e.value is not None:
                return Val(e.value, self.path, e)
            out = []
            for interp, text in e.parts:
                if not interp:
                    out.append(hclsrc._unescape(text))
                    continue
                v = self.eval_source(text[2:-1])
                if not isinstance(v.value, (str, int, float)) or isinstance(v.value, bool):
                    return Val(UNKNOWN, self.path, e)
                out.append(str(v.value))
            return Val("".join(out), self.path, e)
        if k == "tuple":
            return Val([self.eval(i) for i in e.items], self.path, e)
        if k == "object":
            return Val({en.key: self.eval(en.value) for en in e.entries}, self.path, e)
        if k == "ref":
            return self.ref(e.name, e)
        if k == "call":
            return self.call(e)
        if k == "heredoc":
            return Val(Call("heredoc"), self.path, e)
        return Val(UNKNOWN, self.path, e)

    def eval_source(self, src: str) -> Val:
        try:
            f = hclsrc.parse(f"x = {src.strip()}\n")
        except hclsrc.HclParseError:
            return Val(UNKNOWN)
        a = f.attributes.get("x")
        if a is None or a.expr.kind == "string" and a.expr.value is None:
            return Val(UNKNOWN)
        got = self.eval(a.expr)
        return Val(got.value) if got.path == self.path and got.expr is a.expr else got

    def ref(self, name: str, e: hclsrc.Expr | None = None) -> Val:
        got = self._ref(name)
        if isinstance(got.value, _Outputs):
            return Val(UNKNOWN)
        return got

    def _ref(self, name: str) -> Val:
        head, _, rest = name.partition(".")
        parts = [m.group(1) or m.group(2) or (int(m.group(3)) if m.group(3) else None)
                 for m in _REF_PART.finditer("." + rest)] if rest else []
        if not parts:
            return Val(UNKNOWN)
        if head == "local":
            v = self.local(str(parts[0]))
        elif head == "include":
            inc = self.includes().get(str(parts[0]))
            if inc is None or len(parts) < 2:
                return Val(UNKNOWN)
            v = inc.as_object().value.get(str(parts[1]), Val(UNKNOWN))
            parts = parts[1:]
        elif head == "dependency":
            v = self.dependency(str(parts[0]))
        elif head == "values" and self.values is not None and isinstance(self.values.value, dict):
            v = self.values.value.get(str(parts[0]), Val(UNKNOWN))
        else:
            return Val(UNKNOWN)
        for p in parts[1:]:
            if isinstance(v.value, _Outputs) and isinstance(p, str):
                v = v.value.get(p)
            elif isinstance(v.value, dict) and isinstance(p, str):
                v = v.value.get(p, Val(UNKNOWN))
            elif isinstance(v.value, list) and isinstance(p, int) and p < len(v.value):
                v = v.value[p]
            else:
                return Val(UNKNOWN)
        return v

    def call(self, e: hclsrc.Expr) -> Val:
        name, args = e.name, e.items
        vals = lambda: [self.eval(a) for a in args]      # noqa: E731
        if name == "find_in_parent_folders":
            a = vals()
            want = a[0].value if a else UNIT_FILE
            if not isinstance(want, str):
                return Val(UNKNOWN)
            got = self.tg.find_up(self.unit_dir, want)
            if got is None and len(a) > 1:
                return Val(a[1].value)
            return Val(_abs(got) if got is not None else UNKNOWN)
        if name == "get_terragrunt_dir":            # an included file: the unit's folder; a read one: its own
            return Val(_abs(self.unit_dir))
        if name == "get_original_terragrunt_dir":   # the unit's folder, wherever the file is read from
            return Val(_abs(self.origin))
        if name == "get_parent_terragrunt_dir":
            return Val(_abs(self.parent or self.unit_dir))
        if name == "get_repo_root":
            return Val("/")
        if name == "get_path_to_repo_root":
            return Val(posixpath.relpath(".", self.unit_dir) if self.unit_dir != "." else ".")
        if name == "path_relative_to_include":
            return Val(posixpath.relpath(self.unit_dir, self.parent) if self.parent else ".")
        if name in ("dirname", "basename") and args:
            v = self.eval(args[0]).value
            if not isinstance(v, str):
                return Val(UNKNOWN)
            return Val((posixpath.dirname(v) or ".") if name == "dirname" else posixpath.basename(v))
        if name == "read_terragrunt_config" and args:
            p = self.eval(args[0]).value
            p = repo_path(self.unit_dir, p) if isinstance(p, str) else None
            if p is None or p not in self.tg.repo.files or self.tg.repo.hcl(p) is None:
                return Val(UNKNOWN) if len(args) < 2 else self.eval(args[1])
            return self.tg.config(p, posixpath.dirname(p) or ".", origin=self.origin).as_object()
        if name == "merge":
            out: dict[str, Val] = {}
            for v in vals():
                if not isinstance(v.value, dict):
                    return Val(UNKNOWN)
                out.update(v.value)
            return Val(out)
        if name in ("try", "coalesce"):
            for v in vals():
                if v.value is not UNKNOWN and not (name == "coalesce" and v.value in (None, "")):
                    return v
            return Val(UNKNOWN)
        if name == "lookup" and len(args) >= 2:
            m, k = self.eval(args[0]), self.eval(args[1]).value
            if isinstance(m.value, dict) and isinstance(k, str) and k in m.value:
                return m.value[k]
            return self.eval(args[2]) if len(args) > 2 else Val(UNKNOWN)
        if name in ("file", "templatefile", "yamlencode", "jsonencode"):
            return Val(Call(name), self.path, e)
        return Val(UNKNOWN, self.path, e)


class _Inputs(dict):
    """A unit's inputs: each evaluated the first time it is read (a dependency's outputs are read only when used)."""

    def __init__(self):
        super().__init__()
        self._raw: dict[str, tuple] = {}

    def later(self, key: str, cfg: "_Config", e: hclsrc.Expr) -> None:
        self._raw[key] = (cfg, e)
        super().__setitem__(key, None)

    def __getitem__(self, key: str) -> Val:
        v = super().__getitem__(key)
        if v is None and key in self._raw:
            cfg, e = self._raw.pop(key)
            v = cfg.eval(e)
            super().__setitem__(key, v)
        return v

    def get(self, key: str, default=None):
        return self[key] if key in self else default

    def items(self):
        return [(k, self[k]) for k in self]

    def values(self):
        return [self[k] for k in self]

    def update(self, other) -> None:
        for k, v in dict(other).items():
            self._raw.pop(k, None)
            super().__setitem__(k, v)


class _Outputs:
    """The outputs of a dependency: read from the unit's module where written, else its mock outputs."""

    def __init__(self, tg: "Terragrunt", where: str | None, mock: Val):
        self.tg, self.where, self.mock = tg, where, mock

    def get(self, name: str) -> Val:
        unit = self.tg.unit_at(self.where)
        if unit is not None:
            got = unit_output(self.tg.repo, unit, name)
            if got.value is not UNKNOWN:
                return got
        return self.mock.value.get(name, Val(UNKNOWN)) if isinstance(self.mock.value, dict) else Val(UNKNOWN)


class Terragrunt:
    """The Terragrunt units of a repository (read once per run)."""

    def __init__(self, repo: Repo):
        self.repo = repo
        self._configs: dict[tuple[str, str], _Config] = {}
        self._read: dict[str, Unit | None] = {}
        self.every: dict[str, list[Unit]] = {}      # module folder -> every unit applying it (callers(every=True))
        self.unit_files = sorted(repo.named(UNIT_FILE))
        self.generated: dict[str, Unit] = {}        # a stack's unit, by the folder Terragrunt generates it in
        self.templates: set[str] = set()            # catalog unit files stacks generate their units from
        self._stacks_whole: dict[str, list[str]] = {}   # stack files whose units were read, but those not evaluated yet
        self._later: dict[str, tuple] = {}          # stack units not evaluated yet, by their generated folder
        self._names: dict[str, bool] = {}           # _names_the_move, by file
        stacked = self._stack_units()
        # only units that name what migrator reads are evaluated (a live tree of a thousand units stays fast)
        self.units: list[Unit] = [u for u in (self.unit_at(posixpath.dirname(p) or ".") for p in self.unit_files
                                              if names_the_move(repo.text(p)))
                                  if u is not None] + stacked

    def _stack_units(self) -> list[Unit]:
        """The units of every `terragrunt.stack.hcl` whose `source` is a unit folder of the repository: that folder's
        terragrunt.hcl evaluated in the folder Terragrunt generates (`.terragrunt-stack/<path>`), its `values.x` the
        stack's `values` (edited in the stack file, where they are written). A unit from outside the repository (a
        git catalog) leaves its stack unread."""
        out: list[Unit] = []
        for p in sorted(self.repo.named(STACK_FILE)):
            d = posixpath.dirname(p) or "."
            cfg = self.config(p, d)
            if cfg.file is None:
                continue
            mine, later = [], []
            whole = not cfg.block("stack")          # a nested stack is not read: the file stays unread
            for b in cfg.block("unit"):
                src = cfg.eval(b.attr("source")).value if b.attr("source") is not None else None
                sub = cfg.eval(b.attr("path")).value if b.attr("path") is not None else None
                home = repo_path(d, src) if isinstance(src, str) and not _REMOTE.match(src) else None
                file = posixpath.normpath(posixpath.join(home, UNIT_FILE)) if home is not None else None
                if file not in self.repo.files or not isinstance(sub, str):
                    whole = False
                    self._unread_unit(p, b, src)
                    continue
                at = posixpath.normpath(posixpath.join(d, ".terragrunt-stack", sub))
                self.templates.add(file)        # a catalog unit: applied through its stacks, never on its own
                if not (names_the_move(self.repo.text(p)[b.start:b.end]) or self._names_the_move(file)):
                    # a unit naming neither Karpenter nor an autoscaler is evaluated (and its catalog file parsed)
                    # only when asked for: by a dependency (unit_at), or to know whether its stack was read whole
                    # (stack_read: a catalog file that does not parse leaves it unread, as here)
                    self._later[at] = (p, d, b, file)
                    later.append(at)
                    continue
                if self.repo.hcl(file) is None:
                    whole = False
                    self._unread_unit(p, b, src)
                    continue
                unit = self._stack_unit(p, d, b, file)
                if unit is None:
                    whole = False
                    continue
                mine.append(unit)
            for b in cfg.block("stack"):
                self._unread_unit(p, b, cfg.eval(b.attr("source")).value if b.attr("source") is not None else None)
            out += mine
            if whole:
                self._stacks_whole[p] = later
        return out

    def _names_the_move(self, path: str) -> bool:
        """names_the_move of a file's whole text, once per file (a catalog unit is the source of many stacks' units)."""
        got = self._names.get(path)
        if got is None:
            got = self._names[path] = names_the_move(self.repo.text(path))
        return got

    @property
    def stacks_read(self) -> set[str]:
        """The stack files whose every unit was read (each unit not evaluated yet is, on the first question)."""
        return {p for p in self._stacks_whole if self.stack_read(p)}

    def stack_read(self, p: str) -> bool:
        """Was every unit of stack file `p` read? Its units not evaluated yet are, on this question (for this stack
        only)."""
        later = self._stacks_whole.get(p)
        return later is not None and all(
            self.generated.get(at) is not None or at in self._later and self._stack_unit(*self._later[at]) is not None
            for at in later)

    def _stack_unit(self, p: str, d: str, b: hclsrc.Block, file: str) -> Unit | None:
        """The unit a stack's `unit` block generates in `.terragrunt-stack/<path>`: its catalog file evaluated there
        with the block's `values` (once)."""
        cfg = self.config(p, d)
        at = posixpath.normpath(posixpath.join(d, ".terragrunt-stack", cfg.eval(b.attr("path")).value))
        if at in self.generated:
            return self.generated[at]
        given = cfg.eval(b.attr("values")) if b.attr("values") is not None else Val({})
        ucfg = self._configs[(file, at, at)] = _Config(self, file, at, origin=at, values=given)
        unit = self._unit_of(ucfg, at, p)
        if unit is not None:
            unit.at, unit.own = at, self.repo.text(p)[b.start:b.end] + "\n" + self.repo.text(file)
            unit.line = hclsrc.line_of(self.repo.text(p), b.start)
            self.generated[at] = unit
        self._later.pop(at, None)
        return unit

    def _unread_unit(self, p: str, b: hclsrc.Block, src) -> None:
        """A stack's unit (or nested stack) migrator cannot read: said where it names the move, never skipped."""
        from ..model import Finding
        text = self.repo.text(p)
        if not names_the_move(text[b.start:b.end]):
            return
        where = f"{src}, outside the repository" if isinstance(src, str) and _REMOTE.match(src) else \
            f"{src}, which holds no terragrunt.hcl migrator can read" if isinstance(src, str) else \
            "a source migrator cannot evaluate"
        label = b.labels[0] if b.labels else "?"
        self.repo.findings.append(Finding(
            "MIG-SRC-020", "warning", p, hclsrc.line_of(text, b.start),
            f"{b.type} {label} of the Terragrunt stack {p} comes from {where}: what it installs is not read, so this "
            "stack's cluster is not planned from it",
            "vendor the unit into the repository (a catalog folder the stack's `source` names), or state the chart "
            "version for this cluster (chart_version in .migrator.yaml, under roots:) and check its inputs by hand"))

    def config(self, path: str, unit_dir: str, origin: str | None = None) -> _Config:
        key = (path, unit_dir, origin or unit_dir)
        if key not in self._configs:
            self._configs[key] = _Config(self, path, unit_dir, origin=origin)
        return self._configs[key]

    def find_up(self, start: str, name: str) -> str | None:
        """find_in_parent_folders: the nearest `name` in a folder above `start` (a path as written may hold folders)."""
        d = start
        while d not in (".", ""):
            d = posixpath.dirname(d) or "."
            p = posixpath.normpath(posixpath.join(d, name))
            if p in self.repo.files:
                return p
        return None

    def _unit(self, p: str) -> Unit | None:
        d = posixpath.dirname(p) or "."
        return self._unit_of(self.config(p, d), d, p)

    def _unit_of(self, cfg: _Config, d: str, p: str) -> Unit | None:
        """The unit a configuration evaluated in folder d stands for (p: the file it is reported at)."""
        if cfg.file is None:
            return None
        chain = [cfg, *cfg.includes().values()]
        source = None
        for c in chain:                         # the unit's own terraform block wins over an included one
            for b in c.block("terraform"):
                s = b.attr("source")
                if s is not None and source is None:
                    source = c.eval(s)
        if source is None:
            return None                         # a parent configuration, not a unit
        inputs = _Inputs()
        for c in reversed(chain):              # included inputs first, the unit's own override them
            a = c.file.attributes.get("inputs") if c.file else None
            if a is not None and a.expr.kind == "object":   # evaluated when asked for (dependencies read lazily)
                for en in a.expr.entries:
                    inputs.later(en.key, c, en.value)
                continue
            got = c.eval(a.expr) if a is not None else Val(UNKNOWN)
            if isinstance(got.value, dict):
                inputs.update(got.value)
        deps = []
        for c in chain:
            for b in c.block("dependency"):
                cp = b.attr("config_path")
                v = c.eval(cp).value if cp is not None else None
                dep = repo_path(d, v) if isinstance(v, str) else None
                if dep is not None:
                    deps.append(dep)
        var_files = []
        for c in chain:
            for t in c.block("terraform"):
                for xa in t.sub("extra_arguments"):
                    for key in ("required_var_files", "optional_var_files"):
                        lst = c.eval(xa.attr(key)) if xa.attr(key) is not None else Val(None)
                        for v in lst.value if isinstance(lst.value, list) else []:
                            f = repo_path(d, v.value) if isinstance(v.value, str) else None
                            if f in self.repo.files:
                                var_files.append(f)
        return Unit(p, source, inputs, deps, [c.path for c in chain[1:]], var_files)

    def unit_at(self, d: str | None) -> Unit | None:
        """The unit of a folder (a dependency's `config_path`), read on demand."""
        if d is None:
            return None
        if d in self.generated:
            return self.generated[d]
        if d in self._later:
            return self._stack_unit(*self._later[d])
        p = posixpath.normpath(posixpath.join(d, UNIT_FILE))
        if p not in self.repo.files or p in self.templates:
            return None             # (a stack's unit template is evaluated only with the stack's values)
        if p not in self._read:
            self._read[p] = None                    # a dependency cycle reads as unknown
            self._read[p] = self._unit(p)
        return self._read[p]

    def callers(self, module_dir: str) -> list[Unit]:
        """The units applying a module folder, from an index of the units by folder (built once: every rule of every
        root asks, thousands of times in a live tree)."""
        index = self.__dict__.get("_by_module_dir")
        if index is None:
            index = self.__dict__["_by_module_dir"] = {}
            for u in self.units:
                index.setdefault(u.module_dir, []).append(u)
        return list(index.get(module_dir, ()))


REGION_INPUTS = ("region", "aws_region")


def region_of(repo: Repo, unit: Unit) -> tuple[str, str] | None:
    """(region, where it is written) of a unit: its `region` / `aws_region` input, else the var files Terragrunt
    passes it (`extra_arguments`)."""
    for k in REGION_INPUTS:
        v = unit.inputs.get(k)
        if v is not None and isinstance(v.value, str) and v.path:
            return v.value, f"input {k} of terragrunt unit {unit.dir} ({v.path})"
    for f in reversed(unit.var_files):           # a later -var-file wins
        hf = repo.hcl(f)
        for k in REGION_INPUTS:
            a = hf.attributes.get(k) if hf is not None else None
            if a is not None and isinstance(a.expr.literal(), str):
                return a.expr.literal(), f"{k} in {f}, a var file of terragrunt unit {unit.dir}"
    return None


def callers(repo: Repo, module_dir: str, every: bool = False) -> list[Unit]:
    """The units whose `terraform.source` is this folder of the repository (of those that name what migrator reads;
    with `every`, where none does, any unit whose file names the folder: the cluster's unit a runbook applies)."""
    found = terragrunt(repo).callers(module_dir) if _any_units(repo) else []
    if found or not every or not getattr(repo, "_has_units", False):
        return found
    tg, base = terragrunt(repo), posixpath.basename(module_dir)
    if module_dir not in tg.every:              # asked again and again (roots, providers, runbook): read once
        # a source ending in the folder's name names it: the name before a quote, `?ref=`, `//subdir`, `${`, a
        # trailing slash or the line's end (`terraform {`, a path through the folder, do not: every unit of a live
        # tree holds `terraform`, and each one evaluated costs a parse)
        ends = re.compile(re.escape(base) + r"""(?:/*["'?$]|//|/*\s*$)""", re.M)
        tg.every[module_dir] = [u for u in (tg.unit_at(posixpath.dirname(p) or ".") for p in tg.unit_files
                                            if base in repo.text(p) and ends.search(repo.text(p)))
                                if u is not None and u.module_dir == module_dir]
    return list(tg.every[module_dir])


def output_readers(repo: Repo, module_dir: str, output: str) -> list[str]:
    """The unit files that read this output of a module folder through a `dependency` on a unit of it
    (`dependency.eks.outputs.<output>` in their inputs): another state, which removing the output would break."""
    pat = re.compile(rf"\bdependency\.([\w-]+)\.outputs\.{re.escape(output)}\b")
    out = []
    for p in sorted(repo.files):
        if posixpath.basename(p) != UNIT_FILE or output not in repo.text(p):
            continue
        f = repo.hcl(p)
        for m in pat.finditer(repo.text(p)):
            dep = next((b for b in (f.blocks if f is not None else []) if b.type == "dependency"
                        and b.labels == [m.group(1)]), None)
            cp = dep.attr("config_path").literal() if dep is not None and dep.attr("config_path") is not None else None
            unit = terragrunt(repo).unit_at(posixpath.normpath(posixpath.join(posixpath.dirname(p), cp))) \
                if isinstance(cp, str) else None
            if unit is not None and unit.module_dir == module_dir:
                out.append(p)
                break
    return out


def cluster_dirs(units_: list[Unit]) -> dict[str, str]:
    """unit folder -> the folder of its cluster: where the unit and the units it depends on (eks, its IAM, its
    instance profile) meet, so one cluster's units are one root; a unit whose dependencies meet above another
    installing unit stays its own."""
    mine = {u.dir for u in units_}
    out = {}
    for u in units_:
        deps = [d for d in u.dependencies if d != u.dir]
        common = posixpath.commonpath([u.dir, *deps]) if deps and "." not in (u.dir, *deps) else u.dir
        common = common or "."
        if any(o != u.dir and (common == "." or o == common or o.startswith(common + "/")) for o in mine):
            common = u.dir
        out[u.dir] = common
    return out


def terragrunt(repo: Repo) -> Terragrunt:
    """The repository's Terragrunt units, read once per run."""
    got = getattr(repo, "_terragrunt", None)
    if got is None:
        got = repo._terragrunt = Terragrunt(repo)
    return got


def _any_units(repo: Repo) -> bool:
    """Does the repository hold a terragrunt.hcl or a terragrunt.stack.hcl (asked once)?"""
    has = getattr(repo, "_has_units", None)
    if has is None:
        has = repo._has_units = bool(repo.named(UNIT_FILE) or repo.named(STACK_FILE))     # (the files by name)
    return has


def units(repo: Repo) -> Iterator[Unit]:
    """The repository's Terragrunt units that name what migrator reads (none without a terragrunt.hcl)."""
    return iter(terragrunt(repo).units) if _any_units(repo) else iter(())


# -- the charts a unit installs through a module of the repository -------------------------------------------------

def module_value(repo: Repo, unit: Unit, mp: str, e: hclsrc.Expr | None) -> Val:
    """An attribute of a resource in the unit's module, with the unit's inputs for its variables: a literal, `var.x`
    (the input, else the variable's default), else unknown."""
    if e is None:
        return Val(None)
    if e.literal() is not None or e.kind == "null":
        return Val(e.literal(), mp, e)
    m = re.fullmatch(r"\s*var\.([A-Za-z_][\w-]*)\s*", e.source)
    if m is None:
        return Val(UNKNOWN, mp, e)
    if m.group(1) in unit.inputs:
        return unit.inputs[m.group(1)]
    for tp in repo.tf_in_dir(unit.module_dir or ""):
        f = repo.hcl(tp) if m.group(1) in repo.text(tp) else None
        for b in f.blocks if f else []:
            if b.type == "variable" and b.labels == [m.group(1)]:
                d = b.attr("default")
                return Val(d.literal() if d is not None else None, tp, d) if d is not None and \
                    (d.literal() is not None or d.kind == "null") else Val(UNKNOWN, tp, d)
    return Val(UNKNOWN, mp, e)


_RESOURCE_ATTR = re.compile(r"^\s*([A-Za-z_][\w-]*)\.([A-Za-z_][\w-]*)\.([A-Za-z_][\w-]*)\s*$")


def unit_output(repo: Repo, unit: Unit, name: str) -> Val:
    """An output of the unit's local module, when it is a variable or an attribute of one of the module's resources
    (`aws_iam_instance_profile.this.name` = its `name`, with the unit's inputs)."""
    md = unit.module_dir
    for tp in repo.tf_in_dir(md) if md is not None else []:
        f = repo.hcl(tp) if f'output "{name}"' in repo.text(tp) else None
        for b in f.blocks if f else []:
            if b.type != "output" or b.labels != [name] or b.attr("value") is None:
                continue
            e = b.attr("value")
            m = _RESOURCE_ATTR.match(e.source)
            if m is None or m.group(1) in ("var", "local", "module", "data"):
                return module_value(repo, unit, tp, e)
            for rp in repo.tf_in_dir(md):
                rf = repo.hcl(rp) if m.group(1) in repo.text(rp) else None
                for r in rf.blocks if rf else []:
                    if r.type == "resource" and r.labels == [m.group(1), m.group(2)] and r.attr("count") is None:
                        return module_value(repo, unit, rp, r.attr(m.group(3)))
    return Val(UNKNOWN)


_SWITCH = re.compile(r"^\s*(var\.[A-Za-z_][\w-]*)\s*\?\s*1\s*:\s*0\s*$")


def switched_off(repo: Repo, unit: Unit, mp: str, b: hclsrc.Block) -> bool:
    """`count = 0`, or `count = var.x ? 1 : 0` with the input (else the default) false."""
    c = b.attr("count")
    if c is None:
        return False
    if c.literal() is not None:
        return c.literal() == 0
    m = _SWITCH.match(c.source)
    if m is None:
        return False
    got = module_value(repo, unit, mp, hclsrc.Expr("ref", c.start, c.end, m.group(1), name=m.group(1)))
    return got.value is False


def scan(repo: Repo) -> Iterator:
    """The karpenter charts each unit installs through a `helm_release` of its local module (a generic helm module
    that every add-on unit calls with its own `chart_name`, `chart_version` and values)."""
    from ..model import Finding
    from .charts import ChartInstall, ValuesSource, _chart_name
    from .charts import _values_item
    for u in units(repo):
        md = u.module_dir
        if md is None:
            if u.remote is not None and not _read_remotely(u.remote) and \
                    re.search(r"karpenter", u.own or repo.text(u.path), re.I):   # (units naming only Cluster Autoscaler too)
                _remote(repo, u)
            continue
        if not repo.tf_in_dir(md) and re.search(r"karpenter", u.own or repo.text(u.path), re.I):
            _missing(repo, u, md)
            continue
        for mp in repo.tf_in_dir(md):
            f = repo.hcl(mp) if "helm_release" in repo.text(mp) else None
            for b in f.blocks if f else []:
                if b.type != "resource" or b.labels[:1] != ["helm_release"] or b.attr("for_each") is not None:
                    continue
                if b.attr("chart") is not None and isinstance(b.attr("chart").literal(), str):
                    continue        # the module's own chart: the Terraform reader has it, its callers are the units
                chart = module_value(repo, u, mp, b.attr("chart"))
                name = _chart_name(chart.value) if isinstance(chart.value, str) else None
                if name is None and chart.value in ("", None):     # no chart name: an OCI repository names it
                    url = module_value(repo, u, mp, b.attr("repository")).value
                    name = _chart_name(url) if isinstance(url, str) and url.startswith("oci://") else None
                if name is None:
                    continue
                line = _line(repo, u, _input_of(b, "chart"))
                if switched_off(repo, u, mp, b):
                    repo.findings.append(Finding(
                        "MIG-SRC-011", "info", u.path, line,
                        f"terragrunt unit {u.dir} installs Karpenter through {b.address} of {md}, but it is switched "
                        "off (count is 0 with its inputs): not planned",
                        "switch it on first if this cluster should run Karpenter"))
                    continue
                version = module_value(repo, u, mp, b.attr("version"))
                ci = ChartInstall("terragrunt", name, u.path, line, block=b,
                                  version=version.expr if version.literal else None,
                                  evaluated_version=str(version.value) if isinstance(version.value, str) else None)
                ci.unit = u
                ci.module_path = mp
                ci.version_path = version.path if version.literal else None
                ci.attrs = {k: module_value(repo, u, mp, b.attr(k)) for k in ("namespace", "repository")}
                values = b.attr("values")
                items: list[tuple[str, hclsrc.Expr]] = []
                given = module_value(repo, u, mp, values) if values is not None and values.kind != "tuple" else None
                if given is not None and isinstance(given.value, list):
                    items = [(x.path, x.expr) for x in given.value]
                elif given is not None:
                    ci.values.append(ValuesSource("other", given.path or mp, 1))
                for item in (values.items if values is not None and values.kind == "tuple" else []):
                    got = module_value(repo, u, mp, item) if item.kind == "ref" else Val(Call("own"), mp, item)
                    items.append((got.path, got.expr) if got.expr is not None else (mp, item))
                for ip, ie in items:
                    if ip is None or ie is None:
                        continue
                    line_i = hclsrc.line_of(repo.text(ip), ie.start)
                    for vs in _values_item(repo, ip, ie, line_i):
                        if ie.kind == "call" and ie.name == "templatefile" and len(ie.items) > 1 and \
                                ie.items[1].kind == "object":     # the template's variables, as evaluated
                            cfg = terragrunt(repo).config(ip, u.dir)
                            vs.scope = {en.key: (_text(cfg.eval(en.value)), en.value.source.strip())
                                        for en in ie.items[1].entries}
                        ci.values.append(vs)
                yield ci


def _read_remotely(source: str) -> bool:
    """Is a remote module one migrator knows by its inputs (the add-on families of knowledge/karpenter_module.yaml)?"""
    from .. import knowledge
    from ..modmajor import is_karpenter_module
    facts = knowledge.load("karpenter_module")
    return any(re.search(facts[f]["source"], source) for f in facts["addon_families"]) or \
        is_karpenter_module(source)


def karpenter_module_units(repo: Repo) -> list[Unit]:
    """Units whose remote source is the terraform-aws-modules karpenter module (found once per run: every root's
    rules ask)."""
    from ..modmajor import is_karpenter_module
    got = repo.__dict__.get("_karpenter_module_units")
    if got is None:
        got = repo.__dict__["_karpenter_module_units"] = [u for u in units(repo)
                                                         if u.remote and is_karpenter_module(u.remote)]
    return list(got)


def _remote(repo: Repo, u: Unit) -> None:
    """A unit that names Karpenter and calls a module outside the repository: said, never read as nothing."""
    _said(repo, u, "MIG-SRC-014", "info",
          f"terragrunt unit {u.dir} names Karpenter and calls {u.remote}, a module outside the repository: migrator "
          "does not read that module, so its Karpenter inputs (IAM policy, chart, queue) are not checked",
          "check the module's inputs against the target version by hand (its changelog), or vendor the module into "
          "the repository")


def _missing(repo: Repo, u: Unit, md: str) -> None:
    """A unit that names Karpenter applies a folder of the repository that holds no Terraform: said, and the unit's
    file counts as unread (its cluster is never "no Karpenter")."""
    _said(repo, u, "MIG-SRC-021", "warning",
          f"terragrunt unit {u.dir} names Karpenter and applies {md} (its terraform.source), which holds no Terraform "
          "file in the repository: what it installs is not read",
          "fix the unit's terraform.source (terragrunt would fail on it too), or run migrator on the folder that "
          "holds the module")


def _said(repo: Repo, u: Unit, code: str, severity: str, message: str, manual: str) -> None:
    """A finding at where the unit says what it applies: its `terraform.source`, else where it names Karpenter (a
    stack's unit: its `unit` block)."""
    from ..model import Finding
    if u.line is not None:
        line = u.line
    else:
        text = repo.text(u.path)
        src = u.source.expr if u.source is not None and u.source.path == u.path else None
        m = re.search(r"karpenter", text, re.I)
        line = hclsrc.line_of(text, src.start if src is not None else m.start() if m else 0)
    repo.findings.append(Finding(code, severity, u.path, line, message, manual))


def _line(repo: Repo, u: Unit, name: str) -> int:
    """Where a unit says what it installs: the input, else its `inputs`, else its `terraform` or `include` block."""
    text = repo.text(u.path)
    v = u.inputs.get(name)
    if v is not None and v.path == u.path and v.expr is not None:
        return hclsrc.line_of(text, v.expr.start)
    f = repo.hcl(u.path)
    if f is not None and "inputs" in f.attributes:
        return hclsrc.line_of(text, f.attributes["inputs"].start)
    b = next((b for b in (f.blocks if f else []) if b.type in ("terraform", "include")), None)
    return hclsrc.line_of(text, b.start) if b is not None else 1


def module_block(repo: Repo, u: Unit, label: str) -> hclsrc.Block | None:
    """The unit as the module call it stands for (a remote module's inputs read like a `module` block's arguments):
    its own `inputs` object's entries as attributes (spans in the unit's file), `source` and the version its source
    pins (`?version=` / `?ref=`); None when the unit writes no `inputs` object of its own."""
    f = repo.hcl(u.path)
    a = f.attributes.get("inputs") if f is not None else None
    if a is None or a.expr.kind != "object":
        return None
    e = a.expr
    attrs = {en.key: hclsrc.Attribute(en.key, en.start, en.end, en.value) for en in e.entries}
    src = u.remote or ""
    attrs["source"] = hclsrc.Attribute("source", 0, 0, hclsrc.Expr("string", 0, 0, hclsrc.quote(src), value=src))
    m = re.search(r"[?&](?:version|ref)=v?(\d+\.\d+\.\d+)", src)
    if m:
        attrs["version"] = hclsrc.Attribute("version", 0, 0, hclsrc.Expr("string", 0, 0, f'"{m.group(1)}"',
                                                                          value=m.group(1)))
    return hclsrc.Block(type="module", labels=[label], label_spans=[], start=a.start, end=a.end,
                        body_start=e.start + 1, body_end=e.end - 1, attributes=attrs)


def _text(v: Val) -> str | None:
    return v.value if isinstance(v.value, str) else None


def _input_of(b: hclsrc.Block, attr: str) -> str:
    """The variable a module attribute is (`chart = var.chart_name` -> chart_name), else the attribute's name."""
    e = b.attr(attr)
    m = re.fullmatch(r"\s*var\.([A-Za-z_][\w-]*)\s*", e.source) if e is not None else None
    return m.group(1) if m else attr
