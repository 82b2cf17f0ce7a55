"""The `gpu-platform` command line.

    gpu-platform preview <stack> [--json PLAN] [--manifests DIR] [--apply local|KUBECONFIG]
        Run the Pulumi program offline under a recording mock engine, check its Kubernetes
        objects and run the policy pack over it. Exit 0 clean, 1 schema or mandatory policy
        violations, 2 config errors, 3 the program failed.
    gpu-platform preflight eks <stack>
        Ask AWS (boto3, the usual credentials) whether the stack's zones offer its GPU instance
        types, whether each class's types share one shape, and whether the GPU vCPU quotas hold
        every node group at its maximum. Exit 0 when a deploy would pass, 1 when it would fail,
        4 when AWS cannot be asked or answers something that is not an answer.
    gpu-platform docs [--check | --write]
        The references generated from the code (docs/reference/, the README's contents, Pulumi.yaml's config).
    gpu-platform plan-capacity <stack> --pool NAME [--inputs FILE] [--cpu ..] [--runs N] ...
        Nodes for N parallel pipeline runs in T, time of N on K nodes, runs that fit in T on
        K, and whether the pool's autoscaling maximum allows it (infra/capacity.py). Exit 0,
        1 when the pool's maximum is too low, 2 on bad inputs or a step that fits no node.
    gpu-platform report --prometheus URL --start T --end T [--out DIR]
        GPU pod wait times and GPU utilisation from the cluster's Prometheus, as a table,
        JSON and PNG plots (infra/report/prometheus.py). Exit 0, 2 on bad inputs, 4 when Prometheus
        cannot answer or lacks the metrics.
    gpu-platform prices refresh [--cloud gcp|aws|both] --out FILE
        The price table simulate costs runs with, asked of AWS's Price List and spot history and
        Google's Cloud Billing Catalog (infra/cli/prices.py). Exit 0, 2 on bad flags, 4 when a
        provider cannot be asked.

Errors print one line per problem and no traceback, for any input; every command shares
the exit codes of infra/errors.py (2 bad input, 3 an unexpected failure, 4 a service that
cannot answer, 130 interrupted). `--debug` or GPU_PLATFORM_DEBUG=1 prints the traceback of
an unexpected failure; `--version` prints the version.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from gpu_platform.infra.errors import EXIT_INTERRUPTED

__all__ = ["build_parser", "main", "run"]


def run() -> None:
    """The console script. Importing the command line takes the provider SDKs with it, over a
    second on a loaded machine: a Ctrl-C in that second is answered like one at any later
    instant (one line, exit 130, nothing written) rather than with an import traceback."""
    try:
        from gpu_platform.infra.cli.app import run as run_command
    except KeyboardInterrupt:
        try:
            sys.stderr.write("gpu-platform: interrupted\n")
            sys.stderr.flush()
        finally:
            os._exit(EXIT_INTERRUPTED)
    run_command()


def __getattr__(name: str) -> Any:
    """`main` and `build_parser` for programs and tests, imported when first asked for."""
    if name in ("main", "build_parser", "COMMANDS"):
        from gpu_platform.infra.cli import app

        return getattr(app, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
