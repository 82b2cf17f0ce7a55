"""ExistingCluster: a GKE or EKS cluster the platform did not create, its Args and the component."""
