"""`gpu-platform preflight gke <stack>`: what Google Cloud must offer before a GKE stack can deploy.

For the stack's region and GPU pools:

- which zones offer each pool's GPU: online, the Compute API's acceleratorTypes.list in every zone the pool
  runs in (its node locations, or every zone of the region when GKE picks them); offline (``--offline``, or
  no client), the shipped table (components/catalog/data/gpu_zones.json, with its sources and date), saying which
  GPUs it does not list;
- online, whether the project's regional quotas hold every node pool at its maximum: the GPU quota of each
  GPU (NVIDIA_<TYPE>_GPUS for on-demand node pools, PREEMPTIBLE_NVIDIA_<TYPE>_GPUS for spot ones, which
  Spot VMs count against) and CPUS for every node's vCPUs (regions.get's ``quotas``);
- online, each reservation a pool's capacity ladder names (reservations.list in every zone of the region, in
  the owner's project for a shared one): that it is in each of the pool's zones, ready, for the pool's machine
  type and GPUs, shared with the stack's project, and with enough free instances (count - in use) in each zone
  for what the node pools consuming it create there; offline, each is said to be unchecked.

One finding per line; a finding that would make a deploy fail (or leave a node pool that can never
scale) is an error. The clients are google-cloud-compute's (``AcceleratorTypesClient``, ``RegionsClient``,
``ReservationsClient``); anything shaped like them will do.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from gpu_platform.components.catalog.gpu_zones import GPU_ZONES_DATE, SHIPPED_SOURCE, absent_gpu_zones, zones_offering
from gpu_platform.components.catalog.gpus import gcp_family
from gpu_platform.components.catalog.zones import zones_of
from gpu_platform.components.core.cloud import Cloud
from gpu_platform.components.core.labels import PoolRole
from gpu_platform.components.gke.plan import PlannedNodePool, PlannedPool
from gpu_platform.components.pools.ladders import RungKind
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
    """What preflight asks: google-cloud-compute's AcceleratorTypesClient, RegionsClient and ReservationsClient (or look-alikes)."""

    accelerator_types: Any
    regions: Any
    reservations: Any


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


@dataclass(frozen=True)
class ReservationRung:
    """A reservation a GPU pool's capacity ladder names, where it is consumed: the rung of one of the plan's node pools."""

    key: str
    """The stack key that names it: gke.gpu_pools[<i>].capacity_ladder[<j>].reservation (gke.scheduler_pool...)."""
    pool: PlannedPool
    """The pool whose ladder names it."""
    node_pool: PlannedNodePool
    """The node pool of the rung (it consumes the reservation)."""
    owner: str | None
    """The project that holds it: the one a shared name (projects/<p>/reservations/<n>) names, else the stack's (None offline)."""
    name: str
    """The reservation's name."""
    zones: tuple[str, ...]
    """The zones the node pool runs in: the plan's, or every zone of the region when GKE picks them."""
    zones_named: bool
    """Whether the stack names the zones (else GKE picks among ``zones``)."""

    @property
    def value(self) -> str:
        """The rung's reservation as the stack file states it."""
        assert self.node_pool.rung.reservation is not None
        return self.node_pool.rung.reservation

    def gpus(self) -> str:
        shape = self.pool.shape
        return f"{shape.machine_type} with {shape.gpus_per_node}x {shape.accelerator}"


def reservation_rungs(config: StackConfig, project: str | None) -> list[ReservationRung]:
    """Every named reservation rung of the stack's GPU pools, from the plan (``GpuGkeClusterArgs.plan``), in pool and
    rung order; a rung without a name (any reservation) falls back to on-demand capacity and is not looked up."""
    gke = config.gke
    assert gke is not None
    names = [p.name for p in gke.gpu_pools]
    zoned = {shape.name: (zones, named) for shape, zones, named in _pool_zones(config)}
    rungs: list[ReservationRung] = []
    for planned in gke.plan:
        if planned.gpu is None:
            continue
        base = "gke.scheduler_pool" if planned.role is PoolRole.SCHEDULER else f"gke.gpu_pools[{names.index(planned.args.name)}]"
        zones, named = zoned[planned.shape.name]
        for j, node_pool in enumerate(planned.node_pools):
            rung = node_pool.rung
            if rung.kind is not RungKind.RESERVATION or rung.reservation is None:
                continue
            owner, _, name = rung.reservation.rpartition("/reservations/")
            rungs.append(
                ReservationRung(
                    f"{base}.capacity_ladder[{j}].reservation",
                    planned,
                    node_pool,
                    owner.removeprefix("projects/") if owner else project,
                    name,
                    zones,
                    named,
                )
            )
    return rungs


def _reservations_listed(config: StackConfig, project: str, client: Any) -> dict[tuple[str, str], dict[str, Any]]:
    """(project, zone) -> the reservations there by name (reservations.list), for every zone of the region and of
    the rungs' pools, in each project that holds a named reservation."""
    assert config.gke is not None
    rungs = reservation_rungs(config, project)
    region_zones = set(zones_of(Cloud.GCP, config.gke.region) or ())
    asked = sorted({(r.owner or project, z) for r in rungs for z in {*r.zones, *region_zones}})
    return {(owner, zone): {r.name: r for r in client.list(project=owner, zone=zone)} for owner, zone in asked}


def _gpus_reserved(reservation: Any) -> tuple[str, list[tuple[str, int]]] | None:
    """(machine type, [(GPU, count)]) of a specific reservation's instance properties; None when it states none
    (a reservation made from an instance template)."""
    props = reservation.specific_reservation.instance_properties
    if not props or not props.machine_type:
        return None
    return props.machine_type, [(a.accelerator_type, int(a.accelerator_count)) for a in props.guest_accelerators]


def _reservation_findings(config: StackConfig, project: str | None, listed: dict[tuple[str, str], dict[str, Any]] | None) -> list[Finding]:
    """Each named reservation rung against the reservations ``listed`` (None offline: each said to be unchecked).

    A node pool with SPECIFIC_RESERVATION affinity creates its nodes only in a reservation of that name in its own
    zone, of its machine type and GPUs, so each of its zones needs one; GKE creates ``initial_node_count`` nodes per
    zone with the node pool, so each zone's reservation needs that many free (count - in use) for every node pool
    consuming it; a reservation of another project serves only projects it is shared with."""
    rungs = reservation_rungs(config, project)
    if listed is None:
        return [
            Finding(
                False,
                f"pool {r.pool.args.name}: {r.key} {r.value}: not checked offline (that it is in {', '.join(r.zones)} and holds "
                f"{r.gpus()}" + (f", {r.node_pool.initial_nodes} free per zone" if r.node_pool.initial_nodes else "") + "); run preflight gke online",
            )
            for r in rungs
        ]
    assert project is not None and config.gke is not None
    region = config.gke.region
    # What GKE creates in each zone with each node pool consuming a reservation, by (project, zone, name).
    need: dict[tuple[str, str, str], list[tuple[str, int]]] = defaultdict(list)
    for r in rungs:
        for zone in r.zones:
            need[(r.owner or project, zone, r.name)].append((r.node_pool.gke_name, r.node_pool.initial_nodes))
    findings: list[Finding] = []
    told: set[tuple[str, str, str]] = set()
    for r in rungs:
        owner = r.owner or project
        where = f"pool {r.pool.args.name}: {r.key} {r.value}"
        in_project = "" if owner == project else f" of project {owner}"
        held = sorted(z for (p, z), found in listed.items() if p == owner and r.name in found)
        missing = [z for z in r.zones if r.name not in listed.get((owner, z), {})]
        if missing:
            has = f"it is in {', '.join(held)}" if held else f"no zone of {region} has it"
            fix = (
                "set the pool's node_locations to zones it is in, or reserve in those zones"
                if r.zones_named
                else f"GKE may pick any zone of {region}: set node_locations to the zones it is in"
            )
            findings.append(
                Finding(
                    True,
                    f"{where}: no reservation {r.name}{in_project} in {', '.join(missing)} ({has}): node pool {r.node_pool.gke_name} "
                    f"consumes it only in its own zones and cannot create nodes there; {fix}",
                )
            )
        for zone in r.zones:
            found = listed.get((owner, zone), {}).get(r.name)
            if found is None:
                continue
            problems = []
            status = str(found.status or "")
            if status != "READY":
                problems.append(f"its status is {status or 'unknown'}, not READY")
            reserved = _gpus_reserved(found)
            shape = r.pool.shape
            if reserved is not None:
                machine, accelerators = reserved
                if machine != shape.machine_type:
                    problems.append(f"it reserves {machine}, not the pool's {shape.machine_type}")
                if accelerators and accelerators != [(shape.accelerator, shape.gpus_per_node)]:
                    gpus = ", ".join(f"{n}x {a}" for a, n in accelerators)
                    problems.append(f"it reserves {gpus} per VM, not the pool's {shape.gpus_per_node}x {shape.accelerator}")
                elif not accelerators and gcp_family(shape.machine_type) == "n1":
                    problems.append(f"it reserves no GPUs, not the pool's {shape.gpus_per_node}x {shape.accelerator} (N1 machines attach them)")
            if owner != project:
                share = found.share_settings
                share_type = str(share.share_type or "LOCAL") if share else "LOCAL"
                shared = share_type == "ORGANIZATION" or (share_type == "SPECIFIC_PROJECTS" and project in share.project_map)
                if not shared:
                    problems.append(f"it is not shared with project {project} (share type {share_type}): share it with {project}")
            if problems:
                findings.append(Finding(True, f"{where}: reservation {r.name}{in_project} in {zone}: " + "; ".join(problems)))
                continue
            what = (
                r.gpus()
                if reserved is not None
                else f"made from {found.specific_reservation.source_instance_template or 'an instance template'} (machine and GPUs not checked)"
            )
            count, in_use = int(found.specific_reservation.count), int(found.specific_reservation.in_use_count)
            free, key = count - in_use, (owner, zone, r.name)
            consumers = need[key]
            total = sum(n for _, n in consumers)
            detail = " + ".join(f"{name} {n}" for name, n in consumers)
            held_text = f"{free} of {count} free ({in_use} in use)"
            if key in told:
                continue
            told.add(key)
            if total > free:
                findings.append(
                    Finding(
                        True,
                        f"{where}: reservation {r.name}{in_project} in {zone} has {held_text}; the node pools consuming it create {total} "
                        f"there at once ({detail}): lower their minimum or enlarge the reservation",
                    )
                )
            else:
                findings.append(
                    Finding(
                        False,
                        f"{where}: reservation {r.name}{in_project} in {zone}: READY, {what}, {held_text}; the node pools create {total} there ({detail})",
                    )
                )
    return findings


def preflight_gke(config: StackConfig, project: str | None, clients: ComputeClients | None) -> list[Finding]:
    """The findings for a gcp stack. ``clients`` None: offline, the shipped GPU zone table and no quotas.

    Raises CloudError (one line) when Google Cloud cannot be asked (no credentials, a refusal, no project)."""
    assert config.gke is not None
    if clients is None:
        return [
            *_zone_findings(config, None),
            Finding(False, "quotas (GPUs, preemptible GPUs, CPUs) are not checked offline; run preflight gke online"),
            *_reservation_findings(config, None, None),
        ]
    if not project:
        raise CloudError("cannot ask Google Cloud: no project (set gke.project or gcp:project in the stack file)")
    region = config.gke.region
    try:
        # Every zone of the region besides the pools' own, so a refusal can name the zones that do offer the GPU.
        asked = {z for _, pool_zones, _ in _pool_zones(config) for z in pool_zones}
        zones = sorted(asked | (set(zones_of(Cloud.GCP, region) or ()) if asked else set()))
        offered = {z: {a.name for a in clients.accelerator_types.list(project=project, zone=z)} for z in zones}
        quotas = {q.metric: (float(q.limit), float(q.usage)) for q in clients.regions.get(project=project, region=region).quotas}
        reservations = _reservations_listed(config, project, clients.reservations)
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
    return [*_zone_findings(config, offered), *_quota_findings(config, quotas), *_reservation_findings(config, project, reservations)]
