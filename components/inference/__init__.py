"""GpuInferenceService: its Args and the component."""
