"""Typed quantities (components/core/quantities.py): Kubernetes spellings in, exact integers out, and a
dumped model validates back to itself."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ValidationError

from gpu_platform.components.core.quantities import MiB, Millicores, Seconds, format_duration, to_mib, to_millicores


class _Request(BaseModel):
    cpu: Millicores = 0
    memory: MiB = 0
    wait: Seconds = 1


@pytest.mark.parametrize(("given", "millicores"), [(1.5, 1500), ("1.5", 1500), ("1500m", 1500), (2, 2000), ("250m", 250), ("0.001", 1)])
def test_cpu_is_cores_or_millicores(given: object, millicores: int) -> None:
    assert _Request.model_validate({"cpu": given}).cpu == millicores
    assert to_millicores(given) == millicores  # what the fit and quota checks read, one value at a time


@pytest.mark.parametrize(("given", "mib"), [(4096, 4096), ("4096Mi", 4096), ("4Gi", 4096), ("1Ti", 1024 * 1024), ("1Ki", 1), ("1.5Gi", 1536), ("1025Ki", 2)])
def test_memory_is_mib_rounded_up(given: object, mib: int) -> None:
    assert _Request.model_validate({"memory": given}).memory == mib
    assert to_mib(given) == mib


@pytest.mark.parametrize(("given", "seconds"), [(90, 90), ("90s", 90), ("36m", 2160), ("1.5h", 5400), ("1h30m", 5400)])
def test_durations_are_whole_seconds(given: object, seconds: int) -> None:
    assert _Request.model_validate({"wait": given}).wait == seconds


@pytest.mark.parametrize(
    ("field", "given", "message"),
    [
        ("cpu", "1.5 cores", 'CPU must be cores ("1.5") or millicores ("1500m")'),
        ("cpu", "0.0005", "CPU finer than one millicore is not a Kubernetes quantity"),
        ("memory", "4GB", 'memory must be MiB (4096) or a quantity with Ki, Mi, Gi or Ti ("4Gi")'),
        ("wait", "1.5s", 'that is 1.5 seconds; give whole seconds (90, "90s", "1.5h")'),
        ("wait", 0, "greater than or equal to 1"),
        ("cpu", True, "a whole number expected, not a boolean (true)"),
    ],
)
def test_fails_when_a_quantity_is_not_kubernetes_spelling(field: str, given: object, message: str) -> None:
    with pytest.raises(ValidationError) as info:
        _Request.model_validate({field: given})
    (error,) = info.value.errors()
    assert error["loc"] == (field,) and message in error["msg"]


@pytest.mark.parametrize(
    ("read", "given", "message"),
    [
        (to_millicores, "1.5 cores", "CPU must be cores"),
        (to_millicores, "0.0005", "finer than one millicore"),
        (to_mib, "4GB", "memory must be MiB"),
        (to_mib, True, "not a boolean"),
    ],
)
def test_one_value_is_refused_as_its_field_refuses_it(read: object, given: object, message: str) -> None:
    with pytest.raises(ValidationError) as info:
        read(given)  # type: ignore[operator]
    (error,) = info.value.errors()
    assert message in error["msg"]


def test_cpu_serializes_as_millicores_and_round_trips() -> None:
    request = _Request(cpu="1.5", memory="2Gi", wait="1m")
    dumped = request.model_dump()
    assert dumped == {"cpu": "1500m", "memory": 2048, "wait": 60}
    assert _Request.model_validate(dumped) == request


@pytest.mark.parametrize(("seconds", "text"), [(10800, "3h"), (2160, "36m"), (5430, "1h30m30s"), (45, "45s"), (0, "0s")])
def test_format_duration(seconds: int, text: str) -> None:
    assert format_duration(seconds) == text
