"""The `gpu-platform` command line.

    gpu-platform preview <stack> [--json PLAN] [--manifests DIR]
        Run the Pulumi program offline under a recording mock engine, check its Kubernetes
        objects and run the policy pack over it. Exit 0 clean, 1 schema or mandatory policy
        violations, 2 config errors, 3 the program failed.
    gpu-platform preflight eks <stack>
        Ask AWS (boto3, the usual credentials) whether the stack's zones offer its GPU instance
        types, whether each class's types share one shape, and whether the GPU vCPU quotas hold
        every node group at its maximum. Exit 0 when a deploy would pass, 1 when it would fail.
    gpu-platform docs [--check | --write]
        The stack config reference generated from the models (README and Pulumi.yaml).
    gpu-platform plan-capacity <stack> --pool NAME [--inputs FILE] [--cpu ..] [--runs N] ...
        Nodes for N parallel pipeline runs in T, time of N on K nodes, runs that fit in T on
        K, and whether the pool's autoscaling maximum allows it (infra/capacity.py). Exit 0,
        1 when the pool's maximum is too low, 2 on bad inputs or a step that fits no node.
    gpu-platform report --prometheus URL --start T --end T [--out DIR]
        GPU pod wait times and GPU utilisation from the cluster's Prometheus, as a table,
        JSON and PNG plots (infra/report.py). Exit 0, 2 on bad inputs, 4 when Prometheus
        cannot answer or lacks the metrics.

Errors print one line per problem and no traceback.
"""

from __future__ import annotations

import argparse
import atexit
import gc
import json
import os
import sys
from pathlib import Path
from typing import Any, Sequence

import yaml

EXIT_OK = 0
EXIT_VIOLATIONS = 1
EXIT_CONFIG = 2
EXIT_PROGRAM = 3
EXIT_PROMETHEUS = 4


def _err(line: str) -> None:
    print(f"gpu-platform: {line}", file=sys.stderr)


# --- the resource tree ------------------------------------------------------------------------


def _secret(value: Any) -> bool:
    from infra.preview import SECRET_SIG

    return isinstance(value, dict) and SECRET_SIG.items() <= value.items()


def _autoscaling(a: dict[str, Any]) -> str:
    if "totalMaxNodeCount" in a:
        bounds = f"{a.get('totalMinNodeCount', 0)}..{a['totalMaxNodeCount']} total"
    else:
        bounds = f"{a.get('minNodeCount', 0)}..{a.get('maxNodeCount')} per zone"
    return f"{bounds} ({a.get('locationPolicy', 'BALANCED')})"


def _taints_and_labels(node: dict[str, Any]) -> list[str]:
    """A pool's or node group's taints and labels, as the tree shows them."""
    parts = []
    if node.get("taints"):
        parts.append("taints=" + ",".join(f"{t['key']}={t['value']}:{t['effect']}" for t in node["taints"]))
    if node.get("labels"):
        parts.append("labels=" + ",".join(f"{k}={v}" for k, v in sorted(node["labels"].items())))
    return parts


def summarize(type_: str, inputs: dict[str, Any]) -> str:
    """The key settings of one resource, for the tree."""
    parts: list[str] = []
    if type_ == "gcp:container/cluster:Cluster":
        parts.append(f"location={inputs.get('location')}")
        if inputs.get("nodeLocations"):
            parts.append(f"zones={','.join(inputs['nodeLocations'])}")
        parts.append(f"channel={(inputs.get('releaseChannel') or {}).get('channel')}")
        parts.append(f"autoscaling={(inputs.get('clusterAutoscaling') or {}).get('autoscalingProfile')}")
        parts.append(f"deletionProtection={str(inputs.get('deletionProtection')).lower()}")
        private = inputs.get("privateClusterConfig") or {}
        if private:
            parts.append(f"privateNodes={str(private.get('enablePrivateNodes')).lower()}")
            parts.append(f"privateEndpoint={str(private.get('enablePrivateEndpoint', False)).lower()}")
        networks = (inputs.get("masterAuthorizedNetworksConfig") or {}).get("cidrBlocks") or []
        if networks:
            parts.append(f"authorizedNetworks={','.join(n['cidrBlock'] for n in networks)}")
        parts.append(f"workloadPool={(inputs.get('workloadIdentityConfig') or {}).get('workloadPool')}")
    elif type_ == "gcp:container/nodePool:NodePool":
        node = inputs.get("nodeConfig") or {}
        parts.append(f"machine={node.get('machineType')}")
        for acc in node.get("guestAccelerators") or []:
            driver = (acc.get("gpuDriverInstallationConfig") or {}).get("gpuDriverVersion")
            text = f"gpus={acc.get('count')}x{acc.get('type')} driver={driver}"
            if acc.get("gpuPartitionSize"):
                text += f" mig={acc['gpuPartitionSize']}"
            sharing = acc.get("gpuSharingConfig")
            if sharing:
                text += f" sharing={sharing.get('gpuSharingStrategy')}/{sharing.get('maxSharedClientsPerGpu')}"
            parts.append(text)
        parts.append(f"autoscaling={_autoscaling(inputs.get('autoscaling') or {})}")
        if inputs.get("nodeLocations"):
            parts.append(f"zones={','.join(inputs['nodeLocations'])}")
        parts.append(f"image={node.get('imageType')}")
        parts.append(f"streaming={'on' if (node.get('gcfsConfig') or {}).get('enabled') else 'off'}")
        parts.append(f"spot={str(node.get('spot', False)).lower()}")
        parts += _taints_and_labels(node)
        if (inputs.get("placementPolicy") or {}).get("type"):
            parts.append(f"placement={inputs['placementPolicy']['type']}")
        if (inputs.get("queuedProvisioning") or {}).get("enabled"):
            parts.append("queuedProvisioning=on")
    elif type_ == "aws:eks/cluster:Cluster":
        vpc = inputs.get("vpcConfig") or {}
        parts.append(f"version={inputs.get('version')} region={inputs.get('region')}")
        parts.append(f"publicEndpoint={str(vpc.get('endpointPublicAccess', True)).lower()}")
        if vpc.get("publicAccessCidrs"):
            parts.append(f"publicAccessCidrs={','.join(vpc['publicAccessCidrs'])}")
        parts.append(f"deletionProtection={str(inputs.get('deletionProtection')).lower()}")
    elif type_ == "aws:eks/nodeGroup:NodeGroup":
        scaling = inputs.get("scalingConfig") or {}
        parts.append(f"types={','.join(inputs.get('instanceTypes') or [])} capacity={inputs.get('capacityType')}")
        parts.append(f"scaling={scaling.get('minSize')}..{scaling.get('maxSize')} ami={inputs.get('amiType')}")
        parts += _taints_and_labels(inputs)
    elif type_ == "aws:autoscaling/tag:Tag":
        tag = inputs.get("tag") or {}
        parts.append(f"{tag.get('key')}={tag.get('value')}")
    elif type_ == "aws:ec2/subnet:Subnet":
        parts.append(f"zone={inputs.get('availabilityZone')} cidr={inputs.get('cidrBlock')}")
    elif type_ == "gcp:serviceaccount/account:Account":
        parts.append(f"accountId={inputs.get('accountId')}")
    elif type_ == "gcp:projects/iAMMember:IAMMember":
        parts.append(f"role={inputs.get('role')}")
    elif type_ == "gcp:projects/service:Service":
        parts.append(f"service={inputs.get('service')}")
    elif type_ == "kubernetes:helm.sh/v3:Release":
        parts.append(f"chart={inputs.get('chart')}@{inputs.get('version')} namespace={inputs.get('namespace')}")
        repo = (inputs.get("repositoryOpts") or {}).get("repo")
        if repo:
            parts.append(f"repo={repo}")
        if inputs.get("chart") == "cluster-autoscaler":
            args = (inputs.get("values") or {}).get("extraArgs") or {}
            parts.append(" ".join(f"--{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in args.items()))
    elif type_ == "kubernetes:kustomize/v2:Directory":
        parts.append(f"directory={inputs.get('directory')}")
    elif type_.startswith("pulumi:providers:kubernetes"):
        parts.append("kubeconfig=[secret]" if _secret(inputs.get("kubeconfig")) else "kubeconfig=(plaintext!)")
    elif type_.startswith("kubernetes:") and "kind" in inputs:
        meta = inputs.get("metadata") or {}
        parts.append(f"{inputs.get('apiVersion')} {inputs.get('kind')} {meta.get('namespace', '') and meta['namespace'] + '/'}{meta.get('name', '')}")
        if inputs.get("kind") == "ConfigMap" and meta.get("name") == "cluster-autoscaler-priority-expander":
            tiers = yaml.safe_load((inputs.get("data") or {}).get("priorities") or "") or {}
            parts.append("priorities=" + " > ".join(f"{p}:{'|'.join(v)}" for p, v in tiers.items()))
        if inputs.get("kind") == "ComputeClass":
            order = [",".join(p.get("nodepools", [])) for p in (inputs.get("spec") or {}).get("priorities", [])]
            parts.append("priorities=" + " > ".join(order))
    return " ".join(parts)


def render_tree(plan: Any, rendered: dict[str, str] | None = None) -> str:
    children: dict[str | None, list[Any]] = {}
    for r in plan.resources:
        children.setdefault(r.parent, []).append(r)
    lines = [f"Stack {plan.stack} (gpu-platform): {len(plan.resources)} resources"]

    def walk(parent: str | None, indent: str) -> None:
        kids = sorted(children.get(parent, []), key=lambda r: (r.custom, r.type, r.name))
        for i, r in enumerate(kids):
            last = i == len(kids) - 1
            detail = summarize(r.type, r.inputs)
            flags = " [protected]" if r.protect else ""
            lines.append(f"{indent}{'└─ ' if last else '├─ '}{r.type}  {r.name}{flags}" + (f"\n{indent}{'   ' if last else '│  '}   {detail}" if detail else ""))
            if rendered and r.urn in rendered:
                lines.append(f"{indent}{'   ' if last else '│  '}   {rendered[r.urn]}")
            walk(r.urn, indent + ("   " if last else "│  "))

    walk(None, "")
    return "\n".join(lines)


# --- commands ---------------------------------------------------------------------------------


def cmd_preview(args: argparse.Namespace) -> int:
    from infra.config import ConfigError, load_stack_config
    from infra.manifests import kubernetes_objects, plain, validate_objects
    from infra.preview import PreviewError, find_project_dir, read_stack_file, run_program
    from policies.evaluate import PolicyConfigError, evaluate, read_policy_config
    from policies.rules import Enforcement, Resource

    try:
        project_dir = find_project_dir(Path(args.project_dir) if args.project_dir else None)
        config, secret_keys = read_stack_file(project_dir, args.stack)
        policy_config = read_policy_config(Path(args.policy_config) if args.policy_config else None)
    except (PreviewError, PolicyConfigError) as exc:
        for line in exc.lines:
            _err(line)
        return EXIT_CONFIG
    try:
        plan = run_program(project_dir, args.stack, config, secret_keys)
        stack_config = load_stack_config()
    except ConfigError as exc:
        for line in exc.lines:
            _err(line)
        return EXIT_CONFIG
    except Exception as exc:  # noqa: BLE001 - one line, no traceback
        _err(f"the program failed: {type(exc).__name__}: {exc}")
        return EXIT_PROGRAM

    objects = kubernetes_objects(plan)
    report = None
    if args.no_render:
        findings = validate_objects(objects, stack_config.kubernetes_version)
        render_lines = ["notice: rendering: skipped (--no-render): the objects of Helm releases and Kustomize directories were not checked"]
    else:
        report, render_error = _render(args, plan, objects, stack_config, policy_config)
        if render_error is not None:
            for line in render_error:
                _err(line)
            return EXIT_CONFIG
        assert report is not None
        findings = report.schema
        render_lines = _render_lines(report)
    violations = [f for f in findings if f.validated]
    notices = [f for f in findings if not f.validated]
    # The policy engine shows rules the resources' inputs with secrets unwrapped.
    policy_findings = evaluate(
        [Resource(r.type, r.name, r.urn, plain(r.inputs), r.protect) for r in plan.resources], policy_config
    )
    if report is not None:
        policy_findings += report.policy
    cluster_findings = report.cluster if report is not None else []
    mandatory = [f for f in policy_findings if f.enforcement is Enforcement.MANDATORY]
    rendered = report.rendering.objects if report is not None else []

    if not args.quiet:
        print(render_tree(plan, _rendered_details(report)))
        print()
    print(
        f"{len(plan.resources)} resources, {len(objects)} Kubernetes objects"
        + (f" and {len(rendered)} rendered from releases and directories" if report is not None else "")
        + f" ({len(objects) + len(rendered) - len(notices)} validated against Kubernetes {stack_config.kubernetes_version} "
        f"and CRD schemas, {len(notices)} without a schema offline), {len(violations)} schema violations; "
        f"policy pack: {len(mandatory)} mandatory and {len(policy_findings) - len(mandatory)} advisory violations"
        + (f"; {len(cluster_findings)} cluster check violations, {len(report.errors)} render errors" if report is not None else "")
    )
    for line in render_lines:
        print(line)
    for notice in notices:
        print(f"notice: {notice.message}")
    for message in plan.notices:
        print(f"notice: offline: {message}")
    for violation in violations:
        print(f"violation: schema: {violation.message}")
    for finding in policy_findings:
        label = "violation" if finding.enforcement is Enforcement.MANDATORY else "advisory"
        where = f"{finding.resource}: " if finding.resource else ""
        print(f"{label}: policy {finding.rule}: {where}{finding.message}; fix: {finding.fix}")
    for finding in cluster_findings:
        print(f"violation: {finding.check}: {finding.message}")
    render_errors = report.errors if report is not None else []
    for line in render_errors:
        print(f"violation: render: {line}")
    if report is not None and args.render and report.notices:
        for line in report.notices:
            _err(f"{line} (--render requires every release and directory rendered)")
        return EXIT_CONFIG

    try:
        _write_outputs(args, plan, objects, violations, notices, policy_findings, report)
    except OSError as exc:
        _err(f"cannot write {exc.filename or 'output'}: {exc.strerror or exc}")
        return EXIT_CONFIG
    return EXIT_VIOLATIONS if violations or mandatory or cluster_findings or render_errors else EXIT_OK


def _render(args: argparse.Namespace, plan: Any, objects: list[Any], stack_config: Any, policy_config: Any) -> tuple[Any, list[str] | None]:
    """Render the plan's releases and directories and check them: (report, None), or
    (None, error lines) when the stack names a source that cannot be rendered."""
    from infra.render import check_rendered
    from infra.upstream import SourceError, Sources, load_lock

    try:
        lock = load_lock()
    except SourceError as exc:
        return None, [str(exc)]
    upstream = args.upstream or os.environ.get("GPU_PLATFORM_UPSTREAM")
    if upstream and not Path(upstream, "charts").is_dir() and not Path(upstream, "git").is_dir():
        return None, [f"--upstream {upstream}: no charts/ or git/ folder there (the layout of ../shared/reference/upstream)"]
    offline = args.offline or os.environ.get("GPU_PLATFORM_OFFLINE") == "1"
    sources = Sources(lock, upstream_dir=Path(upstream).resolve() if upstream else None, fetch=not offline)
    return check_rendered(plan, objects, stack_config, sources, lock, policy_config), None


def _render_lines(report: Any) -> list[str]:
    rendering = report.rendering
    done = [s for s in rendering.sources if s.rendered]
    lines = [
        f"rendered: {len(done)} of {len(rendering.sources)} releases and directories, "
        f"{len(rendering.objects)} objects, {len(rendering.crds)} CRDs"
    ]
    lines += [f"notice: {line}" for line in report.notices]
    return lines


def _rendered_details(report: Any) -> dict[str, str]:
    """Per release or directory (by URN): its source, object count and findings, for the tree."""
    if report is None:
        return {}
    counts: dict[str, int] = {}
    for finding in [*(f for f in report.schema if f.validated), *report.policy, *report.cluster]:
        name = getattr(finding, "resource", "") or ""
        counts[name.split(": ", 1)[0]] = counts.get(name.split(": ", 1)[0], 0) + 1
    details = {}
    for source in report.rendering.sources:
        if source.rendered:
            kinds: dict[str, int] = {}
            for obj in source.objects:
                kinds[obj.kind] = kinds.get(obj.kind, 0) + 1
            found = counts.get(source.resource.name, 0)
            details[source.resource.urn] = (
                f"rendered {len(source.objects)} objects ({', '.join(f'{n} {k}' for k, n in sorted(kinds.items()))}); "
                f"{found} findings"
            )
        else:
            details[source.resource.urn] = f"not rendered: {source.unavailable or source.error}"
    return details


def _write_outputs(
    args: argparse.Namespace, plan: Any, objects: list[Any], violations: list[Any], notices: list[Any], policy: list[Any],
    report: Any = None,
) -> None:
    from infra.manifests import rendered_json, write_manifests

    if args.json:
        document = plan.to_json(
            violations=[
                {"rule": "kubernetes-schema", "enforcement": "mandatory", "resource": v.resource, "message": v.message, "fix": "correct the object to its schema"}
                for v in violations
            ]
            + [f.to_json() for f in policy],
            notices=[{"resource": n.resource, "message": n.message} for n in notices]
            + [{"resource": None, "message": f"offline: {m}"} for m in plan.notices]
            + [{"resource": None, "message": m} for m in (report.notices if report is not None else [])],
        )
        if report is not None:
            document["violations"] += [
                {"rule": f.check, "enforcement": "mandatory", "resource": f.resource, "message": f.message, "fix": "see the message"}
                for f in report.cluster
            ] + [
                {"rule": "render", "enforcement": "mandatory", "resource": None, "message": line, "fix": "see the message"}
                for line in report.errors
            ]
            document["rendered"] = rendered_json(report.rendering)
        Path(args.json).write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    if args.manifests:
        write_manifests(objects, Path(args.manifests), report.rendering if report is not None else None)


def _read_stack(args: argparse.Namespace) -> Any:
    """The stack's typed config for a command that reads it, or None after printing why not."""
    from infra.config import ConfigError
    from infra.preview import PreviewError, find_project_dir, load_stack

    try:
        return load_stack(find_project_dir(Path(args.project_dir) if args.project_dir else None), args.stack)
    except (PreviewError, ConfigError) as exc:
        for line in exc.lines:
            _err(line)
        return None


def cmd_preflight(args: argparse.Namespace) -> int:
    from infra.config import Cloud
    from infra.preflight import preflight_eks

    config = _read_stack(args)
    if config is None:
        return EXIT_CONFIG
    if config.cloud is not Cloud.AWS:
        _err(f"stack {args.stack} deploys to {config.cloud.value}, not aws: preflight {args.cloud} checks EKS stacks")
        return EXIT_CONFIG
    import boto3
    import botocore.exceptions
    import pulumi_aws

    assert config.eks is not None
    region = config.eks.region or str(pulumi_aws.config.region)
    session = boto3.Session(region_name=region)
    try:
        findings = preflight_eks(config, region, session.client("ec2"), session.client("service-quotas"))
    except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as exc:
        _err(f"cannot ask AWS in {region}: {exc}")
        return EXIT_CONFIG
    for finding in findings:
        print(finding)
    errors = sum(f.error for f in findings)
    print(f"{len(findings)} checks, {errors} would fail a deploy")
    return EXIT_VIOLATIONS if errors else EXIT_OK


def cmd_docs(args: argparse.Namespace) -> int:
    from infra.docs import sync_docs
    from infra.preview import PreviewError, find_project_dir

    try:
        project_dir = find_project_dir(Path(args.project_dir) if args.project_dir else None)
    except PreviewError as exc:
        for line in exc.lines:
            _err(line)
        return EXIT_CONFIG
    stale = sync_docs(project_dir, write=args.write)
    if args.write:
        for path in stale:
            print(f"updated {path}")
        return EXIT_OK
    if args.check:
        for path in stale:
            _err(f"{path} is out of date with the models; run: gpu-platform docs --write")
        return EXIT_VIOLATIONS if stale else EXIT_OK
    from infra.docs import config_reference

    print(config_reference())
    return EXIT_OK


_PLAN_FLAGS = {"cpu": "cpu", "memory": "memory", "gpus": "gpus"}


def _capacity_inputs(args: argparse.Namespace) -> dict[str, Any]:
    """The planner's inputs: the YAML file's, then the flags on top of them."""
    import yaml

    data: dict[str, Any] = {}
    if args.inputs:
        try:
            loaded = yaml.safe_load(Path(args.inputs).read_text(encoding="utf-8"))
        except OSError as exc:
            raise ValueError(f"{args.inputs}: {exc.strerror or exc}") from None
        except UnicodeDecodeError as exc:
            raise ValueError(
                f"{args.inputs}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start}); "
                "save the inputs as UTF-8 YAML"
            ) from None
        except yaml.YAMLError as exc:
            raise ValueError(f"{args.inputs}: invalid YAML: {str(exc).splitlines()[0]}") from None
        if not isinstance(loaded, dict):
            raise ValueError(f"{args.inputs}: expected a mapping (steps, run_duration, runs, window, nodes, ...)")
        data.update(loaded)
    step = {key: getattr(args, flag) for flag, key in _PLAN_FLAGS.items() if getattr(args, flag) is not None}
    if step:
        if args.inputs and "steps" in data:
            raise ValueError("give the step's requests either in --inputs (steps:) or as --cpu/--memory/--gpus, not both")
        data["steps"] = [step]
    for key in ("run_duration", "runs", "window", "nodes"):
        if getattr(args, key) is not None:
            data[key] = getattr(args, key)
    return data


def cmd_plan_capacity(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from infra.capacity import CapacityInputs, PlanError, ReserveFormula, plan, render
    from infra.config import format_validation_error

    stack_config = _read_stack(args)
    if stack_config is None:
        return EXIT_CONFIG
    shapes = {shape.name: shape for shape in stack_config.pool_shapes()}
    if args.pool not in shapes:
        _err(f"--pool {args.pool}: stack {args.stack} has no such pool (pools: {', '.join(shapes) or 'none'})")
        return EXIT_CONFIG
    try:
        inputs = CapacityInputs.model_validate(_capacity_inputs(args))
    except ValueError as exc:
        lines = format_validation_error(exc, CapacityInputs) if isinstance(exc, ValidationError) else [str(exc)]
        for line in lines:
            _err(line)
        return EXIT_CONFIG
    shape = shapes[args.pool]
    # The kubelet reserves of the stack's cloud, unless the inputs name a formula.
    formula = ReserveFormula.EKS if stack_config.cloud.value == "aws" else ReserveFormula.GKE
    try:
        result = plan(shape, inputs, formula)
    except PlanError as exc:
        _err(str(exc))
        return EXIT_CONFIG
    for line in render(result, shape):
        print(line)
    if args.json:
        try:
            Path(args.json).write_text(json.dumps(result.to_json(), indent=2, sort_keys=True) + "\n")
        except OSError as exc:
            _err(f"cannot write {args.json}: {exc.strerror or exc}")
            return EXIT_CONFIG
    return EXIT_VIOLATIONS if result.pool_max_too_low else EXIT_OK


def cmd_report(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from infra.config import format_validation_error
    from infra.report import ReportError, ReportInputs, collect, table_rows, write_plots

    try:
        inputs = ReportInputs(
            prometheus=args.prometheus, start=args.start, end=args.end, step=args.step, timeout=args.timeout
        )
    except ValidationError as exc:
        for line in format_validation_error(exc, ReportInputs):
            _err("--" + line)
        return EXIT_CONFIG
    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        _err(f"cannot create {out}: {exc.strerror or exc}")
        return EXIT_CONFIG
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
        except ReportError as exc:
            bar.stop()
            _err(str(exc))
            return EXIT_PROMETHEUS
    try:
        report.write_json(out / "report.json")
        plots = write_plots(report, out)
    except OSError as exc:
        _err(f"cannot write into {out}: {exc.strerror or exc}")
        return EXIT_CONFIG
    table = Table(title="GPU pod wait times and GPU utilisation")
    table.add_column("what")
    table.add_column("value")
    for what, value in table_rows(report):
        table.add_row(what, value)
    console = Console(width=max(110, Console().width))
    console.print(table)
    console.print(f"wrote {out / 'report.json'}, " + ", ".join(str(p) for p in plots), soft_wrap=True)
    return EXIT_OK


def cmd_upstream(args: argparse.Namespace) -> int:
    """`upstream check`: every locked source is in the sources and matches the lock.
    `upstream lock`: the lock rewritten to cover exactly what the stacks declare."""
    from infra.config import ConfigError
    from infra.preview import PreviewError, find_project_dir, read_stack_file, run_program
    from infra.upstream import LOCK_PATH, SourceError, Sources, check_lock, dump_lock, load_lock

    upstream = args.upstream or os.environ.get("GPU_PLATFORM_UPSTREAM")
    offline = args.offline or os.environ.get("GPU_PLATFORM_OFFLINE") == "1"
    try:
        lock = load_lock()
        sources = Sources(lock, upstream_dir=Path(upstream).resolve() if upstream else None, fetch=not offline)
        if args.action == "check":
            problems = check_lock(sources)
            for line in problems:
                _err(line)
            print(f"{len(lock.charts)} charts and {len(lock.git)} git refs locked; {len(problems)} problems in {sources.describe()}")
            return EXIT_VIOLATIONS if problems else EXIT_OK
        from infra.render import declared_sources, lock_for, supported_sources

        project_dir = find_project_dir(Path(args.project_dir) if args.project_dir else None)
        stacks = args.stacks or sorted(p.name[len("Pulumi."):-len(".yaml")] for p in (project_dir / "stacks").glob("Pulumi.*.yaml"))
        declared = [supported_sources()]
        for stack in stacks:
            config, secret_keys = read_stack_file(project_dir, stack)
            declared.append(declared_sources(run_program(project_dir, stack, config, secret_keys)))
        text = dump_lock(lock_for(declared, sources))
    except (PreviewError, ConfigError) as exc:
        for line in exc.lines:
            _err(line)
        return EXIT_CONFIG
    except SourceError as exc:
        _err(str(exc))
        return EXIT_CONFIG
    if args.check:
        stale = text != LOCK_PATH.read_text(encoding="utf-8")
        if stale:
            _err(f"{LOCK_PATH} does not cover exactly what the stacks declare; run: gpu-platform upstream lock")
        return EXIT_VIOLATIONS if stale else EXIT_OK
    tmp = LOCK_PATH.with_suffix(".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, LOCK_PATH)
    print(f"wrote {LOCK_PATH}")
    return EXIT_OK


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2, as for config errors
        _err(message)
        raise SystemExit(EXIT_CONFIG)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="gpu-platform", description="Operate gpu-platform stacks.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    preview = sub.add_parser("preview", help="offline preview of a stack: resource tree, plan JSON, manifests")
    preview.add_argument("stack", help="stack name: stacks/Pulumi.<stack>.yaml")
    preview.add_argument("--json", metavar="PLAN", help="write the plan as JSON to PLAN")
    preview.add_argument("--manifests", metavar="DIR", help="write every Kubernetes object as YAML into DIR")
    preview.add_argument("--project-dir", metavar="DIR", help="the folder holding Pulumi.yaml (default: found from the cwd)")
    preview.add_argument("--quiet", action="store_true", help="print the summary and findings only, not the tree")
    preview.add_argument(
        "--policy-config", metavar="FILE", help="policy pack config (the JSON of pulumi preview --policy-pack-config)"
    )
    preview.add_argument(
        "--upstream", metavar="DIR",
        help="render Helm releases and Kustomize directories from this local copy of the locked sources "
        "(charts/<name>-<version>.tgz, git/<owner>+<name>.git; default: $GPU_PLATFORM_UPSTREAM, else the user cache)",
    )
    preview.add_argument("--offline", action="store_true", help="never fetch sources missing from the cache (also GPU_PLATFORM_OFFLINE=1)")
    render_mode = preview.add_mutually_exclusive_group()
    render_mode.add_argument("--no-render", action="store_true", help="check the plan only, not what its releases and directories put on the cluster")
    render_mode.add_argument("--render", action="store_true", help="fail (exit 2) when a release or directory cannot be rendered")
    preview.set_defaults(func=cmd_preview)

    preflight = sub.add_parser("preflight", help="what the cloud account must offer before a stack deploys")
    preflight.add_argument("cloud", choices=["eks"], help="eks: zones, instance shapes and GPU vCPU quotas, asked of AWS")
    preflight.add_argument("stack", help="stack name: stacks/Pulumi.<stack>.yaml")
    preflight.add_argument("--project-dir", metavar="DIR", help="the folder holding Pulumi.yaml")
    preflight.set_defaults(func=cmd_preflight)

    docs = sub.add_parser("docs", help="the stack config reference generated from the models")
    group = docs.add_mutually_exclusive_group()
    group.add_argument("--check", action="store_true", help="exit 1 when README.md or Pulumi.yaml is stale")
    group.add_argument("--write", action="store_true", help="rewrite the generated parts of README.md and Pulumi.yaml")
    docs.add_argument("--project-dir", metavar="DIR", help="the folder holding Pulumi.yaml")
    docs.set_defaults(func=cmd_docs)

    cap = sub.add_parser(
        "plan-capacity",
        help="nodes for N parallel pipeline runs in T on a pool of the stack, and whether its maximum allows it",
    )
    cap.add_argument("stack", help="stack name: stacks/Pulumi.<stack>.yaml")
    cap.add_argument("--pool", required=True, help="the pool (GKE) or GPU class (EKS) name")
    cap.add_argument("--inputs", metavar="FILE", help="YAML with steps, run_duration, runs, window, nodes, reserves, daemonsets")
    cap.add_argument("--cpu", help='one step\'s CPU request: cores ("2") or millicores ("1500m")')
    cap.add_argument("--memory", help='one step\'s memory request: MiB or a quantity ("4Gi")')
    cap.add_argument("--gpus", help="one step's nvidia.com/gpu request (default 0)")
    cap.add_argument("--run-duration", help='wall time of one run: seconds or "36m", "1h30m"')
    cap.add_argument("--runs", help="N: parallel runs")
    cap.add_argument("--window", help='T: the time they must finish in ("3h")')
    cap.add_argument("--nodes", help="K: a node count to evaluate")
    cap.add_argument("--json", metavar="FILE", help="write the plan as JSON to FILE")
    cap.add_argument("--project-dir", metavar="DIR", help="the folder holding Pulumi.yaml")
    cap.set_defaults(func=cmd_plan_capacity)

    up = sub.add_parser("upstream", help="the lock of upstream charts and Kustomize sources: check it, or re-lock")
    up.add_argument("action", choices=["check", "lock"], help="check: the sources match the lock; lock: rewrite the lock for the stacks")
    up.add_argument("stacks", nargs="*", help="lock: the stacks whose sources to lock (default: every stack file)")
    up.add_argument("--upstream", metavar="DIR", help="a local copy of the sources (default: the user cache, fetched online)")
    up.add_argument("--offline", action="store_true", help="never fetch")
    up.add_argument("--check", action="store_true", help="lock: exit 1 when the lock would change, write nothing")
    up.add_argument("--project-dir", metavar="DIR", help="the folder holding Pulumi.yaml")
    up.set_defaults(func=cmd_upstream)

    report = sub.add_parser("report", help="GPU pod wait times and GPU utilisation from Prometheus")
    report.add_argument("--prometheus", required=True, metavar="URL", help="the Prometheus base URL (http://host:9090)")
    report.add_argument("--start", required=True, help="start: RFC 3339 (2026-11-20T10:00:00Z) or Unix seconds")
    report.add_argument("--end", required=True, help="end: RFC 3339 or Unix seconds")
    report.add_argument("--step", default="1s", help="sampling step (default 1s, the seed's)")
    report.add_argument("--out", metavar="DIR", default="report", help="where report.json and the PNG plots go (default ./report)")
    report.add_argument("--timeout", default="30", help="seconds per HTTP request (default 30)")
    report.set_defaults(func=cmd_report)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # Importing the provider SDKs creates hundreds of thousands of objects and no garbage
    # cycles worth collecting; pausing the cyclic collector for one short command saves
    # a sixth of a preview's run time (tests/benchmarks/preview_vs_import.py).
    gc.disable()
    try:
        return int(args.func(args))
    finally:
        gc.enable()


def run() -> None:
    """The console script: main(), then leave without tearing the interpreter down.

    Freeing the provider SDKs' objects one by one at exit takes about half a second, a
    third of a preview (tests/benchmarks/preview_vs_import.py). By then the output is
    written and its files closed; the exit handlers still run, then the process ends.
    """
    code = main()
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    run()
