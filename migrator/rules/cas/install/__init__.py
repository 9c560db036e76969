"""Karpenter installed next to Cluster Autoscaler (rule cas/karpenter, phase install), one room per installer
shape it writes; installer.py decides, the others write (docs/design.md has the layout)."""
