"""Issue 58 item 4: a controller image pinned in the chart values follows the chart (rules/images.py)."""
from __future__ import annotations

import subprocess

from migrator.options import Options
from migrator.plan import make_plan
from migrator.rules.images import tag_for

RELEASE = '''resource "helm_release" "karpenter" {{
  name       = "karpenter"
  repository = "oci://public.ecr.aws/karpenter"
  chart      = "karpenter"
  version    = "{version}"

  values = [<<-EOT
    settings:
      clusterName: prod
    controller:
      image:
{image}
  EOT
  ]
}}

resource "helm_release" "karpenter_crd" {{
  name       = "karpenter-crd"
  repository = "oci://public.ecr.aws/karpenter"
  chart      = "karpenter-crd"
  version    = "{version}"
}}
'''


def _write(d, version: str, *image: str) -> None:
    (d / "main.tf").write_text(RELEASE.format(version=version, image="\n".join(" " * 8 + x for x in image)))


def test_the_upstream_tag_follows_the_chart(tmp_path):
    _write(tmp_path, "1.12.1", "tag: 1.12.1 # pinned by the platform team")
    plan = make_plan(tmp_path)
    (c,) = plan.changes
    assert "        tag: 1.14.1 # pinned by the platform team\n" in c.new and 'version    = "1.14.1"' in c.new
    assert any(f.code == "MIG-HELM-003" and "controller.image.tag" in f.message for f in plan.findings)
    # a tag that already matches the chart is left alone; a second plan finds nothing
    (tmp_path / "main.tf").write_text(c.new)
    assert not make_plan(tmp_path).changes


def test_a_set_block_tag_moves_too(tmp_path):
    (tmp_path / "main.tf").write_text(
        'resource "helm_release" "karpenter" {\n  name       = "karpenter"\n  repository = "oci://public.ecr.aws/karpenter"\n'
        '  chart      = "karpenter"\n  version    = "1.13.1"\n\n  set {\n    name  = "settings.clusterName"\n'
        '    value = "prod"\n  }\n\n  set {\n    name  = "controller.image.tag"\n    value = "1.13.1"\n  }\n}\n')
    plan = make_plan(tmp_path)
    (c,) = [c for c in plan.changes if c.path == "main.tf"]
    assert 'value = "1.14.1"' in c.new and 'value = "1.13.1"' not in c.new


def test_a_digest_a_mirror_and_a_whole_reference_are_said_not_written(tmp_path):
    _write(tmp_path, "1.12.1", "tag: 1.12.1", "digest: sha256:" + "ab" * 32)
    plan = make_plan(tmp_path)
    (f,) = [f for f in plan.findings if f.code == "MIG-HELM-038"]
    assert f.severity == "error" and "crane digest public.ecr.aws/karpenter/controller:1.14.1" in f.manual_step
    assert all("tag: 1.12.1" in c.new for c in plan.changes if c.path == "main.tf")
    _write(tmp_path, "1.12.1", "repository: 111122223333.dkr.ecr.eu-west-1.amazonaws.com/karpenter/controller",
           "tag: 1.12.1")
    plan = make_plan(tmp_path)
    (f,) = [f for f in plan.findings if f.code == "MIG-HELM-038"]
    assert "copy public.ecr.aws/karpenter/controller:1.14.1 to 111122223333" in f.manual_step
    assert all("tag: 1.12.1" in c.new for c in plan.changes if c.path == "main.tf")


def test_a_bots_bump_gets_the_tag_as_its_companion_edit(tmp_path):
    """--since: the bot moved the chart to 1.14.0 and left the pinned tag at 1.12.1; the tag follows the pull
    request's version, never the newest."""
    _write(tmp_path, "1.12.1", "tag: 1.12.1")
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "b"]):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)
    (tmp_path / "main.tf").write_text((tmp_path / "main.tf").read_text().replace('"1.12.1"', '"1.14.0"'))
    plan = make_plan(tmp_path, options=Options(since="HEAD"))
    (c,) = [c for c in plan.changes if c.path == "main.tf"]
    assert "tag: 1.14.0\n" in c.new and 'version    = "1.14.0"' in c.new


def test_tags_are_spelled_as_the_chart_spells_them():
    assert tag_for("0.37.8") == "v0.37.8" and tag_for("1.0.14") == "v1.0.14" and tag_for("1.14.1") == "1.14.1"


SCRIPT = '''export TAG={tag}
export CLUSTER_NAME="demo"

helm upgrade --install karpenter oci://public.ecr.aws/karpenter/karpenter --version ${{TAG}} --namespace karpenter \\
  --set settings.clusterName=${{CLUSTER_NAME}} \\
  --set controller.image={image}:${{TAG}} \\
  --wait
'''


def test_a_scripts_image_whose_tag_is_the_charts_version_variable_follows_it(tmp_path):
    """aws-samples/terraform-eks-code: `--version ${TAG}` and `controller.image=<mirror>:${TAG}` in one helm command.
    The tag moves with the chart (migrator moves TAG): no stop; a mirror still needs the new image copied, said as a
    warning. A tag from another variable is still held (MIG-HELM-038, error)."""
    mirror = "111122223333.dkr.ecr.eu-west-1.amazonaws.com/karpenter/controller"
    (tmp_path / "install.sh").write_text(SCRIPT.format(tag="1.12.1", image=mirror))
    plan = make_plan(tmp_path)
    (f,) = [f for f in plan.findings if f.code == "MIG-HELM-038"]
    assert f.severity == "warning" and f"copy public.ecr.aws/karpenter/controller:1.14.1 to {mirror}" in f.manual_step
    assert any("export TAG=1.14.1" in (c.new or "") for c in plan.changes)
    (tmp_path / "install.sh").write_text(SCRIPT.format(tag="1.12.1", image="public.ecr.aws/karpenter/controller"))
    assert not [f for f in make_plan(tmp_path).findings if f.code == "MIG-HELM-038"]
    other = SCRIPT.format(tag="1.12.1", image=mirror).replace(":${TAG} \\", ":${IMAGE_TAG} \\")
    (tmp_path / "install.sh").write_text(other)
    (f,) = [f for f in make_plan(tmp_path).findings if f.code == "MIG-HELM-038"]
    assert f.severity == "error"
