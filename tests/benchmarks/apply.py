"""Benchmark: the local control plane's start and each stack's apply (issue 26).

    python tests/benchmarks/apply.py [--starts 3] [--upstream ../shared/reference/upstream] [STACK ...]

Prints, for the built control plane (tests/kube/build.sh first):
- the start time (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok, until each
  is healthy) and the stop time, over --starts starts (median, min, max);
- per stack (default: every shipped stack and the Kubeflow platform-edition variant): the time to
  run and render it (not part of the apply), the objects applied, the apply time (kwok nodes,
  server-side apply in the engine's order, CRDs waited for), the time until the pods settled, and
  the refusals; each stack on a control plane of its own.
Targets (issue 26): start < 20 s once built, one stack's apply < 60 s, on 2 cores.

The render cache goes to a temporary folder (GPU_PLATFORM_CACHE) and nothing is fetched.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parents[2]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=3)
    parser.add_argument("--upstream", default=str(PROJECT_DIR.parent / "shared" / "reference" / "upstream"))
    parser.add_argument("stacks", nargs="*")
    args = parser.parse_args()
    os.environ["GPU_PLATFORM_OFFLINE"] = "1"
    os.environ["GPU_PLATFORM_CACHE"] = tempfile.mkdtemp(prefix="gpu-platform-bench-cache-")
    sys.path.insert(0, str(PROJECT_DIR))

    from gpu_platform.infra.apply.apply import ApplyResult, Server, apply_objects, create_nodes, settle, stack_objects
    from gpu_platform.infra.apply.local import control_plane, find_binaries
    from gpu_platform.infra.apply.nodes import pool_nodes

    binaries = find_binaries(build=True)
    starts, stops = [], []
    for _ in range(args.starts):
        t0 = time.perf_counter()
        with control_plane(binaries) as plane:
            t1 = time.perf_counter()
            version = plane.version
        stops.append(time.perf_counter() - t1)
        starts.append(t1 - t0)
    print(
        f"control plane {version}: start median {statistics.median(starts):.1f} s "
        f"(min {min(starts):.1f}, max {max(starts):.1f}, {len(starts)} starts); stop median {statistics.median(stops):.1f} s"
    )

    from gpu_platform.infra.preview.engine import run_program
    from gpu_platform.infra.preview.manifests import kubernetes_objects
    from gpu_platform.infra.preview.render import render_plan
    from gpu_platform.infra.preview.upstream import Sources, load_lock
    from gpu_platform.infra.stack.read import load_stack, read_stack_file

    stacks = args.stacks or [*sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in (PROJECT_DIR / "stacks").glob("Pulumi.*.yaml")), "prod-eks-platform"]
    lock = load_lock()
    for stack in stacks:
        t0 = time.perf_counter()
        root = PROJECT_DIR
        if stack == "prod-eks-platform":
            from tests.infra.test_render import platform_variant

            root = platform_variant(Path(tempfile.mkdtemp(prefix="gpu-platform-platform-")))
        values, secret_keys = read_stack_file(root, stack)
        plan = run_program(root, stack, values, secret_keys)
        config = load_stack(root, stack)
        rendering = render_plan(plan, config.kubernetes_version, Sources(lock, upstream_dir=Path(args.upstream)), lock)
        objects = stack_objects(plan, kubernetes_objects(plan), rendering)
        nodes = pool_nodes(config.pool_shapes())
        rendered = time.perf_counter() - t0
        with control_plane(binaries) as plane:
            server = Server(plane.api_client())
            result = ApplyResult()
            t1 = time.perf_counter()
            create_nodes(server, nodes, result)
            apply_objects(server, objects, result)
            t2 = time.perf_counter()
            pods = settle(server)
            t3 = time.perf_counter()
        scheduled = sum(1 for p in pods if p["spec"].get("nodeName"))
        print(
            f"{stack}: program+render {rendered:.1f} s; {len(objects)} objects + {len(nodes)} nodes applied in {t2 - t1:.1f} s "
            f"({len(result.refusals)} refused); pods settled {t3 - t2:.1f} s later ({scheduled} of {len(pods)} scheduled)"
        )
        for refusal in result.refusals:
            print(f"  refused: {refusal.line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
