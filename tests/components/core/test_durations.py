"""The one duration grammar (components/core/durations.py): Go's time.ParseDuration, exact seconds out."""

from __future__ import annotations

import os
import shutil
import subprocess
from fractions import Fraction
from pathlib import Path

import pytest
from pydantic import TypeAdapter, ValidationError

from gpu_platform.components.core.durations import GO_DURATION_EXAMPLES, GoDuration, go_duration_ns, seconds
from gpu_platform.components.core.quantities import Seconds

# What Go's time.ParseDuration returns for each (in nanoseconds), as its own tests list them.
GO = {
    "0": 0,
    "5s": 5 * 10**9,
    "30s": 30 * 10**9,
    "1478s": 1478 * 10**9,
    "-5s": -5 * 10**9,
    "+5s": 5 * 10**9,
    "5.0s": 5 * 10**9,
    "5.6s": 5_600_000_000,
    "5.s": 5 * 10**9,
    ".5s": 500_000_000,
    "1.0s": 10**9,
    "1.004s": 1_004_000_000,
    "100.00100s": 100_001_000_000,
    "10ns": 10,
    "11us": 11_000,
    "12µs": 12_000,
    "12μs": 12_000,
    "13ms": 13_000_000,
    "14s": 14 * 10**9,
    "15m": 15 * 60 * 10**9,
    "16h": 16 * 3600 * 10**9,
    "3h30m": (3 * 3600 + 30 * 60) * 10**9,
    "10.5s4m": (4 * 60 + 10.5) * 10**9,
    "1h2m3s4ms5us6ns": 3_723_004_005_006,
    "39h9m14.425s": 140_954_425_000_000,
    "52763797000ns": 52_763_797_000,
    "0.3333333333333333333h": 1_200_000_000_000,
    "9223372036854775807ns": 2**63 - 1,
    "9223372036.854775807s": 2**63 - 1,
    "1.5h": 5400 * 10**9,
    "2562047h47m16.854775807s": 2**63 - 1,
    "1m1m": 120 * 10**9,
}


@pytest.mark.parametrize(("text", "ns"), GO.items())
def test_reads_what_go_reads_as_go_reads_it(text: str, ns: float) -> None:
    assert go_duration_ns(text) == int(ns)


REFUSED = ["", "3", "-", "s", ".", "-.", ".s", "+.s", "1d", "1.5.5h", "1 h", "9223372036854775808ns", "2562047h47m16.854775808s", "1hh", "h1"]


@pytest.mark.parametrize("text", REFUSED)
def test_refuses_what_go_refuses(text: str) -> None:
    with pytest.raises(ValueError, match="Go"):
        go_duration_ns(text)


@pytest.mark.parametrize("text", GO_DURATION_EXAMPLES)
def test_go_duration_keeps_the_text_as_written(text: str) -> None:
    assert TypeAdapter(GoDuration).validate_python(text) == text


def test_fails_when_a_go_duration_is_negative() -> None:
    with pytest.raises(ValidationError, match="'-5s' is negative"):
        TypeAdapter(GoDuration).validate_python("-5s")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("1.5h", 5400),
        ("1h30m", 5400),
        ("90m", 5400),
        ("5400s", 5400),
        (5400, 5400),
        ("5400", 5400),
        (2.5, Fraction(5, 2)),
        ("500ms", Fraction(1, 2)),
        ("0.5m", 30),
        ("2h45m30.5s", Fraction(19861, 2)),
        ("2m0s", 120),
    ],
)
def test_seconds_are_exact(value: object, expected: Fraction) -> None:
    assert seconds(value) == expected


@pytest.mark.parametrize("value", [True, None, float("nan"), float("inf"), "1d", "ten", [1]])
def test_fails_when_seconds_are_not_a_duration(value: object) -> None:
    with pytest.raises(ValueError, match="a duration is"):
        seconds(value)


def test_whole_second_fields_take_go_durations_and_refuse_fractions() -> None:
    adapter = TypeAdapter(Seconds)
    assert [adapter.validate_python(v) for v in ("1.5h", "1h30m", "36m", 90, "90")] == [5400, 5400, 2160, 90, 90]
    with pytest.raises(ValidationError, match="give whole seconds"):
        adapter.validate_python("1500ms")


_GO_PROGRAM = """package main

import (
	"bufio"
	"fmt"
	"os"
	"time"
)

func main() {
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		d, err := time.ParseDuration(in.Text())
		if err != nil {
			fmt.Println("error")
		} else {
			fmt.Println(int64(d))
		}
	}
}
"""


def test_agrees_with_go_s_own_parser(tmp_path: Path) -> None:
    """Go's time.ParseDuration itself (Go 1.26 at /usr/local/go/bin/go) on every case above."""
    go = shutil.which("go") or ("/usr/local/go/bin/go" if Path("/usr/local/go/bin/go").exists() else None)
    if go is None:
        pytest.skip("Go is not installed (needed to run time.ParseDuration)")
    (tmp_path / "main.go").write_text(_GO_PROGRAM)
    cases = [*GO, *REFUSED, *GO_DURATION_EXAMPLES]
    env = {**os.environ, "GO111MODULE": "off"}
    done = subprocess.run(
        [go, "run", str(tmp_path / "main.go")], input="\n".join(cases) + "\n", capture_output=True, text=True, check=True, env=env, timeout=120
    )
    theirs = done.stdout.split("\n")[: len(cases)]

    def ours(text: str) -> str:
        try:
            return str(go_duration_ns(text))
        except ValueError:
            return "error"

    assert [ours(c) for c in cases] == theirs
