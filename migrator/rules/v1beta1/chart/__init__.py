"""The Karpenter chart's install moved across a hop (rule v1beta1/helm, and the later hops' helm rules built on it),
one room per part of the install it writes: values, version (and repository), the CRD chart."""
