"""The simulator's own settings (ModelSettings: the autoscaler's, the nodes' and spot's timings, each a
distribution with its default and source) and the `--set`/`--sweep` overrides of stack and model keys."""

from __future__ import annotations

import datetime
import re
from collections.abc import Sequence
from typing import Annotated, Any

import yaml
from pydantic import BaseModel, BeforeValidator, Field, PlainSerializer, ValidationError, field_validator

from gpu_platform.components.core.models import ARGS_CONFIG
from gpu_platform.components.core.numbers import Float, Int
from gpu_platform.infra.simulate.distributions import Dist, parse_seconds
from gpu_platform.infra.simulate.inputs import Binding

__all__ = [
    "AutoscalerModel",
    "KarpenterModel",
    "ModelSettings",
    "NodeModel",
    "ReservationModel",
    "SimulationError",
    "SpotModel",
    "apply_overrides",
    "parse_assignment",
    "parse_value",
    "sweep_values",
    "validate_model",
]


class SimulationError(Exception):
    """Input the simulator cannot run, in one line per problem (``lines``)."""

    def __init__(self, lines: str | list[str]) -> None:
        self.lines = [lines] if isinstance(lines, str) else list(lines)
        super().__init__("; ".join(self.lines))


def _dist(value: Any) -> Any:
    return Dist.parse(value)


def _duration(value: Any) -> Any:
    return parse_seconds(value)


DistField = Annotated[Dist, BeforeValidator(_dist), PlainSerializer(str)]
"""A distribution of seconds: "90s", "uniform(60s, 120s)", "exponential(30s)", "normal(200s, 20s)", "lognormal(150s, 0.3)"."""


Duration = Annotated[Float, BeforeValidator(_duration), Field(ge=0, le=7 * 86_400)]
"""Seconds: a bare number, or a Go duration ("2m", "1.5h", "1h30m", "500ms"; components/core/durations.py)."""


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
    """A node without GPUs whose CPU and memory requests are both at or below this share of its allocatable is a scale-down candidate (--scale-down-utilization-threshold; a candidate running pods the autoscaler may not evict is rechecked only after unremovable_node_recheck_timeout). Default: 0.5."""
    scale_down_gpu_utilization_threshold: Annotated[Float, Field(gt=0, le=1)] = 0.5
    """A GPU node whose GPU requests are at or below this share of its GPUs is a scale-down candidate (--scale-down-gpu-utilization-threshold; CPU and memory are not counted on GPU nodes). Default: 0.5."""
    unremovable_node_recheck_timeout: Duration = 300.0
    """A candidate node that could not be removed (its pods belong to custom controllers, which the autoscaler never evicts) is not checked again for this long (--unremovable-node-recheck-timeout). Default: 300 (5m)."""
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
    backoff_reset_timeout: Duration = 10_800.0
    """A group's back-off is forgotten this long after its last failed scale-up; until then every failure that finds the group no longer backed off doubles it (--node-group-backoff-reset-timeout). Default: 10800 (3h)."""


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


class ReservationModel(BaseModel):
    """Reserved capacity: how many instances a capacity ladder's reservation rung holds (GKE pools, EKS classes)."""

    model_config = ARGS_CONFIG

    instances: Int | None = Field(default=None, ge=0, le=100_000)
    """The instances each reservation rung's reservation holds, in total over its zones: billed at the on-demand rate for the whole run whether nodes use them or not; a named reservation gives no node beyond them. A capacity block is not one: it holds its node group's maximum. Default: none (the rung's node pool's minimum in total, the nodes GKE keeps running on it: min_nodes x zones for per-zone bounds; on EKS its managed node group's min_nodes, none on a later rung, which keeps no minimum)."""


class KarpenterModel(BaseModel):
    """Karpenter's controller settings the stack does not set, and when the run starts (Karpenter stacks only).

    A Karpenter stack is one with eks_node_groups.provisioner karpenter; its NodePools' limits, weights,
    consolidation and budgets come from the stack."""

    model_config = ARGS_CONFIG

    batch_idle_duration: Annotated[Duration, Field(gt=0, le=600)] = 1.0
    """A batch of pending pods closes this long after its last new pod (Karpenter's --batch-idle-duration, BATCH_IDLE_DURATION; kubernetes-sigs/karpenter v1.14.1 pkg/operator/options/options.go:130). Default: 1 (1s)."""
    batch_max_duration: Annotated[Duration, Field(gt=0, le=600)] = 10.0
    """A batch closes this long after its first pod at the latest (--batch-max-duration, BATCH_MAX_DURATION; options.go:129). Default: 10 (10s)."""
    start: datetime.datetime = datetime.datetime(2026, 1, 5, 9, 0, tzinfo=datetime.UTC)
    """The wall-clock time (UTC, ISO 8601) of the run's start, against which the NodePools' disruption budget schedules are read (a budget "0" from "0 8 * * mon-fri" for 10h blocks consolidation through a working day). Default: 2026-01-05T09:00:00Z (a Monday, 09:00)."""

    @field_validator("start")
    @classmethod
    def _utc(cls, value: datetime.datetime) -> datetime.datetime:
        return value.replace(tzinfo=datetime.UTC) if value.tzinfo is None else value.astimezone(datetime.UTC)


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
    reservation: ReservationModel = Field(default_factory=ReservationModel)
    """Reserved capacity of capacity ladders' reservation rungs (GKE, EKS). Default: see ReservationModel."""
    karpenter: KarpenterModel = Field(default_factory=KarpenterModel)
    """Karpenter's batching and the run's wall-clock start (Karpenter stacks only). Default: see KarpenterModel."""


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


class _Loader(yaml.SafeLoader):
    """YAML without its timestamp type: a time (model.karpenter.start=2026-01-05T19:00:00Z) stays the text it was,
    which the settings' own fields read, and which a sweep's label and JSON print as given."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, pattern) for tag, pattern in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def parse_value(text: str) -> Any:
    """A value as YAML reads it (numbers, true/false, null, lists; "10m" and times stay strings)."""
    try:
        return yaml.load(text, Loader=_Loader) if text.strip() else ""
    except yaml.YAMLError:
        return text


def _set_path(data: Any, path: list[str], value: Any, key: str) -> None:
    """Set ``path`` in the nested dicts/lists ``data`` (created where a mapping is missing). ``value`` None (YAML
    ``null`` or ``~``) removes the key, or the list item, as if the stack had never set it: a section is off, a
    setting takes its default; removing what is not there changes nothing."""
    where = data
    for i, part in enumerate(path):
        last = i == len(path) - 1
        if value is None and not isinstance(where, (dict, list)):
            raise SimulationError(f"{key}: {'.'.join(path[:i])} is a value, not a mapping")
        if value is None and isinstance(where, dict) and where.get(part) is None and not last:
            return  # nothing to remove below a key that is not set
        if isinstance(where, list):
            if part.isdigit():
                index = int(part)
                if index >= len(where):
                    raise SimulationError(f"{key}: {'.'.join(path[:i]) or 'it'} has {len(where)} items, no [{index}]")
            else:
                names = [item.get("name") for item in where if isinstance(item, dict)]
                if part not in names:
                    raise SimulationError(f"{key}: no item named {part!r} in {'.'.join(path[:i])} (items: {', '.join(map(str, names)) or 'none'})")
                index = names.index(part)
            if last and value is None:
                del where[index]
            elif last:
                where[index] = value
            else:
                where = where[index]
            continue
        if not isinstance(where, dict):
            raise SimulationError(f"{key}: {'.'.join(path[:i])} is a value, not a mapping")
        if last and value is None:
            where.pop(part, None)
        elif last:
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
