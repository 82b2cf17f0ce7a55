"""SharedDatasets: buckets shared with tenants, their Args, the mapping to volumes and claims, and the component."""
