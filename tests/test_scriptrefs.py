"""Scripts that apply manifests by name (migrator/scriptrefs.py): which file each command names, and the findings a
plan's deletions and new manifests give them (MIG-EDIT-010, MIG-EDIT-011). The walk is fixtures/auto-mode-scripts."""
from __future__ import annotations

from pathlib import Path

import pytest

from migrator import scriptrefs
from migrator.edits import FileChange
from migrator.inventory.repo import Repo

POOL = "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata:\n  name: default\n"
TWIN = "apiVersion: eks.amazonaws.com/v1\nkind: NodeClass\n---\n" + POOL


def _repo(tmp_path: Path, files: dict[str, str]) -> Repo:
    for p, text in files.items():
        (tmp_path / p).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / p).write_text(text)
    return Repo(tmp_path)


def _targets(repo: Repo) -> set[tuple[str, int, str, str]]:
    return {(r.script, r.line, r.verb, r.target) for r in scriptrefs.references(repo)}


def test_paths_resolve_from_the_script_folder_the_root_and_a_cd(tmp_path):
    repo = _repo(tmp_path, {
        "k8s/pools.yaml": POOL, "ops/local.yaml": POOL,
        "ops/install.sh": "kubectl apply -f local.yaml\n"            # beside the script
                          "kubectl apply -f k8s/pools.yaml\n"        # from the repository's root
                          'cd "${REPO_ROOT}/k8s"\n'                  # a cd matched by its literal tail
                          "kubectl create -f ./pools.yaml\n"
                          "cd -\n"
                          "kubectl apply -f local.yaml\n",
    })
    assert _targets(repo) == {("ops/install.sh", 1, "apply", "ops/local.yaml"),
                              ("ops/install.sh", 2, "apply", "k8s/pools.yaml"),
                              ("ops/install.sh", 4, "create", "k8s/pools.yaml"),
                              ("ops/install.sh", 6, "apply", "ops/local.yaml")}


def test_the_scripts_own_folder_spelled_out(tmp_path):
    """`cd "$(dirname "$0")"` and `$(dirname "${BASH_SOURCE[0]}")/x.yaml` name the script's folder, wherever it runs."""
    repo = _repo(tmp_path, {
        "k8s/pools.yaml": POOL, "pools.yaml": POOL,
        "k8s/up.sh": 'cd "$(dirname "$0")"\nkubectl apply -f pools.yaml\n',
        "k8s/down.sh": 'kubectl delete -f "$(dirname "${BASH_SOURCE[0]}")/pools.yaml"\n'
                       'kubectl delete -f ${BASH_SOURCE%/*}/../pools.yaml\n',
    })
    assert _targets(repo) == {("k8s/up.sh", 2, "apply", "k8s/pools.yaml"), ("k8s/down.sh", 1, "delete", "k8s/pools.yaml"),
                              ("k8s/down.sh", 2, "delete", "pools.yaml")}


def test_pushd_popd_and_a_cd_in_the_same_line(tmp_path):
    repo = _repo(tmp_path, {
        "a/pools.yaml": POOL, "b/pools.yaml": POOL,
        "run.sh": "pushd a\nkubectl apply -f pools.yaml\npopd\ncd b && kubectl delete -f pools.yaml\n",
    })
    assert _targets(repo) == {("run.sh", 2, "apply", "a/pools.yaml"), ("run.sh", 4, "delete", "b/pools.yaml")}


@pytest.mark.parametrize("command", [
    "kubectl apply -f ./*.yaml",                        # a glob applies whatever the folder holds
    "kubectl apply -f https://example.com/pools.yaml",  # a URL is no file of the repository
    "cat pools.yaml | kubectl apply -f -",              # stdin
    "kubectl apply -f $DIR/pools.yaml",                 # behind a variable, two files end so
    "kubectl get -f pools.yaml",                        # reads, applies nothing
    "kubectl apply -f 'pools.yaml",                     # an unbalanced quote: not read
    "echo kubectl-apply pools.yaml",
    "helm template karpenter charts/k > pools.yaml && kubectl apply -f pools.yaml",   # written before it is applied
    "envsubst < t.tmpl | tee pools.yaml\nkubectl apply -f pools.yaml",
    "# kubectl apply -f pools.yaml",                                                 # a comment
])
def test_what_is_no_reference(tmp_path, command):
    repo = _repo(tmp_path, {"pools.yaml": POOL, "x/pools.yaml": POOL, "go.sh": command + "\n"})
    assert scriptrefs.references(repo) == []


def test_makefile_recipes_workflow_steps_flags_and_continuations(tmp_path):
    repo = _repo(tmp_path, {
        "k8s/pools.yaml": POOL, "k8s/classes.yaml": POOL,
        "Makefile": "pools:\n\t@kubectl --context prod apply --filename=k8s/pools.yaml\n",
        ".github/workflows/deploy.yml": "jobs:\n  a:\n    steps:\n      - run: |\n"
                                        "          kubectl apply -f k8s/pools.yaml,k8s/classes.yaml\n",
        "bin/down.sh": "cd ../k8s\nkubectl delete \\\n  -f pools.yaml || true\n",
    })
    refs = scriptrefs.references(repo)
    assert {(r.script, r.line, r.verb, r.target) for r in refs} == {
        ("Makefile", 2, "apply", "k8s/pools.yaml"),
        (".github/workflows/deploy.yml", 5, "apply", "k8s/pools.yaml"),
        (".github/workflows/deploy.yml", 5, "apply", "k8s/classes.yaml"),
        ("bin/down.sh", 2, "delete", "k8s/pools.yaml")}
    assert next(r for r in refs if r.script == "bin/down.sh").command == "kubectl delete -f pools.yaml || true"


def test_a_deleted_file_and_a_new_file_beside_it(tmp_path):
    repo = _repo(tmp_path, {
        "k8s/pools.yaml": POOL, "k8s/storage.yaml": "apiVersion: storage.k8s.io/v1\nkind: StorageClass\n",
        "install.sh": "kubectl apply -f ./k8s/pools.yaml\nkubectl apply -f ./k8s/storage.yaml\n",
    })
    twin = FileChange("k8s/pools-auto-mode.yaml", "create", None, TWIN)
    new = scriptrefs.findings(repo, [twin])
    assert [(f.code, f.path, f.line) for f in new] == [("MIG-EDIT-011", "install.sh", 1)]     # once per script
    assert "kubectl apply -f ./k8s/pools-auto-mode.yaml" in new[0].manual_step
    gone = scriptrefs.findings(repo, [FileChange("k8s/pools.yaml", "delete", POOL, None)])
    assert [(f.code, f.path, f.line, f.severity) for f in gone] == [("MIG-EDIT-010", "install.sh", 1, "warning")]
    # a new file of other API groups (a values file, a Cluster Autoscaler retirement's neighbours) is not said
    values = FileChange("k8s/karpenter-values.yaml", "create", None, "settings:\n  clusterName: x\n")
    assert scriptrefs.findings(repo, [values]) == []
    # a file that is only modified changes nothing for the scripts
    assert scriptrefs.findings(repo, [FileChange("k8s/pools.yaml", "modify", POOL, POOL + "# x\n")]) == []


@pytest.mark.parametrize("line", [
    "kubectl apply -f a.yaml && kubectl get nodes|grep x",
    "(cd manifests; kubectl apply -f nodepool.yaml) &",
    "kubectl apply -f $V/x.yaml 2>&1 >> log.txt",
    "\tkubectl  delete -f  old.yaml;;echo done ||true",
    "kubectl apply -f 'my file.yaml' -n \"$V\"x && echo \"\" 'a;b'|tee \"out put\"",
    "echo \"unbalanced && kubectl apply -f x.yaml",                          # shlex: no command read
    "cd $(dirname \"$0\") && kubectl apply -f 'my file.yaml' # apply",      # a comment: shlex itself
    "kubectl apply -f a\\ b.yaml",                                            # a backslash: shlex itself
])
def test_a_line_is_split_as_shlex_splits_it(line):
    """A line with no backslash or comment is split by one regex: the words (quoted parts joined, their quotes taken
    off) and operator runs shlex makes; a line with an unbalanced quote is shlex's."""
    import shlex
    from migrator.scriptrefs import _HOME, _VAR, _tokens
    masked = _VAR.sub("$V", _HOME.sub(lambda _m: "\x01.", line))
    lex = shlex.shlex(masked, posix=True, punctuation_chars=";&|()")
    lex.whitespace_split = True
    try:
        expected = list(lex)
    except ValueError:
        expected = []
    assert _tokens(line, ".") == expected
