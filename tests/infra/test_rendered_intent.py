"""Intent, asserted (issue 13 item 5): what the RENDERED objects of each shipped stack must do.

General rules over every rendered object, not a list of today's names. Each stack is rendered
once per session from ../shared/reference/upstream; without it (or kubectl) the tests skip.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from typing import Any

import pytest

from gpu_platform.infra.preview.cluster_checks import DEFAULT_CREDENTIALS, check_default_credentials, collect_objects
from gpu_platform.infra.preview.render import Rendering, render_plan
from gpu_platform.infra.preview.upstream import Sources, load_lock
from gpu_platform.infra.stack.read import load_stack
from tests.conftest import PROJECT_DIR, UPSTREAM_DIR, kubectl_or_skip, load_yaml, shipped_plan, upstream_or_skip

STACKS = sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in (PROJECT_DIR / "stacks").glob("Pulumi.*.yaml"))
PLATFORM_EDITION = pytest.param("platform", marks=pytest.mark.long)
"""The Kubeflow platform edition's rendering (every Kustomize directory of the full platform, with and without the
transforms, then each object written and read back): a minute of CPU on its own, so in the long-runs step of
.ci/run (tests/conftest.py LONG_RUN_GATE), which the test command leaves out."""
EDITIONS = ["pipelines", PLATFORM_EDITION]
MONITOR_KINDS = {"ServiceMonitor": "serviceMonitor", "PodMonitor": "podMonitor", "PrometheusRule": "rule"}


@cache
def _rendered(stack: str) -> tuple[Any, Any, Rendering]:
    config = load_stack(PROJECT_DIR, stack)
    plan = shipped_plan(stack)
    lock = load_lock()
    return config, plan, render_plan(plan, config.kubernetes_version, Sources(lock, upstream_dir=UPSTREAM_DIR), lock)


@pytest.fixture(params=STACKS)
def rendered(request: pytest.FixtureRequest) -> tuple[str, Any, Any, Rendering]:
    upstream_or_skip()
    kubectl_or_skip()
    return (request.param, *_rendered(request.param))


def _bodies(rendering: Rendering, kind: str) -> list[dict[str, Any]]:
    return [o.body for o in rendering.objects if o.kind == kind]


def _matches(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and labels.get(key) in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def test_prometheus_selects_every_monitor_and_rule(rendered: tuple[str, Any, Any, Rendering]) -> None:
    stack, _, _, rendering = rendered
    prometheus = _bodies(rendering, "Prometheus")
    if not prometheus:
        pytest.skip(f"{stack} renders no Prometheus")
    spec = prometheus[0]["spec"]
    namespaces = {b["metadata"]["name"]: (b["metadata"].get("labels") or {}) for b in _bodies(rendering, "Namespace")}
    missed = []
    for o in rendering.objects:
        if o.kind not in MONITOR_KINDS:
            continue
        prefix = MONITOR_KINDS[o.kind]
        labels = o.body["metadata"].get("labels") or {}
        ns = o.namespace or ""
        ns_labels = {"kubernetes.io/metadata.name": ns, **namespaces.get(ns, {})}
        if not (_matches(spec.get(f"{prefix}Selector"), labels) and _matches(spec.get(f"{prefix}NamespaceSelector"), ns_labels)):
            missed.append(f"{o.kind} {ns}/{o.name}")
    assert not missed, f"{stack}: Prometheus does not select {missed}"


def test_grafana_admin_credentials_come_from_a_secret(rendered: tuple[str, Any, Any, Rendering]) -> None:
    stack, _, _, rendering = rendered
    grafana = [b for b in _bodies(rendering, "Deployment") if "grafana" in b["metadata"]["name"]]
    if not grafana:
        pytest.skip(f"{stack} renders no Grafana")
    env = {e["name"]: e for c in grafana[0]["spec"]["template"]["spec"]["containers"] for e in c.get("env") or []}
    for name in ("GF_SECURITY_ADMIN_USER", "GF_SECURITY_ADMIN_PASSWORD"):
        assert "secretKeyRef" in (env[name].get("valueFrom") or {}), f"{stack}: {name} is not from a Secret"
        assert "value" not in env[name]


def test_dcgm_runs_only_on_gpu_nodes_and_probes_late_enough(rendered: tuple[str, Any, Any, Rendering]) -> None:
    stack, _, _, rendering = rendered
    dcgm = [b for b in _bodies(rendering, "DaemonSet") if "dcgm" in b["metadata"]["name"]]
    if not dcgm:
        pytest.skip(f"{stack} renders no DCGM exporter")
    pod = dcgm[0]["spec"]["template"]["spec"]
    required = ((pod.get("affinity") or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    keys = {e["key"] for t in required.get("nodeSelectorTerms") or [] for e in t.get("matchExpressions") or []}
    keys |= set((pod.get("nodeSelector") or {}).keys())
    assert keys & {"cloud.google.com/gke-accelerator", "nvidia.com/gpu.present", "k8s.amazonaws.com/accelerator", "nvidia.com/gpu"}, (
        f"{stack}: DCGM is not bound to GPU nodes ({keys})"
    )
    for c in pod["containers"]:
        for probe in ("livenessProbe", "readinessProbe"):
            if probe in c:
                assert c[probe].get("initialDelaySeconds", 0) >= 20, f"{stack}: {probe} too early"


def test_no_upstream_default_credential_survives(rendered: tuple[str, Any, Any, Rendering]) -> None:
    stack, _, plan, rendering = rendered
    findings = list(check_default_credentials(collect_objects(plan, [], rendering)))
    assert not findings, f"{stack}: {[f.message for f in findings]}"
    assert DEFAULT_CREDENTIALS, "the check's list of upstream defaults is empty"


# --- more of what the rendered objects must do ----------------------------------------------------


def _objects(plan: Any, rendering: Rendering) -> list[Any]:
    from gpu_platform.infra.preview.manifests import kubernetes_objects

    return collect_objects(plan, kubernetes_objects(plan), rendering)


def test_prometheus_selects_the_monitors_and_rules_the_plan_declares_too(rendered: tuple[str, Any, Any, Rendering]) -> None:
    stack, _, plan, rendering = rendered
    (prometheus,) = _bodies(rendering, "Prometheus") or [None]
    assert prometheus is not None, f"{stack} renders no Prometheus"
    spec = prometheus["spec"]
    namespaces = {o.name: (o.body["metadata"].get("labels") or {}) for o in _objects(plan, rendering) if o.kind == "Namespace"}
    declared = [o for o in _objects(plan, rendering) if o.kind in MONITOR_KINDS and not o.rendered]
    assert declared, f"{stack}: the plan declares no monitor or rule (the GPU alerts are one)"
    for o in declared:
        prefix = MONITOR_KINDS[o.kind]
        ns_labels = {"kubernetes.io/metadata.name": o.namespace or "", **namespaces.get(o.namespace or "", {})}
        assert _matches(spec.get(f"{prefix}Selector"), o.body["metadata"].get("labels") or {}), o.label
        assert _matches(spec.get(f"{prefix}NamespaceSelector"), ns_labels), o.label


def test_grafana_reads_its_admin_from_the_secret_the_component_creates(rendered: tuple[str, Any, Any, Rendering]) -> None:
    stack, _, plan, rendering = rendered
    grafana_deployments = [b for b in _bodies(rendering, "Deployment") if any(c.get("name") == "grafana" for c in b["spec"]["template"]["spec"]["containers"])]
    assert len(grafana_deployments) == 1, f"{stack}: {[b['metadata']['name'] for b in _bodies(rendering, 'Deployment')]}"
    (grafana,) = grafana_deployments
    namespace = grafana["metadata"]["namespace"]
    secrets = {o.name for o in _objects(plan, rendering) if o.kind == "Secret" and not o.rendered and o.namespace == namespace}
    env = {e["name"]: e for c in grafana["spec"]["template"]["spec"]["containers"] for e in c.get("env") or []}
    for name in ("GF_SECURITY_ADMIN_USER", "GF_SECURITY_ADMIN_PASSWORD"):
        assert env[name]["valueFrom"]["secretKeyRef"]["name"] in secrets, f"{stack}: {name} reads no Secret of the plan ({secrets})"
    for o in rendering.objects:
        for c in (((o.body.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or []:
            for e in c.get("env") or []:
                assert not (e["name"] == "GF_SECURITY_ADMIN_PASSWORD" and "value" in e), f"{stack}: {o.label} has a plaintext admin password"


def _tolerates(tolerations: list[dict[str, Any]], taint: Any) -> bool:
    for t in tolerations:
        if t.get("operator") == "Exists" and not t.get("key"):
            return True
        if t.get("key") != taint.key or (t.get("effect") and t["effect"] != str(taint.effect.value if hasattr(taint.effect, "value") else taint.effect)):
            continue
        if t.get("operator") == "Exists" or t.get("value") == taint.value:
            return True
    return False


def test_dcgm_tolerates_every_gpu_pool_taint_and_selects_the_clouds_accelerator_label(rendered: tuple[str, Any, Any, Rendering]) -> None:
    stack, config, _, rendering = rendered
    (dcgm,) = [b for b in _bodies(rendering, "DaemonSet") if "dcgm" in b["metadata"]["name"]] or [None]
    if dcgm is None:
        pytest.skip(f"{stack} collects GPU metrics without the exporter")
    pod = dcgm["spec"]["template"]["spec"]
    label = "cloud.google.com/gke-accelerator" if config.cloud.value == "gcp" else "k8s.amazonaws.com/accelerator"
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert all(any(e["key"] == label and e["operator"] == "Exists" for e in t["matchExpressions"]) for t in terms), terms
    gpu_pools = [p for p in config.pool_shapes() if p.gpus_per_node]
    assert gpu_pools
    for pool in gpu_pools:
        for taint in pool.taints:
            assert _tolerates(pod.get("tolerations") or [], taint), f"{stack}: DCGM does not tolerate {pool.name}'s taint {taint}"


def test_the_adapter_serves_each_gpu_metric_with_exactly_one_rule(rendered: tuple[str, Any, Any, Rendering]) -> None:
    import re

    import yaml

    from gpu_platform.components.monitoring.prometheus_args import GPU_CUSTOM_METRICS

    stack, _, plan, rendering = rendered
    adapter = [o for o in rendering.objects if o.kind == "ConfigMap" and "adapter" in o.name and "config.yaml" in (o.body.get("data") or {})]
    assert len(adapter) == 1, f"{stack}: {[o.label for o in adapter]}"
    rules = yaml.safe_load(adapter[0].body["data"]["config.yaml"]).get("rules") or []
    asked = set(GPU_CUSTOM_METRICS) | {
        m["pods"]["metric"]["name"]
        for o in _objects(plan, rendering)
        if o.kind == "HorizontalPodAutoscaler"
        for m in (o.body.get("spec") or {}).get("metrics") or []
        if m.get("type") == "Pods"
    }

    def served(rule: dict[str, Any]) -> set[str]:
        series = re.findall(r"^([A-Za-z_:][A-Za-z0-9_:]*)", rule.get("seriesQuery", ""))
        name = rule.get("name") or {}
        return {re.sub(name.get("matches", "^(.*)$"), name.get("as", r"\1").replace("$1", r"\1"), s) for s in series}

    for metric in sorted(asked):
        serving = [r for r in rules if metric in served(r)]
        assert len(serving) == 1, f"{stack}: {metric} is served by {len(serving)} adapter rules"
    # The adapter's APIService (Kueue's chart adds its own, v1beta2.visibility.kueue.x-k8s.io, on queued stacks).
    (service,) = [o for o in rendering.objects if o.kind == "APIService" and o.name.endswith(".custom.metrics.k8s.io")]
    assert service.api_version == "apiregistration.k8s.io/v1" and service.name == "v1beta1.custom.metrics.k8s.io"


def test_the_autoscaler_runs_with_the_typed_flags_and_its_irsa_role(rendered: tuple[str, Any, Any, Rendering]) -> None:
    stack, config, plan, rendering = rendered
    if config.cloud.value != "aws":
        pytest.skip("GKE runs its autoscaler outside the cluster")
    if config.eks_node_groups.provisioner.value == "karpenter":
        pytest.skip("Karpenter provisions this stack (test_karpenter_names_the_cluster_and_the_queue_and_its_pools_the_typed_classes)")
    settings = config.eks_node_groups.autoscaler
    (deployment,) = [o for o in rendering.objects if o.kind == "Deployment" and "cluster-autoscaler" in o.name]
    (container,) = deployment.body["spec"]["template"]["spec"]["containers"]
    flags = set(container.get("command", []) + container.get("args", []))
    expected = {
        f"--expander={','.join(e.value for e in settings.expanders)}",
        f"--max-node-provision-time={settings.max_node_provision_time}",
        f"--scale-down-unneeded-time={settings.scale_down_unneeded_time}",
        f"--scale-down-delay-after-add={settings.scale_down_delay_after_add}",
        f"--balance-similar-node-groups={str(settings.balance_similar_node_groups).lower()}",
        f"--skip-nodes-with-system-pods={str(settings.skip_nodes_with_system_pods).lower()}",
        f"--skip-nodes-with-local-storage={str(settings.skip_nodes_with_local_storage).lower()}",
    }
    assert expected <= flags, f"{stack}: missing {expected - flags}"
    assert deployment.namespace == settings.namespace
    account = deployment.body["spec"]["template"]["spec"]["serviceAccountName"]
    (sa,) = [o for o in rendering.objects if o.kind == "ServiceAccount" and o.name == account]
    role_arn = sa.body["metadata"]["annotations"]["eks.amazonaws.com/role-arn"]
    roles = {f"arn:aws:iam::123456789012:role/{r.name}" for r in plan.resources if r.type == "aws:iam/role:Role"}
    assert role_arn in roles, f"{stack}: {role_arn} is not a role of the plan"
    priorities = [o for o in _objects(plan, rendering) if o.kind == "ConfigMap" and o.name == "cluster-autoscaler-priority-expander"]
    assert [o.namespace for o in priorities] == [settings.namespace]


def test_karpenter_names_the_cluster_and_the_queue_and_its_pools_the_typed_classes(rendered: tuple[str, Any, Any, Rendering]) -> None:
    """The rendered controller's env names the stack's cluster and interruption queue, its service account the
    plan's IRSA role; every NodePool's limits, taints and capacity type equal the typed class's tier (a drift in
    either the NodePool or the class fails here)."""
    from gpu_platform.components.core.labels import KARPENTER_CAPACITY_LABEL
    from gpu_platform.components.karpenter.plan import plan_node_pools

    stack, config, plan, rendering = rendered
    if config.cloud.value != "aws" or config.eks_node_groups.provisioner.value != "karpenter":
        pytest.skip("the cluster autoscaler provisions this stack")
    settings = config.eks_node_groups.karpenter
    (deployment,) = [o for o in rendering.objects if o.kind == "Deployment" and o.name == "karpenter"]
    assert deployment.namespace == settings.namespace
    (container,) = deployment.body["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e.get("value") for e in container.get("env", [])}
    (queue,) = [r for r in plan.resources if r.type == "aws:sqs/queue:Queue"]
    assert env["CLUSTER_NAME"] == config.eks.cluster_name, stack
    assert env["INTERRUPTION_QUEUE"] == queue.inputs["name"] == config.eks.cluster_name, stack
    account = deployment.body["spec"]["template"]["spec"]["serviceAccountName"]
    (sa,) = [o for o in rendering.objects if o.kind == "ServiceAccount" and o.name == account]
    roles = {f"arn:aws:iam::123456789012:role/{r.name}" for r in plan.resources if r.type == "aws:iam/role:Role"}
    assert sa.body["metadata"]["annotations"]["eks.amazonaws.com/role-arn"] in roles
    # The controller runs on the system node group, never on nodes it provisions.
    selector = deployment.body["spec"]["template"]["spec"]["nodeSelector"]
    assert selector["eks.amazonaws.com/nodegroup"] == config.eks.system_node_group.name
    pools = {o.name: o.body["spec"] for o in _objects(plan, rendering) if o.kind == "NodePool"}
    typed = plan_node_pools(config.eks_node_groups)
    assert set(pools) == {p.name for p in typed}
    for pool in typed:
        spec = pools[pool.name]
        shape = pool.cls.instance_shape
        assert spec["limits"] == {
            "cpu": str(shape.vcpus * pool.max_nodes),
            "memory": f"{shape.memory_mib * pool.max_nodes}Mi",
            "nvidia.com/gpu": str(shape.gpu_count * pool.max_nodes),
        }, pool.name
        taints = [{"key": t.key, "value": t.value, "effect": t.effect.value} for t in pool.cls.node_taints()]
        assert spec["template"]["spec"]["taints"] == taints, pool.name
        capacity = [r["values"] for r in spec["template"]["spec"]["requirements"] if r["key"] == KARPENTER_CAPACITY_LABEL]
        assert capacity == [[pool.capacity.value]], pool.name
        assert spec["template"]["metadata"]["labels"] == pool.cls.node_labels(pool.capacity), pool.name
    # Spot first: every class's spot pool outweighs its on-demand twin.
    for spot in (p for p in typed if p.capacity.value == "spot"):
        twin = pools.get(f"{spot.cls.name}-on-demand")
        assert twin is None or pools[spot.name]["weight"] > twin["weight"]


def test_every_rule_of_the_stack_reads_only_scraped_metrics(rendered: tuple[str, Any, Any, Rendering]) -> None:
    from gpu_platform.infra.preview.cluster_checks import check_alert_metrics

    stack, _, plan, rendering = rendered
    assert not [f.message for f in check_alert_metrics(_objects(plan, rendering))], stack


# --- Kubeflow: every transform changes what it targets; no default survives, both editions --------


@cache
def _kubeflow(edition: str) -> tuple[Any, Any, Rendering, Rendering]:
    """(stack config, plan, rendering with the transforms, rendering without them)."""
    import dataclasses
    import tempfile
    from pathlib import Path

    from gpu_platform.infra.preview.engine import Plan, run_program
    from gpu_platform.infra.stack.read import read_stack_file
    from tests.infra.test_render import platform_variant

    lock = load_lock()
    sources = Sources(lock, upstream_dir=UPSTREAM_DIR)
    rendering: Rendering | None = None
    if edition == "pipelines":
        # The shipped prod-eks stack, rendered once for this file by _rendered (the stack tests render it too).
        config, plan, rendering = _rendered("prod-eks")
    else:
        # The variant's project folder is only read here: removed once read, so no run leaves it behind.
        with tempfile.TemporaryDirectory(prefix="gpu-platform-platform-") as folder:
            root, stack = platform_variant(Path(folder)), "prod-eks-platform"
            config_values, secret_keys = read_stack_file(root, stack)
            plan = run_program(root, stack, config_values, secret_keys)
            config = load_stack(root, stack)
    directories = [r for r in plan.resources if r.type == "kubernetes:kustomize/v2:Directory"]
    bare = Plan(plan.stack, [dataclasses.replace(r, transforms=[]) for r in directories], {})
    if rendering is None:
        rendering = render_plan(plan, config.kubernetes_version, sources, lock)
    return config, plan, rendering, render_plan(bare, config.kubernetes_version, sources, lock)


@pytest.mark.parametrize("edition", EDITIONS)
def test_every_kubeflow_transform_changes_the_objects_it_targets(edition: str) -> None:
    from gpu_platform.components.kubeflow.transforms import edition_credentials, empty_field_transform, rendered_object_transforms

    upstream_or_skip()
    kubectl_or_skip()
    config, _, _, bare = _kubeflow(edition)
    args = config.kubeflow.install
    assert args.edition.value == edition
    steps = rendered_object_transforms(
        args,
        dex_password_hash="$2b$12$" + "a" * 53,
        oidc_client_secret="secret",
        credentials={c: "generated" for c in edition_credentials(args.edition)},
    )
    raw = [o.body for o in bare.objects]
    assert raw, "nothing rendered"
    for i, step in enumerate(steps):
        if step is empty_field_transform and edition == "pipelines":
            # Pipelines 2.17.0 ships no empty rules/data; the platform edition's case asserts it matches there.
            continue
        assert any(step(body) is not None for body in raw), f"{edition}: transform {i} matches no rendered object"


@pytest.mark.parametrize("edition", EDITIONS)
def test_no_upstream_default_credential_survives_either_edition(edition: str) -> None:
    upstream_or_skip()
    kubectl_or_skip()
    _, plan, rendering, bare = _kubeflow(edition)
    assert list(check_default_credentials(collect_objects(plan, [], bare))), "the check finds nothing upstream ships"
    assert not [f.message for f in check_default_credentials(collect_objects(plan, [], rendering))]
    claims = [o for o in rendering.objects if o.kind == "PersistentVolumeClaim" and o.protect]
    assert claims, f"{edition}: no pipeline claim is protected"


# --- what --manifests and --json write: valid objects, Secrets masked at their keys -----------


def _secret_values(value: Any, inside: bool = False) -> set[str]:
    """Every leaf Pulumi marks secret, and every value of a Secret's data/stringData."""
    import base64
    import binascii

    from gpu_platform.infra.preview.engine import SECRET_SIG

    found: set[str] = set()
    if isinstance(value, dict):
        if SECRET_SIG.items() <= value.items():
            return _secret_values(value.get("value"), True)
        secret = value.get("kind") == "Secret"
        for k, v in value.items():
            found |= _secret_values(v, inside or (secret and k in ("data", "stringData")))
            if secret and k == "data" and isinstance(v, dict):
                for encoded in v.values():
                    try:
                        found.add(base64.b64decode(str(encoded), validate=True).decode("utf-8", "replace"))
                    except (binascii.Error, ValueError):
                        pass
    elif isinstance(value, list):
        for v in value:
            found |= _secret_values(v, inside)
    elif inside and isinstance(value, str):
        found.add(value)
    return found


_READ_BACK: dict[bytes, Any] = {}
"""The documents the written-manifest check has read, by their bytes, for this file's tests (emptied after them)."""


@pytest.fixture(autouse=True, scope="module")
def _read_back_once() -> Iterator[None]:
    yield
    _READ_BACK.clear()


def _read_back(data: bytes) -> Any:
    """``data`` parsed (load_yaml), once per content: the checks only read what it gives."""
    if data not in _READ_BACK:
        _READ_BACK[data] = load_yaml(data)
    return _READ_BACK[data]


def _check_written(stack: str, config: Any, plan: Any, rendering: Rendering) -> None:
    import json
    from dataclasses import dataclass
    from types import SimpleNamespace

    from gpu_platform.infra.preview.manifests import MASK, MASK_BASE64, ObjectView, kubernetes_objects, manifest_files, masked, rendered_json, validate_objects

    @dataclass(frozen=True)
    class Written(ObjectView):
        body: dict[str, Any]
        owner: Any

    objects = kubernetes_objects(plan)
    files = manifest_files(objects, rendering)
    assert len(files) == len(objects) + len(rendering.objects)
    # libyaml reads the files back (a conforming parser, as kubectl's is; PyYAML's pure-Python one took
    # two thirds of this check's time on the CRDs); each document must still parse to the object. A document
    # written byte for byte the same by an earlier stack (the charts' CRDs, two thirds of the bytes) is read once.
    written = [Written(_read_back(data), SimpleNamespace(name=name)) for name, data in files.items()]
    findings = validate_objects(written, config.kubernetes_version, crds=rendering.crds)
    assert [f.message for f in findings if f.validated] == [], f"{stack}: a written manifest is not a valid object"
    unchecked = [f.message for f in findings if not f.validated]
    assert not [m for m in unchecked if "Secret" in m], unchecked
    secrets = [w for w in written if w.kind == "Secret"]
    assert secrets, f"{stack}: no Secret written"
    for w in secrets:
        assert set((w.body.get("stringData") or {}).values()) <= {MASK}, w.body
        assert set((w.body.get("data") or {}).values()) <= {MASK_BASE64}, w.body
    values = _secret_values([r.inputs for r in plan.resources]) | _secret_values(plan.outputs)
    values |= _secret_values([o.body for o in rendering.objects])
    values = {v for v in values if len(v) >= 6 and v not in (MASK, MASK_BASE64)}
    assert values, f"{stack}: the plan holds no secret to look for"
    document = json.dumps(masked({**plan.to_json(), "rendered": rendered_json(rendering)}))
    texts = [data.decode("utf-8") for data in files.values()] + [document]
    for text in texts:
        assert "4dabf18193072939515e22adb298388d" not in text, "the engine's secret wrapper is not written"
        leaked = [v for v in values if v in text]
        assert not leaked, f"{stack}: secret values written: {leaked[:3]}"


def test_every_manifest_written_is_a_valid_object_with_its_secrets_masked(rendered: tuple[str, Any, Any, Rendering]) -> None:
    _check_written(*rendered)


@pytest.mark.long  # the platform edition's rendering: see PLATFORM_EDITION
def test_the_platform_edition_manifests_are_valid_with_their_secrets_masked() -> None:
    upstream_or_skip()
    kubectl_or_skip()
    config, plan, rendering, _ = _kubeflow("platform")
    _check_written("prod-eks-platform", config, plan, rendering)
