"""Where the literal behind a Terraform expression is written: the literal itself, the tfvars files and Atmos stacks
that set a variable (else its default), a local, or what each caller passes (a `module` block by relative source, a
Terragrunt unit's input), followed into the caller's own variables. Edits land there (`Site`)."""
from __future__ import annotations

import dataclasses

import posixpath
import re
from dataclasses import dataclass
from typing import Any

from ..sources import hcl as hclsrc
from .repo import Repo


@dataclass
class Site:
    """A literal string in a file that defines a value (e.g. a chart version)."""
    path: str
    expr: hclsrc.Expr           # the string literal to replace
    how: str                    # e.g. "var.helm_release_versions.karpenter in dev.tfvars"
    passed: bool = False        # what a caller of the module passes (its argument, followed into the caller)

    @property
    def value(self) -> str:
        return str(self.expr.literal())


def _entry(expr: hclsrc.Expr | None, key: str) -> hclsrc.Expr | None:
    if expr is None or expr.kind != "object":
        return None
    return next((e.value for e in expr.entries if e.key == key), None)


def optional_default(type_expr: hclsrc.Expr | None, key: str) -> hclsrc.Expr | None:
    """The default an object type gives an attribute: `type = object({ chart_version = optional(string, "1.8.2") })`
    -> the expression `"1.8.2"`; None when the attribute is not optional with a default."""
    if type_expr is None or type_expr.kind != "call" or type_expr.name != "object" or len(type_expr.items) != 1:
        return None
    attr = _entry(type_expr.items[0], key)
    if attr is None or attr.kind != "call" or attr.name != "optional" or len(attr.items) != 2:
        return None
    return attr.items[1]


def callers(repo: Repo, module_dir: str) -> list[tuple[str, hclsrc.Block]]:
    """`module` blocks whose relative `source` is this directory (the roots and modules that call it)."""
    return repo.callers(module_dir)


def _with_default(expr: hclsrc.Expr) -> tuple[hclsrc.Expr, hclsrc.Expr, str] | None:
    """(the expression followed first, the literal default, how it was written) of a value with a literal default:
    `try(x, "1.2")`, `coalesce(x, "1.2")`, or a conditional with one literal branch and one reference."""
    if expr.kind == "call" and expr.name in ("try", "coalesce") and len(expr.items) == 2:
        first, last = expr.items
        if last.kind == "string" and last.value is not None and first.kind in ("ref", "other", "call"):
            return first, last, f"{expr.name}()"
        return None
    parts = hclsrc.conditional(expr)            # split by the parser, never by a pattern
    if parts is None:
        return None
    branches = []
    for br in parts[1:]:
        if br.kind == "string" and br.value is not None and not re.search(r"[$%]", br.value):
            branches.append(("lit", br))
        elif br.kind == "ref" and re.fullmatch(r"(var|local)\.[\w-]+(\.[\w-]+|\[\"[^\"]+\"\])?", br.source.strip()):
            branches.append(("ref", br))
        else:
            return None
    kinds = [k for k, _ in branches]
    if sorted(kinds) != ["lit", "ref"]:
        return None
    ref = next(e for k, e in branches if k == "ref")
    lit = next(e for k, e in branches if k == "lit")
    return ref, lit, "the conditional"


def _module_blocks(repo: Repo, module: str, type_: str):
    """Top-level blocks of a type in one module's own files (never the whole repository's)."""
    for p in repo.tf_in_dir(module):
        f = repo.hcl(p) if type_ in repo.text(p) else None
        for b in f.blocks if f else []:
            if b.type == type_:
                yield p, b


def _lit(e: hclsrc.Expr | None, numbers: bool) -> bool:
    return e is not None and ((e.kind == "string" and e.value is not None) or (numbers and e.kind == "number"))


def object_site(repo: Repo, tf_path: str, expr: hclsrc.Expr,
                kind_: str = "object") -> tuple[str | None, hclsrc.Expr | None, str]:
    """(file, object literal, "") where a map written once stands behind `local.x` / `var.x`: the local of the
    module; for a variable of a module the repository calls, the one call's argument (followed into the caller),
    else its default; of a root, the one tfvars of this root that sets it, else its default; (None, None, why) when
    it is not one written object (several tfvars: one per environment; several calls). `kind_="tuple"`: the same
    for a list."""
    src = expr.source.strip()
    m = re.fullmatch(r"(var|local)\.([A-Za-z0-9_-]+)", src)
    if not m:
        return None, None, f"{src} is not a variable or a local"
    kind, name = m.groups()
    module = posixpath.dirname(tf_path)
    if kind == "local":
        found = [(p, b.attr(name)) for p, b in _module_blocks(repo, module, "locals") if b.attr(name) is not None]
    elif callers(repo, module):          # a module the repository calls: its callers give the value
        calls = callers(repo, module)
        given = [(cp, cb.attr(name)) for cp, cb in calls if cb.attr(name) is not None]
        if len(calls) > 1 and given:
            return None, None, f"{src} is given by {len(calls)} calls of the module ({', '.join(cp for cp, _ in calls[:3])})"
        if given:
            cp, e = given[0]
            return (cp, e, "") if e.kind == kind_ else object_site(repo, cp, e, kind_) if e.kind == "ref" else \
                (None, None, f"{src} is {e.brief()} in {cp}")
        found = [(p, b.attr("default")) for p, b in _module_blocks(repo, module, "variable")
                 if b.labels == [name] and b.attr("default") is not None]
    else:
        found = [(p, repo.hcl(p).attributes[name].expr) for p in repo.tfvars_files()
                 if (not module or p.startswith(module + "/")) and name in repo.files[p].text and repo.hcl(p) is not None
                 and name in repo.hcl(p).attributes]
        if len(found) > 1:
            return None, None, f"{src} is set by {len(found)} tfvars files ({', '.join(p for p, _ in found[:3])})"
        if not found:
            found = [(p, b.attr("default")) for p, b in _module_blocks(repo, module, "variable")
                     if b.labels == [name] and b.attr("default") is not None]
    if len(found) == 1 and found[0][1].kind == kind_:
        return found[0][0], found[0][1], ""
    return None, None, f"{src} is not one {'object' if kind_ == 'object' else 'list'} written in this module"


def unit_entries(repo: Repo, tf_path: str, expr: hclsrc.Expr) -> list | None:
    """The items of the map a module's `var.x` stands for, where Terragrunt units give it: each unit's own object
    literal (in its terragrunt.hcl or the file its inputs merge in), its items written there - one set per unit, so
    each environment's root reads its own. None when no unit gives it, or one gives it as anything else."""
    from .terragrunt import callers as unit_callers
    m = re.fullmatch(r"var\.([A-Za-z0-9_-]+)", expr.source.strip()) if expr is not None and expr.kind == "ref" else None
    if m is None:
        return None
    given = [u.inputs[m.group(1)] for u in unit_callers(repo, posixpath.dirname(tf_path), every=True)
             if u.inputs.get(m.group(1)) is not None]
    if not given or any(v.expr is None or not v.path or v.expr.kind != "object" for v in given):
        return None
    return [(v.path, e, []) for v in given for e in v.expr.entries]


def map_entries(repo: Repo, tf_path: str, expr: hclsrc.Expr, _depth: int = 0) -> tuple[list, str]:
    """The items of a map the repository writes, each with the file it is written in: an object literal, a local /
    variable standing for one (object_site), or `merge()` of those (a later map's item replaces an earlier one's
    with the same key, whole, as Terraform's merge does). ([(file, ObjEntry, [(file, ObjEntry) it replaces])], "") or
    ([], why not): an item is removed with the ones it replaces, else they would take its place."""
    if expr.kind == "object":
        return [(tf_path, e, []) for e in expr.entries], ""
    if expr.kind == "ref":
        at, obj, why = object_site(repo, tf_path, expr)
        return ([(at, e, []) for e in obj.entries], "") if obj is not None else ([], why)
    if expr.kind == "call" and expr.name == "merge" and expr.items and _depth < 4:
        out: dict[str, tuple] = {}
        for a in expr.items:
            if _empty_for(repo, tf_path, a):
                continue                    # `{ for k, v in var.extra : k => v }` over a map the files leave empty
            got, why = map_entries(repo, tf_path, a, _depth + 1)
            if why:
                return [], why
            for at, e, under in got:
                before = out.pop(e.key, None)
                out[e.key] = (at, e, ([*before[2], (before[0], before[1])] if before else []) + under)
        return list(out.values()), ""
    return [], f"{expr.brief()} is not a map written in the repository"


_FOR = re.compile(r"^\s*[{\[]\s*for\s+[\w\s,]+\s+in\s+((?:var|local)\.[A-Za-z_][\w-]*)\s*:", re.S)


def _empty_for(repo: Repo, tf_path: str, expr: hclsrc.Expr) -> bool:
    """A `for` expression over a variable or local whose value every place that may set it leaves empty (the
    default `{}` no tfvars or caller overrides): it adds no item."""
    m = _FOR.match(expr.source)
    if m is None:
        return False
    value = module_value(repo, posixpath.dirname(tf_path), _expr(m.group(1)))
    return value in ({}, [])


def definition_sites(repo: Repo, tf_path: str, expr: hclsrc.Expr, _depth: int = 0,
                     numbers: bool = False, via: set[str] | None = None) -> tuple[list[Site], str]:
    """Where the literal behind an expression is written: the literal itself, every tfvars that sets the
    variable (else its default), a local, or, in a module called by relative source, what each caller passes
    (followed into the caller's own variables). Returns ([], reason) when it cannot be known statically.
    String literals only, unless `numbers` (a size, a count). `via`: the addresses of the only calls of the
    expression's module to follow (a shared module: the calls that install this chart, never the others')."""
    if _lit(expr, numbers):
        return [Site(tf_path, expr, "literal")], ""
    fallback = _with_default(expr)
    if fallback is not None:            # try(x, "1.2"), coalesce(x, "1.2"), x != null ? x : "1.2"
        followed, lit, how = fallback
        sites, why = definition_sites(repo, tf_path, followed, _depth + 1, numbers) if _depth < 4 else ([], "")
        if sites:
            return sites, ""
        return [Site(tf_path, lit, f"the literal default of {how} ({why or 'nothing else sets it'})")], ""
    src = expr.source.strip()
    m = re.fullmatch(r'(var|local)\.([A-Za-z0-9_-]+)(?:\.([A-Za-z0-9_-]+)|\["([^"]+)"\])?', src)
    if not m:
        return [], f"{src} is not a literal, a variable or a local"
    kind, name, key = m.group(1), m.group(2), m.group(3) or m.group(4)
    sites: list[Site] = []
    module = posixpath.dirname(tf_path)          # a Terraform module is a directory: locals and variables live there
    if kind == "local":
        for p, b in _module_blocks(repo, module, "locals"):
            e = b.attr(name)
            e = _entry(e, key) if key else e
            if _lit(e, numbers):
                sites.append(Site(p, e, f"local.{name}{'.' + key if key else ''} in {p}"))
            elif e is not None and _depth < 4 and re.fullmatch(r"(var|local)\.[A-Za-z0-9_.\[\]\"-]+", e.source.strip()):
                # local.karpenter.version = var.karpenter_version: where that is written
                got, _ = definition_sites(repo, p, e, _depth + 1, numbers, via)
                sites += [dataclasses.replace(x, how=f"{x.how}, through local.{name}{'.' + key if key else ''}")
                          for x in got]
        return sites, "" if sites else f"{src} is not a literal string in any locals block"
    # tfvars of this root module (its directory and below, e.g. envs/dev.tfvars), never a sibling root's; a
    # module whose tfvars live elsewhere (a shared module) falls back to every tfvars that sets the variable
    tfvars = repo.tfvars_containing(name)
    own = [p for p in tfvars if not module or p.startswith(module + "/")]
    for p in own or ([] if via is not None else tfvars):
        f = repo.hcl(p)
        if f is None or name not in f.attributes:
            continue
        e = f.attributes[name].expr
        e = _entry(e, key) if key else e
        if _lit(e, numbers):
            sites.append(Site(p, e, f"var.{name}{'.' + key if key else ''} in {p}"))
    if not sites and not key:           # Atmos: the stacks that set this component's variable
        from .atmos import variable_sites
        sites = [Site(p, e, how) for p, e, how in variable_sites(repo, module, name)]
    if sites:
        return sites, ""
    # a shared module: each caller's argument, resolved in the caller's own root (its tfvars, locals, literals)
    passed, why = [], []
    for cp, cb in (callers(repo, module) if _depth < 4 and not key else []):
        if via is not None and cb.address not in via:
            continue                    # another install's call of a shared module: its values are its own
        arg = cb.attr(name)
        if arg is None:
            continue
        got, reason = definition_sites(repo, cp, arg, _depth + 1, numbers)
        passed.extend(Site(x.path, x.expr, f"{x.how}, passed to {cb.address} in {cp}", passed=True) for x in got)
        if not got:
            why.append(f"{cb.address} in {cp}: {reason}")
    from .terragrunt import callers as unit_callers
    for u in (unit_callers(repo, module, every=True) if not key else []):     # a Terragrunt unit's input (where it is written)
        v = u.inputs.get(name)
        if v is None:
            continue
        if v.path and _lit(v.expr, numbers):
            passed.append(Site(v.path, v.expr, f"input {name} of terragrunt unit {u.dir} ({v.path})", passed=True))
        else:
            why.append(f"terragrunt unit {u.dir}: its input {name} is not a literal")
    if passed and not why:
        return passed, ""
    if why:                             # a value passed in a way not followed: the default is not what applies
        return [], f"{src} is passed by callers it cannot be followed in ({'; '.join(why)})"
    for p, b in _module_blocks(repo, module, "variable"):
        if b.labels == [name]:
            whole = b.attr("default")
            e = _entry(whole, key) if key else whole
            if _lit(e, numbers):
                return [Site(p, e, f"default of variable {name} in {p}")], ""
            opt = optional_default(b.attr("type"), key) if key and (whole is None or whole.kind == "object") else None
            if _lit(opt, numbers) and not (tfvars or passed or why):    # nothing sets the object: its type's default
                return [Site(p, opt, f"the optional() default of {name}.{key} in the type of variable {name} "
                                     f"in {p}")], ""
    unread = [x.path for x in repo.discovery.skipped if posixpath.dirname(x.path) == module]
    if unread:                              # a file of the module migrator could not read may be where it is
        return [], f"{src} is declared or set in none of the files migrator read, and {', '.join(unread[:3])} " \
                   "could not be read (a broken link, an unreadable file)"
    return [], f"{src} is set outside the repository (no tfvars or default sets it)"


def static_value(repo: Repo, module: str, expr: hclsrc.Expr | None, _depth: int = 0) -> Any:
    """The value of an expression where the module states it whole: literals, lists and objects of them, string
    templates, a variable's value (the one tfvars beside the module that sets it, else its default) and locals,
    followed through each other. None when any part is not stated (or tfvars disagree)."""
    if expr is None or _depth > 6:
        return None
    if expr.kind in ("number", "bool") or (expr.kind == "string" and expr.value is not None):
        return expr.value
    if expr.kind == "tuple":
        items = [static_value(repo, module, i, _depth + 1) for i in expr.items]
        return None if any(i is None for i in items) else items
    if expr.kind == "object":
        out = {}
        for e in expr.entries:
            v = static_value(repo, module, e.value, _depth + 1)
            if v is None:
                return None
            out[e.key] = v
        return out
    if expr.kind == "string" and expr.parts:
        text = []
        for interp, part in expr.parts:
            if not interp:
                text.append(part)
                continue
            inner = part.strip().removeprefix("${").removesuffix("}").strip()
            got = static_value(repo, module, _expr(inner), _depth + 1)
            if not isinstance(got, (str, int, float)) or isinstance(got, bool):
                return None
            text.append(str(got))
        return "".join(text)
    if expr.kind == "call" and expr.name == "try" and expr.items:
        return _try(repo, module, expr, static_value, _depth)
    stepped = _stepped(expr)
    if stepped is not None:             # var.zones[0], local.sizes["web"], var.group.min: the value it reads
        entry, rest = _entry_of(repo, module, stepped[0], stepped[1])
        if entry is not None:           # local.karpenter.version: that entry of the local's object, not all of it
            return _step(static_value(repo, module, entry, _depth + 1), rest)
        return _step(static_value(repo, module, stepped[0], _depth + 1), stepped[1])
    m = re.fullmatch(r"(var|local)\.([A-Za-z0-9_-]+)", expr.source.strip())
    if not m:
        return None
    kind, name = m.groups()
    if kind == "local":
        found = [b.attr(name) for _, b in _module_blocks(repo, module, "locals") if name in b.attributes]
        return static_value(repo, module, found[0], _depth + 1) if len(found) == 1 else None
    values = []
    for p in repo.tfvars_files():
        if (posixpath.dirname(p) or "") != (module or ""):
            continue
        f = repo.hcl(p)
        a = f.attributes.get(name) if f is not None else None
        if a is not None:
            values.append(static_value(repo, module, a.expr, _depth + 1))
    if values:
        return values[0] if all(v == values[0] for v in values) and values[0] is not None else None
    for _, b in _module_blocks(repo, module, "variable"):
        if b.labels[:1] == [name]:
            return static_value(repo, module, b.attr("default"), _depth + 1)
    return None


_STEPPED = re.compile(r'((?:var|local)\.[A-Za-z0-9_-]+)((?:\[\d+\]|\["[^"]*"\]|\.[A-Za-z_][\w-]*)+)')


def _stepped(expr: hclsrc.Expr) -> tuple[hclsrc.Expr, list] | None:
    """(the variable or local, the index / key steps) of `var.x[0]`, `local.y["k"].z`; None for anything else."""
    m = _STEPPED.fullmatch(expr.source.strip())
    base = _expr(m.group(1)) if m else None
    if base is None:
        return None
    return base, path_steps(m.group(2))


def path_steps(tail: str) -> list:
    """The steps of an attribute / index path as written after its base: `.a`, `["b"]`, `[0]` -> ["a", "b", 0]."""
    return [int(a) if a else b or c for a, b, c in re.findall(r'\[(\d+)\]|\["([^"]*)"\]|\.([A-Za-z_][\w-]*)', tail)]


_STEPS = r'((?:\.[A-Za-z_][\w-]*|\["[^"]*"\])*)'
MISSING = object()      # a key the item does not have: try() moves on to its next argument


def item_path(source: str, iterator: str = "each") -> list[str] | None:
    """The keys of the for_each item an expression reads whole: `each.value.a.b`, `lookup(each.value.a, "b", d)`,
    `try(each.value.a.b, d)` (a dynamic block's `<iterator>.value...` likewise); None for anything else."""
    s, it = source.strip(), re.escape(iterator)
    m = re.fullmatch(it + r"\.value" + _STEPS, s) or \
        re.fullmatch(r"try\(\s*" + it + r"\.value" + _STEPS + r"\s*,.*\)", s, re.S)
    tail = None
    if m is None:
        m = re.fullmatch(r"lookup\(\s*" + it + r"\.value" + _STEPS + r'\s*,\s*"([^"]+)"\s*(?:,.*)?\)', s, re.S)
        tail = m.group(2) if m else None
    if m is None:
        return None
    return path_steps(m.group(1)) + ([tail] if tail else [])


def _entry_of(repo: Repo, module: str, base: hclsrc.Expr, steps: list) -> tuple[hclsrc.Expr | None, list]:
    """(the expression a local's object literal writes for the first keys of `steps`, the steps left): a local written
    `{ version = var.karpenter_version, profile = "${aws_iam_role.x.name}" }` states its `version` whatever its other
    entries read. (None, steps) when the local is not one object literal with those keys."""
    m = re.fullmatch(r"local\.([A-Za-z0-9_-]+)", base.source.strip())
    found = [b.attr(m.group(1)) for _, b in _module_blocks(repo, module, "locals")
             if m.group(1) in b.attributes] if m else []
    expr = found[0] if len(found) == 1 else None
    taken = 0
    for k in steps:
        if expr is None or expr.kind != "object" or not isinstance(k, str):
            break
        expr, taken = _entry(expr, k), taken + 1
        if expr is None:
            return None, steps
    return (expr, steps[taken:]) if taken else (None, steps)


def _try(repo: Repo, module: str, call: hclsrc.Expr, value_of, depth: int) -> Any:
    """`try(a, b, ...)` as the module states it: the first argument that evaluates. An argument reading a key or index
    its known value does not have fails (Terraform's error, which try() catches): the next one is read. Any argument
    not known before the one that evaluates: not known (None)."""
    for arg in call.items:
        got = _tried(repo, module, arg, value_of, depth + 1)
        if got is not MISSING:
            return got
    return None


def _tried(repo: Repo, module: str, arg: hclsrc.Expr, value_of, depth: int) -> Any:
    """One argument of try(): its value, MISSING where a step leaves its known value, None when not known. A variable
    whose type is an object type never misses a key: its `optional()` attributes get defaults Terraform fills in."""
    stepped = _stepped(arg)
    if stepped is None:
        return value_of(repo, module, arg, depth)
    base, steps = stepped
    name = base.source.strip().removeprefix("var.") if base.source.strip().startswith("var.") else None
    if name is not None and any(b.labels[:1] == [name] and b.attr("type") is not None
                                and re.search(r"\b(object|optional)\(", b.attr("type").source)
                                for _, b in _module_blocks(repo, module, "variable")):
        return value_of(repo, module, arg, depth)
    value = value_of(repo, module, base, depth)
    if value is None:
        return value_of(repo, module, arg, depth)   # a key of a value not wholly known (one local's entry)
    return _walk(value, steps)


def _walk(value: Any, steps: list) -> Any:
    """The value at `steps` below `value`: MISSING where a map lacks the key or a list the index, None where a step
    does not fit the value's type."""
    for k in steps:
        if isinstance(value, dict) and isinstance(k, str):
            if k not in value:
                return MISSING
        elif isinstance(value, list) and isinstance(k, int) and not isinstance(k, bool):
            if not 0 <= k < len(value):
                return MISSING
        else:
            return None
        value = value[k]
    return value


def _step(value: Any, steps: list) -> Any:
    got = _walk(value, steps)
    return None if got is MISSING else got


_COMPARE = re.compile(r"^(?P<left>[^=!]+?)\s*(?P<op>==|!=)\s*(?P<right>.+)$")


def module_value(repo: Repo, module: str, expr: hclsrc.Expr | None, _depth: int = 0) -> Any:
    """static_value, with a module's `var.x` taken from what every call of the module passes (the default where a
    call passes nothing; None when the calls disagree or one passes an expression), in string templates too."""
    from .terragrunt import callers as unit_callers
    if expr is not None and expr.kind == "string" and expr.value is None and expr.parts and _depth <= 4:
        text = []                       # a string template: each interpolation as the module's calls give it
        for interp, part in expr.parts:
            got = module_value(repo, module, _expr(part.strip().removeprefix("${").removesuffix("}").strip()),
                               _depth + 1) if interp else part
            if not isinstance(got, (str, int, float)) or isinstance(got, bool):
                return None
            text.append(str(got))
        return "".join(text)
    if expr is not None and expr.kind == "call" and expr.name == "try" and expr.items and _depth <= 4:
        return _try(repo, module, expr, module_value, _depth)
    stepped = _stepped(expr) if expr is not None and _depth <= 4 else None
    if stepped is not None:
        entry, rest = _entry_of(repo, module, stepped[0], stepped[1])
        if entry is not None:           # local.addons.enable_karpenter: that entry of the local's object, as static_value
            return _step(module_value(repo, module, entry, _depth + 1), rest)
        return _step(module_value(repo, module, stepped[0], _depth + 1), stepped[1])
    m = re.fullmatch(r"var\.([A-Za-z0-9_-]+)", expr.source.strip()) if expr is not None else None
    calls = repo.callers(module) if m else []
    units = unit_callers(repo, module, every=True) if m else []
    if (not calls and not units) or _depth > 4:
        return static_value(repo, module, expr)
    got = []
    for cp, cb in calls:
        arg = cb.attr(m.group(1))
        if arg is None:
            got.append(static_value(repo, module, expr))
        else:
            got.append(module_value(repo, posixpath.dirname(cp), arg, _depth + 1))
    for u in units:                     # a Terragrunt unit's inputs set the module's variables
        v = u.inputs.get(m.group(1))
        got.append(static_value(repo, module, expr) if v is None else _plain_value(v))
    return got[0] if got and all(g == got[0] for g in got) and got[0] is not None else None


def _plain_value(v) -> Any:
    """A unit input's value when all of it is known (a list or map of literals too), else None."""
    from .terragrunt import UNKNOWN, Call
    plain = v.plain()

    def known(x) -> bool:
        if isinstance(x, list):
            return all(known(i) for i in x)
        if isinstance(x, dict):
            return all(known(i) for i in x.values())
        return x is not UNKNOWN and not isinstance(x, Call) and (x is None or isinstance(x, (str, int, float, bool)))
    return plain if plain is not None and known(plain) else None


def defaults_hold(repo: Repo, module: str) -> bool:
    """Do a module's variable defaults say what its variables are? In a root module (Terraform runs there), or where
    the repository calls it (its calls say the rest); not in a library module only callers elsewhere use."""
    from ..evaluate import is_root_module
    from .terragrunt import callers as unit_callers
    return bool(repo.callers(module) or unit_callers(repo, module, every=True)) or is_root_module(repo, module or ".")


_REFS = re.compile(r"(?<![\w.\"])(var|local|module|data|each|count|self|path|terraform|[a-z][a-z0-9]*_[\w]+)"
                   r"\.([A-Za-z_][\w-]*)")


def defaults_decide(repo: Repo, module: str, source: str, _depth: int = 0) -> str:
    """Why an expression's value is not what the module's own text says on its face ("" when it is): it reads only
    literals, locals and variables whose default holds (no tfvars, no Terragrunt unit sets it, one call of the module
    passes what decides it). The evaluator reads defaults and never a tfvars file, so its answer for an expression is
    only taken where this holds."""
    from .terragrunt import callers as unit_callers
    if _depth > 6:
        return f"{source.strip()[:60]} is too deeply derived"
    loop = set(re.findall(r"\bfor\s+(\w+)(?:\s*,\s*(\w+))?\s+in\b", source))    # a `for` expression's own names
    loop = {n for pair in loop for n in pair if n}
    for kind, name in dict.fromkeys(_REFS.findall(source)):
        if kind in loop:
            continue
        if kind == "local":
            found = [b.attr(name) for _, b in _module_blocks(repo, module, "locals") if b.attr(name) is not None]
            if len(found) != 1:
                return f"local.{name} is not written once in {module or '.'}"
            why = defaults_decide(repo, module, found[0].source, _depth + 1)
        elif kind == "var":
            calls, units = repo.callers(module), unit_callers(repo, module)
            if units:
                return f"var.{name} is set by Terragrunt units ({', '.join(u.dir for u in units[:3])})"
            if len(calls) > 1:
                return f"var.{name} is given by {len(calls)} calls of {module or '.'}"
            arg = calls[0][1].attr(name) if calls else None
            if arg is not None:
                why = defaults_decide(repo, posixpath.dirname(calls[0][0]), arg.source, _depth + 1)
            else:
                sets = _tfvars_setting(repo, module, name)
                if sets:
                    return f"var.{name} is set in {', '.join(sets[:3])}"
                has = [b for _, b in _module_blocks(repo, module, "variable")
                       if b.labels == [name] and b.attr("default") is not None and b.attr("default").kind != "null"]
                why = "" if has else f"var.{name} has no default"
                if not why and not calls and not defaults_hold(repo, module):
                    why = f"var.{name} is a variable of a library module its callers set"
        else:
            return f"{kind}.{name} is known only when Terraform runs"
        if why:
            return why
    return ""


def _tfvars_setting(repo: Repo, module: str, name: str) -> list[str]:
    """The tfvars files in a module's folder (or below it) that set one of its variables."""
    return [p for p in repo.tfvars_files() if (not module or p.startswith(module + "/")) and
            name in repo.files[p].text and repo.hcl(p) is not None and name in repo.hcl(p).attributes]


def default_switch(repo: Repo, module: str, source: str, _depth: int = 0) -> str | None:
    """The root module variable an expression reads at its default (`var.install_karpenter`, directly or through the
    module's locals or the calls of its module) when every name it reads is such a variable: no tfvars of the root
    sets it, so a `-var` or `TF_VAR_` where Terraform runs may give it another value, and the files do not settle it.
    None where a literal local, a tfvars, a Terragrunt input or an argument of the module's calls takes part
    (`var.on && local.off`: the local may settle it whatever the variable)."""
    from ..evaluate import is_root_module
    from .terragrunt import callers as unit_callers
    if _depth > 6:
        return None
    first = None
    for kind, name in dict.fromkeys(_REFS.findall(source)):
        if kind == "local":
            found = [b.attr(name) for _, b in _module_blocks(repo, module, "locals") if b.attr(name) is not None]
            got = default_switch(repo, module, found[0].source, _depth + 1) if len(found) == 1 else None
        elif kind == "var":
            calls = repo.callers(module)
            if calls or unit_callers(repo, module):
                got = next(filter(None, (default_switch(repo, posixpath.dirname(cp), cb.attr(name).source, _depth + 1)
                                         for cp, cb in calls if cb.attr(name) is not None)), None)
            elif is_root_module(repo, module or ".") and not _tfvars_setting(repo, module, name):
                got = f"var.{name}"
            else:
                got = None
        else:
            got = None
        if got is None:
            return None
        first = first or got
    return first


def _stated_bool(repo: Repo, module: str, source: str) -> bool | None:
    """A switch condition as the module states it: `var.x`, `!var.x`, `local.x == "y"`, `var.x != ""`, literals."""
    source = source.strip()
    split = hclsrc.binary(source) if "&&" in source or "||" in source else None
    if split is not None and split[1] in ("&&", "||"):      # as the parser splits it: precedence, parentheses
        left, op, right = split
        got = [_stated_bool(repo, module, left), _stated_bool(repo, module, right)]
        if (op == "||") in got:         # one true: `||` is true; one false: `&&` is false, whatever the other
            return op == "||"
        return None if None in got else op == "&&"
    if source.startswith("!"):
        inner = _stated_bool(repo, module, source[1:])
        return None if inner is None else not inner
    cmp = _COMPARE.match(source)
    if cmp:
        left = module_value(repo, module, _expr(cmp.group("left")))
        right = module_value(repo, module, _expr(cmp.group("right")))
        if left is None or right is None:
            return None
        return (left == right) == (cmp.group("op") == "==")
    v = module_value(repo, module, _expr(source))
    return v if isinstance(v, bool) else None


def stated_count(repo: Repo, module: str, b: hclsrc.Block) -> int | None:
    """How many instances a block's `count` / `for_each` makes, as the module states it (a literal, a conditional
    on a stated switch, a stated collection); None when not known."""
    e = b.attr("count") if b.attr("count") is not None else b.attr("for_each")
    if e is None:
        return 1
    t = hclsrc.conditional(e)                   # split by the parser: a longer condition is one expression
    if t is not None:
        cond = _stated_bool(repo, module, t[0].source)
        if cond is None:
            return None
        e = t[1] if cond else t[2]
    v = module_value(repo, module, e)
    if b.attr("count") is not None:
        return v if isinstance(v, int) and not isinstance(v, bool) else None
    return len(v) if isinstance(v, (list, dict)) else None


def _expr(source: str) -> hclsrc.Expr | None:
    """An expression's text as the parser reads it; None when the text is not one whole expression."""
    try:
        f = hclsrc.parse(f"x = {source}\n")
    except hclsrc.HclParseError:
        return None
    a = f.attributes.get("x") if f is not None else None
    if a is None:
        return None
    return a.expr


_INSTANCE = re.compile(r'((?:var|local)\.[A-Za-z_][\w-]*)((?:\.[A-Za-z_][\w-]*|\["[^"]*"\]|\[\d+\])+)')


def instance_site(repo: Repo, tf_path: str, source: str, key: Any) -> tuple[str, hclsrc.Expr] | None:
    """Where one instance's value is written when its block reads it by the instance's key: `var.sizes[each.key].min`
    (for_each) or `var.groups[count.index].min` (count), with `key` bound: (file, the literal) inside the collection
    written once (object_site: the local, the one tfvars, the default, the one caller's argument); None otherwise."""
    bound = source.strip().replace("each.key", f'"{key}"' if isinstance(key, str) else str(key))
    bound = bound.replace("count.index", str(key))
    m = _INSTANCE.fullmatch(bound)
    if m is None or "each." in bound:
        return None
    steps = path_steps(m.group(2))
    p, e, _ = object_site(repo, tf_path, _expr(m.group(1)), "tuple" if isinstance(steps[0], int) else "object")
    for step in steps if e is not None else []:
        e = (e.items[step] if e.kind == "tuple" and step < len(e.items) else None) if isinstance(step, int) \
            else _entry(e, step)
        if e is None:
            return None
    return (p, e) if e is not None and e.kind in ("number", "string") and p is not None else None


def set_item(repo: Repo, tf_path: str, expr: hclsrc.Expr | None, key: str) -> tuple[str, hclsrc.Expr, hclsrc.Expr] | None:
    """The item of the list a `for_each = toset(var.x)` (or `var.x` / `local.x`) iterates that makes the instance
    `key`: (file, the list literal, the item) where the list is written once; None otherwise."""
    if expr is None:
        return None
    src = expr.source.strip()
    m = re.fullmatch(r"toset\(\s*((?:var|local)\.[A-Za-z_][\w-]*)\s*\)|((?:var|local)\.[A-Za-z_][\w-]*)", src)
    if m is None:
        return None
    p, lst, _ = object_site(repo, tf_path, _expr(m.group(1) or m.group(2)), "tuple")
    if lst is None:
        return None
    found = [i for i in lst.items if i.literal() == key]
    return (p, lst, found[0]) if len(found) == 1 else None
