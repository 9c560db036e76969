"""The new NodePools and EC2NodeClasses written beside the old objects (rule v1beta1/manifests, and the Auto Mode
hop built on it): one room per part, node roles, placement, cleanup."""
