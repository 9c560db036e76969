"""Issue 60: a chart passed down through modules is followed by path to every string it can be (migrator/inventory/
flows.py); where none is Karpenter's, the evaluator is not started. Anything not followed leaves the evaluator to
decide. hectorr-st/forge names its Actions Runner Controller charts this way: the evaluator took 2.4-3.3 s of every
cold plan to say they are not Karpenter's."""
from __future__ import annotations

from pathlib import Path

from migrator import evaluate
from migrator.inventory import Repo
from migrator.inventory.flows import strings
from migrator.inventory.installs import scan_charts
from migrator.sources import hcl as hclsrc

ROOT = 'terraform {\n  backend "s3" {}\n}\n\n'
RELEASE = ('variable "chart_name" {\n  type = string\n}\n\nresource "helm_release" "this" {\n'
           '  count = var.on ? 1 : 0\n  name  = "x"\n  chart = var.chart_name\n}\n\nvariable "on" {\n  type = bool\n}\n')
# three modules deep, as forge writes it: the root builds a map with a `for`, the middle module's call iterates it
MIDDLE = ('variable "runners" {\n  type = any\n}\n\nvariable "controller" {\n  type = any\n}\n\n'
          'module "sets" {\n  source   = "./set"\n  for_each = coalesce(var.runners, {})\n'
          '  chart_name = each.value.set.chart_name\n  on = true\n}\n\n'
          'module "controller" {\n  source     = "./set"\n  chart_name = var.controller.chart_name\n  on = true\n}\n')


def _tree(tmp_path: Path, chart: str = "oci://ghcr.io/actions/actions-runner-controller-charts/gha-runner-scale-set",
          controller: str = '"oci://ghcr.io/actions/gha-runner-scale-set-controller"') -> Path:
    (tmp_path / "mid" / "set").mkdir(parents=True, exist_ok=True)
    (tmp_path / "mid" / "set" / "helm.tf").write_text(RELEASE)
    (tmp_path / "mid" / "main.tf").write_text(MIDDLE)
    (tmp_path / "main.tf").write_text(
        ROOT + 'variable "specs" {\n  type = any\n}\n\nmodule "arc" {\n  source = "./mid"\n'
        '  runners = {\n    for key, val in var.specs : key => {\n      set = {\n'
        f'        name       = "${{key}}-set"\n        chart_name = "{chart}"\n      }}\n'
        '      size = val.size\n    }\n  }\n'
        f'  controller = {{\n    name       = data.aws_ssm_parameter.x.value\n    chart_name = {controller}\n  }}\n}}\n')
    return tmp_path


def _release(repo: Repo):
    f = repo.hcl("mid/set/helm.tf")
    b = next(b for b in f.blocks if b.type == "resource")
    return b, b.attr("chart")


def _asked(monkeypatch) -> list:
    asked: list = []
    monkeypatch.setattr(evaluate, "instances", lambda *a, **k: asked.append(a[1]) or [])
    return asked


def test_a_chart_is_followed_by_path_through_modules_for_expressions_and_for_each(tmp_path):
    repo = Repo(_tree(tmp_path))
    b, chart = _release(repo)
    assert strings(repo, "mid/set/helm.tf", b, chart) == {
        "oci://ghcr.io/actions/actions-runner-controller-charts/gha-runner-scale-set",
        "oci://ghcr.io/actions/gha-runner-scale-set-controller"}


def test_other_charts_are_not_karpenters_without_the_evaluator(tmp_path, monkeypatch):
    asked = _asked(monkeypatch)
    assert scan_charts(Repo(_tree(tmp_path))) == [] and asked == []


def test_a_karpenter_chart_anywhere_on_the_way_leaves_the_evaluator_to_decide(tmp_path, monkeypatch):
    asked = _asked(monkeypatch)
    scan_charts(Repo(_tree(tmp_path, chart="oci://public.ecr.aws/karpenter/karpenter")))
    assert asked == ["mid/set/helm.tf"]


def test_what_is_not_followed_is_not_known(tmp_path, monkeypatch):
    for controller in ("data.aws_ssm_parameter.chart.value",        # a data source
                       '<<-EOT\n      karpenter\n    EOT',             # a heredoc
                       "upper(var.name)",                            # a function not followed
                       'file("${path.module}/chart.txt")',           # a file read
                       "local.missing"):                             # a local no file writes
        repo = Repo(_tree(tmp_path, controller=controller))
        b, chart = _release(repo)
        assert strings(repo, "mid/set/helm.tf", b, chart) is None, controller
    asked = _asked(monkeypatch)
    scan_charts(Repo(_tree(tmp_path, controller="data.aws_ssm_parameter.chart.value")))
    assert asked == ["mid/set/helm.tf"]


def test_a_key_the_object_does_not_write_is_not_known(tmp_path):
    """`var.controller.chart_name` where the caller's object has no chart_name: an optional() default of the
    variable's type, or an error; not read here."""
    _tree(tmp_path)
    main = (tmp_path / "main.tf").read_text().replace("    chart_name = ", "    chart_nom = ", 2)
    (tmp_path / "main.tf").write_text(main)
    repo = Repo(tmp_path)
    b, chart = _release(repo)
    assert strings(repo, "mid/set/helm.tf", b, chart) is None


def test_every_source_of_a_variable_counts(tmp_path):
    """A root's variable: its default and every tfvars that sets it; a called module's: its default and each call
    (a call that passes nothing: the default); conditionals, try() and coalesce(): every branch."""
    (tmp_path / "main.tf").write_text(
        ROOT + 'variable "chart" {\n  default = "keda"\n}\n\nresource "helm_release" "a" {\n'
        '  chart = var.flag ? var.chart : try(local.c.name, "cert-manager")\n}\n\n'
        'locals {\n  c = {\n    name = coalesce(var.other, "ingress-nginx")\n  }\n}\n\n'
        'variable "flag" {}\nvariable "other" {}\n')
    (tmp_path / "prod.tfvars").write_text('chart = "external-dns"\n')
    repo = Repo(tmp_path)
    b = next(b for b in repo.hcl("main.tf").blocks if b.type == "resource")
    assert strings(repo, "main.tf", b, b.attr("chart")) == {"keda", "external-dns", "cert-manager", "ingress-nginx"}
    (tmp_path / "dev.tfvars").write_text('chart = "karpenter"\n')
    repo = Repo(tmp_path)
    b = next(b for b in repo.hcl("main.tf").blocks if b.type == "resource")
    assert "karpenter" in strings(repo, "main.tf", b, b.attr("chart"))


def test_an_override_file_or_json_syntax_in_the_module_is_not_read_here(tmp_path):
    _tree(tmp_path)
    (tmp_path / "mid" / "set" / "helm_override.tf").write_text(
        'resource "helm_release" "this" {\n  chart = "karpenter"\n}\n')
    repo = Repo(tmp_path)
    b, chart = _release(repo)
    assert strings(repo, "mid/set/helm.tf", b, chart) is None
    (tmp_path / "mid" / "set" / "helm_override.tf").unlink()
    (tmp_path / "mid" / "extra.tf.json").write_text('{"locals": {"x": "karpenter"}}')
    repo = Repo(tmp_path)
    b, chart = _release(repo)
    assert strings(repo, "mid/set/helm.tf", b, chart) is None


def test_a_for_expression_is_split_by_the_parser():
    text = 'x = {\n  for k, v in coalesce(var.a, {}) : k => { c = v.b } if v.on\n}\ny = [for v in var.l : v.name]\n'
    f = hclsrc.parse(text)
    fe = hclsrc.for_expr(f.attributes["x"].expr)
    assert (fe.index, fe.item, fe.collection.source, fe.key.source, fe.value.source, fe.condition.source,
            fe.grouped) == ("k", "v", "coalesce(var.a, {})", "k", "{ c = v.b }", "v.on", False)
    for part in (fe.collection, fe.key, fe.value, fe.condition):
        assert text[part.start:part.end] == part.source          # spans are the file's
    fe = hclsrc.for_expr(f.attributes["y"].expr)
    assert (fe.index, fe.item, fe.key, fe.value.source) == (None, "v", None, "v.name")
    assert hclsrc.for_expr(hclsrc.parse('z = [1, 2]\n').attributes["z"].expr) is None


def test_a_template_is_where_the_value_is_written_and_its_literal_tail_names_the_chart(tmp_path, monkeypatch):
    """msgoat/iac-tf-aws-containers-modules: `chart = "${path.module}/resources/helm/charts/postgres-operator"`."""
    asked = _asked(monkeypatch)
    for chart, evaluated in (('"${path.module}/charts/postgres-operator"', False),
                             ('"${path.module}/charts/karpenter"', True),
                             ('"${path.module}/charts/${var.name}"', True),
                             ('"oci://public.ecr.aws/${var.repo}"', True),
                             ('"https://x/download/temporal-${var.name}/temporal-${var.name}.tgz"', False),
                             ('"https://x/download/${var.name}-crd"', True),     # karpenter-crd ends so
                             ('"https://x/download/${var.name}/"', True)):
        (tmp_path / "main.tf").write_text(ROOT + 'variable "name" {}\nvariable "repo" {}\n\n'
                                          f'resource "helm_release" "a" {{\n  chart = var.on ? {chart} : null\n}}\n')
        asked.clear()
        repo = Repo(tmp_path)
        scan_charts(repo)
        assert (asked == ["main.tf"]) is evaluated, chart


def test_a_cycle_a_module_call_by_instance_and_a_splat_are_not_known(tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "main.tf").write_text('output "chart" {\n  value = "keda"\n}\n')
    (tmp_path / "main.tf").write_text(
        ROOT + 'locals {\n  a = local.b\n  b = local.a\n}\n\nmodule "one" {\n  source = "./m"\n}\n\n'
        'module "many" {\n  source   = "./m"\n  for_each = toset(["x"])\n}\n\n'
        'resource "helm_release" "a" {\n  chart = local.a\n}\n\nresource "helm_release" "b" {\n'
        '  chart = module.one.chart\n}\n\nresource "helm_release" "c" {\n  chart = module.many["x"].chart\n}\n\n'
        'resource "helm_release" "d" {\n  chart = var.list[*].chart\n}\n')
    repo = Repo(tmp_path)
    got = {b.labels[1]: strings(repo, "main.tf", b, b.attr("chart"))
           for b in repo.hcl("main.tf").blocks if b.type == "resource"}
    assert got == {"a": None, "b": {"keda"}, "c": None, "d": None}


def test_what_terragrunt_units_pass_is_read_from_the_units_not_the_module(tmp_path, monkeypatch):
    """eumeifg/terraform-infrastructure: one generic helm module (`chart = var.chart_name`, default "") that every
    add-on unit applies with its own chart. The evaluator never sees a unit's inputs: it gave the module's block the
    default, no Karpenter chart (0.5 s of every cold plan); the unit that installs Karpenter is read as the install.
    The files give the same answer without it."""
    asked = _asked(monkeypatch)
    (tmp_path / "modules" / "helm").mkdir(parents=True)
    (tmp_path / "modules" / "helm" / "main.tf").write_text(
        'provider "helm" {}\n\nvariable "chart_name" {\n  default = ""\n}\n\nvariable "chart_version" {\n'
        '  default = ""\n}\n\nresource "helm_release" "this" {\n  name    = var.chart_name\n'
        '  chart   = var.chart_name\n  version = var.chart_version\n}\n')
    for name, version in (("karpenter", "0.8.1"), ("velero", "2.29.4")):
        (tmp_path / "live" / name).mkdir(parents=True)
        (tmp_path / "live" / name / "terragrunt.hcl").write_text(
            'terraform {\n  source = "../../modules//helm"\n}\n\ninputs = {\n'
            f'  chart_name    = "{name}"\n  chart_version = "{version}"\n}}\n')
    repo = Repo(tmp_path)
    f = repo.hcl("modules/helm/main.tf")
    b = next(b for b in f.blocks if b.type == "resource")
    assert strings(repo, "modules/helm/main.tf", b, b.attr("chart")) == {""}
    got = scan_charts(repo)        # the unit's release (the module's block as that unit applies it), and the unit
    assert [(c.chart, c.path, c.evaluated_version) for c in got] == [
        ("karpenter", "modules/helm/main.tf", "0.8.1"), ("karpenter", "live/karpenter/terragrunt.hcl", "0.8.1")]
    assert asked == []
