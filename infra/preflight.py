"""`gpu-platform preflight eks <stack>`: what AWS must offer before an EKS stack can deploy.

For the stack's region and GPU classes, asked of the account with boto3:

- which availability zones offer each GPU instance type (ec2:DescribeInstanceTypeOfferings),
  and whether the stack's zones offer all of them (or, with zones left to lookup, whether
  at least two zones do);
- whether each class's instance types share one shape as EC2 reports them
  (ec2:DescribeInstanceTypes), and whether the catalog the components use agrees;
- whether the account's vCPU quotas for GPU instances (on-demand and spot, G and P
  families; service-quotas:GetServiceQuota) hold every node group at its maximum;
- each capacity reservation and capacity block a class's capacity ladder names
  (ec2:DescribeCapacityReservations): that it exists, is of the rung's kind, is active, lies in one of the
  cluster's zones, holds one of the class's instance types on Linux with default tenancy, and has as many
  available instances as the node groups consuming it keep at their minimum.

One finding per line; a finding that would make a deploy fail (or leave a node group that
can never scale) is an error.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC
from typing import Any

from gpu_platform.components.catalog.gpus import AWS_INSTANCE_TYPES
from gpu_platform.components.core.labels import ELB_ROLE_TAG, INTERNAL_ELB_ROLE_TAG
from gpu_platform.components.eks.args import ExistingVpcArgs
from gpu_platform.components.eks.resources import zones_offering
from gpu_platform.components.pools.ladders import RungKind
from gpu_platform.components.pools.shapes import CapacityType
from gpu_platform.infra.stack.model import StackConfig

__all__ = ["QUOTAS", "CloudError", "Finding", "preflight_eks"]


class CloudError(Exception):
    """AWS could not be asked or answered something that is not an answer; one line."""


QUOTAS: dict[tuple[str, CapacityType], tuple[str, str]] = {
    ("G", CapacityType.ON_DEMAND): ("L-DB2E81BA", "Running On-Demand G and VT instances"),
    ("P", CapacityType.ON_DEMAND): ("L-417A185B", "Running On-Demand P instances"),
    ("G", CapacityType.SPOT): ("L-3819A6DF", "All G and VT Spot Instance Requests"),
    ("P", CapacityType.SPOT): ("L-7212CCBC", "All P Spot Instance Requests"),
}
"""EC2 vCPU quotas (Service Quotas codes) by instance family and capacity type."""


@dataclass(frozen=True)
class Finding:
    """One line of the preflight report."""

    error: bool
    message: str

    def __str__(self) -> str:
        return f"{'error' if self.error else 'ok'}: {self.message}"


def _offerings(ec2: Any, types: list[str]) -> dict[str, set[str]]:
    """Instance type -> the zones that offer it."""
    zones: dict[str, set[str]] = {t: set() for t in types}
    pages = ec2.get_paginator("describe_instance_type_offerings").paginate(
        LocationType="availability-zone", Filters=[{"Name": "instance-type", "Values": types}]
    )
    for page in pages:
        for offering in page["InstanceTypeOfferings"]:
            zones.setdefault(offering["InstanceType"], set()).add(offering["Location"])
    return zones


def _shape(item: dict[str, Any]) -> tuple[int, int, str | None, int]:
    gpus = (item.get("GpuInfo") or {}).get("Gpus") or [{}]
    return item["VCpuInfo"]["DefaultVCpus"], item["MemoryInfo"]["SizeInMiB"], gpus[0].get("Name"), gpus[0].get("Count", 0)


def _quota(quotas: Any, code: str) -> float:
    try:
        return float(quotas.get_service_quota(ServiceCode="ec2", QuotaCode=code)["Quota"]["Value"])
    except quotas.exceptions.NoSuchResourceException:
        # No value applied to this account: the AWS default is in force.
        return float(quotas.get_aws_default_service_quota(ServiceCode="ec2", QuotaCode=code)["Quota"]["Value"])


def preflight_eks(config: StackConfig, region: str, ec2: Any, quotas: Any) -> list[Finding]:
    """The findings for an aws stack, asking ``ec2`` and ``quotas`` (boto3 clients in ``region``).

    Raises CloudError (one line) when AWS cannot be asked (no credentials, no connection,
    a refusal) or answers what is not an EC2/Service Quotas answer (an HTML page, a
    plain-text 500, a document without the expected fields).
    """
    import botocore.exceptions
    from botocore.parsers import ResponseParserError

    try:
        return _preflight_eks(config, region, ec2, quotas)
    except botocore.exceptions.NoCredentialsError:
        raise CloudError(f"cannot ask AWS in {region}: no credentials (set AWS_PROFILE or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY)") from None
    except botocore.exceptions.ClientError as exc:
        error = exc.response.get("Error") or {}
        metadata = exc.response.get("ResponseMetadata")
        status = metadata.get("HTTPStatusCode") if metadata else None
        code = error.get("Code") or f"HTTP {status}"
        message = " ".join(str(error.get("Message") or "").split())[:200]
        raise CloudError(f"AWS refused {exc.operation_name} in {region}: {code}" + (f": {message}" if message else "")) from None
    except (botocore.exceptions.BotoCoreError, ResponseParserError) as exc:
        what = " ".join(str(exc).split())
        raise CloudError(f"cannot ask AWS in {region}: {type(exc).__name__}: {what[:200]}") from None
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise CloudError(
            f"AWS in {region} answered without the fields preflight reads ({type(exc).__name__}: {exc}); "
            "is the endpoint (AWS_ENDPOINT_URL*) an EC2/Service Quotas API?"
        ) from None


def _existing_vpc(vpc: ExistingVpcArgs, ec2: Any) -> list[Finding]:
    """An existing VPC as EC2 sees it: each subnet there, in the VPC, in the zone it is listed under."""
    findings: list[Finding] = []
    listed = [(f"eks.vpc.{field}[{zone}]", zone, str(subnet)) for field, zone, subnet in vpc.subnets()]
    found = {
        s["SubnetId"]: s
        for page in ec2.get_paginator("describe_subnets").paginate(Filters=[{"Name": "subnet-id", "Values": [s for _, _, s in listed]}])
        for s in page["Subnets"]
    }
    for key, zone, subnet in listed:
        seen = found.get(subnet)
        if seen is None:
            findings.append(Finding(True, f"{key}: subnet {subnet} does not exist in this account and region"))
        elif seen["VpcId"] != vpc.vpc_id:
            findings.append(Finding(True, f"{key}: subnet {subnet} is in {seen['VpcId']}, not eks.vpc.vpc_id {vpc.vpc_id}"))
        elif seen["AvailabilityZone"] != zone:
            findings.append(Finding(True, f"{key}: subnet {subnet} is in zone {seen['AvailabilityZone']}, not {zone}; key it by its own zone"))
        else:
            free = seen.get("AvailableIpAddressCount")
            findings.append(
                Finding(False, f"{key}: subnet {subnet} is in {vpc.vpc_id}, zone {zone}" + (f", {free} free addresses" if free is not None else ""))
            )
            findings.append(_role_tag(key, subnet, seen))
    return findings


def _role_tag(key: str, subnet: str, seen: dict[str, Any]) -> Finding:
    """The subnet carries the role tag by which the AWS Load Balancer Controller finds it: kubernetes.io/role/elb=1
    on a public subnet (internet-facing load balancers), kubernetes.io/role/internal-elb=1 on a private one."""
    public = ".public_subnet_ids[" in key
    tag, balancers = (ELB_ROLE_TAG, "internet-facing") if public else (INTERNAL_ELB_ROLE_TAG, "internal")
    tags = {t["Key"]: t.get("Value", "") for t in seen.get("Tags", [])}
    if tags.get(tag) == "1":
        return Finding(False, f"{key}: subnet {subnet} carries {tag}=1 ({balancers} load balancers)")
    found = f"it has {tag}={tags[tag]}" if tag in tags else "it has no such tag"
    return Finding(
        True,
        f"{key}: subnet {subnet} needs tag {tag}=1, by which the AWS Load Balancer Controller finds subnets for {balancers} load balancers ({found}); tag it",
    )


def _preflight_eks(config: StackConfig, region: str, ec2: Any, quotas: Any) -> list[Finding]:
    assert config.eks is not None and config.eks_node_groups is not None
    groups = config.eks_node_groups
    findings: list[Finding] = []
    types = groups.instance_types()

    offered = _offerings(ec2, types)
    for itype in types:
        zones = sorted(offered.get(itype, ()))
        if zones:
            findings.append(Finding(False, f"{itype} is offered in {', '.join(zones)}"))
        else:
            findings.append(Finding(True, f"{itype} is offered in no zone of {region}; choose another type or region"))
    everywhere = sorted(set.intersection(*(offered.get(t, set()) for t in types))) if types else []
    # The GPU classes' zones and their GPUs, vCPUs and memory per node: the plan's (StackConfig.pool_shapes()).
    shapes = {s.name: s for s in config.pool_shapes()}
    gpu_shapes = [shapes[cls.name] for cls in groups.classes]
    named = [s.zones for s in gpu_shapes if s.zones is not None]
    configured = list(dict.fromkeys(z for zones in named for z in zones)) if named else None
    source = "eks.vpc.private_subnet_ids" if config.eks.vpc is not None else "eks.zones"
    # The zones the node groups run in: the plan's, else those EksCluster looks up (the first zone_count that offer every type).
    node_zones: tuple[tuple[str, ...], str] | None = None
    if configured is not None:
        node_zones = (tuple(configured), source)
        findings += [Finding(False, f"zone {zone} offers {', '.join(types)}") for zone in configured if all(zone in offered.get(t, ()) for t in types)]
        try:
            # The one verdict, EksCluster's own (it refuses the same zones at args.zones before registering anything).
            zones_offering([(z, t) for t, zones in offered.items() for z in zones], types, configured)
        except ValueError as refused:
            findings.append(Finding(True, f"{source}: {refused}: its node groups could never get those nodes"))
    elif len(everywhere) < 2:
        findings.append(Finding(True, f"fewer than two zones of {region} offer {', '.join(types)} (found {', '.join(everywhere) or 'none'}); EKS needs two"))
    else:
        picked = everywhere[: max(s.zone_count for s in gpu_shapes)]
        findings.append(Finding(False, f"zones looked up at deploy: {', '.join(picked)} offer {', '.join(types)}"))
        node_zones = (tuple(picked), "the zones looked up at deploy")

    if config.eks.vpc is not None:
        findings += _existing_vpc(config.eks.vpc, ec2)

    # Only types the region offers: DescribeInstanceTypes refuses the whole call
    # (InvalidInstanceType) when one type is unknown there, and those are reported above.
    known = [t for t in types if offered.get(t)]
    reported = {
        item["InstanceType"]: item
        for page in (ec2.get_paginator("describe_instance_types").paginate(InstanceTypes=known) if known else ())
        for item in page["InstanceTypes"]
    }
    for index, cls in enumerate(groups.classes):
        planned = shapes[cls.name]
        # The plan's vCPUs, memory and GPUs per node; the GPU's name as EC2 reports it, the catalog's (or the stated shape's).
        stated = (planned.vcpus, planned.memory_mib, cls.instance_shape.gpu, planned.gpus_per_node)
        ec2_shapes = {t: _shape(reported[t]) for t in cls.instance_types if t in reported}
        for itype in cls.instance_types:
            if itype not in reported:
                continue
            if ec2_shapes[itype] != stated:
                source, fix = (
                    ("the class's shape", f"correct eks_node_groups.classes[{index}].shape")
                    if cls.shape is not None and itype not in AWS_INSTANCE_TYPES
                    else ("the catalog", "fix components/catalog/aws.py")
                )
                findings.append(
                    Finding(
                        True,
                        f"class {cls.name}: EC2 reports {itype} as {ec2_shapes[itype]} (vCPUs, MiB, GPU, GPUs), {source} as {stated}: {fix}",
                    )
                )
        if len(set(ec2_shapes.values())) > 1:
            findings.append(Finding(True, f"class {cls.name}: instance types differ in shape: {ec2_shapes}"))
        elif ec2_shapes:
            vcpus, mib, gpu, count = next(iter(ec2_shapes.values()))
            findings.append(
                Finding(False, f"class {cls.name}: {', '.join(cls.instance_types)} share one shape ({vcpus} vCPUs, {mib // 1024} GiB, {count}x {gpu})")
            )

    findings += _reservation_findings(config, ec2, node_zones)

    need: dict[tuple[str, CapacityType], list[tuple[str, int]]] = defaultdict(list)
    for cls in groups.classes:
        family, vcpus = cls.instance_shape.quota_family, shapes[cls.name].vcpus
        assert family is not None  # GPU classes only
        for group in cls.node_groups():
            need[(family, group.capacity)].append((f"{group.name} {group.max_nodes}x{vcpus}", group.max_nodes * vcpus))
    for key in sorted(need, key=lambda k: (k[0], k[1].value)):
        code, name = QUOTAS[key]
        total = sum(v for _, v in need[key])
        have = _quota(quotas, code)
        detail = " + ".join(label for label, _ in need[key])
        what = f"{name} ({code}) in {region}"
        if total > have:
            findings.append(Finding(True, f"{what} is {have:g} vCPUs; the node groups may need {total} ({detail}): request an increase"))
        else:
            findings.append(Finding(False, f"{what} is {have:g} vCPUs; the node groups need at most {total}"))
    return findings


_USABLE = "active"
"""The one state in which a capacity reservation or capacity block launches instances (DescribeCapacityReservations' State)."""
_NOT_YET = frozenset({"scheduled", "pending", "payment-pending", "assessing", "delayed"})
"""States of a reservation that has not started: a capacity block before its window, a future-dated reservation."""
_KIND = {"capacity-block": RungKind.CAPACITY_BLOCK, "default": RungKind.RESERVATION}
"""A reservation's ReservationType as the rung kind that consumes it."""


def _described(ec2: Any, reservation: str) -> dict[str, Any] | None:
    """The capacity reservation (or capacity block) ``reservation`` as DescribeCapacityReservations lists it (the
    account's own and those shared with it, in the client's region); None when EC2 knows no such id."""
    import botocore.exceptions

    try:
        found = ec2.describe_capacity_reservations(CapacityReservationIds=[reservation])["CapacityReservations"]
    except botocore.exceptions.ClientError as exc:
        if (exc.response.get("Error") or {}).get("Code", "").startswith("InvalidCapacityReservationId."):
            return None
        raise
    return found[0] if found else None


def _window(found: dict[str, Any]) -> str:
    """A reservation's start and end as EC2 states them (a capacity block's window)."""
    start, end = found.get("StartDate"), found.get("EndDate")
    stamp = "%Y-%m-%dT%H:%MZ"
    since = f"from {start.astimezone(UTC).strftime(stamp)}" if start is not None else ""
    until = f"until {end.astimezone(UTC).strftime(stamp)}" if end is not None else "no end date"
    return f"{since} {until}" if since and end is not None else ", ".join(p for p in (since, until) if p)


def _reservation_findings(config: StackConfig, ec2: Any, zones: tuple[tuple[str, ...], str] | None) -> list[Finding]:
    """Each reservation and capacity block the classes' ladders name, against what EC2 describes of it.

    A managed node group that targets one launches its instances only into it (capacity-reservations-only), so it
    must be of the rung's kind (a capacity block for capacity_block; an On-Demand Capacity Reservation for
    reservation), active (a capacity block only within its window), in a zone the node groups' subnets cover, for
    one of the class's instance types on Linux/UNIX with default tenancy (the AMIs and launch templates these node
    groups use), and hold as many available instances as the node groups consuming it keep (their min_nodes)."""
    assert config.eks_node_groups is not None
    groups = config.eks_node_groups
    rungs = [
        (f"eks_node_groups.classes[{i}].capacity_ladder[{j}].reservation", cls, group)
        for i, cls in enumerate(groups.classes)
        for j, group in enumerate(cls.node_groups())
        if group.rung.kind in (RungKind.RESERVATION, RungKind.CAPACITY_BLOCK) and group.rung.reservation is not None
    ]
    keeps: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for _, _, group in rungs:
        assert group.rung.reservation is not None
        keeps[group.rung.reservation].append((group.name, group.min_nodes))
    seen: dict[str, dict[str, Any] | None] = {}
    findings: list[Finding] = []
    told: set[str] = set()
    for key, cls, group in rungs:
        reservation, kind = group.rung.reservation, group.rung.kind
        assert reservation is not None
        where = f"class {cls.name}: {key} {reservation}"
        if reservation not in seen:
            seen[reservation] = _described(ec2, reservation)
        found = seen[reservation]
        if found is None:
            findings.append(
                Finding(True, f"{where}: EC2 knows no capacity reservation {reservation} in this account and region (nor one shared with it): check the id")
            )
            continue
        problems = []
        what = "capacity block" if found.get("ReservationType") == "capacity-block" else "capacity reservation"
        if _KIND.get(found.get("ReservationType") or "default") is not kind:
            other = "capacity_block" if kind is RungKind.RESERVATION else "reservation"
            problems.append(f"it is a {what}, not what a {kind.value} rung consumes: make the rung kind {other}")
        state, window = found["State"], _window(found)
        if state in _NOT_YET:
            if group.min_nodes > 0:
                problems.append(
                    f"it is {state} ({window}), not active: node group {group.name} keeps min_nodes {group.min_nodes}, which cannot launch before it starts"
                )
        elif state != _USABLE:
            problems.append(f"it is {state} ({window}): only an active {what} launches instances")
        zone = found["AvailabilityZone"]
        if zones is not None and zone not in zones[0]:
            problems.append(f"it is in {zone}, not in {zones[1]} ({', '.join(zones[0])}): the node group's subnets cannot launch into it")
        itype = found["InstanceType"]
        if itype not in cls.instance_types:
            problems.append(f"it holds {itype}, not the class's {', '.join(cls.instance_types)}")
        platform, tenancy = found.get("InstancePlatform", "Linux/UNIX"), found.get("Tenancy", "default")
        if platform != "Linux/UNIX" or tenancy != "default":
            problems.append(f"it is for {platform} with {tenancy} tenancy; the node groups launch Linux/UNIX instances with default tenancy")
        if problems:
            findings += [Finding(True, f"{where}: {problem}") for problem in problems]
            continue
        if reservation in told:
            continue
        told.add(reservation)
        available, total = found["AvailableInstanceCount"], found["TotalInstanceCount"]
        keep = sum(n for _, n in keeps[reservation])
        detail = " + ".join(f"{name} {n}" for name, n in keeps[reservation])
        held = f"{available} of {total} {itype} available in {zone}"
        if keep > available:
            findings.append(Finding(True, f"{where}: {held}; the node groups consuming it keep {keep} ({detail}): lower their min_nodes or enlarge the {what}"))
        else:
            findings.append(Finding(False, f"{where}: {what} {state} ({window}), {held}; the node groups consuming it keep {keep} ({detail})"))
    return findings
