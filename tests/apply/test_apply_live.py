"""`--apply KUBECONFIG` on a cluster where objects live on (issue 36 item 4): apply, change, apply again.

A tenant removed from the program is listed as having left the plan, and deleted only with `--prune`
(each delete dry-run first); a renamed bucket in a PersistentVolume (an immutable field) is a replacement,
as the engine does it, not a refusal; the same objects applied under another stack name take over their
own fields without a field-manager conflict. On the session's control plane, standing in for a user's
cluster.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from gpu_platform.infra.apply.apply import Server, _field_manager

PROGRAM = """
    import pulumi, pulumi_kubernetes as k8s
    tenants = {tenants}
    for tenant in tenants:
        ns = k8s.core.v1.Namespace(f"{{tenant}}-ns", metadata={{"name": tenant}})
        k8s.core.v1.ConfigMap(f"{{tenant}}-settings", metadata={{"name": "settings", "namespace": ns.metadata.name}}, data={{"owner": "{owner}"}})
    k8s.core.v1.PersistentVolume("datasets", metadata={{"name": "live-datasets"}}, spec={{
        "capacity": {{"storage": "10Gi"}}, "accessModes": ["ReadOnlyMany"], "persistentVolumeReclaimPolicy": "Retain",
        "csi": {{"driver": "gcsfuse.csi.storage.gke.io", "volumeHandle": "{bucket}"}}}})
"""


def _program(folder: Path, tenants: list[str], bucket: str, owner: str = "research") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "Pulumi.yaml").write_text("name: mine\nruntime: python\n")
    (folder / "__main__.py").write_text(textwrap.dedent(PROGRAM.format(tenants=tenants, bucket=bucket, owner=owner)))
    return folder


def _apply(capsys: pytest.CaptureFixture[str], kubeconfig: Path, program: Path, stack: str, *extra: str) -> tuple[int, list[str]]:
    from gpu_platform.infra.cli import main

    code = main(["preview", stack, "--program", str(program), "--quiet", "--apply", str(kubeconfig), *extra])
    out = capsys.readouterr().out
    wanted = ("applied:", "replaced:", "notice: left the plan:", "pruned:", "violation:")
    return code, [line for line in out.splitlines() if line.startswith(wanted)]


def test_the_field_manager_is_the_providers_shape_and_the_same_under_every_stack_name() -> None:
    dev = _field_manager("urn:pulumi:dev::mine::kubernetes:core/v1:ConfigMap::settings")
    assert dev == _field_manager("urn:pulumi:prod::mine::kubernetes:core/v1:ConfigMap::settings")
    assert dev != _field_manager("urn:pulumi:dev::mine::kubernetes:core/v1:ConfigMap::other")
    assert dev.startswith("pulumi-kubernetes-") and len(dev) == len("pulumi-kubernetes-") + 8


def test_apply_change_apply_again_lists_prunes_and_replaces_as_the_engine_would(control_plane: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kubeconfig = control_plane.kubeconfig
    server = Server(control_plane.api_client())
    code, lines = _apply(capsys, kubeconfig, _program(tmp_path / "v1", ["live-a", "live-b"], "bucket-one"), "live")
    assert code == 0 and not [line for line in lines if not line.startswith("applied:")], lines

    # Tenant live-b removed, the bucket renamed: live-b is listed (not deleted), the volume replaced.
    v2 = _program(tmp_path / "v2", ["live-a"], "bucket-two")
    code, lines = _apply(capsys, kubeconfig, v2, "live")
    assert code == 0, lines
    assert lines[1:] == [
        'replaced: PersistentVolume live-datasets (resource datasets): PersistentVolume "live-datasets" is invalid: spec.persistentvolumesource: '
        "Forbidden: spec.persistentvolumesource is immutable after creation (an immutable field changed: deleted and created again, as pulumi up replaces it)",
        "notice: left the plan: ConfigMap live-b/settings: applied by an earlier --apply of stack live, no longer in its plan (--prune removes it)",
        "notice: left the plan: Namespace live-b: applied by an earlier --apply of stack live, no longer in its plan (--prune removes it)",
    ], lines
    volume = server.request("GET", "/api/v1/persistentvolumes/live-datasets")[1]
    assert volume["spec"]["csi"]["volumeHandle"] == "bucket-two"
    assert server.request("GET", "/api/v1/namespaces/live-b/configmaps/settings")[0] == 200

    # With --prune: dry run first, then deleted (the namespace last).
    code, lines = _apply(capsys, kubeconfig, v2, "live", "--prune")
    assert code == 0, lines
    assert lines[1:] == [
        "notice: left the plan: ConfigMap live-b/settings: applied by an earlier --apply of stack live, no longer in its plan",
        "notice: left the plan: Namespace live-b: applied by an earlier --apply of stack live, no longer in its plan",
        "pruned: ConfigMap live-b/settings: the server would delete it",
        "pruned: Namespace live-b: the server would delete it",
        "pruned: ConfigMap live-b/settings: deleted",
        "pruned: Namespace live-b: deleted",
    ], lines
    namespace = server.request("GET", "/api/v1/namespaces/live-b")
    assert namespace[0] == 404 or namespace[1]["metadata"].get("deletionTimestamp"), namespace
    code, lines = _apply(capsys, kubeconfig, v2, "live")
    assert code == 0 and lines[1:] == [], lines  # nothing left to list

    # The same objects under another stack name, one value changed: the same field managers, no conflict.
    code, lines = _apply(capsys, kubeconfig, _program(tmp_path / "v3", ["live-a"], "bucket-two", owner="platform"), "live-other")
    assert code == 0 and lines[1:] == [], lines
    assert server.request("GET", "/api/v1/namespaces/live-a/configmaps/settings")[1]["data"] == {"owner": "platform"}
