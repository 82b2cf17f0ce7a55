"""The EKS DCGM + GPU HPA guide's GPU inference API, composed from the gpu-platform components.

A Triton model server on a GPU pool behind a Service and an Ingress, scaled by the GPU-utilisation HPA on
the DCGM metric the monitoring stack's adapter serves from dcgm-exporter, with an alert when the HPA is
pinned at its maximum. On EKS the Ingress is an ALB, so the AWS Load Balancer Controller is installed with
its own published IAM policy, read from the pinned upstream sources (``--upstream DIR`` offline; the cache,
fetched from the controller's release tag and checked against the lock's digest, online). On GKE the
Ingress is GKE's own load balancer.

    gpu-platform preview --program examples/inference gke
    gpu-platform preview --program examples/inference eks --upstream ../shared/reference/upstream
"""

import pulumi

from gpu_platform.components import (
    AutoscalingBounds,
    BoundsScope,
    CapacityStrategy,
    DcgmExporter,
    DcgmExporterArgs,
    EksCluster,
    EksClusterArgs,
    GpuClassArgs,
    GpuGkeCluster,
    GpuGkeClusterArgs,
    GpuNodePoolArgs,
    MetricSource,
    PrometheusStack,
    PrometheusStackArgs,
    SpotFailoverEksNodeGroups,
    SpotFailoverEksNodeGroupsArgs,
)
from gpu_platform.components.inference.service import GpuInferenceService, GpuInferenceServiceArgs
from gpu_platform.components.load_balancer.controller import (
    AwsLoadBalancerController,
    AwsLoadBalancerControllerArgs,
    iam_policy_url,
)
from gpu_platform.infra.preview.upstream import upstream_file

acme = pulumi.Config("acme")
password = pulumi.Config().require_secret("grafana_admin_password")
inference = GpuInferenceServiceArgs(
    image="nvcr.io/nvidia/tritonserver:25.01-py3",
    command=["tritonserver"],
    args=[f"--model-repository={acme.get('model_repository') or 's3://acme-models/triton'}"],
    pool="t4" if acme.require("cloud") == "aws" else "l4",
    min_replicas=1,
    max_replicas=4,
    target_utilization_percent=70,
)

if acme.require("cloud") == "gcp":
    cluster = GpuGkeCluster(
        "ml",
        GpuGkeClusterArgs(
            location="us-central1",
            node_locations=["us-central1-b", "us-central1-c"],
            gpu_pools=[
                GpuNodePoolArgs(
                    name="l4",
                    machine_type="g2-standard-8",
                    accelerator_type="nvidia-l4",
                    capacity=CapacityStrategy.SPOT_THEN_ON_DEMAND,
                    autoscaling=AutoscalingBounds(scope=BoundsScope.TOTAL, min_nodes=0, max_nodes=4),
                )
            ],
        ),
    )
    monitoring = PrometheusStack(
        "ml-monitoring",
        PrometheusStackArgs(),
        cluster=cluster,
        grafana_admin_password=password,
        scrapes=[MetricSource.DCGM_EXPORTER],
    )
    DcgmExporter("ml-dcgm", DcgmExporterArgs(node_selection="gke"), cluster=cluster, service_monitor_crd=monitoring.release)
    service = GpuInferenceService("ml-inference", inference, cluster=cluster, prometheus_rule_crd=monitoring.release)
else:
    eks = EksCluster("ml", EksClusterArgs(zones=["us-west-2a", "us-west-2b"]))
    monitoring = PrometheusStack(
        "ml-monitoring",
        PrometheusStackArgs(),
        cluster=eks,
        grafana_admin_password=password,
        scrapes=[MetricSource.CLUSTER_AUTOSCALER, MetricSource.DCGM_EXPORTER],
    )
    gpu = SpotFailoverEksNodeGroups(
        "ml-gpu",
        SpotFailoverEksNodeGroupsArgs(
            classes=[
                GpuClassArgs(name="t4", instance_types=["g4dn.xlarge"], capacity=CapacityStrategy.SPOT_THEN_ON_DEMAND, max_nodes=4),
            ]
        ),
        cluster=eks,
        service_monitor_crd=monitoring.release,
    )
    DcgmExporter("ml-dcgm", DcgmExporterArgs(node_selection="eks"), cluster=gpu, service_monitor_crd=monitoring.release)
    controller_args = AwsLoadBalancerControllerArgs()
    controller = AwsLoadBalancerController(
        "ml-alb",
        controller_args,
        cluster=eks,
        iam_policy=upstream_file(iam_policy_url(controller_args.chart_version)),
    )
    service = GpuInferenceService(
        "ml-inference",
        inference,
        cluster=gpu,
        ingress_controller=controller.release,
        prometheus_rule_crd=monitoring.release,
    )

pulumi.export("inferenceService", service.service_address)
pulumi.export("loadBalancer", service.load_balancer)
