"""KarpenterNodePools: Karpenter as the EKS provisioner, its Args, the pure plan of its NodePools, and the mapping to provider resources."""
