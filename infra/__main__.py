"""The gpu-platform Pulumi program: read the stack config once -> build the platform (infra/program.py).

`pulumi up` runs this file; so does the offline `gpu-platform preview <stack>`, under a
recording mock engine, unchanged. The preview takes ``config`` and ``platform`` from here.
"""

import pulumi

from gpu_platform.infra.program import build
from gpu_platform.infra.stack.read import load_stack_config

config = load_stack_config()  # raises ConfigError before any resource is registered
platform = build(pulumi.get_stack(), config)
