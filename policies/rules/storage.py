"""Data guardrails for shared datasets: buckets and file systems encrypted, no bucket public."""

from __future__ import annotations

from collections.abc import Iterator

from gpu_platform.policies.rules.base import Resource, ResourceRule, RuleConfig, StackRule

S3_BUCKET = "aws:s3/bucket:Bucket"
S3_ENCRYPTION = "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration"
S3_PUBLIC_ACCESS_BLOCK = "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock"
GCS_BUCKET = "gcp:storage/bucket:Bucket"
GCS_GRANTS = ("gcp:storage/bucketIAMMember:BucketIAMMember", "gcp:storage/bucketIAMBinding:BucketIAMBinding")
LUSTRE = "aws:fsx/lustreFileSystem:LustreFileSystem"
PUBLIC_BLOCKS = ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")
PUBLIC_ACLS = ("public-read", "public-read-write", "authenticated-read")
PUBLIC_MEMBERS = ("allUsers", "allAuthenticatedUsers")


def _s3_name(r: Resource) -> str:
    return str(r.props.get("bucket") or r.name)


def _sse_algorithms(rules: object) -> list[str]:
    """The default algorithms of server-side encryption rules (the resource's ``rules``, or a bucket's inline ``rule``)."""
    found = []
    for rule in rules if isinstance(rules, list) else [rules]:
        by_default = (rule or {}).get("applyServerSideEncryptionByDefault") if isinstance(rule, dict) else None
        if isinstance(by_default, dict) and by_default.get("sseAlgorithm"):
            found.append(str(by_default["sseAlgorithm"]))
    return found


def check_buckets_encrypted(resources: list[Resource], config: RuleConfig) -> Iterator[tuple[str, str]]:
    """Every S3 bucket the stack creates has default server-side encryption declared (its own
    BucketServerSideEncryptionConfiguration, or the bucket's inline configuration). Cloud Storage encrypts
    every object at rest with Google-managed keys and cannot be turned off, so GCS buckets always pass."""
    encrypted = {str(r.props.get("bucket")) for r in resources if r.type == S3_ENCRYPTION and _sse_algorithms(r.props.get("rules"))}
    for r in resources:
        if r.type != S3_BUCKET:
            continue
        inline = (r.props.get("serverSideEncryptionConfiguration") or {}).get("rule")
        if _s3_name(r) not in encrypted and not _sse_algorithms(inline):
            yield r.name, f"S3 bucket {_s3_name(r)} declares no default server-side encryption"


def check_lustre_encrypted(r: Resource, config: RuleConfig) -> Iterator[str]:
    """A persistent FSx for Lustre file system names the KMS key that encrypts it (scratch file systems are
    encrypted with an AWS-owned key and take none)."""
    if r.type != LUSTRE:
        return
    deployment = str(r.props.get("deploymentType") or "SCRATCH_1")
    if deployment.startswith("PERSISTENT") and not r.props.get("kmsKeyId"):
        yield f"FSx for Lustre file system of type {deployment} names no KMS key (kmsKeyId)"


def check_buckets_not_public(resources: list[Resource], config: RuleConfig) -> Iterator[tuple[str, str]]:
    """No bucket can be made public: every S3 bucket has a public access block with all four settings on and no
    public canned ACL; every Cloud Storage bucket enforces public access prevention and no grant names allUsers
    or allAuthenticatedUsers."""
    blocked = {str(r.props.get("bucket")) for r in resources if r.type == S3_PUBLIC_ACCESS_BLOCK and all(r.props.get(k) is True for k in PUBLIC_BLOCKS)}
    for r in resources:
        if r.type == S3_BUCKET:
            if _s3_name(r) not in blocked:
                yield r.name, f"S3 bucket {_s3_name(r)} has no public access block with {', '.join(PUBLIC_BLOCKS)} all true"
            if r.props.get("acl") in PUBLIC_ACLS:
                yield r.name, f"S3 bucket {_s3_name(r)} has the public canned ACL {r.props['acl']}"
        elif r.type == GCS_BUCKET and r.props.get("publicAccessPrevention") != "enforced":
            yield r.name, f"Cloud Storage bucket {r.props.get('name') or r.name} does not enforce public access prevention"
        elif r.type in GCS_GRANTS:
            members = [r.props.get("member"), *(r.props.get("members") or [])]
            for member in members:
                if member in PUBLIC_MEMBERS:
                    yield r.name, f"bucket {r.props.get('bucket')} is granted to {member}"


RULES: list[ResourceRule | StackRule] = [
    StackRule(
        "bucket-encrypted",
        "Every S3 bucket the stack creates declares default server-side encryption (Cloud Storage always encrypts at rest).",
        "Create the bucket with SharedDatasets (aws:kms with a bucket key), or add a BucketServerSideEncryptionConfiguration.",
        check_buckets_encrypted,
    ),
    ResourceRule(
        "fsx-encrypted",
        "Persistent FSx for Lustre file systems are encrypted with a named KMS key.",
        "Leave fsx.kms_key_id unset (SharedDatasets creates a key with rotation) or name your key.",
        check_lustre_encrypted,
    ),
    StackRule(
        "bucket-not-public",
        "No bucket can be public: S3 buckets carry a full public access block and no public ACL; Cloud Storage buckets enforce public access prevention and grant nothing to allUsers or allAuthenticatedUsers.",
        "Create buckets with SharedDatasets (it blocks public access), and grant tenants through Workload Identity or IRSA, never the public.",
        check_buckets_not_public,
    ),
]
