"""Cluster Autoscaler to zero replicas and removed (rule cas/autoscaler), one room per installer shape it was written
with; autoscaler.py goes over the installs (docs/design.md has the layout)."""
