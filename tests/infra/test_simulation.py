"""The cluster model of `gpu-platform simulate` (infra/simulation.py), checked against queueing
theory and the autoscaler's documented failover timings."""

from __future__ import annotations

import math
import statistics

import pytest

from gpu_platform.infra.simulation import ClusterModel, Pod, PoolSpec, Timings


def erlang_c_mean_wait(servers: int, arrival_rate: float, service_rate: float) -> float:
    """Mean wait in queue of an M/M/c queue (Erlang C)."""
    load = arrival_rate / service_rate
    rho = load / servers
    below = sum(load**k / math.factorial(k) for k in range(servers))
    top = load**servers / math.factorial(servers) / (1 - rho)
    return top / (below + top) / (servers * service_rate - arrival_rate)


@pytest.mark.parametrize(("servers", "rho"), [(4, 0.75), (8, 0.8)])
def test_a_fixed_pool_with_poisson_arrivals_waits_as_erlang_c(servers: int, rho: float) -> None:
    """100,000 one-GPU pods, exponential run times (mean 60 s), on a pool of ``servers`` one-GPU
    nodes that never scales: the mean wait is Erlang C's within 5%."""
    mu = 1 / 60
    lam = rho * servers * mu
    model = ClusterModel([PoolSpec("gpu", 1, servers, servers)], autoscale=False, seed=7)
    model.poisson_arrivals(lam, 100_000, lambda r: r.expovariate(mu))
    result = model.run()
    expected = erlang_c_mean_wait(servers, lam, mu)
    assert statistics.fmean(result.waits) == pytest.approx(expected, rel=0.05)
    assert result.utilisation == pytest.approx(rho, abs=0.02)


@pytest.mark.parametrize(("early_abort", "gives_up_after"), [(False, 900.0), (True, 60.0)])
def test_with_spot_always_short_a_pod_waits_for_its_on_demand_node(early_abort: bool, gives_up_after: float) -> None:
    """Spot capacity is never there: without early abort the autoscaler gives up on the spot group
    after max_node_provision_time, with it after the cloud's failure report; then it grows the
    on-demand twin, whose node takes the usual start-up."""
    t = Timings()
    pools = [PoolSpec("t4-spot", 1, 0, 4, spot=True, priority=2, spot_shortage=1.0), PoolSpec("t4-on-demand", 1, 0, 4, priority=1)]
    model = ClusterModel(pools, timings=t, early_abort=early_abort)
    model.submit(Pod(gpus=1, run_time=60, arrived=0))
    result = model.run(until=3600)
    (wait,) = result.waits
    startup = t.node_provision + t.gpu_ready + t.image_pull
    assert model.fallbacks == [gives_up_after]
    # The first scan sees the pod, the next after the give-up picks the on-demand group.
    assert gives_up_after + startup + t.scan_interval <= wait <= gives_up_after + startup + 2 * t.scan_interval
