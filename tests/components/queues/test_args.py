"""KueueArgs and the tenants' queue settings (components/queues/args.py): the documented defaults and the
validators of the Args themselves."""

from __future__ import annotations

from gpu_platform.components import KueueArgs
from gpu_platform.components.queues.args import ReclaimWithinCohort, WithinClusterQueue
from gpu_platform.infra.stack.model import StackConfig
from tests.components.queues.test_kueue import _refusal
from tests.factories import prod_eks_raw


def test_fails_when_a_fair_sharing_weight_is_zero() -> None:
    assert _refusal({"tenants": [{"name": "research", "weight": 0}]}) == [
        "gpu-platform:queues.tenants[0].weight: Input should be greater than 0 (got 0)",
    ]


def test_fails_when_a_tenant_is_listed_twice() -> None:
    lines = _refusal({"tenants": [{"name": "research"}, {"name": "research"}]})
    assert lines == ['gpu-platform:queues.tenants: tenants lists a tenant twice (research, research) (got [{"name": "research"}, {"name": "research"}])']


def test_fails_when_a_gpu_count_is_negative() -> None:
    (line,) = _refusal({"tenants": [{"name": "research", "gpus": {"nvidia-tesla-v100": -1}}]})
    assert line.startswith("gpu-platform:queues.tenants[0].gpus: gpus nvidia-tesla-v100: -1 is negative")


def test_kueue_defaults() -> None:
    args = KueueArgs()
    assert (args.namespace, args.chart_version, args.cohort, args.oversubscription) == ("kueue-system", "0.19.2", "gpu-platform", False)
    assert args.reclaim_within_cohort is ReclaimWithinCohort.ANY
    assert args.within_cluster_queue is WithinClusterQueue.LOWER_PRIORITY
    assert args.tenants == []
    assert StackConfig.model_validate({**prod_eks_raw()}).queues is not None  # the shipped stack has queues
    raw = prod_eks_raw()
    raw.pop("queues")
    assert StackConfig.model_validate(raw).queues is None  # none unless the stack asks
