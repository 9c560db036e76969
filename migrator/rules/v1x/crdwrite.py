"""Rewriting a vendored CRD set (migrator/crdfiles.py) at a chart version: each CRD document is replaced by that
chart's own CRD text, verbatim (what `helm show crds` gives), inside the file's own layout: comments before a
document, `---` lines, other documents and line endings stay; a CRD the chart adds goes where its kind lives (after
the last CRD of a file holding several, else a file of its own named as the chart names it, listed next to the others
in the kustomization that lists them).

Nothing is written where the result could lose something: a file whose fields match no release and whose text is not
a packaged one (edited by hand), a conversion webhook other than the one the chart's CRDs name, a new file's path
taken. The reason is returned instead, and the rule keeps the runbook's regeneration commands."""
from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field

from ...crdfiles import body_of, home_group, verbatim
from ...sources.crd import read_crd
from ...edits import NewFile, TextEdit, apply_edits
from ...placement import kustomization_insert
from ...sources import yaml as yamlsrc

_SEP = re.compile(r"^---[ \t]*$", re.M)


@dataclass
class Rewrite:
    edits: list = field(default_factory=list)
    paths: list[str] = field(default_factory=list)       # every file of the set once written (new ones included)
    added: list[str] = field(default_factory=list)       # CRDs the chart adds ("name (file)")
    kept: list[str] = field(default_factory=list)        # CRDs of the set the chart no longer ships (left as they are)
    listed: list[str] = field(default_factory=list)      # where a new file must also be listed ("file:line")


def _span(text: str, start: int, end: int) -> tuple[int, int]:
    """The CRD's own lines inside a document span: comments and blank lines before and after it stay the file's."""
    lines = text[start:end].splitlines(keepends=True)
    pos, first, last = start, None, None
    for ln in lines:
        s = ln.strip()
        if s and not (s.startswith("#") and not ln[0].isspace()):
            first = pos if first is None else first
            last = pos + len(ln)
        pos += len(ln)
    return (first, last) if first is not None else (start, start)


def _nl(text: str, newline: str) -> str:
    return text.replace("\n", newline) if newline != "\n" else text


def _conversion(text: str) -> dict | None:
    if "conversion:" not in text:
        return None
    conv = (yamlsrc.safe_load(text).get("spec") or {}).get("conversion")
    return conv if isinstance(conv, dict) else None


def _service(conv: dict | None):
    return (((conv or {}).get("webhook") or {}).get("clientConfig") or {}).get("service")


def blocked(repo, vs, crds: dict) -> str | None:
    """Why the set cannot be rewritten from `crds` (None: it can)."""
    for f in vs.files:
        if not f.releases and not verbatim(repo.text(f.path)[f.start:f.end]):
            return f"{f.name} ({f.path}) has fields of no Karpenter release (edited by hand?), which a rewrite would lose"
        if f.name in crds:
            want = _service(_conversion(crds[f.name][1]))
            if want is not None and _service(f.conversion) != want:
                return (f"the chart's {f.name} sends conversions to the webhook service {want.get('namespace')}/"
                        f"{want.get('name')}, which {f.path} does not name: set it to the controller's service")
    return None


def _new_crds(sets: list, vs, crds: dict) -> list[str]:
    """CRDs the chart ships that no set of the root holds, placed in `vs` when it holds their API group (a group
    no set holds goes where crdfiles.home_group says: autoscaling.x-k8s.io with karpenter.sh)."""
    have = {f.name for s in sets for f in s.files}
    mine = {f.name.split(".", 1)[1] for f in vs.files}
    out = []
    for name in sorted(crds):
        if name in have:
            continue
        group = name.split(".", 1)[1]
        home = group if any(group in {f.name.split(".", 1)[1] for f in s.files} for s in sets) else home_group(name)
        if home in mine:
            out.append(name)
    return out


def rewrite(repo, sets: list, vs, crds: dict, rule: str) -> tuple[Rewrite | None, str | None]:
    """The edits that put the set at the chart's CRDs, or (None, why not)."""
    why = blocked(repo, vs, crds)
    if why:
        return None, why
    out = Rewrite()
    for f in vs.files:
        if f.name not in crds:
            out.kept.append(f"{f.name} ({f.path})")
            continue
        text = repo.text(f.path)
        a, b = _span(text, f.start, f.end)
        new = crds[f.name][1].removeprefix("---\n")
        if not text[a:b].endswith("\n"):
            new = new.rstrip("\n")
        new = _nl(new, repo.files[f.path].newline)
        if text[a:b] != new:
            out.edits.append(TextEdit(f.path, a, b, new, rule))
    add = _new_crds(sets, vs, crds)
    per_file: dict[str, list] = {}
    for f in vs.files:
        per_file.setdefault(f.path, []).append(f)
    several = [p for p, fs in per_file.items() if len(fs) > 1]
    if add and several:
        home = next((p for p in several if any(f.name == "nodepools.karpenter.sh" for f in per_file[p])), several[0])
        out.edits += _into_stream(repo, home, sorted(per_file[home], key=lambda f: f.start), add, crds, rule)
        out.added += [f"{n} ({home})" for n in add]
    elif add:
        near = min(vs.paths)
        for n in add:
            fname, body = crds[n]
            path = posixpath.join(vs.folder, fname) if vs.folder else fname
            if path in repo.files or (repo.root / path).exists():
                return None, f"{n} would be written to {path}, which holds something else"
            out.edits.append(NewFile(path, _nl(body, repo.files[near].newline), rule))
            out.added.append(f"{n} ({path})")
            e = kustomization_insert(repo, near, path, rule)
            if e is not None:
                out.edits.append(e)
            out.listed += _named_elsewhere(repo, vs, e)
    out.paths = sorted(set(vs.paths) | {e.path for e in out.edits if isinstance(e, NewFile)})
    problem = _check(repo, out, crds)
    return (None, problem) if problem else (out, None)


def _into_stream(repo, path: str, docs: list, add: list[str], crds: dict, rule: str) -> list[TextEdit]:
    """New CRDs in a file holding several, each where the chart's crds/ folder has it (the order `helm show crds`
    prints, by file name): before the first CRD of the file that comes after it, else after the last one; with the
    file's own separator line and the blank lines it keeps after a CRD."""
    text = repo.text(path)
    nl = repo.files[path].newline
    m = _SEP.search(text)
    sep = m.group(0).rstrip("\r") if m else "---"
    gap = next((g for g in (text[_span(text, f.start, f.end)[1]:f.end] for f in docs) if not g.strip()), "")
    gap = gap.replace("\r\n", "\n")
    edits = []
    for i, n in enumerate(add):
        body = crds[n][1].removeprefix("---\n")
        after = next((f for f in docs if f.name in crds and crds[f.name][0] > crds[n][0]), None)
        if after is not None:
            edits.append(TextEdit(path, after.start, after.start, _nl(body + gap + sep + "\n", nl), rule, order=i))
            continue
        at = docs[-1].end
        lead = "" if text[:at].endswith("\n") or not at else "\n"
        edits.append(TextEdit(path, at, at, _nl(lead + sep + "\n" + body + gap, nl), rule, order=i))
    return edits


def _named_elsewhere(repo, vs, kedit) -> list[str]:
    """Lines outside kustomizations that name a file of the set (a script's `kubectl apply -f`, a Terraform
    `file()`): a new CRD file must be named there too."""
    names = {posixpath.basename(p) for p in vs.paths}
    out = []
    for p in sorted(repo.files):
        if p in vs.paths or posixpath.basename(p) in ("kustomization.yaml", "kustomization.yml", "Kustomization") or \
                (kedit is not None and p == kedit.path):
            continue
        text = repo.text(p)
        if not any(n in text for n in names):
            continue
        for i, ln in enumerate(text.splitlines(), 1):
            if any(n in ln for n in names):
                out.append(f"{p}:{i}")
                break
    return out


def _check(repo, out: Rewrite, crds: dict) -> str | None:
    """Every written file parses, and each CRD in it that the chart ships is now the chart's text exactly."""
    by_path: dict[str, list] = {}
    for e in out.edits:
        by_path.setdefault(e.path, []).append(e)
    for p, edits in by_path.items():
        if not p.endswith((".yaml", ".yml")):
            continue
        new = edits[0].text if isinstance(edits[0], NewFile) else apply_edits(repo.text(p), edits)
        for doc in yamlsrc.split_documents(new):
            read = read_crd(doc.text)
            if read.error is not None:
                return f"{p} would not parse after the rewrite ({read.error[0]})"
            name = read.name
            if name in crds:
                a, b = _span(doc.text, 0, len(doc.text))
                if body_of(doc.text[a:b]) != body_of(crds[name][1]):
                    return f"{p}: {name} would not be the chart's own text after the rewrite"
    return None

