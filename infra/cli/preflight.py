"""`gpu-platform preflight eks|gke`: what the cloud account must offer before a stack deploys."""

from __future__ import annotations

import argparse
from typing import Any

from gpu_platform.infra.cli.common import first_line, read_stack
from gpu_platform.infra.errors import (
    EXIT_OK,
    EXIT_SERVICE,
    EXIT_VIOLATIONS,
    CommandError,
)


def cmd_preflight(args: argparse.Namespace) -> int:
    from gpu_platform.components.core.cloud import Cloud
    from gpu_platform.infra.preflight import CloudError, preflight_eks

    config = read_stack(args)
    if config.existing_cluster is not None:
        raise CommandError(
            f"stack {args.stack} sets existing_cluster: preflight {args.cloud} checks the quotas and zones of the cluster and pools a "
            "stack creates, and this stack creates none (the cluster's owner made its pools)"
        )
    if args.cloud == "gke":
        return _preflight_gke(args, config)
    if config.cloud is not Cloud.AWS:
        raise CommandError(f"stack {args.stack} deploys to {config.cloud.value}, not aws: preflight {args.cloud} checks EKS stacks")
    import boto3
    import pulumi_aws

    assert config.eks is not None
    region = config.eks.region or str(pulumi_aws.config.region)
    try:
        session = boto3.Session(region_name=region)
        ec2, quotas = session.client("ec2"), session.client("service-quotas")
    except Exception as exc:
        raise CommandError(f"cannot ask AWS in {region}: {type(exc).__name__}: {first_line(exc)}", EXIT_SERVICE) from exc
    try:
        findings = preflight_eks(config, region, ec2, quotas)
    except CloudError as exc:
        raise CommandError(str(exc), EXIT_SERVICE) from exc
    for finding in findings:
        print(finding)
    errors = sum(f.error for f in findings)
    print(f"{len(findings)} checks, {errors} would fail a deploy")
    return EXIT_VIOLATIONS if errors else EXIT_OK


def _preflight_gke(args: argparse.Namespace, config: Any) -> int:
    from gpu_platform.components.core.cloud import Cloud
    from gpu_platform.infra.preflight import CloudError
    from gpu_platform.infra.preflight_gke import ComputeClients, preflight_gke

    if config.cloud is not Cloud.GCP:
        raise CommandError(f"stack {args.stack} deploys to {config.cloud.value}, not gcp: preflight gke checks GKE stacks")
    clients = None
    project = config.gke.project if isinstance(config.gke.project, str) else None
    if not args.offline:
        try:
            import warnings

            import pulumi_gcp

            with warnings.catch_warnings():  # google-api-core's notice of Python versions it will drop: not the user's problem here
                warnings.simplefilter("ignore", FutureWarning)
                from google.cloud import compute_v1
        except ImportError as exc:
            raise CommandError(
                f"preflight gke online needs google-cloud-compute ({exc.name} is missing): pip install 'gpu-platform[gcp]', or run it with --offline"
            ) from None
        project = project or pulumi_gcp.config.project
        from google.auth.exceptions import DefaultCredentialsError

        try:
            clients = ComputeClients(compute_v1.AcceleratorTypesClient(), compute_v1.RegionsClient(), compute_v1.ReservationsClient())
        except DefaultCredentialsError:
            raise CommandError(
                "cannot ask Google Cloud: no credentials (gcloud auth application-default login, or GOOGLE_APPLICATION_CREDENTIALS)", EXIT_SERVICE
            ) from None
    try:
        findings = preflight_gke(config, project, clients)
    except CloudError as exc:
        raise CommandError(str(exc), EXIT_SERVICE) from exc
    for finding in findings:
        print(finding)
    errors = sum(f.error for f in findings)
    print(f"{len(findings)} checks, {errors} would fail a deploy" + (" (offline: the shipped GPU zone table, no quotas)" if clients is None else ""))
    return EXIT_VIOLATIONS if errors else EXIT_OK


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add the `preflight` command to the parser."""
    preflight = sub.add_parser("preflight", parents=[common], help="what the cloud account must offer before a stack deploys")
    preflight.add_argument(
        "cloud",
        choices=["eks", "gke"],
        help="eks: zones, instance shapes, GPU vCPU quotas and the capacity reservations and blocks the ladders name, asked of AWS; "
        "gke: the zones that offer each pool's GPU, the regional GPU, preemptible GPU and CPU quotas and the reservations the ladders name, "
        "asked of the Compute API",
    )
    preflight.add_argument("stack", help="stack name: stacks/Pulumi.<stack>.yaml")
    preflight.add_argument("--offline", action="store_true", help="gke: check the GPU zones against the shipped table only (no Google Cloud call, no quotas)")
    preflight.add_argument("--project-dir", metavar="DIR", help="the folder holding Pulumi.yaml")
    preflight.set_defaults(func=cmd_preflight)
