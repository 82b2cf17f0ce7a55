"""Every rule that exists is applied where it belongs (issue 35): a validator or rule function that only
its tests call guards nothing (the one-shared-GPU-per-container rule existed, and a time-shared pool with an
inference service asking 2 GPUs was accepted). Each module-level or method rule function of components/,
infra/ and policies/ (named ``*_problem``, ``*_problems``, ``check_*``, ``valid_*`` or ``validate_*``) must
be referenced from the package's own code, not only from tests; and the sharing rule in particular is
reached from a stack through the program's path."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

from tests.conftest import PROJECT_DIR

PACKAGES = ("components", "infra", "policies")
RULE = re.compile(r"^(_?[a-z0-9_]*_problems?|check_[a-z0-9_]+|valid_[a-z0-9_]+|validate_[a-z0-9_]*)$")


@functools.cache
def _sources() -> dict[Path, ast.Module]:
    """The package's modules parsed, once, by the worker that runs these tests (at import, every test worker
    parsed the whole package while collecting)."""
    return {p: ast.parse(p.read_text(), str(p)) for pkg in PACKAGES for p in sorted((PROJECT_DIR / pkg).rglob("*.py"))}


def _validator(node: ast.FunctionDef) -> bool:
    """A pydantic validator: pydantic itself calls it whenever its model is validated."""
    for deco in node.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name in ("field_validator", "model_validator", "validator", "root_validator"):
            return True
    return False


def _rules() -> list[tuple[str, str]]:
    found = []
    for path, tree in _sources().items():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and RULE.match(node.name) and not _validator(node):
                found.append((str(path.relative_to(PROJECT_DIR)), node.name))
    return sorted(set(found))


def _references() -> dict[str, int]:
    """How often each name is used (called, passed, listed, imported under another name) in the package's code."""
    counts: dict[str, int] = {}
    for tree in _sources().values():
        for node in ast.walk(tree):
            name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
            if name is not None:
                counts[name] = counts.get(name, 0) + 1
    return counts


def test_the_walk_finds_the_rules() -> None:
    names = {name for _, name in _rules()}
    assert {"shared_request_problem", "mig_sharing_problem", "warm_capacity_problems", "bucket_name_problem"} <= names, sorted(names)


def test_every_rule_is_called_from_the_package() -> None:
    references = _references()
    unused = [f"{module}: {rule} is defined but nothing outside the tests calls it" for module, rule in _rules() if references.get(rule, 0) < 1]
    assert not unused, "apply each where it belongs, or remove it:\n" + "\n".join(unused)


def test_the_sharing_rule_is_on_the_program_path() -> None:
    """A time-shared pool with an inference service asking 2 GPUs is refused by the stack's own checks
    (StackConfig, which the program and every command read), naming inference.gpus."""
    import yaml
    from pydantic import ValidationError

    from gpu_platform.infra.stack.errors import format_validation_error
    from gpu_platform.infra.stack.model import StackConfig

    doc = yaml.safe_load((PROJECT_DIR / "stacks" / "Pulumi.dev-gke.yaml").read_text())["config"]
    raw = {k.split(":", 1)[1]: v for k, v in doc.items() if k.startswith("gpu-platform:") and not (isinstance(v, dict) and "secure" in v)}
    pool = raw["gke"]["gpu_pools"][0]
    pool.pop("gpu_partition_size", None)
    pool["accelerator_count"] = 2
    pool["gpu_sharing"] = {"strategy": "TIME_SHARING", "max_shared_clients_per_gpu": 4}
    raw["inference"] = {"image": "nvcr.io/nvidia/tritonserver:25.01-py3", "gpus": 2, "pool": pool["name"]}
    with pytest.raises(ValidationError) as raised:
        StackConfig.model_validate(raw)
    lines = format_validation_error(raised.value, StackConfig, "gpu-platform")
    assert any(line.startswith("gpu-platform:inference.gpus: an inference pod asks for 2 GPUs on pool") for line in lines), lines
