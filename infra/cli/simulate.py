"""`gpu-platform simulate`: the stack's cluster under a workload, before you pay."""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpu_platform.infra.cli.common import (
    err,
    find_project,
    json_bytes,
    pool_shape,
    table_console,
    yaml_file,
)
from gpu_platform.infra.errors import EXIT_OK, EXIT_VIOLATIONS

SIMULATE_FILES = ("report.json", "wait_times.png", "gpus.png", "tenants.png", "sweep.png")
"""What a simulate --out folder may hold: replaced whole."""


def _workload(args: argparse.Namespace, stack_config: Any, seed: int) -> Any:
    """The workload pattern the flags name (SimulationError, one line, when they cannot)."""
    from pydantic import ValidationError

    from gpu_platform.infra.simulate.settings import SimulationError
    from gpu_platform.infra.simulate.workloads import (
        DeepDive,
        WorkloadFile,
        deep_dive,
        deep_dive_namespace,
        from_file,
        kfp_pipelines,
    )
    from gpu_platform.infra.stack.errors import format_validation_error

    name = args.workload
    if name == "deep-dive":
        return deep_dive(DeepDive(namespace=deep_dive_namespace(stack_config)), seed)
    if name == "kfp":
        from gpu_platform.infra.capacity import CapacityInputs

        if args.inputs is None:
            raise SimulationError("--workload kfp: give the pipelines with --inputs FILE (plan-capacity's inputs: steps, run_duration, runs)")
        if args.pool is None:
            raise SimulationError("--workload kfp: name the pool the pipelines run on with --pool")
        shape = pool_shape(args, stack_config)
        data = yaml_file("--inputs", args.inputs)
        if data.get("runs") is not None and data.get("window") is None and data.get("nodes") is None:
            # N parallel runs alone is a question for the simulator: they start together, once per run.
            data = {**data, "window": data.get("run_duration")}
        try:
            inputs = CapacityInputs.model_validate(data)
        except ValidationError as exc:
            raise SimulationError([f"--inputs {args.inputs}: {line}" for line in format_validation_error(exc, CapacityInputs)]) from None
        if inputs.runs is None:
            raise SimulationError(f"--inputs {args.inputs}: runs: the number of parallel pipeline runs to simulate is required (got nothing)")
        return kfp_pipelines(inputs, shape, seed)
    data = yaml_file("--workload", name)
    try:
        workload = WorkloadFile.model_validate(data)
    except ValidationError as exc:
        raise SimulationError([f"--workload {name}: {line}" for line in format_validation_error(exc, WorkloadFile)]) from None
    return from_file(workload, seed, Path(name).name)


def cmd_simulate(args: argparse.Namespace) -> int:
    from gpu_platform.infra.output import file_target, folder_target, write_outputs
    from gpu_platform.infra.simulate.prices import PriceTable
    from gpu_platform.infra.simulate.runs import configurations

    # Every flag is checked before the stack is read and anything runs.
    flags = _flags(args)
    prices = (
        PriceTable.from_data(yaml_file("--prices", args.prices, "a price table (date, sources, gcp, aws)"), f"--prices {args.prices}")
        if args.prices is not None
        else PriceTable.shipped()
    )
    json_target = file_target("--json", args.json) if args.json is not None else None
    if flags.target is not None and not flags.sweeps:
        return _search(args, flags, flags.target, prices, json_target)
    out_target = folder_target("--out", args.out, SIMULATE_FILES) if args.out is not None else None
    configs = configurations(find_project(args), args.stack, flags.sets, flags.sweeps, args.max_configs)
    work, described = _work(args, flags, configs, prices)
    outcomes = _run(args, work)
    advice = _recommend(args, flags, configs, outcomes, work) if flags.target is not None else None
    chosen = None if advice is None else advice.chosen
    write_outputs(_outputs(json_target, out_target, outcomes, configs, chosen, flags.target, described, advice, flags))
    _print(args, outcomes, chosen, flags.target, described, json_target, out_target, advice, flags)
    stalled = [o for o in outcomes if o.trace.stalled_at is not None]
    for o in stalled:  # one line per kind of pod never placed: which, what they ask, why, the fix
        for cause in o.trace.stall_causes:
            err(f"{o.label}: the workload stalled at {o.trace.stalled_at / 3600:.2f} h: {cause}")
    return EXIT_VIOLATIONS if stalled else EXIT_OK


@dataclass(frozen=True)
class _Flags:
    """simulate's flags, checked: overrides, sweeps, hours, the p90 target, replay or not."""

    sets: list[tuple[str, Any]]
    sweeps: list[tuple[str, list[Any]]]
    hours: float | None
    target: float | None
    replay: bool


def _flags(args: argparse.Namespace) -> _Flags:
    """Every flag checked before the stack is read (SimulationError, one line, for the first wrong one)."""
    from gpu_platform.infra.simulate.distributions import parse_seconds
    from gpu_platform.infra.simulate.settings import SimulationError, parse_assignment, parse_value, sweep_values

    args.workload_given = args.workload is not None
    args.workload = args.workload or "deep-dive"
    sets = [(k, parse_value(v)) for k, v in (parse_assignment(text, "--set") for text in args.set)]
    sweeps = [sweep_values(text) for text in args.sweep]
    keys = [k for k, _ in sets] + [k for k, _ in sweeps]
    twice = sorted({k for k in keys if keys.count(k) > 1 and k in {s for s, _ in sweeps}})
    if twice:
        raise SimulationError(f"--sweep {twice[0]}: the key is swept twice or also --set; give it once")
    hours = None
    if args.hours is not None:
        try:
            hours = float(args.hours)
        except ValueError:
            hours = -1.0
        if not 0 < hours <= 24 * 31:
            raise SimulationError(f"--hours {args.hours}: a number of hours above 0, at most 744 (31 days)")
    target = None
    if args.target_p90 is not None:
        try:
            target = parse_seconds(args.target_p90)
        except ValueError as exc:
            raise SimulationError(f"--target-p90: {exc} (got {json.dumps(args.target_p90)})") from None
        if not sweeps and args.replay:
            raise SimulationError("--target-p90 without --sweep searches the stack's settings on a workload: give it without --replay")
        if not sweeps and args.out is not None:
            raise SimulationError("--out: a settings search (--target-p90 without --sweep) writes no plots; use --json")
    if args.max_configs < 1:
        raise SimulationError(f"--max-configs {args.max_configs}: at least 1")
    if not 1 <= args.seeds <= 64:
        raise SimulationError(f"--seeds {args.seeds}: 1 to 64 seeds")
    if args.processes < 0:
        raise SimulationError(f"--processes {args.processes}: 0 (one per core) or more")
    replay = args.replay or args.prometheus is not None or args.start is not None or args.end is not None
    if replay and not (args.replay and args.prometheus and args.start and args.end):
        raise SimulationError("--replay needs --prometheus URL --start T --end T (and takes no --workload)")
    if replay and args.workload_given:
        raise SimulationError("--replay replays the pods Prometheus saw: give it without --workload")
    return _Flags(sets, sweeps, hours, target, replay)


def _work(args: argparse.Namespace, flags: _Flags, configs: list[Any], prices: Any) -> tuple[list[Any], dict[str, Any]]:
    """One run per configuration, of the replayed pods or the workload the flags name, and how the
    workload is described in the JSON."""
    from gpu_platform.infra.simulate.runs import Work
    from gpu_platform.infra.simulate.settings import SimulationError
    from gpu_platform.infra.simulate.workloads import repeat

    if flags.replay:
        from pydantic import ValidationError

        from gpu_platform.infra.report.prometheus import ReportInputs
        from gpu_platform.infra.simulate.replay import replay_jobs
        from gpu_platform.infra.stack.errors import format_validation_error

        try:
            report_inputs = ReportInputs(prometheus=args.prometheus, start=args.start, end=args.end, step=args.step)
        except ValidationError as exc:
            raise SimulationError(["--" + line for line in format_validation_error(exc, ReportInputs)]) from None
        replayed = replay_jobs(report_inputs)
        described = {"name": "replay", "source": replayed.source, "start": replayed.start, "pods": replayed.pods}
        per = _gangs(replayed.jobs)
        return [Work(c.inputs, replayed.jobs, replayed.horizon, 0.0, prices, c.label, c.overrides, per) for c in configs], described
    work = []
    described = {}
    for c in configs:
        pattern = _workload(args, c.stack, c.inputs.seed)
        if not pattern.jobs:
            raise SimulationError(f"--workload {args.workload}: the workload is empty: no job in its pattern")
        jobs, horizon = repeat(pattern, flags.hours)
        described = {**pattern.described, "hours": None if horizon is None else horizon / 3600}
        work.append(Work(c.inputs, jobs, horizon, pattern.tail_s, prices, c.label, c.overrides, _gangs(pattern.jobs)))
    return work, described


def _gangs(jobs: Any) -> int:
    """Dask clusters or pipeline steps (gangs with work) in one pass of a workload."""
    return sum(1 for job in jobs for stage in job.stages for gang in stage.gangs if gang.work is not None)


SWEEP_CHECKS = 4
"""The most configurations of a sweep meeting the target on its seed that --target-p90 runs on every seed."""


@dataclass
class _Advice:
    """What --target-p90 recommends: the configuration, on how many seeds it met the target, and why
    cheaper ones were not recommended."""

    chosen: Any
    seeds: list[int]
    p90s: list[int | None]
    notes: list[str]


def _recommend(args: argparse.Namespace, flags: _Flags, configs: list[Any], outcomes: list[Any], work: list[Any]) -> _Advice:
    """The cheapest configuration (per workload, then per day) meeting the target on the sweep's seed that
    (1) changes no setting the stack's cloud keeps from its users and (2) meets it again on at least 3 in 4
    of --seeds seeds (the sweep's and the next ones); at most SWEEP_CHECKS candidates are checked on every seed,
    and a note says how many meeting it on the sweep's seed were left unchecked."""
    import dataclasses

    from gpu_platform.infra.simulate.runs import HOLDS, cost_key, run_all, unsettable
    from gpu_platform.infra.simulate.workloads import repeat

    target = flags.target
    meeting = sorted((o for o in outcomes if o.p90 is not None and o.p90 <= target), key=lambda o: (*cost_key(o), o.label))
    notes: list[str] = []
    checked = 0
    for o in meeting:
        i = outcomes.index(o)
        config = configs[i]
        why = [w for k in o.overrides if (w := unsettable(config.inputs.cloud, k)) is not None]
        if why:
            notes.append(f"{o.label}: meets p90 <= {target:g} s, not recommended: {why[0]}")
            continue
        if checked == SWEEP_CHECKS:
            rest = len(meeting) - meeting.index(o)
            notes.append(
                f"{rest} more configuration{'s' if rest > 1 else ''} meeting p90 <= {target:g} s on seed {config.inputs.seed} "
                f"not checked on every seed: at most {SWEEP_CHECKS} are (--target-p90 without --sweep searches further)"
            )
            break
        checked += 1
        base = config.inputs.seed
        seeds = [base + k for k in range(args.seeds)]
        more = []
        for seed in seeds[1:]:
            inputs = dataclasses.replace(config.inputs, seed=seed)
            if flags.replay:
                more.append(dataclasses.replace(work[i], inputs=inputs))
                continue
            pattern = _workload(args, config.stack, seed)
            jobs, horizon = repeat(pattern, flags.hours)
            more.append(dataclasses.replace(work[i], inputs=inputs, jobs=jobs, horizon=horizon))
        p90s = [o.p90] + [r.p90 for r in run_all(more, args.processes or os.cpu_count() or 1)]
        met = sum(1 for p in p90s if p is not None and p <= target)
        if met * HOLDS[1] >= HOLDS[0] * len(seeds):
            return _Advice(o, seeds, p90s, notes)
        notes.append(
            f"{o.label}: meets p90 <= {target:g} s on seed {base} but on {met} of {len(seeds)} seeds only "
            f"(p90s {', '.join('-' if p is None else str(p) for p in p90s)} s): not recommended"
        )
    return _Advice(None, [], [], notes)


def _search(args: argparse.Namespace, flags: _Flags, target: float, prices: Any, json_target: Any) -> int:
    """--target-p90 without --sweep: the cheapest configuration a user can set that meets ``target`` on most seeds,
    searched over the settings the stack exposes for its GPU pools (infra/simulate/search.py)."""
    import dataclasses

    from gpu_platform.infra.output import write_outputs
    from gpu_platform.infra.simulate.runs import Work, configurations, process_pool, run_all
    from gpu_platform.infra.simulate.search import knobs, refusal, search, search_document, search_lines
    from gpu_platform.infra.simulate.workloads import repeat

    project = find_project(args)
    base = configurations(project, args.stack, flags.sets, [], 1)[0]
    searched, notes = knobs(base.stack, args.pool, [k for k, _ in flags.sets])
    seeds = [base.inputs.seed + k for k in range(args.seeds)]
    processes = args.processes or os.cpu_count() or 1

    def run_settings(settings: Any, some: Any, executor: Any = None) -> list[Any]:
        config = configurations(project, args.stack, [*flags.sets, *settings], [], 1)[0]
        work = []
        for seed in some:
            pattern = _workload(args, config.stack, seed)
            jobs, horizon = repeat(pattern, flags.hours)
            work.append(
                Work(
                    dataclasses.replace(config.inputs, seed=seed),
                    jobs,
                    horizon,
                    pattern.tail_s,
                    prices,
                    f"{config.label} seed {seed}",
                    dict(settings),
                    _gangs(pattern.jobs),
                )
            )
        return run_all(work, processes, executor=executor)

    if processes > 1:
        with process_pool(processes) as executor:
            result = search(searched, target, seeds, lambda s, some: run_settings(s, some, executor), notes=notes, chunk=processes)
    else:
        result = search(searched, target, seeds, run_settings, notes=notes, chunk=1)
    if json_target is not None:
        write_outputs([(json_target, json_bytes(search_document(result)))])
    for line in search_lines(result):
        print(line)
    if result.chosen is None:
        err(refusal(result))
        return EXIT_VIOLATIONS
    return EXIT_OK


def _run(args: argparse.Namespace, work: list[Any]) -> list[Any]:
    """Run every configuration (a sweep in parallel processes), with progress on standard error."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from gpu_platform.infra.simulate.runs import run_all

    with Progress(
        TextColumn("simulating {task.description}"),
        BarColumn(),
        TextColumn("{task.completed:.0f}"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        if len(work) == 1:
            # One configuration: progress in simulated hours.
            task = bar.add_task("hours", total=None if work[0].horizon is None else work[0].horizon / 3600)
            return run_all(work, 1, simulated=lambda at: bar.update(task, completed=at / 3600))
        task = bar.add_task(f"{len(work)} configurations", total=len(work))
        return run_all(work, args.processes or os.cpu_count() or 1, done=lambda _: bar.advance(task))


def _outputs(
    json_target: Any,
    out_target: Any,
    outcomes: list[Any],
    configs: list[Any],
    chosen: Any,
    target: float | None,
    described: dict[str, Any],
    advice: _Advice | None,
    flags: _Flags,
) -> list[Any]:
    """What --json and --out get: the figures (per configuration for a sweep), the plots."""
    from gpu_platform.infra.simulate.runs import HOLDS, sweep_plot

    first = chosen or outcomes[0]
    document: Any
    if len(outcomes) == 1:
        document = first.json_document(described, configs[0].inputs)
    else:
        document = {
            "configurations": [o.json_document(described, c.inputs) for o, c in zip(outcomes, configs, strict=True)],
            "target_p90_s": target,
            "cheapest_meeting_target": None if chosen is None else chosen.label,
            "recommendation": None
            if advice is None
            else {
                "label": None if chosen is None else chosen.label,
                "seeds": advice.seeds,
                "pending_p90_s_by_seed": advice.p90s,
                "rule": f"meets the target on at least {HOLDS[0]} in {HOLDS[1]} seeds",
                "usd_per_workload": None if chosen is None else chosen.usd_per_workload,
                "not_recommended": advice.notes,
            },
        }
    outputs: list[Any] = []
    if json_target is not None:
        outputs.append((json_target, json_bytes(document)))
    if out_target is not None:
        from gpu_platform.infra.report.prometheus import plot_files

        files = {"report.json": json_bytes(first.json_document(described, configs[outcomes.index(first)].inputs)), **plot_files(first.report)}
        if first.report.tenants is not None:
            from gpu_platform.infra.report.tenants import tenant_plot

            files["tenants.png"] = tenant_plot(first.report.tenants)
        if len(outcomes) > 1:
            files["sweep.png"] = sweep_plot(outcomes, chosen, target, [k for k, _ in flags.sweeps])
        outputs.append((out_target, files))
    return outputs


def _print(
    args: argparse.Namespace,
    outcomes: list[Any],
    chosen: Any,
    target: float | None,
    described: dict[str, Any],
    json_target: Any,
    out_target: Any,
    advice: _Advice | None,
    flags: _Flags,
) -> None:
    """The table (figures of one run, or one row per configuration) and what was written."""
    from rich.markup import escape
    from rich.table import Table

    from gpu_platform.infra.simulate.runs import HOLDS, short_key, sweep_table, table_rows

    out = table_console()
    if len(outcomes) == 1:
        table = Table(title=f"simulate {args.stack}: {described['name']}")
        table.add_column("what")
        table.add_column("value")
        for what, value in table_rows(chosen or outcomes[0]):
            table.add_row(escape(what), escape(value))
    else:
        keys = [k for k, _ in flags.sweeps]
        table = sweep_table(outcomes, keys, chosen, f"simulate {args.stack}: {described['name']}, {len(outcomes)} configurations")
        legend = [f"{short_key(k, keys)}: {k}" for k in keys if short_key(k, keys) != k]
        for line in legend:
            out.print(escape(line), soft_wrap=True)
    out.print(table)
    tenants = (chosen or outcomes[0]).report.tenants
    if tenants is not None:
        from gpu_platform.infra.report.tenants import print_tenants

        print_tenants(out, tenants, no_queues="the stack has no queues (gpu-platform:queues): the queue columns are empty")
    if target is not None and advice is not None:
        for note in advice.notes:
            out.print(escape(note), soft_wrap=True)
        if chosen is None:
            out.print(f"no configuration meets p90 <= {target:g} s on at least {HOLDS[0]} in {HOLDS[1]} of {args.seeds} seeds")
        else:
            met = sum(1 for p in advice.p90s if p is not None and p <= target)
            per = chosen.usd_per_workload
            out.print(
                f"cheapest meeting p90 <= {target:g} s: {escape(chosen.label)} (${'-' if per is None else f'{per:,.2f}'}/workload, "
                f"${chosen.cost.usd_per_day:,.0f}/day, {chosen.report.utilisation_percent:.1f}% utilised, p90 {chosen.p90} s, "
                f"p99 {chosen.report.pending_p99_s} s; "
                f"meets the target on {met} of {len(advice.seeds)} seeds {advice.seeds[0]}-{advice.seeds[-1]})",
                soft_wrap=True,
            )
    for target_, what in ((json_target, "JSON"), (out_target, "plots")):
        if target_ is not None:
            out.print(f"wrote {what} to {target_.path}", soft_wrap=True)


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add the `simulate` command to the parser."""
    sim = sub.add_parser(
        "simulate",
        parents=[common],
        help="simulate the stack's cluster under a workload: waits, GPU utilisation and cost, before you pay",
    )
    sim.add_argument("stack", help="stack name: stacks/Pulumi.<stack>.yaml")
    sim.add_argument(
        "--workload",
        default=None,
        help="deep-dive (the RAPIDS multi-tenant deep-dive's generator, default), kfp (with --inputs and --pool), "
        "or a workload file (YAML: tenants with arrival rates per hour, cluster sizes, durations)",
    )
    sim.add_argument("--inputs", metavar="FILE", help="--workload kfp: plan-capacity's inputs (steps, run_duration, runs, window)")
    sim.add_argument(
        "--pool",
        help="--workload kfp: the pool (GKE) or GPU class (EKS) the pipelines run on; --target-p90 without --sweep: the one GPU pool whose settings are searched (default: every GPU pool of role gpu)",
    )
    sim.add_argument("--replay", action="store_true", help="replay the GPU pods a real cluster ran (with --prometheus, --start, --end)")
    sim.add_argument("--prometheus", metavar="URL", help="--replay: the Prometheus base URL")
    sim.add_argument("--start", help="--replay: start, RFC 3339 or Unix seconds")
    sim.add_argument("--end", help="--replay: end, RFC 3339 or Unix seconds")
    sim.add_argument("--step", default="1s", help="--replay: the sampling step of the queries, as the report's (default 1s)")
    sim.add_argument("--hours", help="repeat the workload's pattern back to back over H simulated hours (default: once)")
    sim.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a stack key (gke.gpu_pools[t4].autoscaling.min_nodes=2) or a model key (model.autoscaler.scan_interval=5s) for the run; "
        "KEY=null removes the key, a section or a list item (queues=null, 'eks_node_groups.classes[large]=null'); repeatable",
    )
    sim.add_argument(
        "--sweep", action="append", default=[], metavar="KEY=V1,V2", help="run every combination of these values (repeatable), in parallel processes"
    )
    sim.add_argument("--max-configs", type=int, default=64, help="most configurations a sweep may run (default 64)")
    sim.add_argument(
        "--target-p90",
        metavar="DURATION",
        help='with --sweep: name the cheapest swept configuration whose p90 wait is at most this ("60s"); without: search the '
        "settings a user can set for the GPU pools (min and max nodes, zones, machine shape, warm capacity, GKE's autoscaling "
        "profile and image streaming) for the cheapest per workload that meets it, and say how many candidates were tried",
    )
    sim.add_argument(
        "--seeds",
        type=int,
        default=8,
        help="with --target-p90: seeds a recommendation (or each searched candidate) is run with; it must meet the target on 3 in 4 (default 8)",
    )
    sim.add_argument("--processes", type=int, default=0, help="parallel processes for a sweep (default: one per core)")
    sim.add_argument(
        "--prices",
        metavar="FILE",
        help="a price table (YAML or JSON, the shape of the shipped infra/simulate/prices.json; gpu-platform prices refresh writes one)",
    )
    sim.add_argument("--json", metavar="FILE", help="write the figures as JSON (report.json's keys plus cost, failover, admission; - for standard output)")
    sim.add_argument("--out", metavar="DIR", help="write report.json and the plots (and sweep.png) into DIR, replaced whole")
    sim.add_argument("--project-dir", metavar="DIR", help="the folder holding Pulumi.yaml")
    sim.set_defaults(func=cmd_simulate)
