"""The gpu-platform CrossGuard policy pack.

Rule modules are pure functions over a resource's engine properties, so the offline
preview and the tests can call them without the policy engine; ``__main__`` only builds
the PolicyPack from them. The pack holds no rules yet: they arrive with the policy-pack
issue, one module per concern, each with a violating and a compliant test.
"""

POLICIES: list = []
"""Every ResourceValidationPolicy/StackValidationPolicy of the pack."""
