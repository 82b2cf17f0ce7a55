"""Every rule with a violating and a compliant case, called directly and through the pack."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pulumi_policy import (
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
)

from gpu_platform.policies.evaluate import PolicyConfigError, evaluate, load_policy_config
from gpu_platform.policies.pack import build_policies
from gpu_platform.policies.rules import RULES, Resource
from gpu_platform.policies.rules.storage import LUSTRE, PUBLIC_BLOCKS, S3_BUCKET
from gpu_platform.policies.rules.storage import S3_ENCRYPTION as S3_SSE
from gpu_platform.policies.rules.storage import S3_PUBLIC_ACCESS_BLOCK as S3_BLOCK

STACK = "urn:pulumi:dev::gpu-platform::"
PROD = "urn:pulumi:prod-gke::gpu-platform::"


def res(type_: str, name: str, props: dict[str, Any], *, prefix: str = STACK, protect: bool = False) -> Resource:
    return Resource(type_, name, f"{prefix}{type_}::{name}", props, protect)


def gpu_pool(
    name: str = "t4",
    *,
    spot: bool = False,
    taints: bool = True,
    driver: bool = True,
    count: int = 2,
    autoscaling: dict[str, Any] | None = None,
    gpu: str = "nvidia-tesla-t4",
    sa: str | None = "n@p.iam.gserviceaccount.com",
    mode: str = "GKE_METADATA",
) -> Resource:
    acc: dict[str, Any] = {"type": gpu, "count": count}
    if driver:
        acc["gpuDriverInstallationConfig"] = {"gpuDriverVersion": "DEFAULT"}
    node: dict[str, Any] = {"guestAccelerators": [acc], "spot": spot, "workloadMetadataConfig": {"mode": mode}}
    if sa:
        node["serviceAccount"] = sa
    if taints:
        node["taints"] = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}]
    return res(
        "gcp:container/nodePool:NodePool",
        f"c-{name}",
        {
            "name": name,
            "cluster": "c",
            "nodeConfig": node,
            "autoscaling": autoscaling if autoscaling is not None else {"minNodeCount": 0, "maxNodeCount": 4},
        },
    )


def cluster(
    prefix: str = STACK,
    *,
    protect: bool = True,
    deletion: bool = True,
    private: bool = True,
    networks: list[str] | None = None,
    location: str = "us-central1",
    wi: bool = True,
    sa: str | None = "n@p.iam.gserviceaccount.com",
) -> Resource:
    props: dict[str, Any] = {"name": "c", "location": location, "nodeLocations": ["us-central1-b", "us-central1-c"], "deletionProtection": deletion}
    if private:
        props["privateClusterConfig"] = {"enablePrivateNodes": True, "enablePrivateEndpoint": True}
    if networks:
        props["masterAuthorizedNetworksConfig"] = {"cidrBlocks": [{"cidrBlock": n} for n in networks]}
    if wi:
        props["workloadIdentityConfig"] = {"workloadPool": "p.svc.id.goog"}
    if sa:
        props["nodeConfig"] = {"serviceAccount": sa}
    return res("gcp:container/cluster:Cluster", "c-cluster", props, prefix=prefix, protect=protect)


def compute_class(*order: str) -> Resource:
    return res(
        "kubernetes:cloud.google.com/v1:ComputeClass",
        "cc",
        {"apiVersion": "cloud.google.com/v1", "kind": "ComputeClass", "metadata": {"name": "x"}, "spec": {"priorities": [{"nodepools": [p]} for p in order]}},
    )


def deployment(image: str, env: list[dict[str, Any]] | None = None) -> Resource:
    return res(
        "kubernetes:apps/v1:Deployment",
        "web",
        {"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"template": {"spec": {"containers": [{"name": "app", "image": image, "env": env or []}]}}}},
    )


def release(version: str, values: dict[str, Any]) -> Resource:
    return res("kubernetes:helm.sh/v3:Release", "chart", {"chart": "kube-prometheus-stack", "version": version, "values": values})


def aws_policy(action: Any) -> Resource:
    doc = {"Version": "2012-10-17", "Statement": [{"Sid": "Scale", "Effect": "Allow", "Action": action, "Resource": "*"}]}
    return res("aws:iam/policy:Policy", "autoscaler", {"policy": json.dumps(doc)})


def iam(role: str) -> Resource:
    return res("gcp:projects/iAMMember:IAMMember", "grant", {"role": role, "member": "serviceAccount:x@p.iam.gserviceaccount.com"})


# rule -> (violating resources, compliant resources, policy config, fragment of the message)
CASES: dict[str, tuple[list[Resource], list[Resource], dict[str, Any], str]] = {
    "gpu-pool-bounded": ([cluster(), gpu_pool(autoscaling={})], [cluster(), gpu_pool()], {}, "no autoscaling maximum"),
    "gpu-stack-budget": (
        [cluster(), gpu_pool(autoscaling={"totalMaxNodeCount": 6})],
        [cluster(), gpu_pool(autoscaling={"totalMaxNodeCount": 5})],
        {"gpu-stack-budget": {"maxGpusPerStack": 10}},
        "can scale to 12 GPUs",
    ),
    "gpu-pool-tainted": ([gpu_pool(taints=False)], [gpu_pool()], {}, "lacks the taint nvidia.com/gpu=present:NoSchedule"),
    "gpu-type-allowed": (
        [gpu_pool(gpu="nvidia-tesla-v100")],
        [gpu_pool()],
        {"gpu-type-allowed": {"allowedGpuTypes": ["nvidia-tesla-t4"]}},
        "nvidia-tesla-v100 is not allowed",
    ),
    "gpu-driver-pinned": ([gpu_pool(driver=False)], [gpu_pool()], {}, "no explicit gpuDriverVersion"),
    "spot-has-on-demand-fallback": (
        [gpu_pool("a-spot", spot=True), gpu_pool("a-od"), compute_class("a-od", "a-spot")],
        [gpu_pool("a-spot", spot=True), gpu_pool("a-od"), compute_class("a-spot", "a-od")],
        {},
        "spot GPU pool a-spot has no on-demand GPU pool ranked below it",
    ),
    "prod-cluster-deletion-protected": (
        [cluster(PROD, protect=False)],
        [cluster(PROD), cluster(STACK, protect=False, deletion=False)],
        {},
        "not protected in Pulumi",
    ),
    "prod-secrets-encrypted": (
        [res("aws:eks/cluster:Cluster", "c-cluster", {"name": "c"}, prefix=PROD)],
        [
            res(
                "aws:eks/cluster:Cluster",
                "c-cluster",
                {"name": "c", "encryptionConfig": {"provider": {"keyArn": "arn:aws:kms:ap-northeast-2:123456789012:key/k"}, "resources": ["secrets"]}},
                prefix=PROD,
            ),
            res("aws:eks/cluster:Cluster", "c-cluster", {"name": "c"}),
            cluster(PROD),
        ],
        {},
        "does not encrypt Secrets with a KMS key",
    ),
    "prod-control-plane-restricted": (
        [cluster(PROD, private=False)],
        [cluster(PROD), cluster(PROD, private=False, networks=["10.0.0.0/8"]), cluster(STACK, private=False)],
        {},
        "public and unrestricted",
    ),
    "gke-dedicated-node-service-account": (
        [gpu_pool(sa="123456789-compute@developer.gserviceaccount.com")],
        [gpu_pool(), cluster()],
        {},
        "Compute Engine default service account 123456789-compute@",
    ),
    "gke-workload-identity": ([gpu_pool(mode="GCE_METADATA")], [gpu_pool(), cluster()], {}, "GCE_METADATA, not GKE_METADATA"),
    "region-allowed": (
        [cluster(location="us-central1")],
        [cluster(location="europe-west4-a")],
        {"region-allowed": {"allowedRegions": ["europe-west4"]}},
        "outside the allowed regions",
    ),
    "images-pinned": (
        [deployment("nvcr.io/nvidia/rapidsai/notebooks:latest")],
        [deployment("nvcr.io/nvidia/rapidsai/notebooks:26.08-cuda13-py3.13")],
        {},
        "floating tag latest",
    ),
    "charts-pinned": ([release("^88.0.0", {})], [release("88.5.3", {})], {}, "is a range"),
    "no-plaintext-secrets": (
        [release("88.5.3", {"grafana": {"adminPassword": "hunter2"}})],
        [release("88.5.3", {"grafana": {"admin": {"existingSecret": "grafana-admin", "passwordKey": "password"}}})],
        {},
        "values.grafana.adminPassword holds a secret in plain text",
    ),
    "iam-no-wildcard-actions": ([aws_policy(["autoscaling:*"])], [aws_policy(["autoscaling:SetDesiredCapacity"])], {}, "allows autoscaling:*"),
    "iam-no-full-access-managed-policies": (
        [
            res("aws:iam/rolePolicyAttachment:RolePolicyAttachment", "fsx", {"role": "r", "policyArn": "arn:aws:iam::aws:policy/AmazonFSxFullAccess"}),
            res("aws:iam/role:Role", "admin", {"managedPolicyArns": ["arn:aws-cn:iam::aws:policy/AdministratorAccess"]}),
        ],
        [
            res("aws:iam/rolePolicyAttachment:RolePolicyAttachment", "cni", {"role": "r", "policyArn": "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy"}),
            res("aws:iam/rolePolicyAttachment:RolePolicyAttachment", "own", {"role": "r", "policyArn": "arn:aws:iam::123456789012:policy/TeamFullAccess"}),
            res("aws:iam/role:Role", "ecr", {"managedPolicyArns": ["arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly"]}),
        ],
        {},
        "attaches the AWS managed policy AmazonFSxFullAccess",
    ),
    "iam-no-basic-roles": ([iam("roles/editor")], [iam("roles/container.defaultNodeServiceAccount")], {}, "basic role roles/editor"),
    "dcgm-probe-delay": (
        [res("kubernetes:helm.sh/v3:Release", "dcgm", {"chart": "dcgm-exporter", "version": "4.8.2", "values": {"livenessProbe": {"initialDelaySeconds": 5}}})],
        [
            res(
                "kubernetes:helm.sh/v3:Release",
                "dcgm",
                {"chart": "dcgm-exporter", "version": "4.8.2", "values": {"livenessProbe": {"initialDelaySeconds": 20}}},
            ),
            res("kubernetes:helm.sh/v3:Release", "dcgm", {"chart": "dcgm-exporter", "version": "4.8.2", "values": {}}),
        ],
        {},
        "livenessProbe.initialDelaySeconds is 5",
    ),
    "tenant-gpu-quota": (
        [
            res("kubernetes:core/v1:Namespace", "ns-a", {"metadata": {"name": "team-a", "labels": {"gpu-platform.io/tenant": "team-a"}}}),
            res("kubernetes:core/v1:ResourceQuota", "q-a", {"metadata": {"name": "q", "namespace": "team-a"}, "spec": {"hard": {"requests.cpu": "8"}}}),
        ],
        [
            res("kubernetes:core/v1:Namespace", "ns-a", {"metadata": {"name": "team-a", "labels": {"gpu-platform.io/tenant": "team-a"}}}),
            res(
                "kubernetes:core/v1:ResourceQuota",
                "q-a",
                {"metadata": {"name": "q", "namespace": "team-a"}, "spec": {"hard": {"requests.nvidia.com/gpu": "4"}}},
            ),
            res("kubernetes:core/v1:Namespace", "ns-sys", {"metadata": {"name": "monitoring"}}),
        ],
        {},
        "tenant namespace team-a has no ResourceQuota on requests.nvidia.com/gpu",
    ),
    "metrics-storage-retained": (
        [
            release(
                "88.5.3",
                {
                    "prometheus": {
                        "prometheusSpec": {
                            "storageSpec": {"volumeClaimTemplate": {"spec": {}}},
                            "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Delete"},
                        }
                    }
                },
            )
        ],
        [
            release(
                "88.5.3",
                {
                    "prometheus": {
                        "prometheusSpec": {
                            "storageSpec": {"volumeClaimTemplate": {"spec": {}}},
                            "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain"},
                        }
                    }
                },
            )
        ],
        {},
        "whenDeleted is not Retain",
    ),
    "pipeline-storage-retained": (
        [
            res("kubernetes:core/v1:PersistentVolumeClaim", "kf-seaweedfs", {"metadata": {"name": "seaweedfs-pvc", "namespace": "kubeflow"}}),
            res("kubernetes:core/v1:PersistentVolumeClaim", "kf-mysql", {"metadata": {"name": "mysql-pv-claim", "namespace": "kubeflow"}}),
        ],
        [
            res("kubernetes:core/v1:PersistentVolumeClaim", "kf-seaweedfs", {"metadata": {"name": "seaweedfs-pvc"}}, protect=True),
            res("kubernetes:core/v1:PersistentVolumeClaim", "scratch", {"metadata": {"name": "scratch"}}),
        ],
        {},
        "artifact store claim seaweedfs-pvc is not protected",
    ),
    "bucket-encrypted": (
        [
            res(S3_BUCKET, "data", {"bucket": "data"}),
            res(S3_SSE, "other-sse", {"bucket": "other", "rules": [{"applyServerSideEncryptionByDefault": {"sseAlgorithm": "aws:kms"}}]}),
        ],
        [
            res(S3_BUCKET, "data", {"bucket": "data"}),
            res(S3_SSE, "data-sse", {"bucket": "data", "rules": [{"applyServerSideEncryptionByDefault": {"sseAlgorithm": "aws:kms"}}]}),
            res(
                S3_BUCKET,
                "inline",
                {"bucket": "inline", "serverSideEncryptionConfiguration": {"rule": {"applyServerSideEncryptionByDefault": {"sseAlgorithm": "AES256"}}}},
            ),
            res("gcp:storage/bucket:Bucket", "gcs", {"name": "gcs", "publicAccessPrevention": "enforced"}),
        ],
        {},
        "S3 bucket data declares no default server-side encryption",
    ),
    "fsx-encrypted": (
        [res(LUSTRE, "fs", {"deploymentType": "PERSISTENT_2", "storageCapacity": 1200})],
        [
            res(LUSTRE, "fs", {"deploymentType": "PERSISTENT_2", "kmsKeyId": "arn:aws:kms:us-east-1:123456789012:key/k"}),
            res(LUSTRE, "scratch", {"deploymentType": "SCRATCH_2"}),
        ],
        {},
        "of type PERSISTENT_2 names no KMS key",
    ),
    "bucket-not-public": (
        [
            res(S3_BUCKET, "data", {"bucket": "data"}),
            res(S3_BLOCK, "data-block", {"bucket": "data", **{k: True for k in PUBLIC_BLOCKS}, "restrictPublicBuckets": False}),
            res("gcp:storage/bucket:Bucket", "gcs", {"name": "gcs", "publicAccessPrevention": "inherited"}),
            res("gcp:storage/bucketIAMMember:BucketIAMMember", "everyone", {"bucket": "gcs", "member": "allUsers", "role": "roles/storage.objectViewer"}),
        ],
        [
            res(S3_BUCKET, "data", {"bucket": "data"}),
            res(S3_BLOCK, "data-block", {"bucket": "data", **{k: True for k in PUBLIC_BLOCKS}}),
            res("gcp:storage/bucket:Bucket", "gcs", {"name": "gcs", "publicAccessPrevention": "enforced"}),
            res(
                "gcp:storage/bucketIAMMember:BucketIAMMember",
                "tenant",
                {
                    "bucket": "gcs",
                    "role": "roles/storage.objectViewer",
                    "member": "principal://iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/p.svc.id.goog/subject/ns/a/sa/default",
                },
            ),
        ],
        {},
        "S3 bucket data has no public access block",
    ),
}


def test_bucket_not_public_names_every_way_a_bucket_is_public() -> None:
    bad, _, _, _ = CASES["bucket-not-public"]
    acl = res(S3_BUCKET, "acl", {"bucket": "acl", "acl": "public-read"})
    messages = [f.message for f in evaluate([*bad, acl], load_policy_config({})) if f.rule == "bucket-not-public"]
    assert any("does not enforce public access prevention" in m for m in messages), messages
    assert any("is granted to allUsers" in m for m in messages), messages
    assert any("public canned ACL public-read" in m for m in messages), messages


def node_pool(limits: dict[str, str] | None, taints: list[dict[str, str]] | None = None) -> Resource:
    """A Karpenter NodePool as KarpenterNodePools declares it (a GPU tier: V100s, GPU-tainted)."""
    spec: dict[str, Any] = {
        "template": {"spec": {"taints": taints if taints is not None else [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]}}
    }
    if limits is not None:
        spec["limits"] = limits
    return res("kubernetes:karpenter.sh/v1:NodePool", "c-gpu-small-spot-node-pool", {"kind": "NodePool", "spec": spec})


LIMITED = {"cpu": "160", "memory": "1249280Mi", "nvidia.com/gpu": "20"}
CASES["karpenter-node-pool-limited"] = (
    [node_pool(None), node_pool({"cpu": "160", "memory": "1249280Mi"})],
    [node_pool(LIMITED), node_pool({"cpu": "8", "memory": "1Gi"}, taints=[])],
    {},
    "NodePool has no limit on cpu, memory, nvidia.com/gpu",
)
CASES["karpenter-gpu-node-pool-tainted"] = (
    [node_pool(LIMITED, taints=[{"key": "nvidia.com/gpu", "value": "present", "effect": "PreferNoSchedule"}])],
    [node_pool(LIMITED), node_pool({"cpu": "8", "memory": "1Gi"}, taints=[])],
    {},
    "GPU NodePool lacks the taint nvidia.com/gpu=present:NoSchedule",
)


def rung_pool(name: str, *, labels: dict[str, str] | None = None, **node: Any) -> Resource:
    """A GKE GPU node pool of one ladder rung: its nodeConfig's spot, reservationAffinity, flexStart/maxRunDuration."""
    pool = gpu_pool(name, spot=bool(node.pop("spot", False)))
    props = {**pool.props, "nodeConfig": {**pool.props["nodeConfig"], **node, **({"labels": labels} if labels else {})}}
    return res(pool.type, pool.name, props)


RESERVED = {
    "reservationAffinity": {"consumeReservationType": "SPECIFIC_RESERVATION", "key": "compute.googleapis.com/reservation-name", "values": ["a100-training"]}
}
ANY_RESERVATION = {"reservationAffinity": {"consumeReservationType": "ANY_RESERVATION"}}
TRAINING = {"gpu-platform.io/workload": "training"}
CASES["reservation-rung-first"] = (
    [
        rung_pool("a100-spot", spot=True),
        rung_pool("a100-reserved", **RESERVED),
        rung_pool("a100-on-demand"),
        compute_class("a100-spot", "a100-reserved", "a100-on-demand"),
    ],
    [
        rung_pool("a100-reserved", **RESERVED),
        rung_pool("a100-spot", spot=True),
        rung_pool("a100-any", **ANY_RESERVATION),
        compute_class("a100-reserved", "a100-spot", "a100-any"),
    ],
    {},
    "ComputeClass x tries node pool a100-reserved (reservation(a100-training)) at priority 2, after a100-spot (spot); a named reservation is paid for",
)
CASES["training-not-spot-only"] = (
    [rung_pool("a100x8", spot=True, labels=TRAINING)],
    [
        rung_pool("a100x8-spot", spot=True, labels=TRAINING),
        rung_pool("a100x8-on-demand", labels=TRAINING),
        compute_class("a100x8-spot", "a100x8-on-demand"),
        rung_pool("t4", spot=True),  # spot only, but no training pool
    ],
    {},
    "node pool a100x8 runs training (gpu-platform.io/workload=training) on spot capacity only",
)


def provisioning_config(seconds: str | None) -> Resource:
    spec: dict[str, Any] = {"provisioningClassName": "queued-provisioning.gke.io", "managedResources": ["nvidia.com/gpu"]}
    if seconds is not None:
        spec["parameters"] = {"maxRunDurationSeconds": seconds}
    return res("kubernetes:kueue.x-k8s.io/v1beta2:ProvisioningRequestConfig", "q-provisioning", {"metadata": {"name": "queued-provisioning"}, "spec": spec})


CASES["flex-start-run-limit"] = (
    [rung_pool("a100-flex", flexStart=True, maxRunDuration="86400s"), provisioning_config("172800")],
    [rung_pool("a100-flex", flexStart=True, maxRunDuration="172800s"), provisioning_config("172800"), rung_pool("l4-flex", flexStart=True)],
    {},
    "flex-start node pool a100-flex runs its nodes at most 86400s, shorter than the 172800s the ProvisioningRequestConfig queued-provisioning gives",
)


def test_flex_start_without_a_queued_run_limit_is_not_judged() -> None:
    flex = [rung_pool("a100-flex", flexStart=True, maxRunDuration="3600s")]
    for resources in (flex, [*flex, provisioning_config(None)]):
        assert [f for f in evaluate(resources, load_policy_config({})) if f.rule == "flex-start-run-limit"] == []


def karpenter_tier(name: str, capacity: str, weight: int, labels: dict[str, str] | None = None) -> Resource:
    """A Karpenter NodePool of one rung of class a100 (a GPU tier, GPU-tainted)."""
    spec: dict[str, Any] = {
        "template": {
            "metadata": {"labels": {"gpu-platform.io/gpu-class": "a100", **(labels or {})}},
            "spec": {
                "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
                "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": [capacity]}],
            },
        },
        "limits": LIMITED,
        "weight": weight,
    }
    return res("kubernetes:karpenter.sh/v1:NodePool", f"c-a100-{name}-node-pool", {"kind": "NodePool", "spec": spec})


def test_a_karpenter_reserved_node_pool_must_outweigh_its_class_other_tiers() -> None:
    late = [karpenter_tier("spot", "spot", 50), karpenter_tier("reserved", "reserved", 40), karpenter_tier("on-demand", "on-demand", 30)]
    (finding,) = [f for f in evaluate(late, load_policy_config({})) if f.rule == "reservation-rung-first"]
    assert finding.message.startswith(
        "class a100's reserved NodePool c-a100-reserved-node-pool has weight 40, not above c-a100-spot-node-pool (spot, weight 50)"
    )
    first = [karpenter_tier("reserved", "reserved", 50), karpenter_tier("spot", "spot", 40), karpenter_tier("on-demand", "on-demand", 30)]
    assert [f for f in evaluate(first, load_policy_config({})) if f.rule == "reservation-rung-first"] == []


def test_a_training_class_on_karpenter_or_eks_is_judged_by_its_tiers() -> None:
    spot_only = [karpenter_tier("spot", "spot", 50, TRAINING)]
    (finding,) = [f for f in evaluate(spot_only, load_policy_config({})) if f.rule == "training-not-spot-only"]
    assert finding.message.startswith("class a100 runs training (gpu-platform.io/workload=training) on spot capacity only")
    with_fallback = [*spot_only, karpenter_tier("on-demand", "on-demand", 40, TRAINING)]
    assert [f for f in evaluate(with_fallback, load_policy_config({})) if f.rule == "training-not-spot-only"] == []
    # The label the rule reads is a setting: another training label, and the same class is not judged.
    other = load_policy_config({"training-not-spot-only": {"trainingLabel": "example.com/role=train"}})
    assert [f for f in evaluate(spot_only, other) if f.rule == "training-not-spot-only"] == []


def test_every_rule_has_cases() -> None:
    assert set(CASES) == {r.name for r in RULES}
    assert len(RULES) >= 12


@pytest.mark.parametrize("rule", sorted(CASES))
def test_violating_case_is_reported(rule: str) -> None:
    bad, _, config, fragment = CASES[rule]
    findings = [f for f in evaluate(bad, load_policy_config(config)) if f.rule == rule]
    assert findings, f"{rule} did not fire"
    assert any(fragment in f.message for f in findings), [f.message for f in findings]


@pytest.mark.parametrize("rule", sorted(CASES))
def test_compliant_case_passes(rule: str) -> None:
    _, good, config, _ = CASES[rule]
    assert [f for f in evaluate(good, load_policy_config(config)) if f.rule == rule] == []


def _through_the_pack(rule: str, resources: list[Resource], config: dict[str, Any]) -> list[str]:
    (policy,) = [p for p in build_policies() if p.name == rule]
    reported: list[str] = []
    settings = {k: v for k, v in config.get(rule, {}).items()} if isinstance(config.get(rule), dict) else {}

    def report(message: str, urn: str | None = None) -> None:
        reported.append(message)

    if isinstance(policy, ResourceValidationPolicy):
        for r in resources:
            args = ResourceValidationArgs(r.type, r.props, r.urn, r.name, PolicyResourceOptions(r.protect, False, [], None, [], None, None), None, settings)
            policy.validate(args, report)
    else:
        policy_resources = [
            PolicyResource(r.type, r.props, r.urn, r.name, PolicyResourceOptions(r.protect, False, [], None, [], None, None), None, None, [], {})
            for r in resources
        ]
        policy.validate(StackValidationArgs(policy_resources, settings), report)
    return reported


@pytest.mark.parametrize("rule", sorted(CASES))
def test_the_crossguard_policy_reports_the_same(rule: str) -> None:
    bad, good, config, fragment = CASES[rule]
    reported = _through_the_pack(rule, bad, config)
    assert any(fragment in m and "Fix: " in m for m in reported), reported
    assert _through_the_pack(rule, good, config) == []


def test_enforcement_levels_from_policy_config() -> None:
    bad = CASES["gpu-pool-tainted"][0]
    (finding,) = evaluate(bad, load_policy_config({"gpu-pool-tainted": "advisory"}))
    assert finding.enforcement.value == "advisory"
    assert evaluate(bad, load_policy_config({"all": "disabled"})) == []


def test_fails_when_policy_config_names_an_unknown_rule_or_setting() -> None:
    with pytest.raises(PolicyConfigError) as info:
        load_policy_config({"gpu-budget": {}, "gpu-stack-budget": {"maxGpus": 3}, "gpu-pool-bounded": {"maxGpusPerPool": 0}})
    lines = info.value.lines
    assert any(line.startswith("policy-config:gpu-budget: unknown rule; did you mean gpu-stack-budget? rules: gpu-pool-bounded") for line in lines)
    assert any(line.startswith("policy-config:gpu-pool-bounded.maxGpusPerPool: Input should be greater than or equal to 1") for line in lines)
    assert any(line.startswith("policy-config:gpu-stack-budget.maxGpus: unknown setting; did you mean maxGpusPerStack?") for line in lines)


# --- the same rules over EKS resources -------------------------------------------------------

PROD_EKS = "urn:pulumi:prod-eks::gpu-platform::"


def node_group(
    name: str = "small-spot", *, capacity: str = "SPOT", types: tuple[str, ...] = ("p3.8xlarge",), max_size: int | None = 4, taints: bool = True
) -> Resource:
    props: dict[str, Any] = {"nodeGroupName": name, "capacityType": capacity, "instanceTypes": list(types)}
    if max_size is not None:
        props["scalingConfig"] = {"minSize": 0, "maxSize": max_size, "desiredSize": 0}
    if taints:
        props["taints"] = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}]
    return res("aws:eks/nodeGroup:NodeGroup", f"c-{name}", props)


def priorities(text: str) -> Resource:
    return res(
        "kubernetes:core/v1:ConfigMap",
        "c-priority-expander",
        {
            "metadata": {"name": "cluster-autoscaler-priority-expander", "namespace": "kube-system"},
            "data": {"priorities": text},
        },
    )


def eks_cluster(
    prefix: str = PROD_EKS, *, protect: bool = True, deletion: bool = True, public: bool = True, cidrs: list[str] | None = None, encrypted: bool = True
) -> Resource:
    vpc: dict[str, Any] = {"endpointPublicAccess": public, "endpointPrivateAccess": True}
    if cidrs:
        vpc["publicAccessCidrs"] = cidrs
    props: dict[str, Any] = {"name": "c", "deletionProtection": deletion, "vpcConfig": vpc}
    if encrypted:
        props["encryptionConfig"] = {"provider": {"keyArn": "arn:aws:kms:ap-northeast-2:123456789012:key/k"}, "resources": ["secrets"]}
    return res("aws:eks/cluster:Cluster", "c-cluster", props, prefix=prefix, protect=protect)


RANKED = "50:\n- ^eks-small-spot-\n40:\n- ^eks-small-on-demand-\n"
INVERTED = "50:\n- ^eks-small-on-demand-\n40:\n- ^eks-small-spot-\n"

EKS_CASES: dict[str, tuple[list[Resource], list[Resource], dict[str, Any], str]] = {
    "gpu-pool-bounded": ([node_group(max_size=None)], [node_group(), node_group("cpu", types=("m6i.large",), max_size=None)], {}, "no autoscaling maximum"),
    "gpu-stack-budget": (
        [node_group(max_size=3)],
        [node_group(max_size=2)],
        {"gpu-stack-budget": {"maxGpusPerStack": 8}},
        "can scale to 12 GPUs",
    ),
    "gpu-pool-tainted": ([node_group(taints=False)], [node_group()], {}, "lacks the taint nvidia.com/gpu=present:NoSchedule"),
    "gpu-type-allowed": (
        [node_group()],
        [node_group(types=("g4dn.xlarge",))],
        {"gpu-type-allowed": {"allowedGpuTypes": ["g4dn.xlarge"]}},
        "GPU instance type p3.8xlarge is not allowed",
    ),
    "spot-has-on-demand-fallback": (
        [node_group(), node_group("small-on-demand", capacity="ON_DEMAND"), priorities(INVERTED)],
        [node_group(), node_group("small-on-demand", capacity="ON_DEMAND"), priorities(RANKED)],
        {},
        "spot GPU node group small-spot has no on-demand node group of the same instance types ranked below it",
    ),
    "prod-cluster-deletion-protected": (
        [eks_cluster(deletion=False)],
        [eks_cluster(), eks_cluster(STACK, protect=False, deletion=False)],
        {},
        "deletionProtection false",
    ),
    "prod-secrets-encrypted": (
        [eks_cluster(encrypted=False)],
        [eks_cluster(), eks_cluster(STACK, encrypted=False)],
        {},
        "does not encrypt Secrets with a KMS key",
    ),
    "prod-control-plane-restricted": (
        [eks_cluster(), eks_cluster(cidrs=["0.0.0.0/0"])],
        [eks_cluster(cidrs=["198.51.100.0/24"]), eks_cluster(public=False), eks_cluster(STACK)],
        {},
        "production EKS endpoint is public and unrestricted",
    ),
}


@pytest.mark.parametrize("rule", sorted(EKS_CASES))
def test_eks_violating_case_is_reported(rule: str) -> None:
    bad, _, config, fragment = EKS_CASES[rule]
    findings = [f for f in evaluate(bad, load_policy_config(config)) if f.rule == rule]
    assert any(fragment in f.message for f in findings), [f.message for f in findings]


@pytest.mark.parametrize("rule", sorted(EKS_CASES))
def test_eks_compliant_case_passes(rule: str) -> None:
    _, good, config, _ = EKS_CASES[rule]
    assert [f for f in evaluate(good, load_policy_config(config)) if f.rule == rule] == []


def test_eks_spot_group_without_any_priority_configmap_is_reported() -> None:
    findings = evaluate([node_group(), node_group("small-on-demand", capacity="ON_DEMAND")], load_policy_config({}))
    assert [f.rule for f in findings] == ["spot-has-on-demand-fallback"]


def test_eks_fallback_must_be_the_same_instance_types() -> None:
    other = node_group("small-on-demand", capacity="ON_DEMAND", types=("p3.2xlarge",))
    findings = evaluate([node_group(), other, priorities(RANKED)], load_policy_config({}))
    assert [f.rule for f in findings] == ["spot-has-on-demand-fallback"]


# --- production follows the typed environment --------------------------------------------------

ACME = "urn:pulumi:acme-gke::gpu-platform::"


def _labelled(prefix: str, environment: str | None, **kwargs: Any) -> Resource:
    r = cluster(prefix, **kwargs)
    if environment is not None:
        r = Resource(r.type, r.name, r.urn, {**r.props, "resourceLabels": {"gpu-platform-environment": environment}}, r.protect)
    return r


def _deletion_findings(resources: list[Resource]) -> list[str]:
    return [f.message for f in evaluate(resources, load_policy_config({})) if f.rule == "prod-cluster-deletion-protected"]


def test_fails_when_a_prod_environment_cluster_on_any_stack_name_is_unprotected() -> None:
    assert _deletion_findings([_labelled(ACME, "prod", protect=False)])


def test_a_dev_environment_cluster_on_a_prod_named_stack_gets_no_production_rules() -> None:
    assert _deletion_findings([_labelled(PROD, "dev", protect=False)]) == []


def test_stack_name_patterns_decide_only_where_no_environment_is_declared() -> None:
    assert _deletion_findings([_labelled(PROD, None, protect=False)])
    assert _deletion_findings([_labelled(ACME, None, protect=False)]) == []


def test_eks_tag_carries_the_environment() -> None:
    r = eks_cluster(STACK, deletion=False)
    tagged = Resource(r.type, r.name, r.urn, {**r.props, "tags": {"gpu-platform-environment": "prod"}}, r.protect)
    assert _deletion_findings([tagged])
    assert _deletion_findings([r]) == []


def test_the_gpu_budget_counts_karpenter_node_pools() -> None:
    """On a Karpenter stack the GPU budget rules read the NodePools' GPU limits (no node groups to count)."""
    config = load_policy_config({"gpu-stack-budget": {"maxGpusPerStack": 30}, "gpu-pool-bounded": {"maxGpusPerPool": 16}})
    findings = {f.rule: f.message for f in evaluate([node_pool(LIMITED), node_pool({**LIMITED, "nvidia.com/gpu": "12"})], config)}
    assert "can scale to 32 GPUs" in findings["gpu-stack-budget"]
    assert "can scale to 20 GPUs; the per-pool limit is 16" in findings["gpu-pool-bounded"]
    unbounded = {f.rule for f in evaluate([node_pool({"cpu": "8", "memory": "1Gi"})], load_policy_config({}))}
    assert "gpu-pool-bounded" in unbounded  # a GPU-tainted NodePool without a GPU limit is unbounded
    fine = [f for f in evaluate([node_pool(LIMITED)], load_policy_config({})) if f.rule.startswith("gpu-")]
    assert fine == []


def _h100_groups(order: list[str]) -> list[Resource]:
    """Class h100's managed node groups (capacity block, reservation, spot, on-demand), each on its own priority in
    ``order`` (first highest), with the launch templates that target the block's and the reservation's ids."""
    kinds = {
        "block": ("CAPACITY_BLOCK", "cr-0a1b2c3d4e5f60718"),
        "reserved": ("ON_DEMAND", "cr-0123456789abcdef0"),
        "spot": ("SPOT", None),
        "on-demand": ("ON_DEMAND", None),
    }
    resources: list[Resource] = []
    tiers = []
    for i, slug in enumerate(order):
        capacity, target = kinds[slug]
        group = node_group(f"h100-{slug}", capacity=capacity, types=("p5.48xlarge",))
        resources.append(res(group.type, group.name, {**group.props, "labels": {"gpu-platform.io/gpu-class": "h100"}}))
        if target is not None:
            spec = {"capacityReservationSpecification": {"capacityReservationTarget": {"capacityReservationId": target}}}
            resources.append(res("aws:ec2/launchTemplate:LaunchTemplate", f"{group.name}-launch-template", spec))
        tiers.append(f"{50 - 10 * i}:\n- ^eks-h100-{slug}-\n")
    return [*resources, priorities("".join(tiers))]


def test_an_eks_reservation_node_group_must_rank_above_its_class_groups_bought_per_use() -> None:
    late = _h100_groups(["spot", "block", "reserved", "on-demand"])
    findings = [f.message for f in evaluate(late, load_policy_config({})) if f.rule == "reservation-rung-first"]
    assert findings == [
        f"class h100's node group h100-{slug} (reservation {rid}) has priority {p}, not above h100-spot (priority 50) in the priority "
        "expander; a reservation is paid for whether used or not: make it capacity_ladder's first rung"
        for slug, rid, p in (("block", "cr-0a1b2c3d4e5f60718", 40), ("reserved", "cr-0123456789abcdef0", 30))
    ]
    first = _h100_groups(["block", "reserved", "spot", "on-demand"])
    assert [f for f in evaluate(first, load_policy_config({})) if f.rule == "reservation-rung-first"] == []
