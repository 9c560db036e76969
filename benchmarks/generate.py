"""Seeded generator of infrastructure monorepos for the benchmark (benchmarks/run.py).

    python benchmarks/generate.py OUT --roots 50 --unrelated 5000 [--seed 7]

- `clusters/cNN/`: one Terraform root per cluster in the shape of the bundled example (the terraform-aws-modules
  karpenter module, a helm_release with heredoc values and a version from tfvars, AWSNodeTemplate/Provisioner
  kubectl_manifests, a templatefile Provisioner) with its own `envs/dev.tfvars` and cluster name;
- `services/svc-NNNN/main.tf`: unrelated Terraform of realistic size: security groups with rules, buckets with
  policies, IAM roles and an `aws_iam_policy_document` (some with EC2 actions, none Karpenter's);
- `k8s/app-NNNN.yaml`: every tenth unrelated file is Kubernetes YAML (Deployment + Service + ConfigMap).

With `--bundle`, every cluster root also carries a Flux `flux-system/gotk-components.yaml` of about 500 KB: CRDs only
(HelmRelease, Kustomization, ... named inside their schemas), the shape that made real GitOps repositories slow.

With `--mixed`, the cluster roots stand at three different steps (staged rollouts, the shape of fixtures/fleet-staged):
one in three on v1alpha5, one on v1beta1, one on v1, all installing the charts through one shared module.
"""
from __future__ import annotations

import argparse
import random
import shutil
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "terraform-eks" / "input"
FLEET = Path(__file__).resolve().parents[1] / "fixtures" / "fleet-staged" / "input"
ERAS = ["prod-eu", "dev-eu", "stage-eu"]          # v1alpha5, v1beta1, v1 (fixtures/fleet-staged/README.md)

ACTIONS = ["s3:GetObject", "s3:PutObject", "s3:ListBucket", "dynamodb:GetItem", "dynamodb:PutItem", "logs:PutLogEvents",
           "logs:CreateLogStream", "sqs:SendMessage", "kms:Decrypt", "secretsmanager:GetSecretValue",
           "ec2:DescribeInstances", "ec2:DescribeSubnets", "ecr:GetAuthorizationToken", "sns:Publish"]

SERVICE = '''# {name}: owned by team {team}
resource "aws_security_group" "{name}" {{
  name        = "{name}-sg"
  description = "{name} service"
  vpc_id      = var.vpc_id
{ingress}
  egress {{
    from_port   = 0
    to_port     = 0
    protocol    = "-1"
    cidr_blocks = ["0.0.0.0/0"]
  }}

  tags = {{
    Service = "{name}"
    Team    = "{team}"
  }}
}}

resource "aws_s3_bucket" "{name}_data" {{
  bucket = "acme-{name}-data-{seed}"
  tags = {{
    Service = "{name}"
  }}
}}

resource "aws_s3_bucket_versioning" "{name}_data" {{
  bucket = aws_s3_bucket.{name}_data.id
  versioning_configuration {{
    status = "Enabled"
  }}
}}

data "aws_iam_policy_document" "{name}_assume" {{
  statement {{
    actions = ["sts:AssumeRole"]
    principals {{
      type        = "Service"
      identifiers = ["ecs-tasks.amazonaws.com"]
    }}
  }}
}}

resource "aws_iam_role" "{name}" {{
  name               = "{name}-task"
  assume_role_policy = data.aws_iam_policy_document.{name}_assume.json
}}

data "aws_iam_policy_document" "{name}" {{
{statements}
}}

resource "aws_iam_role_policy" "{name}" {{
  name   = "{name}"
  role   = aws_iam_role.{name}.id
  policy = data.aws_iam_policy_document.{name}.json
}}
'''

INGRESS = '''  ingress {{
    description = "port {port}"
    from_port   = {port}
    to_port     = {port}
    protocol    = "tcp"
    cidr_blocks = ["10.{a}.0.0/16"]
  }}
'''

STATEMENT = '''  statement {{
    sid       = "S{i}"
    effect    = "Allow"
    actions   = [{actions}]
    resources = ["arn:aws:s3:::acme-{name}-data-{seed}/*", aws_s3_bucket.{name}_data.arn]
  }}
'''

APP = '''apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  labels:
    app: {name}
spec:
  replicas: {replicas}
  selector:
    matchLabels:
      app: {name}
  template:
    metadata:
      labels:
        app: {name}
    spec:
      containers:
        - name: app
          image: registry.example.com/{name}:1.{replicas}.0
          ports:
            - containerPort: 8080
          resources:
            requests:
              cpu: 100m
              memory: 128Mi
---
apiVersion: v1
kind: Service
metadata:
  name: {name}
spec:
  selector:
    app: {name}
  ports:
    - port: 80
      targetPort: 8080
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {name}-config
data:
  LOG_LEVEL: info
  FEATURE_FLAGS: "a,b,c"
'''


def cluster_root(dest: Path, i: int) -> None:
    """A copy of the bundled example as its own root, with its own cluster name and tfvars under envs/."""
    shutil.copytree(EXAMPLE, dest)
    tfvars = dest / "dev.tfvars"
    (dest / "envs").mkdir()
    tfvars.rename(dest / "envs" / "dev.tfvars")
    for p in dest.rglob("*"):
        if p.is_file():
            p.write_text(p.read_text().replace("atlas", f"atlas{i:02d}"))


def fleet_root(dest: Path, i: int) -> None:
    """A root of fixtures/fleet-staged at one of its three eras (by i), with its own cluster name."""
    src = FLEET / "clusters" / ERAS[i % 3]
    shutil.copytree(src, dest)
    for p in dest.rglob("*"):
        if p.is_file():
            p.write_text(p.read_text().replace(ERAS[i % 3], f"c{i:02d}"))


def service(rng: random.Random, j: int) -> str:
    name = f"svc{j:04d}"
    ingress = "".join(INGRESS.format(port=rng.choice([80, 443, 5432, 6379, 8080, 9090]) + k, a=rng.randrange(250))
                      for k in range(rng.randint(1, 4)))
    stmts = "".join(STATEMENT.format(i=k, name=name, seed=j,
                                     actions=", ".join(f'"{a}"' for a in rng.sample(ACTIONS, rng.randint(2, 6))))
                    for k in range(rng.randint(1, 4)))
    return SERVICE.format(name=name, team=rng.choice(["payments", "search", "growth", "data"]), ingress=ingress,
                          statements=stmts, seed=j)


CRD_KINDS = ["HelmRelease", "HelmRepository", "Kustomization", "GitRepository", "OCIRepository", "Bucket", "HelmChart",
             "Alert", "Provider", "Receiver", "ImagePolicy", "ImageRepository"]


def crd_bundle(kib: int = 500) -> str:
    """A Flux gotk-components.yaml look-alike: CustomResourceDefinitions whose schemas name the Flux kinds."""
    out, i = [], 0
    while sum(map(len, out)) < kib * 1024:
        kind = CRD_KINDS[i % len(CRD_KINDS)]
        fields = "".join(f"                    field{j}:\n                      description: Field {j} of {kind}; "
                         "it tunes how the reconciler handles this object in some detail.\n"
                         "                      type: string\n" for j in range(200))
        out.append(f"---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n"
                   f"  name: {kind.lower()}s{i}.toolkit.fluxcd.io\nspec:\n  group: toolkit.fluxcd.io\n  names:\n"
                   f"    kind: {kind}\n    plural: {kind.lower()}s\n  scope: Namespaced\n  versions:\n  - name: v1\n"
                   "    schema:\n      openAPIV3Schema:\n        properties:\n          spec:\n            properties:\n"
                   "              values:\n                properties:\n                  nested:\n"
                   f"                    properties:\n{fields}")
        i += 1
    return "".join(out)


def generate(root: Path, roots: int, unrelated: int, seed: int = 7, mixed: bool = False,
             bundle: bool = False) -> dict:
    rng = random.Random(seed)
    if mixed:
        shutil.copytree(FLEET / "modules", root / "modules")
    for i in range(roots):
        (fleet_root if mixed else cluster_root)(root / "clusters" / f"c{i:02d}", i)
        if bundle:
            p = root / "clusters" / f"c{i:02d}" / "flux-system" / "gotk-components.yaml"
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(crd_bundle())
    for j in range(unrelated):
        if j % 10 == 9:
            p = root / "k8s" / f"app-{j:04d}.yaml"
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(APP.format(name=f"app{j:04d}", replicas=rng.randint(1, 9)))
        else:
            p = root / "services" / f"svc-{j:04d}" / "main.tf"
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(service(rng, j))
    files = [p for p in root.rglob("*") if p.is_file()]
    return {"files": len(files), "bytes": sum(p.stat().st_size for p in files)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--roots", type=int, default=50)
    ap.add_argument("--unrelated", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--mixed", action="store_true", help="cluster roots at three eras (v1alpha5, v1beta1, v1)")
    ap.add_argument("--bundle", action="store_true", help="a 500 KB Flux CRD bundle in every cluster root")
    a = ap.parse_args()
    if a.out.exists():
        raise SystemExit(f"{a.out} exists")
    info = generate(a.out, a.roots, a.unrelated, a.seed, a.mixed, a.bundle)
    print(f"{a.out}: {info['files']} files, {info['bytes'] / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
