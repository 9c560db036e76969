variable "spot" {
  type    = bool
  default = false
}

locals {
  karpenter_base = [
    { name = "settings.aws.clusterName", value = "shop" },
    { name = "settings.aws.defaultInstanceProfile", value = "KarpenterNodeInstanceProfile-shop" },
  ]
  karpenter_spot = [
    { name = "settings.aws.interruptionQueueName", value = "shop" },
  ]
}

resource "helm_release" "karpenter" {
  namespace  = "karpenter"
  name       = "karpenter"
  repository = "oci://public.ecr.aws/karpenter"
  chart      = "karpenter"
  version    = "v0.31.4"

  dynamic "set" {
    for_each = var.spot ? concat(local.karpenter_base, local.karpenter_spot) : local.karpenter_base
    content {
      name  = set.value.name
      value = set.value.value
    }
  }
}
