"""Karpenter objects a `local_file` resource renders from a template (`content = templatefile(...)` or `file(...)`),
and what puts the rendered file in the cluster.

Terraform writes the file (`filename`); the objects reach the cluster when something applies it: a `null_resource` or
`terraform_data` of the same module whose `local-exec` command names it (`kubectl apply -f
${local_file.x.filename}`), or a person or script outside Terraform (`kubectl apply -f rendered/x.yaml`). The template
is read and converted as a kubectl_manifest's is (inventory/objects.py); what is new beside it (a twin, a converted
kind) is a template, a local_file and, where one applies the old file alone, an applier of its own; and the runbook
applies what no applier does (`applied_by`, `apply_command`).

A local_file migrator leaves alone, said where its objects are (rules/auto/unconverted.py, MIG-SRC-010), `why_not`:
one whose template another local_file renders too, one whose content is a local rendering it, one whose rendered file
is also committed in the repository (read there, and made again by every apply), one whose applier applies other
files too (migrator does not edit shell commands), one whose `filename` is not written literally. An object a
local_file writes from HCL itself (a heredoc, `yamlencode()`) is said, never converted (`inline`, MIG-SRC-027).
"""
from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, replace

from ..sources import hcl as hclsrc
from .repo import Repo

KINDS = ("local_file", "local_sensitive_file")
APPLIERS = ("null_resource", "terraform_data")


@dataclass(frozen=True)
class Rendered:
    """A local_file that renders a template, and how its output reaches the cluster."""
    tf: str                             # the .tf file of the local_file block
    block: hclsrc.Block
    template: str                       # the template's path in the repository
    output: str | None                  # the rendered file's path in the repository (None: not known statically)
    out_base: str | None                # the rendered file's name as `filename` writes it literally
    appliers: tuple                     # ((tf, block), ...) null_resource / terraform_data blocks naming it
    shared: bool                        # an applier also applies other files
    committed: bool                     # the rendered file is in the repository too
    via: str | None = None              # `content = local.x`: the local that renders the template
    raw: str = ""                       # `filename` as written (`${path.module}/rendered/x.yaml`)
    others: tuple = ()                  # addresses of other local_files rendering the same template

    @property
    def applier(self) -> tuple[str, hclsrc.Block] | None:
        """The one block that applies this file alone: copied with a twin, removed with the old object."""
        return self.appliers[0] if len(self.appliers) == 1 and not self.shared else None

    @property
    def why_not(self) -> str:
        """Why migrator leaves it alone ('' when it reads and writes it)."""
        if self.others:
            return (f"{', '.join(self.others)} render{'s' if len(self.others) == 1 else ''} the same template (to "
                    "another file, perhaps for another cluster), and migrator cannot tell which cluster each serves")
        if self.via:
            return (f"its content is {self.via}, and migrator writes beside a local_file only the templatefile() call "
                    "the block makes itself")
        if self.committed:
            return (f"the file it renders, {self.output}, is committed in the repository too (read there, and made "
                    "again by every apply)")
        if self.shared:
            names = ", ".join(b.address for _, b in self.appliers)
            return f"{names} applies the files of other local_files too, and migrator does not edit shell commands"
        if self.out_base is None:
            return "its filename is not written literally, so migrator cannot name a rendered file beside it"
        return ""


def scan(repo: Repo) -> dict[str, Rendered]:
    """template path -> the local_file (local_sensitive_file) that renders it, the first one found; any other that
    renders it too is named in its `others` (once per run)."""
    out = repo.__dict__.get("_rendered_by_local_file")
    if out is not None:
        return out
    out = {}
    for kind in KINDS:
        for p, b in repo.blocks("resource", kind):
            content = b.attr("content")
            via = None
            if content is not None and content.kind == "ref" and content.name.startswith("local."):
                via, content = content.name, _local_call(repo, p, content.name[6:])   # `content = local.x`
            if content is None or content.kind != "call" or content.name not in ("templatefile", "file") or \
                    not content.items:
                continue
            target = repo.resolve_file_arg(p, content.items[0])
            if target is None or _off(repo, p, b):
                continue
            if target in out:               # a second block renders it (another cluster's copy): left alone
                out[target] = replace(out[target], others=tuple(sorted({*out[target].others, b.address})))
                continue
            out[target] = _rendered(repo, p, b, target, via)
    repo.__dict__["_rendered_by_local_file"] = out
    return out


def _off(repo: Repo, p: str, b: hclsrc.Block) -> bool:
    from .terraform import switched_off
    return switched_off(repo, p, b, hclsrc.line_of(repo.text(p), b.start))


def _local_call(repo: Repo, p: str, name: str) -> hclsrc.Expr | None:
    """The templatefile()/file() call a local of the module is (`locals { x = templatefile(...) }`), if it is one."""
    for tf in repo.tf_in_dir(posixpath.dirname(p)):
        f = repo.hcl(tf)
        for lb in (f.blocks if f is not None else []):
            e = lb.attr(name) if lb.type == "locals" else None
            if e is not None:
                return e if e.kind == "call" else None
    return None


def _rendered(repo: Repo, p: str, b: hclsrc.Block, template: str, via: str | None = None) -> Rendered:
    fn = b.attr("filename")
    raw = "".join(t for _, t in fn.parts) if fn is not None and fn.kind == "string" else None
    base = raw.rsplit("/", 1)[-1] if raw else None
    out_base = base if base and "${" not in base and "%{" not in base else None
    output = output_path(repo, p, raw) if raw else None
    tail = file_tail(raw, out_base) if raw else None
    appliers = tuple(_appliers(repo, p, b, tail))
    shared = any(_names_others(repo, ap, ab, b, out_base) for ap, ab in appliers)
    return Rendered(p, b, template, output, out_base, appliers, shared, output is not None and output in repo.files,
                    via, raw or "")


def file_tail(raw: str, out_base: str | None) -> str | None:
    """How a command names the rendered file: its folder and name as `filename` writes them (`rendered/x.yaml`),
    the name alone when it has no folder of its own; a file of the same name elsewhere is another file."""
    if out_base is None:
        return None
    parts = [x for x in raw.split("/") if x and "${" not in x and x != "."]
    return "/".join(parts[-2:]) if len(parts) > 1 else out_base


def renamed(raw: str, old: str, new: str) -> str:
    """`raw` with its last `old` written `new` (a filename given the twin's name)."""
    i = raw.rfind(old)
    return raw[:i] + new + raw[i + len(old):] if i >= 0 else raw


def output_path(repo: Repo, tf: str, raw: str) -> str | None:
    """The repository path a `filename` written `raw` names: `${path.module}` is the module's folder, and
    `${path.root}` / `${path.cwd}` are too when no module of the repository calls it (it is a root)."""
    d = posixpath.dirname(tf)
    if re.search(r"\$\{path\.(root|cwd)\}", raw) and repo.callers(d):
        return None
    from .terragrunt import callers as unit_callers
    if unit_callers(repo, d):
        return None                     # Terragrunt runs the module from its cache: the file is written there
    text = re.sub(r"\$\{path\.(module|root|cwd)\}", ".", raw)
    if "${" in text or "%{" in text:
        return None
    return posixpath.normpath(posixpath.join(d, text))


def _mentions(text: str, b: hclsrc.Block, tail: str | None) -> bool:
    label = re.escape(b.labels[1])
    if re.search(rf"(?<![\w.]){re.escape(b.labels[0])}\.{label}(?![\w-])", text):
        return True
    return tail is not None and re.search(rf"(?<![\w.-]){re.escape(tail)}(?![\w-])", text) is not None


def _appliers(repo: Repo, p: str, b: hclsrc.Block, tail: str | None):
    """null_resource / terraform_data blocks of the module whose text names the local_file, or its file by its folder
    and name (`file_tail`)."""
    for tf in repo.tf_in_dir(posixpath.dirname(p)):
        f = repo.hcl(tf)
        for ab in (f.blocks if f is not None else []):
            if ab.type != "resource" or len(ab.labels) != 2 or ab.labels[0] not in APPLIERS:
                continue
            if _mentions(f.text[ab.start:ab.end], b, tail):
                yield tf, ab


def _names_others(repo: Repo, ap: str, ab: hclsrc.Block, mine: hclsrc.Block, out_base: str | None) -> bool:
    """Does the applier name another local_file, or apply a file that is not this one's (`kubectl apply -f x.yaml`)?"""
    text = repo.text(ap)[ab.start:ab.end]
    for kind in KINDS:
        for m in re.finditer(rf"(?<![\w.]){kind}\.([\w-]+)", text):
            if (kind, m.group(1)) != (mine.labels[0], mine.labels[1]):
                return True
    files = set(re.findall(r"[\w.${}/-]*?([\w.-]+\.(?:ya?ml|json))\b", text))
    return bool(files - {out_base})


def applied_by(repo: Repo, files, flags: str = "") -> tuple[list[tuple[str, str]], list[str]]:
    """For the templates among `files` that a local_file renders (and migrator writes): the Terraform targets that
    render them again (the local_file, and its applier), and the rendered files nothing in Terraform applies (the
    runbook's `kubectl apply -f` commands, with `flags`)."""
    rendered = scan(repo)
    targets: list[tuple[str, str]] = []
    outs: list[str] = []
    for f in files:
        r = rendered.get(f)
        if r is None or r.why_not:
            continue
        targets.append((posixpath.dirname(r.tf) or ".", r.block.address))
        if r.applier is not None:
            targets.append((posixpath.dirname(r.applier[0]) or ".", r.applier[1].address))
        else:
            outs.append(apply_command(r.output, r.block.address, r.block.attr("filename").source, flags))
    return targets, sorted(set(outs))


def apply_command(output: str | None, address: str, filename: str, flags: str = "") -> str:
    """The runbook's command that applies a rendered file: `kubectl apply -f <path>`; where the path is known only
    where Terraform runs (`${path.root}` of a called module, a Terragrunt unit's cache), a comment saying which file."""
    import shlex
    if output is not None:
        return f"kubectl apply {flags}-f {shlex.quote(output)}"
    return (f"# kubectl apply {flags}-f <the file {address} writes, filename = {filename}: its path is known where "
            "Terraform runs>")


@dataclass(frozen=True)
class Inline:
    """A Karpenter object a local_file writes from HCL itself (`content = <<EOT` or `yamlencode({...})`): read for
    what it is, never converted (MIG-SRC-027)."""
    tf: str
    block: hclsrc.Block
    line: int
    kind: str
    api: str
    how: str                            # "a heredoc" / "yamlencode()"


_INLINE_KIND = re.compile(r"""(?m)^\s*["']?kind["']?\s*[:=]\s*["']?(Provisioner|AWSNodeTemplate|NodePool|EC2NodeClass)\b""")
# a NodePool's class reference to EKS Auto Mode's NodeClass group, in YAML or in HCL (`group = "eks.amazonaws.com"`)
_AUTO_GROUP = re.compile(r"""["']?group["']?\s*[:=]\s*["']?eks\.amazonaws\.com["']?\s*$""", re.M)
_INLINE_API = re.compile(r"""["']?apiVersion["']?\s*[:=]\s*["']?(karpenter\.(?:sh|k8s\.aws)/v\w+)""")


def inline(repo: Repo) -> list[Inline]:
    """Karpenter objects local_files write from a heredoc or an encoded HCL object (once per run)."""
    out = repo.__dict__.get("_local_file_inline")
    if out is not None:
        return out
    out = []
    for kind in KINDS:
        for p, b in repo.blocks("resource", kind, mentioning="karpenter."):
            content = b.attr("content")
            if content is None or (content.kind == "call" and content.name in ("templatefile", "file")):
                continue
            text = repo.text(p)
            for k in _INLINE_KIND.finditer(content.source):
                apis = list(_INLINE_API.finditer(content.source, 0, k.start())) or \
                    list(_INLINE_API.finditer(content.source, k.end()))
                api = (apis[-1] if apis[-1].start() < k.start() else apis[0]).group(1) if apis else ""
                if not api or (k.group(1) == "NodePool" and _AUTO_GROUP.search(content.source)):
                    continue            # no Karpenter API named, or an Auto Mode NodePool (karpenter.sh too)
                how = "a heredoc" if content.kind == "heredoc" else f"{content.name or 'an expression'}()"
                out.append(Inline(p, b, hclsrc.line_of(text, content.start + k.start()), k.group(1), api, how))
    repo.__dict__["_local_file_inline"] = out
    return out
