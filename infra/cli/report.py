"""`gpu-platform report`: GPU pod waits and utilisation from a cluster's Prometheus."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from gpu_platform.infra.cli.common import table_console
from gpu_platform.infra.errors import EXIT_OK, CommandError


def _url_password(url: str) -> str | None:
    from urllib.parse import urlsplit

    try:
        return urlsplit(url).password or None
    except ValueError:
        return None


@dataclass(frozen=True)
class _Stack:
    """What the per-tenant figures need from the stack: its tenants, cloud and region, and the prices."""

    tenants: dict[str, str]
    cloud: Any
    region: str
    prices: Any
    pools: list[Any]
    """The plan's pools (StackConfig.pool_shapes()): each GPU node's physical GPUs."""


def _tenant_inputs(args: argparse.Namespace) -> _Stack:
    """The stack's tenants and the price table, checked before any query (one line, exit 2, otherwise)."""
    from gpu_platform.infra.cli.common import read_stack, yaml_file
    from gpu_platform.infra.report.tenants import tenant_namespaces
    from gpu_platform.infra.simulate.prices import PriceTable
    from gpu_platform.infra.simulate.settings import SimulationError

    prices = (
        PriceTable.from_data(yaml_file("--prices", args.prices, "a price table (date, sources, gcp, aws)"), f"--prices {args.prices}")
        if args.prices is not None
        else PriceTable.shipped()
    )
    config = read_stack(args)
    tenants = tenant_namespaces(config)
    if not tenants:
        raise CommandError(f"--stack {args.stack}: the stack has no tenants (dask.tenants, kubeflow.install.tenants) to report on")
    if config.region is None:
        raise CommandError(f"--stack {args.stack}: the stack does not say its region (gke location, eks.region or aws:region): the prices need it")
    try:
        prices.region(config.cloud, config.region)
    except SimulationError as exc:
        raise CommandError(f"--stack {args.stack}: {exc}") from None
    return _Stack(tenants, config.cloud, config.region, prices, config.pool_shapes())


def cmd_report(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from gpu_platform.infra.output import folder_target, write_outputs
    from gpu_platform.infra.report.prometheus import (
        REPORT_FILES,
        ReportError,
        ReportInputs,
        collect,
        report_files,
        table_rows,
    )
    from gpu_platform.infra.stack.errors import format_validation_error

    try:
        inputs = ReportInputs(prometheus=args.prometheus, start=args.start, end=args.end, step=args.step, timeout=args.timeout)
    except ValidationError as exc:
        lines = ["--" + line for line in format_validation_error(exc, ReportInputs)]
        password = _url_password(args.prometheus)
        raise CommandError([line.replace(password, "***") if password else line for line in lines]) from None
    # Checked now, written (whole, or not at all) only when the report is made.
    target = folder_target("--out", args.out, REPORT_FILES)
    stack = _tenant_inputs(args) if args.stack is not None else None
    # rich and matplotlib only load for this command: the preview does not pay for them.
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
    from rich.table import Table

    with Progress(
        SpinnerColumn(),
        TextColumn("querying Prometheus: {task.description}"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task("starting", total=None)
        try:
            report = collect(inputs, progress=lambda what: bar.update(task, description=what))
            if stack is not None:
                from gpu_platform.infra.report.tenants import collect_tenants

                report.tenants = collect_tenants(
                    inputs,
                    report.pending_by_pod,
                    stack.tenants,
                    stack.prices,
                    stack.cloud,
                    stack.region,
                    progress=lambda what: bar.update(task, description=what),
                    pools=stack.pools,
                )
        except ReportError:
            bar.stop()
            raise
    files = report_files(report)
    if report.tenants is not None:
        from gpu_platform.infra.report.tenants import tenant_plot

        files["tenants.png"] = tenant_plot(report.tenants)
    write_outputs([(target, files)])
    table = Table(title="GPU pod wait times and GPU utilisation")
    table.add_column("what")
    table.add_column("value")
    for what, value in table_rows(report):
        table.add_row(what, value)
    console = table_console()
    console.print(table)
    if report.tenants is not None:
        from gpu_platform.infra.report.tenants import print_tenants

        print_tenants(console, report.tenants)
    console.print(f"wrote {target.path / 'report.json'}, " + ", ".join(str(target.path / n) for n in REPORT_FILES[1:] if n in files), soft_wrap=True)
    return EXIT_OK


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add the `report` command to the parser."""
    report = sub.add_parser("report", parents=[common], help="GPU pod wait times and GPU utilisation from Prometheus")
    report.add_argument("--prometheus", required=True, metavar="URL", help="the Prometheus base URL (http://host:9090)")
    report.add_argument("--start", required=True, help="start: RFC 3339 (2026-11-20T10:00:00Z) or Unix seconds")
    report.add_argument("--end", required=True, help="end: RFC 3339 or Unix seconds")
    report.add_argument("--step", default="1s", help="sampling step, at most 1d; at most 1,000,000 steps per report (default 1s, the RAPIDS deep-dive's)")
    report.add_argument(
        "--out",
        metavar="DIR",
        default="report",
        help="where report.json and the PNG plots go, replaced whole when the report is made (default ./report)",
    )
    report.add_argument("--timeout", default="30", help="seconds per HTTP request (default 30)")
    report.add_argument(
        "--stack",
        help="per-tenant cost and queues for this stack's tenants (stacks/Pulumi.<stack>.yaml): GPU-hours, cost, spot share, pod and queue waits, tenants.png",
    )
    report.add_argument("--prices", metavar="FILE", help="--stack: a price table (the shape of infra/simulate/prices.json; default the shipped one)")
    report.add_argument("--project-dir", metavar="DIR", help="--stack: the folder holding Pulumi.yaml")
    report.set_defaults(func=cmd_report)
