"""The one check pipeline of a preview: what the plan declares and what its releases and directories
render, checked against the Kubernetes and CRD schemas, the policy pack and the cluster checks; the
findings as the plan JSON carries them and as the command prints them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpu_platform.infra.preview.engine import Plan
from gpu_platform.infra.preview.manifests import KubernetesObject, plain, rendered_json, validate_objects
from gpu_platform.policies.evaluate import evaluate
from gpu_platform.policies.rules import Enforcement, Resource

__all__ = ["Checks", "check_plan"]

NO_RENDER = "rendering: skipped (--no-render): the objects of Helm releases and Kustomize directories were not checked"


@dataclass
class Checks:
    """Every finding of one preview."""

    kubernetes_version: str
    objects: list[KubernetesObject]
    """The plan's own Kubernetes objects."""
    findings: list[Any]
    """Schema findings: validated ones are violations, the rest notices (no schema offline)."""
    policy: list[Any]
    """Policy-pack findings over the plan's resources and what its releases render."""
    report: Any = None
    """The render report (None with --no-render)."""

    @property
    def violations(self) -> list[Any]:
        return [f for f in self.findings if f.validated]

    @property
    def notices(self) -> list[Any]:
        return [f for f in self.findings if not f.validated]

    @property
    def mandatory(self) -> list[Any]:
        return [f for f in self.policy if f.enforcement is Enforcement.MANDATORY]

    @property
    def cluster(self) -> list[Any]:
        return self.report.cluster if self.report is not None else []

    @property
    def render_errors(self) -> list[str]:
        return self.report.errors if self.report is not None else []

    @property
    def rendered(self) -> list[Any]:
        return self.report.rendering.objects if self.report is not None else []

    @property
    def failed(self) -> bool:
        """Whether anything mandatory failed: a schema, policy, cluster or render violation."""
        return bool(self.violations or self.mandatory or self.cluster or self.render_errors)

    def plan_document(self, plan: Plan) -> dict[str, Any]:
        """The `--json PLAN` document: the plan with every violation and notice."""
        report = self.report
        document = plan.to_json(
            violations=[
                {
                    "rule": "kubernetes-schema",
                    "enforcement": "mandatory",
                    "resource": v.resource,
                    "message": v.message,
                    "fix": "correct the object to its schema",
                }
                for v in self.violations
            ]
            + [f.to_json() for f in self.policy],
            notices=[{"resource": n.resource, "message": n.message} for n in self.notices]
            + [{"resource": None, "message": f"offline: {m}"} for m in plan.notices]
            + [{"resource": None, "message": f"warning: {m}"} for m in plan.warnings]
            + [{"resource": None, "message": m} for m in (report.notices if report is not None else [])],
        )
        if report is not None:
            document["violations"] += [
                {"rule": f.check, "enforcement": "mandatory", "resource": f.resource, "message": f.message, "fix": "see the message"} for f in report.cluster
            ] + [{"rule": "render", "enforcement": "mandatory", "resource": None, "message": line, "fix": "see the message"} for line in report.errors]
            document["rendered"] = rendered_json(report.rendering)
        return document

    def lines(self, plan: Plan) -> list[str]:
        """The summary and one line per finding, as the command prints them."""
        report, rendered, notices = self.report, self.rendered, self.notices
        summary = (
            f"{len(plan.resources)} resources, {len(self.objects)} Kubernetes objects"
            + (f" and {len(rendered)} rendered from releases and directories" if report is not None else "")
            + f" ({len(self.objects) + len(rendered) - len(notices)} validated against Kubernetes {self.kubernetes_version} "
            f"and CRD schemas, {len(notices)} without a schema offline), {len(self.violations)} schema violations; "
            f"policy pack: {len(self.mandatory)} mandatory and {len(self.policy) - len(self.mandatory)} advisory violations"
            + (f"; {len(self.cluster)} cluster check violations, {len(self.render_errors)} render errors" if report is not None else "")
        )
        lines = [summary]
        if report is None:
            lines.append(f"notice: {NO_RENDER}")
        else:
            done = [s for s in report.rendering.sources if s.rendered]
            lines.append(
                f"rendered: {len(done)} of {len(report.rendering.sources)} releases and directories, "
                f"{len(report.rendering.objects)} objects, {len(report.rendering.crds)} CRDs"
            )
            lines += [f"notice: {line}" for line in report.notices]
        lines += [f"notice: {n.message}" for n in notices]
        lines += [f"notice: offline: {m}" for m in plan.notices]
        lines += [f"warning: {m}" for m in plan.warnings]
        lines += [f"violation: schema: {v.message}" for v in self.violations]
        for finding in self.policy:
            label = "violation" if finding.enforcement is Enforcement.MANDATORY else "advisory"
            where = f"{finding.resource}: " if finding.resource else ""
            lines.append(f"{label}: policy {finding.rule}: {where}{finding.message}; fix: {finding.fix}")
        lines += [f"violation: {f.check}: {f.message}" for f in self.cluster]
        lines += [f"violation: render: {line}" for line in self.render_errors]
        return lines


def check_plan(plan: Plan, stack_config: Any, policy_config: Any, sources: Any | None) -> Checks:
    """Check the plan (and, with ``sources``, what its releases and directories render) once."""
    from gpu_platform.infra.preview.manifests import kubernetes_objects

    objects = kubernetes_objects(plan)
    # The policy engine shows rules the resources' inputs with secrets unwrapped.
    policy = evaluate([Resource(r.type, r.name, r.urn, plain(r.inputs), r.protect) for r in plan.resources], policy_config)
    if sources is None:
        return Checks(stack_config.kubernetes_version, objects, validate_objects(objects, stack_config.kubernetes_version), policy)
    from gpu_platform.infra.preview.render import check_rendered

    report = check_rendered(plan, objects, stack_config, sources, sources.lock, policy_config)
    return Checks(stack_config.kubernetes_version, objects, report.schema, policy + report.policy, report)
