"""The gpu-platform CrossGuard policy pack.

Rules (policies/rules) are pure functions over a resource's engine properties, so the
offline preview (policies.evaluate) and the tests run them without the policy engine;
policies/pack.py wraps them for CrossGuard and ``__main__`` only builds the PolicyPack.
"""
