"""The feature matrix (issue 34 item 6): every pair of optional features on GKE, EKS with the cluster autoscaler,
EKS with Karpenter, and an existing GKE or EKS cluster (issue 37: the pools described as existing_cluster; shared
datasets and the load balancer controller are not offered there, and simulate refuses such a stack in one line), built by infra/docs/matrix.py from the shipped stacks (no stack file is shipped for it),
whose page docs/features/matrix.md is generated from these very cells.

For every pair on every provisioner:

- the stack is read and planned once (``matrix.verdict``, cached for the session); a refused pair is refused in
  one line ``gpu-platform:<key path>: <why> (got <value>)`` whose key path is one feature's key and whose text
  names the other's, and the refused pairs are exactly those listed here (a new refusal is a regression);
- an accepted pair's plan is asked, per GPU pool, for its schedulable GPUs a node and its maximum nodes, and
  plan-capacity (its planner), simulate (its node groups, and a short run packing one-GPU pods onto the
  overlays' pool), the local kwok nodes and, with queues on, Kueue's nominal quotas must all say the same.
  On Karpenter, simulate runs Karpenter's model (infra/simulate/karpenter.py): its NodePools' capacity and GPU
  limits must say the same too (a node's GPUs x the plan's maximum nodes of the pool);
- the program runs under the recording engine through ``gpu-platform preview --no-render`` (exit 0: no schema
  or policy violation, no config refusal, no crash). A run costs about a second, so the program runs are
  shared: each provisioner's accepted pairs are covered by a few stacks that turn on as many features at once
  as the reader accepts (``_covers``: every accepted pair is inside at least one of them, and each is read and
  planned as a whole first). ``GPU_PLATFORM_MATRIX_EVERY_PAIR=1`` previews every accepted pair on its own
  instead (about a minute and a half on two cores).

Which pairs are rendered (``GPU_PLATFORM_MATRIX_RENDER=1``; rendering every Helm chart takes tens of seconds a
stack): the pairs whose features change each other's objects on the cluster, not just add their own beside
the other's. They are ``RENDERED``: queues with Dask, Kubeflow and sharing (the ClusterQueues' tenants and
quotas come from the others), datasets with Kubeflow (the mounts of the profiles), inference with the load
balancer controller (its Ingress waits on the controller), warm capacity with sharing (the placeholders'
GPU share), Headlamp with Dask (each tenant's viewer binding), on EKS sharing with a capacity ladder (the device
plugin's sharing chart on every rung's node group or NodePool, and on Karpenter the class's NodeOverlay over them)
and, on Karpenter, datasets with Dask (the add-on on the Karpenter NodePools, once refused). The same pairs are applied to a local control plane with
kwok nodes shaped like the pools (``preview --render --apply local``: zero refusals, every workload got its pods,
no pod pending that the judge does not expect) under ``GPU_PLATFORM_MATRIX_APPLY=1``, 20 to 40 s a pair.

The default run (no variable set) takes about 15 s on two busy cores, most of it the shared program runs.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import os
import re
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_platform.components.core.labels import GPU_RESOURCE
from gpu_platform.infra.docs import matrix
from gpu_platform.infra.docs.matrix import BASES, FEATURES, Base, Cell
from tests.conftest import PROJECT_DIR, UPSTREAM_DIR

BY_NAME = {b.name: b for b in BASES}
FEATURE = {f.name: f for f in FEATURES}

REFUSED = {
    "gke": {("dask", "queued"), ("datasets", "queued"), ("inference", "queued"), ("warm", "queued"), ("queued", "ladder")},
    "eks": set(),
    "eks-karpenter": set(),
    "existing-gke": {("dask", "queued"), ("inference", "queued"), ("warm", "queued")},
    "existing-eks": set(),
}
"""The pairs the reader refuses, per provisioner: a queued-provisioning pool's nodes come only for a
ProvisioningRequest, so no inference replica, warm placeholder or Dask worker or notebook (the datasets' tenants)
can ever land on it; and a queued-provisioning pool buys on-demand capacity only, so it takes no capacity ladder."""

RENDERED = {
    "gke": [("kubeflow", "queues"), ("dask", "queues"), ("queues", "sharing"), ("kubeflow", "datasets"), ("warm", "sharing"), ("dask", "headlamp")],
    "eks": [("inference", "load-balancer"), ("queues", "sharing"), ("dask", "queues"), ("sharing", "ladder")],
    "eks-karpenter": [("dask", "datasets"), ("kubeflow", "queues"), ("inference", "load-balancer"), ("sharing", "ladder")],
    "existing-gke": [("kubeflow", "queues"), ("queues", "sharing")],
    "existing-eks": [("dask", "queues"), ("inference", "warm")],
}
"""The pairs rendered under GPU_PLATFORM_MATRIX_RENDER=1 (see the module docstring for how they were chosen)."""

PARAMS = [pytest.param(n, p, id=f"{n}:{p[0]}+{p[1]}") for n, pairs in RENDERED.items() for p in pairs]

LINE = re.compile(r"^gpu-platform:(?P<key>[A-Za-z0-9_.\[\]-]+): (?P<why>.+) \(got .+\)$")


def _cell(base: Base, pair: tuple[str, str]) -> Cell:
    return matrix.verdict(PROJECT_DIR, base, pair)


def _cells(base: Base) -> list[Cell]:
    return [_cell(base, pair) for pair in matrix.pairs(base)]


@functools.cache
def _stack(base: Base, features: tuple[str, ...]) -> Any:
    """The StackConfig of an accepted stack, read and planned once."""
    return matrix.read(matrix.matrix_stack(PROJECT_DIR, base, features))


def _keys(feature: str) -> list[str]:
    """A feature's keys and those of the features it brings (a refusal of shared datasets may be its tenants')."""
    return [key for name in (*FEATURE[feature].needs, feature) for key in FEATURE[name].keys]


def _names(feature: str) -> list[str]:
    """What a refusal line calls a feature: its keys' last segments (``warm_capacity``, ``queued_provisioning``)."""
    return [key.rsplit(".", 1)[-1] for key in _keys(feature)]


# --- read and plan: works, or refused in one line naming both keys ------------------------------------------


@pytest.mark.parametrize("name", list(BY_NAME))
def test_every_pair_works_or_is_refused_in_one_line_naming_both_keys(name: str) -> None:
    base = BY_NAME[name]
    refused = {c.features for c in _cells(base) if not c.works}
    assert refused == REFUSED[name]
    for found in _cells(base):
        if found.works:
            continue
        (line,) = found.refusals
        match = LINE.match(line)
        assert match, line
        key, why = match["key"], match["why"]
        first, second = found.features
        # The line is located at one feature's key and names the other's.
        for here, other in ((first, second), (second, first)):
            if any(key.split(".")[0] == k.split(".")[0] for k in _keys(here)) and any(n in why for n in _names(other)):
                break
        else:
            raise AssertionError(f"{found.features}: {line!r} does not name both features' keys")


def test_every_feature_alone_works() -> None:
    for base in BASES:
        for feature in matrix.features_of(base):
            assert matrix.verdict(PROJECT_DIR, base, (feature.name,)).works, (base.name, feature.name)


# --- the tools agree with the plan on each GPU pool's schedulable GPUs ---------------------------------------


def _kueue_gpus(stack: Any, pool: str) -> int:
    from tests.infra.test_pool_capacity_agrees import _kueue_gpus as kueue

    return kueue(stack, pool)


def _plan_capacity(shape: Any) -> tuple[int, int]:
    """plan-capacity's planner on the pool: (its node's GPUs, one-GPU steps a node holds)."""
    from gpu_platform.infra.capacity import CapacityInputs, plan

    inputs = CapacityInputs.model_validate({"steps": [{"cpu": "10m", "memory": 16, "gpus": 1}], "run_duration": "10m", "runs": 16, "nodes": 1})
    result = plan(shape, inputs)
    return result.node.gpus, result.jobs_per_node


def _simulate_packs(inputs: Any, pool: str) -> int:
    """A short simulate run: one more one-GPU pod than a node holds, packed (most-allocated binding, no warm
    placeholders) on ``pool``: the most pods any node of it ran at once."""
    from gpu_platform.infra.simulate.inputs import Binding, Job, PodSpec, Resources, Stage
    from gpu_platform.infra.simulate.runs import run

    (per_node,) = {g.allocatable.gpus for g in inputs.groups if g.pool == pool}
    packed = dataclasses.replace(inputs, binding=Binding.MOST_ALLOCATED, warm={})
    pod = PodSpec(
        "worker", Resources(cpu=10, memory=16, gpus=1), roles=tuple({g.role for g in inputs.groups if g.pool == pool}), pools=(pool,), tolerations=None
    )
    jobs = [Job(0.0, "default", f"j{i}", (Stage.of((pod,), 600.0),)) for i in range(per_node + 1)]
    outcome = run(packed, jobs, None, _prices())
    placed: dict[str, int] = {}
    for record in outcome.trace.pods:
        if record.node is not None and record.running is not None:
            placed[record.node] = placed.get(record.node, 0) + 1
    assert sum(placed.values()) == per_node + 1, "every pod ran"
    return max(placed.values())


@functools.cache
def _prices() -> Any:
    """The shipped table, with a flex-start and a capacity-block price (the on-demand one) on every type: its sources
    publish neither, so simulate refuses those rungs until a user's --prices FILE gives them
    (tests/infra/test_simulate_ladders.py, test_simulate_eks_ladders.py), and the ladder overlay has both. Here
    only how many pods a node runs is checked, which no price changes."""
    from gpu_platform.infra.simulate.prices import PriceTable

    data = PriceTable.shipped().model_dump()
    for cloud in ("gcp", "aws"):
        for region in data[cloud]:
            for kind in ("machines", "gpus"):
                for price in region[kind].values():
                    price["flex_start"] = price["flex_start"] if price["flex_start"] is not None else price["on_demand"]
                    price["capacity_block"] = price["capacity_block"] if price["capacity_block"] is not None else price["on_demand"]
    return PriceTable.model_validate(data)


def _agree(base: Base, features: tuple[str, ...]) -> list[str]:
    """Each GPU pool's schedulable GPUs as every tool reports them, against the plan: the disagreements."""
    from gpu_platform.infra.apply.nodes import pool_nodes
    from gpu_platform.infra.simulate.cluster import model_inputs
    from gpu_platform.infra.simulate.settings import validate_model

    stack = _stack(base, features)
    wrong: list[str] = []
    inputs = None
    if base.existing:
        # An existing cluster's autoscaler is its owner's: simulate refuses it in one line, and models nothing.
        from gpu_platform.infra.simulate.runs import EXISTING_CLUSTER_NOT_MODELLED, refuse_existing_cluster
        from gpu_platform.infra.simulate.settings import SimulationError

        with pytest.raises(SimulationError) as refused:
            refuse_existing_cluster(stack)
        assert list(refused.value.lines) == [EXISTING_CLUSTER_NOT_MODELLED]
    else:
        inputs = model_inputs(stack, validate_model({}))
        assert (inputs.karpenter is not None) == (base.name == "eks-karpenter")
    for shape in stack.pool_shapes():
        if not shape.gpus_per_node:
            continue
        per_node, where = shape.schedulable_gpus_per_node, f"{base.name} {'+'.join(features)} pool {shape.name}"
        if (answer := _plan_capacity(shape)) != (per_node, per_node):
            wrong.append(f"{where}: plan-capacity says {answer}, the plan {per_node} a node")
        nodes = [n for n in pool_nodes([shape], zones=stack.pool_zones())]
        if {n["status"]["allocatable"][GPU_RESOURCE] for n in nodes} != {str(per_node)}:
            wrong.append(f"{where}: the kwok nodes advertise {[n['status']['allocatable'][GPU_RESOURCE] for n in nodes]}, the plan {per_node}")
        if inputs is not None and {g.allocatable.gpus for g in inputs.groups if g.pool == shape.name} != {per_node}:
            wrong.append(f"{where}: simulate's node groups offer {[g.allocatable.gpus for g in inputs.groups if g.pool == shape.name]}, the plan {per_node}")
        if inputs is not None and inputs.karpenter is not None:
            names = {g.name: g for g in inputs.groups if g.pool == shape.name}
            limits = {p.name: (p.capacity.gpus, p.limits.gpus) for p in inputs.karpenter.pools if p.name in names}
            planned = {n: (per_node, per_node * g.max_nodes) for n, g in names.items()}
            if limits != planned or sum(gpus for _, gpus in limits.values()) != per_node * shape.max_nodes:
                wrong.append(f"{where}: simulate's NodePools count (GPUs a node, GPU limit) {limits}, the plan {planned} of {shape.max_nodes} nodes")
        if stack.queues_plan is not None and (kueue := _kueue_gpus(stack, shape.name)) != per_node * shape.max_nodes:
            wrong.append(f"{where}: Kueue's nominal quotas hold {kueue}, the plan {per_node} x {shape.max_nodes} nodes")
    (gpu_pool,) = [s for s in stack.pool_shapes() if s.name == base.gpu_pool]
    if inputs is not None and (packed := _simulate_packs(inputs, base.gpu_pool)) != gpu_pool.schedulable_gpus_per_node:
        wrong.append(f"{base.name} {'+'.join(features)}: simulate ran {packed} one-GPU pods on a node of {base.gpu_pool}")
    return wrong


@pytest.mark.parametrize("name", list(BY_NAME))
def test_every_tool_reports_the_plans_schedulable_gpus_for_every_pool_of_every_accepted_pair(name: str) -> None:
    base = BY_NAME[name]
    wrong = [line for found in _cells(base) if found.works for line in _agree(base, found.features)]
    assert wrong == []


def test_the_sharing_pairs_are_the_shared_count_everywhere() -> None:
    """The matrix's sharing overlay shares the overlays' pool 4 ways: the plan says so on every provisioner, so
    the agreement above is about the shared count (a tool counting physical GPUs would disagree)."""
    for base in BASES:
        stack = _stack(base, ("queues", "sharing"))
        (shape,) = [s for s in stack.pool_shapes() if s.name == base.gpu_pool]
        assert shape.schedulable_gpus_per_node == 4 * shape.gpus_per_node
        assert _kueue_gpus(stack, base.gpu_pool) == 4 * shape.gpus_per_node * shape.max_nodes


# --- the program: gpu-platform preview --no-render, shared runs ----------------------------------------------


def _covers(base: Base) -> list[tuple[str, ...]]:
    """A few feature sets, each accepted by the reader as a whole, that together hold every accepted pair."""
    accepted = {c.features for c in _cells(base) if c.works}
    left = set(accepted)
    names = [f.name for f in matrix.features_of(base)]
    covers: list[tuple[str, ...]] = []
    while left:
        # Start from a pair not yet covered; add every feature that keeps every pair inside accepted.
        first = min(left, key=lambda p: (names.index(p[0]), names.index(p[1])))
        chosen = list(first)
        for name in names:
            if name not in chosen and all(tuple(sorted((name, c), key=names.index)) in accepted for c in chosen):
                trial = tuple(sorted((*chosen, name), key=names.index))
                if _accepted(base, trial):
                    chosen = list(trial)
        cover = tuple(sorted(chosen, key=names.index))
        covers.append(cover)
        left -= {p for p in left if p[0] in cover and p[1] in cover}
    return covers


def _accepted(base: Base, features: tuple[str, ...]) -> bool:
    from gpu_platform.infra.stack.errors import ConfigError

    try:
        _stack(base, features)
    except ConfigError:
        return False
    return True


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the project (its infra/ linked) to hold the matrix's stack files."""
    root = tmp_path_factory.mktemp("matrix")
    (root / "stacks").mkdir()
    (root / "Pulumi.yaml").write_text((PROJECT_DIR / "Pulumi.yaml").read_text())
    (root / "infra").symlink_to(PROJECT_DIR / "infra")
    return root


def _preview(project: Path, base: Base, features: tuple[str, ...], capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    from gpu_platform.infra.cli import main

    stack = matrix.matrix_stack(PROJECT_DIR, base, features)
    (project / "stacks" / f"Pulumi.{stack.name}.yaml").write_text(yaml.safe_dump(copy.deepcopy(stack.document())))
    code = main(["preview", stack.name, "--quiet", "--project-dir", str(project), "--upstream", str(UPSTREAM_DIR), "--offline", *extra])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@pytest.mark.parametrize("name", list(BY_NAME))
def test_the_program_previews_every_accepted_pair_clean(name: str, project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Every accepted pair previews with exit 0 (the shared runs), and each preview runs each of the stack's plan functions at most once (tests/infra/test_read_once.py's
    PLAN_FUNCTIONS: the pools, the node groups, the NodePools, the queue tenants and the queues), the queues'
    exactly once when queues are on."""
    from tests.infra.test_read_once import count_plans, plans_made

    if not UPSTREAM_DIR.is_dir():
        pytest.skip(f"no pinned upstream sources at {UPSTREAM_DIR}: the load balancer controller's IAM policy is read there")
    base = BY_NAME[name]
    every = os.environ.get("GPU_PLATFORM_MATRIX_EVERY_PAIR") == "1"
    runs = [c.features for c in _cells(base) if c.works] if every else _covers(base)
    if not every:
        assert len(runs) <= 4, f"{len(runs)} program runs for {name}: {runs}"
    counts = count_plans(monkeypatch)
    failed = []
    for features in runs:
        plans_made(counts)
        code, out = _preview(project, base, features, capsys, "--no-render")
        if code != 0:
            failed.append(f"{'+'.join(features)}: exit {code}\n{out}")
        made = plans_made(counts)
        if {n: c for n, c in made.items() if c > 1} or made["plan_queues"] != ("queues" in features):
            failed.append(f"{'+'.join(features)}: plans made {made}")
    assert failed == []


@pytest.mark.skipif(os.environ.get("GPU_PLATFORM_MATRIX_RENDER") != "1", reason="renders Helm charts (slow): set GPU_PLATFORM_MATRIX_RENDER=1")
@pytest.mark.parametrize(("name", "pair"), PARAMS)
def test_the_pairs_that_change_each_others_objects_render_clean(name: str, pair: tuple[str, str], project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if not UPSTREAM_DIR.is_dir():
        pytest.skip(f"no pinned upstream sources at {UPSTREAM_DIR}")
    base = BY_NAME[name]
    assert _cell(base, pair).works
    started = time.monotonic()
    code, out = _preview(project, base, pair, capsys, "--render")
    assert code == 0, out
    assert time.monotonic() - started < 600


@pytest.mark.skipif(os.environ.get("GPU_PLATFORM_MATRIX_APPLY") != "1", reason="a real API server per pair takes 20 to 40 s: set GPU_PLATFORM_MATRIX_APPLY=1")
@pytest.mark.parametrize(("name", "pair"), PARAMS)
def test_the_pairs_that_change_each_others_objects_apply_clean(name: str, pair: tuple[str, str], project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`preview --apply local`: zero refusals, every workload got its pods, no pod pending but those the judge
    expects (a claim no local provisioner binds, a pool scaled up); otherwise exit 1 with one line each."""
    if not UPSTREAM_DIR.is_dir():
        pytest.skip(f"no pinned upstream sources at {UPSTREAM_DIR}")
    from gpu_platform.infra.apply.local import ControlPlaneError, find_binaries

    try:
        find_binaries(build=False)
    except ControlPlaneError as exc:
        pytest.skip(f"the control plane is not built (tests/kube/build.sh): {exc}")
    code, out = _preview(project, BY_NAME[name], pair, capsys, "--render", "--apply", "local")
    assert code == 0, out
    assert "0 refused their pods; 0 fit no pool" in out, out
