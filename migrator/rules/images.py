"""A controller image pinned in the chart values (`controller.image.tag`, `.digest`, `.repository`) follows the chart.

A pinned tag overrides the chart's own: after a chart bump the old controller would run under the new CRDs and
values (a bot's bump to 1.14.0 over values that pin 1.12.1). Where the image is the upstream one and only its tag is
pinned, the tag moves with the chart (a values row `set`, written in every shape the helm rule edits). A digest
cannot be worked out here: it is said, with the tag to pull. A mirror or a fork is said: its copy of the target's
image must exist first. Facts: knowledge/helm.yaml `controller_image`.
"""
from __future__ import annotations

from .. import knowledge
from ..inventory.charts import ChartInstall, values_of
from ..model import Finding
from ..versions import parse_version

FACTS = knowledge.load("helm")["controller_image"]


def tag_for(version: str) -> str:
    """The upstream controller image tag of a chart version (`v0.37.8` below 1.1, `1.14.1` from 1.1 on)."""
    bare = version.lstrip("v")
    return ("v" + bare) if parse_version(bare) < parse_version(FACTS["no_v_from"]) else bare


def _pinned(ci: ChartInstall) -> dict[str, tuple]:
    """key -> (value, path, line) of the image keys the install's values state as literals."""
    out = {}
    for v in values_of([ci]):
        if v.key in FACTS["keys"].values() and v.expression is None and isinstance(v.value, (str, int, float)) \
                and "__MIG_" not in str(v.value):
            out.setdefault(v.key, (str(v.value), v.path, v.line))
    return out


def _same_variable(ci: ChartInstall, key: str, script: str | None) -> str | None:
    """The shell variable a script's helm command gives both its chart version and the image `key`'s tag
    (`--version ${TAG}` ... `--set controller.image=<repository>:${TAG}`), read from the command as written
    (sources/shell.py): the tag then moves with the chart. None otherwise."""
    if script is None:
        return None
    from ..sources.shell import helm_calls
    call = next((c for c in helm_calls(ci.path, script) if c.line == ci.line), None)
    return call.same_variable(key) if call is not None else None


def check(ci: ChartInstall, version: str, script: str | None = None) -> tuple[list[dict], list[Finding]]:
    """(values rows to apply to the install, findings) for chart version `version` (what this run leaves it at);
    `script`: the text of the script a helm command install is in."""
    keys = FACTS["keys"]
    got = _pinned(ci)
    if keys["tag"] not in got and keys["image"] not in got:
        return [], []
    want = tag_for(version)
    if keys["image"] in got:                       # the whole reference as one string (the charts before 0.2x)
        value, path, line = got[keys["image"]]
        if want in value:
            return [], []
        var = _same_variable(ci, keys["image"], script)
        repo = value[:value.rindex(":")] if ":" in value.rsplit("/", 1)[-1] else value
        if var is not None:                         # its tag is the chart's own version variable: it follows
            if repo == FACTS["repository"]:
                return [], []
            return [], [Finding("MIG-HELM-038", "warning", path, line,
                                f"{ci.address} runs the controller image {value} from a mirror, its tag the chart's "
                                f"version (${var}): with chart {version} it pulls {repo}:{want}",
                                f"copy {FACTS['repository']}:{want} to {repo} before the chart moves")]
        return [], [Finding("MIG-HELM-038", "error", path, line,
                            f"{ci.address} pins the controller image {value}: chart {version} would run it under its "
                            "own CRDs and values",
                            f"remove {keys['image']} (the chart then runs its own image), or set it to "
                            f"{FACTS['repository']}:{want} and its digest")]
    tag, path, line = got[keys["tag"]]
    if tag == want or tag.lstrip("v") == want.lstrip("v"):
        return [], []
    repo = got.get(keys["repository"], (FACTS["repository"],))[0]
    digest = got.get(keys["digest"])
    if digest is not None:
        return [], [Finding("MIG-HELM-038", "error", digest[1], digest[2],
                            f"{ci.address} pins the controller image {repo}:{tag}@{digest[0][:19]}...: with chart "
                            f"{version}, the old controller would run under the new CRDs, and its digest cannot be "
                            "worked out here",
                            f"set {keys['tag']} to {want} and {keys['digest']} to the digest of {repo}:{want} "
                            f"(crane digest {repo}:{want}), or remove both so the chart runs its own image")]
    if repo != FACTS["repository"]:
        return [], [Finding("MIG-HELM-038", "error", path, line,
                            f"{ci.address} pins the controller image {repo}:{tag} (not the upstream "
                            f"{FACTS['repository']}): chart {version} would run that old controller under its CRDs",
                            f"copy {FACTS['repository']}:{want} to {repo}, then set {keys['tag']} to {want}")]
    row = {"key": keys["tag"], "set": want,
           "why": f"the pinned controller image follows chart {version} (the old controller would run under its CRDs)"}
    return [row], []
