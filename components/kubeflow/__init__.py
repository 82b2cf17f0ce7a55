"""KubeflowInstall: its Args, the pure plan of an install, the transforms of upstream's manifests, and the component."""
