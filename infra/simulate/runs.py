"""`gpu-platform simulate`: a stack's cluster under a workload, before anyone pays for it.

The stack's typed config (the same StackConfig the deployment reads) becomes the node groups
of the cluster model (infra/simulate/model.py): each pool's or GPU class's node groups with
their real shapes (the catalog, or a stated shape) and allocatable resources (the kubelet
reserve formulas plan-capacity uses), their bounds (per zone or total), their capacity type
and the order the autoscaler tries them (GKE ComputeClass priorities: spot before on-demand;
EKS priority tiers, ties by least-waste), the tenants' GPU quotas and the autoscaler's
settings (EKS: the stack's cluster-autoscaler settings; GKE: its autoscaling profile).
``ModelSettings`` holds what the stack does not say: timings of nodes and pods, spot
shortage and preemption, with documented defaults and their sources. ``--set KEY=VALUE``
overrides a stack key (``gke.gpu_pools[t4].autoscaling.min_nodes=2``) or a model key
(``model.autoscaler.scan_interval=5s``) for the run; ``--sweep KEY=V1,V2`` runs every
combination.

The figures are the report's (infra/report/prometheus.py ``figures``) from the simulated run sampled
on its 1 s grid, plus the cost (infra/simulate/prices.yaml or ``--prices``), the failovers and the
pods refused at admission.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import BaseModel, BeforeValidator, Field, PlainSerializer, ValidationError

from gpu_platform.components.cloud import Cloud
from gpu_platform.components.models import ARGS_CONFIG
from gpu_platform.components.numbers import Float, Int
from gpu_platform.infra.simulate.model import (
    Binding,
    ClusterModel,
    Dist,
    Job,
    NodeGroup,
    Resources,
    Timings,
    Trace,
    parse_seconds,
)

__all__ = [
    "AutoscalerModel",
    "Cost",
    "ModelSettings",
    "NodeModel",
    "Outcome",
    "PriceTable",
    "SimulationError",
    "SpotModel",
    "apply_overrides",
    "model_inputs",
    "run",
    "sweep_values",
    "trace_report",
]


class SimulationError(Exception):
    """Input the simulator cannot run, in one line per problem (``lines``)."""

    def __init__(self, lines: str | list[str]) -> None:
        self.lines = [lines] if isinstance(lines, str) else list(lines)
        super().__init__("; ".join(self.lines))


# --- the model's settings --------------------------------------------------------------------------


def _dist(value: Any) -> Any:
    return Dist.parse(value)


def _duration(value: Any) -> Any:
    return parse_seconds(value)


DistField = Annotated[Dist, BeforeValidator(_dist), PlainSerializer(str)]
"""A distribution of seconds: "90s", "uniform(60s, 120s)", "exponential(30s)", "normal(200s, 20s)", "lognormal(150s, 0.3)"."""
Duration = Annotated[Float, BeforeValidator(_duration), Field(ge=0, le=7 * 86_400)]
"""Seconds: a bare number, or a Go duration ("2m", "1.5h", "1h30m", "500ms"; components/durations.py)."""


class AutoscalerModel(BaseModel):
    """The cluster autoscaler's loop. Unset values come from the stack: EKS, its cluster-autoscaler
    settings; GKE, the upstream autoscaler's defaults (GKE does not expose them)."""

    model_config = ARGS_CONFIG

    scan_interval: Annotated[Duration, Field(gt=0, le=600)] = 10.0
    """Seconds between the autoscaler's scans (cluster-autoscaler --scan-interval default). Default: 10."""
    scale_down_unneeded_time: Duration | None = None
    """How long a node is unneeded before removal. Default: none (EKS: the stack's autoscaler.scale_down_unneeded_time; GKE BALANCED: the autoscaler's 10m; GKE OPTIMIZE_UTILIZATION: 2m, calibrated on the RAPIDS deep-dive's measured run on that profile, as GKE publishes no figure, only that the profile removes nodes sooner)."""
    scale_down_delay_after_add: Duration | None = None
    """No scale-down for this long after a scale-up. Default: none (EKS: the stack's; GKE BALANCED: the autoscaler's 10m; GKE OPTIMIZE_UTILIZATION: 2m, calibrated with the unneeded time)."""
    scale_down_utilization_threshold: Annotated[Float, Field(gt=0, le=1)] = 0.5
    """A node below this share of requested GPUs (CPU and memory on nodes without GPUs) may be removed (the autoscaler's default). Default: 0.5."""
    max_node_provision_time: Duration | None = None
    """How long a scale-up may take before the autoscaler gives up on the group. Default: none (EKS: the stack's; GKE: the autoscaler's 15m)."""
    early_abort: bool = True
    """Give up on a spot scale-up when the cloud reports no capacity instead of waiting max_node_provision_time (the autoscaler does since 1.24 on AWS when it may call DescribeScalingActivities, which the stack's autoscaler role grants; GKE reports a stock-out on the managed instance group at once). Default: true."""
    failure_report: DistField = Dist("uniform", 30.0, 90.0)
    """With early abort: from the scale-up to the cloud's report that spot capacity is short (an assumption: a failed scaling activity or instance-group error shows within a minute or two). Default: uniform(30s, 90s)."""
    initial_backoff: Duration | None = None
    """A group's back-off after a failed scale-up, doubling per failure. Default: none (EKS: the stack's; GKE: the autoscaler's 5m)."""
    max_backoff: Duration | None = None
    """The longest back-off. Default: none (EKS: the stack's; GKE: the autoscaler's 30m)."""


class NodeModel(BaseModel):
    """How long nodes and pods take. The defaults are the RAPIDS deep-dive's kubectl watch of a scale-up
    on GKE (n1-standard-4 with 2 T4, COS with image streaming, the image prepuller): the new node's
    prepull pod appears about 1.5 min after the worker went Pending, the workers leave Pending after
    5 min 14 s and run 12 s later; on warm nodes its pods wait a median of 2 s."""

    model_config = ARGS_CONFIG

    provision: DistField = Dist("uniform", 60.0, 120.0)
    """From the scale-up request to the node joining the cluster (the deep-dive: ~1.5 min). Default: uniform(1m, 2m)."""
    gpu_ready: DistField = Dist("uniform", 180.0, 240.0)
    """From joining to the GPUs being allocatable: driver installation and the device plugin (the deep-dive: ~3.5 min). Default: uniform(3m, 4m)."""
    image_pull: DistField = Dist("uniform", 180.0, 420.0)
    """Pulling the workload image without image streaming (an assumption: a ~10 GB RAPIDS image at 25-55 MB/s; the guides do not measure it). Default: uniform(3m, 7m)."""
    image_pull_streaming: DistField = Dist("uniform", 10.0, 20.0)
    """With image streaming (GKE pools with image_streaming): until the container can start (the deep-dive: 12 s from ContainerCreating to Running). Default: uniform(10s, 20s)."""
    prepuller: bool = True
    """An image prepuller DaemonSet (the deep-dive's) pulls the image as each node joins, so pods do not wait for it after the GPUs are ready. Default: true."""
    pod_start: DistField = Dist("uniform", 1.0, 3.0)
    """From binding to Running on a node that has the image (the deep-dive's median wait: 2 s). Default: uniform(1s, 3s)."""


class SpotModel(BaseModel):
    """Spot capacity: how often it is short and how often nodes are reclaimed."""

    model_config = ARGS_CONFIG

    shortage: Annotated[Float, Field(ge=0, le=1)] = 0.0
    """Probability that a spot scale-up finds no capacity. Default: 0 (spot capacity varies by region, type and hour; set it for the what-if)."""
    preemption_per_node_hour: Annotated[Float, Field(ge=0, le=10)] = 0.0
    """Reclaims per spot node-hour (a Poisson process per node). Default: 0."""
    notice: Duration | None = None
    """From the reclaim notice to the node's end. Default: none (the cloud's: GCP 30s, AWS 2m)."""


class ModelSettings(BaseModel):
    """What the simulator assumes beyond the stack: ``--set model.<key>=<value>``."""

    model_config = ARGS_CONFIG

    seed: Int = Field(default=0, ge=0)
    """The random seed of the workload and the model: the same seed, the same run. Default: 0."""
    binding: Binding | None = None
    """How the scheduler scores nodes: most-allocated or least-allocated. Default: none (GKE OPTIMIZE_UTILIZATION: most-allocated, as GKE prefers nodes with high allocation in that profile; otherwise the default scheduler's least-allocated)."""
    autoscaler: AutoscalerModel = Field(default_factory=AutoscalerModel)
    """The autoscaler's loop. Default: see AutoscalerModel."""
    node: NodeModel = Field(default_factory=NodeModel)
    """Node and pod timings. Default: see NodeModel."""
    spot: SpotModel = Field(default_factory=SpotModel)
    """Spot shortage and preemption. Default: see SpotModel."""


# --- overrides: --set and --sweep ----------------------------------------------------------------

_SEGMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)((?:\[[^\]]+\])*)$")


def parse_key(key: str) -> list[str]:
    """``gke.gpu_pools[t4].autoscaling.min_nodes`` -> [gke, gpu_pools, t4, autoscaling, min_nodes]."""
    out: list[str] = []
    for part in key.split("."):
        m = _SEGMENT.match(part)
        if not m:
            if part.isdigit() and out:
                out.append(part)
                continue
            raise SimulationError(f"{key}: not a key (dotted names, list items by [index] or [name])")
        out.append(m.group(1))
        out += re.findall(r"\[([^\]]+)\]", m.group(2))
    return out


def parse_value(text: str) -> Any:
    """A value as YAML reads it (numbers, true/false, lists, "10m" stays a string)."""
    try:
        return yaml.safe_load(text) if text.strip() else ""
    except yaml.YAMLError:
        return text


def _set_path(data: Any, path: list[str], value: Any, key: str) -> None:
    """Set ``path`` in the nested dicts/lists ``data`` (created where a mapping is missing)."""
    where = data
    for i, part in enumerate(path):
        last = i == len(path) - 1
        if isinstance(where, list):
            if part.isdigit():
                index = int(part)
                if index >= len(where):
                    raise SimulationError(f"{key}: {'.'.join(path[:i]) or 'it'} has {len(where)} items, no [{index}]")
            else:
                names = [item.get("name") for item in where if isinstance(item, dict)]
                if part not in names:
                    raise SimulationError(
                        f"{key}: no item named {part!r} in {'.'.join(path[:i])} (items: {', '.join(map(str, names)) or 'none'})"
                    )
                index = names.index(part)
            if last:
                where[index] = value
            else:
                where = where[index]
            continue
        if not isinstance(where, dict):
            raise SimulationError(f"{key}: {'.'.join(path[:i])} is a value, not a mapping")
        if last:
            where[part] = value
        else:
            if where.get(part) is None:
                where[part] = {}
            where = where[part]


def apply_overrides(stack_raw: dict[str, Any], model_raw: dict[str, Any], overrides: Sequence[tuple[str, Any]]) -> None:
    """Apply ``(key, value)`` pairs in order: ``model.<...>`` to the model's settings, anything else to
    the stack's gpu-platform config. Unknown keys fail when the result is validated, naming the key."""
    for key, value in overrides:
        path = parse_key(key)
        if path[0] == "model":
            if len(path) == 1:
                raise SimulationError(f"{key}: name a model setting, e.g. model.autoscaler.scan_interval")
            _set_path(model_raw, path[1:], value, key)
        else:
            _set_path(stack_raw, path, value, key)


def parse_assignment(text: str, flag: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise SimulationError(f"{flag} {text!r}: expected KEY=VALUE")
    return key.strip(), value


def sweep_values(text: str) -> tuple[str, list[Any]]:
    """``KEY=V1,V2,...`` -> (KEY, [values]); commas inside parentheses or brackets stay in a value."""
    key, value = parse_assignment(text, "--sweep")
    parts, depth, current = [], 0, ""
    for ch in value:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    values = [parse_value(p.strip()) for p in parts]
    if any(p.strip() == "" for p in parts):
        raise SimulationError(f"--sweep {key}: an empty value in {value!r}")
    if len(values) < 2:
        raise SimulationError(f"--sweep {key}: give at least two values (V1,V2,...); use --set for one")
    return key, values


def validate_model(raw: dict[str, Any]) -> ModelSettings:
    from gpu_platform.infra.stack.errors import format_validation_error

    try:
        return ModelSettings.model_validate(raw)
    except ValidationError as exc:
        raise SimulationError(["model." + line for line in format_validation_error(exc, ModelSettings)]) from None


# --- the stack as node groups ----------------------------------------------------------------------


@dataclass(frozen=True)
class ModelInputs:
    """What a run needs besides the workload (picklable: sweeps run it in other processes)."""

    cloud: Cloud
    region: str
    groups: tuple[NodeGroup, ...]
    timings: Timings
    binding: Binding
    quotas: dict[str, int]
    seed: int
    settings: dict[str, Any] = field(default_factory=dict)
    """The model's settings as given, for the JSON."""


def _resources(shape: Any) -> Resources:
    from gpu_platform.components.reserves import allocatable

    node = allocatable(shape)
    return Resources(cpu=node.cpu, memory=node.memory_mib, gpus=node.gpus)


def _taints(shape: Any) -> tuple[str, ...]:
    """The keys of the taints that keep pods off a pool (NoSchedule, NoExecute)."""
    from gpu_platform.components.pools import TaintEffect

    return tuple(sorted({t.key for t in shape.taints if t.effect is not TaintEffect.PREFER_NO_SCHEDULE}))


def _zone_names(names: tuple[str, ...] | None, count: int, region: str) -> tuple[str, ...]:
    """The plan's zones, or, where the cloud picks them at deploy time, ``count`` named for the model."""
    return names if names is not None else tuple(f"{region}-zone{i + 1}" for i in range(count))


def _gke_groups(gke: Any) -> list[NodeGroup]:
    """One model group per node pool of the plan (gke_plan.plan_pools): its name, bounds and zones."""
    from gpu_platform.components.pools import BoundsScope

    groups = []
    for planned in gke.plan:
        shape = planned.shape
        zones = _zone_names(planned.zones.names, planned.zones.count, gke.region)
        for i, node_pool in enumerate(planned.node_pools):
            bounds = node_pool.bounds
            groups.append(NodeGroup(
                name=node_pool.gke_name, pool=shape.name, role=shape.role.value, machine_type=shape.machine_type,
                allocatable=_resources(shape), gpus_per_node=shape.gpus_per_node, accelerator=shape.accelerator,
                spot=node_pool.spot,
                # A ComputeClass lists the spot pool first: GKE tries it before the on-demand twin.
                priority=len(planned.node_pools) - i if planned.compute_class else 0,
                zones=zones, min_nodes=bounds.min_nodes, max_nodes=bounds.max_nodes,
                per_zone=bounds.scope is BoundsScope.PER_ZONE,
                image_streaming=bool(getattr(planned.args, "image_streaming", False)), taints=_taints(shape),
            ))
    return groups


def _eks_groups(plan: Any, region: str) -> list[NodeGroup]:
    """One model group per managed node group of the stack's plan (StackConfig.eks_plan): bounds in total."""
    from gpu_platform.components.pools import CapacityType

    zones = _zone_names(plan.zones.names, plan.zones.count, region)
    return [
        NodeGroup(
            name=p.group.name, pool=p.shape.name, role=p.shape.role.value, machine_type=p.shape.machine_type,
            allocatable=_resources(p.shape), gpus_per_node=p.shape.gpus_per_node, accelerator=p.shape.accelerator,
            spot=p.group.capacity is CapacityType.SPOT, priority=p.priority, zones=zones,
            min_nodes=p.group.min_nodes, max_nodes=p.group.max_nodes, taints=_taints(p.shape),
        )
        for p in plan.node_groups
    ]


def model_inputs(stack: Any, settings: ModelSettings) -> ModelInputs:
    """The cluster model's groups, timings, binding and quotas for a StackConfig."""
    from gpu_platform.components.gke_args import AutoscalingProfile
    from gpu_platform.components.durations import seconds

    a, n, s = settings.autoscaler, settings.node, settings.spot
    # The stack's region as the program reads it; AWS's own default where the stack names none.
    region = stack.region or "us-east-1"
    if stack.cloud is Cloud.GCP:
        gke = stack.gke
        groups = _gke_groups(gke)
        optimize = gke.autoscaling_profile is AutoscalingProfile.OPTIMIZE_UTILIZATION
        # GKE runs the autoscaler itself; optimize-utilization removes nodes sooner than the upstream 10m.
        unneeded = delay = 120.0 if optimize else 600.0
        provision, backoff, max_backoff = 900.0, 300.0, 1800.0
        binding = Binding.MOST_ALLOCATED if optimize else Binding.LEAST_ALLOCATED
        notice = 30.0
    else:
        settings_eks = stack.eks_node_groups.autoscaler
        groups = _eks_groups(stack.eks_plan, region)
        unneeded = float(seconds(settings_eks.scale_down_unneeded_time))
        delay = float(seconds(settings_eks.scale_down_delay_after_add))
        provision = float(seconds(settings_eks.max_node_provision_time))
        backoff = float(seconds(settings_eks.initial_node_group_backoff_duration))
        max_backoff = float(seconds(settings_eks.max_node_group_backoff_duration))
        binding = Binding.LEAST_ALLOCATED
        notice = 120.0
    timings = Timings(
        scan_interval=a.scan_interval,
        provision=n.provision, gpu_ready=n.gpu_ready, image_pull=n.image_pull,
        image_pull_streaming=n.image_pull_streaming, prepuller=n.prepuller, pod_start=n.pod_start,
        scale_down_unneeded=a.scale_down_unneeded_time if a.scale_down_unneeded_time is not None else unneeded,
        scale_down_delay_after_add=a.scale_down_delay_after_add if a.scale_down_delay_after_add is not None else delay,
        scale_down_utilisation_threshold=a.scale_down_utilization_threshold,
        max_node_provision=a.max_node_provision_time if a.max_node_provision_time is not None else provision,
        early_abort=a.early_abort, failure_report=a.failure_report,
        initial_backoff=a.initial_backoff if a.initial_backoff is not None else backoff,
        max_backoff=a.max_backoff if a.max_backoff is not None else max_backoff,
        spot_shortage=s.shortage, preemption_per_node_hour=s.preemption_per_node_hour,
        preemption_notice=s.notice if s.notice is not None else notice,
    )
    quotas = {t.name: t.gpu_quota for t in stack.dask.tenants} if stack.dask is not None else {}
    return ModelInputs(
        cloud=stack.cloud, region=region, groups=tuple(groups), timings=timings,
        binding=settings.binding or binding, quotas=quotas, seed=settings.seed,
        settings=settings.model_dump(mode="json"),
    )


# --- prices ----------------------------------------------------------------------------------------


class HourlyPrice(BaseModel):
    """One type's price per hour, on-demand and spot."""

    model_config = ARGS_CONFIG

    on_demand: Annotated[Float, Field(ge=0)]
    """Per hour, on-demand. Required."""
    spot: Annotated[Float, Field(ge=0)] | None = None
    """Per hour, spot. Default: none (no spot price: a spot group of the type is refused)."""


class CloudPrices(BaseModel):
    """One cloud's prices in one region."""

    model_config = ARGS_CONFIG

    region: str
    """The region the prices are for. Required."""
    cluster_per_hour: Annotated[Float, Field(ge=0)] = 0.0
    """The control plane's fee per hour (GKE cluster management, EKS standard support). Default: 0."""
    machines: dict[str, HourlyPrice] = Field(default_factory=dict)
    """Per machine or instance type (on AWS the GPUs are in it). Default: {}."""
    gpus: dict[str, HourlyPrice] = Field(default_factory=dict)
    """Per attached GPU (GCP N1 machines: charged apart from the machine). Default: {}."""


class PriceTable(BaseModel):
    """Hourly prices by machine type and capacity type: infra/simulate/prices.yaml, or --prices FILE (the same shape)."""

    model_config = ARGS_CONFIG

    date: str
    """When the prices were read. Required."""
    currency: str = "USD"
    """The prices' currency. Default: USD."""
    sources: list[str] = Field(min_length=1)
    """Where they were read. Required."""
    gcp: list[CloudPrices] = Field(default_factory=list)
    """Google Cloud prices, one entry per region. Default: [] (a GKE stack is refused)."""
    aws: list[CloudPrices] = Field(default_factory=list)
    """AWS prices, one entry per region. Default: [] (an EKS stack is refused)."""

    def region(self, cloud: Cloud | str, region: str) -> CloudPrices:
        """The prices of ``cloud`` in ``region``; SimulationError naming what the table has instead."""
        tables = self.gcp if Cloud(cloud) is Cloud.GCP else self.aws
        for table in tables:
            if table.region == region:
                return table
        have = ", ".join(t.region for t in tables) or "none"
        raise SimulationError(
            f"the price table has no {cloud} prices for region {region} (it has: {have}); add them with --prices FILE"
        )

    @classmethod
    def shipped(cls) -> PriceTable:
        return cls.model_validate(yaml.safe_load((Path(__file__).parent / "prices.yaml").read_text(encoding="utf-8")))

    @classmethod
    def from_data(cls, data: Any, where: str) -> PriceTable:
        """A price table from a file's YAML (``where`` names it in messages); SimulationError, one line per problem."""
        from gpu_platform.infra.stack.errors import format_validation_error

        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise SimulationError([f"{where}: {line}" for line in format_validation_error(exc, PriceTable)]) from None

    def hourly(self, cloud: Cloud | str, region: str, group: NodeGroup) -> float:
        """USD per hour of one node of ``group`` in ``region``; SimulationError naming what is missing."""
        table = self.region(cloud, region)
        capacity = "spot" if group.spot else "on_demand"

        def pick(prices: dict[str, HourlyPrice], key: str, what: str) -> float:
            price = prices.get(key)
            value = None if price is None else getattr(price, capacity)
            if value is None:
                raise SimulationError(
                    f"the price table has no {capacity.replace('_', '-')} price for {what} {key} ({cloud} {region}); "
                    "add it with --prices FILE"
                )
            return value

        total = pick(table.machines, group.machine_type, "machine type")
        if Cloud(cloud) is Cloud.GCP and group.gpus_per_node and group.machine_type.startswith("n1-"):
            total += group.gpus_per_node * pick(table.gpus, group.accelerator or "", "GPU")
        return total


@dataclass
class CostLine:
    machine_type: str
    capacity: str
    node_hours: float
    usd_per_hour: float
    usd: float


@dataclass
class Cost:
    currency: str
    prices_date: str
    region: str
    hours: float
    lines: list[CostLine]
    cluster_usd: float
    total_usd: float
    usd_per_day: float
    gpu_hours_paid: float
    """GPU node-hours from scale-up request to removal, times their GPUs."""
    gpu_hours_used: float
    """GPU-hours held by running pods (the report's utilised)."""
    spot_share: float
    """Share of the GPU node-hours on spot capacity (0..1)."""


def cost_of(trace: Trace, inputs: ModelInputs, prices: PriceTable, used_gpu_hours: float) -> Cost:
    lines: dict[tuple[str, str], CostLine] = {}
    paid = spot = 0.0
    for node in trace.nodes:
        if node.failed:
            continue  # no capacity was given: nothing to pay
        end = node.removed if node.removed is not None else trace.horizon
        hours = max(0.0, min(end, trace.horizon) - node.requested) / 3600
        group = node.group
        capacity = "spot" if group.spot else "on-demand"
        rate = prices.hourly(inputs.cloud, inputs.region, group)
        line = lines.setdefault((group.machine_type, capacity), CostLine(group.machine_type, capacity, 0.0, rate, 0.0))
        line.node_hours += hours
        line.usd += hours * rate
        paid += hours * group.gpus_per_node
        if group.spot:
            spot += hours * group.gpus_per_node
    table = prices.region(inputs.cloud, inputs.region)
    hours = trace.horizon / 3600
    cluster = hours * table.cluster_per_hour
    total = cluster + sum(line.usd for line in lines.values())
    return Cost(
        currency=prices.currency, prices_date=prices.date, region=table.region,
        hours=hours, lines=sorted(lines.values(), key=lambda x: -x.usd), cluster_usd=cluster, total_usd=total,
        usd_per_day=total / hours * 24 if hours else 0.0, gpu_hours_paid=paid, gpu_hours_used=used_gpu_hours,
        spot_share=spot / paid if paid else 0.0,
    )


# --- the report's figures from a trace ----------------------------------------------------------------


def _steps(times: list[tuple[float, float, int]], horizon: int) -> list[float]:
    """Per 1 s step t in [0, horizon): the sum of ``value`` over (start, end, value) with start <= t < end,
    a sample at t counting an interval [start, end) as Prometheus sees it at a 1 s scrape."""
    import numpy as np

    delta = np.zeros(horizon + 1)
    for start, end, value in times:
        a, b = min(horizon, math.ceil(start)), min(horizon, math.ceil(end))
        if a < b:
            delta[a] += value
            delta[b] -= value
    return np.cumsum(delta[:horizon]).tolist()


def trace_report(trace: Trace, label: str = "simulation") -> Any:
    """The report (infra/report/prometheus.py) of a simulated run over [0, horizon) at 1 s, by the report's own rules."""
    from gpu_platform.infra.report.prometheus import figures

    horizon = math.ceil(trace.horizon)
    gpu_pods = [p for p in trace.pods if p.requests.gpus > 0]
    waits: dict[str, int] = {}
    at_end: list[str] = []
    for pod in gpu_pods:
        name = f"{pod.namespace}/{pod.name}"
        created = math.ceil(pod.created)
        if created >= horizon:
            continue
        running = horizon if pod.running is None else min(horizon, math.ceil(pod.running))
        if pod.lost and pod.running is None:
            running = min(running, math.ceil(pod.finished or horizon))
        waits[name] = max(0, running - created)
        if running >= horizon and not (pod.lost and pod.running is None):
            at_end.append(name)
    gpu_nodes = [n for n in trace.nodes if n.group.gpus_per_node > 0 and n.gpu_ready is not None]
    node_spans = [(n.gpu_ready, n.removed if n.removed is not None else horizon, n.group.gpus_per_node) for n in gpu_nodes]
    available = _steps(node_spans, horizon)
    nodes = _steps([(a, b, 1) for a, b, _ in node_spans], horizon)
    utilised = _steps(
        [(p.running, p.finished if p.finished is not None else horizon, p.requests.gpus) for p in gpu_pods if p.running is not None],
        horizon,
    )
    return figures(
        prometheus=label, times=range(0, horizon), step=1, gpu_pods=len(gpu_pods), waits=waits, carried={},
        at_end=at_end, without=[], available=available, utilised=utilised, nodes=nodes, dcgm_values=[],
    )


# --- one run ------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    """One simulated configuration: the report, the cost, failovers and admissions."""

    label: str
    overrides: dict[str, Any]
    report: Any
    cost: Cost
    trace: Trace

    @property
    def p90(self) -> int | None:
        from gpu_platform.infra.report.prometheus import nearest_rank

        waits = sorted(self.report.pending_by_pod.values())
        return nearest_rank(waits, 90) if waits else None

    def failover(self) -> dict[str, Any]:
        """Spot scale-ups that found no capacity: how long the autoscaler took to give up on each, and
        to the next scale-up of another group (the fallback; none when no other group could grow)."""
        fallbacks = self.trace.fallbacks
        gave_up = [f.gave_up - f.requested for f in fallbacks if f.gave_up > f.requested]
        done = [f.seconds for f in fallbacks if f.seconds is not None]
        return {
            "spot_scale_ups_short": len(fallbacks),
            "give_up_seconds": gave_up,
            "give_up_mean_s": sum(gave_up) / len(gave_up) if gave_up else None,
            "fallback_seconds": done,
            "fallback_mean_s": sum(done) / len(done) if done else None,
            "without_fallback": len(fallbacks) - len(done),
            "preemptions": self.trace.preemptions,
        }

    def summary(self) -> dict[str, Any]:
        """The key figures (a sweep's row): the report's, the p90 wait, the cost."""
        r = self.report
        return {
            "label": self.label,
            "overrides": self.overrides,
            "pending_median_s": r.pending_median_s,
            "pending_p90_s": self.p90,
            "pending_p99_s": r.pending_p99_s,
            "scheduled_within": r.scheduled_within,
            "utilisation_percent": r.utilisation_percent,
            "gpu_nodes_max": r.gpu_nodes_max,
            "usd_per_day": self.cost.usd_per_day,
            "total_usd": self.cost.total_usd,
            "refused_pods": self.trace.refused_pods,
            "stalled_at_s": self.trace.stalled_at, "stalled_pods": self.trace.stalled_pods,
            **{k: v for k, v in self.failover().items() if not k.endswith("_seconds")},
        }

    def json_document(self, workload: dict[str, Any], inputs: ModelInputs) -> dict[str, Any]:
        """report.json's keys plus pending_p90_s, cost, failover, admission and what was simulated."""
        out = self.report.summary()
        out["pending_p90_s"] = self.p90
        out["cost"] = asdict(self.cost)
        out["failover"] = self.failover()
        out["admission"] = {
            "jobs": self.trace.jobs, "jobs_done": self.trace.jobs_done, "gangs": self.trace.gangs,
            "refused_gangs": self.trace.refused_gangs, "refused_jobs": self.trace.refused_jobs,
            "refused_pods": self.trace.refused_pods,
            "stalled_at_s": self.trace.stalled_at, "stalled_pods": self.trace.stalled_pods,
            "stall_causes": self.trace.stall_causes,
        }
        out["simulation"] = {
            "label": self.label, "overrides": self.overrides, "workload": workload, "seed": inputs.seed,
            "binding": inputs.binding.value, "model": inputs.settings,
            "node_groups": [
                {"name": g.name, "pool": g.pool, "role": g.role, "machine_type": g.machine_type, "spot": g.spot,
                 "priority": g.priority, "min_nodes": g.min_nodes, "max_nodes": g.max_nodes,
                 "bounds": "per_zone" if g.per_zone else "total", "zones": list(g.zones),
                 "allocatable": asdict(g.allocatable)}
                for g in inputs.groups
            ],
        }
        return out


def run(
    inputs: ModelInputs, jobs: Sequence[Job], horizon: float | None, prices: PriceTable, *, label: str = "",
    overrides: dict[str, Any] | None = None, progress: Callable[[float], None] | None = None, tail: float = 0.0,
) -> Outcome:
    """Simulate ``jobs`` on the cluster of ``inputs`` for ``horizon`` seconds (None: until the work is
    done, plus ``tail``)."""
    model = ClusterModel(
        inputs.groups, timings=inputs.timings, binding=inputs.binding, seed=inputs.seed + 1, quotas=inputs.quotas,
    )
    # Price every group before running: a missing price fails in a moment, not after the run.
    for group in inputs.groups:
        prices.hourly(inputs.cloud, inputs.region, group)
    model.add_jobs(jobs)
    trace = model.run(horizon, progress=progress, tail=tail)
    report = trace_report(trace, label or "simulation")
    cost = cost_of(trace, inputs, prices, report.gpu_hours_utilised)
    return Outcome(label, dict(overrides or {}), report, cost, trace)


def combinations(sweeps: Sequence[tuple[str, list[Any]]]) -> list[list[tuple[str, Any]]]:
    """Every combination of the swept values, in order (the first key varies slowest)."""
    keys = [k for k, _ in sweeps]
    return [list(zip(keys, values)) for values in itertools.product(*(v for _, v in sweeps))] if sweeps else [[]]


def label_of(pairs: Sequence[tuple[str, Any]]) -> str:
    return " ".join(f"{k}={json.dumps(v) if not isinstance(v, str) else v}" for k, v in pairs) or "as configured"


# --- configurations: the stack, --set and --sweep -----------------------------------------------


@dataclass(frozen=True)
class Configuration:
    label: str
    overrides: dict[str, Any]
    stack: Any
    inputs: ModelInputs


def configurations(
    project_dir: Path, stack_name: str, sets: Sequence[tuple[str, Any]], sweeps: Sequence[tuple[str, list[Any]]],
    max_configs: int,
) -> list[Configuration]:
    """Every configuration to simulate, each validated as the deployment validates its stack: one line per
    problem (the key named) before anything runs."""
    import copy

    from gpu_platform.infra.stack.errors import ConfigError
    from gpu_platform.infra.preview.engine import PROJECT
    from gpu_platform.infra.stack.read import read_stack_file, stack_config_from

    combos = combinations(sweeps)
    if len(combos) > max_configs:
        sizes = " x ".join(str(len(v)) for _, v in sweeps)
        raise SimulationError(
            f"--sweep: {sizes} = {len(combos)} configurations, more than --max-configs {max_configs}; "
            "sweep fewer values or raise --max-configs"
        )
    raw, secret_keys = read_stack_file(project_dir, stack_name)
    prefix = f"{PROJECT}:"
    stack_base = {k[len(prefix):]: v for k, v in raw.items() if k.startswith(prefix)}
    others = {k: v for k, v in raw.items() if not k.startswith(prefix)}
    out: list[Configuration] = []
    problems: list[str] = []
    for combo in combos:
        stack_raw, model_raw = copy.deepcopy(stack_base), {}
        pairs = [*sets, *combo]
        apply_overrides(stack_raw, model_raw, pairs)
        config = {**others, **{prefix + k: v for k, v in stack_raw.items()}}
        try:
            stack = stack_config_from(config, secret_keys, stack_name)
            settings = validate_model(model_raw)
        except (ConfigError, SimulationError) as exc:
            lines = list(getattr(exc, "lines", None) or [str(exc)])
            where = f" (with {label_of(combo)})" if combo else ""
            problems += [line + where for line in lines if line + where not in problems]
            continue
        out.append(Configuration(label_of(combo), dict(combo), stack, model_inputs(stack, settings)))
    if problems:
        raise SimulationError(problems)
    return out


@dataclass(frozen=True)
class Work:
    """One configuration to run (picklable: a sweep sends it to another process)."""

    inputs: ModelInputs
    jobs: list[Job]
    horizon: float | None
    """Seconds to simulate; None: until the work is done, plus ``tail``."""
    tail: float
    prices: PriceTable
    label: str
    overrides: dict[str, Any]


def _run_one(work: Work, progress: Callable[[float], None] | None = None) -> Outcome:
    return run(work.inputs, work.jobs, work.horizon, work.prices, label=work.label, overrides=work.overrides,
               progress=progress, tail=work.tail)


def run_all(
    work: list[Work], processes: int, done: Callable[[Outcome], None] = lambda _: None,
    simulated: Callable[[float], None] | None = None,
) -> list[Outcome]:
    """Run configurations, in parallel processes when there are several (results in the given order).
    ``simulated`` is told the simulated seconds reached, every simulated hour, when one configuration
    runs in this process."""
    if len(work) == 1 or processes <= 1:
        results = []
        for item in work:
            results.append(_run_one(item, simulated if len(work) == 1 else None))
            done(results[-1])
        return results
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    with ProcessPoolExecutor(max_workers=min(processes, len(work)), mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {pool.submit(_run_one, item): i for i, item in enumerate(work)}
        results_by_index: dict[int, Outcome] = {}
        for future in as_completed(futures):
            outcome = future.result()
            results_by_index[futures[future]] = outcome
            done(outcome)
    return [results_by_index[i] for i in range(len(work))]


def cheapest_meeting(outcomes: Sequence[Outcome], target_p90: float) -> Outcome | None:
    """The cheapest configuration whose p90 wait is at most ``target_p90`` seconds (None if none is)."""
    meeting = [o for o in outcomes if o.p90 is not None and o.p90 <= target_p90]
    return min(meeting, key=lambda o: (o.cost.usd_per_day, -o.report.utilisation_percent)) if meeting else None


def sweep_plot(outcomes: Sequence[Outcome], chosen: Outcome | None, target_p90: float | None) -> bytes:
    """The trade-off: p90 wait against GPU utilisation, the marker's area the cost per day."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from gpu_platform.infra.report.prometheus import png

    fig, ax = plt.subplots(figsize=(10, 6))
    costs = [o.cost.usd_per_day for o in outcomes]
    top = max(costs) or 1.0
    for o in outcomes:
        size = 60 + 900 * o.cost.usd_per_day / top
        color = "#228833" if o is chosen else "#4477aa"
        ax.scatter(o.report.utilisation_percent, o.p90 or 0, s=size, alpha=0.6, color=color, edgecolors="black", linewidths=0.5)
        ax.annotate(f"{o.label}\n${o.cost.usd_per_day:,.0f}/day", (o.report.utilisation_percent, o.p90 or 0),
                    fontsize=7, xytext=(6, 4), textcoords="offset points")
    if target_p90 is not None:
        ax.axhline(target_p90, color="#aa3377", linestyle=":", linewidth=1, label=f"target p90 {target_p90:g} s")
        ax.legend(loc="upper left")
    ax.set_xlabel("GPU utilisation, % (GPUs held by running pods / GPUs available)")
    ax.set_ylabel("p90 pending time, s")
    ax.set_title("Wait against utilisation; marker area: cost per day")
    return png(fig)


def table_rows(outcome: Outcome) -> list[tuple[str, str]]:
    """The report's rows plus the p90 wait, the cost, failovers and admissions."""
    from gpu_platform.infra.report.prometheus import table_rows as report_rows

    rows = [row for row in report_rows(outcome.report) if not row[0].startswith(("range", "carried", "without", "DCGM"))]
    trace = outcome.trace
    rows.insert(0, ("simulated", f"{trace.horizon / 3600:.2f} h: {trace.jobs} jobs ({trace.jobs_done} done), "
                                 f"{trace.gangs} Dask clusters or steps"))
    rows.append(("pending p90", "-" if outcome.p90 is None else f"{outcome.p90} s"))
    cost = outcome.cost
    for line in cost.lines:
        rows.append((f"cost {line.machine_type} {line.capacity}",
                     f"{line.node_hours:.1f} node-h x ${line.usd_per_hour:.4f} = ${line.usd:,.2f}"))
    rows.append(("cost control plane", f"${cost.cluster_usd:,.2f}"))
    rows.append(("cost total / per day", f"${cost.total_usd:,.2f} / ${cost.usd_per_day:,.2f} ({cost.region}, prices of {cost.prices_date})"))
    rows.append(("GPU-hours paid / used", f"{cost.gpu_hours_paid:.1f} / {cost.gpu_hours_used:.1f}"))
    rows.append(("spot share of GPU node-hours", f"{100 * cost.spot_share:.1f}%"))
    failover = outcome.failover()
    mean = failover["fallback_mean_s"]
    give_up = failover["give_up_mean_s"]
    rows.append(("spot scale-ups short / gave up after (mean)",
                 f"{failover['spot_scale_ups_short']} / {'-' if give_up is None else f'{give_up:.0f} s'}"))
    rows.append(("fallback to another group after (mean)",
                 f"{'-' if mean is None else f'{mean:.0f} s'} ({failover['without_fallback']} with no group left to grow)"))
    rows.append(("spot preemptions", str(failover["preemptions"])))
    if trace.stalled_at is not None:
        rows.append(("STALLED", f"at {trace.stalled_at / 3600:.2f} h: {trace.stalled_pods} pods no node can ever take"))
    rows.append(("refused at admission (quota)",
                 f"{outcome.trace.refused_pods} pods of {outcome.trace.refused_gangs} Dask clusters or steps"))
    return rows


SWEEP_COLUMNS = ("configuration", "median s", "p90 s", "<=5s", "<=60s", "util %", "nodes max", "$/day")


def sweep_row(o: Outcome) -> tuple[str, ...]:
    r = o.report
    within = r.scheduled_within or {}
    return (
        o.label, "-" if r.pending_median_s is None else f"{r.pending_median_s:g}", "-" if o.p90 is None else str(o.p90),
        f"{100 * within.get('5s', 0):.0f}%", f"{100 * within.get('60s', 0):.0f}%", f"{r.utilisation_percent:.1f}",
        str(r.gpu_nodes_max), f"{o.cost.usd_per_day:,.0f}",
    )
