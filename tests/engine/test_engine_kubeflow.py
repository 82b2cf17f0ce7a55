"""The Kubeflow stacks under the real engine (issue 40): both editions go up, preview with no changes and are
destroyed on the local control plane, through the program's own composition (infra/program.py compose_kubeflow),
with every credential from the stack's secret config: the random provider cannot be built here, and a team
with its own secret store brings them the same way.

What makes it work without a network or a cloud, and nothing more:
- the provider's kustomize fetches the pinned kubeflow/manifests and kubeflow/pipelines refs with git, which the
  workspace's git config points at the pinned local mirrors (../shared/reference/upstream/git) the offline render
  reads; any other GitHub repository is refused;
- the claims of the artifact store and the databases bind to PersistentVolumes made here beforehand (a cloud's
  CSI driver would provision them; the local control plane has no provisioner), of the stack's storage class;
- the pods run on kwok nodes: the stack's pools at their minimum and one untainted node with room;
- the cluster is an ExistingCluster (the supported way onto a cluster the stack did not create) whose pools are the
  stack's own, reached by the control plane's kubeconfig.

Both editions take minutes (the platform edition is hundreds of objects): they run when GPU_PLATFORM_ENGINE_STACKS=1,
as .ci/run sets after the test command, apart from its time budget.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from pulumi import automation as auto

from gpu_platform.components import ExistingCluster, ExistingClusterArgs
from gpu_platform.components.kubeflow.args import ARTIFACT_CLAIMS, DATABASE_CLAIMS, Edition
from gpu_platform.components.kubeflow.transforms import Credential, edition_credentials
from gpu_platform.infra.apply.nodes import pool_nodes
from gpu_platform.infra.stack.model import KUBEFLOW_CREDENTIAL_KEYS, PROJECT
from gpu_platform.infra.stack.read import config_for_engine, load_stack_config, read_stack_file
from tests.conftest import PROJECT_DIR
from tests.engine.conftest import RealEngine, inventory, kept_by_helm, leftovers, stand_ins

pytestmark = pytest.mark.skipif(
    os.environ.get("GPU_PLATFORM_ENGINE_STACKS") != "1",
    reason="the Kubeflow stacks under the engine take minutes: GPU_PLATFORM_ENGINE_STACKS=1 runs them (.ci/run does)",
)

STACK = "prod-eks"
DEX_HASH = "$2b$12$fOI2qO1tVSuAXd5YKEE2keWKP1p.esN88ofNQggDuu/3FAwsxrtD."
"""A bcrypt hash (of "engine-test-password", cost 12), as the stack's secret config holds Dex's user's."""
ENGINE_PARALLEL = 8
"""Steps the engine runs at once: `pulumi up`'s default on 2 cores (4 per CPU, pkg/cmd/pulumi/operations/up.go)."""
VOLUME_GIB = 65536
"""Each PersistentVolume made for the claims: as large as any claim the stack may make (the keys' maximum)."""


def credential_values(edition: Edition) -> dict[Credential, str]:
    """What a team would keep in its secret config: one value per credential of the edition, letters and digits."""
    return {c: (f"EngineTest{c.name.title().replace('_', '')}" * 4)[: c.length] for c in edition_credentials(edition)}


def stack_config(edition: Edition) -> dict[str, auto.ConfigValue]:
    """prod-eks's stack file as the engine hands it to the program (its secure values kept secret), on the given
    edition, with every Kubeflow credential (and on the platform edition Dex's hash) as secret config."""
    config, secret_keys = read_stack_file(PROJECT_DIR, STACK)
    key = f"{PROJECT}:kubeflow"
    if edition is Edition.PLATFORM:
        install = dict(config[key]["install"])
        install.pop("release", None)
        install.update(edition="platform", dex_user_email="ml-admin@corp.example")
        install["tenants"] = [{"name": "team-vision", "owner": "vision-lead@corp.example", "gpus": 16}]
        config[key] = {**config[key], "install": install}
        config[f"{PROJECT}:kubeflow_dex_password_hash"] = DEX_HASH
        secret_keys.add(f"{PROJECT}:kubeflow_dex_password_hash")
    for credential, value in credential_values(edition).items():
        config[f"{PROJECT}:{KUBEFLOW_CREDENTIAL_KEYS[credential]}"] = value
        secret_keys.add(f"{PROJECT}:{KUBEFLOW_CREDENTIAL_KEYS[credential]}")
    secret = {k if ":" in k else f"{PROJECT}:{k}" for k in secret_keys}
    return {k: auto.ConfigValue(v, secret=k in secret) for k, v in config_for_engine(config).items()}


def _volumes(storage_class: str | None, count: int, prefix: str) -> Iterator[dict[str, Any]]:
    for i in range(count):
        yield {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": f"{prefix}-{i}"},
            "spec": {
                "capacity": {"storage": f"{VOLUME_GIB}Gi"},
                "accessModes": ["ReadWriteOnce"],
                "persistentVolumeReclaimPolicy": "Retain",
                "storageClassName": storage_class or "",
                "hostPath": {"path": f"/tmp/{prefix}-{i}"},
            },
        }


def _prepare_cluster(engine: RealEngine, edition: Edition, config: Any) -> None:
    """The nodes of the stack's pools at their minimum, and volumes for the claims (of the stack's class, and of
    none for upstream's own claims on the platform edition)."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    core = client.CoreV1Api(engine.api_client())
    existing = {n.metadata.name for n in core.list_node().items}
    for node in pool_nodes(config.pool_shapes()):
        if node["metadata"]["name"] not in existing:
            core.create_node(node)
    wanted = list(_volumes(config.kubeflow.install.storage_class, 4, f"kf-{edition.value}-class"))
    wanted += list(_volumes(None, 8, f"kf-{edition.value}-plain"))
    for volume in wanted:
        try:
            core.create_persistent_volume(volume)
        except ApiException as exc:
            if exc.status != 409:
                raise


def _secret_values(engine: RealEngine) -> set[str]:
    """Every value of every Secret on the cluster (Kubeflow's are in kubeflow, auth and oauth2-proxy)."""
    import base64

    from kubernetes import client

    values = set()
    for secret in client.CoreV1Api(engine.api_client()).list_secret_for_all_namespaces().items:
        values |= {base64.b64decode(v).decode(errors="replace") for v in (secret.data or {}).values()}
    return values


@pytest.mark.parametrize("edition", [Edition.PIPELINES, Edition.PLATFORM], ids=lambda e: e.value)
def test_the_kubeflow_stack_goes_up_previews_unchanged_and_is_destroyed_with_credentials_from_stack_config(real_engine: RealEngine, edition: Edition) -> None:
    from kubernetes import client

    from gpu_platform.components.core.cloud import ClusterKind
    from gpu_platform.infra.preview.upstream import Sources, load_lock
    from gpu_platform.infra.program import compose_kubeflow
    from tests.conftest import upstream_or_skip

    # The provider's kustomize reads the pinned refs from the local mirrors, as the offline render does.
    gitconfig = real_engine.work / "gitconfig"
    Sources(load_lock(), upstream_dir=upstream_or_skip(), fetch=False).git_config(gitconfig)
    real_engine.env.update(GIT_CONFIG_GLOBAL=str(gitconfig), GIT_CONFIG_NOSYSTEM="1", GIT_TERMINAL_PROMPT="0")
    config_values = stack_config(edition)
    kubeconfig = real_engine.kubeconfig.read_text()

    def program() -> None:
        config = load_stack_config()  # the program's own reader, over the engine's config
        assert config.kubeflow is not None and config.kubeflow.install.edition is edition
        # The supported way onto a cluster the stack did not create: the stack's pools, described as they are.
        described = ExistingClusterArgs.of_shapes(ClusterKind.EKS, config.pool_shapes(), region=config.region)
        cluster = ExistingCluster(f"{STACK}-cluster", described, kubeconfig=kubeconfig)
        compose_kubeflow(STACK, config, cluster)

    name = f"kubeflow-{edition.value}"
    config = stack_loaded_config(config_values)
    _prepare_cluster(real_engine, edition, config)
    before = inventory(real_engine)
    with stand_ins(real_engine) as removed, real_engine.stack(name, program, config=config_values) as stack:
        started = time.monotonic()
        # The engine's default on a 2-core runner (4 steps per CPU), whatever this machine has: where the Directory's
        # Deployments were awaited, they filled every slot before their ServiceAccounts and claims got one.
        run = stack.up(parallel=ENGINE_PARALLEL)
        print(f"kubeflow {edition.value}: up in {time.monotonic() - started:.0f} s, {run.summary}")
        # The credentials the stack's config holds are the ones in the cluster; no upstream default is left.
        held = _secret_values(real_engine)
        for credential, value in credential_values(edition).items():
            assert value in held or any(value in v for v in held), f"{credential.value} from stack config is not in any Secret"
        assert not {"minio123", "minio"} & held, "an upstream default object store credential is still deployed"
        # Nothing was generated: the random provider is not even in the state.
        resources = stack.stack.export_stack().deployment["resources"]
        assert not [r for r in resources if r["type"].startswith("random:")]
        stack.preview_no_changes()
        # The claims are protected (keep_volumes_on_delete): a destroy refuses them, naming them, and deletes nothing.
        claims = [urn for urn in run.urns if "PersistentVolumeClaim::" in urn and urn.rsplit("/", 1)[-1] in ARTIFACT_CLAIMS | DATABASE_CLAIMS]
        assert len(claims) == 2, claims  # the artifact store's and the database's
        with pytest.raises(auto.CommandError) as refused:
            stack.destroy(target=claims)
        assert all(f'{urn}" cannot be deleted' in str(refused.value) for urn in claims), str(refused.value)[-2000:]
        # As the teardown guide says: protection off in the stack file, up (no object changes), then destroy.
        install = yaml.safe_load(config_values[f"{PROJECT}:kubeflow"].value)
        install["install"]["keep_volumes_on_delete"] = False
        stack.stack.set_config(f"{PROJECT}:kubeflow", auto.ConfigValue(json.dumps(install)))
        unprotect = stack.up()
        assert not {k: v for k, v in unprotect.changed().items() if v != "update"}, unprotect.changed()
        stack.destroy()
        left = client.CoreV1Api(real_engine.api_client()).list_persistent_volume_claim_for_all_namespaces().items
        assert not left, [f"{c.metadata.namespace}/{c.metadata.name}" for c in left]
    # The cluster as the stack found it (what the stand-ins removed is printed, not hidden).
    after = inventory(real_engine)
    kept = kept_by_helm(real_engine, after - before)
    print(f"kubeflow {edition.value}: removed by the stand-ins: {sorted(removed)}; kept by Helm: {sorted(kept)}")
    assert after - kept == before, {"left": leftovers(real_engine, after - kept - before), "gone": sorted(before - after)}


def stack_loaded_config(values: dict[str, auto.ConfigValue]) -> Any:
    """The StackConfig the program reads from ``values`` (for the test's own setup: pools and storage class)."""
    from gpu_platform.infra.stack.read import stack_config_from

    config = {k: yaml.safe_load(v.value) if v.value[:1] in "{[" else v.value for k, v in values.items()}
    return stack_config_from(config, {k for k, v in values.items() if v.secret}, STACK)
