"""The components for every Pulumi language (components/provider/provider.py, PulumiPlugin.yaml): the
schema the SDK's analyzer infers from the exposed layer, and ``construct`` as the engine calls
it for a TypeScript, Go or YAML program (camelCase keys, integers as floats, nested objects
that arrive as Outputs), under the recording engine and with no Pulumi CLI."""

from __future__ import annotations

import asyncio
import functools
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml
from pulumi.output import _OutputData
from pulumi.provider.server import ComponentInitError
from pulumi.runtime.rpc import UNKNOWN

from gpu_platform.components import (
    EksCluster,
    EksClusterArgs,
    GpuGkeCluster,
    GpuGkeClusterArgs,
    SpotFailoverEksNodeGroups,
    SpotFailoverEksNodeGroupsArgs,
)
from gpu_platform.components.core.outputs import component_outputs
from gpu_platform.components.provider.provider import EXPOSED, PACKAGE, GpuPlatformProvider, camel_case
from gpu_platform.infra.testing import ProgramPlan, preview_program, run_components
from tests.conftest import PROJECT_DIR
from tests.factories import eks, eks_node_groups, gke, t4_pool


@functools.cache
def provider() -> GpuPlatformProvider:
    """The provider, made once by the worker that runs this file (its analyzer reads every exposed component:
    made at import, every test worker paid for it while collecting)."""
    return GpuPlatformProvider()


def schema() -> dict[str, Any]:
    return provider().schema_spec


def as_other_languages_send(value: Any, *, keep: frozenset[str] = frozenset()) -> Any:
    """A Python-API value as construct receives it: camelCase keys (not map keys such as zones)
    and every number a float."""
    if isinstance(value, dict):
        return {(k if k in keep else camel_case(k)): as_other_languages_send(v, keep=keep) for k, v in value.items()}
    if isinstance(value, list):
        return [as_other_languages_send(v, keep=keep) for v in value]
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def custom_resources(plan: ProgramPlan) -> list[tuple[str, str, str]]:
    """The plan's cloud and Kubernetes resources, by type, name and inputs (not the component levels)."""
    return sorted((r.type, r.name, repr(r.inputs)) for r in plan.resources if r.custom)


def as_the_provider_server_sends(value: Any, *, depends_on: pulumi.Resource) -> pulumi.Output[Any]:
    """An input with dependencies as ProviderServicer._select_value hands it to construct: one
    Output, already resolved, carrying the dependency (and the value's unknowns)."""
    future: asyncio.Future[_OutputData[Any]] = asyncio.get_event_loop().create_future()
    future.set_result(_OutputData(resources={depends_on}, value=value, is_known=True, is_secret=False))
    return pulumi.Output._from_data(future)


def construct(component: str, inputs: dict[str, Any], name: str = "c", options: pulumi.ResourceOptions | None = None) -> Any:
    return provider().construct(name, f"{PACKAGE}:index:{component}", inputs, options)


# --- the schema ---------------------------------------------------------------------------------


def test_the_schema_has_every_exposed_component_under_the_index_module() -> None:
    assert sorted(schema()["resources"]) == sorted(f"{PACKAGE}:index:{c.__name__}" for c in EXPOSED)
    assert {c.__name__ for c in EXPOSED} == {
        "GpuGkeCluster",
        "EksCluster",
        "SpotFailoverEksNodeGroups",
        "PrometheusStack",
        "DcgmExporter",
        "DaskOperator",
        "KubeflowInstall",
        "GpuUtilizationAutoscaler",
        "Headlamp",
        "KarpenterNodePools",
        "GpuInferenceService",
        "AwsLoadBalancerController",
    }
    assert all(r["isComponent"] for r in schema()["resources"].values())


@pytest.mark.parametrize(("component", "model"), [("GpuGkeCluster", GpuGkeClusterArgs), ("EksCluster", EksClusterArgs)])
def test_every_input_of_the_python_args_is_in_the_schema_with_its_docstring(component: str, model: Any) -> None:
    resource = schema()["resources"][f"{PACKAGE}:index:{component}"]
    inputs = resource["inputProperties"]
    for name, info in model.model_fields.items():
        prop = inputs[camel_case(name)]
        assert prop["description"] == info.description, name
        assert (camel_case(name) in resource.get("requiredInputs", [])) == info.is_required(), name


def test_every_input_output_type_and_enum_value_is_described() -> None:
    undescribed = [token for token, r in schema()["resources"].items() if not r.get("description")]
    for token, resource in schema()["resources"].items():
        for section in ("inputProperties", "properties"):
            undescribed += [f"{token}.{k}" for k, p in resource.get(section, {}).items() if not p.get("description")]
    for token, typ in schema()["types"].items():
        undescribed += [token] if not typ.get("description") else []
        undescribed += [f"{token}.{k}" for k, p in typ.get("properties", {}).items() if not p.get("description")]
        undescribed += [f"{token}={e['value']}" for e in typ.get("enum", []) if not e.get("description")]
    assert undescribed == []


def test_outputs_are_the_python_components_outputs_other_languages_can_hold() -> None:
    outputs = schema()["resources"][f"{PACKAGE}:index:GpuGkeCluster"]["properties"]
    python = {camel_case(o.name): o.description for o in component_outputs(GpuGkeCluster)}
    assert {"kubeconfig", "clusterName", "endpoint", "clusterId", "caCertificate", "workloadIdentityPool", "cluster", "nodePools", "placements"} <= set(outputs)
    for key, prop in outputs.items():
        assert prop["description"] == python.get(key, prop["description"]) and prop["description"], key
    assert outputs["poolShapes"]["items"]["$ref"] == f"#/types/{PACKAGE}:index:NodePoolShape"
    assert outputs["cluster"]["$ref"].endswith("#/resources/gcp:container%2Fcluster:Cluster")
    assert outputs["kubeconfig"]["type"] == "string"


def test_type_names_are_unique_and_typed_without_unions() -> None:
    types = schema()["types"]
    assert len({t.rsplit(":", 1)[1] for t in types}) == len(types)
    pool = types[f"{PACKAGE}:index:GpuNodePoolArgs"]["properties"]
    assert pool["acceleratorCount"]["type"] == "integer"
    assert pool["capacity"]["$ref"] == f"#/types/{PACKAGE}:index:CapacityStrategy"
    assert pool["shape"]["$ref"] == f"#/types/{PACKAGE}:index:MachineShapeArgs"
    network = schema()["resources"][f"{PACKAGE}:index:GpuGkeCluster"]["inputProperties"]["network"]
    assert network["type"] == "string" and not network.get("plain"), "an Output of another resource may be passed"


def test_the_repository_is_a_source_based_package() -> None:
    manifest = yaml.safe_load((PROJECT_DIR / "PulumiPlugin.yaml").read_text())
    assert manifest == {"runtime": "python", "main": "infra/plugin/"}
    entry = PROJECT_DIR / "infra" / "plugin"
    assert "from gpu_platform.components.provider.provider import main" in (entry / "__main__.py").read_text()
    assert "-e ../.." in (entry / "requirements.txt").read_text().splitlines()


# --- construct ----------------------------------------------------------------------------------


def test_construct_with_camel_case_and_float_inputs_builds_what_the_python_api_builds() -> None:
    args = gke(
        project="ml-platform",
        gpu_pools=[
            {
                "name": "t4",
                "machine_type": "n1-standard-4",
                "accelerator_type": "nvidia-tesla-t4",
                "accelerator_count": 2,
                "autoscaling": {"scope": "per_zone", "min_nodes": 1, "max_nodes": 20},
                "labels": {"example.com/team": "ml"},
            },
            {
                "name": "a100",
                "machine_type": "a2-highgpu-1g",
                "accelerator_type": "nvidia-tesla-a100",
                "capacity": "spot_then_on_demand",
                "autoscaling": {"scope": "total", "max_nodes": 8},
            },
        ],
    )
    python = run_components(lambda: GpuGkeCluster("c", GpuGkeClusterArgs.model_validate(args)))
    other = run_components(lambda: construct("GpuGkeCluster", as_other_languages_send(args, keep=frozenset({"example.com/team"}))))
    other.assert_no_violations()
    assert custom_resources(other) == custom_resources(python)
    assert len(custom_resources(python)) > 10
    assert [r.type for r in other.resources if not r.custom] == ["gpu-platform:gpu_gke_cluster:GpuGkeCluster", f"{PACKAGE}:index:GpuGkeCluster"]


def test_an_eks_vpc_made_in_the_program_arrives_as_one_output_and_keeps_its_dependencies() -> None:
    """A YAML or TypeScript program passes ``vpc: {vpcId: ${vpc.id}, ...}``: the engine sends the whole
    object as one Output (it depends on the VPC), which the SDK alone would empty."""
    zones = {"ap-northeast-2a": "subnet-0a1b2c3d", "ap-northeast-2c": "subnet-0c1b2c3d"}
    vpc = {"vpc_id": "vpc-0123456789abcdef0", "private_subnet_ids": zones}
    args = {**eks(), "vpc": vpc}
    python = run_components(lambda: EksCluster("c", EksClusterArgs.model_validate(args), gpu_instance_types=["g4dn.xlarge"]))

    def program() -> Any:
        network = pulumi.CustomResource("aws:ec2/vpc:Vpc", "vpc", {"cidrBlock": "10.0.0.0/16"})
        wire = as_other_languages_send(args, keep=frozenset(zones))
        wire["vpc"] = as_the_provider_server_sends(wire["vpc"], depends_on=network)
        return construct("EksCluster", {**wire, "gpuInstanceTypes": ["g4dn.xlarge"]})

    other = run_components(program)
    assert [r for r in custom_resources(other) if r[0] != "aws:ec2/vpc:Vpc"] == custom_resources(python)
    (cluster,) = other.of_type("aws:eks/cluster:Cluster")
    assert cluster.inputs["vpcConfig"]["subnetIds"] == ["subnet-0a1b2c3d", "subnet-0c1b2c3d"]
    assert any(urn.endswith("aws:ec2/vpc:Vpc::vpc") for urn in cluster.depends_on), "the subnets keep the VPC's dependency"


def test_eks_node_groups_join_the_cluster_through_its_ref_output_as_in_python() -> None:
    """A TypeScript program: ``new SpotFailoverEksNodeGroups("c-gpu", {cluster: eks.ref, classes: [...]},
    {providers: [eks.provider]})``. The node groups and the autoscaler are the Python API's, and they
    wait for what they waited for in Python (the CNI add-on; the system node group), carried by ref."""
    groups = eks_node_groups()

    def python() -> None:
        args = SpotFailoverEksNodeGroupsArgs.model_validate(groups)
        cluster = EksCluster("c", EksClusterArgs.model_validate(eks()), gpu_instance_types=args.instance_types())
        SpotFailoverEksNodeGroups("c-gpu", args, opts=pulumi.ResourceOptions(providers=[cluster.provider]), cluster=cluster.ref)

    def other() -> None:
        types = SpotFailoverEksNodeGroupsArgs.model_validate(groups).instance_types()
        cluster = construct("EksCluster", {**as_other_languages_send(eks()), "gpuInstanceTypes": types})
        assert set(cluster.state["ref"]) == {"clusterName", "region", "nodeRoleArn", "subnetIds", "oidcProviderArn", "oidcIssuer", "version"}
        construct(
            "SpotFailoverEksNodeGroups",
            {**as_other_languages_send(groups), "cluster": cluster.state["ref"]},
            "c-gpu",
            pulumi.ResourceOptions(providers=[cluster.state["provider"]]),
        )

    expected, got = run_components(python), run_components(other)
    got.assert_no_violations()
    assert custom_resources(got) == custom_resources(expected)
    assert any(r[0] == "aws:eks/nodeGroup:NodeGroup" and "small-spot" in r[1] for r in custom_resources(got))
    for plan in (expected, got):
        spot = next(r for r in plan.of_type("aws:eks/nodeGroup:NodeGroup") if r.name == "c-gpu-small-spot")
        assert waits_for(plan, spot, "aws:eks/addon:Addon::c-vpc-cni")
        (release,) = [r for r in plan.of_type("kubernetes:helm.sh/v3:Release") if "autoscaler" in r.name]
        assert waits_for(plan, release, "aws:eks/nodeGroup:NodeGroup::c-system")


def test_monitoring_from_another_language_builds_what_python_builds() -> None:
    """PrometheusStack with the monitored cluster as an object and the Grafana password as a secret,
    and DcgmExporter waiting for the stack's release (a resource reference across the languages)."""
    from gpu_platform.components import DcgmExporter, DcgmExporterArgs, MetricSource, MonitoredCluster, PrometheusStack, PrometheusStackArgs

    def python() -> None:
        cluster = MonitoredCluster(kind="eks", sources=frozenset({MetricSource.DCGM_EXPORTER, MetricSource.CLUSTER_AUTOSCALER}))
        stack = PrometheusStack("mon", PrometheusStackArgs(), grafana_admin_password=pulumi.Output.secret("pw"), cluster=cluster)
        DcgmExporter("dcgm", DcgmExporterArgs(node_selection="gke"), service_monitor_crd=stack.release)

    def other() -> None:
        stack = construct(
            "PrometheusStack",
            {
                "cluster": {"kind": "eks", "sources": ["dcgm-exporter", "cluster-autoscaler"]},
                "grafanaAdminPassword": pulumi.Output.secret("pw"),
            },
            "mon",
        )
        assert set(stack.state) >= {"namespace", "prometheusUrl", "grafanaServiceName", "release", "adapter"}
        construct("DcgmExporter", {"nodeSelection": "gke", "serviceMonitorCrd": stack.state["release"]}, "dcgm")

    expected, got = run_components(python), run_components(other)
    assert custom_resources(got) == custom_resources(expected)
    (release,) = [r for r in got.of_type("kubernetes:helm.sh/v3:Release") if r.name == "dcgm-release"]
    assert waits_for(got, release, "kubernetes:helm.sh/v3:Release::mon-release")


def test_dask_and_kubeflow_are_placed_by_the_clusters_pool_shapes_as_in_python() -> None:
    """``new DaskOperator("dask", {tenants, pools: gke.poolShapes})`` and KubeflowInstall on the GPU pools:
    the same placement, quotas and fit checks as the Python API fed with ``pool_shapes()``."""
    from gpu_platform.components import DaskOperator, DaskOperatorArgs, KubeflowInstall, KubeflowInstallArgs

    training = {
        "labels": {"gpu-platform.io/workload": "training"},
        "taints": [{"key": "gpu-platform.io/workload", "value": "training", "effect": "NoSchedule"}],
    }
    cluster_args = gke(project="ml-platform", scheduler_pool={}, gpu_pools=[t4_pool(**training)])
    dask = {
        "tenants": [
            {"name": "team-a", "gpu_quota": 8, "notebook": {"gpus": 1}},
            {"name": "team-b", "gpu_quota": 4, "shared_cluster": {"name": "shared", "max_workers": 2}},
        ]
    }

    def python() -> None:
        args = GpuGkeClusterArgs.model_validate(cluster_args)
        GpuGkeCluster("c", args)
        shapes = args.pool_shapes()
        DaskOperator("dask", DaskOperatorArgs.model_validate(dask), pools=shapes)
        KubeflowInstall("kf", KubeflowInstallArgs(), training_pools=[p for p in shapes if p.role.value == "gpu"])

    def other() -> None:
        cluster = construct("GpuGkeCluster", as_other_languages_send(cluster_args))
        shapes = cluster.state["poolShapes"]
        assert [p["role"] for p in shapes] == ["system", "scheduler", "gpu"]
        construct("DaskOperator", {**as_other_languages_send(dask), "pools": as_other_languages_send(shapes)}, "dask")
        construct("KubeflowInstall", {"trainingPools": [p for p in shapes if p["role"] == "gpu"]}, "kf")

    expected, got = run_components(python), run_components(other)
    assert custom_resources(got) == custom_resources(expected)
    assert any(r[0] == "kubernetes:core/v1:ResourceQuota" for r in custom_resources(got))


def test_a_worker_that_fits_no_pool_is_refused_from_another_language_too() -> None:
    raised: list[BaseException] = []

    def program() -> None:
        cluster = construct("GpuGkeCluster", as_other_languages_send(gke(project="ml-platform")))
        try:
            construct("DaskOperator", {"workerMemory": "900Gi", "pools": cluster.state["poolShapes"]}, "dask")
        except ComponentInitError as exc:
            raised.append(exc.__context__)

    run_components(program)
    (error,) = raised
    assert isinstance(error, pulumi.InputPropertyError), error
    assert "worker_memory 900Gi of the Dask workers fits no node of pool t4" in error.reason


def test_a_bad_live_input_names_its_camel_case_key() -> None:
    raised: list[BaseException] = []

    def program() -> None:
        try:
            construct("PrometheusStack", {"cluster": {"kind": "aks"}, "grafanaAdminPassword": "pw"}, "mon")
        except ComponentInitError as exc:
            raised.append(exc.__context__)

    run_components(program)
    (error,) = raised
    assert isinstance(error, pulumi.InputPropertyError)
    assert error.property_path == "cluster.kind" and "'gke' or 'eks'" in error.reason


def waits_for(plan: ProgramPlan, resource: Any, urn_suffix: str) -> bool:
    """Whether ``resource`` is created after the resource whose URN ends with ``urn_suffix``
    (directly or through what it depends on)."""
    by_urn = {r.urn: r for r in plan.resources}
    seen: set[str] = set()
    todo = list(resource.depends_on)
    while todo:
        urn = todo.pop()
        if urn.endswith(urn_suffix):
            return True
        if urn not in seen and urn in by_urn:
            seen.add(urn)
            todo += by_urn[urn].depends_on
    return False


@pytest.mark.parametrize(
    ("inputs", "path", "reason"),
    [
        (
            {
                "gpuPools": [
                    {
                        "name": "t4",
                        "machineType": "n1-standard-4",
                        "acceleratorType": "nvidia-tesla-t4",
                        "acceleratorCount": 3.0,
                        "autoscaling": {"scope": "total", "maxNodes": 2.0},
                    }
                ]
            },
            "gpuPools[0].acceleratorCount",
            "accelerator_count 3 is not offered",
        ),
        (
            {
                "gpuPools": [
                    {
                        "name": "t4",
                        "machineType": "n1-standard-4",
                        "acceleratorType": "nvidia-tesla-t4",
                        "acceleratorCount": 1.0,
                        "autoscaling": {"scope": "total", "maxNodes": 2.5},
                    }
                ]
            },
            "gpuPools[0].autoscaling.maxNodes",
            "valid integer",
        ),
        (
            {
                "gpuPools": [
                    {
                        "name": "t4",
                        "machineType": "n1-standard-4",
                        "acceleratorType": "nvidia-tesla-t4",
                        "acceleratorCount": 1.0,
                        "autoscaling": {"scope": "total", "maxNodes": UNKNOWN},
                    }
                ]
            },
            "gpuPools[0].autoscaling.maxNodes",
            "must be known when GpuGkeCluster is constructed",
        ),
        (
            {
                "gpuPools": [
                    {
                        "name": "t4",
                        "machineType": "n1-standard-4",
                        "acceleratorType": "nvidia-tesla-t4",
                        "acceleratorCount": 1.0,
                        "autoscalng": {"scope": "total", "maxNodes": 2.0},
                    }
                ]
            },
            "gpuPools[0].autoscalng",
            "Extra inputs are not permitted",
        ),
        (
            {
                "gpuPools": [
                    {
                        "name": "t4",
                        "machineType": "n1-standard-4",
                        "acceleratorType": "nvidia-tesla-t4",
                        "acceleratorCount": 1.0,
                        "autoscalng": {"scope": "total", "maxNodes": 2.0},
                    }
                ]
            },
            "gpuPools[0].autoscaling",
            "Field required",
        ),
    ],
)
def test_bad_input_from_another_language_names_the_camel_case_key(inputs: dict[str, Any], path: str, reason: str) -> None:
    raised: list[BaseException] = []

    def program() -> None:
        try:
            construct("GpuGkeCluster", {"location": "us-central1", "project": "ml-platform", **inputs})
        except ComponentInitError as exc:
            raised.append(exc.__context__)  # the SDK raises it while handling the component's error

    plan = run_components(program)
    (error,) = raised
    if isinstance(error, pulumi.InputPropertiesError):
        problems = {e["property_path"]: e["reason"] for e in error.errors or []}
    else:
        assert isinstance(error, pulumi.InputPropertyError), error
        problems = {error.property_path: error.reason}
    assert reason in problems[path], problems
    assert [r for r in plan.resources if r.custom] == [], "bad input registers nothing"


# --- the YAML example -------------------------------------------------------------------------


def _yaml_program(path: Path) -> Any:
    """Run a Pulumi YAML program's resources of this package through ``construct``, as the YAML
    runtime does (its numbers are floats). Literal properties only: what the example uses."""
    document = yaml.safe_load(path.read_text())
    assert document["runtime"] == "yaml" and document["packages"] == {PACKAGE: "../.."}

    def program() -> None:
        for name, resource in document["resources"].items():
            package, _, kind = resource["type"].partition(":")
            assert package == PACKAGE, resource["type"]
            properties = as_other_languages_send(resource.get("properties", {}), keep=frozenset())
            assert "${" not in repr(properties), "the example's properties are literal"
            result = construct(kind.removeprefix("index:"), properties, name)
            pulumi.export(name, result.urn)

    return program


def test_the_yaml_example_plans_what_the_python_consumer_example_plans() -> None:
    python = preview_program(PROJECT_DIR / "examples" / "consumer")
    other = run_components(_yaml_program(PROJECT_DIR / "examples" / "yaml" / "Pulumi.yaml"))
    other.assert_no_violations()
    assert custom_resources(other) == custom_resources(python)
    assert len(custom_resources(python)) >= 10


def test_the_plugin_entry_point_serves_the_schema_over_grpc_as_pulumi_package_add_asks() -> None:
    """`pulumi package add` runs PulumiPlugin.yaml's entry point and calls GetSchema on the port it
    prints: done here with the SDK's own gRPC stubs, no CLI."""
    import json
    import subprocess
    import sys

    import grpc
    from pulumi.runtime.proto import provider_pb2, provider_pb2_grpc

    entry = PROJECT_DIR / "infra" / "plugin" / "__main__.py"
    proc = subprocess.Popen([sys.executable, str(entry), "127.0.0.1:1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline().strip())
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            reply = provider_pb2_grpc.ResourceProviderStub(channel).GetSchema(provider_pb2.GetSchemaRequest(version=0), timeout=30)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    served = json.loads(reply.schema)
    assert served["name"] == PACKAGE
    assert sorted(served["resources"]) == sorted(schema()["resources"])
    assert served["types"] == schema()["types"]


def test_the_inference_service_from_another_language_builds_what_python_builds() -> None:
    """``new GpuInferenceService("inf", {image, pool, cluster: {kind: "gke", pools: gke.poolShapes}, prometheusRuleCrd})``:
    the same Deployment, Service, Ingress, HPA and alert as the Python API given the cluster component."""
    from gpu_platform.components import MonitoredCluster, PrometheusStack, PrometheusStackArgs
    from gpu_platform.components.inference.service import GpuInferenceService, GpuInferenceServiceArgs

    cluster_args = gke(project="ml-platform")
    service = {"image": "nvcr.io/nvidia/tritonserver:25.01-py3", "pool": "t4", "max_replicas": 3}

    def python() -> None:
        cluster = GpuGkeCluster("c", GpuGkeClusterArgs.model_validate(cluster_args))
        stack = PrometheusStack("mon", PrometheusStackArgs(), grafana_admin_password=pulumi.Output.secret("pw"), cluster=MonitoredCluster(kind="gke"))
        GpuInferenceService("inf", GpuInferenceServiceArgs.model_validate(service), cluster=cluster, prometheus_rule_crd=stack.release)

    def other() -> None:
        cluster = construct("GpuGkeCluster", as_other_languages_send(cluster_args))
        stack = construct("PrometheusStack", {"cluster": {"kind": "gke"}, "grafanaAdminPassword": pulumi.Output.secret("pw")}, "mon")
        built = construct(
            "GpuInferenceService",
            {
                **as_other_languages_send(service),
                "cluster": {"kind": "gke", "pools": cluster.state["poolShapes"]},
                "prometheusRuleCrd": stack.state["release"],
            },
            "inf",
        )
        assert set(built.state) >= {"deployment", "service", "serviceAddress"}

    expected, got = run_components(python), run_components(other)
    assert custom_resources(got) == custom_resources(expected)
    kinds = {r[0] for r in custom_resources(got) if r[1].startswith("inf-")}
    assert {
        "kubernetes:apps/v1:Deployment",
        "kubernetes:core/v1:Service",
        "kubernetes:networking.k8s.io/v1:Ingress",
        "kubernetes:autoscaling/v2:HorizontalPodAutoscaler",
        "kubernetes:monitoring.coreos.com/v1:PrometheusRule",
    } <= kinds
    (alert,) = [r for r in got.resources if r.type == "kubernetes:monitoring.coreos.com/v1:PrometheusRule" and r.name.startswith("inf-")]
    assert waits_for(got, alert, "kubernetes:helm.sh/v3:Release::mon-release")


def test_the_new_inputs_are_in_the_schema_in_camel_case_with_their_docs() -> None:
    """GpuInferenceService's args and live inputs, and KubeflowInstall's ingressController, documented as in Python."""
    from gpu_platform.components.inference.service import GpuInferenceServiceArgs

    resource = schema()["resources"][f"{PACKAGE}:index:GpuInferenceService"]
    inputs = resource["inputProperties"]
    for name, info in GpuInferenceServiceArgs.model_fields.items():
        assert inputs[camel_case(name)]["description"] == info.description, name
    assert sorted(resource["requiredInputs"]) == ["cluster", "image"]
    assert inputs["cluster"]["$ref"] == f"#/types/{PACKAGE}:index:ClusterPoolsTarget"
    assert inputs["maxReplicas"]["type"] == "integer" and inputs["saturatedFor"]["type"] == "string"
    for key in ("ingressController", "prometheusRuleCrd"):
        assert inputs[key]["$ref"].endswith("#/resources/kubernetes:helm.sh%2Fv3:Release") and inputs[key]["description"], key
    target = schema()["types"][f"{PACKAGE}:index:ClusterPoolsTarget"]
    assert sorted(target["required"]) == ["kind", "pools"]
    assert target["properties"]["pools"]["items"]["$ref"] == f"#/types/{PACKAGE}:index:NodePoolShape"
    assert {"deployment", "service", "serviceAddress"} <= set(resource["properties"])
    kubeflow = schema()["resources"][f"{PACKAGE}:index:KubeflowInstall"]["inputProperties"]["ingressController"]
    assert kubeflow["description"].startswith("What acts on the UI's ALB Ingress")


def test_the_kubeflow_alb_ingress_waits_for_the_controller_given_from_another_language() -> None:
    """``ingressController``: a Helm release (the AWS Load Balancer Controller's) the UI's Ingress waits for."""
    import pulumi_kubernetes as k8s

    ingress = {
        "hostname": "kubeflow.corp.example",
        "certificateArn": "arn:aws:acm:us-west-2:123456789012:certificate/0a1b2c3d-0000-1111-2222-333344445555",
        "cognitoUserPoolArn": "arn:aws:cognito-idp:us-west-2:123456789012:userpool/us-west-2_AbCdEf",
        "cognitoUserPoolClientId": "4example",
        "cognitoUserPoolDomain": "corp-kubeflow",
    }
    pools = as_other_languages_send(_plain_shapes())

    def other() -> None:
        controller = k8s.helm.v3.Release(
            "alb",
            k8s.helm.v3.ReleaseArgs(
                chart="aws-load-balancer-controller",
                version="3.5.0",
                namespace="kube-system",
                repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo="https://aws.github.io/eks-charts"),
            ),
        )
        construct("KubeflowInstall", {"trainingPools": pools, "ingress": ingress, "ingressController": controller}, "kf")

    got = run_components(other)
    (kf_ingress,) = [r for r in got.resources if r.type == "kubernetes:networking.k8s.io/v1:Ingress"]
    assert kf_ingress.name == "kf-ingress"
    assert waits_for(got, kf_ingress, "kubernetes:helm.sh/v3:Release::alb")


def _plain_shapes() -> list[dict[str, Any]]:
    """GKE pool shapes with a training pool, as the poolShapes output carries them."""
    from gpu_platform.components.provider.provider import _plain

    training = {
        "labels": {"gpu-platform.io/workload": "training"},
        "taints": [{"key": "gpu-platform.io/workload", "value": "training", "effect": "NoSchedule"}],
    }
    args = GpuGkeClusterArgs.model_validate(gke(project="ml-platform", gpu_pools=[t4_pool(**training)]))
    return [_plain(p) for p in args.pool_shapes() if p.role.value == "gpu"]


def test_the_load_balancer_controller_from_another_language_builds_what_python_builds() -> None:
    """``new AwsLoadBalancerController("alb", {cluster: eks.ref, vpcId: eks.vpcId, pools: eks.poolShapes, iamPolicy},
    {providers: [eks.provider]})``: the Python API's role, policy and release (naming the cluster, its region and
    VPC, on the system node group), waiting for the system node group and CoreDNS as in Python."""
    import json

    from gpu_platform.components.load_balancer.controller import AwsLoadBalancerController, AwsLoadBalancerControllerArgs

    policy = json.dumps(
        {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": ["elasticloadbalancing:DescribeLoadBalancers"], "Resource": "*"}]}
    )

    def python() -> None:
        cluster = EksCluster("c", EksClusterArgs.model_validate(eks()))
        AwsLoadBalancerController("alb", AwsLoadBalancerControllerArgs(replicas=3), cluster=cluster, iam_policy=policy)

    def other() -> None:
        cluster = construct("EksCluster", as_other_languages_send(eks()))
        construct(
            "AwsLoadBalancerController",
            {
                "replicas": 3.0,
                "cluster": cluster.state["ref"],
                "vpcId": cluster.state["vpcId"],
                "pools": cluster.state["poolShapes"],
                "iamPolicy": policy,
            },
            "alb",
            pulumi.ResourceOptions(providers=[cluster.state["provider"]]),
        )

    expected, got = run_components(python), run_components(other)
    got.assert_no_violations()
    assert custom_resources(got) == custom_resources(expected)
    for label, plan in (("python", expected), ("other", got)):
        (release,) = [r for r in plan.of_type("kubernetes:helm.sh/v3:Release") if r.name == "alb-release"]
        assert release.inputs["values"]["nodeSelector"] == {"eks.amazonaws.com/nodegroup": "system"}
        assert release.inputs["values"]["replicaCount"] == 3
        assert waits_for(plan, release, "aws:eks/nodeGroup:NodeGroup::c-system"), (label, release.depends_on)


def test_kubeflow_credentials_brought_from_another_language_replace_the_generated_ones() -> None:
    """``new KubeflowInstall("kf", {trainingPools, credentialsSecret, credentials: {"database-password": secret}})``:
    the same plan as the Python API given the same, so no RandomPassword, from either."""
    from gpu_platform.components import KubeflowInstall, KubeflowInstallArgs

    training = {
        "labels": {"gpu-platform.io/workload": "training"},
        "taints": [{"key": "gpu-platform.io/workload", "value": "training", "effect": "NoSchedule"}],
    }
    cluster_args = gke(project="ml-platform", gpu_pools=[t4_pool(**training)])
    secret_ref = {"namespace": "team-secrets", "name": "kubeflow-credentials"}

    def python() -> None:
        args = GpuGkeClusterArgs.model_validate(cluster_args)
        GpuGkeCluster("c", args)
        pools = [p for p in args.pool_shapes() if p.role.value == "gpu"]
        KubeflowInstall(
            "kf",
            KubeflowInstallArgs.model_validate({"credentials_secret": secret_ref}),
            training_pools=pools,
            credentials={"database-password": pulumi.Output.secret("teamDatabasePassword01")},
        )

    def other() -> None:
        cluster = construct("GpuGkeCluster", as_other_languages_send(cluster_args))
        construct(
            "KubeflowInstall",
            {
                "trainingPools": [p for p in cluster.state["poolShapes"] if p["role"] == "gpu"],
                "credentialsSecret": secret_ref,
                "credentials": {"database-password": pulumi.Output.secret("teamDatabasePassword01")},
            },
            "kf",
        )

    expected, got = run_components(python), run_components(other)
    assert custom_resources(got) == custom_resources(expected)
    assert not [r for r in got.resources if r.type == "random:index/randomPassword:RandomPassword"]
    inputs = schema()["resources"][f"{PACKAGE}:index:KubeflowInstall"]["inputProperties"]
    assert {"credentials", "credentialsSecret"} <= set(inputs)
