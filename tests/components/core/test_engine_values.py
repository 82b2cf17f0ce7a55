"""The engine's values inside callbacks (components/core/engine_values.py): plain values are read and
copied directly, so the offline preview's objects come out as before; secrets, unknowns and Outputs
anywhere inside are worked on through an Output that stays secret or unknown."""

from __future__ import annotations

from typing import Any

import pulumi
from pulumi.runtime import rpc

from gpu_platform.components.core.engine_values import (
    UNKNOWN,
    as_output,
    is_opaque,
    is_plain,
    is_unknown,
    merged,
    on_value,
    read_known,
    replace_if,
    update_in,
)

SECRET = {rpc._special_sig_key: rpc._special_secret_sig, "value": "s3cr3t"}
"""The SDK's secret wrapper, as a wire without output values hands a secret."""


def test_what_is_opaque() -> None:
    assert is_unknown(UNKNOWN) and is_unknown(rpc.UNKNOWN) and not is_unknown("x")
    assert is_opaque(pulumi.Output.from_input(1)) and is_opaque(SECRET) and is_opaque(UNKNOWN)
    assert not is_opaque({"a": 1})
    assert is_plain({"a": [1, {"b": "c"}], "d": None})
    assert not is_plain({"a": [1, {"b": SECRET}]}) and not is_plain([UNKNOWN])


def test_plain_values_are_worked_on_directly_and_copied() -> None:
    original: dict[str, Any] = {"metadata": {"labels": {"a": "1"}}}
    changed = update_in(original, ["metadata", "labels", "b"], lambda old: "2" if old is None else old)
    assert changed == {"metadata": {"labels": {"a": "1", "b": "2"}}}
    assert original == {"metadata": {"labels": {"a": "1"}}}  # a copy: the given map is left as it was
    assert merged(None, {"x": 1}) == {"x": 1} and merged({"x": 0, "y": 2}, {"x": 1}) == {"x": 1, "y": 2}
    assert on_value({"n": 2}, lambda v: v["n"] * 2) == 4


def test_replace_if_decides_on_plain_values() -> None:
    value = {"spec": {"replicas": 1}}
    assert replace_if(value, ["spec", "replicas"], lambda old: old == 1, 3) == {"spec": {"replicas": 3}}
    assert replace_if(value, ["spec", "replicas"], lambda old: old == 2, 3) is None  # test says no
    assert replace_if(value, ["spec", "absent"], lambda old: True, 3) is None  # nothing at the path


@pulumi.runtime.test
def test_a_secret_inside_is_worked_on_as_a_secret_output() -> pulumi.Output[Any]:
    value = {"data": SECRET, "kind": "Secret"}
    out = on_value(value, lambda v: len(v["data"]))
    assert isinstance(out, pulumi.Output)
    changed = update_in(value, ["data"], lambda old: old.upper() if isinstance(old, str) else on_value(old, str.upper))
    assert changed["kind"] == "Secret" and isinstance(changed["data"], pulumi.Output)

    def check(args: list[Any]) -> None:
        length, upper, secret = args
        assert length == 6 and upper == "S3CR3T" and secret is True

    return pulumi.Output.all(out, changed["data"], pulumi.Output.from_input(out.is_secret())).apply(check)


@pulumi.runtime.test
def test_as_output_of_a_secret_wrapper_is_secret() -> pulumi.Output[Any]:
    out = as_output({"a": [1, SECRET]})

    async def check() -> None:
        assert await out.is_secret()
        assert await out.future() == {"a": [1, "s3cr3t"]}

    return pulumi.Output.from_input(check())


@pulumi.runtime.test
def test_read_known_reads_through_wrappers() -> pulumi.Output[Any]:
    async def check() -> None:
        assert await read_known({"a": {"b": SECRET}}, ("a", "b")) == "s3cr3t"
        assert await read_known({"a": pulumi.Output.from_input({"b": 2})}, ("a", "b")) == 2
        assert await read_known({"a": {"b": 1}}, ("a", "c")) is None
        assert await read_known({"a": "flat"}, ("a", "b")) is None
        assert await read_known({"a": rpc.UNKNOWN}, ("a",)) is UNKNOWN

    return pulumi.Output.from_input(check())
