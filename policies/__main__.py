"""Builds the PolicyPack; `pulumi preview --policy-pack policies` runs it. Nothing else lives here."""

from pulumi_policy import EnforcementLevel, PolicyPack

from gpu_platform.policies.pack import build_policies

PolicyPack(name="gpu-platform", enforcement_level=EnforcementLevel.MANDATORY, policies=build_policies())
