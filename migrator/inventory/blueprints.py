"""eks-blueprints-addons (`enable_karpenter`): the chart it installs, its version at `karpenter.chart_version` or
the add-on's default; switched off or IAM-only calls are absent.
"""
from __future__ import annotations

import posixpath
import re
from typing import Iterator


from .. import knowledge
from ..model import Finding
from ..sources import hcl as hclsrc
from ..sources.hcl import at_path
from .charts import ChartInstall, ValuesSource, _values_item
from .repo import Repo
from .terraform import _switched_off



FAMILIES = tuple(knowledge.load("karpenter_module")["addon_families"])


def scan(repo: Repo) -> Iterator[ChartInstall]:
    """eks-blueprints-addons (and the retired EKS Blueprints v4 kubernetes-addons) with enable_karpenter: the karpenter
    chart, its version at karpenter.chart_version / karpenter_helm_config.version (None: the add-on's default per
    add-on version, knowledge/karpenter_module.yaml)."""
    for family in FAMILIES:
        yield from _scan(repo, family)


def _calls(repo: Repo, facts: dict) -> Iterator[tuple[str, hclsrc.Block, object]]:
    """(file, module block, Terragrunt unit or None) of every call of the add-ons: `module` blocks, and Terragrunt
    units whose remote source is the add-ons module (their inputs as the block's arguments)."""
    for p, b in repo.blocks("module", None, facts["mention"]):      # only files that name the add-ons
        yield p, b, None
    from .terragrunt import module_block, units
    for u in units(repo):
        if u.remote and re.search(facts["source"], u.remote):
            b = module_block(repo, u, facts.get("inner", "karpenter"))
            if b is not None:
                yield u.path, b, u


def _scan(repo: Repo, family: str) -> Iterator[ChartInstall]:
    facts = knowledge.load("karpenter_module")[family]
    for p, b, unit in _calls(repo, facts):
        src = b.attr("source").literal() if b.attr("source") is not None else None
        enabled = at_path(b, facts["enable"])
        if unit is not None and enabled is None and facts["enable"].split(".")[0] in unit.inputs:   # a shared .hcl
            v = _unit_value(unit, facts["enable"])
            enabled = hclsrc.Expr("bool", 0, 0, str(v).lower(), value=v) if isinstance(v, bool) else \
                hclsrc.Expr("other", 0, 0, "unknown")
        if not isinstance(src, str) or not re.search(facts["source"], src) or enabled is None \
                or enabled.literal() is False:
            continue
        line = hclsrc.line_of(repo.text(p), b.start)
        from .. import evaluate
        plain = enabled.literal() is True and (not facts["no_chart"] or at_path(b, facts["no_chart"]) is None) and \
            b.attr("count") is None and b.attr("for_each") is None
        if unit is not None:                # a unit: its inputs as Terragrunt evaluates them (unknown counts as on)
            def value(k):
                v = _unit_value(unit, k) if k else None
                return v if isinstance(v, bool) else None
            on, chart = value(facts["enable"]), value(facts["no_chart"])
            got = None if plain else [{facts["enable"]: on is not False,
                                       **({facts["no_chart"]: chart} if chart is not None else {})}]
        else:                               # the switch as the files state it, else the evaluator's instances
            got = None if plain else _stated_switch(repo, p, b, facts) or evaluate.instances(repo, p, b, line)
        if unit is None and got:                # the evaluator's instances: the switch at its path
            got = [{facts["enable"]: _get(i, facts["enable"]),
                    **({facts["no_chart"]: i.get(facts["no_chart"])} if facts["no_chart"] in i else {})} for i in got]
        if got is not None and not any(i.get(facts["enable"]) is True for i in got):
            _switched_off(repo, p, line, b.address, f"{facts['enable']} is false" if got else "the module is not created")
            continue
        if got and facts["no_chart"] and all(i.get(facts["no_chart"]) is False for i in got):
            repo.findings.append(Finding(
                "MIG-SRC-012", "info", p, line,
                f"{b.address} makes Karpenter's IAM only ({facts['no_chart']} = false): the chart is installed "
                "elsewhere (GitOps), where migrator reads it if it is in this repository",
                "if the chart is installed from another repository, run migrator there"))
            continue
        cfg = b.attr(facts["input"])
        entries = {e.key: e for e in (cfg.entries if cfg is not None and cfg.kind == "object" else [])}
        version = entries[facts["chart_version_key"]].value if facts["chart_version_key"] in entries else None
        ci = ChartInstall("blueprints", "karpenter", p, hclsrc.line_of(repo.text(p), b.start), block=b,
                          version=version, family=family)
        ci.unit = unit
        for key in facts["value_keys"]:         # the user's own chart values: reported, not rewritten, unless they
            if key in entries:                  # are YAML text the add-on gives the chart as such (values_text)
                line = hclsrc.line_of(repo.text(p), entries[key].start)
                ci.values += _values_item(repo, p, entries[key].value, line) if key in facts.get("values_text", []) \
                    else [ValuesSource("other", p, line)]
        yield ci


def _stated_switch(repo: Repo, p: str, b: hclsrc.Block, facts: dict) -> list[dict] | None:
    """The call's one instance as the evaluator gives it ({enable: bool, no_chart: bool when written}) where the files
    state the add-on's switch (`enable_karpenter = local.addons.enable_karpenter`, `try(var.addons.x, false)`): the
    evaluator gives a flag's value as the files state it, on or off; None where the call has a count / for_each of its
    own or a switch is not stated (the evaluator decides). A module folder nothing calls and no root is evaluated
    alone, its variables at their defaults: read so here too."""
    from .. import evaluate
    from .sites import module_value
    if b.attr("count") is not None or b.attr("for_each") is not None:
        return None
    d = posixpath.dirname(p)
    alone = not evaluate.from_a_root(repo, p)
    if alone and not _evaluated_alone(repo, d):
        return None
    out = {}
    for key in filter(None, (facts["enable"], facts["no_chart"])):
        e = at_path(b, key)
        if e is None and key == facts["no_chart"]:
            continue
        v = _default_of(repo, d, e) if alone else module_value(repo, d, e)
        if not isinstance(v, bool):
            return None
        out[key] = v
    return [{facts["enable"].split(".")[0]: _nest(facts["enable"], out[facts["enable"]]),
             **({facts["no_chart"]: out[facts["no_chart"]]} if facts["no_chart"] in out else {})}]


def _evaluated_alone(repo: Repo, d: str) -> bool:
    """A module folder nothing here calls (no module block, no Terragrunt unit) and no root: the evaluator evaluates
    it by itself, its variables at their defaults."""
    from .terragrunt import callers as unit_callers
    return not repo.callers(d) and not unit_callers(repo, d, every=True)


def _default_of(repo: Repo, d: str, e: hclsrc.Expr | None):
    """A literal, or `var.x` at its declared literal default: what the evaluator gives a module evaluated alone."""
    from .sites import _module_blocks
    if e is None:
        return None
    if e.kind in ("bool", "string", "number"):
        return e.literal()
    m = re.fullmatch(r"var\.([A-Za-z_][\w-]*)", e.source.strip())
    found = [b.attr("default") for _, b in _module_blocks(repo, d, "variable") if m and b.labels[:1] == [m.group(1)]]
    return found[0].literal() if len(found) == 1 and found[0] is not None else None


def _nest(path: str, value):
    """{"a": {"b": value}} for the path "a.b" below its first key (the value itself for a path of one key)."""
    for key in reversed(path.split(".")[1:]):
        value = {key: value}
    return value


def _unit_value(unit, path: str):
    """A Terragrunt unit's input at a path, as Terragrunt evaluates its inputs (None: not set, or not known)."""
    v = unit.inputs.get(path.split(".")[0])
    v = v.value if v is not None else None
    for key in path.split(".")[1:]:
        v = v.get(key) if isinstance(v, dict) else None
    return v


def _get(values: dict, path: str):
    for key in path.split("."):
        values = values.get(key) if isinstance(values, dict) else None
    return values


def stuck(repo: Repo, ci) -> str | None:
    """The newest chart minor an add-on module's built-in values configure (knowledge/karpenter_module.yaml
    `last_chart`), when the call does not give the settings a newer chart reads itself (`unstuck_by` in one of its
    YAML value inputs); None when the install can carry Karpenter on."""
    facts = knowledge.load("karpenter_module")[ci.family or "blueprints_addons"]
    if not facts.get("last_chart"):
        return None
    if facts.get("unstuck_by"):
        for key in facts["value_keys"]:
            e = at_path(ci.block, f"{facts['input']}.{key}")
            tree = hclsrc.yaml_in(repo.text(ci.path), e)
            if _get(tree, facts["unstuck_by"]) is not None:
                return None
    return facts["last_chart"]


def unread_values(repo: Repo, ci) -> str | None:
    """The value input of an add-on call that may give the settings a newer chart reads but is written as an
    expression migrator cannot read (`extra_values = var.karpenter_values`): its path, else None."""
    facts = knowledge.load("karpenter_module")[ci.family or "blueprints_addons"]
    for key in facts["value_keys"] if facts.get("unstuck_by") else []:
        e = at_path(ci.block, f"{facts['input']}.{key}")
        if e is not None and hclsrc.yaml_in(repo.text(ci.path), e) is None and e.kind != "null":
            return f"{facts['input']}.{key}"
    return None
