"""Your own program, previewed offline: `gpu-platform preview --program DIR` and
gpu_platform.infra.testing, both on examples/consumer and on programs written here."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pulumi
import pytest

from gpu_platform.components import AutoscalingBounds, BoundsScope, GpuGkeCluster, GpuGkeClusterArgs, GpuNodePoolArgs
from gpu_platform.infra.cli import main
from gpu_platform.infra.testing import preview_program, run_components
from tests.conftest import PROJECT_DIR

CONSUMER = PROJECT_DIR / "examples" / "consumer"


def _program(tmp_path: Path, body: str, *, runtime: str = "python", stack_file: str | None = None) -> Path:
    (tmp_path / "Pulumi.yaml").write_text(f"name: mine\nruntime: {runtime}\nconfig:\n  mine:replicas:\n    default: 2\n")
    (tmp_path / "__main__.py").write_text(textwrap.dedent(body))
    if stack_file is not None:
        (tmp_path / "Pulumi.dev.yaml").write_text(stack_file)
    return tmp_path


def test_the_cli_previews_the_consumer_example(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = tmp_path / "plan.json"
    assert main(["preview", "--program", str(CONSUMER), "--no-render", "--quiet", "--json", str(plan)]) == 0
    document = json.loads(plan.read_text())
    by_name = {r["name"]: r for r in document["resources"]}
    assert by_name["ml"]["type"] == "gpu-platform:gpu_gke_cluster:GpuGkeCluster"
    assert by_name["ml-l4-compute-class"]["inputs"]["spec"]["priorities"][0] == {"nodepools": ["l4-spot"]}
    assert document["stack"] == "dev"
    assert "13 resources, 1 Kubernetes objects" in capsys.readouterr().out


def test_the_testing_module_previews_the_consumer_example() -> None:
    plan = preview_program(CONSUMER)
    plan.assert_no_violations()
    assert {r.name for r in plan.of_type("gcp:container/nodePool:NodePool")} == {"ml-system", "ml-l4-spot", "ml-l4-on-demand"}
    assert {r.name for r in plan.children_of("ml")} >= {"ml-cluster", "ml-nodes", "ml-k8s"}
    assert list(plan.outputs) == ["kubeconfig"]
    with pytest.raises(KeyError, match="0 resources named 'nope'"):
        plan.resource("nope")


def test_a_program_reads_its_own_config_and_stack_file(tmp_path: Path) -> None:
    program = _program(
        tmp_path,
        """
        import pulumi, pulumi_kubernetes as k8s
        replicas = pulumi.Config().require_int("replicas")
        k8s.apps.v1.Deployment("web", metadata={"name": "web"}, spec={
            "replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                         "spec": {"containers": [{"name": "web", "image": "nginx@sha256:" + "a" * 64}]}}})
    """,
        stack_file="config:\n  mine:replicas: 3\n",
    )
    plan = preview_program(program)
    assert plan.resource("web").inputs["spec"]["replicas"] == 3, "the stack file wins over the project default"
    assert preview_program(program, "other").resource("web").inputs["spec"]["replicas"] == 2, "no stack file: defaults"


def test_schema_violations_are_reported_and_asserted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    program = _program(
        tmp_path,
        """
        import pulumi_kubernetes as k8s
        k8s.apps.v1.Deployment("web", metadata={"name": "web"}, spec={"replicas": "many", "selector": {}, "template": {}})
    """,
    )
    plan = preview_program(program)
    assert plan.schema_violations and "replicas" in plan.schema_violations[0]
    with pytest.raises(AssertionError, match="schema: .*replicas"):
        plan.assert_no_violations()
    assert main(["preview", "--program", str(program), "--no-render", "--quiet"]) == 1
    assert "violation: schema:" in capsys.readouterr().out


def test_run_components_builds_one_component() -> None:
    args = GpuGkeClusterArgs(
        project="ml-platform",
        location="us-central1-b",
        gpu_pools=[
            GpuNodePoolArgs(
                name="t4",
                machine_type="n1-standard-4",
                accelerator_type="nvidia-tesla-t4",
                accelerator_count=1,
                autoscaling=AutoscalingBounds(scope=BoundsScope.TOTAL, max_nodes=2),
            )
        ],
    )
    plan = run_components(lambda: GpuGkeCluster("c", args))
    plan.assert_no_violations()
    (pool,) = [r for r in plan.of_type("gcp:container/nodePool:NodePool") if r.name == "c-t4"]
    assert pool.inputs["nodeConfig"]["guestAccelerators"][0]["count"] == 1
    with pytest.raises(pulumi.InputPropertyError):
        run_components(lambda: GpuGkeCluster("My_Cluster", args.model_copy(update={"cluster_name": None})))


@pytest.mark.parametrize(
    ("setup", "argv", "code", "message"),
    [
        (lambda d: None, ["--program", "{d}/missing"], 2, "--program {d}/missing: no such folder"),
        (lambda d: None, ["--program", "{d}"], 2, "--program {d}: no Pulumi.yaml (the folder of a Pulumi program holds one)"),
        (
            lambda d: _program(d, "", runtime="nodejs"),
            ["--program", "{d}"],
            2,
            "--program {d}: runtime 'nodejs': the offline preview runs Python programs (runtime: python)",
        ),
        (
            lambda d: (d / "Pulumi.yaml").write_text("name: mine\nruntime: python\nmain: src/\n"),
            ["--program", "{d}"],
            2,
            "--program {d}: main 'src/' has no __main__.py to run",
        ),
        (lambda d: _program(d, "raise RuntimeError('boom')\n"), ["--program", "{d}"], 3, "the program failed: RuntimeError: boom"),
        (lambda d: _program(d, ""), ["dev", "--program", "{d}", "--stack", "prod"], 2, "--stack prod: the positional stack is dev; give one"),
        (
            lambda d: _program(d, ""),
            ["--program", "{d}", "--kubernetes-version", "134"],
            2,
            "--kubernetes-version 134: a Kubernetes minor version such as 1.34",
        ),
        (lambda d: None, [], 2, "preview needs a stack (gpu-platform preview <stack>) or --program DIR"),
        (
            lambda d: None,
            ["dev-gke", "--kubernetes-version", "1.33"],
            2,
            "--kubernetes-version applies to --program; a stack sets gpu-platform:kubernetes_version",
        ),
    ],
)
def test_bad_program_input_is_one_line(setup: object, argv: list[str], code: int, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    setup(tmp_path)  # type: ignore[operator]
    args = [a.replace("{d}", str(tmp_path)) for a in argv]
    assert main(["preview", *args, "--no-render"]) == code
    assert capsys.readouterr().err == f"gpu-platform: {message.replace('{d}', str(tmp_path))}\n"


# --- --apply's kwok nodes come from the program's cluster components (issue 34 item 3) ---------------------------


def test_a_program_s_pools_are_its_cluster_components_pools() -> None:
    """The pools `--apply` makes kwok nodes of: the shapes of the cluster components the program made, each once."""
    from gpu_platform.infra.cli.preview import program_target
    from gpu_platform.infra.preview.engine import load_program, run_program

    plan = run_program(CONSUMER, "dev", {}, program=load_program(CONSUMER))
    (cluster,) = plan.clusters
    assert isinstance(cluster, GpuGkeCluster)
    target = program_target(plan, None)
    shapes = target.pool_shapes()
    assert shapes == cluster.pool_shapes() and [s.name for s in shapes] == ["system", "l4"]
    (l4,) = [s for s in shapes if s.name == "l4"]
    # spot and on-demand, 8 nodes in total each, in the program's two zones, one L4 per g2-standard-8
    assert (l4.gpus_per_node, l4.max_nodes, l4.zones) == (1, 16, ("us-central1-b", "us-central1-c"))
    assert target.pool_zones()["l4"] == ("us-central1-b", "us-central1-c")
    assert target.pools_source == "the pools of the program's cluster components (GpuGkeCluster ml): system, l4"


def test_a_program_without_a_cluster_component_is_told_it_gets_no_nodes(tmp_path: Path) -> None:
    from gpu_platform.infra.cli.preview import program_target
    from gpu_platform.infra.preview.engine import load_program, run_program

    program = _program(tmp_path, 'import pulumi_kubernetes as k8s\nk8s.core.v1.Namespace("ns", metadata={"name": "a"})\n')
    plan = run_program(program, "dev", {}, program=load_program(program))
    target = program_target(plan, None)
    assert plan.clusters == [] and target.pool_shapes() == []
    assert target.pools_source.startswith("none: the program makes no cluster component")


def test_the_clusters_made_outside_a_preview_are_not_collected() -> None:
    from gpu_platform.components.core.cluster import _MADE

    assert _MADE == []


def test_a_program_s_gpu_pool_in_a_zone_without_its_gpu_gets_the_stack_s_verdict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The one verdict on a GPU absent from a pool's zone (catalog.gpu_zones.absent_gpu_zones), in a program's own
    Args: exit 3, the key, the value and the zones that offer it, as a stack file gets it."""
    from gpu_platform.components.catalog.gpu_zones import absent_gpu_zones

    program = _program(
        tmp_path,
        """
        from gpu_platform.components import AutoscalingBounds, BoundsScope, GpuGkeCluster, GpuGkeClusterArgs, GpuNodePoolArgs

        GpuGkeCluster("ml", GpuGkeClusterArgs(project="my-project", location="us-central1", node_locations=["us-central1-a", "us-central1-f"],
            gpu_pools=[GpuNodePoolArgs(name="l4", machine_type="g2-standard-8", accelerator_type="nvidia-l4",
                                       autoscaling=AutoscalingBounds(scope=BoundsScope.TOTAL, max_nodes=2))]))
        """,
    )
    assert main(["preview", "--program", str(program), "--no-render", "--quiet"]) == 3
    ((_, problem),) = absent_gpu_zones("nvidia-l4", ["us-central1-f"])
    assert capsys.readouterr().err.splitlines() == [
        f'gpu-platform: the program gave GpuGkeClusterArgs invalid input node_locations[1]: pool l4: {problem} (got "us-central1-f")'
    ]


def test_nested_collectors_each_keep_their_own_clusters() -> None:
    from gpu_platform.components.core.cluster import _MADE, clusters_made

    with clusters_made() as outer:
        with clusters_made() as inner:
            assert _MADE[-1] is inner
        assert _MADE == [outer] and _MADE[-1] is outer
    assert _MADE == []
