"""A CustomResourceDefinition document read for what the CRD readers ask of it (its name, the fingerprint of its
fields, its conversion), once per text and process: a CRD is hundreds of KB of schema, and several readers take the
same texts (migrator/crdfiles.py, the CRD rules, the re-parse before writing, the object scan)."""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from . import yaml as yamlsrc

# a document whose top-level kind is CustomResourceDefinition (its schema names other kinds on indented lines)
DOCUMENT = re.compile(r"^kind:[ \t]*[\"']?CustomResourceDefinition\b", re.M)


def crd_name(doc: dict) -> str:
    spec = doc.get("spec") or {}
    return f"{(spec.get('names') or {}).get('plural', '')}.{spec.get('group', '')}"


def _paths(schema, prefix: str, out: set) -> None:
    if not isinstance(schema, dict):
        return
    for key, sub in (schema.get("properties") or {}).items():
        out.add(f"{prefix}.{key}")
        _paths(sub, f"{prefix}.{key}", out)
    if isinstance(schema.get("items"), dict):
        _paths(schema["items"], prefix + "[]", out)
    if isinstance(schema.get("additionalProperties"), dict):
        _paths(schema["additionalProperties"], prefix + "{}", out)


def fingerprint(doc: dict) -> str:
    """The CRD's served versions and every field path of their schemas, hashed."""
    out: set = set()
    for v in (doc.get("spec") or {}).get("versions") or []:
        if not isinstance(v, dict):
            continue
        out.add(f"{v.get('name')}:")
        _paths(((v.get("schema") or {}).get("openAPIV3Schema") or {}), f"{v.get('name')}:", out)
    return hashlib.sha256("\n".join(sorted(out)).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class CrdDoc:
    """What one YAML document's text is, as the CRD readers ask it: whether it parses, its kind, and for a
    CustomResourceDefinition its name (plural.group), fingerprint and spec.conversion."""
    error: tuple[str, int] | None = None        # (message, line) of a document that does not parse
    kind: str | None = None
    name: str | None = None
    fingerprint: str | None = None              # a CRD's only
    conversion: dict | None = None


_READ: dict[bytes, CrdDoc] = {}


def read_crd(text: str) -> CrdDoc:
    """One document read once per process whatever the number of readers: a CRD's text is hundreds of KB of schema,
    and the vendored-file scan, a rewrite's check, the re-parse before writing, every environment's view of a root
    and the plan's second pass all read the same texts (keyed by the text's digest; the answers are small)."""
    key = hashlib.sha256(text.encode()).digest()
    got = _READ.get(key)
    if got is not None:
        return got
    try:
        data = yamlsrc.values(text)             # libyaml where it is installed
    except yamlsrc.YamlParseError as e:
        got = CrdDoc(error=(str(e), e.line))
    else:
        kind = data.get("kind") if isinstance(data, dict) else None
        kind = kind if isinstance(kind, str) else None
        if kind != "CustomResourceDefinition":
            got = CrdDoc(kind=kind)
        else:
            name = crd_name(data)
            conv = (data.get("spec") or {}).get("conversion")
            got = CrdDoc(kind=kind, name=name, fingerprint=fingerprint(data),
                         conversion=conv if isinstance(conv, dict) else None)
    if len(_READ) >= 512:
        _READ.clear()
    _READ[key] = got
    return got
