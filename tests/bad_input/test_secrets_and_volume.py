"""No value is printed back from a key that may hold a secret, and a run prints a bounded number of
lines (issue 35): an unknown key's value is masked (it cannot be classified), a value under a key whose
name looks secret (token, password, key, credential...) is never shown, inside a shown mapping too; a
list of thousands of bad entries is 50 lines and one line counting the rest."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu_platform.infra.errors import MAX_LINES
from gpu_platform.infra.stack.errors import secret_like
from tests.bad_input.test_config_mutations import Case, run_case, set_

AWS_KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY"
TOKEN = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"
NS = "gpu-platform:"

CASES = [
    Case("unknown-top-key-aws-key", "dev-eks", "gpu-platform:aws_secret_access_key: unknown key", set_(NS + "aws_secret_access_key", value=AWS_KEY)),
    Case("unknown-top-key-plain-name", "dev-gke", "gpu-platform:extra: unknown key", set_(NS + "extra", value=TOKEN)),
    Case("unknown-nested-token", "dev-gke", "gpu-platform:queues.api_token: unknown key", set_(NS + "queues", value={"api_token": TOKEN})),
    Case("unknown-in-tenant", "dev-gke", "gpu-platform:dask.tenants[0].password: unknown key", set_(NS + "dask", "tenants", 0, "password", value=TOKEN)),
    Case(
        "unknown-map-of-secrets", "prod-eks", "gpu-platform:headlamp.credentials: unknown key", set_(NS + "headlamp", value={"credentials": {"key": AWS_KEY}})
    ),
    Case(
        "unknown-in-karpenter",
        "prod-eks",
        "gpu-platform:eks_node_groups.karpenter.token: unknown key",
        set_(NS + "eks_node_groups", "karpenter", "token", value=TOKEN),
    ),
    Case(
        "unknown-in-inference",
        "dev-eks",
        "gpu-platform:inference.hf_token: unknown key",
        set_(NS + "inference", value={"image": "nvcr.io/nvidia/tritonserver:25.01-py3", "hf_token": TOKEN}),
    ),
    Case(
        "secret-named-label-bad-value",
        "dev-gke",
        "gpu-platform:gke.resource_labels",
        set_(NS + "gke", "resource_labels", "api_token", value=TOKEN + " NOT A LABEL"),
    ),
    Case("wrong-type-with-token", "dev-gke", "gpu-platform:warm_capacity.pools", set_(NS + "warm_capacity", value={"pools": {"t4": TOKEN}})),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_fails_without_echoing_a_value_that_may_be_secret(case: Case, tmp_path: Path) -> None:
    code, out, err = run_case(case, tmp_path)
    both = out + err
    assert code == 2, both
    assert case.expect in err, err
    assert AWS_KEY not in both and TOKEN not in both and TOKEN[:12] not in both, both
    assert "Traceback" not in both


@pytest.mark.parametrize(
    "name", ["api_token", "password", "db_passwd", "client_secret", "aws_secret_access_key", "access_key", "key", "ssh_keys", "credentials"]
)
def test_names_that_look_secret(name: str) -> None:
    assert secret_like(name)


@pytest.mark.parametrize("name", ["name", "namespace", "image", "pools", "kms_key_id", "monkey_count"])
def test_names_that_do_not(name: str) -> None:
    assert not secret_like(name)


def test_twenty_thousand_bad_entries_are_fifty_lines_and_a_count(tmp_path: Path) -> None:
    tenants = [{"name": f"Bad_{i}"} for i in range(20_000)]
    case = Case("volume", "dev-gke", "gpu-platform:queues.tenants[0].name", set_(NS + "queues", value={"tenants": tenants}))
    code, out, err = run_case(case, tmp_path)
    lines = err.strip().splitlines()
    assert code == 2, out + err
    assert len(lines) == MAX_LINES + 1, len(lines)
    assert "19950 more problems not shown" in lines[-1], lines[-1]
    assert all("(got " in line for line in lines[:-1])
