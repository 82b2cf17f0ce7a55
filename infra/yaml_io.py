"""YAML as every command reads and writes it: libyaml's safe loader and dumper where PyYAML was built with it
(the charts' CRDs, the upstream lock, the 4 MB price list and the written manifests read and write several
times faster through it), PyYAML's own pure-Python ones otherwise. Either way the same safe types: no tag
makes an arbitrary Python object, and the same documents come out."""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["SAFE_DUMPER", "SAFE_LOADER"]

SAFE_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""The safe loader: libyaml's (``yaml.CSafeLoader``) where PyYAML has it, else ``yaml.SafeLoader``."""

SAFE_DUMPER: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
"""The safe dumper: libyaml's (``yaml.CSafeDumper``) where PyYAML has it, else ``yaml.SafeDumper``."""
