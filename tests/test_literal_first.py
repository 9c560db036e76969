"""Issue 60: where the files state what the evaluator would be asked (a switch, a chart, an add-on's enable flag), the
literal reading answers and the evaluator is not started; where they state a block off, or do not say, the evaluator
decides as before. `try()`, `&&` and `||` are read as Terraform reads them."""
from __future__ import annotations

from migrator import evaluate
from migrator.inventory import Repo
from migrator.inventory.installs import scan_charts
from migrator.inventory.sites import _expr, _stated_bool, module_value, static_value

ROOT = 'terraform {\n  backend "s3" {}\n}\n\n'


def _asked(monkeypatch) -> list:
    asked: list = []
    monkeypatch.setattr(evaluate, "instances", lambda *a, **k: asked.append(a[1]) or [])
    return asked


def test_try_reads_the_first_argument_that_evaluates(tmp_path):
    (tmp_path / "main.tf").write_text(
        'variable "cfg" {\n  default = {}\n}\n\nvariable "typed" {\n  type = object({\n'
        '    chart = optional(string, "other")\n  })\n  default = {}\n}\n\n'
        'variable "opts" {\n  default = {\n    chart = "karpenter"\n  }\n}\n\n'
        'locals {\n  chart = "karpenter"\n  addons = {\n    enable_karpenter = true\n  }\n  later = var.unknown\n}\n')
    repo = Repo(tmp_path)

    def value(src):
        return static_value(repo, "", _expr(src))
    assert value('try(var.cfg["chart"], local.chart)') == "karpenter"      # a key the map lacks: the next argument
    assert value('try(var.cfg.chart, "x")') == "x"
    assert value('try(var.opts.chart, "x")') == "karpenter"                # a key it has: that value
    assert value("try(local.addons.enable_karpenter, false)") is True
    assert value("try(local.addons.enable_keda, false)") is False
    assert value('try(var.typed.chart, "x")') is None       # an object type fills its optional attributes: not known
    assert value('try(local.later, "x")') is None           # an argument not known: nothing after it counts
    assert value('try(var.cfg[0], "x")') is None            # a list step into a map: not read
    assert module_value(repo, "", _expr('try(var.cfg["chart"], local.chart)')) == "karpenter"


def test_try_follows_what_a_modules_callers_pass(tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "main.tf").write_text('variable "cfg" {\n  default = {}\n}\n')
    (tmp_path / "main.tf").write_text(ROOT + 'module "a" {\n  source = "./m"\n  cfg = {\n    chart = "keda"\n  }\n}\n')
    repo = Repo(tmp_path)
    assert module_value(repo, "m", _expr('try(var.cfg.chart, "karpenter")')) == "keda"
    (tmp_path / "main.tf").write_text(ROOT + 'module "a" {\n  source = "./m"\n}\n')
    assert module_value(Repo(tmp_path), "m", _expr('try(var.cfg.chart, "karpenter")')) == "karpenter"


def test_and_or_and_parentheses_in_a_switch(tmp_path):
    (tmp_path / "main.tf").write_text('variable "a" {\n  default = true\n}\n\nvariable "b" {\n  default = false\n}\n')
    repo = Repo(tmp_path)
    got = {s: _stated_bool(repo, "", s) for s in (
        "var.a && var.b", "var.a || var.b", "var.a && !var.b", "(var.a && var.b) || var.a", "!(var.a && var.b)",
        "var.b && var.unknown", "var.a || var.unknown", "var.a && var.unknown", 'var.a && "x" == "x && y"')}
    assert got == {"var.a && var.b": False, "var.a || var.b": True, "var.a && !var.b": True,
                   "(var.a && var.b) || var.a": True, "!(var.a && var.b)": True,
                   "var.b && var.unknown": False, "var.a || var.unknown": True, "var.a && var.unknown": None,
                   'var.a && "x" == "x && y"': False}


def test_a_release_the_files_switch_on_is_read_without_the_evaluator(tmp_path, monkeypatch):
    asked = _asked(monkeypatch)
    release = ('resource "helm_release" "karpenter" {\n  count   = var.install ? 1 : 0\n  chart   = "karpenter"\n'
               '  version = "1.0.6"\n}\n')
    (tmp_path / "main.tf").write_text(ROOT + 'variable "install" {\n  default = true\n}\n\n' + release)
    assert [(c.chart, c.path) for c in scan_charts(Repo(tmp_path))] == [("karpenter", "main.tf")] and asked == []
    # off at a root variable's default that no tfvars sets: a -var may switch it on, so it is read as on, and said (the
    # evaluator, which reads defaults too, told this apart only by whether it showed other blocks of the file)
    (tmp_path / "main.tf").write_text(ROOT + 'variable "install" {\n  default = false\n}\n\n' + release)
    repo = Repo(tmp_path)
    assert [(c.chart, c.path) for c in scan_charts(repo)] == [("karpenter", "main.tf")] and asked == []
    assert [(f.code, f.line) for f in repo.findings] == [("MIG-SRC-028", 9)]
    assert "default of var.install" in repo.findings[0].message and "tfvars" in repo.findings[0].manual_step
    # a tfvars of the root that sets it on: planned, unsaid; off: off as stated (MIG-SRC-011)
    (tmp_path / "terraform.tfvars").write_text("install = true\n")
    repo = Repo(tmp_path)
    assert [(c.chart, c.path) for c in scan_charts(repo)] == [("karpenter", "main.tf")] and repo.findings == []
    (tmp_path / "terraform.tfvars").write_text("install = false\n")
    repo = Repo(tmp_path)
    assert scan_charts(repo) == [] and [f.code for f in repo.findings] == ["MIG-SRC-011"] and asked == []
    (tmp_path / "terraform.tfvars").unlink()
    # through a local: off as stated; a local that settles it beside a variable at its default, too
    (tmp_path / "main.tf").write_text(ROOT + 'locals {\n  install = false\n}\n\n' +
                                      release.replace("var.install", "local.install"))
    repo = Repo(tmp_path)
    assert scan_charts(repo) == [] and [f.code for f in repo.findings] == ["MIG-SRC-011"] and asked == []
    (tmp_path / "main.tf").write_text(ROOT + 'variable "install" {\n  default = false\n}\n\nlocals {\n'
                                      '  ready = false\n}\n\n' +
                                      release.replace("var.install", "var.install && local.ready"))
    repo = Repo(tmp_path)
    assert scan_charts(repo) == [] and [f.code for f in repo.findings] == ["MIG-SRC-011"] and asked == []
    # a module's variable the root's call leaves at its default is settled by the files; one the call passes from a
    # root variable at its default is that variable's
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "main.tf").write_text('variable "install" {\n  default = false\n}\n\n' + release)
    (tmp_path / "main.tf").write_text(ROOT + 'module "k" {\n  source = "./m"\n}\n')
    repo = Repo(tmp_path)
    assert scan_charts(repo) == [] and [f.code for f in repo.findings] == ["MIG-SRC-011"] and asked == []
    (tmp_path / "main.tf").write_text(ROOT + 'variable "on" {\n  default = false\n}\n\n'
                                      'module "k" {\n  source  = "./m"\n  install = var.on\n}\n')
    repo = Repo(tmp_path)
    assert [(c.chart, c.path) for c in scan_charts(repo)] == [("karpenter", "m/main.tf")] and asked == []
    assert [f.code for f in repo.findings] == ["MIG-SRC-028"] and "default of var.on" in repo.findings[0].message


def test_a_chart_named_through_try_is_read_without_the_evaluator(tmp_path, monkeypatch):
    """awslabs/data-on-eks (datahub): `chart = try(var.helm_config["chart"], local.chart)` named another chart, and
    the evaluator took 0.3-0.4 s of every cold run to say so."""
    asked = _asked(monkeypatch)
    (tmp_path / "main.tf").write_text(
        ROOT + 'variable "helm_config" {\n  default = {}\n}\n\nlocals {\n  chart = "datahub-prerequisites"\n'
        '  karpenter = "karpenter"\n}\n\nresource "helm_release" "prereq" {\n'
        '  chart = try(var.helm_config["chart"], local.chart)\n}\n\nresource "helm_release" "karpenter" {\n'
        '  chart   = try(var.helm_config["karpenter_chart"], local.karpenter)\n'
        '  version = try(var.helm_config["version"], "1.0.6")\n}\n')
    got = scan_charts(Repo(tmp_path))
    assert [(c.chart, c.evaluated_version) for c in got] == [("karpenter", "1.0.6")] and asked == []


def test_an_add_on_the_files_enable_through_try_is_read_without_the_evaluator(tmp_path, monkeypatch):
    """aws-ia/terraform-aws-eks-blueprints' patterns: `enable_karpenter = try(local.aws_addons.enable_karpenter,
    false)`, on or off as the files state it (the evaluator gives an add-on flag's value as they do: every pattern
    planned the same; 0.2-0.3 s of each cold plan). Not stated: the evaluator decides."""
    asked = _asked(monkeypatch)
    call = ('module "eks_blueprints_addons" {\n  source  = "aws-ia/eks-blueprints-addons/aws"\n'
            '  version = "~> 1.16"\n  enable_karpenter = try(local.aws_addons.enable_karpenter, false)\n}\n')
    (tmp_path / "main.tf").write_text(ROOT + 'locals {\n  aws_addons = {\n    enable_karpenter = true\n  }\n}\n\n'
                                      + call)
    got = scan_charts(Repo(tmp_path))
    assert [(c.kind, c.chart) for c in got] == [("blueprints", "karpenter")] and asked == []
    (tmp_path / "main.tf").write_text(ROOT + 'locals {\n  aws_addons = {}\n}\n\n' + call)
    repo = Repo(tmp_path)
    assert scan_charts(repo) == [] and asked == []
    assert [f.code for f in repo.findings] == ["MIG-SRC-011"]          # said: switched off
    (tmp_path / "main.tf").write_text(ROOT + 'variable "addons" {\n  type = any\n}\n\nlocals {\n'
                                      '  aws_addons = {\n    enable_karpenter = var.addons.karpenter\n  }\n}\n\n' + call)
    scan_charts(Repo(tmp_path))
    assert asked == ["main.tf"]


def test_a_karpenter_release_the_files_switch_off_is_read_without_the_evaluator(tmp_path, monkeypatch):
    """radiant-maxar/terraform-eks: `count = var.karpenter && var.karpenter_helm ? 1 : 0` (karpenter defaults to
    false) on a chart named through `try`. The evaluator showed no instance, or nothing of a file whose every block
    is off. Off only at the variable's default, a -var may switch it on: read as on, and said (MIG-SRC-028); off or
    on as a tfvars sets it, read so; never asked of the evaluator."""
    asked = _asked(monkeypatch)
    (tmp_path / "main.tf").write_text(
        ROOT + 'variable "karpenter" {\n  type    = bool\n  default = false\n}\n\n'
        'variable "opts" {\n  type    = any\n  default = {}\n}\n\n'
        'resource "helm_release" "karpenter" {\n  count   = var.karpenter ? 1 : 0\n'
        '  chart   = try(var.opts.chart, "karpenter")\n  version = "1.2.1"\n}\n')
    repo = Repo(tmp_path)
    got = scan_charts(repo)
    assert [(c.chart, c.evaluated_version) for c in got] == [("karpenter", "1.2.1")] and asked == []
    assert [f.code for f in repo.findings] == ["MIG-SRC-028"]
    (tmp_path / "terraform.tfvars").write_text("karpenter = false\n")
    assert scan_charts(Repo(tmp_path)) == [] and asked == []
    (tmp_path / "terraform.tfvars").write_text("karpenter = true\n")
    repo = Repo(tmp_path)
    got = scan_charts(repo)
    assert [(c.chart, c.evaluated_version) for c in got] == [("karpenter", "1.2.1")] and asked == []
    assert repo.findings == []


def test_a_release_over_a_remote_states_map_is_read_without_the_evaluator(tmp_path, monkeypatch):
    """dcoppa/eks-karpenter: `for_each = data.terraform_remote_state.cluster.outputs.eks_clusters`. No evaluation
    fetches a remote state, so the evaluator could not say the release is absent: it is read, unasked."""
    asked = _asked(monkeypatch)
    (tmp_path / "main.tf").write_text(
        ROOT + 'data "terraform_remote_state" "cluster" {\n  backend = "s3"\n}\n\n'
        'resource "helm_release" "karpenter" {\n  for_each = data.terraform_remote_state.cluster.outputs.eks_clusters\n'
        '  chart    = "karpenter"\n  version  = "1.1.1"\n}\n')
    got = scan_charts(Repo(tmp_path))
    assert [(c.chart, c.path) for c in got] == [("karpenter", "main.tf")] and asked == []


def test_an_add_on_switch_passed_through_a_locals_object_or_left_at_a_default_is_read_without_the_evaluator(
        tmp_path, monkeypatch):
    """hul0810/eks-terraform-practice-with-claude: three environment roots pass `local.eks_addons.enable_karpenter`
    (an entry `true` of a locals object whose other entries read a data source) to a shared add-ons module, and an
    older copy of that module nobody calls keeps `var.enable_karpenter` at its default (the evaluator evaluates such a
    folder alone, at its defaults). Both are read from the files."""
    asked = _asked(monkeypatch)
    addons = ('variable "enable_karpenter" {\n  type    = bool\n  default = true\n}\n\n'
              'module "eks_blueprints_addons" {\n  source  = "aws-ia/eks-blueprints-addons/aws"\n'
              '  version = "~> 1.16"\n  enable_karpenter = var.enable_karpenter\n}\n')
    for version in ("1.0.0", "2.0.0"):
        (tmp_path / "modules" / version).mkdir(parents=True)
        (tmp_path / "modules" / version / "main.tf").write_text(addons)
    (tmp_path / "env").mkdir()
    (tmp_path / "env" / "main.tf").write_text(
        ROOT + 'locals {\n  eks_addons = {\n    acm = data.aws_caller_identity.current.account_id\n'
        '    enable_karpenter = true\n  }\n}\n\nmodule "addons" {\n  source = "../modules/2.0.0"\n'
        '  enable_karpenter = local.eks_addons.enable_karpenter\n}\n')
    got = scan_charts(Repo(tmp_path))
    assert sorted(c.path for c in got) == ["modules/1.0.0/main.tf", "modules/2.0.0/main.tf"] and asked == []
    (tmp_path / "modules" / "1.0.0" / "main.tf").write_text(addons.replace("default = true", "default = false"))
    repo = Repo(tmp_path)
    assert [c.path for c in scan_charts(repo)] == ["modules/2.0.0/main.tf"] and asked == []
    assert [(f.code, f.path) for f in repo.findings] == [("MIG-SRC-011", "modules/1.0.0/main.tf")]
