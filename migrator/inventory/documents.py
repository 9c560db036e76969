"""YAML documents of a repository's files, parsed once with their `${}` / `{{ }}` masked: what every reader of
Karpenter objects and chart values starts from (a template that is not YAML once masked is said, never an error).
"""
from __future__ import annotations

import posixpath
import re
from typing import Any, Iterator


from ruamel.yaml.comments import CommentedMap

from .. import knowledge
from ..model import Finding
from ..sources import yaml as yamlsrc
from ..sources.templates import Masked, TemplateError, mask
from .repo import Repo



class Words:
    """A search for whole words (or literal strings) that first checks plain substrings: a document holding none of
    them is skipped at memory-scan speed, never searched by the regular expression (its word boundaries make Python
    try the alternation at every character of a 50 MB CRD bundle). Used as the `only` filter of documents."""

    def __init__(self, words, whole: bool = True):
        self.words = tuple(words)
        body = "|".join(re.escape(w) for w in self.words)
        self.regex = re.compile(rf"\b(?:{body})\b" if whole else body)
        self.pattern = self.regex.pattern

    def search(self, text: str):
        return self.regex.search(text) if any(w in text for w in self.words) else None


KARPENTER_KINDS = {(k["apiVersion"], k["kind"]): k["era"] for k in knowledge.load("hops")["kinds"]}
_AUTO_GROUP = knowledge.load("hops")["auto_mode_node_class_group"]
_KIND_RE = Words(sorted({k for _, k in KARPENTER_KINDS} - {"Machine", "NodeClaim"}))
# a document that declares one of those kinds (`kind: NodePool`, `"kind": "NodePool"`), not one whose prose names it
# (a chart's "# 2. Provisioner password." comment): only such a document is an error when it does not parse
_KIND_LINE = re.compile(r"""["']?\bkind["']?[ \t]*:[ \t]*["']?(?:%s)["']?(?![\w-])"""
                        % "|".join(re.escape(k) for k in _KIND_RE.words))


class KindDocuments:
    """`only` for the object scan: a document that names a Karpenter kind and whose `kind` value is one (read with
    libyaml first); a template, or a document libyaml refuses, goes to the masking round-trip parse, which decides and
    reports, where it declares such a kind (`kind: NodePool`) or names Karpenter's API. Most documents that merely
    name a kind (a CRD bundle's prose, another product's Provisioner, Longhorn's questions.yaml with its "CSI
    Provisioner Image" and tabs libyaml refuses: 0.4 s of ruamel's scanner) are never parsed round-trip."""
    pattern = _KIND_RE.pattern + " (the kind value)"

    def search(self, text: str) -> bool:
        if not _KIND_RE.search(text):
            return False
        if "{{" in text or "{%" in text or "%{" in text:    # a template: parsed when it declares a kind, or names an
            return bool(_KIND_LINE.search(text) or _KARPENTER_API.search(text))     # API version, of Karpenter's
        if "CustomResourceDefinition" in text:     # a CRD's schema names the kinds: read once for every reader
            from ..sources.crd import read_crd
            read = read_crd(text)
            return read.error is not None or read.kind in _KIND_RE.words
        try:
            obj = yamlsrc.values(text)
        except yamlsrc.YamlParseError:          # libyaml refuses it (a tab in a quoted scalar): as for a template,
            return bool(_KIND_LINE.search(text) or _KARPENTER_API.search(text))   # parsed where it declares a kind
        return isinstance(obj, dict) and obj.get("kind") in _KIND_RE.words


KIND_DOCUMENTS = KindDocuments()


def _era(obj: Any) -> tuple[str, str, str] | None:
    if not isinstance(obj, dict):
        return None
    key = (str(obj.get("apiVersion")), str(obj.get("kind")))
    era = KARPENTER_KINDS.get(key)
    return (key[0], key[1], era) if era else None


def value_at(obj: Any, path: tuple) -> Any:
    """The value at a path of a parsed document (keys and list indexes), None where the path does not exist."""
    for k in path:
        try:
            obj = obj[k]
        except (KeyError, IndexError, TypeError):
            return None
    return obj


def _parse_yaml_docs(repo: Repo, path: str, text: str, base_offset: int, base_line: int,
                     report_path: str, only: "re.Pattern | Words | None" = None, gotmpl: bool = False
                     ) -> Iterator[tuple[yamlsrc.DocSpan, Masked, Any]]:
    """Mask and parse each document of a YAML text (once per run: cached on the repository); parse errors
    become findings. `only`: documents whose bytes do not match it are never parsed (a 500 KB CRD bundle costs
    no more than reading it)."""
    gotmpl = gotmpl or in_chart_templates(repo, path)
    full = (path, base_offset, text) if not gotmpl else (path, base_offset, text, "gotmpl")
    if full not in repo.yaml_docs and repo.yaml_carried:
        _carry(repo, full)
    if full in repo.yaml_docs:          # every document already parsed for another scan
        yield from (d for d in repo.yaml_docs[full] if only is None or only.search(d[0].text))
        return
    key = full if only is None else (*full, only.pattern)
    if key not in repo.yaml_docs and repo.yaml_carried:
        _carry(repo, key)
    if key not in repo.yaml_docs:
        repo.yaml_docs[key] = list(_parse_docs(repo, text, base_line, report_path, only, gotmpl))
    yield from repo.yaml_docs[key]


def _carry(repo: Repo, key: tuple) -> None:
    """The documents of the same text of the same file, parsed before the plan's edits moved them (yaml_carried)."""
    got = repo.yaml_carried.get((key[0],) + key[2:])
    if got is not None:
        repo.yaml_docs[key] = got


def _parse_docs(repo: Repo, text: str, base_line: int, report_path: str, only: "re.Pattern | Words | None" = None,
                gotmpl: bool = False):
    """`gotmpl`: the text is a Go template (helmfile): its `{{ }}` actions are masked in every document."""
    if only is not None and not only.search(text):
        return                  # no document can match: the text is never split (a CRD bundle of megabytes)
    for doc in yamlsrc.split_documents(text):
        if only is not None and not only.search(doc.text):
            continue
        helm = helm_chart_text(doc.text) or (gotmpl and "{{" in doc.text)
        try:
            m = mask(doc.text, helm=helm)
        except TemplateError as e:
            repo.findings.append(Finding("MIG-SRC-002", "error", report_path, base_line + doc.first_line + 1,
                                         f"template syntax: {e}", "fix the template; the file is left untouched"))
            continue
        try:
            obj = yamlsrc.load(m.text)
        except yamlsrc.YamlParseError as e:
            if helm:
                repo.findings.append(Finding(
                    "MIG-SRC-004", "warning", report_path, base_line + doc.first_line + e.line,
                    f"Helm template: with its {{{{ }}}} actions masked, this document is still not YAML ({e}); "
                    "migrator leaves it untouched",
                    "convert the Karpenter objects of this chart template by hand (see the objects migrator writes "
                    "elsewhere for the shape), or move the action that breaks the YAML onto a line of its own"))
            elif _KIND_LINE.search(doc.text):
                repo.findings.append(_unparsed(m, report_path, base_line + doc.first_line + e.line, str(e),
                                               "fix the YAML (or the template directives that break it); "
                                               "the file is left untouched"))
            continue
        yield doc, m, obj


def _unparsed(m: Masked | None, path: str, line: int, error: str, manual: str) -> Finding:
    """YAML that does not parse: an error when it is plain YAML (the file is broken); a warning when it is a template
    that only stops being YAML once its interpolations are masked (a line that is only `${indent(4, x)}` renders a
    block): the template is fine, migrator cannot read it and leaves it untouched."""
    if m is not None and m.tokens:
        return Finding("MIG-SRC-013", "warning", path, line,
                       f"{error}: a template that is not YAML with its interpolations masked (an interpolation that "
                       "renders a whole block); migrator cannot read it and leaves it untouched",
                       "check it by hand against the hop's changes (migrator plan lists them for the files it reads)")
    return Finding("MIG-SRC-002", "error", path, line, error, manual)


# a Karpenter API version, or one a chart's action gives (`karpenter.k8s.aws/{{ $.Values.ApiVersion }}`)
_KARPENTER_API = re.compile(r"karpenter\.(?:sh|k8s\.aws)/(?:v1|\{\{)")


def in_chart_templates(repo: Repo, path: str) -> bool:
    """A file of a Helm chart's `templates/` folder (its Chart.yaml beside that folder): Helm renders it as a Go
    template, whatever it holds (an Argo CD Application whose values say `{{ .Values.clusterName }}`)."""
    parts = path.split("/")
    if "templates" not in parts[:-1]:
        return False
    i = len(parts) - 2 - parts[-2::-1].index("templates")
    return posixpath.join(*parts[:i], "Chart.yaml") in repo.files if i else "Chart.yaml" in repo.files


def helm_chart_text(text: str) -> bool:
    """A document of a Helm chart template holding a Karpenter object: its `{{ }}` actions are masked."""
    return "{{" in text and _KARPENTER_API.search(text) is not None


def _dedent(text: str, n: int) -> str:
    if n <= 0:
        return text
    out = []
    for ln in text.splitlines(keepends=True):
        strip = 0
        while strip < n and strip < len(ln) and ln[strip] in " \t":
            strip += 1
        out.append(ln[strip:])
    return "".join(out)


def scalar_at(text: str, start: int, doc_text: str, node, keys: tuple[str, ...]) -> tuple[int, int, str] | None:
    """(start, end, value) of the plain or quoted scalar at a key path of a parsed mapping."""
    for k in keys[:-1]:
        node = node.get(k) if isinstance(node, CommentedMap) else None
    if not isinstance(node, CommentedMap) or keys[-1] not in node or isinstance(node[keys[-1]], (dict, list)):
        return None
    vl, vc = node.lc.value(keys[-1])
    lines = doc_text.splitlines(keepends=True)
    s = start + sum(len(x) for x in lines[:vl]) + vc
    rest = text[s:].split("\n", 1)[0].rstrip("\r")
    if rest[:1] in "\"'":
        e = rest.find(rest[0], 1)
        return (s, s + e + 1, rest[1:e]) if e > 0 else None
    tok = re.match(r"[^\s#]+", rest)
    return (s, s + tok.end(), tok.group(0)) if tok else None


_AUTO_REF = re.compile(r"^[ \t]+group:[ \t]*[\"']?" + re.escape(_AUTO_GROUP) + r"[\"']?[ \t]*(#.*)?$",
                       re.M)


def auto_mode_text(kind: str, api_version: str, doc: str) -> bool:
    """auto_mode() for an object known only as the text of its YAML document (a template, a heredoc): an Auto Mode
    NodeClass, or a NodePool whose text names the Auto Mode NodeClass group (a NodePool's only `group:` key is its
    nodeClassRef's)."""
    if kind == "NodeClass":
        return api_version.split("/")[0] == _AUTO_GROUP
    return kind == "NodePool" and _AUTO_REF.search(doc) is not None


def auto_mode_value(x: dict) -> bool:
    """auto_mode() for an object read as plain values (a chart's values)."""
    if x.get("kind") == "NodeClass":
        return str(x.get("apiVersion")).split("/")[0] == _AUTO_GROUP
    spec = x.get("spec") if isinstance(x.get("spec"), dict) else {}
    tmpl = spec.get("template") if isinstance(spec.get("template"), dict) else {}
    ref = (tmpl.get("spec") if isinstance(tmpl.get("spec"), dict) else {}).get("nodeClassRef")
    return x.get("kind") == "NodePool" and isinstance(ref, dict) and ref.get("group") == _AUTO_GROUP
