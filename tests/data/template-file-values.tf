data "template_file" "karpenter" {
  template = <<-EOF
    settings:
      aws:
        clusterName: ${cluster_name}
        defaultInstanceProfile: ${profile}
  EOF
  vars = {
    cluster_name = "shop"
    profile      = aws_iam_instance_profile.karpenter.name
  }
}

resource "aws_iam_instance_profile" "karpenter" {
  name = "KarpenterNodeInstanceProfile-shop"
  role = "KarpenterNodeRole-shop"
}

resource "helm_release" "karpenter" {
  namespace  = "karpenter"
  name       = "karpenter"
  repository = "oci://public.ecr.aws/karpenter"
  chart      = "karpenter"
  version    = "v0.31.1"
  values     = [data.template_file.karpenter.rendered]
}

resource "kubectl_manifest" "node_template" {
  yaml_body = <<-YAML
    apiVersion: karpenter.k8s.aws/v1alpha1
    kind: AWSNodeTemplate
    metadata:
      name: default
    spec:
      subnetSelector:
        karpenter.sh/discovery: shop
      securityGroupSelector:
        karpenter.sh/discovery: shop
  YAML
}
