"""Warm capacity in the cluster model (infra/simulate/warm.py): placeholder pods hold GPUs, a pod that
fits no node preempts one and starts at once, the evicted placeholder goes pending and the autoscaler
scales up for it; warm nodes are paid. Warm capacity is one of the settings `simulate --target-p90` searches
(infra/simulate/search.py, tests/infra/test_simulate_search.py)."""

from __future__ import annotations

import pytest

from gpu_platform.infra.simulate.distributions import fixed
from gpu_platform.infra.simulate.inputs import PodSpec, Resources, Timings, Trace
from gpu_platform.infra.simulate.model import ClusterModel
from gpu_platform.infra.simulate.runs import unsettable
from tests.infra.test_simulation import group, job

STARTUP = Timings(provision=fixed(90), gpu_ready=fixed(210), pod_start=fixed(2), scale_down_unneeded=600, scale_down_delay_after_add=600)
POD = PodSpec("worker", Resources(cpu=1000, memory=4000, gpus=1))


def _run(warm: dict[str, int] | None, arrivals: tuple[float, ...] = (600.0,), hi: int = 4, until: float = 4 * 3600) -> tuple[ClusterModel, Trace]:
    model = ClusterModel([group("gpu", gpus=1, lo=0, hi=hi)], timings=STARTUP, warm=warm)
    model.add_jobs([job(at, 1200, (POD,), name=f"j{i}") for i, at in enumerate(arrivals)])
    return model, model.run(until=until)


def test_a_pod_that_finds_no_free_gpu_preempts_a_placeholder_and_starts_at_once() -> None:
    """One warm GPU: the run starts with a node holding a placeholder; the pod at 600 s preempts it and runs
    2 s later (its start), where without warm capacity it waits for a new node (30 s + 90 s + 210 s)."""
    model, trace = _run({"gpu": 1})
    pod = trace.pods[0]
    assert trace.placeholders_preempted == 1
    assert pod.running - pod.created == pytest.approx(2.0)
    _, cold = _run(None)
    assert cold.pods[0].running - cold.pods[0].created >= 330
    # Placeholders are not the workload's pods: never counted as waiting or utilising.
    assert all(not p.name.startswith("warm-") for p in trace.pods)


def test_the_evicted_placeholder_goes_pending_and_the_autoscaler_scales_up_for_it() -> None:
    """Above the expendable cutoff, each replaced placeholder makes the autoscaler add a node (after its
    30 s wait for new GPU pods), so the next pod finds a warm GPU again."""
    _, trace = _run({"gpu": 1}, arrivals=(600.0, 1500.0))
    assert [n.requested for n in trace.nodes if n.requested > 0] == [630.0, 1530.0]
    assert trace.placeholders_preempted == 2
    assert [round(p.running - p.created) for p in trace.pods] == [2, 2]


def test_warm_nodes_are_paid_from_the_start() -> None:
    """Two warm GPUs on one-GPU nodes with no minimum: two nodes up (and paid) from the start."""
    _, trace = _run({"gpu": 2}, arrivals=())
    assert [(n.requested, n.gpu_ready, n.removed) for n in trace.nodes] == [(0.0, 0.0, None), (0.0, 0.0, None)]


def test_placeholders_never_outrank_a_pod() -> None:
    """A pool at its maximum: the pod takes the placeholder's GPU, and the replaced placeholder stays pending
    (it never preempts back); the run is not a stall for it."""
    model, trace = _run({"gpu": 1}, hi=1, until=1200)
    assert trace.pods[0].running == 602.0 and trace.stalled_at is None
    assert [p.placeholder for p in model.pending] == [True]
    model.run(until=4 * 3600)
    assert trace.jobs_done == 1 and not model.pending  # the pod done, the placeholder takes its GPU back


def test_no_warm_capacity_is_the_model_unchanged() -> None:
    """warm {} or all zeros: no placeholder, the same run as without the argument."""
    _, a = _run(None, arrivals=(10.0, 700.0))
    _, b = _run({"gpu": 0}, arrivals=(10.0, 700.0))
    assert [(p.created, p.running) for p in a.pods] == [(p.created, p.running) for p in b.pods]
    assert len(a.nodes) == len(b.nodes)


@pytest.mark.parametrize("cloud", ["gcp", "aws"])
def test_warm_capacity_is_a_setting_both_clouds_let_a_user_set(cloud: str) -> None:
    from gpu_platform.components.core.cloud import Cloud

    assert unsettable(Cloud(cloud), "warm_capacity.pools.t4") is None


def test_a_stall_names_the_workloads_pods_not_the_placeholders() -> None:
    """A pod no node can ever take stalls the run; the placeholders (pending or placed) are neither counted
    nor named among its causes."""
    model = ClusterModel([group("gpu", gpus=1, lo=0, hi=1)], timings=STARTUP, warm={"gpu": 2})
    model.add_jobs([job(60.0, 600, (PodSpec("worker", Resources(cpu=1000, memory=4000, gpus=2)),))])
    trace = model.run()
    assert trace.stalled_at is not None and trace.stalled_pods == 1
    assert len(trace.stall_causes) == 1 and "placeholder" not in trace.stall_causes[0] and "warm-" not in trace.stall_causes[0]
