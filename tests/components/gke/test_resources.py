"""ComputeClass objects checked against GKE's published CRD schema.

No CRD schema for cloud.google.com/v1 ComputeClass ships in a Python package, so the
offline preview cannot check these objects; this test does, with the schema
@kubernetes-models/gke compiles from the CRD (tests/schemas, installed by .ci/run with
`npm ci --prefix tests/schemas`).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

import pytest

from gpu_platform.components.gke.resources import compute_class_spec
from gpu_platform.infra.preview.manifests import kubernetes_objects
from tests.conftest import PROJECT_DIR, shipped_plan

SCHEMAS = PROJECT_DIR / "tests" / "schemas"


def validate(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if shutil.which("node") is None:
        pytest.skip("Node.js is not installed: the ComputeClass schema ships as an npm package")
    if not (SCHEMAS / "node_modules" / "@kubernetes-models" / "gke").is_dir():
        pytest.skip("run `npm ci --prefix tests/schemas` to install the ComputeClass schema")
    result = subprocess.run(
        ["node", str(SCHEMAS / "validate.js")],
        input=json.dumps(objects),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return json.loads(result.stdout)


def compute_class(spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "cloud.google.com/v1", "kind": "ComputeClass", "metadata": {"name": "a100"}, "spec": spec}


def test_prod_gke_compute_classes_match_the_crd_schema() -> None:
    objects = [o.body for o in kubernetes_objects(shipped_plan("prod-gke")) if o.kind == "ComputeClass"]
    assert len(objects) == 2
    results = validate(objects)
    assert [r["errors"] for r in results] == [[], []]


def test_schema_check_is_live() -> None:
    spec = compute_class_spec(["a-spot", "a-on-demand"], migrate_back=False)
    broken = {k: v for k, v in spec.items() if k != "whenUnsatisfiable"}
    wrong = {**spec, "whenUnsatisfiable": "Sometimes"}
    good, missing, bad_enum = validate([compute_class(spec), compute_class(broken), compute_class(wrong)])
    assert good["errors"] == []
    assert any("whenUnsatisfiable" in e for e in missing["errors"])
    assert any("allowed values" in e for e in bad_enum["errors"])
