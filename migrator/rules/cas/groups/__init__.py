"""The node groups Karpenter takes over (rule cas/nodegroups): their sizes at the cutover, their removal at the
cleanup."""
