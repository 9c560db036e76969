"""Cluster roots: the directories that each stand for one cluster, and which roots use each file.

A cluster root is where the Karpenter chart is installed or Karpenter objects are kept (a Terraform root module, a
GitOps folder); a directory inside another root belongs to it. Some folders are used by several clusters: a
Terraform module called by relative `source` from several root modules, a kustomize base that several clusters'
kustomizations build. Such a folder is not a root of its own: its files belong to every root that uses it
(`users`), and the plan moves them with the earliest of those roots. A folder of objects that an Argo CD Application
kept in another root syncs is tied to that root (planned with it).
"""
from __future__ import annotations

import posixpath
import re
from typing import Iterator

from . import knowledge
from .evaluate import is_root_module
from .inventory import Manifest, Repo, value_at
from .inventory.terragrunt import cluster_dirs
from .inventory.repo import JSON_TFVARS
from .standing import auto_mode

ROLLOUT = knowledge.load("runbook")["rollout_order"]
SKIP_KINDS = ("Machine", "NodeClaim")          # created by the controller, never a root's configuration
TERRAFORM = (".tf", ".tofu", ".tfvars", ".tf.json", ".tfvars.json")


def root_of(m: Manifest) -> str:
    return posixpath.dirname(m.tf_path or m.path) or "."


def inside(d: str, root: str) -> bool:
    """Is directory d the root directory itself or below it?"""
    return root == "." or d == root or d.startswith(root + "/")


def shared_depth(a: str, b: str) -> int:
    """How many leading folders two paths share (0 for "." or none)."""
    n = 0
    for x, y in zip(a.split("/"), b.split("/")):
        if x != y or x == ".":
            break
        n += 1
    return n


def outermost(dirs: set[str]) -> list[str]:
    """The directories of a set that no other directory of the set contains."""
    dirs = set(dirs)
    # a folder of the set is held by another when "." or one of its own ancestors is in the set (not a pass over every
    # member per folder: quadratic in roots)
    return sorted(d for d in dirs if not (d != "." and "." in dirs or any(a in dirs for a in ancestors(d))))


def ancestors(d: str) -> Iterator[str]:
    """The folders above folder d, nearest first ("a/b/c": "a/b", "a"; "." and "" have none)."""
    x = posixpath.dirname(d)
    while x:
        yield x
        x = posixpath.dirname(x)


def candidate_dirs(objects: set[str], installs: set[str], clusters: set[str] = frozenset()) -> list[str]:
    """Directories that each stand for one cluster: where the Karpenter chart is installed or Karpenter objects
    are kept; a directory inside another one belongs to it. `clusters`: the directories that declare an EKS cluster
    of their own (a Terraform root module calling the eks module, an aws_eks_cluster)."""
    roots = outermost(objects | installs)
    if len(installs) == 1 and len(roots) > 1:
        # one chart install for the whole repository (GitOps: apps/ beside the manifests' folders): one cluster,
        # rooted where its folders meet. Where the install's folder declares its cluster, a folder declaring another
        # is another cluster, whatever it still holds (its Karpenter gone to EKS Auto Mode, its pools left)
        (home,) = installs
        # ... and so is a folder inside one declaring another (an eks root module's folder of pool YAML it applies)
        others = [c for c in clusters if not inside(home, c)]     # a cluster of their own, not around the install
        alone = [r for r in roots if not inside(home, r) and any(inside(r, c) for c in others)] \
            if any(inside(home, c) or inside(c, home) for c in clusters) else []
        rest = [r for r in roots if r not in alone]
        common = posixpath.commonpath(rest) if "." not in rest else "."
        return sorted(alone + [common or "."])
    return roots or ["."]


def declares_cluster(repo: Repo, d: str) -> bool:
    """Does folder `d` declare an EKS cluster of its own (an eks module call or an `aws_eks_cluster`, in its own .tf
    files)?"""
    source = re.compile(knowledge.load("cas")["detect"]["eks_module_source"])
    for _, b in repo.blocks_in(d, "module"):
        src = b.attr("source").literal() if b.attr("source") is not None else None
        if isinstance(src, str) and source.search(src):
            return True
    return any(True for _ in repo.blocks_in(d, "resource", "aws_eks_cluster"))


def _module_users(repo: Repo, d: str, every: bool = False) -> set[str]:
    """The root modules that call directory d by relative source, directly or through other modules (a Terragrunt
    unit whose `terraform.source` is such a folder is a root module that calls it; with `every`, also a unit that
    names neither Karpenter nor Cluster Autoscaler: asked for the folders of installs and objects only)."""
    from .inventory.terragrunt import callers as unit_callers
    from .resolve import callers
    out: set[str] = set()
    seen = {d}
    frontier = [d]
    while frontier:
        x = frontier.pop()
        units = [u.home for u in unit_callers(repo, x, every=every) if not inside(u.home, d)]
        out.update(units)
        found = [posixpath.dirname(cp) or "." for cp, _ in callers(repo, x)]
        found = [c for c in found if not inside(c, d)]
        if not found and not units and x != d:
            out.add(x)
        for c in found:
            if c not in seen:
                seen.add(c)
                frontier.append(c)
    return out


def _kustomize_users(repo: Repo, d: str, manifests: list[Manifest]) -> set[str]:
    """The kustomizations outside d that build every object file of d (d is a base several overlays build)."""
    from .inventory.kustomizations import leaf_kustomizations, scan
    if not scan(repo):
        return set()
    files = {m.path for m in manifests if not m.tf_path and m.kind not in SKIP_KINDS and inside(root_of(m), d)}
    out: set[str] = set()
    for f in sorted(files):
        leaves = [k for k in leaf_kustomizations(repo, f) if not inside(k or ".", d)]
        if not leaves:
            return set()            # a file of d is applied by d itself: d is a cluster's own folder
        out.update(k or "." for k in leaves)
    return out


def _unit_clusters(repo: Repo, dirs: set[str]) -> dict[str, str]:
    """Terragrunt unit folder -> its cluster's folder, for the units among dirs that install or use Karpenter."""
    from .inventory.terragrunt import UNIT_FILE, terragrunt
    if not any(posixpath.normpath(posixpath.join(d, UNIT_FILE)) in repo.files for d in dirs):
        return {}                   # none of them is a unit
    tg = terragrunt(repo)
    found = [u for u in (tg.unit_at(d) for d in sorted(dirs)) if u is not None]
    return cluster_dirs(found) if found else {}


REFERENCES = knowledge.load("hops")["class_references"]     # the node class each provisioning kind names


def _referenced_together(dirs: set[str], manifests: list[Manifest], installs: set[str]) -> set[str]:
    """Folders of objects only (no chart install) whose NodePools name an EC2NodeClass kept only in another such folder
    (Provisioner / AWSNodeTemplate alike) are one cluster's: they become one root where they meet, so a class and the
    pools that use it are planned together."""
    where: dict[tuple[str, str], set[str]] = {}
    for m in manifests:
        if m.kind in {r["class"] for r in REFERENCES.values()} and not m.tf_path:
            where.setdefault((m.kind, str(m.masked.unmask(str(m.name)))), set()).add(root_of(m))
    merged = {d: d for d in dirs}
    for m in manifests:
        if m.kind not in REFERENCES or m.tf_path or not isinstance(m.obj, dict) or auto_mode(m):
            continue                    # an EKS Auto Mode NodePool names a NodeClass, never an EC2NodeClass
        row = REFERENCES[m.kind]
        ref = next((v for v in (value_at(m.obj, tuple(p)) for p in row["paths"]) if isinstance(v, str)), None)
        homes = {h for h in (where.get((row["class"], ref), set()) if ref else set())
                 if not any(inside(h, i) for i in installs)}      # another cluster's class of the same name is not it
        mine = next((d for d in dirs if inside(root_of(m), d)), None)
        if mine is None or len(homes) != 1:
            continue
        other = next((d for d in dirs if inside(next(iter(homes)), d)), None)
        if other is None or other == mine or mine in installs or other in installs:
            continue
        common = posixpath.commonpath([merged[mine], merged[other]]) if "." not in (mine, other) else "."
        if any(inside(d, common or ".") and merged[d] not in (merged[mine], merged[other]) for d in dirs):
            continue                    # where they meet holds other clusters' folders: not one cluster's
        for d in dirs:
            if merged[d] in (merged[mine], merged[other]):
                merged[d] = common or "."
    return set(merged.values())


def _flux_together(repo: Repo, dirs: set[str], charted: set[str], shared: dict[str, set[str]]) -> set[str]:
    """A Flux Kustomization applies its path to its one cluster: every manifest below it when the path has no
    kustomization.yaml, else what that kustomization builds. The roots and shared folders (a base other clusters'
    kustomizations build) it applies are that cluster's, one root where they meet (at most one of them installing the
    Karpenter chart: Cluster Autoscaler's folder beside Karpenter's is the same cluster's, Fola-Git/eks-karpenter-demo);
    the shared folders count it among their users (spack/spack-infrastructure: staging's kustomization builds
    production's NodePool folders, which production's Flux applies with one more of its own)."""
    from .inventory.kustomizations import built_by, flux_paths
    out = set(dirs)
    for fd in sorted(flux_paths(repo), key=lambda x: -len(x)):
        if not fd:
            continue
        built = built_by(repo, fd)
        inner = sorted(d for d in out if inside(d, fd) and (built is None or d == fd
                                                              or any(b == d or inside(b, d) for b in built)))
        bases = sorted(d for d in shared if inside(d, fd) and (built is None or any(b == d or inside(b, d)
                                                                                  for b in built)))
        if not inner or len(inner) + len(bases) < 2 or sum(1 for d in inner if d in charted) > 1:
            continue
        common = posixpath.commonpath(inner + bases) or "."
        if any(inside(d, common) and d not in inner for d in out):
            continue                    # where they meet holds another root: not this path's alone
        out = (out - set(inner)) | {common}
        for b in bases:
            shared[b] = set(shared[b]) | {common}
    return out


def _paired(dirs: set[str], installs: set[str], objects: set[str]) -> set[str]:
    """A folder that installs the chart and holds no Karpenter objects, and a folder of objects only, side by side
    under a folder that holds nothing else of any root (lessons/114/terraform beside lessons/114/k8s): one cluster,
    rooted where they meet, so the objects are planned with the chart values that name their instance profile."""
    out = set(dirs)
    for a in sorted(dirs):
        if a not in out or a not in installs or a in objects or a == ".":
            continue
        parent = posixpath.dirname(a) or "."
        inner = [d for d in out if inside(d, parent) and d != parent]
        others = [d for d in inner if d != a]
        if len(others) == 1 and others[0] not in installs and not inside(others[0], a) and not inside(a, others[0]):
            out -= {a, others[0]}
            out.add(parent)
    return out


class Fleet:
    """The cluster roots of a repository and, for every file, the roots that use it."""

    def __init__(self, repo: Repo, manifests: list[Manifest], charts: list, markers: list[str] = ()):
        self.repo = repo
        objects = {root_of(m) for m in manifests if m.kind not in SKIP_KINDS}
        installs = {posixpath.dirname(c.path) or "." for c in charts if c.chart == "karpenter"}
        charted = set(installs)
        self.charted = charted
        # a cluster with no Karpenter yet that an entry hop starts from (Cluster Autoscaler's install) is a root too
        installs |= {d for d in (posixpath.dirname(p) or "." for p in markers)
                     if not any(inside(d, x) or inside(x, d) for x in objects | installs)}
        self.shared: dict[str, set[str]] = {}       # shared folder -> the directories that use it
        # a Terraform module called by relative source stands for the root modules that call it
        for d in sorted(objects | installs):
            users = _module_users(repo, d, every=True) if d != "." else set()
            if users:
                self.shared[d] = users
        # a unit of the karpenter module (the controller's IAM, the queue) is its cluster's too (an add-on unit that
        # installs the chart is an install already)
        from .inventory.terragrunt import karpenter_module_units
        known = {u.home for u in karpenter_module_units(repo)}
        objects |= known
        # a Terragrunt unit stands for its cluster: the folder where it and the units it depends on meet
        grunt = _unit_clusters(repo, installs | known | {u for us in self.shared.values() for u in us})
        if grunt:
            installs = {grunt.get(d, d) for d in installs}
            objects = {grunt.get(d, d) for d in objects}
            self.shared = {d: {grunt.get(u, u) for u in us} for d, us in self.shared.items()}
        installs = {u for d in installs for u in self.shared.get(d, {d})}
        placed = {u for d in objects for u in self.shared.get(d, {d})}
        clusters = {d for d in placed | installs | {a for x in placed | installs for a in ancestors(x)}
                    if declares_cluster(repo, d)} if len(installs) == 1 else set()
        candidates = candidate_dirs(placed, installs, clusters)
        if candidates == ["."]:
            self.shared.clear()
        else:
            # a folder of objects that kustomizations elsewhere build (a base): it stands for those clusters
            for d in candidates:
                if d not in installs and d not in self.shared:
                    users = _kustomize_users(repo, d, manifests)
                    if users:
                        self.shared[d] = users
        dirs = (set(candidates) - set(self.shared)) | {u for d in candidates for u in self.shared.get(d, ())}
        dirs = _referenced_together(dirs, manifests, installs)
        dirs = _flux_together(repo, dirs, {grunt.get(d, d) for d in charted} if grunt else charted, self.shared)
        dirs = _paired(dirs, {grunt.get(d, d) for d in charted} if grunt else charted, objects)
        self.paths: list[str] = outermost(dirs) or ["."]
        self._owner: dict[str, str] = {}
        self._users: dict[str, tuple[str, ...]] = {}
        self.stages: dict[str, str] = _stages(repo, self.paths)
        self.tied: dict[str, str] = {}
        self.tied = self._tied(manifests)
        self._owner.clear()                         # answers given before the tied folders were known
        self._users.clear()
        # a root module applied once per environment with its own tfvars (`-var-file envs/dev.tfvars`): one cluster
        # per tfvars, each a root of its own named by its tfvars file
        self.variants: dict[str, tuple[str, str]] = {}      # root name (its tfvars) -> (root module, tfvars)
        self.split: dict[str, list[str]] = {}               # root module -> its environments' root names
        for r in self.paths:
            if r in self.tied.values() or not any(inside(d, r) for d in objects | installs):
                continue                # a root of nothing to move (a repository without Karpenter or Cluster Autoscaler)
            envs = environment_tfvars(repo, r)
            if len(envs) > 1:
                self.split[r] = sorted(envs, key=rollout_key)
                self.variants.update({e: (r, e) for e in envs})

    # -- which root a file belongs to -------------------------------------------------------------------------------

    def _above(self, d: str) -> list[str]:
        """The roots folder d is in (itself or below it), found among d's own ancestors, not by a pass over every root
        (asked for every file: a pass would make the plan quadratic in roots)."""
        paths = self.paths
        cache = self.__dict__.get("_above_of")
        if cache is None or cache[0] is not paths:
            cache = self._above_of = (paths, set(paths), {})
        got = cache[2].get(d)
        if got is None:
            got = [x for x in (d, *ancestors(d)) if x in cache[1]] + (["."] if d != "." and "." in cache[1] else [])
            got = cache[2][d] = sorted(got, key=paths.index)
        return got

    def _nearest(self, d: str) -> str:
        above = self._above(d)
        if above:
            return max(above, key=len)
        return max(self.paths, key=lambda r: (shared_depth(d, r), -self.paths.index(r)))

    def _tied_nearest(self, d: str) -> bool:
        """Is folder d, outside every root, as near by path to several roots as to the nearest one?"""
        if self._above(d):
            return False
        best = max(shared_depth(d, r) for r in self.paths)
        return sum(1 for r in self.paths if shared_depth(d, r) == best) > 1

    def _shared_dir(self, d: str) -> str | None:
        return max((s for s in self.shared if inside(d, s)), key=len, default=None)

    def users(self, path: str) -> tuple[str, ...]:
        """Every cluster root that uses a file (several for a shared module's or base's files), in rollout order."""
        got = self._users.get(path)
        if got is None:
            got = self._users[path] = self._environments(path, self._users_of(path))
        return got

    @property
    def roots(self) -> list[str]:
        """Every cluster root's name: a folder, or the tfvars of one environment of a root module (Fleet.variants)."""
        return [v for r in self.paths for v in self.split.get(r, [r])]

    def base(self, root: str) -> str:
        """The folder of a cluster root (an environment's tfvars stands for its root module's folder)."""
        return self.variants[root][0] if root in self.variants else root

    def others(self, root: str) -> set[str]:
        """The files an environment's root never reads: the other environments' tfvars of its root module."""
        if root not in self.variants:
            return set()
        return {e for e in self.split[self.variants[root][0]] if e != root}

    def _environments(self, path: str, users: tuple[str, ...]) -> tuple[str, ...]:
        """Roots split by environment stand for their environments: a file of one of them (its tfvars, or a file named
        after it: envs/dev.karpenter-nodepools.yaml) is that one's, any other file of the root module is every one's."""
        if not self.split or not any(u in self.split for u in users):
            return users
        out: set[str] = set()
        for u in users:
            envs = self.split.get(u)
            if envs is None:
                out.add(u)
                continue
            # its own tfvars; else the environment whose name the file's starts with (the longest: envs/prod.eu.x
            # is prod.eu's, not prod's)
            named = [e for e in envs if path.startswith(e[:-len(".tfvars")] + ".")]
            own = [path] if path in envs else [max(named, key=len)] if named else envs
            out.update(own)
        return tuple(sorted(out, key=rollout_key))

    def _users_of(self, path: str) -> tuple[str, ...]:
        d = posixpath.dirname(path) or "."
        s = self._shared_dir(d)
        if s is not None:
            found = {self.tied.get(r, r) for r in (self._nearest(u) for u in self.shared[s])}
            return tuple(sorted(found, key=rollout_key))
        if path.endswith(TERRAFORM) and not self._above(d):
            # a Terraform file outside every cluster root belongs to the root modules that call its directory, or
            # to its own root module (another cluster: no root of this plan), never to the root nearest by path; a
            # module only Terragrunt units apply (the cluster's module of each environment's unit) is theirs
            called = _module_users(self.repo, d) or _module_users(self.repo, d, every=True)
            users = {self._nearest(u) for u in called if self._above(u)}
            users |= {self.stages[u] for u in called | {d} if u in self.stages}
            if users:
                return tuple(sorted({self.tied.get(r, r) for r in users}, key=rollout_key))
            r = self._nearest(d)
            callers = _module_users(self.repo, d)
            if callers:
                # a module only root modules outside every cluster root call: the root their files go to (a GitOps
                # root's cluster made in a module of the infra/ root module beside it), when they agree
                got = {self.users(self.repo.tf_in_dir(u)[0]) if self.repo.tf_in_dir(u) else () for u in callers}
                return got.pop() if len(got) == 1 else ()
            if is_root_module(self.repo, d) and self._has_terraform(r):
                return ()           # another cluster's root module
            if (not _near(d, r) or self._tied_nearest(d)) and len(self._loose_folders()) > 1 and len(self.paths) > 1:
                return ()           # one of several clusters' folders outside every root, none of them near it
                                    # (or as near to several roots as to this one: lessons/006 beside lessons/070/k8s
                                    # and lessons/102/k8s)
            return (self.tied.get(r, r),)       # the Terraform of a GitOps root's cluster (infra/ beside clusters/x)
        if self._stray_unit(d):
            return ()
        return (self.owner(path),)

    def owner(self, path: str) -> str:
        """The cluster root a file belongs to: its nearest root ancestor (the first user of a shared folder), else
        the root sharing most of its path."""
        o = self._owner.get(path)
        if o is None:
            d = posixpath.dirname(path) or "."
            s = self._shared_dir(d)
            if s is not None:
                o = self.users(path)[0]
            elif path.endswith(TERRAFORM) and not self._above(d):
                users = self.users(path)
                o = users[0] if users else ""       # "": another root module's file, no cluster root of this plan
            elif self._stray_unit(d):
                o = ""                              # a Terragrunt unit of no cluster root of this plan
            else:
                r = self._nearest(d)
                o = self.tied.get(r, r)
            self._owner[path] = o
        return o

    def _stray_unit(self, d: str) -> bool:
        """Is folder d (or a folder above it) a Terragrunt unit outside every cluster root? Its files are that unit's
        (another cluster's, or a template of one), never the nearest root's. Answered once per folder (and roots)."""
        cache = self.__dict__.get("_stray_of")
        if cache is None or cache[0] is not self.paths:
            cache = self._stray_of = (self.paths, {})
        got = cache[1].get(d)
        if got is None:
            got = cache[1][d] = self._stray_unit_of(d)
        return got

    def _stray_unit_of(self, d: str) -> bool:
        if self._above(d):
            return False
        from .inventory.terragrunt import terragrunt
        x = d
        while x not in ("", "."):
            if posixpath.join(x, "terragrunt.hcl") in self.repo.files and terragrunt(self.repo).unit_at(x) is not None:
                return True
            x = posixpath.dirname(x)
        return False

    def _loose_folders(self) -> set[str]:
        """The Terraform folders outside every cluster root that no other module calls."""
        got = self.__dict__.get("_loose")
        if got is None:
            dirs = {posixpath.dirname(p) or "." for p in self.repo.files if p.endswith((".tf", ".tofu"))}
            got = self._loose = {d for d in dirs if not self._above(d)
                                 and not _module_users(self.repo, d)}
        return got

    def _has_terraform(self, root: str) -> bool:
        """Does a cluster root hold Terraform of its own (then a root module elsewhere is another cluster's)?"""
        got = self.__dict__.setdefault("_tf_roots", {})
        if root not in got:
            got[root] = any(p.endswith((".tf", ".tofu")) and inside(posixpath.dirname(p) or ".", root) for p in self.repo.files)
        return got[root]

    def owns(self, root: str, path: str) -> bool:
        return root in self.users(path)

    @property
    def planned(self) -> list[str]:
        """The roots planned on their own (a tied folder is planned with the root whose Application syncs it)."""
        return [v for r in self.paths if r not in self.tied for v in self.split.get(r, [r])]

    def _flux_cluster_ties(self) -> dict[str, str]:
        """One Flux cluster's folders kept apart (its Kustomizations side by side in `clusters/prod`, their paths
        `controllers/prod/karpenter` and `configs/prod/karpenter-nodes`): a root of objects only goes with the one root
        among them that installs the chart, when no other cluster's Kustomizations apply it."""
        from .inventory.kustomizations import flux_appliers
        appliers = flux_appliers(self.repo)
        applied: dict[str, set[str]] = {}          # root -> the cluster folders whose Kustomizations apply it
        for fd, folders in appliers.items():
            for r in self.paths:
                if fd and inside(r, fd):
                    applied.setdefault(r, set()).update(folders)
        def charted(x: str) -> bool:         # a root that installs the chart (itself, or a folder inside it)
            return any(inside(c, x) for c in self.charted)
        out = {}
        for r, folders in applied.items():
            if charted(r) or len(folders) != 1:
                continue
            mates = [x for x in self.paths if charted(x) and applied.get(x) == folders]
            if len(mates) == 1:
                out[r] = mates[0]
        return out

    def _tied(self, manifests: list[Manifest]) -> dict[str, str]:
        """Folders of objects that an Argo CD Application or a Flux Kustomization kept in another cluster root applies
        (its `path:`, directly or through the kustomizations that build them): folder root -> the root that holds the
        Application / Kustomization, when that is one."""
        from .inventory.kustomizations import app_files, deployers, flux_paths
        files = app_files(self.repo)
        found: dict[str, set[str]] = {}
        for m in manifests:                 # Flux: a Kustomization's path is the folder and every folder below it
            if m.tf_path or m.kind in SKIP_KINDS or self._shared_dir(posixpath.dirname(m.path) or "."):
                continue
            d = posixpath.dirname(m.path) or "."
            r = self._nearest(d)
            for fd, (_name, fp) in flux_paths(self.repo).items():
                holder = self._nearest(posixpath.dirname(fp) or ".")
                if (fd == "" or inside(d, fd)) and holder != r and inside(posixpath.dirname(fp) or ".", holder) \
                        and not inside(posixpath.dirname(fp) or ".", r):
                    found.setdefault(r, set()).add(holder)
        for r, h in self._flux_cluster_ties().items():
            found.setdefault(r, set()).add(h)
        if not files:
            return {r: next(iter(t)) for r, t in found.items() if len(t) == 1}
        for m in manifests:
            if m.tf_path or m.kind in SKIP_KINDS or self._shared_dir(posixpath.dirname(m.path) or "."):
                continue
            r = self._nearest(posixpath.dirname(m.path) or ".")
            for how, what in deployers(self.repo, m.path):
                if how == "argocd" and what in files and self._nearest(posixpath.dirname(files[what]) or ".") != r:
                    found.setdefault(r, set()).add(self._nearest(posixpath.dirname(files[what]) or "."))
        return {r: next(iter(t)) for r, t in found.items() if len(t) == 1}


ENVIRONMENTS = knowledge.load("resolve")["environment_tfvars"]


def environment_tfvars(repo: Repo, root: str) -> list[str]:
    """The tfvars files a root module is applied with once per environment (`terraform apply -var-file=envs/dev.tfvars`):
    the ones Terraform does not load by itself (terraform.tfvars, *.auto.tfvars), in the root module's folder or a
    folder below it with no Terraform code of its own (envs/), each setting a variable the module declares. Files
    named as examples or test fixtures are no environment (knowledge/resolve.yaml `environment_tfvars`)."""
    here = root if root != "." else ""
    code = repo.tf_in_dir(here)
    if not code:
        return []
    declared = {b.labels[0] for p in code for b in (repo.hcl(p).blocks if repo.hcl(p) is not None else [])
                if b.type == "variable" and b.labels}
    out = []
    below = repo.tfvars_files() if not here else \
        [q for q in repo.tfvars_files() if q.startswith(here + "/")]         # only the root's own folder and below
    for p in below:
        name = posixpath.basename(p)
        if p.endswith(JSON_TFVARS):     # an environment's own values are appended to its tfvars, in HCL
            continue
        if name in ENVIRONMENTS["loaded"] or name.endswith(tuple(ENVIRONMENTS["loaded_suffixes"])) or \
                any(w in name.lower() for w in ENVIRONMENTS["not_environments"]):
            continue
        d = posixpath.dirname(p)
        x = d
        while x != here and not repo.tf_in_dir(x) and x:
            x = posixpath.dirname(x)
        if x != here or not inside(d or ".", root):
            continue                    # another module's (its nearest folder with Terraform code is not this root)
        f = repo.hcl(p)
        if f is not None and set(f.attributes) & declared:
            out.append(p)
    return out


def _stages(repo: Repo, roots: list[str]) -> dict[str, str]:
    """Terraform stages of a root's cluster (migrator/stages.py): a root module outside every root that makes the
    cluster or its node groups (itself or through its modules), linked by terraform_remote_state with Terraform of
    exactly one root (either side reading, and connecting to its cluster through that state) -> that root. Its files
    are planned with that root."""
    from .cas import scan
    from .stages import links, module_tree, reads_cluster
    if len(roots) == 1 and roots[0] == ".":
        return {}
    inv = scan(repo)
    made = {posixpath.dirname(p) or "." for p, _ in inv.eks_modules} | \
        {posixpath.dirname(p) or "." for p, _ in repo.blocks("resource", "aws_eks_cluster")} | \
        {posixpath.dirname(g.path) or "." for g in inv.groups if g.source != "eksctl"}
    found: dict[str, set[str]] = {}
    for link in links(repo):
        if not reads_cluster(repo, link):
            continue                    # the state is read for something else than the cluster
        for stage, other in ((link.producer, link.reader), (link.reader, link.producer)):
            if any(inside(stage, r) for r in roots) or not is_root_module(repo, stage) or not module_tree(repo, stage) & made:
                continue
            homes = {r for r in roots if inside(other, r)} or \
                {r for u in _module_users(repo, other) for r in roots if inside(u, r)}
            if homes:
                found.setdefault(stage, set()).update(homes)
    return {s: next(iter(rs)) for s, rs in found.items() if len(rs) == 1}


def _near(d: str, root: str) -> bool:
    """Is a Terraform folder outside a GitOps root plausibly that root's cluster: above it, beside it under a
    common folder, or named like one of its folders (infra/prod beside clusters/prod)?"""
    if d == "." or inside(root, d):
        return True
    top = d.split("/")
    return top[0] == root.split("/")[0] or top[-1] in root.split("/")


def rollout_key(path: str) -> tuple[int, str]:
    """Sort key for the order teams roll out in: development, staging, others, production (knowledge/runbook.yaml
    `rollout_order`), then by path."""
    return (tier_of(path)[0], path)


def tier_of(path: str) -> tuple[int, str]:
    parts: set[str] = set()
    for segment in path.lower().split("/"):
        words = [w for w in re.split(r"[_.\-]", segment) if w]
        parts.update(words)
        parts.update("-".join(pair) for pair in zip(words, words[1:]))      # non-prod, pre-prod
    for i, row in enumerate(ROLLOUT):
        if parts & set(row["words"]):
            return i, row["tier"]
    return next((i, row["tier"]) for i, row in enumerate(ROLLOUT) if not row["words"])
