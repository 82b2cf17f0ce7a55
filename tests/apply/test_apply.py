"""A real Kubernetes 1.34 API server refuses what no offline check sees (issue 26): one case per
class, each refused by the server in one line, on the session's control plane (built from the
upstream modules), each in a namespace of its own. Every shipped stack applied to such a server:
tests/apply/test_apply_stacks.py.
"""

from __future__ import annotations

from typing import Any

from gpu_platform.infra.apply.apply import ApplyObject, Server, apply_objects

# --- one refusal per class, from the server -------------------------------------------------------


def _namespace(server: Server, name: str, labels: dict[str, str] | None = None) -> None:
    result = apply_objects(server, [ApplyObject({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels or {}}}, "test")])
    assert not result.refusals, result.refusals[0].line


def _crd(group: str, validations: list[dict[str, str]] | None = None) -> dict[str, Any]:
    spec_schema: dict[str, Any] = {"type": "object", "properties": {"min": {"type": "integer"}, "max": {"type": "integer"}}}
    if validations:
        spec_schema["x-kubernetes-validations"] = validations
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"ranges.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "ranges", "singular": "range", "kind": "Range", "listKind": "RangeList"},
            "versions": [
                {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec_schema}}}}
            ],
        },
    }


def test_a_broken_cel_rule_is_refused(control_plane: Any) -> None:
    server = Server(control_plane.api_client())
    _namespace(server, "case-cel")
    crd = _crd("cel.test.gpu-platform.io", [{"rule": "self.min <= self.max", "message": "min must not exceed max"}])
    good = {"apiVersion": "cel.test.gpu-platform.io/v1", "kind": "Range", "metadata": {"name": "good", "namespace": "case-cel"}, "spec": {"min": 1, "max": 2}}
    bad = {**good, "metadata": {"name": "bad", "namespace": "case-cel"}, "spec": {"min": 3, "max": 2}}
    result = apply_objects(server, [ApplyObject(crd, "test"), ApplyObject(good, "test"), ApplyObject(bad, "test")])
    assert [r.line for r in result.refusals] == [
        'Range case-cel/bad (test): Range.cel.test.gpu-platform.io "bad" is invalid: spec: Invalid value: "object": min must not exceed max'
    ]


def test_a_custom_resource_before_its_crd_is_refused(control_plane: Any) -> None:
    server = Server(control_plane.api_client())
    _namespace(server, "case-order")
    crd = _crd("order.test.gpu-platform.io")
    cr = {
        "apiVersion": "order.test.gpu-platform.io/v1",
        "kind": "Range",
        "metadata": {"name": "early", "namespace": "case-order"},
        "spec": {"min": 1, "max": 2},
    }
    result = apply_objects(server, [ApplyObject(cr, "test"), ApplyObject(crd, "test")])  # the order given: off
    assert [r.line for r in result.refusals] == [
        'Range case-order/early (test): no matches for kind "Range" in version "order.test.gpu-platform.io/v1" '
        "(the server does not serve it: its CRD is not installed or not established)"
    ]
    # In the engine's order (CRDs first, waited for) the same two objects apply.
    from gpu_platform.infra.apply.apply import engine_order

    again = apply_objects(server, engine_order(None, [ApplyObject(cr, "test"), ApplyObject(crd, "test")]))
    assert not again.refusals, again.refusals[0].line


def test_an_immutable_field_changed_on_reapply_is_refused(control_plane: Any) -> None:
    server = Server(control_plane.api_client())
    _namespace(server, "case-immutable")

    def deployment(app: str) -> ApplyObject:
        return ApplyObject(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "web", "namespace": "case-immutable"},
                "spec": {
                    "selector": {"matchLabels": {"app": app}},
                    "template": {"metadata": {"labels": {"app": app}}, "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}},
                },
            },
            "test",
            field_manager="pulumi-kubernetes-test",
        )

    assert not apply_objects(server, [deployment("web")]).refusals
    result = apply_objects(server, [deployment("web-v2")])
    assert [r.line for r in result.refusals] == [
        'Deployment case-immutable/web (test): Deployment.apps "web" is invalid: spec.selector: Invalid value: '
        '{"matchLabels":{"app":"web-v2"}}: field is immutable'
    ]


def test_a_privileged_pod_in_a_restricted_namespace_is_refused(control_plane: Any) -> None:
    server = Server(control_plane.api_client())
    _namespace(server, "case-restricted", {"pod-security.kubernetes.io/enforce": "restricted"})
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "root", "namespace": "case-restricted"},
        "spec": {"containers": [{"name": "c", "image": "busybox:1.36", "securityContext": {"privileged": True}}]},
    }
    result = apply_objects(server, [ApplyObject(pod, "test")])
    assert len(result.refusals) == 1
    line = result.refusals[0].line
    assert line.startswith('Pod case-restricted/root (test): pods "root" is forbidden: violates PodSecurity "restricted:latest": privileged')
    assert "\n" not in line


def test_a_pod_without_requests_under_a_quota_is_refused(control_plane: Any) -> None:
    server = Server(control_plane.api_client())
    _namespace(server, "case-quota")
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "gpus", "namespace": "case-quota"},
        "spec": {"hard": {"requests.cpu": "4", "requests.memory": "8Gi"}},
    }
    assert not apply_objects(server, [ApplyObject(quota, "test")]).refusals
    # The quota admits nothing until the quota controller has recorded its status (a real cluster's
    # quota has it long before a workload arrives): wait for it, bounded.
    import time

    deadline = time.monotonic() + 30
    while not (server.request("GET", "/api/v1/namespaces/case-quota/resourcequotas/gpus")[1].get("status") or {}).get("hard"):
        assert time.monotonic() < deadline, "the quota controller did not record the quota's status in 30 s"
        time.sleep(0.2)
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "greedy", "namespace": "case-quota"},
        "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]},
    }
    result = apply_objects(server, [ApplyObject(pod, "test")])
    assert [r.line for r in result.refusals] == [
        'Pod case-quota/greedy (test): pods "greedy" is forbidden: failed quota: gpus: must specify requests.cpu for: c; requests.memory for: c'
    ]


def test_an_object_whose_resource_does_not_wait_for_its_namespace_is_refused(control_plane: Any) -> None:
    """The engine's order (issue 36 item 3): a ConfigMap whose resource forgot to depend on the Namespace's
    is sent before it, as the engine may start both at once, and the server refuses it in one line; the one
    that waits applies."""
    from gpu_platform.infra.apply.apply import engine_order
    from gpu_platform.infra.preview.engine import Plan, RecordedResource

    def resource(name: str, type_: str, depends_on: list[str] | None = None) -> RecordedResource:
        return RecordedResource(
            urn=f"urn:pulumi:t::p::{type_}::{name}", type=type_, name=name, parent=None, custom=True, inputs={}, depends_on=depends_on or []
        )

    namespace = resource("ns", "kubernetes:core/v1:Namespace")
    waits = resource("waits", "kubernetes:core/v1:ConfigMap", [namespace.urn])
    forgot = resource("forgot", "kubernetes:core/v1:ConfigMap")
    plan = Plan("t", [namespace, waits, forgot], {})

    def config_map(r: RecordedResource) -> ApplyObject:
        return ApplyObject({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": r.name, "namespace": "case-nsorder"}}, f"resource {r.name}", r.urn)

    ns = ApplyObject({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "case-nsorder"}}, "resource ns", namespace.urn)
    result = apply_objects(Server(control_plane.api_client()), engine_order(plan, [ns, config_map(waits), config_map(forgot)]))
    assert [r.line for r in result.refusals] == ['ConfigMap case-nsorder/forgot (resource forgot): namespaces "case-nsorder" not found']
    assert [o.label for o in result.applied] == ["Namespace case-nsorder", "ConfigMap case-nsorder/waits"]


def test_preview_apply_refuses_a_config_map_that_forgot_its_namespace_in_one_line(control_plane: Any, tmp_path: Any, capsys: Any) -> None:
    """The same through `preview --program DIR --apply KUBECONFIG`: the namespace named as a literal, not
    as the Namespace's output, so the engine does not wait for it; exit 1."""
    import textwrap

    from gpu_platform.infra.cli import main

    (tmp_path / "Pulumi.yaml").write_text("name: mine\nruntime: python\n")
    (tmp_path / "__main__.py").write_text(
        textwrap.dedent(
            """
            import pulumi_kubernetes as k8s
            ns = k8s.core.v1.Namespace("ns", metadata={"name": "case-forgot"})
            k8s.core.v1.ConfigMap("settings", metadata={"name": "settings", "namespace": "case-forgot"}, data={"a": "b"})
            k8s.core.v1.ConfigMap("waits", metadata={"name": "waits", "namespace": ns.metadata.name}, data={"a": "b"})
            """
        )
    )
    code = main(["preview", "--program", str(tmp_path), "--quiet", "--apply", str(control_plane.kubeconfig)])
    out = capsys.readouterr().out
    assert [line for line in out.splitlines() if line.startswith("violation: ")] == [
        'violation: apply: ConfigMap case-forgot/settings (resource settings): namespaces "case-forgot" not found'
    ], out
    assert code == 1
