"""GpuGkeCluster: its Args and pool Args, the pure plan of its pools, and the mapping to provider resources."""
