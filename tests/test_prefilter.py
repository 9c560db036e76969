"""A YAML file with no Karpenter content costs no more than reading it: no document of a CRD bundle is parsed."""
from __future__ import annotations

import importlib.util
from pathlib import Path

from migrator.plan import make_plan
from migrator.sources import yaml as yamlsrc

ROOT = Path(__file__).resolve().parents[1]


def _generator():
    spec = importlib.util.spec_from_file_location("generate", ROOT / "benchmarks" / "generate.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_flux_crd_bundle_is_never_parsed(tmp_path, monkeypatch):
    gen = _generator()
    gen.generate(tmp_path, 1, 20, bundle=True)
    bundle = next(tmp_path.rglob("gotk-components.yaml"))
    assert bundle.stat().st_size > 500_000 and "kind: HelmRelease" in bundle.read_text()
    parsed: list[str] = []
    real = yamlsrc.load

    def counting(text, *a, **kw):
        parsed.append(text)
        return real(text, *a, **kw)
    monkeypatch.setattr(yamlsrc, "load", counting)
    plan = make_plan(tmp_path)
    assert plan.roots and not [f for f in plan.findings if f.severity == "error"]
    assert not [t for t in parsed if "CustomResourceDefinition" in t], "a CRD of the bundle was parsed"
    assert parsed, "the cluster root's own YAML is still read"


def test_an_auto_mode_nodeclass_file_naming_nothing_else_is_read(tmp_path):
    """The object scan reads a file for the Karpenter kinds it names (the words its document filter looks for): an
    EKS Auto Mode NodeClass alone in a file, which names neither `karpenter` nor `NodePool`, used to be passed over."""
    from migrator.inventory.objects import scan_manifests
    from migrator.inventory.repo import Repo
    (tmp_path / "nodeclass.yaml").write_text(
        "apiVersion: eks.amazonaws.com/v1\nkind: NodeClass\nmetadata:\n  name: basic\nspec:\n  role: auto-node\n"
        "  subnetSelectorTerms:\n    - tags:\n        tier: private\n")
    (tmp_path / "unrelated.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n")
    ms = scan_manifests(Repo(tmp_path))
    assert [(m.path, m.kind) for m in ms] == [("nodeclass.yaml", "NodeClass")]


def test_vendored_chart_templates_that_only_name_the_words_are_never_parsed_round_trip():
    """A template (`{{ }}`) is parsed round-trip for Karpenter objects only where a line declares a Karpenter kind or
    names Karpenter's API version, and for Cluster Autoscaler only where its name can be a whole value or an image's
    last path element (junghoon2/k8s-class: vendored loki, gitlab and prometheus charts name `provisioner` and
    `cluster-autoscaler.kubernetes.io/safe-to-evict` by the thousand, and took a second of parsing)."""
    from migrator.cas import _CAS_DOCUMENT
    from migrator.inventory.documents import KIND_DOCUMENTS
    loki = "# -- the `provisioner` target\nprovisioner:\n  enabled: {{ .Values.enabled }}\n"
    assert not KIND_DOCUMENTS.search(loki)
    assert KIND_DOCUMENTS.search("apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata:\n  name: {{ .Values.n }}\n")
    assert KIND_DOCUMENTS.search('{"kind": "Provisioner", "metadata": {"name": "{{ .Values.n }}"}}\n')
    assert KIND_DOCUMENTS.search("# a NodePool\napiVersion: karpenter.sh/{{ .Values.api }}\nkind: {{ .Values.kind }}\n")
    evict = "metadata:\n  annotations:\n    cluster-autoscaler.kubernetes.io/safe-to-evict: \"{{ .Values.evict }}\"\n"
    assert not _CAS_DOCUMENT.search(evict)
    assert not _CAS_DOCUMENT.search("name: {{ template \"cluster-autoscaler.fullname\" . }}-priority-expander\n")
    image = "kind: Deployment\nimage: registry.k8s.io/autoscaling/cluster-autoscaler:{{ .Values.tag }}\n"
    assert _CAS_DOCUMENT.search(image)
    assert _CAS_DOCUMENT.search("kind: HelmRelease\nspec:\n  chart: cluster-autoscaler\n  version: {{ .Values.v }}\n")
    assert _CAS_DOCUMENT.search('{{- if .Values.on }}\nhelmCharts:\n  - name: "cluster-autoscaler"\n{{- end }}\n')


def test_a_document_libyaml_refuses_is_parsed_round_trip_only_where_it_declares_a_karpenter_kind(tmp_path):
    """junghoon2/k8s-class: Longhorn's questions.yaml (50 KB) names "CSI Provisioner Image" and does not parse (a
    `description: ""This setting..."`); ruamel's scanner took 0.4 s of every plan to say so, and nothing was reported
    (it declares no Karpenter kind). A refused document that declares one is still parsed round-trip, and reported."""
    from migrator.inventory.documents import KIND_DOCUMENTS
    from migrator.inventory.objects import scan_manifests
    from migrator.inventory.repo import Repo
    questions = 'questions:\n- variable: csi.provisionerImage\n  label: "Longhorn CSI Provisioner Image"\n' \
                '- variable: offlineReplicaRebuilding\n  description: ""This setting allows users."\n'
    assert not KIND_DOCUMENTS.search(questions)
    broken = 'apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata:\n  name: x\n  a: ""b."\n'
    assert KIND_DOCUMENTS.search(broken)
    (tmp_path / "questions.yaml").write_text(questions)
    (tmp_path / "broken.yaml").write_text(broken)
    repo = Repo(tmp_path)
    assert scan_manifests(repo) == []
    assert [(f.code, f.path) for f in repo.findings] == [("MIG-SRC-002", "broken.yaml")]


def test_a_values_file_that_names_cluster_autoscaler_is_not_read_for_its_installs():
    """Only the shapes the Cluster Autoscaler scan reads an install from (a Flux HelmRelease, an Argo CD Application or
    ApplicationSet, a Deployment, a kustomization's helmCharts) are read for one; a chart's values file that names it
    in passing is not (Obmondo/kubeaid: vendored Argo CD and Cilium values, 160 KB each, 0.1 s of every plan)."""
    from migrator.cas import _CAS_DOCUMENT
    values = "global:\n  image:\n    repository: registry.k8s.io/autoscaling/cluster-autoscaler\n" \
             "controller:\n  kind: Deployment\n  autoscaler: cluster-autoscaler\n"
    assert not _CAS_DOCUMENT.search(values)
    argo = 'server:\n  # {{ .Values.x }} is rendered\n  name: "cluster-autoscaler"\n'     # a template too
    assert not _CAS_DOCUMENT.search(argo)
    deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: ca\nspec:\n  template:\n    spec:\n" \
                 "      containers:\n        - image: registry.k8s.io/autoscaling/cluster-autoscaler:v1.30.0\n"
    assert _CAS_DOCUMENT.search(deployment)
    assert _CAS_DOCUMENT.search('{"apiVersion": "apps/v1", "kind":\n  "Deployment", "spec": {"image": '
                                '"registry.k8s.io/autoscaling/cluster-autoscaler:v1.30.0"}}\n')
    assert _CAS_DOCUMENT.search("helmCharts:\n  - name: cluster-autoscaler\n    repo: https://kubernetes.github.io/"
                                "autoscaler\n")
    assert _CAS_DOCUMENT.search("apiVersion: argoproj.io/v1alpha1\nkind: !!str Application\nspec:\n  source:\n"
                                "    chart: cluster-autoscaler\n")


def test_a_strategic_merge_patch_naming_no_karpenter_group_is_not_parsed(tmp_path, monkeypatch):
    """VivSoftOrg/PlatformOne-BOA: 174 kustomizations whose patches are for other objects. What a patch is for is
    read from its documents only where its text names an API group of the kinds migrator converts."""
    from migrator.inventory import Repo
    from migrator.inventory import kustomizations as kz
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "kustomization.yaml").write_text(
        "resources:\n  - deploy.yaml\npatches:\n  - path: replicas.yaml\n  - path: pool.yaml\n")
    (tmp_path / "app" / "deploy.yaml").write_text("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n")
    (tmp_path / "app" / "replicas.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 3\n")
    (tmp_path / "app" / "pool.yaml").write_text(
        "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata:\n  name: default\nspec:\n  limits:\n    cpu: 10\n")
    parsed: list[str] = []
    real = yamlsrc.values
    monkeypatch.setattr(yamlsrc, "values", lambda text, *a, **k: parsed.append(text) or real(text, *a, **k))
    (k,) = kz.scan(Repo(tmp_path))
    parsed.clear()
    assert [pt.aims() for pt in k.patches] == [[], [("karpenter.sh/v1", "NodePool", "default")]]
    assert all("replicas: 3" not in t for t in parsed)
