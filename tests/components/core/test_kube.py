"""helm_release names an OCI chart by its full reference (Helm pulls OCI charts by reference and has no
index to look a name up in; pulumi/pulumi-kubernetes#1892, #2334), and chart_source reads back what every
release declares: the one place the preview, the lock and the tree take a release's chart and repository from."""

from __future__ import annotations

import pytest

from gpu_platform.components.core.kube import chart_source


@pytest.mark.parametrize(
    ("inputs", "expected"),
    [
        ({"chart": "oci://public.ecr.aws/karpenter/karpenter", "version": "1.14.1"}, ("karpenter", "oci://public.ecr.aws/karpenter")),
        ({"chart": "oci://registry.k8s.io/kueue/charts/kueue"}, ("kueue", "oci://registry.k8s.io/kueue/charts")),
        (
            {"chart": "headlamp", "repositoryOpts": {"repo": "https://kubernetes-sigs.github.io/headlamp/"}},
            ("headlamp", "https://kubernetes-sigs.github.io/headlamp/"),
        ),
        ({"chart": "local-chart"}, ("local-chart", None)),
    ],
)
def test_chart_source_reads_what_helm_release_declares(inputs: dict[str, object], expected: tuple[str, str | None]) -> None:
    assert chart_source(inputs) == expected


def test_every_oci_release_of_the_shipped_stacks_is_a_full_reference() -> None:
    """No shipped stack names an OCI registry through repositoryOpts (helm.v3.Release would look for an index.yaml there)."""
    from tests.conftest import PROJECT_DIR, shipped_plan

    stacks = sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in (PROJECT_DIR / "stacks").glob("Pulumi.*.yaml"))
    oci = 0
    for stack in stacks:
        for r in shipped_plan(stack).resources:
            if r.type != "kubernetes:helm.sh/v3:Release":
                continue
            repo = (r.inputs.get("repositoryOpts") or {}).get("repo") or ""
            assert not repo.startswith("oci://"), f"{stack}: {r.name} names {repo} through repositoryOpts"
            oci += str(r.inputs["chart"]).startswith("oci://")
    assert oci >= 3  # prod-eks's karpenter and karpenter-crd, and the queued stacks' kueue
