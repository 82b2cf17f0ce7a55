"""GpuGkeCluster's mapping to provider resources: the cluster's and node pools' settings through
pulumi_gcp's typed Args, the ComputeClass spec and the kubeconfig. Pure functions of the Args."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_gcp as gcp

from gpu_platform.components.core.kube import exec_kubeconfig
from gpu_platform.components.gke.args import (
    CLOUD_PLATFORM_SCOPE,
    GpuDriverVersion,
    GpuGkeClusterArgs,
    GpuNodePoolArgs,
    LocationPolicy,
)
from gpu_platform.components.gke.pool_args import _PoolBase
from gpu_platform.components.pools.ladders import CapacityRung, RungKind
from gpu_platform.components.pools.shapes import (
    ENVIRONMENT_LABEL,
    AutoscalingBounds,
    BoundsScope,
    Taint,
)

__all__ = ["RESERVATION_NAME_KEY", "cluster_args", "compute_class_spec", "gke_kubeconfig", "node_pool_args", "reservation_affinity"]


def compute_class_spec(node_pools: Sequence[str], migrate_back: bool) -> dict[str, Any]:
    """The ComputeClass spec that makes GKE try ``node_pools`` in order: one per rung of a capacity
    ladder, first rung first (spot_then_on_demand: the spot pool, then its on-demand twin).

    A ``nodepools`` priority may carry no other field, and pools listed in one entry have
    no order, so each pool is its own entry; what a rung buys (a reservation, flex-start, spot)
    is its node pool's own setting. Auto-creation is off: only these pools serve the class, and
    ``DoNotScaleUp`` keeps GKE from scaling any other pool for it. ``activeMigration`` moves pods
    back to a higher rung's pool when its capacity returns (migrate_back_to_spot).
    """
    return {
        "priorities": [{"nodepools": [pool]} for pool in node_pools],
        "nodePoolAutoCreation": {"enabled": False},
        "activeMigration": {"optimizeRulePriority": migrate_back},
        "whenUnsatisfiable": "DoNotScaleUp",
    }


RESERVATION_NAME_KEY = "compute.googleapis.com/reservation-name"
"""The reservation_affinity key that targets a SPECIFIC_RESERVATION by name (pulumi_gcp's NodePoolNodeConfigReservationAffinityArgs)."""


def reservation_affinity(rung: CapacityRung, queued: bool) -> gcp.container.NodePoolNodeConfigReservationAffinityArgs | None:
    """The node pool's reservation affinity: a named reservation SPECIFIC_RESERVATION, any reservation ANY_RESERVATION
    (which falls back to on-demand), flex-start and queued provisioning NO_RESERVATION; otherwise unset (GKE's default)."""
    if queued or rung.kind is RungKind.FLEX_START:
        return gcp.container.NodePoolNodeConfigReservationAffinityArgs(consume_reservation_type="NO_RESERVATION")
    if rung.kind is not RungKind.RESERVATION:
        return None
    if rung.reservation is None:
        return gcp.container.NodePoolNodeConfigReservationAffinityArgs(consume_reservation_type="ANY_RESERVATION")
    return gcp.container.NodePoolNodeConfigReservationAffinityArgs(
        consume_reservation_type="SPECIFIC_RESERVATION", key=RESERVATION_NAME_KEY, values=[rung.reservation]
    )


def gke_kubeconfig(cluster_name: str, endpoint: str, ca_certificate: str) -> str:
    """A kubeconfig in the exec form with gke-gcloud-auth-plugin."""
    return exec_kubeconfig(
        cluster_name,
        f"https://{endpoint}",
        ca_certificate,
        {
            "command": "gke-gcloud-auth-plugin",
            "installHint": "Install gke-gcloud-auth-plugin: gcloud components install gke-gcloud-auth-plugin",
            "provideClusterInfo": True,
        },
    )


def cluster_args(args: GpuGkeClusterArgs, *, cluster_name: str, project: pulumi.Input[str], service_account: pulumi.Input[str]) -> gcp.container.ClusterArgs:
    """The GKE cluster's settings from the Args: VPC-native, Workload Identity, shielded nodes, the
    release channel and autoscaling profile, private nodes and authorized networks as configured, and
    the default pool removed at once (every pool is declared as its own NodePool)."""
    cp = args.control_plane
    private = None
    if cp.private_nodes:
        private = gcp.container.ClusterPrivateClusterConfigArgs(
            enable_private_nodes=True,
            enable_private_endpoint=cp.private_endpoint,
            master_ipv4_cidr_block=cp.master_ipv4_cidr_block,
        )
    authorized = None
    if cp.authorized_networks:
        authorized = gcp.container.ClusterMasterAuthorizedNetworksConfigArgs(
            cidr_blocks=[
                gcp.container.ClusterMasterAuthorizedNetworksConfigCidrBlockArgs(cidr_block=n.cidr_block, display_name=n.display_name or None)
                for n in cp.authorized_networks
            ]
        )

    return gcp.container.ClusterArgs(
        name=cluster_name,
        project=project,
        location=args.location,
        node_locations=args.node_locations or None,
        # GKE needs a pool at creation; it is removed at once and every pool is declared below.
        remove_default_node_pool=True,
        initial_node_count=1,
        node_config=gcp.container.ClusterNodeConfigArgs(
            service_account=service_account,
            oauth_scopes=[CLOUD_PLATFORM_SCOPE],
            workload_metadata_config=gcp.container.ClusterNodeConfigWorkloadMetadataConfigArgs(mode="GKE_METADATA"),
        ),
        release_channel=gcp.container.ClusterReleaseChannelArgs(channel=args.release_channel.value),
        min_master_version=args.min_master_version,
        cluster_autoscaling=gcp.container.ClusterClusterAutoscalingArgs(autoscaling_profile=args.autoscaling_profile.value),
        workload_identity_config=gcp.container.ClusterWorkloadIdentityConfigArgs(
            workload_pool=pulumi.Output.concat(project, ".svc.id.goog") if isinstance(project, pulumi.Output) else f"{project}.svc.id.goog"
        ),
        deletion_protection=args.deletion_protection,
        network=args.network,
        subnetwork=args.subnetwork,
        networking_mode="VPC_NATIVE",
        # Dataplane V2 enforces NetworkPolicy; the legacy datapath ignores it.
        datapath_provider="ADVANCED_DATAPATH" if args.dataplane_v2 else None,
        ip_allocation_policy=gcp.container.ClusterIpAllocationPolicyArgs(),
        private_cluster_config=private,
        master_authorized_networks_config=authorized,
        enable_shielded_nodes=True,
        resource_labels=({**args.resource_labels, **({ENVIRONMENT_LABEL: args.environment.value} if args.environment else {})} or None),
        addons_config=(
            gcp.container.ClusterAddonsConfigArgs(gcs_fuse_csi_driver_config=gcp.container.ClusterAddonsConfigGcsFuseCsiDriverConfigArgs(enabled=True))
            if args.gcs_fuse_csi_driver
            else None
        ),
        monitoring_config=(
            gcp.container.ClusterMonitoringConfigArgs(
                enable_components=["SYSTEM_COMPONENTS", "DCGM"],
                managed_prometheus=gcp.container.ClusterMonitoringConfigManagedPrometheusArgs(enabled=True),
            )
            if args.managed_dcgm_metrics
            else None
        ),
    )


def node_pool_args(
    *,
    pool: _PoolBase,
    gke_name: str,
    cluster: gcp.container.Cluster,
    project: pulumi.Input[str],
    location: str,
    service_account: pulumi.Input[str],
    rung: CapacityRung,
    labels: dict[str, str],
    taints: list[Taint],
    gpu: GpuNodePoolArgs | None,
    bounds: AutoscalingBounds,
    initial_nodes: int,
) -> gcp.container.NodePoolArgs:
    queued = gpu is not None and gpu.queued_provisioning
    spot = rung.kind is RungKind.SPOT
    # GKE's flex-start how-to creates its node pools with --location-policy=ANY, --reservation-affinity=none and
    # --no-enable-autorepair: a flex-start pool takes capacity in any zone, consumes no reservation, and is not repaired.
    flex = rung.kind is RungKind.FLEX_START
    if bounds.scope is BoundsScope.PER_ZONE:
        autoscaling = gcp.container.NodePoolAutoscalingArgs(
            min_node_count=bounds.min_nodes,
            max_node_count=bounds.max_nodes,
            location_policy=pool.effective_location_policy(spot or flex).value,
        )
    else:
        autoscaling = gcp.container.NodePoolAutoscalingArgs(
            total_min_node_count=bounds.min_nodes,
            total_max_node_count=bounds.max_nodes,
            location_policy=(LocationPolicy.ANY if queued else pool.effective_location_policy(spot or flex)).value,
        )

    accelerators = None
    if gpu is not None:
        accelerators = [
            gcp.container.NodePoolNodeConfigGuestAcceleratorArgs(
                type=gpu.accelerator_type,
                count=gpu.gpus_per_node,
                gpu_driver_installation_config=gcp.container.NodePoolNodeConfigGuestAcceleratorGpuDriverInstallationConfigArgs(
                    gpu_driver_version=gpu.driver_version.value
                ),
                gpu_sharing_config=(
                    gcp.container.NodePoolNodeConfigGuestAcceleratorGpuSharingConfigArgs(
                        gpu_sharing_strategy=gpu.gpu_sharing.strategy.value,
                        max_shared_clients_per_gpu=gpu.gpu_sharing.max_shared_clients_per_gpu,
                    )
                    if gpu.gpu_sharing
                    else None
                ),
                gpu_partition_size=gpu.gpu_partition_size,
            )
        ]

    return gcp.container.NodePoolArgs(
        name=gke_name,
        cluster=cluster.name,
        project=project,
        location=location,
        node_locations=pool.node_locations,
        initial_node_count=initial_nodes,  # the plan's (gke_plan.PlannedNodePool.initial_nodes)
        autoscaling=autoscaling,
        management=gcp.container.NodePoolManagementArgs(auto_repair=not (queued or flex), auto_upgrade=True),
        upgrade_settings=gcp.container.NodePoolUpgradeSettingsArgs(strategy="SURGE", max_surge=1, max_unavailable=0),
        placement_policy=(gcp.container.NodePoolPlacementPolicyArgs(type="COMPACT") if gpu is not None and gpu.compact_placement else None),
        queued_provisioning=gcp.container.NodePoolQueuedProvisioningArgs(enabled=True) if queued else None,
        node_config=gcp.container.NodePoolNodeConfigArgs(
            machine_type=pool.machine_type,
            image_type=pool.image_type.value,
            disk_size_gb=pool.disk_size_gb,
            disk_type=pool.disk_type.value,
            spot=spot,
            flex_start=True if flex else None,
            max_run_duration=f"{rung.run_seconds}s" if flex else None,
            service_account=service_account,
            oauth_scopes=[CLOUD_PLATFORM_SCOPE],
            labels=labels,
            taints=[gcp.container.NodePoolNodeConfigTaintArgs(key=t.key, value=t.value, effect=t.effect.gke) for t in taints] or None,
            guest_accelerators=accelerators,
            gcfs_config=gcp.container.NodePoolNodeConfigGcfsConfigArgs(enabled=pool.image_streaming),
            workload_metadata_config=gcp.container.NodePoolNodeConfigWorkloadMetadataConfigArgs(mode="GKE_METADATA"),
            shielded_instance_config=gcp.container.NodePoolNodeConfigShieldedInstanceConfigArgs(
                # Drivers a user installs himself are unsigned: secure boot would refuse them.
                enable_secure_boot=not (gpu is not None and gpu.driver_version is GpuDriverVersion.INSTALLATION_DISABLED),
                enable_integrity_monitoring=True,
            ),
            reservation_affinity=reservation_affinity(rung, queued),
            metadata={"disable-legacy-endpoints": "true"},
        ),
    )
