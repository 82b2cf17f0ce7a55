"""`gpu-platform prices`: the price table `simulate` costs a run with.

gpu-platform prices refresh [--cloud gcp|aws|both] --out FILE
    Ask the providers' pricing APIs (AWS Price List and EC2 spot history; Google's Cloud
    Billing Catalog) for every type a stack can name in every region, with the usual
    credentials, and write the table (the shipped one's shape) for `simulate --prices FILE`.
    A cloud not asked keeps the shipped table's entries. Exit 0, 2 on bad flags, 4 when a
    provider cannot be asked (one line: no credentials, a refusal).
gpu-platform prices build --file KEY=PATH ... [--gcp-from TABLE | --aws-from TABLE] --date TEXT --out FILE
    Rebuild the shipped table (infra/simulate/prices.json) from local copies of the pinned
    public files price_sources.BUILD_SOURCES names (each KEY at its commit); one cloud's part
    may be kept from an existing table instead (its sources carried over).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from gpu_platform.infra.cli.common import err
from gpu_platform.infra.errors import EXIT_OK, EXIT_SERVICE, CommandError

CLOUDS = ("gcp", "aws", "both")


def _read_text(flag: str, path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise CommandError(f"{flag} {path}: cannot read ({exc.strerror or type(exc).__name__})") from None
    except UnicodeDecodeError:
        raise CommandError(f"{flag} {path}: not UTF-8 text") from None


def _read_yaml(flag: str, path: str) -> Any:
    import yaml

    from gpu_platform.infra.yaml_io import SAFE_LOADER  # pricing.yml is 4 MB: libyaml reads it in seconds

    try:
        return yaml.load(_read_text(flag, path), Loader=SAFE_LOADER)
    except yaml.YAMLError as exc:
        raise CommandError(f"{flag} {path}: invalid YAML: {str(exc).splitlines()[0]}") from None


def _files(values: list[str]) -> dict[str, str]:
    from gpu_platform.infra.simulate.price_sources import BUILD_SOURCES

    keys = {s.key for s in BUILD_SOURCES}
    out: dict[str, str] = {}
    for value in values:
        key, sep, path = value.partition("=")
        if not sep or key not in keys or not path:
            raise CommandError(f"--file {value}: KEY=PATH with KEY one of {', '.join(sorted(keys))}")
        if key in out:
            raise CommandError(f"--file {key}: given twice")
        out[key] = path
    return out


def cmd_build(args: argparse.Namespace) -> int:
    from gpu_platform.infra.output import file_target, write_outputs
    from gpu_platform.infra.simulate.price_sources import (
        BUILD_SOURCES,
        aws_from_skypilot,
        gcp_gpus_from_skypilot,
        gcp_machines_from_cyclenerd,
        kept_sources,
        table_json,
        table_of,
    )
    from gpu_platform.infra.simulate.prices import PriceTable

    files = _files(args.file)
    target = file_target("--out", args.out)
    gcp_files = [k for k in ("gcp-machines", "gcp-gpus") if k in files]
    if args.gcp_from is not None and gcp_files:
        raise CommandError(f"give the GCP part once: --file {gcp_files[0]}=PATH or --gcp-from TABLE (kept), not both")
    if args.gcp_from is None:
        for needed in ("gcp-machines", "gcp-gpus"):
            if needed not in files:
                raise CommandError(f"--file {needed}=PATH: required (the GCP part of the table), or --gcp-from TABLE to keep it")
    if ("aws" in files) == (args.aws_from is not None):
        raise CommandError("give the AWS part once: --file aws=PATH (SkyPilot's aws/vms.csv) or --aws-from TABLE (kept)")
    by_key = {s.key: s for s in BUILD_SOURCES}
    if args.gcp_from is None:
        sources = [by_key[k].cite() for k in ("gcp-machines", "gcp-gpus")]
        machines = gcp_machines_from_cyclenerd(_read_yaml("--file gcp-machines", files["gcp-machines"]))
        gpus = gcp_gpus_from_skypilot(_read_text("--file gcp-gpus", files["gcp-gpus"]))
    else:
        kept = PriceTable.from_data(_read_yaml("--gcp-from", args.gcp_from), f"--gcp-from {args.gcp_from}")
        machines = {t.region: dict(t.machines) for t in kept.gcp}
        gpus = {t.region: dict(t.gpus) for t in kept.gcp}
        sources = kept_sources(kept, "gcp")
    if "aws" in files:
        aws = aws_from_skypilot(_read_text("--file aws", files["aws"]))
        sources.append(by_key["aws"].cite())
    else:
        kept = PriceTable.from_data(_read_yaml("--aws-from", args.aws_from), f"--aws-from {args.aws_from}")
        aws = {t.region: dict(t.machines) for t in kept.aws}
        sources += kept_sources(kept, "aws")
    sources += args.note
    sources.append("control-plane fee: GKE cluster management and EKS standard support, USD 0.10 per cluster-hour (the providers' pricing pages)")
    table = table_of(args.date, sources, machines, gpus, aws)
    data = table_json(table)
    write_outputs([(target, data)])
    err(f"prices: {len(table.gcp)} GCP and {len(table.aws)} AWS regions, {len(data) // 1024} KiB -> {args.out}")
    return EXIT_OK


def cmd_refresh(args: argparse.Namespace) -> int:
    from gpu_platform.components.core.cloud import Cloud
    from gpu_platform.infra.output import file_target, write_outputs
    from gpu_platform.infra.simulate.price_sources import table_json
    from gpu_platform.infra.simulate.prices import PriceTable
    from gpu_platform.infra.simulate.refresh import CloudError, refreshed_table

    target = file_target("--out", args.out)
    clouds = {Cloud.GCP, Cloud.AWS} if args.cloud == "both" else {Cloud(args.cloud)}
    gcp_client = aws_client = None
    if Cloud.GCP in clouds:
        gcp_client = _gcp_client()
    if Cloud.AWS in clouds:
        aws_client = _aws_client()
    try:
        table = refreshed_table(clouds, aws_client, gcp_client, PriceTable.shipped())
    except CloudError as exc:
        raise CommandError(str(exc), EXIT_SERVICE) from None
    write_outputs([(target, table_json(table))])
    err(f"prices: {len(table.gcp)} GCP and {len(table.aws)} AWS regions ({table.date}) -> {args.out}")
    return EXIT_OK


def _aws_client() -> Any:
    import boto3
    import botocore.exceptions

    session = boto3.Session()
    try:
        if session.get_credentials() is None:
            raise botocore.exceptions.NoCredentialsError()
    except botocore.exceptions.BotoCoreError:
        raise CommandError("cannot ask AWS: no credentials (set AWS_PROFILE or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY)", EXIT_SERVICE) from None
    return lambda service, region: session.client(service, region_name=region)


def _gcp_client() -> Any:
    import warnings

    try:
        with warnings.catch_warnings():
            # google-api-core warns on import about Python versions it will drop one day: not the user's error.
            warnings.simplefilter("ignore", FutureWarning)
            from google.cloud import billing_v1
    except ImportError:
        raise CommandError(
            "cannot ask Google Cloud Billing: google-cloud-billing is not installed (pip install 'gpu-platform[prices]')",
            EXIT_SERVICE,
        ) from None
    from google.auth import exceptions as auth_errors

    from gpu_platform.infra.simulate.refresh import google_error

    try:
        return billing_v1.CloudCatalogClient()
    except auth_errors.GoogleAuthError as exc:  # DefaultCredentialsError: no credentials found
        raise CommandError(google_error(exc), EXIT_SERVICE) from None


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add the `prices` command to the parser."""
    prices = sub.add_parser("prices", parents=[common], help="the price table simulate costs runs with: refresh it from the clouds' APIs")
    actions = prices.add_subparsers(dest="action", required=True)
    refresh = actions.add_parser(
        "refresh",
        parents=[common],
        help="every region's prices from AWS's Price List and spot history and Google's Cloud Billing Catalog",
    )
    refresh.add_argument("--cloud", choices=CLOUDS, default="both", help="which provider to ask (default both; the other keeps the shipped prices)")
    refresh.add_argument("--out", metavar="FILE", required=True, help="the table to write, for simulate --prices FILE (- for standard output)")
    refresh.set_defaults(func=cmd_refresh)
    build = actions.add_parser("build", parents=[common], help="rebuild the shipped table from local copies of its pinned public sources")
    build.add_argument(
        "--file",
        action="append",
        default=[],
        metavar="KEY=PATH",
        help="a local copy of a source at its commit: gcp-machines, gcp-gpus, aws (price_sources.BUILD_SOURCES)",
    )
    build.add_argument("--aws-from", metavar="TABLE", help="keep the AWS part of this table instead of --file aws=PATH")
    build.add_argument("--gcp-from", metavar="TABLE", help="keep the GCP part of this table (e.g. the shipped one) instead of --file gcp-machines/gcp-gpus")
    build.add_argument(
        "--note", action="append", default=[], metavar="TEXT", help="a line added to the table's sources (what a local copy holds of its source, say)"
    )
    build.add_argument("--date", required=True, help="the table's date, as the report prints it")
    build.add_argument("--out", metavar="FILE", required=True, help="the table to write (the shipped one: infra/simulate/prices.json)")
    build.set_defaults(func=cmd_build)
