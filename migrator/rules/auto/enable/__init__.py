"""EKS Auto Mode turned on where the cluster is declared (rule auto/cluster): the eks module in cluster.py, a
hand-written aws_eks_cluster and an eksctl ClusterConfig here."""
