"""Text searches over the repository (`Repo.containing`) answer as a plain pass over every file would, in discovery
order, whatever searches came before (a part of the needle, the same needle over fewer files), and a plan's second
pass (`based_on`) answers from the changed files and the first pass's answers exactly as a fresh search would."""
from __future__ import annotations

import itertools
from pathlib import Path

from migrator.discover import Discovery, SourceFile
from migrator.inventory.repo import Repo

FILES = {
    "a/values.yaml": "image: karpenter.sh/x\ncluster-autoscaler: 1\n",
    "a/main.tf": 'resource "helm_release" "karpenter" {}\n',
    "a/copy.yml": "kind: Application # argoproj.io karpenter.k8s.aws/\n",     # d/app.yml's text, listed before it
    "b/ops.sh": "kubectl apply -f karpenter.yaml\n",
    "b/Kustomization": "resources: [cluster-autoscaler.yaml]\n",
    "c/policy.json": '{"Statement": []}\n',
    "c/x.tfvars.json": '{"Statement": "karpenter"}\n',
    "d/README.md.yml": "karpenter\n",
    "d/app.yml": "kind: Application # argoproj.io karpenter.k8s.aws/\n",
    "e/Makefile": "kubectl apply -f x.yaml\n",
    "e/old.yaml": "nothing here\n",
    "f/values.yaml": "image: karpenter.sh/x\ncluster-autoscaler: 1\n",             # a copy of a/values.yaml
    "f/copy.sh": "kubectl apply -f karpenter.yaml\n",                             # a copy of b/ops.sh
}
NEEDLES = ["karpenter", "karpenter.sh/", "karpenter.k8s.aws/", "cluster-autoscaler", "kubectl", '"Statement"', "zzz"]
SUFFIXES = [None, (".yaml", ".yml"), (".yaml", ".yml", ".sh", "Kustomization"), (".json",), (".tf", ".tofu"),
            (".sh",)]


def _repo(files: dict[str, str]) -> Repo:
    root = Path("/nonexistent")
    return Repo(root, Discovery(root, {p: SourceFile(p, root / p, t) for p, t in files.items()}, []))


def _plain(files: dict[str, str], needle, suffixes):
    return [p for p, t in files.items() if (suffixes is None or p.endswith(suffixes)) and needle in t]


def test_every_order_of_searches_answers_as_a_plain_pass():
    asks = list(itertools.product(NEEDLES, SUFFIXES))
    for order in (asks, asks[::-1], sorted(asks, key=lambda a: (len(a[0]), str(a[1])))):
        repo = _repo(FILES)
        for needle, suffixes in order:
            assert repo.containing(needle, suffixes) == _plain(FILES, needle, suffixes), (needle, suffixes)


def test_a_second_pass_answers_as_a_fresh_search():
    changed_files = dict(FILES)
    changed_files["a/values.yaml"] = "image: other\n"                    # loses every needle
    changed_files["e/old.yaml"] = "karpenter.sh/v1 cluster-autoscaler\n"  # gains some
    del changed_files["b/ops.sh"]                                         # deleted
    changed_files["f/new.yaml"] = "karpenter.k8s.aws/ kubectl\n"          # added (after every other file)
    changed = {"a/values.yaml", "e/old.yaml", "b/ops.sh", "f/new.yaml"}
    first = _repo(FILES)
    asked = list(itertools.product(NEEDLES, SUFFIXES))
    for needle, suffixes in asked[::2]:                   # the first pass asked some of the searches
        first.containing(needle, suffixes)
    second = _repo(changed_files)
    second.based_on(first, changed)
    for needle, suffixes in asked:
        assert second.containing(needle, suffixes) == _plain(changed_files, needle, suffixes), (needle, suffixes)
    assert second.named("new.yaml") == ["f/new.yaml"] and second.named("ops.sh") == []


def test_path_indexes_of_a_second_pass_are_derived_in_order():
    first = _repo(FILES)
    assert first.in_dir("e") == ["e/Makefile", "e/old.yaml"]
    files = {p: t for p, t in FILES.items() if p != "e/Makefile"}
    files["e/new.sh"] = "x\n"
    second = _repo(files)
    second.based_on(first, {"e/Makefile", "e/new.sh"})
    assert second.in_dir("e") == ["e/old.yaml", "e/new.sh"] == _repo(files).in_dir("e")
    assert second.named("Makefile") == []


CRD = ("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: certificates.cert-manager.io\n"
       "spec:\n  names:\n    kind: Certificate\n  description: see it with kubectl\n")


def test_a_vendored_crd_bundle_is_passed_over_by_every_search():
    """Issue 60: a YAML file of CustomResourceDefinitions that name neither Karpenter nor an autoscaler holds
    nothing a reader looks for (tens of megabytes in some repositories); a file with anything else is searched."""
    files = dict(FILES, **{"v/crds.yaml": "# vendored\n" + CRD + "---\n" + CRD.replace("\n", "\r\n"),
                           # a header of comments, then `---` (prometheus-operator's CRD files)
                           "v/headed.yaml": "# https://example.com/crd.yaml\n\n---\n" + CRD,
                           "v/headed-two.yaml": "# header\n---\n" + CRD + "---\napiVersion: v1\nkind: ConfigMap\n",
                           "v/mixed.yaml": CRD + "---\napiVersion: v1\nkind: ConfigMap\n",
                           "v/vpa.yaml": CRD.replace("certificates.cert", "verticalpodautoscalers.cert"),
                           "v/quoted.yaml": CRD.replace("kind: CustomResourceDefinition", 'kind: "CustomResourceDefinition"'),
                           "v/nokind.yaml": CRD + "---\nfoo: kubectl\n"})
    repo = _repo(files)
    assert [p for p in files if p.startswith("v/") and repo.inert(p)] == ["v/crds.yaml", "v/headed.yaml"]
    for needle, suffixes in itertools.product(NEEDLES, SUFFIXES):
        assert repo.containing(needle, suffixes) == [p for p in _plain(files, needle, suffixes)
                                                  if p not in ("v/crds.yaml", "v/headed.yaml")]


def test_block_lookups_replayed_to_every_asker_as_a_fresh_search_finds_them():
    """Issue 60: `Repo.blocks` answers a question once per run and replays it; an asker that stops early, one that
    starts while another is half way, and one after both see exactly what a fresh search over the files finds, in
    its order, and no file is parsed before some asker reads that far."""
    files = {f"m{i}/main.tf": f'module "karpenter" {{\n  source = "x{i}"\n}}\nmodule "eks" {{\n  source = "e"\n}}\n'
             for i in range(4)}
    files["m9/other.tf"] = 'resource "aws_s3_bucket" "karpenter" {}\n'
    fresh = [(p, b.labels) for p, b in _repo(files)._blocks("module", None, "karpenter")]
    assert [p for p, _ in fresh] == [f"m{i}/main.tf" for i in range(4) for _ in range(2)]
    repo = _repo(files)
    first = repo.blocks("module", None, "karpenter")
    assert [(p, b.labels) for p, b in itertools.islice(first, 3)] == fresh[:3]
    assert set(repo._hcl) == {"m0/main.tf", "m1/main.tf"}             # no further than read
    second = repo.blocks("module", None, "karpenter")
    assert [(p, b.labels) for p, b in itertools.islice(second, 5)] == fresh[:5]
    assert [(p, b.labels) for p, b in first] == fresh[3:]
    assert [(p, b.labels) for p, b in second] == fresh[5:]
    assert [(p, b.labels) for p, b in repo.blocks("module", None, "karpenter")] == fresh


def test_block_lookups_parse_only_texts_that_can_open_such_a_block():
    """Issue 60: a text is parsed for `resource "helm_release"` only where a line can open one (quoted or bare labels,
    any blanks) or a `/* */` comment could stand before it; the blocks found are those a parse of every file finds."""
    texts = {
        "a.tf": 'resource "helm_release" "a" {\n  chart = "x"\n}\n',
        "b.tf": '  resource helm_release b {\n}\n',
        "c.tf": 'resource"helm_release" "c"{\n}\n',
        "d.tf": 'output "x" {\n  value = helm_release.a.name # resource\n}\n',          # names both, opens none
        "e.tf": '/* old */ resource "helm_release" "e" {\n}\n',                            # after a comment
        "f.tf": 'resource "helm_release_x" "f" {\n}\n\nresource "null" "y" {\n  helm_release = 1\n}\n',
        "g.tf": 'resource "helm_release" "g" {\r\n}\r\n',
        "h.tf": 'locals {\n  s = <<EOT\nresource "helm_release" "h" {\nEOT\n}\n',            # inside a heredoc
    }
    repo = _repo(texts)
    parsed = []
    real = repo.hcl
    repo.hcl = lambda p: parsed.append(p) or real(p)
    got = [(p, b.labels[1]) for p, b in repo.blocks("resource", "helm_release")]
    assert got == [("a.tf", "a"), ("b.tf", "b"), ("c.tf", "c"), ("e.tf", "e"), ("g.tf", "g")]
    assert "d.tf" not in parsed and "f.tf" not in parsed and "h.tf" in parsed
    assert [p for p, _ in repo.blocks("locals")] == ["h.tf"]


def test_a_search_within_the_files_holding_a_word_answers_as_a_plain_pass():
    """`containing_both(first, needle)`: the files holding both, in discovery order, whatever was asked before (the
    needle over every file, a part of it within the same word), copies included; a second pass as a fresh search."""
    both = lambda files, first, needle, sfx: [p for p in _plain(files, needle, sfx) if first in files[p]]  # noqa: E731
    asks = [(f, n, s) for f in ("kind", "karpenter") for n in NEEDLES for s in SUFFIXES]
    for order in (asks, asks[::-1]):
        repo = _repo(FILES)
        repo.containing("kubectl", (".sh",))            # answered over every file before: filtered, not searched
        for first, needle, sfx in order:
            assert repo.containing_both(first, needle, sfx) == both(FILES, first, needle, sfx), (first, needle, sfx)
    changed_files = dict(FILES, **{"e/old.yaml": "kind: X\nkarpenter.sh/v1 kubectl\n", "f/new.yml": "kind: Y argoproj.io\n"})
    del changed_files["d/app.yml"]
    first = _repo(FILES)
    for f, n, s in asks[::3]:
        first.containing_both(f, n, s)
    second = _repo(changed_files)
    second.based_on(first, {"e/old.yaml", "f/new.yml", "d/app.yml"})
    for f, n, s in asks:
        assert second.containing_both(f, n, s) == both(changed_files, f, n, s), (f, n, s)


def test_module_callers_are_parsed_only_for_the_folder_asked():
    """`Repo.callers(d)`: the module blocks whose relative source is d, in discovery order, parsing only the files
    whose text names d as a relative source - and every file whose source the text cannot tell (an interpolation, an
    escape, a string that does not close on its line). `called_by(d)`: the folders d's module blocks call."""
    files = {
        "a/main.tf": 'module "x" {\n  source = "../mods/x"\n}\nmodule "y" {\n  source   =   "./y"\n}\n',
        "b/main.tf": 'module "x2" { source = "../mods/x" }\n# source = "../mods/z" in a comment\n',
        "c/main.tf": 'module "t" {\n  source = "../mods/${var.v}"\n}\n',           # unsure: parsed for every folder
        "d/main.tf": 'module "n" {\n  xsource = "../mods/x"\n  source = "../mods/n"\n}\n',
        "e/broken.tf": 'module "b" {\n  source = "../mods/b"\n  = broken\n',       # never asked: never parsed
        "mods/x/main.tf": 'variable "a" {}\n',
        "root.tf": 'module "top" {\n  source = "./mods/x/"\n}\n',
    }
    repo = _repo(files)
    assert [(p, b.labels) for p, b in repo.callers("mods/x")] == \
        [("a/main.tf", ["x"]), ("b/main.tf", ["x2"]), ("root.tf", ["top"])]
    assert set(repo._hcl) == {"a/main.tf", "b/main.tf", "c/main.tf", "root.tf"}
    assert repo.callers("mods/z") == [] and repo.callers("mods/n") == [("d/main.tf", repo.hcl("d/main.tf").blocks[0])]
    assert repo.callers("a/y") == [("a/main.tf", repo.hcl("a/main.tf").blocks[1])]
    assert "e/broken.tf" not in repo._hcl and not repo.findings
    assert repo.called_by("a") == {"mods/x", "a/y"} and repo.called_by("") == {"mods/x"}
