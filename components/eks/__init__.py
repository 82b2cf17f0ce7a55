"""EksCluster and SpotFailoverEksNodeGroups: their Args, the pure plan of the node groups, and the mapping to provider resources."""
