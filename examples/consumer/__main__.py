"""A Pulumi program of another team that builds a GpuGkeCluster from the gpu-platform package.

docs/getting-started/library.md shows this file; tests/test_packaging.py runs it from a freshly built wheel.
"""

import pulumi

from gpu_platform.components import (
    AutoscalingBounds,
    BoundsScope,
    CapacityStrategy,
    GpuGkeCluster,
    GpuGkeClusterArgs,
    GpuNodePoolArgs,
)

cluster = GpuGkeCluster(
    "ml",
    GpuGkeClusterArgs(
        project="my-project",
        location="us-central1",
        node_locations=["us-central1-b", "us-central1-c"],
        gpu_pools=[
            GpuNodePoolArgs(
                name="l4",
                machine_type="g2-standard-8",
                accelerator_type="nvidia-l4",
                capacity=CapacityStrategy.SPOT_THEN_ON_DEMAND,
                autoscaling=AutoscalingBounds(scope=BoundsScope.TOTAL, min_nodes=0, max_nodes=8),
            )
        ],
    ),
)
pulumi.export("kubeconfig", cluster.kubeconfig)
