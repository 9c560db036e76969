"""Users' own Helm charts of Karpenter objects (issue 19 §6): `{{ }}` actions masked like `${}`, converted around
them in every hop, and an exact manual step where an action shapes a field the hop moves."""
from __future__ import annotations

import textwrap

from migrator.apply import apply_changes
from migrator.plan import make_plan
from migrator.sources import yaml as yamlsrc
from migrator.sources.templates import layout, mask, reindent

BETA_POOL = """\
{{- range $name, $pool := .Values.nodePools }}
---
apiVersion: karpenter.sh/v1beta1
kind: NodePool
metadata:
  name: {{ $name }}
spec:
  template:
    spec:
      nodeClassRef:
        name: {{ $name }}
      requirements:
        - key: karpenter.sh/capacity-type
          operator: In
          values: ["on-demand"]
  disruption:
    consolidationPolicy: WhenEmpty
    consolidateAfter: 30s
    {{- if $pool.expireAfter }}
    expireAfter: {{ $pool.expireAfter }}
    {{- end }}
{{- end }}
"""

BETA_CLASS = """\
apiVersion: karpenter.k8s.aws/v1beta1
kind: EC2NodeClass
metadata:
  name: default
spec:
  amiFamily: AL2023
  role: {{ .Values.nodeRole }}
  subnetSelectorTerms:
    - tags:
        karpenter.sh/discovery: {{ .Values.clusterName }}
  securityGroupSelectorTerms:
    - tags:
        karpenter.sh/discovery: {{ .Values.clusterName }}
"""


def _chart(tmp_path, **templates: str):
    root = tmp_path / "repo"
    (root / "chart" / "templates").mkdir(parents=True)
    (root / "chart" / "Chart.yaml").write_text("apiVersion: v2\nname: pools\nversion: 0.1.0\n")
    for name, text in templates.items():
        (root / "chart" / "templates" / name.replace("_", ".", 1)).write_text(text)
    return root


def _helm_docs(text: str):
    """The YAML a chart template stands for once its actions are masked (what Helm's parser will see)."""
    return [yamlsrc.load(mask(d.text, helm=True).text) for d in yamlsrc.split_documents(text)]


def test_mask_reads_actions_by_position():
    m = mask(textwrap.dedent("""\
        {{- /* a comment
          on two lines */}}
        metadata:
          name: {{ .Release.Name }}-x
          labels:
            {{- include "x.labels" . | nindent 4 }}
        {{- if .Values.a }}{{ end }}
        """), helm=True)
    assert [d.word for d in m.directives] == ["comment", "content", "if"]
    assert m.directives[0].lines == 2 and m.text.splitlines()[1] == "#"      # line count kept
    assert m.unmask(yamlsrc.load(m.text)["metadata"]["name"]) == "{{ .Release.Name }}-x"
    assert mask('a: "{{ printf "}}" }}"', helm=True).tokens == {"__MIG_0__": '{{ printf "}}" }}'}


def test_layout_owner_and_reindent():
    m = mask("spec:\n  tags:\n    a: b\n    {{- toYaml .Values.t | nindent 4 }}\n", helm=True)
    obj = yamlsrc.load(m.text)
    assert layout(m, yamlsrc.line_paths(obj)).content == {0: ("spec", "tags")}
    assert reindent("{{- toYaml . | nindent 4 }}", 4) == "{{- toYaml . | nindent 8 }}"
    assert reindent("{{ include \"x\" . | indent 2 }}", -2) == "{{ include \"x\" . | indent 0 }}"


def test_alpha_chart_converted_around_its_actions(tmp_path):
    import shutil
    from pathlib import Path
    root = tmp_path / "repo"
    shutil.copytree(Path(__file__).parents[1] / "fixtures" / "helm-chart-alpha" / "input", root)
    plan = make_plan(root, to="latest")
    assert not plan.has_errors, [f for f in plan.findings if f.severity == "error"]
    assert not [f for f in plan.findings if f.code in ("MIG-SRC-004", "MIG-SRC-010", "MIG-TPL-001")]
    apply_changes(plan.root, plan.changes)
    text = (root / "charts/karpenter-nodes/templates/nodepool.yaml").read_text()
    pool, cls = _helm_docs(text)
    assert pool["kind"] == "NodePool" and cls["kind"] == "EC2NodeClass"
    lines = text.splitlines()
    gpu = lines.index('        {{- if .Values.gpu }}')
    assert lines[gpu + 1] == "        - key: karpenter.k8s.aws/instance-gpu-count"     # moved with its requirement
    assert lines[gpu + 4] == "        {{- end }}"
    assert '    {{- include "karpenter-nodes.labels" . | nindent 4 }}' in lines
    assert lines[lines.index("  tags:") + 2:lines.index("  tags:") + 5] == [
        "    {{- with .Values.extraTags }}", "    {{- toYaml . | nindent 4 }}", "    {{- end }}"]


def test_field_inside_an_if_block_is_a_manual_step_and_the_rest_is_converted(tmp_path):
    root = _chart(tmp_path, nodepools_yaml=BETA_POOL, nodeclass_yaml=BETA_CLASS)
    plan = make_plan(root, to="v1", phase="manifests")
    (f,) = [f for f in plan.findings if f.code == "MIG-TPL-003"]
    assert f.severity == "error" and f.path == "chart/templates/nodepools.yaml" and f.line == 19
    assert "spec.disruption.expireAfter" in f.message and "{{- if $pool.expireAfter }}" in f.manual_step
    assert not [f for f in plan.findings if f.code in ("MIG-V1-NP-002", "MIG-V1-NP-003")]   # nothing said about it
    assert [c.path for c in plan.changes] == ["chart/templates/nodeclass.yaml"]
    apply_changes(plan.root, plan.changes)
    (cls,) = _helm_docs((root / "chart/templates/nodeclass.yaml").read_text())
    assert cls["apiVersion"] == "karpenter.k8s.aws/v1" and cls["spec"]["amiSelectorTerms"] == [{"alias": "al2023@latest"}]
    assert (root / "chart/templates/nodepools.yaml").read_text() == BETA_POOL


def test_keys_added_at_the_end_stay_inside_a_range_over_documents(tmp_path):
    ranged = "{{- range .Values.classes }}\n---\n" + BETA_CLASS.replace("name: default", "name: {{ .name }}") \
        + "{{- end }}\n"
    root = _chart(tmp_path, nodeclass_yaml=ranged)
    plan = make_plan(root, to="v1", phase="manifests")
    apply_changes(plan.root, plan.changes)
    text = (root / "chart/templates/nodeclass.yaml").read_text()
    assert text.endswith("    httpTokens: required\n{{- end }}\n")
    assert make_plan(root, to="v1", phase="manifests").changes == []


def test_map_written_by_an_action_is_left_to_the_values_with_a_warning(tmp_path):
    pool = BETA_POOL.replace("      nodeClassRef:\n        name: {{ $name }}\n",
                             "      nodeClassRef:\n        {{- toYaml $pool.classRef | nindent 8 }}\n")
    pool = pool.replace("    {{- if $pool.expireAfter }}\n    expireAfter: {{ $pool.expireAfter }}\n    {{- end }}\n", "")
    root = _chart(tmp_path, nodepools_yaml=pool)
    plan = make_plan(root, to="v1", phase="manifests")
    (f,) = [f for f in plan.findings if f.code == "MIG-TPL-004"]
    assert "spec.template.spec.nodeClassRef" in f.message and "toYaml $pool.classRef" in f.message
    apply_changes(plan.root, plan.changes)
    text = (root / "chart/templates/nodepools.yaml").read_text()
    assert "      nodeClassRef:\n        {{- toYaml $pool.classRef | nindent 8 }}\n" in text     # nothing added to it


def test_action_writing_keys_where_the_hop_changes_others_is_a_warning(tmp_path):
    pool = BETA_POOL.replace("    {{- if $pool.expireAfter }}\n    expireAfter: {{ $pool.expireAfter }}\n    {{- end }}\n",
                             "    expireAfter: 720h\n")
    pool = pool.replace("      requirements:\n", "      {{- toYaml $pool.extra | nindent 6 }}\n      requirements:\n")
    root = _chart(tmp_path, nodepools_yaml=pool)
    plan = make_plan(root, to="v1", phase="manifests")
    (f,) = [f for f in plan.findings if f.code == "MIG-TPL-004"]
    assert f.severity == "warning" and "spec.template.spec" in f.message
    assert "spec.template.spec.expireAfter" in f.manual_step
    assert not plan.has_errors and [c.path for c in plan.changes] == ["chart/templates/nodepools.yaml"]


def test_template_still_not_yaml_is_a_warning_and_left_alone(tmp_path):
    broken = BETA_CLASS.replace("  role: {{ .Values.nodeRole }}\n", "  role: {{ .Values.nodeRole }}\n  {{ if .x }}a: [\n")
    root = _chart(tmp_path, nodeclass_yaml=broken)
    plan = make_plan(root, to="v1", phase="manifests")
    (f,) = [f for f in plan.findings if f.code == "MIG-SRC-004"]
    assert f.severity == "warning" and f.path == "chart/templates/nodeclass.yaml"
    assert plan.changes == [] and not plan.has_errors


def test_helm_template_with_tpl_extension_is_converted_not_reported(tmp_path):
    root = _chart(tmp_path, nodeclass_tpl=BETA_CLASS)
    plan = make_plan(root, to="v1", phase="manifests")
    assert not [f for f in plan.findings if f.code == "MIG-SRC-010"]
    assert [c.path for c in plan.changes] == ["chart/templates/nodeclass.tpl"]


def test_a_key_renamed_where_it_stands_inside_an_if_block_is_converted(tmp_path):
    pool = BETA_POOL.replace("      nodeClassRef:\n        name: {{ $name }}\n",
                             "      {{- if $pool.class }}\n      nodeClassRef:\n        apiVersion: karpenter.k8s.aws/v1beta1\n"
                             "        kind: EC2NodeClass\n        name: {{ $pool.class }}\n      {{- end }}\n")
    pool = pool.replace("    {{- if $pool.expireAfter }}\n    expireAfter: {{ $pool.expireAfter }}\n    {{- end }}\n", "")
    root = _chart(tmp_path, nodepools_yaml=pool)
    plan = make_plan(root, to="v1", phase="manifests")
    assert not [f for f in plan.findings if f.code == "MIG-TPL-003"]
    apply_changes(plan.root, plan.changes)
    text = (root / "chart/templates/nodepools.yaml").read_text()
    assert "      {{- if $pool.class }}\n      nodeClassRef:\n        group: karpenter.k8s.aws\n" in text


def test_a_chart_template_whose_karpenter_api_version_is_a_value_is_said_not_an_error(tmp_path):
    """A chart that templates the API version (`karpenter.k8s.aws/{{ $.Values.ApiVersion }}`, the fleet-management
    workshop's karpenter resources chart) is a Helm template: a document still not YAML with its actions masked is a
    warning (MIG-SRC-004), never an error, and one that parses is said, since its version cannot be told (MIG-SRC-017)."""
    from migrator.plan import make_plan
    t = tmp_path / "charts/karpenter/templates"
    t.mkdir(parents=True)
    (tmp_path / "charts/karpenter/Chart.yaml").write_text("apiVersion: v2\nname: karpenter-resources\nversion: 0.1.0\n")
    (t / "nodepool.yaml").write_text(
        "{{- range $k, $v := $.Values.nodeGroups }}\n---\napiVersion: karpenter.sh/{{ $.Values.ApiVersion }}\n"
        "kind: NodePool\nmetadata:\n  name: {{ $k }}\nspec:\n  template:\n    spec:\n      nodeClassRef:\n"
        "        name: {{ $k }}\n{{- end }}\n")
    (t / "nodeclass.yaml").write_text(
        "---\napiVersion: karpenter.k8s.aws/{{ $.Values.ApiVersion }}\nkind: EC2NodeClass\nmetadata:\n  name: x\n"
        "spec:\n  {{- if .Values.role }}\n  role: {{ .Values.role }}\n  {{- else }}\n  role: {{ .Values.other }}\n"
        "  {{- end }}\n")
    plan = make_plan(tmp_path, to="latest")
    assert not [f for f in plan.findings if f.severity == "error"]
    got = sorted((f.code, f.path) for f in plan.findings if f.code in ("MIG-SRC-004", "MIG-SRC-017"))
    assert got == [("MIG-SRC-004", "charts/karpenter/templates/nodeclass.yaml"),
                   ("MIG-SRC-017", "charts/karpenter/templates/nodepool.yaml")]
    assert not plan.changes
