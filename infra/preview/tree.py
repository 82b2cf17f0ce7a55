"""The resource tree the preview prints: each resource with the key settings a reviewer checks."""

from __future__ import annotations

from typing import Any

import yaml

from gpu_platform.components.core.kube import chart_source


def _secret(value: Any) -> bool:
    from gpu_platform.infra.preview.engine import SECRET_SIG

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
    from gpu_platform.components.core.labels import (
        PRIORITY_CONFIGMAP,  # the package imports the provider SDKs
    )

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
        if node.get("flexStart"):
            parts.append(f"flexStart=on maxRun={node.get('maxRunDuration')}")
        affinity = node.get("reservationAffinity") or {}
        if affinity.get("consumeReservationType") == "SPECIFIC_RESERVATION":
            parts.append(f"reservation={','.join(affinity.get('values') or [])}")
        elif affinity.get("consumeReservationType") == "ANY_RESERVATION":
            parts.append("reservation=any")
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
        if inputs.get("launchTemplate"):
            parts.append("launchTemplate")
        parts += _taints_and_labels(inputs)
    elif type_ == "aws:ec2/launchTemplate:LaunchTemplate":
        reservation = inputs.get("capacityReservationSpecification") or {}
        target = (reservation.get("capacityReservationTarget") or {}).get("capacityReservationId")
        parts.append(f"reservation={target or reservation.get('capacityReservationPreference')}")
        market = (inputs.get("instanceMarketOptions") or {}).get("marketType")
        if market:
            parts.append(f"market={market} type={inputs.get('instanceType')}")
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
        chart, repo = chart_source(inputs)
        parts.append(f"chart={chart}@{inputs.get('version')} namespace={inputs.get('namespace')}")
        if repo:
            parts.append(f"repo={repo}")
        if chart == "cluster-autoscaler":
            args = (inputs.get("values") or {}).get("extraArgs") or {}
            parts.append(" ".join(f"--{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in args.items()))
    elif type_ == "kubernetes:kustomize/v2:Directory":
        parts.append(f"directory={inputs.get('directory')}")
    elif type_.startswith("pulumi:providers:kubernetes"):
        if inputs.get("kubeconfig") is None:
            parts.append("kubeconfig=(ambient)" + (f" context={inputs['context']}" if inputs.get("context") else ""))
        else:
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
    lines = [f"Stack {plan.stack} ({plan.project}): {len(plan.resources)} resources"]

    def walk(parent: str | None, indent: str) -> None:
        kids = sorted(children.get(parent, []), key=lambda r: (r.custom, r.type, r.name))
        for i, r in enumerate(kids):
            last = i == len(kids) - 1
            detail = summarize(r.type, r.inputs)
            flags = " [protected]" if r.protect else ""
            lines.append(
                f"{indent}{'└─ ' if last else '├─ '}{r.type}  {r.name}{flags}" + (f"\n{indent}{'   ' if last else '│  '}   {detail}" if detail else "")
            )
            if rendered and r.urn in rendered:
                lines.append(f"{indent}{'   ' if last else '│  '}   {rendered[r.urn]}")
            walk(r.urn, indent + ("   " if last else "│  "))

    walk(None, "")
    return "\n".join(lines)
