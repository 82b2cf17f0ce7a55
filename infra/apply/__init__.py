"""Apply a stack to a real Kubernetes API server (``gpu-platform preview STACK --apply ...``).

- ``local``: the control plane built from the upstream Go modules (tests/kube/build.sh): etcd,
  kube-apiserver, kube-controller-manager, kube-scheduler and kwok, started on loopback ports
  for the command and always stopped (infra/apply/local.py);
- ``apply``: server-side apply of everything the stack puts on a cluster, in the order the
  engine creates it, each refusal one line (infra/apply/apply.py);
- ``nodes``: kwok nodes shaped like the stack's pools, so scheduling is real (infra/apply/nodes.py);
- ``workloads``: what the controllers did with the workloads: pods refused are violations
  (infra/apply/workloads.py);
- ``judge``: one stack on one target, applied and judged (infra/apply/judge.py).
"""

from __future__ import annotations

from gpu_platform.infra.apply.apply import ApplyResult, Refusal, apply_objects, stack_objects
from gpu_platform.infra.apply.judge import apply_stack
from gpu_platform.infra.apply.local import ControlPlane, ControlPlaneError, control_plane, find_binaries
from gpu_platform.infra.apply.nodes import pool_nodes

__all__ = [
    "ApplyResult",
    "ControlPlane",
    "ControlPlaneError",
    "Refusal",
    "apply_objects",
    "apply_stack",
    "control_plane",
    "find_binaries",
    "pool_nodes",
    "stack_objects",
]
