"""`gpu-platform preflight gke <stack>`: what Google Cloud must offer before a GKE stack can deploy.

For the stack's region and GPU pools:

- which zones offer each pool's GPU: online, the Compute API's acceleratorTypes.list in every zone the pool
  runs in (its node locations, or every zone of the region when GKE picks them); offline (``--offline``, or
  no client), the shipped table (components/catalog/data/gpu_zones.json, with its sources and date), saying which
  GPUs it does not list;
- online, whether the project's regional quotas hold every node pool at its maximum: the GPU quota of each
  GPU (NVIDIA_<TYPE>_GPUS for on-demand node pools, PREEMPTIBLE_NVIDIA_<TYPE>_GPUS for spot ones, which
  Spot VMs count against) and CPUS for every node's vCPUs (regions.get's ``quotas``).

One finding per line; a finding that would make a deploy fail (or leave a node pool that can never
scale) is an error. The clients are google-cloud-compute's (``AcceleratorTypesClient``, ``RegionsClient``);
anything shaped like them will do.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from gpu_platform.components.catalog.gpu_zones import GPU_ZONES_DATE, SHIPPED_SOURCE, absent_gpu_zones, zones_offering
from gpu_platform.components.catalog.zones import zones_of
from gpu_platform.components.core.cloud import Cloud
from gpu_platform.components.pools.shapes import NodePoolShape
from gpu_platform.infra.preflight import CloudError, Finding
from gpu_platform.infra.stack.model import StackConfig

__all__ = ["GPU_QUOTAS", "ComputeClients", "preflight_gke"]

GPU_QUOTAS: dict[str, str] = {
    "nvidia-tesla-t4": "NVIDIA_T4_GPUS",
    "nvidia-tesla-p4": "NVIDIA_P4_GPUS",
    "nvidia-tesla-p100": "NVIDIA_P100_GPUS",
    "nvidia-tesla-v100": "NVIDIA_V100_GPUS",
    "nvidia-l4": "NVIDIA_L4_GPUS",
    "nvidia-tesla-a100": "NVIDIA_A100_GPUS",
    "nvidia-a100-80gb": "NVIDIA_A100_80GB_GPUS",
    "nvidia-h100-80gb": "NVIDIA_H100_GPUS",
    "nvidia-h100-mega-80gb": "NVIDIA_H100_MEGA_GPUS",
}
"""The regional Compute Engine quota metric of each GKE GPU (on-demand); Spot VMs count against PREEMPTIBLE_<metric>."""
PREEMPTIBLE = "PREEMPTIBLE_"
CPUS = "CPUS"


@dataclass(frozen=True)
class ComputeClients:
    """What preflight asks: google-cloud-compute's AcceleratorTypesClient and RegionsClient (or look-alikes)."""

    accelerator_types: Any
    regions: Any


def _pool_zones(config: StackConfig) -> list[tuple[NodePoolShape, tuple[str, ...], bool]]:
    """(shape, zones, zones_named) per GPU pool, from the plan (``StackConfig.pool_shapes()``): the shape's zones,
    or every zone of its region when GKE picks them."""
    assert config.gke is not None
    rows: list[tuple[NodePoolShape, tuple[str, ...], bool]] = []
    for shape in config.pool_shapes():
        if shape.accelerator is None:
            continue
        if shape.zones is not None:
            rows.append((shape, shape.zones, True))
        else:
            rows.append((shape, tuple(zones_of(Cloud.GCP, shape.region or config.gke.region) or ()), False))
    return rows


def _zone_findings(config: StackConfig, offered: dict[str, set[str]] | None) -> list[Finding]:
    """Each GPU pool against the zones that offer its GPU, by the one verdict (catalog.gpu_zones.absent_gpu_zones):
    ``offered`` (zone -> accelerators) asked of the Compute API, or None for the shipped table."""
    assert config.gke is not None
    findings: list[Finding] = []
    for shape, zones, named in _pool_zones(config):
        pool, accelerator, region = shape.name, shape.accelerator, shape.region or config.gke.region
        assert accelerator is not None
        if offered is None:
            if zones_offering(accelerator) is None:
                findings.append(
                    Finding(
                        False,
                        f"pool {pool}: {accelerator} not checked offline: the shipped GPU zone data "
                        f"({GPU_ZONES_DATE}) does not list it; run preflight gke online",
                    )
                )
                continue
            have, source, said = None, SHIPPED_SOURCE, f"by the shipped data ({GPU_ZONES_DATE})"
        else:
            have, source = [z for z, accelerators in offered.items() if accelerator in accelerators], "the Compute API"
            said = f"by {source}"
        if not zones:
            findings.append(Finding(False, f"pool {pool}: the zones of {region} are not known offline; not checked"))
            continue
        problems = absent_gpu_zones(accelerator, zones, have, source)
        picked = "" if named else f" (GKE may pick it in {region}: set node_locations)"
        findings += [Finding(True, f"pool {pool}: {problem}{picked}") for _, problem in problems]
        if not problems:
            findings.append(Finding(False, f"pool {pool}: {accelerator} is offered in {', '.join(zones)} {said}"))
    return findings


def _quota_findings(config: StackConfig, quotas: dict[str, tuple[float, float]]) -> list[Finding]:
    """The regional GPU and CPU quotas (metric -> (limit, usage)) against every node pool at its maximum: the GPUs
    and vCPUs per node from the plan's shapes (``StackConfig.pool_shapes()``), the node pools' maxima from its pools."""
    assert config.gke is not None
    region = config.gke.region
    shapes = {s.name: s for s in config.pool_shapes()}
    gpus: dict[str, list[tuple[str, int]]] = defaultdict(list)
    cpus: list[tuple[str, int]] = []
    for pool in config.gke.plan:
        shape = shapes[pool.shape.name]
        for node_pool in pool.node_pools:
            cpus.append((f"{node_pool.gke_name} {node_pool.max_total}x{shape.vcpus}", node_pool.max_total * shape.vcpus))
            if shape.accelerator is None:
                continue
            metric = GPU_QUOTAS[shape.accelerator]
            gpus[(PREEMPTIBLE + metric) if node_pool.spot else metric].append(
                (f"{node_pool.gke_name} {node_pool.max_total}x{shape.gpus_per_node}", node_pool.max_total * shape.gpus_per_node)
            )
    findings: list[Finding] = []
    for metric, needs in [*sorted(gpus.items()), (CPUS, cpus)]:
        total = sum(n for _, n in needs)
        detail = " + ".join(label for label, _ in needs)
        if metric not in quotas:
            findings.append(Finding(True, f"quota {metric} in {region}: the region has no such quota (0 allowed); the node pools may need {total} ({detail})"))
            continue
        limit, usage = quotas[metric]
        what = f"quota {metric} in {region} is {limit:g} ({usage:g} in use)"
        if total > limit - usage:
            findings.append(Finding(True, f"{what}; the node pools may need {total} more ({detail}): request an increase"))
        else:
            findings.append(Finding(False, f"{what}; the node pools need at most {total}"))
    return findings


def preflight_gke(config: StackConfig, project: str | None, clients: ComputeClients | None) -> list[Finding]:
    """The findings for a gcp stack. ``clients`` None: offline, the shipped GPU zone table and no quotas.

    Raises CloudError (one line) when Google Cloud cannot be asked (no credentials, a refusal, no project)."""
    assert config.gke is not None
    if clients is None:
        return [*_zone_findings(config, None), Finding(False, "quotas (GPUs, preemptible GPUs, CPUs) are not checked offline; run preflight gke online")]
    if not project:
        raise CloudError("cannot ask Google Cloud: no project (set gke.project or gcp:project in the stack file)")
    region = config.gke.region
    try:
        # Every zone of the region besides the pools' own, so a refusal can name the zones that do offer the GPU.
        asked = {z for _, pool_zones, _ in _pool_zones(config) for z in pool_zones}
        zones = sorted(asked | (set(zones_of(Cloud.GCP, region) or ()) if asked else set()))
        offered = {z: {a.name for a in clients.accelerator_types.list(project=project, zone=z)} for z in zones}
        quotas = {q.metric: (float(q.limit), float(q.usage)) for q in clients.regions.get(project=project, region=region).quotas}
    except Exception as exc:
        # Recognised by shape, not imported: google.api_core.exceptions loads google.rpc.status_pb2, which cannot
        # be loaded beside the Pulumi SDK's own copy of that proto (a duplicate symbol) in one process.
        module, name = type(exc).__module__, type(exc).__name__
        if module.startswith("google.auth") and name == "DefaultCredentialsError":
            raise CloudError("cannot ask Google Cloud: no credentials (gcloud auth application-default login, or GOOGLE_APPLICATION_CREDENTIALS)") from None
        if module.startswith("google.api_core") and getattr(exc, "code", None) is not None:
            message = " ".join(str(getattr(exc, "message", None) or exc).split())[:200]
            raise CloudError(f"Google Cloud refused a Compute API call in {region}: {exc.code} {message}") from None  # type: ignore[attr-defined]
        raise
    return [*_zone_findings(config, offered), *_quota_findings(config, quotas)]
