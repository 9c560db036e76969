"""Karpenter objects a shell command applies from a heredoc (`kubectl apply -f - <<EOF`, `cat <<EOF | kubectl apply
-f -`): in shell scripts and in Terraform `local-exec` provisioners (a `null_resource` or `terraform_data` command).

migrator does not edit shell commands, so these objects are never converted: each one that a hop must change is said
(MIG-SRC-019), and every one counts for where its cluster root stands, so a root whose only v1alpha5 Provisioner
lives in a `local-exec` heredoc is planned from v1alpha5, never a hop past it (issue 55).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..model import Finding
from ..sources import hcl as hclsrc
from .documents import KARPENTER_KINDS, auto_mode_text
from .repo import Repo

# a shell heredoc's opening (`<<EOF`, `<<-'EOF'`, `<< "YAML"`); its body ends at the line that is the marker alone
_OPEN = re.compile(r"<<(-?)\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\2")
_API = re.compile(r"^\s*apiVersion:\s*[\"']?([\w./-]+)[\"']?\s*$", re.M)
_KIND = re.compile(r"^\s*kind:\s*[\"']?(\w+)[\"']?\s*$", re.M)
_APPLIES = re.compile(r"\bkubectl\b[^\n]*\b(apply|create|replace)\b")
PROVISIONER_TYPES = ("null_resource", "terraform_data")


@dataclass
class ShellObject:
    path: str
    line: int
    kind: str
    api_version: str
    era: str                    # alpha | beta | v1 (knowledge/hops.yaml `kinds`)
    where: str                  # the Terraform block or "the script"
    auto_mode: bool = False     # an EKS Auto Mode NodePool or NodeClass (documents.auto_mode_text): AWS runs it


def _heredocs(text: str):
    """(offset of the body, body) of each shell heredoc in a command text."""
    for m in _OPEN.finditer(text):
        start = text.find("\n", m.end())
        if start < 0:
            continue
        start += 1
        end = re.search(r"^[ \t]*" + re.escape(m.group(3)) + r"[ \t]*$", text[start:], re.M)
        if end is not None:
            yield start, text[start:start + end.start()]


def _objects(path: str, text: str, base: int, file_text: str, where: str) -> list[ShellObject]:
    out = []
    for off, body in _heredocs(text):
        line_of_heredoc = text[:off].rsplit("\n", 2)[-2] if "\n" in text[:off] else text[:off]
        if not _APPLIES.search(line_of_heredoc):
            continue                                        # a heredoc written to a file or another command
        cuts = [0] + [m.end() for m in re.finditer(r"^[ \t]*---[ \t]*$", body, flags=re.M)] + [len(body)]
        for pos, end in zip(cuts, cuts[1:]):           # each YAML document of the heredoc, at its own offset
            doc = body[pos:end]
            api, kind = _API.search(doc), _KIND.search(doc)
            if api and kind and (api.group(1), kind.group(1)) in KARPENTER_KINDS:
                at = base + off + pos + min(api.start(1), kind.start(1))    # on the key's own line
                out.append(ShellObject(path, hclsrc.line_of(file_text, at), kind.group(1), api.group(1),
                                       KARPENTER_KINDS[(api.group(1), kind.group(1))], where,
                                       auto_mode_text(kind.group(1), api.group(1), doc)))
    return out


def scan(repo: Repo) -> list[ShellObject]:
    """Every Karpenter object a shell heredoc applies, in scripts and `local-exec` commands (once per run)."""
    cached = repo.__dict__.get("_shell_objects")
    if cached is not None:
        return cached
    found: list[ShellObject] = []
    for p in repo.containing("karpenter", (".sh",)):
        sf = repo.files[p]
        if "<<" in sf.text:
            found += _objects(p, sf.text, 0, sf.text, "the script")
    for kind in PROVISIONER_TYPES:
        for p, b in repo.blocks("resource", kind, "local-exec"):
            text = repo.text(p)
            for prov in b.blocks:
                if prov.type != "provisioner" or prov.labels[:1] != ["local-exec"]:
                    continue
                cmd = prov.attr("command")
                if cmd is None or "<<" not in cmd.source:
                    continue
                if cmd.kind == "heredoc" and cmd.heredoc is not None:
                    s, e = cmd.heredoc.body_start, cmd.heredoc.body_end
                else:
                    s, e = cmd.start, cmd.end
                found += _objects(p, text[s:e], s, text, f"{b.address} (local-exec)")
    repo.__dict__["_shell_objects"] = found
    return found


def said(repo: Repo, objs: list[ShellObject], to_era: str) -> list[Finding]:
    """The objects a hop to `to_era` must change, said: migrator writes nothing into a shell command."""
    out = []
    for o in objs:
        if o.era == to_era:
            continue
        out.append(Finding(
            "MIG-SRC-019", "warning", o.path, o.line,
            f"{o.kind} ({o.api_version}) is applied from a shell heredoc in {o.where}: migrator does not edit shell "
            "commands, so it is not converted; it counts for where the cluster stands",
            "move the object into a kubectl_manifest or a YAML file (migrator converts those), or convert it by "
            "hand as the runbook's steps for this hop describe"))
    return out
