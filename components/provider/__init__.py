"""The components for every Pulumi language: the source-based component package (``provider``)."""

from gpu_platform.components._moved import forwarding

# gpu_platform.components.provider was the module now at provider.provider: its names, with a warning, for one release.
__getattr__ = forwarding("provider")
