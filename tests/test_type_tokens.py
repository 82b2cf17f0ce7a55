"""Type tokens and child names are public API: a rename replaces every resource a user deployed.

The frozen lists below are written by hand from the released components; a change to a token,
a child's role (the part after ``<component name>-``) or a child's type fails here first. The
children are those examples/composed registers on GKE and on EKS (every component, with the
children its options add: the scheduler pool, the compute class, a tenant, the EBS driver, the
priority expander, the device plugin; the stack eks-karpenter: Karpenter's NodePools and the discovery tag). Change a list only with a CHANGELOG entry that says what
users must do (``aliases``) for what they have deployed.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import pkgutil

import pulumi
import pytest

from gpu_platform import components
from gpu_platform.components.provider.provider import EXPOSED
from gpu_platform.infra.testing import preview_program
from tests.conftest import PROJECT_DIR

FROZEN_TOKENS = {
    "DaskOperator": "gpu-platform:dask_operator:DaskOperator",
    "DcgmExporter": "gpu-platform:dcgm_exporter:DcgmExporter",
    "EksCluster": "gpu-platform:eks_cluster:EksCluster",
    "GpuGkeCluster": "gpu-platform:gpu_gke_cluster:GpuGkeCluster",
    "GpuUtilizationAutoscaler": "gpu-platform:gpu_utilization_autoscaler:GpuUtilizationAutoscaler",
    "Headlamp": "gpu-platform:headlamp:Headlamp",
    "KarpenterNodePools": "gpu-platform:karpenter_node_pools:KarpenterNodePools",
    "KubeflowInstall": "gpu-platform:kubeflow_install:KubeflowInstall",
    "Kueue": "gpu-platform:kueue:Kueue",
    "PrometheusStack": "gpu-platform:prometheus_stack:PrometheusStack",
    "SpotFailoverEksNodeGroups": "gpu-platform:spot_failover_eks_node_groups:SpotFailoverEksNodeGroups",
    "SharedDatasets": "gpu-platform:shared_datasets:SharedDatasets",
    "GpuInferenceService": "gpu-platform:gpu_inference_service:GpuInferenceService",
    "AwsLoadBalancerController": "gpu-platform:aws_load_balancer_controller:AwsLoadBalancerController",
    "WarmCapacity": "gpu-platform:warm_capacity:WarmCapacity",
    "ExistingCluster": "gpu-platform:existing_cluster:ExistingCluster",
}
"""Every component the package exports, by class name: its type token."""

BUILT_ELSEWHERE = {
    "SharedDatasets": "tests/components/datasets/test_shared_datasets.py and the dev-eks stack's snapshot",
    "GpuInferenceService": "tests/infra/test_load_balancing.py (its children frozen there)",
    "AwsLoadBalancerController": "tests/infra/test_load_balancing.py (its children frozen there)",
    "WarmCapacity": "tests/infra/test_warm_capacity.py and tests/apply/test_apply_warm_capacity.py",
    "ExistingCluster": "tests/components/existing/test_cluster.py (its one child frozen there) and tests/engine/test_engine_stacks.py",
}
"""Exported components examples/composed does not build, and where they are built and checked."""

FROZEN_CHILDREN = {
    "gpu-platform:kueue:Kueue": [
        "kubernetes:core/v1:Namespace namespace",
        "kubernetes:helm.sh/v3:Release release",
        "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue queue-vision",
        "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue queue-vision-pipelines",
        "kubernetes:kueue.x-k8s.io/v1beta2:Cohort cohort-gpu-platform",
        "kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue local-queue-vision",
        "kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue local-queue-vision-pipelines",
        "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor flavor-cpu-system",
        "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor flavor-nvidia-l4-l4",
        "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor flavor-nvidia-tesla-t4-scheduler",
        "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor flavor-nvidia-tesla-t4-t4",
    ],
    "gpu-platform:dask_operator:DaskOperator": [
        "kubernetes:apps/v1:DaemonSet prepuller",
        "kubernetes:core/v1:ConfigMap vision-dask-cluster-spec",
        "kubernetes:core/v1:LimitRange vision-limits",
        "kubernetes:core/v1:Namespace namespace",
        "kubernetes:core/v1:Namespace vision",
        "kubernetes:core/v1:ResourceQuota vision-gpu-quota",
        "kubernetes:core/v1:ServiceAccount vision-sa",
        "kubernetes:helm.sh/v3:Release operator",
        "kubernetes:networking.k8s.io/v1:NetworkPolicy vision-isolation",
        "kubernetes:rbac.authorization.k8s.io/v1:Role vision-role",
        "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding vision-rolebinding",
    ],
    "gpu-platform:dcgm_exporter:DcgmExporter": [
        "kubernetes:core/v1:ConfigMap metrics",
        "kubernetes:core/v1:Namespace namespace",
        "kubernetes:helm.sh/v3:Release release",
    ],
    "gpu-platform:headlamp:Headlamp": [
        "kubernetes:core/v1:Namespace namespace",
        "kubernetes:helm.sh/v3:Release release",
        "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding vision-viewers",
    ],
    "gpu-platform:eks_cluster:EksCluster": [
        "aws:ec2/eip:Eip nat-a-ip",
        "aws:ec2/internetGateway:InternetGateway igw",
        "aws:ec2/natGateway:NatGateway nat-a",
        "aws:ec2/routeTable:RouteTable private-a-rt",
        "aws:ec2/routeTable:RouteTable private-b-rt",
        "aws:ec2/routeTable:RouteTable public-rt",
        "aws:ec2/routeTableAssociation:RouteTableAssociation private-a-rta",
        "aws:ec2/routeTableAssociation:RouteTableAssociation private-b-rta",
        "aws:ec2/routeTableAssociation:RouteTableAssociation public-a-rta",
        "aws:ec2/routeTableAssociation:RouteTableAssociation public-b-rta",
        "aws:ec2/subnet:Subnet private-a",
        "aws:ec2/subnet:Subnet private-b",
        "aws:ec2/subnet:Subnet public-a",
        "aws:ec2/subnet:Subnet public-b",
        "aws:ec2/tag:Tag cluster-sg-discovery",
        "aws:ec2/vpc:Vpc vpc",
        "aws:eks/addon:Addon aws-ebs-csi-driver",
        "aws:eks/addon:Addon coredns",
        "aws:eks/addon:Addon eks-pod-identity-agent",
        "aws:eks/addon:Addon kube-proxy",
        "aws:eks/addon:Addon vpc-cni",
        "aws:eks/cluster:Cluster cluster",
        "aws:eks/nodeGroup:NodeGroup system",
        "aws:iam/openIdConnectProvider:OpenIdConnectProvider oidc",
        "aws:iam/role:Role cluster-role",
        "aws:iam/role:Role ebs-csi-role",
        "aws:iam/role:Role node-role",
        "aws:iam/rolePolicy:RolePolicy cluster-role-secrets-key",
        "aws:iam/rolePolicyAttachment:RolePolicyAttachment cluster-role-amazoneksclusterpolicy",
        "aws:iam/rolePolicyAttachment:RolePolicyAttachment ebs-csi-role-policy",
        "aws:iam/rolePolicyAttachment:RolePolicyAttachment node-role-amazonec2containerregistryreadonly",
        "aws:iam/rolePolicyAttachment:RolePolicyAttachment node-role-amazoneks-cni-policy",
        "aws:iam/rolePolicyAttachment:RolePolicyAttachment node-role-amazoneksworkernodepolicy",
        "aws:kms/key:Key secrets-key",
        "kubernetes:storage.k8s.io/v1:StorageClass gp3-storage-class",
        "pulumi:providers:kubernetes k8s",
    ],
    "gpu-platform:gpu_gke_cluster:GpuGkeCluster": [
        "gcp:container/cluster:Cluster cluster",
        "gcp:container/nodePool:NodePool l4-on-demand",
        "gcp:container/nodePool:NodePool l4-spot",
        "gcp:container/nodePool:NodePool scheduler",
        "gcp:container/nodePool:NodePool system",
        "gcp:projects/iAMMember:IAMMember nodes-artifactregistry-reader",
        "gcp:projects/iAMMember:IAMMember nodes-container-defaultnodeserviceaccount",
        "gcp:projects/iAMMember:IAMMember nodes-serviceusage-serviceusageconsumer",
        "gcp:projects/service:Service container-api",
        "gcp:projects/service:Service containerfilesystem-api",
        "gcp:serviceaccount/account:Account nodes",
        "kubernetes:cloud.google.com/v1:ComputeClass l4-compute-class",
        "pulumi:providers:kubernetes k8s",
    ],
    "gpu-platform:gpu_utilization_autoscaler:GpuUtilizationAutoscaler": [
        "kubernetes:autoscaling/v2:HorizontalPodAutoscaler hpa",
    ],
    "gpu-platform:karpenter_node_pools:KarpenterNodePools": [
        "aws:cloudwatch/eventRule:EventRule instance-state-change-rule",
        "aws:cloudwatch/eventRule:EventRule rebalance-rule",
        "aws:cloudwatch/eventRule:EventRule scheduled-change-rule",
        "aws:cloudwatch/eventRule:EventRule spot-interruption-rule",
        "aws:cloudwatch/eventTarget:EventTarget instance-state-change-target",
        "aws:cloudwatch/eventTarget:EventTarget rebalance-target",
        "aws:cloudwatch/eventTarget:EventTarget scheduled-change-target",
        "aws:cloudwatch/eventTarget:EventTarget spot-interruption-target",
        "aws:eks/accessEntry:AccessEntry node-access",
        "aws:iam/role:Role controller-role",
        "aws:iam/role:Role node-role",
        "aws:iam/rolePolicy:RolePolicy controller-role-policy",
        "aws:iam/rolePolicyAttachment:RolePolicyAttachment node-role-amazonec2containerregistrypullonly",
        "aws:iam/rolePolicyAttachment:RolePolicyAttachment node-role-amazoneks-cni-policy",
        "aws:iam/rolePolicyAttachment:RolePolicyAttachment node-role-amazoneksworkernodepolicy",
        "aws:iam/rolePolicyAttachment:RolePolicyAttachment node-role-amazonssmmanagedinstancecore",
        "aws:sqs/queue:Queue interruption-queue",
        "aws:sqs/queuePolicy:QueuePolicy interruption-queue-policy",
        "kubernetes:apps/v1:DaemonSet device-plugin",
        "kubernetes:helm.sh/v3:Release karpenter",
        "kubernetes:helm.sh/v3:Release karpenter-crd",
        "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass scheduler-node-class",
        "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass t4-node-class",
        "kubernetes:karpenter.sh/v1:NodePool scheduler-on-demand-node-pool",
        "kubernetes:karpenter.sh/v1:NodePool t4-on-demand-node-pool",
        "kubernetes:karpenter.sh/v1:NodePool t4-spot-node-pool",
    ],
    "gpu-platform:kubeflow_install:KubeflowInstall": [
        "kubernetes:core/v1:Namespace tenant-vision-pipelines",
        "kubernetes:core/v1:ResourceQuota quota-vision-pipelines",
        "kubernetes:kustomize/v2:Directory cluster-scoped",
        "kubernetes:kustomize/v2:Directory pipelines",
        "random:index/randomPassword:RandomPassword artifact-store-access-key",
        "random:index/randomPassword:RandomPassword artifact-store-secret-key",
        "random:index/randomPassword:RandomPassword database-password",
    ],
    "gpu-platform:prometheus_stack:PrometheusStack": [
        "kubernetes:core/v1:ConfigMap platform-dashboard",
        "kubernetes:core/v1:Namespace namespace",
        "kubernetes:core/v1:Secret grafana-admin",
        "kubernetes:helm.sh/v3:Release adapter",
        "kubernetes:helm.sh/v3:Release release",
        "kubernetes:monitoring.coreos.com/v1:PrometheusRule gpu-alerts",
    ],
    "gpu-platform:spot_failover_eks_node_groups:SpotFailoverEksNodeGroups": [
        "aws:autoscaling/tag:Tag scheduler-on-demand-tag-enabled",
        "aws:autoscaling/tag:Tag scheduler-on-demand-tag-ml",
        "aws:autoscaling/tag:Tag scheduler-on-demand-tag-node-template-label-dedicated",
        "aws:autoscaling/tag:Tag scheduler-on-demand-tag-node-template-label-eks-amazonaws-com-capacitytype",
        "aws:autoscaling/tag:Tag scheduler-on-demand-tag-node-template-label-eks-amazonaws-com-nodegroup",
        "aws:autoscaling/tag:Tag scheduler-on-demand-tag-node-template-label-gpu-platform-io-capacity",
        "aws:autoscaling/tag:Tag scheduler-on-demand-tag-node-template-label-gpu-platform-io-gpu-class",
        "aws:autoscaling/tag:Tag scheduler-on-demand-tag-node-template-label-gpu-platform-io-pool-role",
        "aws:autoscaling/tag:Tag scheduler-on-demand-tag-node-template-label-k8s-amazonaws-com-accelerator",
        "aws:autoscaling/tag:Tag scheduler-on-demand-tag-node-template-resources-ephemeral-storage",
        "aws:autoscaling/tag:Tag scheduler-on-demand-tag-node-template-resources-nvidia-com-gpu",
        "aws:autoscaling/tag:Tag scheduler-on-demand-tag-node-template-taint-nvidia-com-gpu",
        "aws:autoscaling/tag:Tag t4-on-demand-tag-enabled",
        "aws:autoscaling/tag:Tag t4-on-demand-tag-ml",
        "aws:autoscaling/tag:Tag t4-on-demand-tag-node-template-label-eks-amazonaws-com-capacitytype",
        "aws:autoscaling/tag:Tag t4-on-demand-tag-node-template-label-eks-amazonaws-com-nodegroup",
        "aws:autoscaling/tag:Tag t4-on-demand-tag-node-template-label-gpu-platform-io-capacity",
        "aws:autoscaling/tag:Tag t4-on-demand-tag-node-template-label-gpu-platform-io-gpu-class",
        "aws:autoscaling/tag:Tag t4-on-demand-tag-node-template-label-gpu-platform-io-pool-role",
        "aws:autoscaling/tag:Tag t4-on-demand-tag-node-template-label-k8s-amazonaws-com-accelerator",
        "aws:autoscaling/tag:Tag t4-on-demand-tag-node-template-resources-ephemeral-storage",
        "aws:autoscaling/tag:Tag t4-on-demand-tag-node-template-resources-nvidia-com-gpu",
        "aws:autoscaling/tag:Tag t4-on-demand-tag-node-template-taint-nvidia-com-gpu",
        "aws:autoscaling/tag:Tag t4-spot-tag-enabled",
        "aws:autoscaling/tag:Tag t4-spot-tag-ml",
        "aws:autoscaling/tag:Tag t4-spot-tag-node-template-label-eks-amazonaws-com-capacitytype",
        "aws:autoscaling/tag:Tag t4-spot-tag-node-template-label-eks-amazonaws-com-nodegroup",
        "aws:autoscaling/tag:Tag t4-spot-tag-node-template-label-gpu-platform-io-capacity",
        "aws:autoscaling/tag:Tag t4-spot-tag-node-template-label-gpu-platform-io-gpu-class",
        "aws:autoscaling/tag:Tag t4-spot-tag-node-template-label-gpu-platform-io-pool-role",
        "aws:autoscaling/tag:Tag t4-spot-tag-node-template-label-k8s-amazonaws-com-accelerator",
        "aws:autoscaling/tag:Tag t4-spot-tag-node-template-resources-ephemeral-storage",
        "aws:autoscaling/tag:Tag t4-spot-tag-node-template-resources-nvidia-com-gpu",
        "aws:autoscaling/tag:Tag t4-spot-tag-node-template-taint-nvidia-com-gpu",
        "aws:eks/nodeGroup:NodeGroup scheduler-on-demand",
        "aws:eks/nodeGroup:NodeGroup t4-on-demand",
        "aws:eks/nodeGroup:NodeGroup t4-spot",
        "aws:iam/role:Role autoscaler-role",
        "aws:iam/rolePolicy:RolePolicy autoscaler-role-policy",
        "kubernetes:apps/v1:DaemonSet device-plugin",
        "kubernetes:core/v1:ConfigMap priority-expander",
        "kubernetes:helm.sh/v3:Release autoscaler",
    ],
}
"""Per type token, each direct child as "<type> <role>" (the child is named <component name>-<role>)."""


@functools.cache
def registered(stack: str) -> dict[str, frozenset[str]]:
    """Per component type token, the direct children examples/composed registers in ``stack`` (run once)."""
    plan = preview_program(PROJECT_DIR / "examples" / "composed", stack)
    children: dict[str, set[str]] = {}
    for component in plan.resources:
        if component.custom or not component.type.startswith("gpu-platform:"):
            continue
        kids = children.setdefault(component.type, set())
        for child in plan.resources:
            if child.parent == component.urn:
                assert child.name.startswith(f"{component.name}-"), f"{child.name} is not named <{component.name}>-<role>"
                kids.add(f"{child.type} {child.name.removeprefix(component.name + '-')}")
    return {token: frozenset(kids) for token, kids in children.items()}


def test_every_exported_component_has_its_frozen_type_token() -> None:
    exported = {name: cls for name in components.__all__ if isinstance(cls := getattr(components, name), type) and issubclass(cls, pulumi.ComponentResource)}
    assert sorted(exported) == sorted(FROZEN_TOKENS), "a component was added or removed: freeze its token here"
    built = registered("gke") | registered("eks") | registered("eks-karpenter")
    assert {token for token in built} == {t for name, t in FROZEN_TOKENS.items() if name not in BUILT_ELSEWHERE}
    # The token each class registers is the frozen one: read from its constructor's source.
    for name, cls in exported.items():
        assert f'"{FROZEN_TOKENS[name]}"' in inspect.getsource(cls.__init__), name


def test_every_component_class_of_the_package_is_exported() -> None:
    """A ComponentResource subclass anywhere under gpu_platform.components is exported from the package (and so
    frozen above and in the generated reference)."""
    found = set()
    for info in pkgutil.walk_packages(components.__path__, f"{components.__name__}."):
        module = importlib.import_module(info.name)
        found |= {
            cls.__name__
            for _, cls in inspect.getmembers(module, inspect.isclass)
            if issubclass(cls, pulumi.ComponentResource) and cls.__module__ == module.__name__ and not cls.__name__.startswith("_")
        }
    assert sorted(found - set(components.__all__)) == []


PYTHON_ONLY = {
    "Kueue": "its tenants are QueueTenant values built from the Dask and Kubeflow Args in Python "
    "(kueue_plan.dask_queue_tenants, kubeflow_queue_tenants); not offered to other languages yet",
}
"""Components not (yet) offered to other languages, and why."""


PYTHON_ONLY |= {
    "SharedDatasets": "it takes the tenants' namespaces and service accounts as Python objects; not offered to other languages yet",
    "WarmCapacity": "not offered to other languages yet",
    "ExistingCluster": "other languages already give the add-ons an existing cluster: a Kubernetes provider in the options and "
    "a ClusterPools descriptor of its pools (what ExistingCluster holds in Python)",
}


def test_the_other_languages_tokens_are_frozen() -> None:
    offered = sorted(name for name in FROZEN_TOKENS if name not in PYTHON_ONLY)
    assert sorted(c.pulumi_type for c in EXPOSED) == [f"gpu-platform:index:{name}" for name in offered]  # type: ignore[attr-defined]


@pytest.mark.parametrize("stack", ["gke", "eks", "eks-karpenter"])
def test_child_names_and_types_are_frozen(stack: str) -> None:
    for token, children in registered(stack).items():
        frozen = set(FROZEN_CHILDREN[token])
        assert children <= frozen, f"{token}: children not in the frozen list: {sorted(children - frozen)}"


def test_every_frozen_child_is_still_registered() -> None:
    stacks = [registered(s) for s in ("gke", "eks", "eks-karpenter")]
    for token, frozen in FROZEN_CHILDREN.items():
        seen = frozenset().union(*(r.get(token, frozenset()) for r in stacks))
        assert set(frozen) == seen, f"{token}: frozen children no longer registered: {sorted(set(frozen) - seen)}"
