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
        The stack config reference generated from the models (README and Pulumi.yaml).
    gpu-platform plan-capacity <stack> --pool NAME [--inputs FILE] [--cpu ..] [--runs N] ...
        Nodes for N parallel pipeline runs in T, time of N on K nodes, runs that fit in T on
        K, and whether the pool's autoscaling maximum allows it (infra/capacity.py). Exit 0,
        1 when the pool's maximum is too low, 2 on bad inputs or a step that fits no node.
    gpu-platform report --prometheus URL --start T --end T [--out DIR]
        GPU pod wait times and GPU utilisation from the cluster's Prometheus, as a table,
        JSON and PNG plots (infra/report.py). Exit 0, 2 on bad inputs, 4 when Prometheus
        cannot answer or lacks the metrics.

Errors print one line per problem and no traceback, for any input; every command shares
the exit codes of infra/errors.py (2 bad input, 3 an unexpected failure, 4 a service that
cannot answer, 130 interrupted). `--debug` or GPU_PLATFORM_DEBUG=1 prints the traceback of
an unexpected failure; `--version` prints the version.
"""

from __future__ import annotations

import argparse
import re
import atexit
import contextlib
import gc
import json
import os
import sys
from pathlib import Path
from collections.abc import Iterator, Sequence
from typing import Any

import yaml

from gpu_platform.infra.errors import (
    EXIT_CONFIG,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_PROGRAM,
    EXIT_SERVICE,
    EXIT_VIOLATIONS,
    CommandError,
    deferred_interrupts,
    interrupted,
    mark_interrupted,
    recording_interrupts,
)

EXIT_PROMETHEUS = EXIT_SERVICE


def _err(line: str) -> None:
    print(f"gpu-platform: {line}", file=sys.stderr)


# --- the resource tree ------------------------------------------------------------------------


def _secret(value: Any) -> bool:
    from gpu_platform.infra.preview import SECRET_SIG

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
    from gpu_platform.components.labels import PRIORITY_CONFIGMAP  # the package imports the provider SDKs

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
        if inputs.get("kind") == "ConfigMap" and meta.get("name") == PRIORITY_CONFIGMAP:
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
#
# A command returns 0 or 1 (its checks) and raises for everything else: CommandError (and
# the one-line error types of the modules it calls) for bad input and unreachable
# services; main() turns every exception into its lines and exit code (infra/errors.py).


def _project_dir(args: argparse.Namespace) -> Path:
    from gpu_platform.infra.preview import find_project_dir

    return find_project_dir(Path(args.project_dir) if args.project_dir else None)


def cmd_preview(args: argparse.Namespace) -> int:
    with deferred_interrupts(second_raises=True):  # the SDKs' imports: see _read_stack
        from gpu_platform.infra.config import ConfigError, load_stack_config
        from gpu_platform.infra.manifests import MANIFEST_FILES, kubernetes_objects, manifest_files, plain, rendered_json, validate_objects
        from gpu_platform.infra.output import check_distinct, file_target, folder_target, write_outputs
        from gpu_platform.infra.preview import load_program, read_stack_file, run_program
        from gpu_platform.policies.evaluate import evaluate, read_policy_config
        from gpu_platform.policies.rules import Enforcement, Resource

    # Every output path is checked before the program runs and before anything is written.
    json_target = file_target("--json", args.json) if args.json is not None else None
    manifests_target = folder_target("--manifests", args.manifests, MANIFEST_FILES) if args.manifests is not None else None
    check_distinct(json_target, manifests_target)
    from gpu_platform.infra.apply.command import check_target, run_apply

    check_target(args)
    args.stack = _preview_stack(args)
    args.sources = None if args.no_render else _sources(args)
    program = load_program(Path(args.program)) if args.program is not None else None
    project_dir = program.project_dir if program is not None else _project_dir(args)
    config, secret_keys = read_stack_file(project_dir, args.stack, required=program is None)
    policy_config = read_policy_config(Path(args.policy_config) if args.policy_config is not None else None)
    try:
        # Ctrl-C takes effect when the run ends (seconds; a second Ctrl-C at once): an
        # interrupt inside the SDK's event loop or a provider SDK's import is not safe.
        with deferred_interrupts(second_raises=True):
            plan = run_program(project_dir, args.stack, config, secret_keys, program=program)
        stack_config = load_stack_config() if program is None else program_target(plan, args.kubernetes_version)
    except (ConfigError, KeyboardInterrupt):
        raise
    except Exception as exc:  # noqa: BLE001 - the program's own failure: one line, exit 3
        raise _program_failure(exc) from exc

    objects = kubernetes_objects(plan)
    report = None
    if args.no_render:
        findings = validate_objects(objects, stack_config.kubernetes_version)
        render_lines = ["notice: rendering: skipped (--no-render): the objects of Helm releases and Kustomize directories were not checked"]
    else:
        report = _render(args, plan, objects, stack_config, policy_config)
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
    render_errors = report.errors if report is not None else []
    if report is not None and args.render and report.notices:
        raise CommandError(
            [f"{line} (--render requires every release and directory rendered)" for line in report.notices], EXIT_CONFIG
        )

    outputs: list[Any] = []
    if json_target is not None:
        document = plan.to_json(
            violations=[
                {"rule": "kubernetes-schema", "enforcement": "mandatory", "resource": v.resource, "message": v.message, "fix": "correct the object to its schema"}
                for v in violations
            ]
            + [f.to_json() for f in policy_findings],
            notices=[{"resource": n.resource, "message": n.message} for n in notices]
            + [{"resource": None, "message": f"offline: {m}"} for m in plan.notices]
            + [{"resource": None, "message": f"warning: {m}"} for m in plan.warnings]
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
        outputs.append((json_target, _json_bytes(document)))
    if manifests_target is not None:
        outputs.append((manifests_target, manifest_files(objects, report.rendering if report is not None else None)))
    write_outputs(outputs)

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
    for message in plan.warnings:
        print(f"warning: {message}")
    for violation in violations:
        print(f"violation: schema: {violation.message}")
    for finding in policy_findings:
        label = "violation" if finding.enforcement is Enforcement.MANDATORY else "advisory"
        where = f"{finding.resource}: " if finding.resource else ""
        print(f"{label}: policy {finding.rule}: {where}{finding.message}; fix: {finding.fix}")
    for finding in cluster_findings:
        print(f"violation: {finding.check}: {finding.message}")
    for line in render_errors:
        print(f"violation: render: {line}")
    applied = EXIT_OK
    if args.apply is not None:
        lines, applied = run_apply(args, plan, objects, report, stack_config)
        print("\n".join(lines))
    return EXIT_VIOLATIONS if violations or mandatory or cluster_findings or render_errors or applied else EXIT_OK


def _sources(args: argparse.Namespace) -> Any:
    """Where rendering takes its sources (--upstream, $GPU_PLATFORM_UPSTREAM, else the cache),
    checked before the program runs; CommandError (exit 2) when they cannot be used."""
    from gpu_platform.infra.upstream import SourceError, Sources, load_lock

    try:
        lock = load_lock()
    except SourceError as exc:
        raise CommandError([str(exc)], EXIT_CONFIG) from None
    flag = "--upstream" if args.upstream is not None else "GPU_PLATFORM_UPSTREAM"
    upstream = args.upstream if args.upstream is not None else os.environ.get("GPU_PLATFORM_UPSTREAM")
    if upstream is not None and (not upstream.strip() or not (Path(upstream, "charts").is_dir() or Path(upstream, "git").is_dir())):
        raise CommandError(
            [f"{flag} {upstream}: no charts/ or git/ folder there (give a copy laid out as ../shared/reference/upstream)"],
            EXIT_CONFIG,
        )
    offline = args.offline or os.environ.get("GPU_PLATFORM_OFFLINE") == "1"
    return Sources(lock, upstream_dir=Path(upstream).resolve() if upstream else None, fetch=not offline)


def _render(args: argparse.Namespace, plan: Any, objects: list[Any], stack_config: Any, policy_config: Any) -> Any:
    """Render the plan's releases and directories and check what the cluster gets."""
    from gpu_platform.infra.render import check_rendered

    sources = args.sources
    return check_rendered(plan, objects, stack_config, sources, sources.lock, policy_config)


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


def _json_bytes(document: Any) -> bytes:
    return (json.dumps(document, indent=2, sort_keys=True) + "\n").encode("utf-8")


def _preview_stack(args: argparse.Namespace) -> str:
    """The stack to preview: positional or --stack (not two different ones); dev for --program."""
    if args.stack is not None and args.stack_option is not None and args.stack != args.stack_option:
        raise CommandError(f"--stack {args.stack_option}: the positional stack is {args.stack}; give one")
    stack = args.stack if args.stack is not None else args.stack_option
    if stack is None and args.program is None:
        raise CommandError("preview needs a stack (gpu-platform preview <stack>) or --program DIR")
    if args.program is None and args.kubernetes_version is not None:
        raise CommandError("--kubernetes-version applies to --program; a stack sets gpu-platform:kubernetes_version")
    if args.program is not None and args.project_dir is not None:
        raise CommandError("--project-dir and --program both name a project: give one")
    if args.kubernetes_version is not None and not re.fullmatch(r"1\.[0-9]{2}", args.kubernetes_version):
        raise CommandError(f"--kubernetes-version {args.kubernetes_version}: a Kubernetes minor version such as 1.34")
    return "dev" if stack is None else stack


def program_target(plan: Any, kubernetes_version: str | None) -> Any:
    """What the checks need of a program of one's own, which has no gpu-platform stack config:
    the Kubernetes version (--kubernetes-version, else the stack config's default) and the cloud
    its cluster runs on (from the plan's resources; gcp when it declares no cluster)."""
    from types import SimpleNamespace

    from gpu_platform.infra.config import Cloud, StackConfig

    version = kubernetes_version or StackConfig.model_fields["kubernetes_version"].default
    cloud = Cloud.AWS if any(r.type.startswith("aws:eks/") for r in plan.resources) else Cloud.GCP
    return SimpleNamespace(kubernetes_version=version, cloud=cloud)


def _program_failure(exc: Exception) -> CommandError:
    """A program's exception as the command's error: a component's refused input (Pulumi's
    InputPropertyError/InputPropertiesError) is bad input, one line per property, exit 2;
    anything else is the program failing, one line, exit 3."""
    import pulumi

    if isinstance(exc, pulumi.InputPropertyError):
        return CommandError([f"invalid input {exc.property_path}: {exc.reason}"], EXIT_CONFIG)
    if isinstance(exc, pulumi.InputPropertiesError):
        details = exc.errors or []
        lines = [f"invalid input {d['property_path']}: {d['reason']}" for d in details] or [f"invalid inputs: {exc.message}"]
        return CommandError(lines, EXIT_CONFIG)
    return CommandError([f"the program failed: {type(exc).__name__}: {_first_line(exc)}"], EXIT_PROGRAM)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else "(no message)"


def _read_stack(args: argparse.Namespace) -> Any:
    """The stack's typed config for a command that reads it (PreviewError/ConfigError otherwise).

    The first Ctrl-C waits for the end (a second one raises at once): importing the Pulumi
    SDK is not a safe place for a KeyboardInterrupt.
    """
    with deferred_interrupts(second_raises=True):
        from gpu_platform.infra.preview import load_stack

        return load_stack(_project_dir(args), args.stack)


def cmd_preflight(args: argparse.Namespace) -> int:
    from gpu_platform.infra.config import Cloud
    from gpu_platform.infra.preflight import CloudError, preflight_eks

    config = _read_stack(args)
    if config.cloud is not Cloud.AWS:
        raise CommandError(f"stack {args.stack} deploys to {config.cloud.value}, not aws: preflight {args.cloud} checks EKS stacks")
    import boto3
    import pulumi_aws

    assert config.eks is not None
    region = config.eks.region or str(pulumi_aws.config.region)
    try:
        session = boto3.Session(region_name=region)
        ec2, quotas = session.client("ec2"), session.client("service-quotas")
    except Exception as exc:  # noqa: BLE001 - botocore raises for a bad region, profile or endpoint
        raise CommandError(f"cannot ask AWS in {region}: {type(exc).__name__}: {_first_line(exc)}", EXIT_SERVICE) from exc
    try:
        findings = preflight_eks(config, region, ec2, quotas)
    except CloudError as exc:
        raise CommandError(str(exc), EXIT_SERVICE) from exc
    for finding in findings:
        print(finding)
    errors = sum(f.error for f in findings)
    print(f"{len(findings)} checks, {errors} would fail a deploy")
    return EXIT_VIOLATIONS if errors else EXIT_OK


def cmd_docs(args: argparse.Namespace) -> int:
    from gpu_platform.infra.docs import sync_docs

    project_dir = _project_dir(args)
    stale = sync_docs(project_dir, write=args.write)
    if args.write:
        for path in stale:
            print(f"updated {path}")
        return EXIT_OK
    if args.check:
        for path in stale:
            _err(f"{path} is out of date with the models; run: gpu-platform docs --write")
        return EXIT_VIOLATIONS if stale else EXIT_OK
    from gpu_platform.infra.docs import config_reference

    print(config_reference())
    return EXIT_OK


_PLAN_FLAGS = {"cpu": "cpu", "memory": "memory", "gpus": "gpus"}


def _capacity_inputs(args: argparse.Namespace) -> dict[str, Any]:
    """The planner's inputs: the YAML file's, then the flags on top of them."""
    import yaml

    data: dict[str, Any] = {}
    if args.inputs is not None:
        loaded = _yaml_file("--inputs", args.inputs, "a mapping (steps, run_duration, runs, window, nodes, ...)")
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
    from gpu_platform.infra.config import format_validation_error
    from gpu_platform.infra.output import file_target, write_outputs

    json_target = file_target("--json", args.json) if args.json is not None else None
    stack_config = _read_stack(args)
    shape = _pool_shape(args, stack_config)
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
        write_outputs([(json_target, _json_bytes(result.to_json()))])
    for line in render(result, shape):
        print(line)
    return EXIT_VIOLATIONS if result.pool_max_too_low else EXIT_OK


def _pool_shape(args: argparse.Namespace, stack_config: Any) -> Any:
    """The pool --pool names in the stack (its NodePoolShape); one line naming the pools otherwise."""
    shapes = {shape.name: shape for shape in stack_config.pool_shapes()}
    if args.pool not in shapes:
        raise CommandError(f"--pool {args.pool}: stack {args.stack} has no such pool (pools: {', '.join(shapes) or 'none'})")
    return shapes[args.pool]


def _url_password(url: str) -> str | None:
    from urllib.parse import urlsplit

    try:
        return urlsplit(url).password or None
    except ValueError:
        return None


def cmd_report(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from gpu_platform.infra.config import format_validation_error
    from gpu_platform.infra.output import folder_target, write_outputs
    from gpu_platform.infra.report import REPORT_FILES, ReportError, ReportInputs, collect, report_files, table_rows

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


SIMULATE_FILES = ("report.json", "wait_times.png", "gpus.png", "sweep.png")
"""What a simulate --out folder may hold: replaced whole."""


def _workload(args: argparse.Namespace, stack_config: Any, seed: int) -> Any:
    """The workload pattern the flags name (SimulationError, one line, when they cannot)."""
    from pydantic import ValidationError

    from gpu_platform.infra.config import format_validation_error
    from gpu_platform.infra.simulate import SimulationError
    from gpu_platform.infra.workloads import DeepDive, WorkloadFile, deep_dive, from_file, kfp_pipelines

    name = args.workload
    if name == "deep-dive":
        return deep_dive(DeepDive(), seed)
    if name == "kfp":
        from gpu_platform.infra.capacity import CapacityInputs

        if args.inputs is None:
            raise SimulationError("--workload kfp: give the pipelines with --inputs FILE (plan-capacity's inputs: steps, run_duration, runs)")
        if args.pool is None:
            raise SimulationError("--workload kfp: name the pool the pipelines run on with --pool")
        shape = _pool_shape(args, stack_config)
        data = _yaml_file("--inputs", args.inputs)
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
    data = _yaml_file("--workload", name)
    try:
        workload = WorkloadFile.model_validate(data)
    except ValidationError as exc:
        raise SimulationError([f"--workload {name}: {line}" for line in format_validation_error(exc, WorkloadFile)]) from None
    return from_file(workload, seed, Path(name).name)


def _yaml_file(flag: str, path: str, expected: str = "a mapping") -> Any:
    """A YAML mapping from a file a flag names; CommandError, one line naming the flag, otherwise."""
    try:
        data = yaml.safe_load(Path(path).read_bytes().decode("utf-8"))
    except OSError as exc:
        raise CommandError(f"{flag} {path}: cannot read ({exc.strerror or type(exc).__name__})") from None
    except UnicodeDecodeError as exc:
        raise CommandError(
            f"{flag} {path}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start}); save it as UTF-8 YAML"
        ) from None
    except yaml.YAMLError as exc:
        raise CommandError(f"{flag} {path}: invalid YAML: {str(exc).splitlines()[0]}") from None
    except RecursionError:
        raise CommandError(f"{flag} {path}: invalid YAML: nested too deeply") from None
    if not isinstance(data, dict):
        raise CommandError(f"{flag} {path}: expected {expected}")
    return data


def cmd_simulate(args: argparse.Namespace) -> int:
    from gpu_platform.infra.output import file_target, folder_target, write_outputs
    from gpu_platform.infra.simulate import (
        SWEEP_COLUMNS, PriceTable, SimulationError, Work, cheapest_meeting, configurations, parse_assignment,
        parse_value, run_all, sweep_plot, sweep_row, sweep_values, table_rows,
    )
    from gpu_platform.infra.simulation import parse_seconds
    from gpu_platform.infra.workloads import repeat

    # Every flag is checked before the stack is read and anything runs.
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
        if not sweeps:
            raise SimulationError("--target-p90: names the cheapest configuration of a sweep; give --sweep KEY=V1,V2")
    if args.max_configs < 1:
        raise SimulationError(f"--max-configs {args.max_configs}: at least 1")
    if args.processes < 0:
        raise SimulationError(f"--processes {args.processes}: 0 (one per core) or more")
    replay = args.replay or args.prometheus is not None or args.start is not None or args.end is not None
    if replay and not (args.replay and args.prometheus and args.start and args.end):
        raise SimulationError("--replay needs --prometheus URL --start T --end T (and takes no --workload)")
    if replay and args.workload_given:
        raise SimulationError("--replay replays the pods Prometheus saw: give it without --workload")
    prices = (
        PriceTable.from_data(_yaml_file("--prices", args.prices, "a price table (date, sources, gcp, aws)"), f"--prices {args.prices}")
        if args.prices is not None else PriceTable.shipped()
    )
    json_target = file_target("--json", args.json) if args.json is not None else None
    out_target = folder_target("--out", args.out, SIMULATE_FILES) if args.out is not None else None
    configs = configurations(_project_dir(args), args.stack, sets, sweeps, args.max_configs)

    from rich.console import Console
    from rich.markup import escape
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    if replay:
        from pydantic import ValidationError

        from gpu_platform.infra.config import format_validation_error
        from gpu_platform.infra.replay import replay_jobs
        from gpu_platform.infra.report import ReportInputs

        try:
            report_inputs = ReportInputs(prometheus=args.prometheus, start=args.start, end=args.end, step=args.step)
        except ValidationError as exc:
            raise SimulationError(["--" + line for line in format_validation_error(exc, ReportInputs)]) from None
        replayed = replay_jobs(report_inputs)
        described = {"name": "replay", "source": replayed.source, "start": replayed.start, "pods": replayed.pods}
        work = [Work(c.inputs, replayed.jobs, replayed.horizon, 0.0, prices, c.label, c.overrides) for c in configs]
    else:
        work = []
        for c in configs:
            pattern = _workload(args, c.stack, c.inputs.seed)
            if not pattern.jobs:
                raise SimulationError(f"--workload {args.workload}: the workload is empty: no job in its pattern")
            jobs, horizon = repeat(pattern, hours)
            described = {**pattern.described, "hours": None if horizon is None else horizon / 3600}
            work.append(Work(c.inputs, jobs, horizon, pattern.tail_s, prices, c.label, c.overrides))
    console = Console(stderr=True)
    with Progress(TextColumn("simulating {task.description}"), BarColumn(), TextColumn("{task.completed:.0f}"),
                  TimeElapsedColumn(), console=console, transient=True) as bar:
        if len(work) == 1:
            # One configuration: progress in simulated hours.
            task = bar.add_task("hours", total=None if work[0].horizon is None else work[0].horizon / 3600)
            outcomes = run_all(work, 1, simulated=lambda at: bar.update(task, completed=at / 3600))
        else:
            task = bar.add_task(f"{len(work)} configurations", total=len(work))
            outcomes = run_all(work, args.processes or os.cpu_count() or 1, done=lambda _: bar.advance(task))
    chosen = cheapest_meeting(outcomes, target) if target is not None else None
    first = chosen or outcomes[0]
    document: Any
    if len(outcomes) == 1:
        document = first.json_document(described, configs[0].inputs)
    else:
        document = {
            "configurations": [o.json_document(described, c.inputs) for o, c in zip(outcomes, configs)],
            "target_p90_s": target,
            "cheapest_meeting_target": None if chosen is None else chosen.label,
        }
    outputs: list[Any] = []
    if json_target is not None:
        outputs.append((json_target, _json_bytes(document)))
    if out_target is not None:
        from gpu_platform.infra.report import plot_files

        files = {"report.json": _json_bytes(first.json_document(described, configs[outcomes.index(first)].inputs)),
                 **plot_files(first.report)}
        if len(outcomes) > 1:
            files["sweep.png"] = sweep_plot(outcomes, chosen, target)
        outputs.append((out_target, files))
    write_outputs(outputs)
    out = Console(width=max(110, Console().width))
    if len(outcomes) == 1:
        table = Table(title=f"simulate {args.stack}: {described['name']}")
        table.add_column("what")
        table.add_column("value")
        for what, value in table_rows(first):
            table.add_row(escape(what), escape(value))
    else:
        table = Table(title=f"simulate {args.stack}: {described['name']}, {len(outcomes)} configurations")
        for column in SWEEP_COLUMNS:
            table.add_column(column)
        for o in outcomes:
            row = sweep_row(o)
            table.add_row(*(escape(cell) for cell in row), style="bold green" if o is chosen else None)
    out.print(table)
    if target is not None:
        if chosen is None:
            out.print(f"no configuration meets p90 <= {target:g} s")
        else:
            out.print(f"cheapest meeting p90 <= {target:g} s: {escape(chosen.label)} (${chosen.cost.usd_per_day:,.0f}/day, "
                      f"{chosen.report.utilisation_percent:.1f}% utilised, p90 {chosen.p90} s)")
    for target_, what in ((json_target, "JSON"), (out_target, "plots")):
        if target_ is not None:
            out.print(f"wrote {what} to {target_.path}", soft_wrap=True)
    stalled = [o for o in outcomes if o.trace.stalled_at is not None]
    for o in stalled:
        _err(f"{o.label}: the workload stalled at {o.trace.stalled_at / 3600:.2f} h: {o.trace.stalled_pods} pending pods "
             "fit no node the stack has or can add (their pool, taints, or its maximum)")
    return EXIT_VIOLATIONS if stalled else EXIT_OK


def cmd_upstream(args: argparse.Namespace) -> int:
    """`upstream check`: every locked source is in the sources and matches the lock.
    `upstream lock`: the lock rewritten to cover exactly what the stacks and the components
    declare (`--check`: exit 1 when it would change, write nothing)."""
    from gpu_platform.infra.output import file_target, write_outputs
    from gpu_platform.infra.preview import read_stack_file, run_program
    from gpu_platform.infra.upstream import LOCK_PATH, SourceError, check_lock, dump_lock

    sources = _sources(args)
    if args.action == "check":
        problems = check_lock(sources)
        for line in problems:
            _err(line)
        print(f"{len(sources.lock.charts)} charts and {len(sources.lock.git)} git refs locked; "
              f"{len(problems)} problems in {sources.describe()}")
        return EXIT_VIOLATIONS if problems else EXIT_OK
    from gpu_platform.infra.render import declared_sources, lock_for, supported_sources

    target = None if args.check else file_target("lock", str(LOCK_PATH))
    project_dir = _project_dir(args)
    stacks = args.stacks or sorted(p.name[len("Pulumi."):-len(".yaml")] for p in (project_dir / "stacks").glob("Pulumi.*.yaml"))
    declared = [supported_sources()]
    for stack in stacks:
        config, secret_keys = read_stack_file(project_dir, stack)
        with deferred_interrupts(second_raises=True):
            declared.append(declared_sources(run_program(project_dir, stack, config, secret_keys)))
    try:
        text = dump_lock(lock_for(declared, sources))
    except SourceError as exc:
        raise CommandError([str(exc)], EXIT_CONFIG) from None
    if target is None:
        stale = text != LOCK_PATH.read_text(encoding="utf-8")
        if stale:
            _err(f"{LOCK_PATH} does not cover exactly what the stacks and components declare; run: gpu-platform upstream lock")
        return EXIT_VIOLATIONS if stale else EXIT_OK
    write_outputs([(target, text.encode("utf-8"))])
    print(f"wrote {LOCK_PATH}")
    return EXIT_OK


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2, as for config errors
        raise CommandError(message, EXIT_CONFIG)

    def exit(self, status: int = 0, message: str | None = None) -> None:  # --help, --version
        if message:
            print(message, end="", file=sys.stderr if status else sys.stdout)
        raise _Exit(status)


class _Exit(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("gpu-platform")
    except PackageNotFoundError:
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--debug", action="store_true", default=argparse.SUPPRESS,
        help="print the traceback of an unexpected failure, for a bug report (also GPU_PLATFORM_DEBUG=1)",
    )
    parser = _Parser(prog="gpu-platform", description="Operate gpu-platform stacks.", parents=[common])
    parser.add_argument("--version", action="version", version=f"gpu-platform {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    preview = sub.add_parser("preview", parents=[common], help="offline preview of a stack: resource tree, plan JSON, manifests")
    preview.add_argument("stack", nargs="?", help="stack name: stacks/Pulumi.<stack>.yaml (with --program: default dev)")
    preview.add_argument(
        "--program", metavar="DIR",
        help="preview your own Python Pulumi program (the folder of its Pulumi.yaml) with the same checks; "
        "its stack file Pulumi.<stack>.yaml is read when there is one",
    )
    preview.add_argument("--stack", dest="stack_option", metavar="NAME", help="the stack (the same as the positional name)")
    preview.add_argument(
        "--kubernetes-version", metavar="X.Y",
        help="with --program: the Kubernetes minor whose schemas the objects are checked against (default: 1.34)",
    )
    preview.add_argument("--json", metavar="PLAN", help="write the plan as JSON to PLAN")
    preview.add_argument(
        "--manifests", metavar="DIR",
        help="write every Kubernetes object as YAML into DIR, replacing it whole (a new folder, or one holding only *.yaml)",
    )
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
    preview.add_argument(
        "--apply", metavar="local|KUBECONFIG",
        help="server-side apply every object (plan and rendered) in the engine's order: 'local' starts the control "
        "plane built from the upstream modules (tests/kube/build.sh) with kwok nodes like the pools; a kubeconfig "
        "applies to that cluster. Each refusal is one line; any refusal is exit 1",
    )
    preview.add_argument("--apply-kwok-nodes", action="store_true", help="with --apply KUBECONFIG: create kwok nodes like the pools there too")
    preview.set_defaults(func=cmd_preview)

    preflight = sub.add_parser("preflight", parents=[common], help="what the cloud account must offer before a stack deploys")
    preflight.add_argument("cloud", choices=["eks"], help="eks: zones, instance shapes and GPU vCPU quotas, asked of AWS")
    preflight.add_argument("stack", help="stack name: stacks/Pulumi.<stack>.yaml")
    preflight.add_argument("--project-dir", metavar="DIR", help="the folder holding Pulumi.yaml")
    preflight.set_defaults(func=cmd_preflight)

    docs = sub.add_parser("docs", parents=[common], help="the stack config reference generated from the models")
    group = docs.add_mutually_exclusive_group()
    group.add_argument("--check", action="store_true", help="exit 1 when README.md or Pulumi.yaml is stale")
    group.add_argument("--write", action="store_true", help="rewrite the generated parts of README.md and Pulumi.yaml")
    docs.add_argument("--project-dir", metavar="DIR", help="the folder holding Pulumi.yaml")
    docs.set_defaults(func=cmd_docs)

    cap = sub.add_parser(
        "plan-capacity", parents=[common],
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

    up = sub.add_parser("upstream", parents=[common], help="the lock of upstream charts and Kustomize sources: check it, or re-lock")
    up.add_argument("action", choices=["check", "lock"], help="check: the sources match the lock; lock: rewrite the lock for the stacks")
    up.add_argument("stacks", nargs="*", help="lock: the stacks whose sources to lock (default: every stack file)")
    up.add_argument("--upstream", metavar="DIR", help="a local copy of the sources (default: the user cache, fetched online)")
    up.add_argument("--offline", action="store_true", help="never fetch")
    up.add_argument("--check", action="store_true", help="lock: exit 1 when the lock would change, write nothing")
    up.add_argument("--project-dir", metavar="DIR", help="the folder holding Pulumi.yaml")
    up.set_defaults(func=cmd_upstream, no_render=False)

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

    sim = sub.add_parser(
        "simulate", parents=[common],
        help="simulate the stack's cluster under a workload: waits, GPU utilisation and cost, before you pay",
    )
    sim.add_argument("stack", help="stack name: stacks/Pulumi.<stack>.yaml")
    sim.add_argument(
        "--workload", default=None,
        help="deep-dive (the RAPIDS multi-tenant deep-dive's generator, default), kfp (with --inputs and --pool), "
        "or a workload file (YAML: tenants with arrival rates per hour, cluster sizes, durations)",
    )
    sim.add_argument("--inputs", metavar="FILE", help="--workload kfp: plan-capacity's inputs (steps, run_duration, runs, window)")
    sim.add_argument("--pool", help="--workload kfp: the pool (GKE) or GPU class (EKS) the pipelines run on")
    sim.add_argument("--replay", action="store_true", help="replay the GPU pods a real cluster ran (with --prometheus, --start, --end)")
    sim.add_argument("--prometheus", metavar="URL", help="--replay: the Prometheus base URL")
    sim.add_argument("--start", help="--replay: start, RFC 3339 or Unix seconds")
    sim.add_argument("--end", help="--replay: end, RFC 3339 or Unix seconds")
    sim.add_argument("--step", default="1s", help="--replay: the sampling step of the queries, as the report's (default 1s)")
    sim.add_argument("--hours", help="repeat the workload's pattern back to back over H simulated hours (default: once)")
    sim.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                     help="override a stack key (gke.gpu_pools[t4].autoscaling.min_nodes=2) or a model key "
                     "(model.autoscaler.scan_interval=5s) for the run; repeatable")
    sim.add_argument("--sweep", action="append", default=[], metavar="KEY=V1,V2",
                     help="run every combination of these values (repeatable), in parallel processes")
    sim.add_argument("--max-configs", type=int, default=64, help="most configurations a sweep may run (default 64)")
    sim.add_argument("--target-p90", metavar="DURATION", help='with --sweep: name the cheapest configuration whose p90 wait is at most this ("60s")')
    sim.add_argument("--processes", type=int, default=0, help="parallel processes for a sweep (default: one per core)")
    sim.add_argument("--prices", metavar="FILE", help="a price table (YAML, the shape of the shipped infra/prices.yaml)")
    sim.add_argument("--json", metavar="FILE", help="write the figures as JSON (report.json's keys plus cost, failover, admission)")
    sim.add_argument("--out", metavar="DIR", help="write report.json and the plots (and sweep.png) into DIR, replaced whole")
    sim.add_argument("--project-dir", metavar="DIR", help="the folder holding Pulumi.yaml")
    sim.set_defaults(func=cmd_simulate)
    return parser


# --- the one place failures become exit codes -------------------------------------------------

# The one-line error types of the modules commands call, by module (looked up only when that
# module is loaded, so the preview never imports the report's dependencies): lines, exit code.
_ERRORS = (
    ("gpu_platform.infra.config", "ConfigError", EXIT_CONFIG),
    ("gpu_platform.infra.preview", "PreviewError", EXIT_CONFIG),
    ("gpu_platform.policies.evaluate", "PolicyConfigError", EXIT_CONFIG),
    ("gpu_platform.infra.report", "ReportError", EXIT_SERVICE),
    ("gpu_platform.infra.simulate", "SimulationError", EXIT_CONFIG),
    ("gpu_platform.infra.replay", "ReplayError", EXIT_CONFIG),
)


def _classify(exc: Exception) -> tuple[list[str], int] | None:
    if isinstance(exc, CommandError):
        return exc.lines, exc.exit_code
    for module, name, code in _ERRORS:
        cls = getattr(sys.modules.get(module), name, None)
        if cls is not None and isinstance(exc, cls):
            return list(getattr(exc, "lines", None) or [_first_line(exc)]), code
    return None


def _debug(argv: Sequence[str]) -> bool:
    return "--debug" in argv or os.environ.get("GPU_PLATFORM_DEBUG", "").lower() in ("1", "true", "yes")


_reported: list[bool] = []


def _interrupted() -> int:
    """The one line for Ctrl-C (printed once however many layers see it) and its exit code."""
    if not _reported:
        _reported.append(True)
        _err("interrupted")
    return EXIT_INTERRUPTED


@contextlib.contextmanager
def _quiet_unraisable(debug: bool) -> Iterator[None]:
    """Exceptions Python can only print ("Exception ignored in ..."; a Ctrl-C landing in a
    finalizer or an exit handler) print no traceback unless --debug; the interrupt itself is
    recorded by infra/errors.py and still ends the command with 130."""
    previous = sys.unraisablehook

    def hook(unraisable: Any) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            mark_interrupted()
        if debug:
            previous(unraisable)

    sys.unraisablehook = hook
    try:
        yield
    finally:
        sys.unraisablehook = previous


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; every failure becomes one line per problem and an exit code."""
    import traceback

    argv = list(sys.argv[1:] if argv is None else argv)
    debug = _debug(argv)
    _reported.clear()
    with recording_interrupts(), _quiet_unraisable(debug):
        # Importing the provider SDKs creates hundreds of thousands of objects and no garbage
        # cycles worth collecting; pausing the cyclic collector for one short command saves
        # a sixth of a preview's run time (tests/benchmarks/preview_vs_import.py).
        gc.disable()
        try:
            args = build_parser().parse_args(argv)
            code = int(args.func(args))
            if interrupted():  # an interrupt some library swallowed: never exit 0 after Ctrl-C
                return _interrupted()
            return code
        except _Exit as exc:
            return exc.code
        except KeyboardInterrupt:
            mark_interrupted()
            return _interrupted()
        except Exception as exc:  # noqa: BLE001 - the one place: no traceback unless asked
            if interrupted():
                return _interrupted()
            known = _classify(exc)
            if debug and (known is None or known[1] == EXIT_PROGRAM):
                traceback.print_exception(exc)
            if known is None:
                _err(
                    f"unexpected error: {type(exc).__name__}: {_first_line(exc)} "
                    "(a bug: rerun with --debug for the traceback and report it)"
                )
                return EXIT_PROGRAM
            for line in known[0]:
                _err(line)
            return known[1]
        finally:
            gc.enable()


def run() -> None:
    """The console script: main(), then leave without tearing the interpreter down.

    Freeing the provider SDKs' objects one by one at exit takes about half a second, a
    third of a preview (tests/benchmarks/preview_vs_import.py). By then the output is
    written and its files closed; the exit handlers still run (with SIGINT deferred, so an
    interrupt there cannot be swallowed), then the process ends: 130 if an interrupt came
    at any point.
    """
    code = EXIT_INTERRUPTED
    try:
        with recording_interrupts(), _quiet_unraisable(_debug(sys.argv[1:])):
            code = main()
            with deferred_interrupts(raise_after=False):
                atexit._run_exitfuncs()
                if interrupted():
                    code = _interrupted()
    except KeyboardInterrupt:  # in the instants between main() and the exit handlers
        code = _interrupted()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:  # noqa: BLE001 - a closed pipe or a late Ctrl-C: the exit code still stands
        pass
    os._exit(code)


if __name__ == "__main__":
    run()
