"""Checks run on every output before it is shown or written.

* :func:`validate_object` checks a generated Karpenter object against the packaged CRD schema of its
  version: types, required fields, enums, patterns, bounds, unknown fields, and the CRD's CEL rules
  (`x-kubernetes-validations`, evaluated after applying schema defaults, as the API server does, with
  Google's CEL (cel-expr-python, the cel-cpp runtime) where it is installed, else with cel-python). Values that are Terraform interpolations (placeholders) are unknown until Terraform
  renders them: checks that depend on them are skipped, everything around them is still checked.
* :func:`reparse` checks that a patched file still parses.
"""
from __future__ import annotations

import copy
import importlib
import os
import re
from pathlib import Path
from functools import lru_cache
from typing import Any, Callable

from . import knowledge
from .sources import hcl as hclsrc
from .sources import yaml as yamlsrc
from .sources.templates import TOKEN_RE, mask

_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool) or type(v).__name__ == "ScalarBoolean",
}


def _has_token(v: Any) -> bool:
    if isinstance(v, str):
        return bool(TOKEN_RE.search(v))
    if isinstance(v, dict):
        return any(_has_token(k) or _has_token(x) for k, x in v.items())
    if isinstance(v, list):
        return any(_has_token(x) for x in v)
    return False


def to_plain(v: Any) -> Any:
    if type(v).__name__ == "TaggedScalar":     # an explicit tag (`!x 30s`): checked as the value it tags
        return to_plain(getattr(v, "value", None))
    if isinstance(v, dict):
        return {str(k): to_plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [to_plain(x) for x in v]
    if type(v).__name__ == "ScalarBoolean":
        return bool(v)
    if isinstance(v, bool):
        return v
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float):
        return float(v)
    if isinstance(v, str):
        return str(v)
    return v


def _defaulted(schema: dict, v: Any) -> Any:
    if isinstance(v, dict) and schema.get("type") == "object":
        out = dict(v)
        for k, sub in (schema.get("properties") or {}).items():
            if k not in out and "default" in sub:
                out[k] = copy.deepcopy(sub["default"])
            if k in out:
                out[k] = _defaulted(sub, out[k])
        return out
    if isinstance(v, list) and isinstance(schema.get("items"), dict):
        return [_defaulted(schema["items"], x) for x in v]
    return v


def cel_engine() -> str:
    """The CEL runtime in use: "cpp" (cel-expr-python: Google's cel-cpp, wheels for Python 3.11+) or "py"
    (cel-python, pure Python, about 0.15 s to import). MIGRATOR_CEL=py|cpp picks one (the tests run both)."""
    want = os.environ.get("MIGRATOR_CEL", "")
    if want in ("", "cpp"):
        try:
            importlib.import_module("cel_expr_python.cel")
            return "cpp"
        except ImportError:
            if want == "cpp":
                raise
    return "py"


def _k8s_find(s: str, pattern: str) -> str:
    """Kubernetes' regex library `<string>.find(<regex>)`: the first match, or ""."""
    m = re.search(str(pattern), str(s))
    return m.group(0) if m else ""


@lru_cache(maxsize=1)
def _cpp_env():
    from cel_expr_python import cel
    from cel_expr_python.ext import ext_strings
    find = cel.FunctionDecl("find", [cel.Overload("string_find_string", return_type=cel.Type.STRING,
                                                  parameters=[cel.Type.STRING, cel.Type.STRING], is_member=True,
                                                  impl=_k8s_find)])
    # the strings extension gives split() and friends, as the API server's CEL environment does
    return cel.NewEnv(variables={"self": cel.Type.DYN}, extensions=[ext_strings.ExtStrings()], functions=[find])


@lru_cache(maxsize=512)
def _cpp_program(rule: str):
    return _cpp_env().compile(rule)


def _cpp_eval(rule: str, value: Any) -> bool | None:
    try:
        result = _cpp_program(rule).eval(data={"self": value})
        got = result.value()
    except Exception:  # noqa: BLE001 - compile errors and runtime errors alike: not evaluable here
        return None
    return got if isinstance(got, bool) else None


@lru_cache(maxsize=1)
def _cel_parser() -> None:
    """celpy builds its LALR parser from the grammar in every process (about 1 s); build it once with Lark's
    on-disk cache of the grammar analysis instead (same grammar and options as celpy's own)."""
    import lark
    from celpy.celparser import CELParser
    if CELParser.CEL_PARSER is not None:
        return
    import celpy
    grammar = (Path(celpy.__file__).parent / "cel.lark").read_text()
    try:
        CELParser.CEL_PARSER = lark.Lark(grammar, parser="lalr", start="expr", debug=True, g_regex_flags=re.M,
                                         lexer_callbacks={"IDENT": CELParser.ambiguous_literals},
                                         propagate_positions=True, maybe_placeholders=False, priority="invert",
                                         tree_class=lark.Tree, cache=True)
    except Exception:  # noqa: BLE001 - an unwritable cache: celpy builds its parser itself
        CELParser.CEL_PARSER = None


@lru_cache(maxsize=512)
def _py_program(rule: str):
    import celpy
    _cel_parser()
    env = celpy.Environment()
    return env.program(env.compile(rule), functions={"find": _py_find})


def _py_find(s, pattern):
    from celpy import celtypes
    return celtypes.StringType(_k8s_find(s, pattern))


def _py_eval(rule: str, value: Any) -> bool | None:
    import celpy
    try:
        result = _py_program(rule).evaluate({"self": celpy.json_to_cel(value)})
    except Exception:  # noqa: BLE001 - cel-python raises its own error types
        return None
    if isinstance(result, Exception):
        return None
    return bool(result)


def _cel_ok(rule: str, value: Any) -> bool | None:
    """True/False, or None when the rule cannot be evaluated here (reported by tests, not users)."""
    import json
    return _cel_cached(rule, json.dumps(value, sort_keys=True), cel_engine())


@lru_cache(maxsize=8192)
def _cel_cached(rule: str, value_json: str, engine: str) -> bool | None:
    import json
    value = json.loads(value_json)
    return _cpp_eval(rule, value) if engine == "cpp" else _py_eval(rule, value)


def _walk(schema: dict, v: Any, path: str, errors: list[str]) -> None:
    if isinstance(v, str) and TOKEN_RE.fullmatch(v):
        return                                                  # a whole interpolation: unknown
    if "anyOf" in schema:
        if not any(not _errors_of(s, v, path) for s in schema["anyOf"]):
            errors.append(f"{path}: value {v!r} matches none of the allowed forms")
        return
    t = schema.get("type")
    if type(v).__name__ == "TaggedScalar":
        errors.append(f"{path}: the value carries an explicit YAML tag ({getattr(v, 'tag', '?')} "
                      f"{getattr(v, 'value', '')!r}), which migrator cannot check or carry: remove the tag")
        return
    if t and not _TYPES[t](v):
        if not (schema.get("x-kubernetes-int-or-string") and isinstance(v, (int, str))):
            errors.append(f"{path}: expected {t}, got {type(v).__name__} {v!r}")
            return
    if "enum" in schema and not _has_token(v) and to_plain(v) not in schema["enum"]:
        errors.append(f"{path}: {v!r} is not one of {schema['enum']}")
    if isinstance(v, str) and not _has_token(v):
        if "pattern" in schema and not re.search(schema["pattern"], v):
            errors.append(f"{path}: {v!r} does not match {schema['pattern']}")
        if "maxLength" in schema and len(v) > schema["maxLength"]:
            errors.append(f"{path}: longer than {schema['maxLength']}")
        if "minLength" in schema and len(v) < schema["minLength"]:
            errors.append(f"{path}: shorter than {schema['minLength']}")
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        if "minimum" in schema and v < schema["minimum"]:
            errors.append(f"{path}: {v} is below the minimum {schema['minimum']}")
        if "maximum" in schema and v > schema["maximum"]:
            errors.append(f"{path}: {v} is above the maximum {schema['maximum']}")
    if isinstance(v, dict):
        props = schema.get("properties")
        addl = schema.get("additionalProperties")
        for req in schema.get("required", []):
            if req not in v:
                errors.append(f"{path}: required field {req!r} is missing")
        if "maxProperties" in schema and len(v) > schema["maxProperties"]:
            errors.append(f"{path}: more than {schema['maxProperties']} entries")
        for k, x in v.items():
            sub = path + "." + str(k)
            if props is not None and k in props:
                _walk(props[k], x, sub, errors)
            elif isinstance(addl, dict):
                _walk(addl, x, sub, errors)
            elif props is not None and not schema.get("x-kubernetes-preserve-unknown-fields"):
                errors.append(f"{sub}: unknown field (the API server would drop it)")
    if isinstance(v, list):
        if "maxItems" in schema and len(v) > schema["maxItems"]:
            errors.append(f"{path}: more than {schema['maxItems']} items")
        if "minItems" in schema and len(v) < schema["minItems"]:
            errors.append(f"{path}: fewer than {schema['minItems']} items")
        if isinstance(schema.get("items"), dict):
            for i, x in enumerate(v):
                _walk(schema["items"], x, f"{path}[{i}]", errors)
    for rule in schema.get("x-kubernetes-validations", []):
        if "oldSelf" in rule["rule"] or _has_token(v):
            continue
        ok = _cel_ok(rule["rule"], to_plain(_defaulted(schema, v)))
        if ok is False:
            errors.append(f"{path}: {rule.get('message') or rule['rule']}")


def _errors_of(schema: dict, v: Any, path: str) -> list[str]:
    errs: list[str] = []
    _walk(schema, v, path, errs)
    return errs


def unknown_fields(obj: dict, release: str = "") -> list[tuple]:
    """Paths of the fields of an object that the CRD of its version (of a release) does not define: the ones the API
    server prunes when it stores the object. [] when no schema is packaged for it."""
    try:
        schema = knowledge.crd_schema(str(obj.get("apiVersion")), str(obj.get("kind")), release)
    except (KeyError, FileNotFoundError):
        return []
    out: list[tuple] = []

    def walk(s: dict, v: Any, path: tuple) -> None:
        if isinstance(v, dict):
            props, addl = s.get("properties"), s.get("additionalProperties")
            for k, x in v.items():
                if props is not None and k in props:
                    walk(props[k], x, path + (k,))
                elif isinstance(addl, dict):
                    walk(addl, x, path + (k,))
                elif props is not None and not s.get("x-kubernetes-preserve-unknown-fields"):
                    out.append(path + (k,))
        elif isinstance(v, list) and isinstance(s.get("items"), dict):
            for i, x in enumerate(v):
                walk(s["items"], x, path + (i,))

    walk(schema, {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}, ())
    return out


def validate_object(obj: dict, release: str = "") -> list[str]:
    """Schema errors of a generated object against the CRD of its version (of a given release); [] when valid."""
    api, kind = obj.get("apiVersion"), obj.get("kind")
    try:
        schema = knowledge.crd_schema(str(api), str(kind), release)
    except (KeyError, FileNotFoundError):
        return [f"no packaged CRD schema for {api} {kind}"]
    body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
    errs: list[str] = []
    meta = obj.get("metadata") or {}
    name = meta.get("name")
    if not name:
        errs.append("metadata.name is missing")
    elif not _has_token(name) and not re.fullmatch(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?", str(name)):
        errs.append(f"metadata.name {name!r} is not a valid Kubernetes name")
    _walk(schema, body, "", errs)
    return [e.lstrip(".") for e in errs]


def reparse(path: str, text: str) -> str | None:
    """None if the patched text parses as its file type, else the error message (HCL: tree-sitter-hcl, where
    any error or missing node fails; :func:`second_parser` adds python-hcl2 before anything is written)."""
    try:
        if path.endswith(hclsrc.HCL_FILES):
            hclsrc.parse(text)
        elif path.endswith((".yaml", ".yml", ".tmpl", ".tftpl", ".tpl")):
            from .sources.crd import DOCUMENT, read_crd
            for doc in yamlsrc.split_documents(text):
                if DOCUMENT.search(doc.text):       # a CRD: hundreds of KB no rule reads back by position
                    error = read_crd(doc.text).error
                    if error is not None:
                        raise yamlsrc.YamlParseError(*error)
                    continue
                try:
                    yamlsrc.load(mask(doc.text).text)
                except Exception:  # noqa: BLE001 - a Helm chart template: its {{ }} actions masked too
                    if "{{" not in doc.text:
                        raise
                    yamlsrc.load(mask(doc.text, helm=True).text)
        elif path.endswith(".json"):
            import json
            json.loads(text)
    except Exception as e:  # noqa: BLE001
        return str(e)
    return None


def unbalanced_actions(path: str, text: str | None) -> str | None:
    """A Go template (a chart template, a helmfile, a values file Helm renders) whose control actions are out of
    balance once patched: an `{{ end }}` that closes no block, or a block never closed. Helm then fails to render the
    whole chart. What is wrong, else None (HCL files, and texts without `{{` actions, are not Go templates)."""
    if text is None or "{{" not in text or path.endswith(hclsrc.HCL_FILES):
        return None
    from .sources.templates import CLOSERS, OPENERS, TemplateError, find_helm, helm_word
    try:
        actions = find_helm(text)
    except TemplateError as e:
        return str(e)
    depth = 0
    for s, e, _ in actions:
        word = helm_word(text[s:e])
        if word in OPENERS:
            depth += 1
        elif word in CLOSERS:
            depth -= 1
            if depth < 0:
                return f"template action {text[s:e]} at line {text.count(chr(10), 0, s) + 1} closes no block"
    return f"{depth} template block(s) never closed ({{{{ end }}}} missing)" if depth else None


def second_parser(path: str, old: str | None, new: str | None) -> str | None:
    """The write-time check of a patched HCL file by a second, independent parser (python-hcl2): None if it
    parses, or if python-hcl2 cannot read the original either (its grammar gaps do not hold back a write
    that tree-sitter-hcl accepted); else the error message."""
    if new is None or not path.endswith(hclsrc.HCL_FILES):
        return None
    from .sources import hcl_lark
    try:
        hcl_lark.parse(new)
        return None
    except hclsrc.HclParseError as e:
        if old is not None:
            try:
                hcl_lark.parse(old)
            except hclsrc.HclParseError:
                return _new_interpolations(old, new)
        return str(e)


def _new_interpolations(old: str, new: str) -> str | None:
    """Where python-hcl2 reads neither the original nor the patched file, what the patch brought still gets the
    second parser: each template interpolation `${...}` the patched text has and the original has not must be an
    HCL expression (tree-sitter-hcl accepts `${AWS::AccountId}` in a string; Terraform does not)."""
    from .sources import hcl_lark
    from .sources.templates import TemplateError, find_sequences

    def exprs(text: str) -> set[str]:
        try:
            return {text[a + 2:z - 1] for a, z, kind in find_sequences(text) if kind == "$"}
        except TemplateError:
            return set()
    for body in sorted(exprs(new) - exprs(old)):
        try:
            hcl_lark.parse(f"x = {body.strip()}\n")
        except hclsrc.HclParseError:
            return f"the template interpolation ${{{body}}} is not an HCL expression"
    return None


# a string whose whole text is a Terraform reference: `"var.region"`, `"module.eks.cluster_name"`, `"each.value.x"`
_REF_ROOTS = r"(?:var|local|module|data|each|count|path|terraform|self)"
QUOTED_REF = re.compile(r'"(' + _REF_ROOTS + r'\.[A-Za-z_][\w-]*(?:\.[\w*-]+|\[[^\]"\n]*\])*)"')
_RESOURCE_REF = re.compile(r'"([a-z][a-z0-9]*_[a-z0-9_]+\.[A-Za-z_][\w-]*\.[A-Za-z_][\w-]*(?:\.[\w-]+)*)"')


def quoted_references(path: str, old: str | None, new: str) -> str | None:
    """A Terraform reference the patch writes as a literal string (`"var.region"` where the source had the
    expression `var.region`): the value would be the reference's own text (a region condition that matches nothing).
    None when every such string was already in the file, quoted, as often; else the check's message."""
    if not path.endswith(hclsrc.HCL_FILES):
        return None
    old = old or ""
    found = []
    for pattern in (QUOTED_REF, _RESOURCE_REF):
        for ref in dict.fromkeys(m.group(1) for m in pattern.finditer(new)):
            if pattern is _RESOURCE_REF and not re.search(r"(?<![\w.\"])" + re.escape(ref) + r"(?![\w\"])", old):
                continue                  # a resource-like string is only suspect where the file reads it as one
            quoted = '"' + ref + '"'
            if new.count(quoted) > old.count(quoted):
                found.append(ref)
    if not found:
        return None
    return ("it would write the Terraform reference" + ("s " if len(found) > 1 else " ")
            + ", ".join(f'{r} as the string "{r}"' for r in found[:3])
            + " (the value would be the reference's text, not what it refers to)")
