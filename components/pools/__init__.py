"""What every node pool is, on GKE and EKS alike: shapes, bounds, taints and capacity strategy
(``shapes``), the kubelet's reserve (``reserves``) and GPU sharing (``sharing``)."""

from gpu_platform.components._moved import forwarding

# gpu_platform.components.pools was the module now at pools.shapes: its names, with a warning, for one release.
__getattr__ = forwarding("pools")
