"""The real PolicyPack: `python -m policies` serves the analyzer the Pulumi CLI talks to."""

from __future__ import annotations

import subprocess
import sys

import grpc
from google.protobuf import empty_pb2
from pulumi.runtime.proto import analyzer_pb2_grpc

from gpu_platform.policies.rules import RULES
from tests.conftest import PROJECT_DIR


def test_pack_serves_every_rule_with_its_config_schema() -> None:
    server = subprocess.Popen([sys.executable, "-m", "policies"], cwd=PROJECT_DIR, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline().strip())  # the plugin protocol: the port on the first line
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            grpc.channel_ready_future(channel).result(timeout=30)
            info = analyzer_pb2_grpc.AnalyzerStub(channel).GetAnalyzerInfo(empty_pb2.Empty(), timeout=30)
    finally:
        server.kill()
        server.wait(timeout=30)
    assert info.name == "gpu-platform"
    policies = {p.name: p for p in info.policies}
    assert list(policies) == [r.name for r in RULES]
    budget = policies["gpu-stack-budget"]
    assert "maxGpusPerStack" in budget.configSchema.properties
    assert all(p.enforcementLevel == 1 for p in info.policies)  # MANDATORY
