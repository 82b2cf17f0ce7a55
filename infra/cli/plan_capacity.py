"""`gpu-platform plan-capacity`: nodes for N parallel pipeline runs on a pool of the stack."""

from __future__ import annotations

import argparse
from typing import Any

from gpu_platform.infra.cli.common import json_bytes, pool_shape, read_stack, yaml_file
from gpu_platform.infra.errors import EXIT_OK, EXIT_VIOLATIONS, CommandError

_PLAN_FLAGS = {"cpu": "cpu", "memory": "memory", "gpus": "gpus"}


def _capacity_inputs(args: argparse.Namespace) -> dict[str, Any]:
    """The planner's inputs: the YAML file's, then the flags on top of them."""

    data: dict[str, Any] = {}
    if args.inputs is not None:
        loaded = yaml_file("--inputs", args.inputs, "a mapping (steps, run_duration, runs, window, nodes, ...)")
        data.update(loaded)
    step = {key: getattr(args, flag) for flag, key in _PLAN_FLAGS.items() if getattr(args, flag) is not None}
    if step:
        if args.inputs and "steps" in data:
            raise CommandError("give the step's requests either in --inputs (steps:) or as --cpu/--memory/--gpus, not both")
        data["steps"] = [step]
    for key in ("run_duration", "runs", "window", "nodes"):
        if getattr(args, key) is not None:
            data[key] = getattr(args, key)
    return data


def _as_written(line: str, args: argparse.Namespace) -> str:
    """A planner error's key path as the user wrote it: the flag that gave the value
    (``--runs``, ``--cpu``), else the key in the ``--inputs`` file."""
    path, _, rest = line.partition(": ")
    top = path.split(".")[0].split("[")[0]
    flag = {"steps[0].cpu": "cpu", "steps[0].memory": "memory", "steps[0].gpus": "gpus"}.get(path, top)
    if flag in ("cpu", "memory", "gpus", "run_duration", "runs", "window", "nodes") and getattr(args, flag, None) is not None:
        return f"--{flag.replace('_', '-')}: {rest}"
    if args.inputs is not None and path:
        return f"--inputs {args.inputs}: {path}: {rest}"
    return line


def cmd_plan_capacity(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from gpu_platform.infra.capacity import CapacityInputs, PlanError, plan, render
    from gpu_platform.infra.output import file_target, write_outputs
    from gpu_platform.infra.stack.errors import format_validation_error

    json_target = file_target("--json", args.json) if args.json is not None else None
    stack_config = read_stack(args)
    shape = pool_shape(args, stack_config)
    try:
        inputs = CapacityInputs.model_validate(_capacity_inputs(args))
    except ValidationError as exc:
        raise CommandError([_as_written(line, args) for line in format_validation_error(exc, CapacityInputs)]) from None
    try:
        # The kubelet reserves of the pool's cloud, unless the inputs name a formula.
        result = plan(shape, inputs)
    except PlanError as exc:
        raise CommandError(str(exc)) from None
    if json_target is not None:
        write_outputs([(json_target, json_bytes(result.to_json()))])
    for line in render(result, shape):
        print(line)
    return EXIT_VIOLATIONS if result.pool_max_too_low else EXIT_OK


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add the `plan_capacity` command to the parser."""
    cap = sub.add_parser(
        "plan-capacity",
        parents=[common],
        help="nodes for N parallel pipeline runs in T on a pool of the stack, and whether its maximum allows it",
    )
    cap.add_argument("stack", help="stack name: stacks/Pulumi.<stack>.yaml")
    cap.add_argument("--pool", required=True, help="the pool (GKE) or GPU class (EKS) name")
    cap.add_argument("--inputs", metavar="FILE", help="YAML with steps, run_duration, runs, window, nodes, reserves, daemonsets")
    cap.add_argument("--cpu", help='one step\'s CPU request: cores ("2") or millicores ("1500m")')
    cap.add_argument("--memory", help='one step\'s memory request: MiB or a quantity ("4Gi")')
    cap.add_argument("--gpus", help="one step's GPU request, as the pod's GPU resource (default 0)")
    cap.add_argument("--run-duration", help='wall time of one run: seconds or "36m", "1h30m"')
    cap.add_argument("--runs", help="N: parallel runs")
    cap.add_argument("--window", help='T: the time they must finish in ("3h")')
    cap.add_argument("--nodes", help="K: a node count to evaluate")
    cap.add_argument("--json", metavar="FILE", help="write the plan as JSON to FILE (- for standard output)")
    cap.add_argument("--project-dir", metavar="DIR", help="the folder holding Pulumi.yaml")
    cap.set_defaults(func=cmd_plan_capacity)
