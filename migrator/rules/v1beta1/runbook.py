"""Runbook steps of the v1alpha5 -> v1beta1 hop, from knowledge/runbook.yaml and what its rules found."""
from __future__ import annotations

import json
import posixpath
import re
import shlex

from ...rendered import RenderResult, runbook_values

from ... import knowledge
from ...model import Step
from . import helm
from .helm import HelmResult
from .iam import IamResult
from .manifests import Result
from .terraform_module import ModuleResult
from .workloads import WorkloadsResult

LEGACY_TAINT = knowledge.load("v1beta1")["nodepool"]["legacy_taint_key"]


def root_targets(repo, d: str, addr: str, depth: int = 0, owns=None) -> list[tuple[str, str]]:
    """Where a resource of a called module is applied: in each root that calls it (by relative source), under
    `module.<name>.` (followed through modules calling modules). With `owns` (one cluster root's files), only the
    calls that root makes."""
    from ...inventory.terragrunt import callers as unit_callers
    from ...resolve import callers
    found = callers(repo, d) if repo is not None and depth < 4 else []
    if owns is not None:
        found = [(cp, cb) for cp, cb in found if owns(cp)] or found
    if not found:
        units = unit_callers(repo, d, every=True) if repo is not None else []   # a Terragrunt unit applies the module
        if owns is not None:
            units = [u for u in units if owns(u.path)] or units
        return [(u.dir, addr) for u in units] or [(d, addr)]
    return [t for cp, cb in found
            for t in root_targets(repo, posixpath.dirname(cp), f"module.{cb.labels[0]}.{addr}", depth + 1, owns)]


def _by_dir(targets: list[tuple[str, str]], repo=None, owns=None) -> dict[str, str]:
    """`-target=` arguments grouped by Terraform root module directory (resources of a shared module under the
    roots that call it, when the repository is given; only this cluster root's calls with `owns`)."""
    out: dict[str, list[str]] = {}
    for d, addr in [t for d0, a0 in targets for t in root_targets(repo, d0 or "", a0, owns=owns)]:
        out.setdefault(d or ".", [])
        if addr not in out[d or "."]:
            out[d or "."].append(addr)
    # an empty address stands for the whole root module (a Terragrunt unit of a registry module: no -target)
    return {d: " ".join(f"-target={shlex.quote(a)}" for a in addrs if a) for d, addrs in sorted(out.items())}


def plain_terraform(command: str, groups: dict[str, dict[str, str]], values: dict, repo=None) -> list[str]:
    """A terraform command with no targets (`terraform init -upgrade`): run by terragrunt in each unit folder the
    step's targets are applied in, when they are Terragrunt units."""
    units = sorted({d for g in groups.values() for d in g if repo is not None and _is_unit(repo, d)})
    dirs = sorted({d for g in groups.values() for d in g})
    if command.startswith("terraform ") and not units and dirs and dirs != ["."]:
        # plain root modules: the command runs in each folder the step's targets are applied in
        return [command.format(**values).replace("terraform ", f"terraform -chdir={shlex.quote(d)} ", 1) for d in dirs]
    if not command.startswith("terraform ") or not units:
        return [command.format(**values)]
    body = _TF_COMMAND.sub("terragrunt ", command.format(**values))
    return [_in_unit(repo, d, body) for d in units]


_TF_COMMAND = re.compile(r"(?<![\w./-])terraform (?=[a-z])")     # the terraform CLI where a command runs it


def _is_unit(repo, d: str) -> bool:
    """Is folder d a Terragrunt unit (its own terragrunt.hcl, or one a stack generates)? Asked for every command of
    every step: answered once per folder and run."""
    memo = repo.__dict__.setdefault("_unit_dirs", {})
    got = memo.get(d)
    if got is None:
        got = memo[d] = posixpath.normpath(posixpath.join(d, "terragrunt.hcl")) in repo.files or \
            _stack_of(repo, d) is not None
    return got


def _stack_of(repo, d: str) -> str | None:
    """The stack folder of a unit folder that `terragrunt stack generate` makes (`live/prod/.terragrunt-stack/x`)."""
    from ...inventory.terragrunt import STACK_FILE, terragrunt
    if ".terragrunt-stack" not in d or not any(p.endswith(STACK_FILE) for p in repo.files):
        return None
    u = terragrunt(repo).generated.get(d)
    return u.home if u is not None else None


def _in_unit(repo, d: str, cmd: str) -> str:
    """A terragrunt command run in a unit's folder: a stack's unit folder is generated first, from its stack."""
    stack = _stack_of(repo, d)
    if stack is not None:
        return f"(cd {shlex.quote(stack)} && terragrunt stack generate && cd {shlex.quote(posixpath.relpath(d, stack))} " \
               f"&& {cmd})"
    return f"(cd {shlex.quote(d)} && {cmd})" if d != "." else cmd


def _terraform(command: str, key: str, groups: dict[str, str], values: dict, repo=None) -> list[str]:
    """One command per root module: `terraform -chdir=<dir> ...` unless the only root is the repository root; a
    Terragrunt unit's folder runs `terragrunt` there (it passes the arguments on to terraform)."""
    if not groups:
        return []
    out = []
    for d, args in groups.items():
        cmd = command.format(**{**values, key: args})
        if repo is not None and _is_unit(repo, d):
            cmd = re.sub(r" {2,}", " ", _TF_COMMAND.sub("terragrunt ", cmd)).rstrip()     # no -target: one space
            cmd = _in_unit(repo, d, cmd)
        elif not (len(groups) == 1 and d == "."):
            cmd = cmd.replace("terraform ", f"terraform -chdir={shlex.quote(d)} ", 1)
        out.append(cmd)
    return out


def old_count(old: list, kind: str) -> int:
    return len({where for k, _, where in old if k == kind})


def _taint_patch(has_taints: bool) -> str:
    """JSON patch adding the migration taint without replacing a Provisioner's other taints."""
    taint = {"key": LEGACY_TAINT, "value": "true", "effect": "NoSchedule"}
    op = {"op": "add", "path": "/spec/taints/-", "value": taint} if has_taints else \
        {"op": "add", "path": "/spec/taints", "value": [taint]}
    return shlex.quote(json.dumps([op], separators=(",", ":")))


def _each(command: str, var: str, names: list[str], sources: int, values: dict,
          tainted: set[str] = frozenset()) -> list[str]:
    """One command per known object name; a loop over the cluster when some names are only known there."""
    out = [command.format(**{var: shlex.quote(n)}, **{**values, "legacy_taint_patch": _taint_patch(n in tainted)})
           for n in names]
    if not names:               # objects only known to the cluster (templated names, or kept elsewhere)
        resource = {"provisioner": "provisioners", "nodetemplate": "awsnodetemplates"}[var]
        out.append(f"for name in $(kubectl get {resource} -o name); do "
                   + command.format(**{var: '"${name##*/}"'}, **{**values, "legacy_taint_patch": _taint_patch(True)})
                   + "; done")
    return out


def rendered_values(rnd: RenderResult, rnd_clean: RenderResult) -> dict:
    """Commands that re-render charts committed as `helm template` output (migrator/rendered.py)."""
    q = shlex.quote
    return {**runbook_values(rnd_clean, "cleanup"), **runbook_values(rnd),
            "render_pass_command": f"{rnd.pass_command} > {q(rnd.chart_file)}" if rnd.pass_command else ""}


def manifest_deployers(repo, files: list[str]) -> dict[str, list[str]]:
    """Files applied by kubectl, kustomization directories applied with -k (or built with --enable-helm when they
    also install a chart), and Argo CD Applications synced, for the given manifest files (kustomize.deployers)."""
    from ...inventory.kustomizations import deployers, kustomization_in
    out: dict[str, list[str]] = {"yaml": [], "kustomize": [], "kustomize_helm": [], "argocd": []}
    for f in files:
        for how, what in deployers(repo, f):
            what = what or "."
            if how == "kustomize" and "helmCharts" in repo.text(kustomization_in(repo, "" if what == "." else what)):
                how = "kustomize_helm"
            if what not in out[how]:
                out[how].append(what)
    return out


def chart_flavours(helm_results: list, rendered: list | None = None) -> list[str]:
    """How the charts are installed: Terraform, Flux, Argo CD, rendered with helm template, else the helm CLI."""
    kinds = set().union(*(r.kinds for r in helm_results)) if helm_results else set()
    tf = any(a for r in helm_results for a in r.chart_tf)
    ren = any(r.charts for r in rendered or [])
    kz = any(r.kustomizations for r in helm_results)
    # an umbrella chart Argo CD syncs (an Application's path is its folder) is synced, never upgraded with helm
    synced = "umbrella" in kinds and all(c in a for r in helm_results if r.umbrellas
                                         for a in [getattr(r, "umbrella_apps", {})]
                                         for c in ["karpenter"] + (["karpenter-crd"] if r.crd_umbrellas else []))
    return [f for f, ok in (("terraform", tf), ("flux", "flux" in kinds), ("argocd", "argocd" in kinds),
                            ("kustomize", kz), ("rendered", ren), ("helm", bool(kinds & {"helm", "eksctl"}) or (not kinds and not ren)),
                            ("umbrella", "umbrella" in kinds and not synced), ("umbrella_argocd", synced),
                            ("helmfile", "helmfile" in kinds))
            if ok]


def umbrella_values(helm_results: list) -> dict:
    """The umbrella chart that carries the karpenter charts (its folder, and its release: the chart's name), and the
    helmfile that installs them (its path and the two releases' names)."""
    found = [u for r in helm_results for u in getattr(r, "umbrellas", [])]
    d, name = found[0] if found else (".", "")
    crds = [u for r in helm_results for u in getattr(r, "crd_umbrellas", [])]
    cd, cname = crds[0] if crds else (d, name)      # the umbrella that carries karpenter-crd (the same, or a second)
    apps = {k: v for r in helm_results for k, v in getattr(r, "umbrella_apps", {}).items()}
    files = [h for r in helm_results for h in getattr(r, "helmfiles", [])]
    main = next((h for h in files if h[2] == "karpenter"), None)
    crd = next((h for h in files if h[2] == "karpenter-crd"), None)
    return {"umbrella_dir": shlex.quote(d), "umbrella_release": shlex.quote(name or "<release>"),
            "umbrella_crd_dir": shlex.quote(cd), "umbrella_crd_release": shlex.quote(cname or "<release>"),
            "umbrella_app": shlex.quote(apps.get("karpenter", "<application>")),
            "umbrella_crd_app": shlex.quote(apps.get("karpenter-crd", apps.get("karpenter", "<application>"))),
            "helmfile": shlex.quote(main[0] if main else "helmfile.yaml"),
            "helmfile_release": shlex.quote(main[1] if main else "karpenter"),
            "helmfile_crd_release": shlex.quote(crd[1] if crd else "karpenter-crd")}


def crd_flavours(helm_results: list, flavours: list[str]) -> list[str]:
    """How the CRDs are installed: as the charts are, and with the helm CLI where an installer brings no CRD chart
    (eks-blueprints-addons installs the karpenter chart only; a list of add-ons without a karpenter-crd item)."""
    kinds = set().union(*(r.kinds for r in helm_results)) if helm_results else set()
    crd_less = "blueprints" in kinds or (bool(kinds & {"generic", "umbrella", "terragrunt", "helmfile"}) and
                                         not any(r.crd_releases for r in helm_results))
    if "helmfile" in kinds and not any(c == "karpenter-crd" for r in helm_results for _, _, c in r.helmfiles):
        flavours = [f for f in flavours if f != "helmfile"]     # no CRD release in the helmfile: helm installs them
    return flavours + ["helm"] if crd_less and "helm" not in flavours else flavours


def adopts_crds(helm_results: list, crd_fl: list[str]) -> bool:
    """Does a CRD release take over CRDs the main chart installed? A karpenter-crd release migrator adds (Helm checks
    ownership; Argo CD and kustomize builds apply them without Helm), or the CRD chart installed with the helm CLI
    where nothing in the repository installed it before: the CRDs are handed to it first (issue 55)."""
    kinds = set().union(*(r.kinds for r in helm_results)) if helm_results else set()
    added = any(r.new_crd_release for r in helm_results) and bool(kinds - {"argocd", "kustomize"})
    by_hand = "helm" in crd_fl and any(r.controllers for r in helm_results) and \
        not any(r.crd_releases for r in helm_results)        # the repository installs the chart, not the CRD chart
    return added or by_hand


def crd_release_name(helm_results: list) -> str:
    return next((r.crd_release_name for r in helm_results if r.crd_release_name), "karpenter-crd")


def argo_names(hr) -> dict:
    """Argo CD Application names of the controller and CRD installs (quoted for the shell)."""
    app = next((a.split("/", 1)[1] for a in hr.controllers if a.startswith("Application")), "karpenter")
    crd = next((a.split("/", 1)[1] for a in hr.crd_releases if a.startswith("Application")), f"{app}-crd")
    return {"argo_app": shlex.quote(app), "argo_crd_app": shlex.quote(crd)}


def steps(hop: dict, ctx) -> list[Step]:
    """The whole ordered runbook of the hop, from the step table and what the rules found."""
    table = knowledge.load("runbook")[f"{hop['from']}->{hop['to']}"]
    prep = ctx.result(hop, "prepare")
    clean = ctx.result(hop, "cleanup")
    man = prep.get("v1beta1/manifests") or Result()
    hr = prep.get("v1beta1/helm") or HelmResult()
    old = man.old_objects or []
    provisioners = sorted({n for k, n, _ in old if k == "Provisioner"})
    templates = sorted({n for k, n, _ in old if k == "AWSNodeTemplate"})
    rnd = prep.get("v1beta1/rendered") or RenderResult()
    rnd_clean = clean.get("v1beta1/rendered") or RenderResult()
    flavours = chart_flavours([hr], [rnd])
    yaml_new = [f for f in man.new_files if f.endswith((".yaml", ".yml"))]
    applied = manifest_deployers(ctx.repo, yaml_new)
    chart_version = hop["chart"]["version"]
    values = {
        **umbrella_values([hr]),
        "chart_version": chart_version,
        # OCI tags below 0.35.0 carry a v prefix (knowledge/helm.yaml v_prefix_before)
        "chart_version_spelled": helm.format_version(chart_version, "v"),
        "rollback_version": hop["chart"].get("rollback_to", ""),
        "pass_through": hr.pass_through or rnd.pass_through or "",
        "namespace": shlex.quote(sorted(hr.namespaces)[0]) if hr.namespaces else
        shlex.quote(rnd.namespace) if rnd.namespace else '"${KARPENTER_NAMESPACE}"',
        **rendered_values(rnd, rnd_clean),
        **argo_names(hr),
        "chart_kustomization": shlex.quote(hr.kustomizations[0]) if hr.kustomizations else ".",
        "provisioners": ", ".join(provisioners) or "(none found)",
        "new_files": ", ".join(man.new_files) or "(none)",
    }
    table_all = knowledge.load("runbook")
    strategy = next(x for x in table_all["strategies"] if x["id"] == "taint-drift")
    managed = sorted({w.rsplit(":", 1)[0] for k, _, w in old if k == "Provisioner"})
    values["recommended"] = (f"{strategy['name']}: {strategy['how']} ({strategy['tradeoff']})."
                             + (f" The Provisioners are defined in {', '.join(managed)}: add the taint there "
                                "(spec.taints), or the next apply or sync removes it." if managed else ""))
    wl = prep.get("v1beta1/workloads") or WorkloadsResult()
    iam_res = prep.get("v1beta1/iam") or IamResult()
    mod = prep.get("v1beta1/terraform_module") or ModuleResult()
    target_groups = {
        "targets": _by_dir(man.tf_targets, ctx.repo, ctx.owns),
        "crd_targets": _by_dir(hr.crd_tf, ctx.repo, ctx.owns),
        "chart_targets": _by_dir(hr.chart_tf, ctx.repo, ctx.owns),
        "iam_targets": _by_dir(iam_res.targets, ctx.repo, ctx.owns),
        "module_targets": _by_dir(mod.tf_targets, ctx.repo, ctx.owns),
    }
    values["policy_file"] = shlex.quote(iam_res.files[0]) if iam_res.files else "policy.json"
    refs_by_kind = {
        "crds": hr.refs, "chart": hr.refs,
        "manifests": [w for _, _, w in old],
        "roll-nodes": [w for k, _, w in old if k == "Provisioner"],
        "iam": iam_res.policies, "module": mod.refs,
        "workloads": [f"{f.path}:{f.line}" for f in wl.findings],
        "cleanup": [w for _, _, w in old],
    }
    flags = {
        "terraform": bool(man.new_addresses),
        "yaml": any(f.endswith((".yaml", ".yml")) for f in man.new_files),
        # adopting existing CRDs into a Helm release; Argo CD and kustomize builds apply them without Helm
        "new_crd_release": adopts_crds([hr], crd_flavours([hr], flavours)),
        "pass_through": bool(hr.pass_through or rnd.pass_through),
        "rendered_cleanup": bool(rnd_clean.chart_command) and rnd_clean.chart_command != rnd.chart_command,
        "module": bool(mod.edits),
        # the v20 move happens in cleanup for every module kept on v19 during the migration
        "module_v20": bool(mod.modules) and not any(f.code == "MIG-MOD-002" for f in mod.findings),
        "iam": bool(iam_res.edits),
        "workloads": bool((prep.get("v1beta1/workloads") or WorkloadsResult()).findings),
    }
    out: list[Step] = []
    for row in table:
        if row.get("when") and not flags.get(row["when"]):
            continue
        raw = row.get("commands", [])
        if isinstance(raw, dict):
            fl = [f for f, ok in (("terraform", bool(iam_res.targets)), ("json", bool(iam_res.files))) if ok] \
                if row["kind"] == "iam" else [f for f in ("yaml", "kustomize", "kustomize_helm", "argocd") if applied[f]] \
                if row["kind"] == "manifests" else crd_flavours([hr], flavours) if row["kind"] == "crds" else flavours
            raw = [c for f in fl for c in raw.get(f, [])] + raw.get("all", [])
        def expand(lines: list[str]) -> list[str]:
            return _expand(lines, ctx, man, old, provisioners, templates, target_groups, applied, values)

        cmds = list(dict.fromkeys(expand(raw)))      # one umbrella for both charts: its commands once
        files = _files(row, man, hr, clean, wl, iam_res, mod)
        out.append(Step(id=f"{hop['to']}-{len(out) + 1:02d}-{row['id']}", phase=row["phase"], kind=row["kind"],
                        title=row["title"].format(**values), detail=row.get("detail", "").format(**values).strip(),
                        commands=guarded([c for c in cmds if c.strip()]), files=files,
                        verify=expand(row.get("verify", [])),
                        rollback=row.get("rollback", "").format(**values).strip(),
                        refs=sorted(set(refs_by_kind.get(row["kind"], [])))))
    return out


def _expand(lines: list[str], ctx, man, old: list, provisioners: list[str], templates: list[str],
            target_groups: dict, applied: dict, values: dict) -> list[str]:
    """A step's command lines, each expanded over what it names: every Provisioner or AWSNodeTemplate, every
    Terraform root's targets, every new file, kustomization or Application that applies the new objects."""
    out: list[str] = []
    for c in lines:
        if "{provisioner}" in c:
            todo = [p for p in provisioners if not ("patch" in c and p in man.legacy)]
            out.extend(_each(c, "provisioner", todo, old_count(old, "Provisioner") if not provisioners else 0,
                             values, man.tainted))
        elif "{nodetemplate}" in c:
            out.extend(_each(c, "nodetemplate", templates, old_count(old, "AWSNodeTemplate"), values))
        elif any("{" + k + "}" in c for k in target_groups):
            key = next(k for k in target_groups if "{" + k + "}" in c)
            out.extend(_terraform(c, key, target_groups[key], values, ctx.repo))
        elif "{local_file_output}" in c:
            out.extend(man.rendered)            # whole commands (inventory/localfiles.py apply_command)
        elif "{new_file}" in c:
            out.extend(c.format(new_file=shlex.quote(f), **values) for f in applied["yaml"])
        elif "{new_kustomization}" in c:
            out.extend(c.format(new_kustomization=shlex.quote(d), **values) for d in applied["kustomize"])
        elif "{new_helm_kustomization}" in c:
            out.extend(c.format(new_helm_kustomization=shlex.quote(d), **values)
                       for d in applied["kustomize_helm"])
        elif "{new_app}" in c:
            out.extend(c.format(new_app=shlex.quote(a), **values) for a in applied["argocd"])
        else:
            out.extend(plain_terraform(c, target_groups, values, ctx.repo))
    return out


def _files(row: dict, man, hr, clean: dict, wl, iam_res, mod) -> list[str]:
    """The files a step's kind changes."""
    files: list[str] = []
    if row["kind"] == "manifests":
        files = sorted(set(man.new_files) | {e.path for e in man.edits})
    elif row["kind"] in ("crds", "chart"):
        files = sorted({e.path for e in hr.edits})
    elif row["kind"] == "cleanup":
        files = sorted({e.path for r in clean.values() for e in r.edits})
    elif row["kind"] == "workloads":
        files = sorted(set(wl.files))
    elif row["kind"] == "iam":
        files = sorted({e.path for e in iam_res.edits})
    elif row["kind"] == "module":
        src = mod if row["phase"] == "prepare" else (clean.get("v1beta1/terraform_module") or ModuleResult())
        files = sorted({e.path for e in src.edits})
    return files


def guarded(commands: list[str]) -> list[str]:
    """The commands, opened by a check of each shell variable they read that the repository did not state
    (knowledge/runbook.yaml `shell_inputs`): unset, the step stops saying what to set, before any command runs."""
    inputs = knowledge.load("runbook")["shell_inputs"]
    used = [v for v in inputs if any("${" + v + "}" in c for c in commands)]
    return [f': "${{{v}:?{inputs[v]}}}"' for v in used] + commands
