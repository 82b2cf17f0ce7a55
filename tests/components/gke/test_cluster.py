"""GpuGkeCluster under the recording mock engine: what it declares, as the engine sees it."""

from __future__ import annotations

import base64
from typing import Any

import pulumi
import pytest
import yaml

from gpu_platform.components import GpuGkeCluster, GpuGkeClusterArgs
from gpu_platform.components.gke.resources import compute_class_spec
from tests.conftest import Engine, settled
from tests.factories import a100_pool, gke, t4_pool

TOKEN = "gpu-platform:gpu_gke_cluster:GpuGkeCluster"


def build(name: str = "ml", **overrides: Any) -> GpuGkeCluster:
    return GpuGkeCluster(name, GpuGkeClusterArgs.model_validate(gke(**overrides)))


def wait(cluster: GpuGkeCluster) -> pulumi.Output[Any]:
    return pulumi.Output.all(
        settled(cluster, cluster.provider, *cluster.node_pools.values(), *cluster.compute_class_resources.values()),
        cluster.kubeconfig,
    )


@pulumi.runtime.test
def test_seed_gpu_pool(engine: Engine) -> pulumi.Output[Any]:
    cluster = build()

    def check(_: Any) -> None:
        pool = engine.resource("ml-t4").inputs
        node = pool["nodeConfig"]
        assert node["machineType"] == "n1-standard-4"
        (acc,) = node["guestAccelerators"]
        assert acc["type"] == "nvidia-tesla-t4" and acc["count"] == 2
        assert acc["gpuDriverInstallationConfig"] == {"gpuDriverVersion": "DEFAULT"}
        assert {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"} in node["taints"]
        assert pool["autoscaling"] == {"minNodeCount": 1, "maxNodeCount": 20, "locationPolicy": "BALANCED"}
        assert node["imageType"] == "COS_CONTAINERD"
        assert node["gcfsConfig"] == {"enabled": True}
        assert node["spot"] is False
        assert pool["name"] == "t4" and pool["cluster"] == "ml" and pool["location"] == "us-central1"
        assert pool["initialNodeCount"] == 1

    return wait(cluster).apply(check)


@pulumi.runtime.test
def test_cluster_settings(engine: Engine) -> pulumi.Output[Any]:
    cluster = build(deletion_protection=False)

    def check(_: Any) -> None:
        c = engine.resource("ml-cluster")
        i = c.inputs
        assert i["location"] == "us-central1"
        assert i["nodeLocations"] == ["us-central1-b", "us-central1-c"]
        assert i["releaseChannel"] == {"channel": "STABLE"}
        assert i["clusterAutoscaling"] == {"autoscalingProfile": "OPTIMIZE_UTILIZATION"}
        assert "enabled" not in i["clusterAutoscaling"]  # node auto-provisioning stays off
        assert i["removeDefaultNodePool"] is True and i["initialNodeCount"] == 1
        assert i["workloadIdentityConfig"] == {"workloadPool": "test-project.svc.id.goog"}
        assert i["deletionProtection"] is False
        assert not c.protect
        assert i["networkingMode"] == "VPC_NATIVE"
        assert i["datapathProvider"] == "ADVANCED_DATAPATH"  # Dataplane V2 enforces the tenants' NetworkPolicies
        assert "privateClusterConfig" not in i and "masterAuthorizedNetworksConfig" not in i

    return wait(cluster).apply(check)


@pulumi.runtime.test
def test_the_legacy_datapath_when_dataplane_v2_is_off(engine: Engine) -> pulumi.Output[Any]:
    cluster = build(dataplane_v2=False)

    def check(_: Any) -> None:
        assert "datapathProvider" not in engine.resource("ml-cluster").inputs

    return wait(cluster).apply(check)


@pulumi.runtime.test
def test_deletion_protection_protects_the_cluster(engine: Engine) -> pulumi.Output[Any]:
    cluster = build()

    def check(_: Any) -> None:
        c = engine.resource("ml-cluster")
        assert c.inputs["deletionProtection"] is True
        assert c.protect

    return wait(cluster).apply(check)


@pulumi.runtime.test
def test_private_control_plane(engine: Engine) -> pulumi.Output[Any]:
    cluster = build(
        control_plane={
            "private_nodes": True,
            "private_endpoint": True,
            "master_ipv4_cidr_block": "172.16.0.32/28",
            "authorized_networks": [{"cidr_block": "10.10.0.0/16", "display_name": "corp"}],
        }
    )

    def check(_: Any) -> None:
        i = engine.resource("ml-cluster").inputs
        assert i["privateClusterConfig"] == {
            "enablePrivateNodes": True,
            "enablePrivateEndpoint": True,
            "masterIpv4CidrBlock": "172.16.0.32/28",
        }
        assert i["masterAuthorizedNetworksConfig"] == {"cidrBlocks": [{"cidrBlock": "10.10.0.0/16", "displayName": "corp"}]}
        assert not engine.of_type("gcp:compute/routerNat:RouterNat")  # cloud_nat is opt-in

    return wait(cluster).apply(check)


@pulumi.runtime.test
def test_cloud_nat_for_private_nodes(engine: Engine) -> pulumi.Output[Any]:
    cluster = build(control_plane={"private_nodes": True}, cloud_nat=True, network="ml-net")

    def check(_: Any) -> None:
        router = engine.resource("ml-router").inputs
        assert (router["network"], router["region"]) == ("ml-net", "us-central1")
        nat = engine.resource("ml-nat")
        assert nat.inputs["natIpAllocateOption"] == "AUTO_ONLY"
        assert nat.inputs["sourceSubnetworkIpRangesToNat"] == "ALL_SUBNETWORKS_ALL_IP_RANGES"
        assert nat.urn in engine.resource("ml-cluster").depends_on  # nodes come up with egress

    return wait(cluster).apply(check)


@pulumi.runtime.test
def test_node_service_account_is_dedicated(engine: Engine) -> pulumi.Output[Any]:
    cluster = build(cluster_name="rapids-development-cluster-east")

    def check(_: Any) -> None:
        account = engine.resource("ml-nodes").inputs
        assert account["accountId"] == "rapids-development-clust-nodes"  # <cluster name cut to 24>-nodes
        email = "rapids-development-clust-nodes@test-project.iam.gserviceaccount.com"
        roles = {r.inputs["role"]: r.inputs["member"] for r in engine.of_type("gcp:projects/iAMMember:IAMMember")}
        assert roles == {
            "roles/container.defaultNodeServiceAccount": f"serviceAccount:{email}",
            "roles/artifactregistry.reader": f"serviceAccount:{email}",
            "roles/serviceusage.serviceUsageConsumer": f"serviceAccount:{email}",
        }
        for pool in engine.of_type("gcp:container/nodePool:NodePool"):
            assert pool.inputs["nodeConfig"]["serviceAccount"] == email
            assert pool.inputs["nodeConfig"]["workloadMetadataConfig"] == {"mode": "GKE_METADATA"}
        assert engine.resource("ml-cluster").inputs["nodeConfig"]["serviceAccount"] == email

    return wait(cluster).apply(check)


@pulumi.runtime.test
def test_image_streaming_off_drops_its_role_and_api(engine: Engine) -> pulumi.Output[Any]:
    cluster = build(
        gpu_pools=[t4_pool(image_streaming=False)],
        system_pool={"image_streaming": False},
        artifact_registry_access=False,
        extra_node_roles=["roles/storage.objectViewer"],
    )

    def check(_: Any) -> None:
        roles = sorted(r.inputs["role"] for r in engine.of_type("gcp:projects/iAMMember:IAMMember"))
        assert roles == ["roles/container.defaultNodeServiceAccount", "roles/storage.objectViewer"]
        services = sorted(s.inputs["service"] for s in engine.of_type("gcp:projects/service:Service"))
        assert services == ["container.googleapis.com"]
        assert all(s.inputs["disableOnDestroy"] is False for s in engine.of_type("gcp:projects/service:Service"))

    return wait(cluster).apply(check)


@pulumi.runtime.test
def test_spot_then_on_demand_makes_a_pair_and_a_compute_class(engine: Engine) -> pulumi.Output[Any]:
    cluster = build(gpu_pools=[a100_pool()])

    def check(_: Any) -> None:
        spot = engine.resource("ml-a100-spot").inputs
        od = engine.resource("ml-a100-on-demand").inputs
        assert spot["nodeConfig"]["spot"] is True and od["nodeConfig"]["spot"] is False
        assert spot["autoscaling"]["locationPolicy"] == "ANY"
        assert od["autoscaling"]["locationPolicy"] == "BALANCED"
        for pool in (spot, od):
            assert pool["nodeConfig"]["labels"]["cloud.google.com/compute-class"] == "a100"
            assert {"key": "cloud.google.com/compute-class", "value": "a100", "effect": "NO_SCHEDULE"} in pool["nodeConfig"]["taints"]
            assert {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"} in pool["nodeConfig"]["taints"]
            assert pool["autoscaling"]["totalMinNodeCount"] == 0 and pool["autoscaling"]["totalMaxNodeCount"] == 8
            assert pool["nodeConfig"]["guestAccelerators"][0]["count"] == 1  # fixed by a2-highgpu-1g
        cc = engine.resource("ml-a100-compute-class")
        assert cc.type == "kubernetes:cloud.google.com/v1:ComputeClass"
        assert cc.inputs["metadata"]["name"] == "a100"
        assert cc.inputs["spec"]["priorities"] == [{"nodepools": ["a100-spot"]}, {"nodepools": ["a100-on-demand"]}]
        assert cc.inputs["spec"]["whenUnsatisfiable"] == "DoNotScaleUp"
        assert cc.inputs["spec"]["nodePoolAutoCreation"] == {"enabled": False}
        assert cc.provider is not None and cc.provider.endswith("::ml-k8s")
        assert set(cc.depends_on) >= {engine.resource("ml-a100-spot").urn, engine.resource("ml-a100-on-demand").urn}
        assert cluster.compute_classes == {"a100": "a100"}
        placement = cluster.placements["a100"].pod_spec_fields()
        assert placement["nodeSelector"] == {"cloud.google.com/compute-class": "a100"}
        assert {"key": "cloud.google.com/compute-class", "operator": "Equal", "value": "a100", "effect": "NoSchedule"} in placement["tolerations"]

    return wait(cluster).apply(check)


@pulumi.runtime.test
def test_fallback_pool_keeps_no_minimum(engine: Engine) -> pulumi.Output[Any]:
    cluster = build(
        gpu_pools=[
            a100_pool(autoscaling={"scope": "total", "min_nodes": 2, "max_nodes": 8}),
            a100_pool(name="capped", autoscaling={"scope": "total", "min_nodes": 0, "max_nodes": 8}, fallback_max_nodes=2),
        ]
    )

    def check(_: Any) -> None:
        assert engine.resource("ml-a100-spot").inputs["autoscaling"]["totalMinNodeCount"] == 2
        od = engine.resource("ml-a100-on-demand").inputs["autoscaling"]
        assert (od["totalMinNodeCount"], od["totalMaxNodeCount"]) == (0, 8)  # max defaults to the spot pool's
        capped = engine.resource("ml-capped-on-demand").inputs["autoscaling"]
        assert (capped["totalMinNodeCount"], capped["totalMaxNodeCount"]) == (0, 2)
        assert engine.resource("ml-capped-spot").inputs["autoscaling"]["totalMaxNodeCount"] == 8

    return wait(cluster).apply(check)


@pulumi.runtime.test
def test_initial_count_spreads_the_total_minimum_over_the_pool_zones(engine: Engine) -> pulumi.Output[Any]:
    cluster = build(
        gpu_pools=[
            a100_pool(capacity="on_demand", autoscaling={"scope": "total", "min_nodes": 3, "max_nodes": 8}),
            a100_pool(name="one-zone", capacity="on_demand", node_locations=["us-central1-b"], autoscaling={"scope": "total", "min_nodes": 3, "max_nodes": 8}),
            a100_pool(name="tight", capacity="on_demand", autoscaling={"scope": "total", "min_nodes": 1, "max_nodes": 1}),
        ]
    )

    def check(_: Any) -> None:
        assert engine.resource("ml-a100").inputs["initialNodeCount"] == 2  # ceil(3 / 2 zones)
        assert engine.resource("ml-one-zone").inputs["initialNodeCount"] == 3
        assert engine.resource("ml-tight").inputs["initialNodeCount"] == 0  # 1 per zone would exceed the max of 1

    return wait(cluster).apply(check)


@pulumi.runtime.test
def test_spot_pools_default_to_location_policy_any(engine: Engine) -> pulumi.Output[Any]:
    cluster = build(gpu_pools=[t4_pool(capacity="spot"), t4_pool(name="t4-od")])

    def check(_: Any) -> None:
        assert engine.resource("ml-t4").inputs["autoscaling"]["locationPolicy"] == "ANY"
        assert engine.resource("ml-t4").inputs["nodeConfig"]["spot"] is True
        assert engine.resource("ml-t4-od").inputs["autoscaling"]["locationPolicy"] == "BALANCED"
        assert not engine.of_type("kubernetes:cloud.google.com/v1:ComputeClass")
        assert cluster.placements["t4"].node_selector == {"cloud.google.com/gke-nodepool": "t4"}

    return wait(cluster).apply(check)


@pulumi.runtime.test
def test_pool_zones_default_to_the_cluster_zones(engine: Engine) -> pulumi.Output[Any]:
    cluster = build(gpu_pools=[t4_pool(), t4_pool(name="t4-c", node_locations=["us-central1-c"])])

    def check(_: Any) -> None:
        assert "nodeLocations" not in engine.resource("ml-t4").inputs  # inherits the cluster's
        assert engine.resource("ml-t4-c").inputs["nodeLocations"] == ["us-central1-c"]

    return wait(cluster).apply(check)


@pulumi.runtime.test
def test_scheduler_and_system_pools(engine: Engine) -> pulumi.Output[Any]:
    cluster = build(scheduler_pool={})

    def check(_: Any) -> None:
        sched = engine.resource("ml-scheduler").inputs
        assert sched["nodeConfig"]["machineType"] == "n1-standard-2"
        assert sched["nodeConfig"]["guestAccelerators"][0]["count"] == 1
        assert sched["nodeConfig"]["labels"]["dedicated"] == "scheduler"
        assert {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"} in sched["nodeConfig"]["taints"]
        assert sched["autoscaling"] == {"totalMinNodeCount": 0, "totalMaxNodeCount": 4, "locationPolicy": "BALANCED"}
        system = engine.resource("ml-system").inputs
        assert "guestAccelerators" not in system["nodeConfig"]
        assert "taints" not in system["nodeConfig"]  # controllers run here untolerated
        assert system["nodeConfig"]["machineType"] == "e2-standard-4"
        assert cluster.placements["scheduler"].node_selector == {"cloud.google.com/gke-nodepool": "scheduler"}

    return wait(cluster).apply(check)


@pulumi.runtime.test
def test_gpu_features(engine: Engine) -> pulumi.Output[Any]:
    cluster = build(
        gpu_pools=[
            a100_pool(
                name="mig",
                capacity="on_demand",
                gpu_partition_size="1g.5gb",
                node_locations=["us-central1-b"],
                compact_placement=True,
            ),
            # Sharing and MIG are exclusive (components/pools/sharing.py): the time-shared pool is its own.
            a100_pool(name="shared", capacity="on_demand", gpu_sharing={"strategy": "TIME_SHARING", "max_shared_clients_per_gpu": 4}),
            a100_pool(name="dws", capacity="on_demand", queued_provisioning=True),
        ]
    )

    def check(_: Any) -> None:
        mig = engine.resource("ml-mig").inputs
        acc = mig["nodeConfig"]["guestAccelerators"][0]
        assert acc["gpuPartitionSize"] == "1g.5gb"
        assert "gpuSharingConfig" not in acc
        shared = engine.resource("ml-shared").inputs["nodeConfig"]["guestAccelerators"][0]
        assert shared["gpuSharingConfig"] == {"gpuSharingStrategy": "TIME_SHARING", "maxSharedClientsPerGpu": 4}
        assert mig["placementPolicy"] == {"type": "COMPACT"}
        dws = engine.resource("ml-dws").inputs
        assert dws["queuedProvisioning"] == {"enabled": True}
        assert dws["nodeConfig"]["reservationAffinity"] == {"consumeReservationType": "NO_RESERVATION"}
        assert dws["autoscaling"]["locationPolicy"] == "ANY"
        assert dws["autoscaling"]["totalMinNodeCount"] == 0
        assert dws["management"]["autoRepair"] is False

    return wait(cluster).apply(check)


@pulumi.runtime.test
def test_kubeconfig_is_a_secret_in_exec_form(engine: Engine) -> pulumi.Output[Any]:
    cluster = build()

    def check(values: list[Any]) -> None:
        kubeconfig = yaml.safe_load(values[1])
        (c,) = kubeconfig["clusters"]
        assert c["cluster"]["server"] == "https://203.0.113.10"
        assert base64.b64decode(c["cluster"]["certificate-authority-data"])
        (user,) = kubeconfig["users"]
        assert user["user"]["exec"]["command"] == "gke-gcloud-auth-plugin"
        assert user["user"]["exec"]["provideClusterInfo"] is True
        provider = engine.resource("ml-k8s")
        assert provider.type == "pulumi:providers:kubernetes"
        # The kubeconfig reaches the provider as a Pulumi secret, never as plain text.
        assert provider.inputs["kubeconfig"]["4dabf18193072939515e22adb298388d"] == "1b47061264138c4ac30d75fd1eb44270"
        assert provider.inputs["kubeconfig"]["value"] == values[1]

    return wait(cluster).apply(check)


@pulumi.runtime.test
def test_children_are_named_and_parented(engine: Engine) -> pulumi.Output[Any]:
    cluster = build(gpu_pools=[a100_pool()], scheduler_pool={})

    def check(_: Any) -> None:
        component = [r for r in engine.recorded if r.type == TOKEN]
        assert [c.name for c in component] == ["ml"]
        children = [r for r in engine.recorded if r.type != TOKEN]
        assert children
        for r in children:
            assert r.name.startswith("ml-"), r.name
            assert r.parent == component[0].urn, r.name
        assert sorted(cluster.node_pools) == ["a100-on-demand", "a100-spot", "scheduler", "system"]

    return wait(cluster).apply(check)


@pulumi.runtime.test
def test_cluster_name_defaults_to_the_component_name(engine: Engine) -> pulumi.Output[Any]:
    cluster = build("team-a")

    def check(_: Any) -> None:
        assert engine.resource("team-a-cluster").inputs["name"] == "team-a"
        assert engine.resource("team-a-nodes").inputs["accountId"] == "team-a-nodes"

    return wait(cluster).apply(check)


@pulumi.runtime.test
def test_project_defaults_to_the_provider_project(engine: Engine) -> pulumi.Output[Any]:
    cluster = build()
    explicit = build("other", project="explicit-project")

    def check(_: Any) -> None:
        assert engine.resource("ml-cluster").inputs["project"] == "test-project"  # gcp:project
        assert engine.resource("other-cluster").inputs["project"] == "explicit-project"

    return pulumi.Output.all(wait(cluster), wait(explicit)).apply(check)


def test_fails_when_no_project_is_known(engine: Engine) -> None:
    pulumi.runtime.set_all_config({}, [])
    with pytest.raises(pulumi.InputPropertyError) as error:
        build()
    assert error.value.property_path == "args.project" and error.value.reason.startswith("no GCP project")
    assert not engine.recorded  # refused before anything was registered


def test_fails_when_the_component_name_is_no_cluster_name(engine: Engine) -> None:
    with pytest.raises(pulumi.InputPropertyError) as error:
        build("My_Cluster")
    assert error.value.property_path == "args.cluster_name" and error.value.reason.startswith("the default")
    assert not engine.recorded


@pulumi.runtime.test
def test_outputs_are_registered(engine: Engine) -> pulumi.Output[Any]:
    cluster = build(gpu_pools=[a100_pool()])

    def check(values: list[Any]) -> None:
        name, endpoint, email = values[1:]
        assert name == "ml" and endpoint == "203.0.113.10"
        assert email.endswith("@test-project.iam.gserviceaccount.com")

    return pulumi.Output.all(wait(cluster), cluster.cluster_name, cluster.endpoint, cluster.node_service_account_email).apply(check)


def test_compute_class_spec_orders_spot_first() -> None:
    spec = compute_class_spec(["x-spot", "x-on-demand"], migrate_back=True)
    assert [p["nodepools"] for p in spec["priorities"]] == [["x-spot"], ["x-on-demand"]]
    assert all(len(p) == 1 for p in spec["priorities"])  # a nodepools rule may carry no other field
    assert spec["activeMigration"] == {"optimizeRulePriority": True}


@pulumi.runtime.test
def test_managed_dcgm_metrics(engine: Engine) -> pulumi.Output[Any]:
    cluster = build(managed_dcgm_metrics=True)
    plain = build("plain")

    def check(_: Any) -> None:
        assert engine.resource("ml-cluster").inputs["monitoringConfig"] == {
            "enableComponents": ["SYSTEM_COMPONENTS", "DCGM"],
            "managedPrometheus": {"enabled": True},
        }
        assert "monitoringConfig" not in engine.resource("plain-cluster").inputs

    return pulumi.Output.all(wait(cluster), wait(plain)).apply(check)


@pulumi.runtime.test
def test_the_cluster_resource_and_its_identifiers_are_outputs(engine: Engine) -> pulumi.Output[Any]:
    cluster = build()

    def check(values: list[Any]) -> None:
        cluster_id, ca, pool = values
        (gke,) = engine.of_type("gcp:container/cluster:Cluster")
        assert cluster.cluster.urn is not None and gke.name == "ml-cluster"
        assert cluster_id == "ml-cluster-id"
        assert ca == gke.inputs.get("masterAuth", {}).get("clusterCaCertificate", ca)
        assert pool == gke.inputs["workloadIdentityConfig"]["workloadPool"] == "test-project.svc.id.goog"

    return pulumi.Output.all(wait(cluster), cluster.cluster_id, cluster.ca_certificate, cluster.workload_identity_pool).apply(lambda v: check(v[1:]))
