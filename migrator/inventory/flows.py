"""Every string a Terraform expression can take, read from the files: a superset, or None where it cannot be told.

The question a Helm release asks before the evaluator is started: can its `chart` be Karpenter's at all? A chart
passed down through modules (`chart = var.chart_name`, set by a caller as `each.value.runner_set_configs.chart_name`,
whose `for_each` is a variable its own caller builds with a `for` expression) is followed by path: only the entry the
expression reads, never the rest of the object. Every place a value can come from is taken (a variable's default,
each call of its module, the tfvars of a module nothing calls, each branch of a conditional, each argument of `try`
or `coalesce`), so the set holds whatever Terraform could give, and more. Anything not followed (a data source, a
resource attribute, a file read, a function other than the few below, a heredoc, a key an object does not write)
makes the answer None: the evaluator decides, as it did before. What a Terragrunt unit or an Atmos stack passes a
module is not counted, as the evaluator does not count it: the release a unit or a stack makes is read from the unit
or the stack (inventory/terragrunt.py, inventory/atmos.py), never from the module's own block. A string template is
where the value is written (a `Template`), its interpolations not followed: its text after the last "/" is known
where that part is literal (`"${path.module}/charts/postgres-operator"`), which is what a chart's name is read from.
"""
from __future__ import annotations

import posixpath
import re
from typing import NamedTuple

from ..sources import hcl as hclsrc
from .repo import Repo

EVERY = object()        # a path step: every element of a list, set or map (a `for_each`, a `for` expression's items)
_LIMIT = 400            # expressions followed for one question: past it, not known
_UNKNOWN = None

# functions whose result at a path is one of their arguments' at the same path
_EITHER = ("try", "coalesce", "coalescelist", "merge", "tomap", "toset", "tolist")
_REF = re.compile(r'([A-Za-z_][\w-]*)((?:\.[A-Za-z_][\w-]*|\[\d+\]|\["[^"\\$]*"\])*)')
_STEP = re.compile(r'\.([A-Za-z_][\w-]*)|\[(\d+)\]|\["([^"]*)"\]')


class Template(NamedTuple):
    """A string template a value is written as: its source; its text after the last "/" where all of that text is
    literal (`tail`), else the literal text it ends with after its last interpolation (`ending`, "" for none): an
    interpolation may hold a "/", so only the end of the last part is sure."""
    source: str
    tail: str | None
    ending: str

    def could_end(self, segment: str) -> bool:
        """Could the text after the template's last "/" be `segment`?"""
        return segment == self.tail if self.tail is not None else segment.endswith(self.ending)


def _template(expr: hclsrc.Expr) -> Template:
    interp, last = expr.parts[-1] if expr.parts else (True, "")
    text = "" if interp else hclsrc._unescape(last).rstrip("/")
    if "/" in text:
        return Template(expr.source, text.rsplit("/", 1)[1], "")
    return Template(expr.source, None, "" if interp or last.endswith("/") else text)


class _Flow:
    def __init__(self, repo: Repo):
        self.repo = repo
        self.done: dict = {}
        self.left = _LIMIT

    def values(self, module: str, block: hclsrc.Block | None, expr: hclsrc.Expr | None, path: tuple,
               env: dict) -> set | None:
        """The strings `expr` (in module folder `module`, inside `block`) can give at `path`; None: not known."""
        if expr is None:
            return set()
        key = (module, id(block), expr.start, expr.end, expr.source, path, tuple(sorted(env)))
        if key in self.done:
            got = self.done[key]
            return _UNKNOWN if got is ... else got      # ... : on the way (a cycle, which Terraform refuses: not known)
        self.left -= 1
        if self.left < 0:
            return _UNKNOWN
        self.done[key] = ...
        got = self._values(module, block, expr, path, env)
        self.done[key] = got
        return got

    def _values(self, module, block, expr, path, env) -> set | None:
        k = expr.kind
        if k == "null":
            return set()
        if k in ("number", "bool") or (k == "string" and expr.value is not None):
            return {str(expr.value)} if not path else _UNKNOWN
        if k == "string" and expr.parts:
            return {_template(expr)} if not path else _UNKNOWN
        if k == "object":
            return self._object(module, block, expr, path, env)
        if k == "tuple":
            if not path or isinstance(path[0], str):
                return _UNKNOWN
            items = expr.items if path[0] is EVERY else expr.items[path[0]:path[0] + 1]
            return self._union(module, block, items, path[1:], env)
        if k == "call":
            return self._call(module, block, expr, path, env)
        if k == "ref":
            return self._ref(module, block, expr.source.strip(), path, env)
        if k == "other":
            if len(expr.items) == 1 and expr.source.strip().startswith("("):
                return self.values(module, block, expr.items[0], path, env)
            parts = hclsrc.conditional(expr)
            if parts is not None:
                return self._union(module, block, parts[1:], path, env)
            fe = hclsrc.for_expr(expr)
            if fe is not None and path and not fe.grouped:
                inner = dict(env)
                inner[fe.item] = (module, block, fe.collection, dict(env))
                if fe.index is not None:
                    inner[fe.index] = None                  # a key or an index: not followed
                return self.values(module, block, fe.value, path[1:], inner)
        return _UNKNOWN             # an operator, a `for` read whole

    def _union(self, module, block, exprs, path, env) -> set | None:
        out: set = set()
        for e in exprs:
            got = self.values(module, block, e, path, env)
            if got is None:
                return _UNKNOWN
            out |= got
        return out

    def _object(self, module, block, expr, path, env, partial: bool = False) -> set | None:
        if not path or isinstance(path[0], int):
            return _UNKNOWN
        if path[0] is EVERY:
            return self._union(module, block, [e.value for e in expr.entries], path[1:], env)
        if any(not e.key_quoted and not re.fullmatch(r"[A-Za-z_][\w-]*", e.key) for e in expr.entries):
            return _UNKNOWN         # a computed key (`(var.name) = ...`): which entry is which is not written
        hits = [e.value for e in expr.entries if e.key == path[0]]
        if not hits:                # a key the object does not write: an optional() default, an error, or (in
            return set() if partial else _UNKNOWN       # merge) another argument's
        return self._union(module, block, hits[-1:], path[1:], env)

    def _call(self, module, block, expr, path, env) -> set | None:
        name, args = expr.name, expr.items
        if name in _EITHER:
            out: set = set()
            for a in args:
                if name == "merge" and a.kind == "object":
                    got = self._object(module, block, a, path, env, partial=True)
                else:
                    got = self.values(module, block, a, path, env)
                if got is None:
                    return _UNKNOWN
                out |= got
            return out
        if name == "lookup" and len(args) in (2, 3) and args[1].kind == "string" and args[1].value is not None:
            m = args[0]
            got = self._object(module, block, m, (args[1].value, *path), env, partial=True) \
                if m.kind == "object" else self.values(module, block, m, (args[1].value, *path), env)
            rest = self.values(module, block, args[2], path, env) if len(args) == 3 else set()
            return None if got is None or rest is None else got | rest
        if name == "values" and len(args) == 1 and path and not isinstance(path[0], str):
            return self.values(module, block, args[0], (EVERY, *path[1:]), env)
        return _UNKNOWN

    def _ref(self, module, block, source, path, env) -> set | None:
        m = _REF.fullmatch(source)
        if m is None:
            return _UNKNOWN         # a splat, an index by expression
        head, steps = m.group(1), [a or (int(b) if b else c) for a, b, c in _STEP.findall(m.group(2))]
        if head in env:
            bound = env[head]
            if bound is None:
                return _UNKNOWN
            where, blk, collection, outer = bound
            return self.values(where, blk, collection, (EVERY, *steps, *path), outer)
        if not steps:
            return _UNKNOWN
        first, rest = steps[0], (*steps[1:], *path)
        if head == "var":
            return self._variable(module, first, rest)
        if head == "local":
            if _unread(self.repo, module):
                return _UNKNOWN
            found = [(b, b.attr(first)) for _, b in _blocks(self.repo, module, "locals") if first in b.attributes]
            return self._union(module, None, [e for _, e in found], rest, {}) if found else _UNKNOWN
        if head == "each" and first == "value" and block is not None and block.attr("for_each") is not None:
            return self.values(module, block, block.attr("for_each"), (EVERY, *rest), {})
        if head == "module" and rest and isinstance(rest[0], str):
            return self._output(module, first, rest[0], rest[1:])
        return _UNKNOWN             # data sources, resources, each.key, count.index, path, terraform

    def _variable(self, module: str, name: str, path: tuple) -> set | None:
        # (a Terragrunt unit's or an Atmos stack's inputs are not among them: the evaluator, whose answer this one
        # stands for, never sees them either; their own readers read what those install)
        declared = [b for _, b in _blocks(self.repo, module, "variable") if b.labels[:1] == [name]]
        if not declared or _unread(self.repo, module):
            return _UNKNOWN
        exprs = [(module, None, b.attr("default")) for b in declared]
        calls = self.repo.callers(module or ".")
        for cp, cb in calls:
            exprs.append((posixpath.dirname(cp), cb, cb.attr(name)))
        for tv in self.repo.tfvars_containing(name):    # a root's tfvars (-var-file: anywhere; a module applied as a
                                                        # root as well as called: all of them count)
            f = self.repo.hcl(tv)
            if f is None:
                return _UNKNOWN
            a = f.attributes.get(name)
            if a is not None:
                exprs.append((module, None, a.expr))
        out: set = set()
        for where, blk, e in exprs:
            got = self.values(where, blk, e, path, {})
            if got is None:
                return _UNKNOWN
            out |= got
        return out

    def _output(self, module: str, call: str, output: str, path: tuple) -> set | None:
        blocks = [b for _, b in _blocks(self.repo, module, "module") if b.labels[:1] == [call]]
        if len(blocks) != 1 or blocks[0].attr("count") is not None or blocks[0].attr("for_each") is not None:
            return _UNKNOWN         # (a call with count or for_each is read by instance: module.x["key"].output)
        src = blocks[0].attr("source").literal() if blocks[0].attr("source") else None
        if not isinstance(src, str) or not src.startswith(("./", "../")):
            return _UNKNOWN         # a registry or git module: its outputs are not in the repository
        child = posixpath.normpath(posixpath.join(module, src))
        child = "" if child == "." else child
        outs = [b for _, b in _blocks(self.repo, child, "output") if b.labels[:1] == [output]]
        if len(outs) != 1 or _unread(self.repo, child):
            return _UNKNOWN
        return self.values(child, None, outs[0].attr("value"), path, {})


def _unread(repo: Repo, module: str) -> bool:
    """A module folder holding what this reading does not see: a file migrator could not read, an override file (it
    replaces attributes of the blocks read here), Terraform's JSON syntax. (Indexed once per run.)"""
    index = repo.__dict__.get("_flows_unread")
    if index is None:
        index = repo.__dict__["_flows_unread"] = {posixpath.dirname(x.path) or "" for x in repo.discovery.skipped}
        for p in repo.files:
            n = posixpath.basename(p)
            if n.endswith(".tf.json") or n == "override.tf" or n.endswith("_override.tf"):
                index.add(posixpath.dirname(p) or "")
    return (module or "") in index


def _blocks(repo: Repo, module: str, type_: str):
    from .sites import _module_blocks
    return _module_blocks(repo, module, type_)


def strings(repo: Repo, tf_path: str, block: hclsrc.Block, expr: hclsrc.Expr | None) -> set[str | Template] | None:
    """Every string an attribute of `block` (in file tf_path) can take, as a superset (a template where it is written
    as one); None where that is not known from the files (see the module's docstring)."""
    if _unread(repo, posixpath.dirname(tf_path)):
        return None
    return _Flow(repo).values(posixpath.dirname(tf_path), block, expr, (), {})
