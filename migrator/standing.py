"""Where a cluster root stands, from evidence, with one precedence (docs/standing.md).

1. What the controller serves: the Karpenter chart version wherever the root sets it (Terraform, Flux, Argo CD,
   kustomize, eksctl, rendered `helm template` output), else the CRD chart's version. A chart >= 1.0 serves v1,
   0.33-0.37 serve v1beta1, 0.32 serves both (counted as v1alpha5 so its hop can finish), older ones v1alpha5.
2. What the objects are: the oldest API generation among the root's Karpenter objects.
3. Nothing else decides. Leftover chart values (`webhook.enabled`, `settings.aws.*`) are cleaned up by the hop the
   root is in; they never pull a root back to an earlier hop.

Objects older than what their controller serves ("the chart was bumped, the manifests were not") are `behind`: their
conversion is planned on its own, without any controller or CRD step (those would go back a version). A root with no
chart, no object and no Karpenter setting at all is `absent`: it gets no hop and no runbook step.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import knowledge
from . import path as route

HOPS = knowledge.load("hops")
ERAS = route.ERAS


@dataclass(frozen=True)
class Standing:
    chart: str | None            # the controller chart version the root runs (or its CRD chart's), when static
    serves: tuple[str, ...]      # the API eras that chart serves, oldest first (empty: no version known)
    objects_era: str | None      # the oldest API era among its objects
    era: str                     # where it stands on the path

    @property
    def chart_era(self) -> str | None:
        """The newest API era the controller serves."""
        return self.serves[-1] if self.serves else None

    @property
    def behind(self) -> bool:
        """Objects older than anything the controller serves: only their conversion is left of the hops between."""
        return bool(self.serves) and self.objects_era is not None and \
            ERAS.index(self.objects_era) < ERAS.index(self.serves[0])

    def past(self, goal: route.Target) -> bool:
        """The root already runs something newer than the target: nothing is planned (never a step back)."""
        if self.serves and ERAS.index(self.serves[0]) > ERAS.index(goal.era):
            return True
        cur = route.parse_version(self.chart) if self.chart else None
        want = route.parse_version(goal.chart) if goal.chart else None
        return cur is not None and want is not None and cur > want


def of(objects_era: str | None, chart: str | None, module_majors: tuple[int, ...] = ()) -> Standing:
    """The precedence: the controller's chart (else the CRD chart: the caller's `chart`) decides the eras served; the
    objects say where in them the root is (objects older than all of them are behind); with neither, the start, or
    the era the root's karpenter module calls (`module_majors`, the majors they pin) are past (`bare_module`)."""
    served = chart
    row = route.served_by(served)
    if row is None:
        return Standing(served, (), objects_era, objects_era or ERAS[0])
    eras = tuple(row["eras"])
    if objects_era is None:
        era = row["bare"]
        past = row.get("bare_module")
        if past is not None and module_majors and all(m > past["above"] for m in module_majors):
            era = past["era"]
    elif ERAS.index(objects_era) < ERAS.index(eras[0]):
        era = objects_era                                   # behind: planned from the objects, objects only
    else:
        era = min(max(objects_era, eras[0], key=ERAS.index), eras[-1], key=ERAS.index)
    return Standing(served, eras, objects_era, era)


def auto_mode(m) -> bool:
    """A NodePool of EKS Auto Mode (its nodeClassRef names an Auto Mode NodeClass), or such a NodeClass: AWS runs
    their controller. An object migrator reads but does not edit (a shell heredoc's, a raw chart's values', a
    local_file template's) carries the answer it was read with."""
    said = getattr(m, "auto_mode", None)
    if isinstance(said, bool):
        return said
    if m.kind == "NodeClass" and str(m.api_version).split("/")[0] == HOPS["auto_mode_node_class_group"]:
        return True
    if m.kind != "NodePool" or not isinstance(m.obj, dict):
        return False
    ref = (((m.obj.get("spec") or {}).get("template") or {}).get("spec") or {}).get("nodeClassRef") or {}
    return isinstance(ref, dict) and ref.get("group") == HOPS["auto_mode_node_class_group"]


API = {e["name"]: e["api"] for e in HOPS["eras"]}


def leftovers(objects: list, st: Standing) -> list:
    """Objects older than anything the chart serves, when the root also holds objects the chart does serve: files
    left behind (an old provisioner.yaml beside the NodePools that replaced it), not where the root stands."""
    if not st.behind:
        return []
    first = ERAS.index(st.serves[0])
    served = [m for m in objects if ERAS.index(API[m.era]) >= first]
    return [m for m in objects if ERAS.index(API[m.era]) < first] if served else []


def unservable(objects: list) -> list:
    """With no chart version known: the objects older than anything a controller serving the root's newest objects
    serves (a v1alpha5 Provisioner beside v1 NodePools: no chart serves both, knowledge/hops.yaml `serves`). The
    newest objects run, so those are leftovers of a move made by hand, not where the root stands."""
    eras = [API[m.era] for m in objects if getattr(m, "era", None) in API]
    if not eras:
        return []
    newest = max(eras, key=ERAS.index)
    first = min((row["eras"][0] for row in HOPS["serves"] if newest in row["eras"]), key=ERAS.index)
    return [m for m in objects if getattr(m, "era", None) in API and ERAS.index(API[m.era]) < ERAS.index(first)]


def installs(hop: dict, phase: str, goal: route.Target | None) -> str | None:
    """The controller chart version a hop's phase installs (knowledge/hops.yaml `chart_phases`), if it moves it."""
    if phase not in hop.get("chart_phases", []):
        return None
    if (hop.get("onward") or hop.get("chart_from_target")) and goal is not None and goal.chart:
        return goal.chart
    return hop.get("chart", {}).get("version")


def goes_back(hop: dict, phase: str, goal: route.Target | None, current: str | None) -> str | None:
    """The version a phase would install when it is lower than the one the root runs (a plan must never do that)."""
    new = installs(hop, phase, goal)
    cur = route.parse_version(current) if current else None
    ver = route.parse_version(new) if new else None
    if cur is not None and ver is not None and ver < cur:
        return new
    return None


def finishing_applies(hop: dict, chart: str | None) -> bool:
    """A hop's finishing phases (knowledge/hops.yaml `finish_phases`) apply while the controller is below the
    version that closes the hop (`finish_below`): a root on a later chart is past them, whatever its values say."""
    below = hop.get("finish_below")
    cur = route.parse_version(chart) if chart else None
    return below is None or cur is None or cur < route.parse_version(below)
