"""Tests that fail when the cluster model is wrong (issue 29): each mutant below is the real
infra/simulate/model.py with one rule broken (its source edited at one place, compiled as a module of
its own); the tests that check that rule run in-process against the mutant, and at least one of them
must fail. The same tests pass on the real model (they run in tests/infra/test_simulation.py)."""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from pathlib import Path

import pytest

import gpu_platform.infra.simulate.model as real_model
from tests.infra import test_simulate_warm as warm_checks
from tests.infra import test_simulation as checks

SOURCE = Path(real_model.__file__).read_text(encoding="utf-8")


def compiled(source: str) -> types.ModuleType:
    """``source`` (a version of model.py) compiled as a module of its own."""
    name = "gpu_platform.infra.simulate.model_mutant"
    module = types.ModuleType(name)
    module.__file__ = real_model.__file__
    sys.modules[name] = module  # dataclasses resolve their module while the class is built
    try:
        exec(compile(source, real_model.__file__, "exec"), module.__dict__)
    finally:
        del sys.modules[name]
    return module


def mutant(old: str, new: str) -> types.ModuleType | None:
    """model.py with ``old`` replaced by ``new``, as a module of its own; None when model.py no longer reads
    ``old`` exactly once (the rule was rewritten: there is no mutant to build from this text)."""
    if SOURCE.count(old) != 1:
        return None
    return compiled(SOURCE.replace(old, new))


Check = Callable[[], object]

MUTANTS: dict[str, tuple[str, str, list[Check]]] = {
    "priority expander ignored": (
        "options.append(((group.priority, -self._waste(group, nodes, unplaced)), group, nodes))",
        "options.append(((0, -self._waste(group, nodes, unplaced)), group, nodes))",
        [checks.test_the_highest_priority_group_grows_even_when_another_wastes_less],
    ),
    "least-waste removed": (
        "options.append(((group.priority, -self._waste(group, nodes, unplaced)), group, nodes))",
        "options.append(((group.priority, 0.0), group, nodes))",
        [lambda seed=seed: checks.test_least_waste_picks_the_group_that_idles_the_least_cpu_and_memory(seed) for seed in range(8)],
    ),
    "least-waste scored on GPUs (the old model)": (
        "        return (avail_cpu - cpu) / avail_cpu + (avail_memory - memory) / avail_memory",
        "        gpus = sum(n * spec.requests.gpus for spec, n in helped)\n        return (nodes * alloc.gpus - gpus) / max(1, nodes * alloc.gpus)",
        [lambda seed=seed: checks.test_least_waste_picks_the_group_that_idles_the_least_cpu_and_memory(seed) for seed in range(8)],
    ),
    "ties broken by name": (
        "_, group, nodes = leaders[0] if len(leaders) == 1 else self.random.choice(leaders)",
        "_, group, nodes = max(leaders, key=lambda o: o[1].name)",
        [checks.test_ties_left_after_the_expanders_are_broken_at_random],
    ),
    "backoff never doubling": (
        "duration = min(t.max_backoff, 2 * duration)",
        "duration = min(t.max_backoff, duration)",
        [checks.test_backoff_doubles_after_each_failure_up_to_the_maximum],
    ),
    "backoff never forgotten": (
        "if last + self.timings.backoff_reset < self.env.now:",
        "if False:",
        [checks.test_backoff_is_forgotten_after_the_reset_timeout],
    ),
    "scale_down_gpu_utilization_threshold ignored": (
        "            if load > threshold:\n",
        "            if False:\n",
        [lambda: checks.test_a_node_at_or_below_the_threshold_with_pods_it_cannot_move_is_rechecked_after_5_minutes(0.2, 370.0)],
    ),
    "unremovable nodes rechecked every loop": (
        "node.unremovable_until = now + t.unremovable_recheck",
        "node.unremovable_until = now",
        [lambda: checks.test_a_node_at_or_below_the_threshold_with_pods_it_cannot_move_is_rechecked_after_5_minutes(0.5, 570.0)],
    ),
    "no wait for new GPU pods": (
        "return oldest + NEW_POD_BUFFER > now or (bool(gpu) and min(gpu) + NEW_GPU_POD_BUFFER > now)",
        "return oldest + NEW_POD_BUFFER > now",
        [checks.test_no_scale_up_until_the_oldest_gpu_pod_is_30_s_old],
    ),
    "max-node-provision-time from each scale-up": (
        "            while self.env.now < self.expected_add[group.name]:\n"
        "                yield self.env.timeout(self.expected_add[group.name] - self.env.now)\n",
        "            yield self.env.timeout(t.max_node_provision)\n",
        [checks.test_max_node_provision_time_counts_from_the_group_s_newest_scale_up],
    ),
    "FIFO swapped for LIFO": (
        "expiry[id(p)] if expiry[id(p)] >= now else 0.0, p.queued))",
        "expiry[id(p)] if expiry[id(p)] >= now else 0.0, -p.queued))",
        [checks.test_a_fixed_pool_with_poisson_arrivals_waits_as_erlang_c],
    ),
    "warm-capacity placeholders never preempted": (
        "node = self.placeholders.preempt(pod.spec)",
        "node = None",
        [warm_checks.test_a_pod_that_finds_no_free_gpu_preempts_a_placeholder_and_starts_at_once],
    ),
    "no requeue back-off": (
        "        if pod.failures == 0:\n            return -math.inf\n",
        "        if True:\n            return -math.inf\n",
        [checks.test_a_pod_backing_off_longer_loses_the_node_to_a_newer_one],
    ),
}


@pytest.mark.parametrize("name", list(MUTANTS))
def test_each_mutant_of_the_model_fails_a_test(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The verdict is on behaviour only: whether the model's source still reads the mutation point is no
    test's business (a rewording, or another mutant of the same line, must not pass or fail it), so a point
    the source no longer has skips, saying so, and the rule's own tests in test_simulation.py still run."""
    old, new, targeted = MUTANTS[name]
    module = mutant(old, new)
    if module is None:
        pytest.skip(f"model.py no longer reads this mutation point, so this mutant cannot be built: {old!r}")
    mutated = module.ClusterModel
    monkeypatch.setattr(checks, "ClusterModel", mutated)
    monkeypatch.setattr(warm_checks, "ClusterModel", mutated)
    failed = []
    for check in targeted:
        try:
            check()
        except AssertionError as exc:
            failed.append(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    assert failed, f"the mutant {name!r} passed every test meant to catch it"


def test_the_mutation_harness_builds_the_real_model_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    """The harness itself: the unmutated source, compiled as the mutants are, passes the targeted checks
    (the Erlang C one aside, which runs in test_simulation.py)."""
    monkeypatch.setattr(checks, "ClusterModel", compiled(SOURCE).ClusterModel)
    checks.test_the_highest_priority_group_grows_even_when_another_wastes_less()
    checks.test_backoff_doubles_after_each_failure_up_to_the_maximum()
    checks.test_max_node_provision_time_counts_from_the_group_s_newest_scale_up()
