"""terraform-module/release/helm (chart and version in its `app` object), a values file read from a module by a plain
relative path (Terraform's working directory: the root's folder), two chart-value renames into one new map, and the
controller's affinity gaining its nodepool expression after a last, two-line item (cradules/aws-eks; fixture
helm-release-app-module)."""
from __future__ import annotations

from migrator.inventory import Repo
from migrator.inventory.installs import scan_charts
from migrator.plan import make_plan
from migrator.sources import hcl as hclsrc
from migrator.sources import keytree

CALL = ('module "karpenter" {{\n  source     = "terraform-module/release/helm"\n  namespace  = "karpenter"\n'
        '  repository = "oci://public.ecr.aws/karpenter"\n  app = {{\n    name    = "karpenter"\n'
        '    chart   = "karpenter"\n    version = "0.37.8"\n    deploy  = {deploy}\n  }}\n'
        '  values = [file("values/karpenter.yaml")]\n}}\n')


def test_the_chart_and_version_are_read_from_the_app_object(tmp_path):
    (tmp_path / "main.tf").write_text(CALL.format(deploy=1))
    (ci,) = scan_charts(Repo(tmp_path))
    assert (ci.chart, ci.version.source, ci.attrs["module"]["name"]) == ("karpenter", '"0.37.8"',
                                                                          "terraform-module/release/helm")


def test_deploy_0_or_false_is_switched_off(tmp_path):
    for off in ("0", "false"):
        (tmp_path / "main.tf").write_text(CALL.format(deploy=off))
        repo = Repo(tmp_path)
        assert scan_charts(repo) == []
        assert [f.code for f in repo.findings] == ["MIG-SRC-011"], off


def test_a_plain_relative_file_of_a_called_module_is_the_roots(tmp_path):
    (tmp_path / "modules" / "k").mkdir(parents=True)
    (tmp_path / "values").mkdir()
    (tmp_path / "values" / "karpenter.yaml").write_text("replicas: 2\n")
    (tmp_path / "modules" / "k" / "main.tf").write_text(CALL.format(deploy=1))
    (tmp_path / "main.tf").write_text('module "k" {\n  source = "./modules/k"\n}\n')
    repo = Repo(tmp_path)
    arg = hclsrc.parse('x = "values/karpenter.yaml"\n').attributes["x"].expr
    assert repo.resolve_file_arg("modules/k/main.tf", arg) == "values/karpenter.yaml"
    # a file of that name beside the module is read there, as before
    (tmp_path / "modules" / "k" / "values").mkdir()
    (tmp_path / "modules" / "k" / "values" / "karpenter.yaml").write_text("replicas: 1\n")
    assert Repo(tmp_path).resolve_file_arg("modules/k/main.tf", arg) == "modules/k/values/karpenter.yaml"
    # two roots that would each read their own file: not known (the path as written, which no file holds)
    (tmp_path / "modules" / "k" / "values" / "karpenter.yaml").unlink()
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev" / "values").mkdir()
    (tmp_path / "dev" / "values" / "karpenter.yaml").write_text("replicas: 3\n")
    (tmp_path / "dev" / "main.tf").write_text('module "k" {\n  source = "../modules/k"\n}\n')
    assert Repo(tmp_path).resolve_file_arg("modules/k/main.tf", arg) == "modules/k/values/karpenter.yaml"


def test_two_renames_into_one_new_map_write_it_once():
    text = "controller:\n  logLevel: info\nwebhook:\n  logLevel: error\nreplicas: 2\n"
    from migrator.sources import yaml as yamlsrc
    tree = keytree.yaml_tree(text, "v.yaml", 0, len(text), yamlsrc.load(text))
    out = keytree.rewrite(tree, [
        keytree.Op("rename", ("controller", "logLevel"), ("logConfig", "logLevel", "controller")),
        keytree.Op("rename", ("webhook", "logLevel"), ("logConfig", "logLevel", "webhook"))])
    from migrator.edits import TextEdit, apply_edits
    new = apply_edits(text, [TextEdit("v.yaml", s, e, t, "r") for s, e, t in out.edits])
    assert new.count("logConfig:") == 1
    assert yamlsrc.load(new) == {"logConfig": {"logLevel": {"controller": "info", "webhook": "error"}}, "replicas": 2}


def test_a_root_whose_controller_version_is_not_known_says_so(tmp_path):
    (tmp_path / "deploy.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  template:\n    metadata:\n"
        "      annotations:\n        karpenter.sh/do-not-evict: \"true\"\n")
    plan = make_plan(tmp_path)
    (rp,) = plan.every
    assert rp.era == "unknown" and "no chart version" in rp.state and rp.next.startswith("state the chart version")
    assert not any("None" in f.message for f in plan.findings)
    # no later hop is promised: the next run stops until the version is stated (tests/test_version_first.py)
    assert "MIG-HOP-004" not in {f.code for f in plan.findings}


def test_the_default_instance_profile_stays_until_cleanup_where_the_alpha_objects_are_not_in_the_repository(tmp_path):
    """cradules/aws-eks, Smana/flux-karpenter: a v1alpha5 root whose Provisioners and AWSNodeTemplates are applied
    from elsewhere; v0.32 still needs settings.aws.defaultInstanceProfile for templates without an instanceProfile."""
    (tmp_path / "main.tf").write_text(
        'resource "helm_release" "karpenter" {\n  name       = "karpenter"\n  chart      = "karpenter"\n'
        '  repository = "oci://public.ecr.aws/karpenter"\n  version    = "v0.31.4"\n  namespace  = "karpenter"\n\n'
        '  set {\n    name  = "settings.aws.clusterName"\n    value = "demo"\n  }\n\n'
        '  set {\n    name  = "settings.aws.defaultInstanceProfile"\n    value = "KarpenterNodeInstanceProfile"\n  }\n}\n')
    prepare = make_plan(tmp_path, phase="prepare")
    (change,) = [c for c in prepare.changes if c.path == "main.tf"]
    assert "settings.aws.defaultInstanceProfile" in change.new and "settings.clusterName" in change.new
    cleanup = make_plan(tmp_path, phase="cleanup")
    assert all("defaultInstanceProfile" not in c.new for c in cleanup.changes if c.path == "main.tf")
    assert any(c.path == "main.tf" for c in cleanup.changes)
