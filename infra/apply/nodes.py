"""kwok Node objects shaped like a stack's pools, so the real scheduler places the stack's pods.

The pools come from the plan's one source, ``StackConfig.pool_shapes()`` (components NodePoolShape):
each node carries the pool's labels, the labels its pods select it by (``placement.node_selector``),
its taints, and the allocatable CPU, memory and GPUs the kubelet reports (capacity minus the
kubelet's reserves: ``components.pools.reserves.allocatable``; the DaemonSets' requests are not taken
off here, the real DaemonSets are scheduled onto the nodes instead).

A node advertises the pool's schedulable GPUs as nvidia.com/gpu (``NodePoolShape.schedulable_gpus_per_node``:
its GPUs times the clients per GPU on a time-shared or MPS pool, its MIG instances on a MIG pool), as
the device plugin does, and a pool's nodes are spread over its zones (``NodePoolShape.zone_names()``),
node i in zone i mod zones.

Labels the cloud or the kubelet puts on every node are added as they do:
``kubernetes.io/hostname``, ``kubernetes.io/os``, ``kubernetes.io/arch``,
``node.kubernetes.io/instance-type``, ``topology.kubernetes.io/zone`` (the pool's zones as its shape knows
them, the nodes of a pool taking them in turn; ``<region>-zone<n>`` stand-ins where the cloud picks them at
deploy time), ``topology.kubernetes.io/region`` where the plan knows the region, and on a GKE GPU node
``cloud.google.com/gke-accelerator``
(GKE labels every GPU node with its accelerator type; on EKS the node groups set
``k8s.amazonaws.com/accelerator`` themselves, so it is in the pool's labels already).

kwok manages a node carrying the annotation ``kwok.x-k8s.io/node: fake`` (its
``--manage-nodes-with-annotation-selector``): it keeps the node Ready and pretends to run the pods
bound to it. kwok's documentation also taints its example nodes ``kwok.x-k8s.io/node=fake`` to
keep real pods off them; here every node is fake and the stack's pods must land on them, so the
nodes carry the pool's taints only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gpu_platform.components.core.labels import GKE_ACCELERATOR_LABEL, GPU_RESOURCE, INSTANCE_TYPE_LABEL, REGION_LABEL, ZONE_LABEL
from gpu_platform.infra.apply.local import KWOK_NODE_ANNOTATION

__all__ = ["POOL_NODE_LABEL", "Pools", "node_count", "node_name", "node_zone", "pool_nodes"]

POOL_NODE_LABEL = "gpu-platform.io/kwok-pool"
"""Which pool a kwok node stands for (for reading placements back; no workload selects it)."""


@dataclass(frozen=True)
class Pools:
    """The plan's pools, as the kwok nodes stand for them: ``StackConfig.pool_shapes()`` and ``pool_zones()``."""

    shapes: Sequence[Any]
    """NodePoolShape, each pool's."""
    zones: dict[str, tuple[str, ...] | int] = field(default_factory=dict)
    """Pool name -> its zones (or how many), StackConfig.pool_zones()."""

    def nodes(self, shapes: Sequence[Any] | None = None, counts: dict[str, int] | None = None, first: dict[str, int] | None = None) -> list[dict[str, Any]]:
        """pool_nodes of these pools (or of ``shapes`` among them)."""
        return pool_nodes(self.shapes if shapes is None else shapes, counts, self.zones, first)


def node_count(shape: Any) -> int:
    """Nodes per pool: its minimum, at least one, so every pool can take pods."""
    return max(1, int(shape.min_nodes))


def node_name(pool: str, index: int) -> str:
    base = re.sub(r"[^a-z0-9-]+", "-", pool.lower()).strip("-") or "pool"
    return f"{base[:50]}-kwok-{index}"


def node_zone(zones: tuple[str, ...] | int | None, index: int) -> str | None:
    """The zone of a pool's ``index``-th node: its zones in turn (``zone-<n>`` when only their number is known)."""
    if isinstance(zones, tuple) and zones:
        return zones[index % len(zones)]
    if isinstance(zones, int) and zones > 0:
        return f"zone-{index % zones + 1}"
    return None


def pool_nodes(
    shapes: Sequence[Any], counts: dict[str, int] | None = None, zones: dict[str, tuple[str, ...] | int] | None = None, first: dict[str, int] | None = None
) -> list[dict[str, Any]]:
    """Node objects for every pool of ``shapes`` (NodePoolShape), ``node_count`` each unless
    ``counts`` names another number for a pool, in the pool's ``zones`` (StackConfig.pool_zones());
    numbered from ``first`` (a pool's nodes added later continue its numbering)."""
    from gpu_platform.components.pools.reserves import ReserveFormula, allocatable

    nodes = []
    for shape in shapes:
        node = allocatable(shape)
        cpu = node.capacity_cpu - node.reserved_cpu
        memory = node.capacity_memory_mib - node.reserved_memory_mib
        pods = node.max_pods or 110  # the kubelet's default --max-pods (GKE's default too)
        capacity = {"cpu": f"{node.capacity_cpu}m", "memory": f"{node.capacity_memory_mib}Mi", "pods": str(pods)}
        allocated = {"cpu": f"{cpu}m", "memory": f"{memory}Mi", "pods": str(pods)}
        if shape.gpus_per_node:
            # The shape's one count: x clients on a shared pool, MIG instances on a MIG pool.
            capacity[GPU_RESOURCE] = allocated[GPU_RESOURCE] = str(shape.schedulable_gpus_per_node)
        start = (first or {}).get(shape.name, 0)
        for i in range(start, start + (counts or {}).get(shape.name, node_count(shape))):
            name = node_name(shape.name, i)
            zone = node_zone((zones or {}).get(shape.name) or shape.zone_names(), i)
            labels = {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                INSTANCE_TYPE_LABEL: shape.machine_type,
                POOL_NODE_LABEL: shape.name,
                **dict(shape.labels),
                **dict(shape.placement.node_selector),
                **({ZONE_LABEL: zone} if zone else {}),
                **({REGION_LABEL: shape.region} if shape.region else {}),
            }
            if shape.gpus_per_node and shape.accelerator and shape.reserve_formula is ReserveFormula.GKE:
                labels.setdefault(GKE_ACCELERATOR_LABEL, shape.accelerator)
            key, value = KWOK_NODE_ANNOTATION
            nodes.append(
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {"name": name, "labels": labels, "annotations": {key: value, "node.alpha.kubernetes.io/ttl": "0"}},
                    "spec": {"taints": [{"key": t.key, "value": t.value, "effect": t.effect.value} for t in shape.taints]},
                    "status": {
                        "capacity": capacity,
                        "allocatable": allocated,
                        "nodeInfo": {
                            "architecture": "amd64",
                            "operatingSystem": "linux",
                            "kubeletVersion": "fake",
                            "kubeProxyVersion": "fake",
                            "bootID": "",
                            "containerRuntimeVersion": "",
                            "kernelVersion": "",
                            "machineID": "",
                            "osImage": "",
                            "systemUUID": "",
                        },
                    },
                }
            )
    return nodes
