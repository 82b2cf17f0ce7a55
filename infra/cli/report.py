"""`gpu-platform report`: GPU pod waits and utilisation from a cluster's Prometheus."""

from __future__ import annotations

import argparse
from typing import Any

from gpu_platform.infra.errors import EXIT_OK, CommandError


def _url_password(url: str) -> str | None:
    from urllib.parse import urlsplit

    try:
        return urlsplit(url).password or None
    except ValueError:
        return None

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
        inputs = ReportInputs(
            prometheus=args.prometheus, start=args.start, end=args.end, step=args.step, timeout=args.timeout
        )
    except ValidationError as exc:
        lines = ["--" + line for line in format_validation_error(exc, ReportInputs)]
        password = _url_password(args.prometheus)
        raise CommandError([line.replace(password, "***") if password else line for line in lines]) from None
    # Checked now, written (whole, or not at all) only when the report is made.
    target = folder_target("--out", args.out, REPORT_FILES)
    # rich and matplotlib only load for this command: the preview does not pay for them.
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
    from rich.table import Table

    with Progress(
        SpinnerColumn(), TextColumn("querying Prometheus: {task.description}"), TimeElapsedColumn(),
        console=Console(stderr=True), transient=True,
    ) as bar:
        task = bar.add_task("starting", total=None)
        try:
            report = collect(inputs, progress=lambda what: bar.update(task, description=what))
        except ReportError:
            bar.stop()
            raise
    write_outputs([(target, report_files(report))])
    table = Table(title="GPU pod wait times and GPU utilisation")
    table.add_column("what")
    table.add_column("value")
    for what, value in table_rows(report):
        table.add_row(what, value)
    console = Console(width=max(110, Console().width))
    console.print(table)
    console.print(f"wrote {target.path / 'report.json'}, " + ", ".join(str(target.path / n) for n in REPORT_FILES[1:]), soft_wrap=True)
    return EXIT_OK


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add the `report` command to the parser."""
    report = sub.add_parser("report", parents=[common], help="GPU pod wait times and GPU utilisation from Prometheus")
    report.add_argument("--prometheus", required=True, metavar="URL", help="the Prometheus base URL (http://host:9090)")
    report.add_argument("--start", required=True, help="start: RFC 3339 (2026-11-20T10:00:00Z) or Unix seconds")
    report.add_argument("--end", required=True, help="end: RFC 3339 or Unix seconds")
    report.add_argument("--step", default="1s", help="sampling step, at most 1d; at most 1,000,000 steps per report (default 1s, the RAPIDS deep-dive's)")
    report.add_argument(
        "--out", metavar="DIR", default="report",
        help="where report.json and the PNG plots go, replaced whole when the report is made (default ./report)",
    )
    report.add_argument("--timeout", default="30", help="seconds per HTTP request (default 30)")
    report.set_defaults(func=cmd_report)
