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


def render_tree(plan: Any) -> str:
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
    findings = validate_objects(objects, stack_config.kubernetes_version)
    violations = [f for f in findings if f.validated]
    notices = [f for f in findings if not f.validated]
    # The policy engine shows rules the resources' inputs with secrets unwrapped.
    policy_findings = evaluate(
        [Resource(r.type, r.name, r.urn, plain(r.inputs), r.protect) for r in plan.resources], policy_config
    )
    mandatory = [f for f in policy_findings if f.enforcement is Enforcement.MANDATORY]

    if not args.quiet:
        print(render_tree(plan))
        print()
    print(
        f"{len(plan.resources)} resources, {len(objects)} Kubernetes objects "
        f"({len(objects) - len(notices)} validated against Kubernetes {stack_config.kubernetes_version} "
        f"and CRD schemas, {len(notices)} without a schema offline), {len(violations)} schema violations; "
        f"policy pack: {len(mandatory)} mandatory and {len(policy_findings) - len(mandatory)} advisory violations"
    )
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

    try:
        _write_outputs(args, plan, objects, violations, notices, policy_findings)
    except OSError as exc:
        _err(f"cannot write {exc.filename or 'output'}: {exc.strerror or exc}")
        return EXIT_CONFIG
    return EXIT_VIOLATIONS if violations or mandatory else EXIT_OK


def _write_outputs(
    args: argparse.Namespace, plan: Any, objects: list[Any], violations: list[Any], notices: list[Any], policy: list[Any]
) -> None:
    from infra.manifests import write_manifests

    if args.json:
        document = plan.to_json(
            violations=[
                {"rule": "kubernetes-schema", "enforcement": "mandatory", "resource": v.resource, "message": v.message, "fix": "correct the object to its schema"}
                for v in violations
            ]
            + [f.to_json() for f in policy],
            notices=[{"resource": n.resource, "message": n.message} for n in notices]
            + [{"resource": None, "message": f"offline: {m}"} for m in plan.notices],
        )
        Path(args.json).write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    if args.manifests:
        write_manifests(objects, Path(args.manifests))


def cmd_preflight(args: argparse.Namespace) -> int:
    from infra.config import Cloud, ConfigError
    from infra.preflight import preflight_eks
    from infra.preview import PreviewError, find_project_dir, load_stack

    try:
        project_dir = find_project_dir(Path(args.project_dir) if args.project_dir else None)
        config = load_stack(project_dir, args.stack)
    except (PreviewError, ConfigError) as exc:
        for line in exc.lines:
            _err(line)
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
