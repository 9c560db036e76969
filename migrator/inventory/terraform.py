"""Terraform `helm_release` installs: the chart name and version (evaluated where written as expressions, switched
off when `count = 0`), values in heredocs, `yamlencode`, files, `set` blocks and lists, `dynamic "set"`, and one
item of a generic add-ons list.
"""
from __future__ import annotations

import posixpath
import re
from types import SimpleNamespace
from typing import Iterator


from ..model import Finding
from ..sources import hcl as hclsrc
from ..sources import yaml as yamlsrc
from .charts import (CHART_NAMES, ChartInstall, SetEntry, ValuesSource, _chart_name, _item_span, _values_file,
                     _values_item, line_end_of, line_start_of, split_set_name)
from . import releaselist
from .repo import Repo



def _terraform_install(repo: Repo, p: str, b: hclsrc.Block, name: str, evaluated: str | None) -> ChartInstall:
    """A helm_release of a Karpenter chart: its version and its values in every shape it writes them."""
    text = repo.text(p)
    ci = ChartInstall("terraform", name, p, hclsrc.line_of(text, b.start), block=b, version=b.attr("version"),
                      evaluated_version=evaluated, generic=b.attr("for_each") is not None
                      and b.attr("chart") is not None and not isinstance(b.attr("chart").literal(), str))
    from .sites import defaults_hold, module_value
    d = posixpath.dirname(p)
    for item in hclsrc.list_items(b.attr("values")):    # values = [...], concat([...], var.extra), var.values
        if item.kind == "ref" and defaults_hold(repo, d) and module_value(repo, d, item) == []:
            continue                        # a list of extra values the files leave empty
        line = hclsrc.line_of(text, item.start)
        rendered = _template_file(repo, p, item)
        if rendered is not None:            # data.template_file.x.rendered: the template it renders, with its vars
            item_path, item, scope = rendered
            for vs in _values_item(repo, item_path, item, hclsrc.line_of(repo.text(item_path), item.start)):
                vs.scope = scope
                ci.values.append(vs)
            continue
        if ci.generic and item.kind != "string":
            decoded = _decoded_values(repo, ci, item)
            if decoded is not None:         # the Karpenter item of a release list kept in a YAML file
                ci.values.extend(decoded)
                continue
            entry = _item_values(repo, ci, item)
            if entry is not None:           # the Karpenter item's own values (`lookup(each.value, "values", "")`)
                epath, eexpr = entry
                for one in (eexpr.items if eexpr.kind == "tuple" else [eexpr]):
                    ci.values.extend(_values_item(repo, epath, one, hclsrc.line_of(repo.text(epath), one.start)))
                continue
        ci.values.extend(_values_item(repo, p, item, line))
    sets = ValuesSource("set", p, ci.line)
    for s in b.sub("set") + b.sub("set_sensitive"):
        name, value = s.attr("name"), s.attr("value")
        if name is not None and isinstance(name.literal(), str):
            raw = name.literal()
            sets.sets.append(SetEntry(split_set_name(raw), raw, name, value, line_start_of(text, s.start),
                                      line_end_of(text, s.end), hclsrc.line_of(text, s.start)))
    for attr in ("set", "set_sensitive"):
        lst = b.attr(attr)
        if lst is not None and lst.kind == "tuple":
            for item in lst.items:
                if item.kind != "object":
                    continue
                ent = {e.key: e.value for e in item.entries}
                if "name" in ent and isinstance(ent["name"].literal(), str):
                    raw = ent["name"].literal()
                    sets.sets.append(SetEntry(split_set_name(raw), raw, ent["name"], ent.get("value"),
                                              *_item_span(text, item.start, item.end),
                                              hclsrc.line_of(text, item.start)))
        elif lst is not None:
            ci.values.append(ValuesSource("set_list", p, hclsrc.line_of(text, lst.start)))
    if sets.sets:
        ci.values.append(sets)
    for d in b.sub("dynamic"):
        if d.labels[:1] in (["set"], ["set_sensitive"]):
            ci.values.extend(_dynamic_set(repo, p, text, d))
    vendored = _vendored(repo, p, b)
    if vendored is not None:
        ci.vendored, ci.evaluated_version = vendored[:2]
        own = posixpath.join(ci.vendored, "values.yaml")
        if own in repo.files:               # the chart's own defaults, as the team edited them: read, never edited
            ci.defaults = _values_file(repo, p, ci.line, own)
    ci.shared = shared_module(repo, p, b, name)
    return ci


def shared_module(repo: Repo, p: str, b: hclsrc.Block, name: str):
    """The calls of a module whose helm_release takes its chart from an input (`chart = var.chart`), split into those
    that install `name` and those that install another chart: a module other installs call (None when every call
    that states its chart installs this one)."""
    from .charts import SharedModule
    from .sites import module_value
    chart = b.attr("chart")
    m = re.fullmatch(r"var\.([A-Za-z0-9_-]+)", chart.source.strip()) if chart is not None else None
    if m is None:
        return None
    d = posixpath.dirname(p)
    calls, others, where, charts = [], [], {}, {}
    for cp, cb in repo.callers(d):
        arg = cb.attr(m.group(1))
        value = arg.literal() if arg is not None else None
        if value is None and arg is not None:
            value = module_value(repo, posixpath.dirname(cp), arg)
        where[cb.address] = cp
        if isinstance(value, str):          # a call whose chart is not stated is neither: its values are not followed
            (calls if _chart_name(value) == name else others).append(cb.address)
            charts[cb.address] = value
    if not others:
        return None
    return SharedModule(d, calls, others, m.group(1), where, charts)


def _vendored(repo: Repo, p: str, b: hclsrc.Block) -> tuple[str, str | None, str | None] | None:
    """(folder, version, name) of a chart the release installs from a folder of the repository (`chart =
    "./charts/karpenter"`, `"${path.module}/helm_karpenter_chart"`): its Chart.yaml says the version and name."""
    chart = b.attr("chart")
    raw = chart.source.strip().strip('"') if chart is not None else ""
    if not raw.startswith(("./", "../", "${path.module}", "${path.root}")):
        return None
    d = repo.resolve_file_arg(p, chart)
    if d is None:
        return None
    meta = posixpath.join(d, "Chart.yaml")
    if meta not in repo.files:
        return d, None, None
    try:
        obj = yamlsrc.load(repo.text(meta))
    except yamlsrc.YamlParseError:
        return d, None, None
    v = obj.get("version") if isinstance(obj, dict) else None
    name = obj.get("name") if isinstance(obj, dict) else None
    return d, str(v) if v is not None else None, name if isinstance(name, str) else None


_TEMPLATE_FILE = re.compile(r"^\s*data\.template_file\.([A-Za-z_][\w-]*)\.rendered\s*$")


def _template_file(repo: Repo, p: str, item: hclsrc.Expr) -> tuple[str, hclsrc.Expr, dict] | None:
    """(file, the `template` expression, its `vars` as name -> (literal, expression)) of a `data "template_file"` of
    the same module that a values item names."""
    m = _TEMPLATE_FILE.match(item.source)
    if m is None:
        return None
    d = posixpath.dirname(p)
    for tp, blk in repo.blocks("data", "template_file"):
        if posixpath.dirname(tp) == d and blk.labels[1:] == [m.group(1)] and blk.attr("template") is not None:
            vars_ = blk.attr("vars")
            scope = {e.key: (e.value.literal() if isinstance(e.value.literal(), str) else None, e.value.source.strip())
                     for e in (vars_.entries if vars_ is not None and vars_.kind == "object" else [])}
            return tp, blk.attr("template"), scope
    return None


def _terraform_charts(repo: Repo, p: str, b: hclsrc.Block) -> list[tuple[str, str | None]]:
    """[(karpenter | karpenter-crd, the version the evaluator gives when the block's own is an expression)] of a
    helm_release: none for another chart, or one switched off (`count = 0`, an empty `for_each`) in every root module
    that evaluates it. A chart name written as an expression (a variable, the items of an add-ons list) is
    evaluated (migrator/evaluate.py)."""
    from .. import evaluate
    chart = b.attr("chart")
    if chart is None:
        return []
    lit = chart.literal()
    line = hclsrc.line_of(repo.text(p), b.start)
    vendored = _vendored(repo, p, b)
    if vendored is not None and vendored[2] is not None:
        lit = vendored[2]                   # a chart folder of the repository: its Chart.yaml names the chart
    if isinstance(lit, str):
        name = _chart_name(lit)
        if name is None:
            return []
        if _own_switch_off(repo, p, b, line):
            _switched_off(repo, p, line, b.address, "count = 0 or an empty for_each in every root that uses it")
            return []
        return [(name, None)]
    if _never_karpenter(repo, p, b):
        return []                           # every value the add-ons list can take is written, none names Karpenter
    decoded = releaselist.charts(repo, p, b)
    if decoded is not None:                 # a release list kept in a YAML file: read there, no evaluator
        return decoded
    from .sites import module_value
    stated = module_value(repo, posixpath.dirname(p), chart)
    if isinstance(stated, str) and _chart_name(stated) is None:
        return []                           # `chart = var.x` that the files state is another chart (no evaluator)
    if isinstance(stated, str) and b.attr("for_each") is None:
        known = _stated_release(repo, p, b, _chart_name(stated))
        if known is not None:               # the switch and the version stated too: what the evaluator would give
            return known
    from .flows import Template, strings
    possible = strings(repo, p, b, chart)
    if possible is not None and not any(any(s.could_end(n) for n in CHART_NAMES) if isinstance(s, Template)
                                        else _chart_name(s) for s in possible):
        return []                           # every chart the files can pass it is written, none Karpenter's
    out: dict[str, str | None] = {}
    for i in evaluate.instances(repo, p, b, line) or []:
        name = _chart_name(i.get("chart")) if isinstance(i.get("chart"), str) else None
        if name is not None and name not in out:
            v = i.get("version")
            out[name] = str(v) if isinstance(v, (str, int, float)) else None
    return sorted(out.items())


def _stated_release(repo: Repo, p: str, b: hclsrc.Block, name: str) -> list[tuple[str, str | None]] | None:
    """A Karpenter chart the files state through an expression, switched on as they state it: the chart and its
    version (None where the release sets none), as the evaluator gives its instances. None (ask the evaluator) where
    the switch or the version is not stated. A release the files switch off is none ([]): the evaluator shows no
    instance of it, or (every block of its file off) nothing of the file, and either answer made no chart. One off
    only at a root variable's default reads as on (_switch_as_stated)."""
    from .. import evaluate
    from .sites import module_value
    d = posixpath.dirname(p)
    off = _switch_as_stated(repo, p, b, hclsrc.line_of(repo.text(p), b.start))
    if off is True:                 # no instance in any root, or a file the evaluator shows nothing of: no chart
        return []
    if not evaluate.from_a_root(repo, p) or off is not False:
        return None                 # (a library module's release: the evaluator knows no instance of it either)
    version = b.attr("version")
    if version is None:
        return [(name, None)]
    v = module_value(repo, d, version)
    return [(name, str(v))] if isinstance(v, (str, int, float)) and not isinstance(v, bool) else None


def _switch_as_stated(repo: Repo, p: str, b: hclsrc.Block, line: int) -> bool | None:
    """A Karpenter release off as the files state it (True), on (False), not known (None), as _stated_off reads it,
    except a release whose own switch is off only at a root variable's default: a -var or TF_VAR_ where Terraform runs
    may override it (an add-on switched on once the cluster is up), so it reads as on, as the objects beside it are,
    and is said (MIG-SRC-028). Read as off, its root would stand on its objects alone, their conversion with no
    controller step before it. (The evaluator reads defaults too, and told the two apart only by whether it showed
    other blocks of the file.)"""
    from .sites import default_switch, stated_count
    d = posixpath.dirname(p)
    stated = _stated_off(repo, d, b)
    switch = b.attr("count") if b.attr("count") is not None else b.attr("for_each")
    if stated is not True or switch is None or stated_count(repo, d, b) != 0:
        return stated
    var = default_switch(repo, d, switch.source)
    if var is None:                     # settled by literals, locals, tfvars or its module's calls
        return True
    repo.findings.append(Finding(
        "MIG-SRC-028", "info", p, line,
        f"{b.address} installs Karpenter and is switched off at the default of {var} "
        f"({switch.source.strip()}), which no tfvars here sets: planned as switched on",
        f"if {var} stays off where Terraform runs, this install's edits change nothing; set it in a tfvars "
        "file of the root to say which it is"))
    return False


def _own_switch_off(repo: Repo, p: str, b: hclsrc.Block, line: int) -> bool:
    """A block's own count/for_each makes no instance in any root module that uses it. Where the files state it (a
    literal, `var.x ? 1 : 0` of a stated switch, a call of its module), it is as they state it without the evaluator,
    except a switch off only at a root variable's default, which is read as on and said (MIG-SRC-028); else the
    evaluator decides, as it did before the files were read first."""
    from .. import evaluate
    from .sites import stated_count
    switch = b.attr("count") if b.attr("count") is not None else b.attr("for_each")
    if switch is None:
        return False
    stated = _switch_as_stated(repo, p, b, line)
    if stated is False:
        return False
    if stated is True and stated_count(repo, posixpath.dirname(p), b) == 0:
        return True                     # its own switch, as the files settle it
    if not evaluate.can_answer(repo, posixpath.dirname(p), switch.source):
        return False                # (a remote state's map: no evaluation knows how many instances it makes)
    return evaluate.absent(repo, p, b, line)


def switched_off(repo: Repo, p: str, b: hclsrc.Block, line: int) -> bool:
    """The block never exists: its own count/for_each makes no instance, or every call of its module (up to the root
    modules) makes none. Read as the files state it first (a literal, `var.x ? 1 : 0` of a stated switch); the
    evaluator only where that is not known (it can be slow)."""
    from .. import evaluate
    d = posixpath.dirname(p)            # "" for the repository's top folder, as Repo.tf_in_dir names it
    own = b.attr("count") is not None or b.attr("for_each") is not None
    if not own and not _called_with_switch(repo, d):
        return False
    stated = _stated_off(repo, d, b if own else None)
    if stated is not None:
        return stated
    return evaluate.absent(repo, p, b, line)


def off_as_stated(repo: Repo, p: str, b: hclsrc.Block) -> bool:
    """The block makes no instance as the files state it (its own switch, or every call of its module off); False
    where that is not known."""
    return _stated_off(repo, posixpath.dirname(p), b) is True


def _called_with_switch(repo: Repo, d: str, depth: int = 0) -> bool:
    return depth < 6 and any(cb.attr("count") is not None or cb.attr("for_each") is not None
                             or _called_with_switch(repo, posixpath.dirname(cp), depth + 1)
                             for cp, cb in repo.callers(d))


def _stated_off(repo: Repo, d: str, b: hclsrc.Block | None, depth: int = 0) -> bool | None:
    """Off as the files state it (True), on (False), or not known (None): the block's own switch, then the calls of
    its module (off when every call is)."""
    from .sites import defaults_hold, stated_count
    calls = repo.callers(d)
    if b is not None and not defaults_hold(repo, d):
        return None                     # a library module nobody here calls: its defaults say nothing of its callers
    if b is not None:
        n = stated_count(repo, d, b)
        if n is None:
            return None
        if n == 0:
            return True
    if not calls or depth > 5:
        return False
    answers = []
    for cp, cb in calls:
        answers.append(_stated_off(repo, posixpath.dirname(cp), cb, depth + 1))
    if all(a is True for a in answers):
        return True
    if any(a is False for a in answers):
        return False
    return None


def _never_karpenter(repo: Repo, p: str, b: hclsrc.Block) -> bool:
    """A generic add-ons release (`for_each = var.x`, the chart from each item) none of whose possible lists names a
    Karpenter chart: the variable's default, every tfvars that sets it and every caller's argument are literal text
    without "karpenter" (any reference among them: not known, the evaluator decides)."""
    fe = b.attr("for_each")
    m = re.fullmatch(r"\s*var\.([A-Za-z_][\w-]*)\s*", fe.source) if fe is not None else None
    if m is None:
        return False
    name, d = m.group(1), posixpath.dirname(p)
    texts = []
    for tp in repo.tf_in_dir(d):
        f = repo.hcl(tp) if name in repo.text(tp) else None
        for blk in f.blocks if f else []:
            if blk.type == "variable" and blk.labels == [name] and blk.attr("default") is not None:
                texts.append(blk.attr("default"))
    for tv in repo.tfvars_files():
        f = repo.hcl(tv) if name in repo.text(tv) else None
        if f is not None and name in f.attributes:
            texts.append(f.attributes[name].expr)
    for _cp, cb in repo.callers(d):
        if cb.attr(name) is not None:
            texts.append(cb.attr(name))
    from .terragrunt import callers as unit_callers
    if any(name in u.inputs for u in unit_callers(repo, d)):
        return False
    literal = all(e.kind in ("object", "tuple") and not re.search(r"\b(var|local|module|data)\.", e.source)
                  for e in texts)
    return literal and not any("karpenter" in e.source.lower() for e in texts)


_COLLECTION = re.compile(r"(?:\bin\s+|^\s*)((?:var|local)\.[A-Za-z_][\w-]*)\s*(?::|$)")


def item_entry(repo: Repo, ci: "ChartInstall", attr: str) -> tuple[str, hclsrc.Expr] | None:
    """(file, expression) of one attribute of the add-ons list item a generic `for_each` helm_release installs the
    chart from (`chart = each.value.chart_name`, `version = lookup(each.value, "chart_version", null)` over a list or
    map written inline, in a local, in a variable default or in the one call of the module): where that item's value
    is written."""
    want = ci.block.attr(attr)
    return item_value(repo, ci, want.source) if want is not None else None


def item_value(repo: Repo, ci: "ChartInstall", source: str) -> tuple[str, hclsrc.Expr] | None:
    """(file, expression) of what an expression over the item (`each.value.values`, `lookup(each.value, "values",
    "")`, `try(each.value.x, d)`) reads in the Karpenter item of a generic add-ons release; None where the list or
    the item is not one written place, or the item does not state it (the expression's default holds)."""
    from .sites import item_path
    b = ci.block
    fe, chart = b.attr("for_each"), b.attr("chart")
    if fe is None or chart is None:
        return None
    ck, wk = item_path(chart.source), item_path(source)
    ref = _COLLECTION.search(fe.source) if fe.kind not in ("tuple", "object") else None
    if ck and wk and fe.kind not in ("tuple", "object"):
        it = releaselist.karpenter_item(repo, ci.path, fe, ck, ci.chart)
        if it is not None:                  # a release list decoded from a YAML file: the item's scalar there
            got = releaselist.scalar(repo, it, wk)
            return (it.path, got) if got is not None else None
    if not ck or not wk or (ref is None and fe.kind not in ("tuple", "object")):
        return None
    where = fe if ref is None else SimpleNamespace(kind="ref", source=ref.group(1))   # the collection it names
    path, coll = _static_collection(repo, ci.path, repo.text(ci.path), where)
    if coll is None:
        return None
    items = coll.items if coll.kind == "tuple" else [e.value for e in coll.entries]
    for item in items:
        name, value = _item_at(item, ck), _item_at(item, wk)
        if name is not None and _chart_name(name.literal()) == ci.chart and value is not None:
            return path, value
    return None


def _decoded_values(repo: Repo, ci: "ChartInstall", item: hclsrc.Expr) -> list[ValuesSource] | None:
    """The values one `values` item reads from the Karpenter item of a release list decoded from a YAML file ([]: the
    item has none); None where the list is not such a file."""
    from .sites import item_path
    b = ci.block
    fe, chart = b.attr("for_each"), b.attr("chart")
    ck, keys = (item_path(chart.source) if chart is not None else None), releaselist.values_keys(item.source)
    if fe is None or not ck or not keys:
        return None
    it = releaselist.karpenter_item(repo, ci.path, fe, ck, ci.chart)
    if it is None:
        return None
    vs = releaselist.values_source(repo, it, keys)
    return [vs] if vs is not None else []


def _item_values(repo: Repo, ci: "ChartInstall", item: hclsrc.Expr) -> tuple[str, hclsrc.Expr] | None:
    """Where the Karpenter item of a generic add-ons release writes the values one `values` item reads from it."""
    from .sites import item_path
    if item_path(item.source) is None:
        return None
    return item_value(repo, ci, item.source)


def _item_at(item: hclsrc.Expr, steps: list) -> hclsrc.Expr | None:
    for k in steps:
        if item.kind != "object":
            return None
        item = next((e.value for e in item.entries if e.key == k), None)
        if item is None:
            return None
    return item


def _switched_off(repo: Repo, p: str, line: int, address: str, why: str) -> None:
    repo.findings.append(Finding("MIG-SRC-011", "info", p, line,
                                 f"{address} installs Karpenter, but it is switched off ({why}): not planned",
                                 "switch it on first if this cluster should run Karpenter"))


def _dynamic_set(repo: Repo, p: str, text: str, d: hclsrc.Block) -> list[ValuesSource]:
    """`dynamic "set"` over a list of {name, value} objects or a map of name -> value, written inline or in a local
    or a variable default of the same module, or over several of them (`cond ? concat(local.a, local.b) : local.a`:
    every list a branch may take): their entries as `set` entries (renamed and removed in place, where each list is
    written); anything else stays a `dynamic_set` the rules report."""
    unread = [ValuesSource("dynamic_set", p, hclsrc.line_of(text, d.start))]
    fe = d.attr("for_each")
    content = next(iter(d.sub("content")), None)
    if fe is None or content is None or content.attr("name") is None:
        return unread
    it = d.attr("iterator")
    var = (it.source if it is not None else d.labels[0]).strip()
    name_src, value_src = content.attr("name").source.strip(), (content.attr("value").source.strip()
                                                               if content.attr("value") is not None else "")
    where, lst = _static_collection(repo, p, text, fe)
    found = [(where, lst)] if lst is not None else [_static_collection(repo, p, text, SimpleNamespace(kind="ref", source=r))
                                                  for r in _branch_collections(fe.source)]
    if not found or any(lst is None for _, lst in found):
        return unread
    out = []
    for where, lst in found:
        got = _set_entries(repo, where, lst, var, name_src, value_src)
        if got is None:
            return unread
        out.append(got)
    return out


def _branch_collections(source: str) -> list[str]:
    """The collections a `for_each` may iterate when it chooses or joins them (`c ? concat(local.a, local.b) :
    local.a`, `concat(...)`): the references in its branches, never those of its condition."""
    body = source.split("?", 1)[1] if "?" in source else source
    if not re.fullmatch(r"[\s\w.,:()\[\]-]*", body) or ("?" not in source and "concat(" not in body):
        return []
    return list(dict.fromkeys(re.findall(r"\b(?:local|var)\.[A-Za-z_][\w-]*", body)))


def _set_entries(repo: Repo, where: str, lst: hclsrc.Expr, var: str, name_src: str, value_src: str
                 ) -> ValuesSource | None:
    wtext = repo.text(where)
    out = ValuesSource("set", where, hclsrc.line_of(wtext, lst.start))
    if lst.kind == "tuple" and re.fullmatch(rf"{var}\.value(\.name|\[\"name\"\])", name_src) and \
            re.fullmatch(rf"{var}\.value(\.value|\[\"value\"\])", value_src):
        for item in lst.items:
            ent = {e.key: e.value for e in item.entries} if item.kind == "object" else {}
            if "name" not in ent or not isinstance(ent["name"].literal(), str):
                return None
            raw = ent["name"].literal()
            out.sets.append(SetEntry(split_set_name(raw), raw, ent["name"], ent.get("value"),
                                     *_item_span(wtext, item.start, item.end),
                                     hclsrc.line_of(wtext, item.start)))
        return out
    if lst.kind == "object" and name_src == f"{var}.key" and value_src == f"{var}.value":
        for e in lst.entries:
            if not e.key_quoted and "." in e.key:
                return None
            key = hclsrc.Expr("string", e.key_start, e.key_end, wtext[e.key_start:e.key_end], value=e.key)
            out.sets.append(SetEntry(split_set_name(e.key), e.key, key, e.value, *_item_span(wtext, e.start, e.end),
                                     hclsrc.line_of(wtext, e.start)))
        return out
    return None


def _static_collection(repo: Repo, p: str, text: str, fe: hclsrc.Expr) -> tuple[str, hclsrc.Expr | None]:
    """The literal list / map a for_each names: inline, a local, or a variable default of the same module."""
    if fe.kind in ("tuple", "object"):
        return p, fe
    m = re.fullmatch(r"\s*(local|var)\.([A-Za-z_][\w-]*)\s*", fe.source)
    if not m:
        return p, None
    for tp in repo.tf_in_dir(posixpath.dirname(p)):
        f = repo.hcl(tp) if m.group(2) in repo.text(tp) else None
        for blk in f.blocks if f else []:
            if m.group(1) == "local" and blk.type == "locals" and m.group(2) in blk.attributes:
                e = blk.attributes[m.group(2)].expr
                return tp, (e if e.kind in ("tuple", "object") else None)
            if m.group(1) == "var" and blk.type == "variable" and blk.labels == [m.group(2)]:
                if any(m.group(2) in repo.text(t) for t in repo.tfvars_files()):
                    return tp, None         # set per environment: not one place to edit
                e = blk.attr("default")
                if (e is None or not (e.items or e.entries)) and m.group(1) == "var" and repo.callers(posixpath.dirname(p)):
                    return _called_collection(repo, p, fe)   # no default, or an empty one: the callers give it
                if e is None or not (e.items or e.entries):
                    return tp, None
                return tp, (e if e.kind in ("tuple", "object") else None)
    return p, None


def _called_collection(repo: Repo, p: str, fe) -> tuple[str, hclsrc.Expr | None]:
    """The literal list / map the one call of a module passes for its variable (followed into the caller)."""
    from .sites import object_site
    for kind in ("object", "tuple"):
        where, got, _ = object_site(repo, p, fe, kind)
        if got is not None:
            return where, got
    return p, None




def scan(repo: Repo) -> Iterator[ChartInstall]:
    for p, b in repo.blocks("resource", "helm_release"):
        for name, evaluated in _terraform_charts(repo, p, b):
            yield _terraform_install(repo, p, b, name, evaluated)
    yield from _module_installs(repo)


def _literal_off(e: hclsrc.Expr | None) -> bool:
    """A switch written off: `false`, or `0` (a count, `deploy = 0`)."""
    return e is not None and (e.literal() is False or (e.kind == "number" and e.value == 0))


def _module_installs(repo: Repo) -> Iterator[ChartInstall]:
    """A call of a module that installs one Helm chart from its inputs (knowledge/helm_modules.yaml): the chart its
    `chart` input names (a literal, or what every place that sets the variable says: tfvars, callers, Atmos stacks)."""
    from .. import knowledge
    from .sites import definition_sites
    from ..versions import module_default
    for row in knowledge.load("helm_modules"):
        for p, b in repo.blocks("module", None, row["mention"]):
            src = b.attr("source").literal() if b.attr("source") is not None else None
            if not isinstance(src, str) or not re.search(row["source"], src):
                continue
            off = next((k for k in row.get("enable", []) if _literal_off(hclsrc.at_path(b, k))), None)
            if off is not None:
                _switched_off(repo, p, hclsrc.line_of(repo.text(p), b.start), b.address,
                              f"{off} = {hclsrc.at_path(b, off).source}")
                continue
            chart = hclsrc.at_path(b, row["chart"])         # an input, or a key of an object input (`app.chart`)
            if chart is None and not row.get("chart_name"):
                continue
            d = posixpath.dirname(p)
            if chart is None:
                names = [row["chart_name"]]
            elif isinstance(chart.literal(), str):
                names = [chart.literal()]
            elif not any("karpenter" in repo.text(x).lower() for x in repo.tf_in_dir(d)):
                continue        # only a module that names Karpenter is followed (a library of add-ons calls it often)
            else:
                names = [s.value for s in definition_sites(repo, p, chart)[0]]
            found = {n for n in (_chart_name(x) for x in names) if n is not None}
            for name in sorted(found):
                ci = _terraform_install(repo, p, b, name, None)
                ci.version = hclsrc.at_path(b, row["version"])
                ci.attrs["module"] = row                 # a module of knowledge/helm_modules.yaml
                if ci.version is None and row.get("default_chart"):
                    ci.evaluated_version = module_default(b, row["default_chart"])
                yield ci
