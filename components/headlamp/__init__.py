"""Headlamp, the cluster UI: its Args and the component."""

from gpu_platform.components._moved import forwarding

# gpu_platform.components.headlamp was the module now at headlamp.headlamp: its names, with a warning, for one release.
__getattr__ = forwarding("headlamp")
