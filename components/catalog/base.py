"""What the GCP and AWS catalogs share: the MiB-per-GiB unit and the error a shape lookup raises.

Shape lookups (gpu_catalog for GCP, aws_catalog for AWS) raise GpuCombinationError naming the
key at fault; ``shape_checked`` turns it into the ValidationError of the model that asked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from gpu_platform.components.core.models import dotted_value, field_error

__all__ = ["GIB", "GpuCombinationError", "shape_checked"]

GIB = 1024  # MiB per GiB


class GpuCombinationError(ValueError):
    """A machine type / accelerator / count combination Compute Engine does not offer."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


_T = TypeVar("_T")


def shape_checked(instance: Any, check: Callable[[], _T]) -> _T:
    """``check()`` (a shape lookup of gpu_catalog or aws_catalog) from a model validator of ``instance``: a
    GpuCombinationError becomes the ValidationError that names its key (``shape.gpus``) and value."""
    try:
        return check()
    except GpuCombinationError as exc:
        raise field_error(type(instance).__name__, exc.field, exc.message, dotted_value(instance, exc.field)) from None
