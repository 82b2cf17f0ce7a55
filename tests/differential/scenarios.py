"""The differential scenarios: one pod stream, node groups and autoscaler settings per scenario, given
alike to the real cluster autoscaler (regenerate.py) and to the simulator (``simulate``, below).

Times here are in SCALED seconds: the real-time settings (``REAL``) times ``TIME_FACTOR``, on both
sides. Two upstream constants cannot be scaled, because they are compiled into the autoscaler: the
2 s wait for new pods and the 30 s wait for new GPU pods (core/static_autoscaler.go:67-71). The
simulator's own constants (infra/simulate/model.py NEW_POD_BUFFER, NEW_GPU_POD_BUFFER) are the same
absolute seconds, so both sides run with the same unscaled 2 s and 30 s inside scaled time: the
comparison is like for like, though in real-time terms it is a 300 s GPU wait, not a 30 s one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpu_platform.infra.simulate.distributions import Dist, fixed
from gpu_platform.infra.simulate.inputs import Binding, Job, NodeGroup, PodSpec, Resources, Stage, Timings, Trace
from gpu_platform.infra.simulate.model import ClusterModel

TIME_FACTOR = 0.1
"""Every duration setting on both sides is its real-time value times this."""

REAL = {
    "scan_interval": 10.0,
    "node_ready": 120.0,
    "scale_down_unneeded": 300.0,
    "scale_down_delay_after_add": 300.0,
    "max_node_provision": 900.0,
    "unremovable_recheck": 300.0,
    "initial_backoff": 300.0,
    "max_backoff": 1800.0,
}
"""The real-time settings (seconds) every scenario uses unless it says otherwise."""


@dataclass(frozen=True)
class Group:
    """A node group: its nodes' allocatable and bounds; ``refused``: the cloud has no capacity for it and says so
    at once (every scale-up of it fails when asked: see regenerate.py ``refuse``)."""

    name: str
    cpu: int
    """Millicores."""
    memory: int
    """MiB."""
    gpus: int
    max_nodes: int
    min_nodes: int = 0
    priority: int = 0
    refused: bool = False


@dataclass(frozen=True)
class Pod:
    at: float
    """Scaled seconds from the start: when it is created."""
    run: float
    """Scaled seconds it runs once Running; then it is deleted."""
    gpus: int = 1
    cpu: int = 1000
    memory: int = 1024


@dataclass(frozen=True)
class Scenario:
    name: str
    what: str
    groups: tuple[Group, ...]
    pods: tuple[Pod, ...]
    horizon: float
    """Scaled seconds the run lasts (every pod done and the scale-down seen)."""
    expander: str = "least-waste"
    settings: dict[str, float] = field(default_factory=dict)
    """Real-time overrides of REAL."""

    def scaled(self, key: str) -> float:
        return {**REAL, **self.settings}[key] * TIME_FACTOR


def _every(start: float, step: float, count: int, run: float, **kw: int) -> tuple[Pod, ...]:
    return tuple(Pod(start + i * step, run, **kw) for i in range(count))


SCENARIOS = (
    Scenario(
        "steady",
        "one GPU pod every 4 s for 80 s, each running 42 s, on a group of 1-GPU nodes (one warm); a pod ends "
        "2 s after a pod is created, never with it (which comes first would be decided by the harness's lag)",
        (Group("gpu", 4000, 16384, 1, max_nodes=12, min_nodes=1),),
        _every(2.0, 4.0, 20, 42.0),
        horizon=180.0,
    ),
    Scenario(
        "burst",
        "12 GPU pods at once on an empty group of 1-GPU nodes, each running 30 s",
        (Group("gpu", 4000, 16384, 1, max_nodes=16),),
        _every(2.0, 0.0, 12, 30.0),
        horizon=150.0,
    ),
    Scenario(
        "scale-down",
        "2 GPU pods at once on one 2-GPU node, ending 15 s apart (the half-empty node is found unremovable and "
        "rechecked only after unremovable_recheck), then 1 more pod after the node is gone",
        (Group("gpu", 4000, 16384, 2, max_nodes=1),),
        (Pod(2.0, 20.0), Pod(2.0, 35.0), Pod(150.0, 10.0)),
        horizon=240.0,
    ),
    Scenario(
        "priority",
        "6 GPU pods at once, two groups of one shape: the priority expander picks the higher tier",
        (Group("low", 4000, 16384, 1, max_nodes=8, priority=10), Group("high", 4000, 16384, 1, max_nodes=4, priority=20)),
        _every(2.0, 0.0, 6, 30.0),
        horizon=150.0,
        expander="priority,least-waste",
    ),
    Scenario(
        "least-waste",
        "4 pods of 3 CPUs and 12 GiB with one GPU: least-waste picks the 4-CPU shape over the 16-CPU one",
        (Group("big", 16000, 65536, 1, max_nodes=8), Group("small", 4000, 16384, 1, max_nodes=8)),
        tuple(Pod(2.0, 30.0, cpu=3000, memory=12288) for _ in range(4)),
        horizon=150.0,
    ),
    Scenario(
        "spot-shortage-early-abort",
        "4 GPU pods at once; a spot group above its on-demand twin (priority expander) whose every scale-up the cloud "
        "refuses at once: the autoscaler backs the spot group off and the next loop falls back to on-demand",
        (Group("spot", 4000, 16384, 1, max_nodes=4, priority=20, refused=True), Group("ondemand", 4000, 16384, 1, max_nodes=4, priority=10)),
        _every(2.0, 0.0, 4, 30.0),
        horizon=150.0,
        expander="priority,least-waste",
    ),
)


def groups_of(scenario: Scenario) -> list[NodeGroup]:
    return [
        NodeGroup(
            g.name,
            g.name,
            "gpu",
            g.name,
            Resources(g.cpu, g.memory, g.gpus),
            g.gpus,
            accelerator="t4" if g.gpus else None,
            spot=g.refused,
            priority=g.priority,
            min_nodes=g.min_nodes,
            max_nodes=g.max_nodes,
        )
        for g in scenario.groups
    ]


def timings_of(scenario: Scenario, ready: tuple[float, float] | None = None) -> Timings:
    """The simulator's settings for the scenario: the same scaled values the real autoscaler gets; a node
    registers at the scale-up (kwok's provider creates the Node object then, with its GPUs and a taint, so
    the pods its registration requeues fail on it) and is usable ``node_ready`` later (kwok makes it Ready,
    the harness lifts the taint); no image pull, no
    container start (kwok runs no container); a refused group is a spot group that always finds no
    capacity, reported at once (early abort with no report delay: the real side's IncreaseSize fails
    when asked). ``ready``: the (shortest, longest)
    creation-to-usable time the real run measured, instead of exactly node_ready."""
    s = scenario.scaled
    return Timings(
        scan_interval=s("scan_interval"),
        provision=fixed(0.0),
        gpu_ready=Dist("uniform", *ready) if ready else fixed(s("node_ready")),
        image_pull=fixed(0.0),
        image_pull_streaming=fixed(0.0),
        prepuller=True,
        pod_start=fixed(0.0),
        scale_down_unneeded=s("scale_down_unneeded"),
        scale_down_delay_after_add=s("scale_down_delay_after_add"),
        unremovable_recheck=s("unremovable_recheck"),
        max_node_provision=s("max_node_provision"),
        initial_backoff=s("initial_backoff"),
        max_backoff=s("max_backoff"),
        spot_shortage=1.0 if any(g.refused for g in scenario.groups) else 0.0,
        early_abort=any(g.refused for g in scenario.groups),
        failure_report=fixed(0.0),
    )


def jobs_of(scenario: Scenario) -> list[Job]:
    return [Job(p.at, "diff", f"pod-{i:03d}", (Stage.of((PodSpec("pod", Resources(p.cpu, p.memory, p.gpus)),), p.run),)) for i, p in enumerate(scenario.pods)]


def simulate(scenario: Scenario, seed: int = 0, ready: tuple[float, float] | None = None) -> Trace:
    """The simulator on the scenario, through its model's own entry points (ClusterModel, add_jobs, run)."""
    model = ClusterModel(groups_of(scenario), timings=timings_of(scenario, ready), binding=Binding.LEAST_ALLOCATED, seed=seed)
    model.add_jobs(jobs_of(scenario))
    return model.run(scenario.horizon)


def figures(waits: list[float], nodes: list[tuple[float, float | None]], horizon: float, binds: list[float] | None = None) -> dict[str, object]:
    """The compared figures from per-pod waits (creation to scheduled), nodes (added, removed or None) and when
    each pod was scheduled (``binds``)."""
    ordered = sorted(waits)
    added = sorted(a for a, _ in nodes)
    removed = sorted(r for _, r in nodes if r is not None)
    peak, events = 0, sorted([(a, 1) for a, _ in nodes] + [(r, -1) for _, r in nodes if r is not None])
    count = 0
    for _, d in events:
        count += d
        peak = max(peak, count)
    return {
        "waits": [round(w, 2) for w in ordered],
        "median_wait": round(ordered[len(ordered) // 2], 2) if ordered else None,
        "mean_wait": round(sum(ordered) / len(ordered), 2) if ordered else None,
        "binds": [round(b, 2) for b in sorted(binds or [])],
        "max_wait": round(ordered[-1], 2) if ordered else None,
        "peak_nodes": peak,
        "nodes_added": len(added),
        "scale_up_times": [round(a, 2) for a in added],
        "scale_down_times": [round(r, 2) for r in removed],
        "nodes_at_end": sum(1 for _, r in nodes if r is None or r > horizon),
    }


def simulated_figures(scenario: Scenario, seed: int = 0, ready: tuple[float, float] | None = None) -> dict[str, object]:
    trace = simulate(scenario, seed, ready)
    waits = [p.bound - p.created for p in trace.pods if p.bound is not None]
    binds = [p.bound for p in trace.pods if p.bound is not None]
    # Nodes that got no capacity never existed as Node objects (the real side's refused creations): not counted.
    made = [n for n in trace.nodes if not n.failed]
    nodes = [(n.requested, n.removed) for n in made]
    out = figures(waits, nodes, scenario.horizon, binds)
    out["groups"] = {g.name: sum(1 for n in made if n.group.name == g.name) for g in scenario.groups}
    return out
