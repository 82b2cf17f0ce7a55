"""The duration class (issue 24): every duration a stack key accepts is accepted by ``--set`` (as the
stack key and as the matching ``model.*`` key) and by the simulator, and means the same seconds
everywhere. ``simulate dev-eks --set eks_node_groups.autoscaler.scale_down_unneeded_time=1.5h`` used to
exit 3 (the simulator read durations with another grammar)."""

from __future__ import annotations

import typing

import pytest
from pydantic import TypeAdapter

from gpu_platform.components.core.durations import GoDuration, seconds
from gpu_platform.components.eks.node_group_args import ClusterAutoscalerSettings
from gpu_platform.infra.cli import main
from gpu_platform.infra.simulate.runs import configurations
from tests.conftest import PROJECT_DIR

DURATIONS = ["1.5h", "1h30m", "90s", "0.5m", "2h45m30.5s", "500ms", "2m0s", "30m1h", "7m"]

# Stack key of the EKS autoscaler -> (the simulator's timing, the model key that overrides it).
SIMULATED = {
    "scale_down_unneeded_time": ("scale_down_unneeded", "scale_down_unneeded_time"),
    "scale_down_delay_after_add": ("scale_down_delay_after_add", "scale_down_delay_after_add"),
    "max_node_provision_time": ("max_node_provision", "max_node_provision_time"),
    "initial_node_group_backoff_duration": ("initial_backoff", "initial_backoff"),
    "max_node_group_backoff_duration": ("max_backoff", "max_backoff"),
}


def _go_duration_keys() -> list[str]:
    """Every stack key of the autoscaler typed as a Go duration (found by type, so a new one is covered)."""
    hints = typing.get_type_hints(ClusterAutoscalerSettings, include_extras=True)
    return [name for name, hint in hints.items() if hint == GoDuration]


def test_every_go_duration_key_is_known_to_the_simulator_or_not_simulated() -> None:
    keys = _go_duration_keys()
    assert set(SIMULATED) <= set(keys)
    assert set(keys) - set(SIMULATED) == {"scale_down_delay_after_failure", "node_group_backoff_reset_timeout"}


@pytest.mark.parametrize("key", _go_duration_keys())
def test_a_stack_key_s_durations_pass_set_and_mean_the_same_seconds(key: str) -> None:
    for value in DURATIONS:
        TypeAdapter(GoDuration).validate_python(value)  # the stack key takes it
    stack_key = f"eks_node_groups.autoscaler.{key}"
    configs = configurations(PROJECT_DIR, "dev-eks", [], [(stack_key, DURATIONS)], 64)
    assert len(configs) == len(DURATIONS)
    for config, value in zip(configs, DURATIONS, strict=True):
        # Written into the chart's flags as given ...
        assert getattr(config.stack.eks_node_groups.autoscaler, key) == value
        if key in SIMULATED:
            timing, _ = SIMULATED[key]
            # ... and read by the simulator as the same seconds.
            assert getattr(config.inputs.timings, timing) == float(seconds(value))


@pytest.mark.parametrize("key", sorted(SIMULATED))
def test_the_model_key_reads_the_same_seconds(key: str) -> None:
    timing, model_key = SIMULATED[key]
    configs = configurations(PROJECT_DIR, "dev-eks", [], [(f"model.autoscaler.{model_key}", DURATIONS)], 64)
    by_stack = configurations(PROJECT_DIR, "dev-eks", [], [(f"eks_node_groups.autoscaler.{key}", DURATIONS)], 64)
    for model, stack, value in zip(configs, by_stack, DURATIONS, strict=True):
        assert getattr(model.inputs.timings, timing) == getattr(stack.inputs.timings, timing) == float(seconds(value))


def test_simulate_runs_with_a_fractional_hour(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["simulate", "dev-eks", "--hours", "0.25", "--set", "eks_node_groups.autoscaler.scale_down_unneeded_time=1.5h"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "pending p90" in out.out
