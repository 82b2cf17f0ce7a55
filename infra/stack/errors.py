"""What is wrong with a stack, as one line per problem: the errors the reader and the model raise,
and pydantic's validation errors turned into ``gpu-platform:<key path>: <what is wrong> (got <value>)``."""

from __future__ import annotations

import difflib
import json
import types
import typing
from typing import Any

import pulumi
from pydantic import BaseModel, SecretStr, ValidationError
from pydantic_core import ErrorDetails

from gpu_platform.components.core.models import key_path

__all__ = ["ConfigError", "PreviewError", "SECRET_PLACEHOLDER", "format_validation_error"]


class ConfigError(pulumi.RunError):
    """Stack config that cannot be deployed; ``lines`` holds one line per problem.

    A RunError, so `pulumi up` prints the message without a traceback.
    """

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        super().__init__("invalid stack config:\n" + "\n".join(lines))


def _show(value: Any) -> str:
    try:
        text = json.dumps(value, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _unwrap(annotation: Any) -> list[Any]:
    """The model classes an annotation may hold (through Optional, list, dict)."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return [m for arg in typing.get_args(annotation) for m in _unwrap(arg)]
    if origin is typing.Annotated:
        return _unwrap(typing.get_args(annotation)[0])
    if origin in (list, tuple, set, frozenset):
        return [m for arg in typing.get_args(annotation) for m in _unwrap(arg)]
    if origin is dict:
        return _unwrap(typing.get_args(annotation)[1])
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return []


def _model_at(root: type[BaseModel], loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The model class whose fields live at ``loc`` (list indexes skipped)."""
    current: type[BaseModel] | None = root
    for part in loc:
        if isinstance(part, int) or current is None:
            continue
        field = current.model_fields.get(part)
        if field is None:
            return None
        models = _unwrap(field.annotation)
        current = models[0] if models else None
    return current


SECRET_SHOWN = "a secret value"
"""What an error shows in place of a secret's value."""


def _texts(value: Any) -> list[str]:
    """Every text (and number) inside a value, longest first, to cut out of a message."""
    if isinstance(value, dict):
        found = [t for k, v in value.items() for t in (*_texts(k), *_texts(v))]
    elif isinstance(value, (list, tuple)):
        found = [t for v in value for t in _texts(v)]
    elif isinstance(value, SecretStr):
        found = [value.get_secret_value()]
    elif value is None or isinstance(value, bool):
        found = []
    else:
        found = [str(value)]
    return sorted({t for t in found if len(t) >= 3}, key=len, reverse=True)


def _message(error: ErrorDetails, root: type[BaseModel], secret: bool = False) -> str:
    kind = error["type"]
    msg: str = error["msg"]
    loc = tuple(p for p in error["loc"] if not (isinstance(p, str) and ("[" in p or p.startswith("function-"))))
    shown = SECRET_SHOWN if secret else _show(error.get("input"))
    if secret:
        # A validator's own message may quote the value: cut out every text the value holds.
        for text in _texts(error.get("input")):
            msg = msg.replace(text, "<secret>")
    if kind == "string_type" and isinstance(error.get("input"), float):
        number = error["input"]
        return f'text expected, but YAML read an unquoted number ({number}; 1.30 becomes 1.3): quote it as you mean it, e.g. "{number}" (got {shown})'
    if kind == "missing":
        return "required (got nothing)"
    if kind == "extra_forbidden":
        parent = _model_at(root, loc[:-1])
        allowed = sorted(parent.model_fields) if parent else []
        hint = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
        text = "unknown key"
        if hint:
            text += f"; did you mean {hint[0]}?"
        if allowed:
            text += f" allowed: {', '.join(allowed)}"
        return f"{text} (got {shown})"
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    if msg.startswith("Assertion failed, "):
        msg = msg[len("Assertion failed, ") :]
    return f"{msg} (got {shown})"


def format_validation_error(
    exc: ValidationError,
    root: type[BaseModel],
    namespace: str | None = None,
    *,
    secret: set[str] | frozenset[str] = frozenset(),
    renames: dict[tuple[str, ...], tuple[str, ...]] | None = None,
) -> list[str]:
    """One line per problem: ``<namespace>:<key path>: <what is wrong> (got <value>)``.

    The one error formatter: a value under a key in ``secret`` (top-level keys Pulumi marks
    secret), of a SecretStr field, or holding a secure placeholder is never shown. ``renames``
    maps a key the program derived to the key the user wrote.
    """

    lines = []
    for error in exc.errors():
        # Drop pydantic's union/tagged-union markers so the path is the user's key path.
        loc = tuple(p for p in error["loc"] if not (isinstance(p, str) and ("[" in p or p.startswith("function-"))))
        for derived, written in (renames or {}).items():
            if loc[: len(derived)] == derived:
                loc = written
                break
        hidden = (bool(loc) and str(loc[0]) in secret) or SECRET_PLACEHOLDER in json.dumps(error.get("input"), default=str) or _is_secret_field(root, loc)
        path = key_path(loc)
        prefix = f"{namespace}:{path}" if namespace else path
        line = f"{prefix}: {_message(error, root, hidden)}"
        if line not in lines:
            lines.append(line)
    return lines


def _is_secret_field(root: type[BaseModel], loc: tuple[Any, ...]) -> bool:
    """Whether ``loc`` is (inside) a SecretStr field of ``root``."""
    for end in range(1, len(loc) + 1):
        parent = _model_at(root, loc[: end - 1])
        field = parent.model_fields.get(loc[end - 1]) if parent and isinstance(loc[end - 1], str) else None
        if field is not None and (field.annotation is SecretStr or SecretStr in typing.get_args(field.annotation)):
            return True
    return False


class PreviewError(Exception):
    """A problem that stops the preview before the program runs; one line per problem."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


SECRET_PLACEHOLDER = "offline-placeholder-"
"""How every secure value starts once the offline reader has replaced it."""
