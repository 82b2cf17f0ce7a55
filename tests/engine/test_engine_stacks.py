"""Every shipped stack's Kubernetes layer under the real engine (issue 37 items 2-4), deployed the supported way onto
a cluster the stack did not create: the stack file's existing_cluster (ExistingClusterArgs), describing the shipped
stack's own pools, on the local control plane, through the program's own ``build``.

Per stack: ``up`` (no await failure), ``preview`` with no changes, a change of the stack (a Dask tenant removed, a GPU
pool's maximum raised: the engine's diff deletes the tenant's objects and changes nothing else but what counts the pool),
``up`` again, then the teardown guide's ``destroy`` (Kubeflow's protected claims unprotected first).

What the built providers cannot deploy, and so is left out (listed in docs/commands/preview.md, "The real Pulumi engine in the tests"): the cloud
resources (the GKE or EKS cluster, node pools and groups, IAM, buckets, FSx: pulumi-gcp and pulumi-aws are not built
here), hence shared datasets (refused on existing_cluster) and the load balancer controller; the cluster autoscaler and
Karpenter (parts of the cluster the stack creates, not of its Kubernetes layer); generated credentials (pulumi-random):
Kubeflow's come from the stack's secret config, as a team with its own secret store brings them.

The destroy must leave the cluster as the stack found it (its namespaces and cluster-scoped objects, compared before
``up`` and after ``destroy``), but for the CRDs Helm keeps on purpose (kept_by_helm). Minutes per stack: they run when GPU_PLATFORM_ENGINE_STACKS=1, as .ci/run does.
"""

from __future__ import annotations

import copy
import json
import os
import time
from typing import Any

import pulumi
import pytest
from pulumi import automation as auto

from gpu_platform.components.kubeflow.args import Edition
from gpu_platform.infra.apply.nodes import pool_nodes
from gpu_platform.infra.stack.model import KUBEFLOW_CREDENTIAL_KEYS, PROJECT
from gpu_platform.infra.stack.read import config_for_engine, stack_config_from
from tests.engine.conftest import RealEngine, inventory, kept_by_helm, leftovers, stand_ins
from tests.engine.test_engine_gpu_at_zero import _local_charts
from tests.engine.test_engine_kubeflow import ENGINE_PARALLEL, _volumes, credential_values
from tests.factories import existing_stack

pytestmark = pytest.mark.skipif(
    os.environ.get("GPU_PLATFORM_ENGINE_STACKS") != "1",
    reason="every shipped stack under the engine takes minutes: GPU_PLATFORM_ENGINE_STACKS=1 runs them (.ci/run does)",
)

NS = f"{PROJECT}:"
STACKS = ("dev-gke", "prod-gke", "dev-eks", "prod-eks")
GRAFANA_PASSWORD = "EngineTestGrafana1"


def engine_config(shipped: str, kubeconfig: str) -> tuple[dict[str, Any], set[str]]:
    """The shipped stack on an existing cluster (the local control plane, its kubeconfig as the secret the stack holds),
    every secret a value of its own (Kubeflow's credentials from stack config: pulumi-random is not built here)."""
    config, secret = existing_stack(shipped)
    config[NS + "existing_cluster_kubeconfig"] = kubeconfig
    config[NS + "grafana_admin_password"] = GRAFANA_PASSWORD
    secret |= {NS + "existing_cluster_kubeconfig", NS + "grafana_admin_password"}
    if NS + "kubeflow" in config:
        edition = Edition(config[NS + "kubeflow"]["install"].get("edition", "pipelines"))
        for credential, value in credential_values(edition).items():
            key = NS + KUBEFLOW_CREDENTIAL_KEYS[credential]
            config[key] = value
            secret.add(key)
    return config, secret


def values(config: dict[str, Any], secret: set[str]) -> dict[str, auto.ConfigValue]:
    return {k: auto.ConfigValue(v, secret=k in secret) for k, v in config_for_engine(config).items()}


def changed(config: dict[str, Any]) -> tuple[dict[str, Any], str, str]:
    """The stack with its last Dask tenant removed and its first GPU pool's maximum raised by 2: (config, the tenant,
    the pool)."""
    config = copy.deepcopy(config)
    tenants = config[NS + "dask"]["tenants"]
    removed = tenants.pop()["name"]
    pool = next(p for p in config[NS + "existing_cluster"]["pools"] if p.get("role", "gpu") == "gpu")
    pool["max_nodes"] += 2
    return config, removed, pool["name"]


def prepare(engine: RealEngine, config: Any, prefix: str) -> None:
    """The stack's pools at their minimum as kwok nodes, and volumes for the claims (Kubeflow's, of its class)."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    core = client.CoreV1Api(engine.api_client())
    existing = {n.metadata.name for n in core.list_node().items}
    for node in pool_nodes(config.pool_shapes()):
        if node["metadata"]["name"] not in existing:
            core.create_node(node)
    if config.kubeflow is not None:
        for volume in _volumes(config.kubeflow.install.storage_class, 4, prefix):
            try:
                core.create_persistent_volume(volume)
            except ApiException as exc:
                if exc.status != 409:
                    raise


@pytest.mark.parametrize("shipped", STACKS)
def test_the_stacks_kubernetes_layer_goes_up_changes_and_is_destroyed_on_an_existing_cluster(real_engine: RealEngine, shipped: str) -> None:
    from kubernetes import client

    from gpu_platform.infra.preview.upstream import Sources, load_lock
    from gpu_platform.infra.program import build
    from gpu_platform.infra.stack.read import load_stack_config
    from tests.conftest import upstream_or_skip

    gitconfig = real_engine.work / "gitconfig"  # Kubeflow's kustomize reads the pinned refs from the local mirrors
    Sources(load_lock(), upstream_dir=upstream_or_skip(), fetch=False).git_config(gitconfig)
    real_engine.env.update(GIT_CONFIG_GLOBAL=str(gitconfig), GIT_CONFIG_NOSYSTEM="1", GIT_TERMINAL_PROMPT="0")
    config, secret = engine_config(shipped, real_engine.kubeconfig.read_text())
    planned = stack_config_from(copy.deepcopy(config), set(secret), shipped)
    assert planned.existing_cluster is not None
    prepare(real_engine, planned, f"stacks-{shipped}")

    def program() -> None:
        pulumi.runtime.register_resource_transform(_local_charts(real_engine))
        build(shipped, load_stack_config())  # the program's own reader and composition

    before = inventory(real_engine)
    with stand_ins(real_engine) as removed, real_engine.stack(f"stack-{shipped}", program, config=values(config, secret)) as stack:
        started = time.monotonic()
        first = stack.up(parallel=ENGINE_PARALLEL)
        print(f"{shipped}: up in {time.monotonic() - started:.0f} s, {first.summary}")
        assert first.summary.get("create", 0) > 0 and set(first.summary) == {"create"}
        types = {urn.split("::")[-2] for urn in first.urns}
        assert not {t for t in types if t.startswith(("gcp:", "aws:", "random:"))}, types
        assert stack.outputs()["existingCluster"] == planned.cloud.kind.value
        stack.preview_no_changes()

        # A tenant leaves and a pool grows: the engine deletes that tenant's objects and nothing else.
        later, tenant, pool = changed(config)
        stack.stack.set_all_config(values(later, secret))
        diff = stack.preview()
        update = stack.up(parallel=ENGINE_PARALLEL)
        assert update.changed() == diff.changed(), (update.changed(), diff.changed())
        deleted = {name for name, op in update.changed().items() if op == "delete"}
        assert deleted and all(tenant in name for name in deleted), deleted
        assert f"{shipped}-dask-{tenant}" in deleted  # its namespace
        assert not {name: op for name, op in update.changed().items() if op in {"replace", "create"}}
        others = {name for name, op in update.changed().items() if op == "update"}
        # Only what counts the pool or the tenants changes: Kueue's quotas, Headlamp's and the monitoring's tenant lists.
        assert all(any(part in name for part in ("queues", "headlamp", "kueue")) for name in others), others
        namespaces = {n.metadata.name: n for n in client.CoreV1Api(real_engine.api_client()).list_namespace().items}
        assert tenant not in namespaces or namespaces[tenant].metadata.deletion_timestamp is not None
        expected = stack_config_from(copy.deepcopy(later), set(secret), shipped).queues_plan
        if expected is not None:  # the queues on the cluster are the changed stack's, quota for quota
            custom = client.CustomObjectsApi(real_engine.api_client())
            for queue in expected.cluster_queues:
                live = custom.get_cluster_custom_object("kueue.x-k8s.io", "v1beta2", "clusterqueues", queue["metadata"]["name"])
                assert live["spec"]["resourceGroups"] == queue["spec"]["resourceGroups"], queue["metadata"]["name"]
        stack.preview_no_changes()
        print(f"{shipped}: change ({tenant} removed, {pool} +2 nodes) {update.seconds:.0f} s: {update.changed()}")

        if NS + "kubeflow" in later:  # the teardown guide: protection off in the stack file, up, then destroy
            kubeflow = later[NS + "kubeflow"]
            kubeflow["install"]["keep_volumes_on_delete"] = False
            stack.stack.set_config(NS + "kubeflow", auto.ConfigValue(json.dumps(kubeflow)))
            stack.up(parallel=ENGINE_PARALLEL)
        started = time.monotonic()
        stack.destroy()
        print(f"{shipped}: destroy in {time.monotonic() - started:.0f} s")
    # The destroy leaves the cluster as the stack found it: every namespace and cluster-scoped object the stack's
    # releases, kustomizations and components made is gone (what the stand-ins removed is listed, not hidden).
    print(f"{shipped}: removed by the stand-ins (kwok's unserved APIs, roles the aggregation controller recreated): {sorted(removed)}")
    after = inventory(real_engine)
    kept = kept_by_helm(real_engine, after - before)
    print(f"{shipped}: kept by Helm (CRDs of its charts' crds/ folders, their API groups): {sorted(kept)}")
    assert after - kept == before, {"left": leftovers(real_engine, after - kept - before), "gone": sorted(before - after)}
