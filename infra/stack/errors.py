"""What is wrong with a stack, as one line per problem: the errors the reader and the model raise,
and pydantic's validation errors turned into ``gpu-platform:<key path>: <what is wrong> (got <value>)``."""

from __future__ import annotations

import difflib
import json
import math
import re
import types
import typing
from typing import Any

import pulumi
from pydantic import BaseModel, SecretStr, ValidationError
from pydantic_core import ErrorDetails

from gpu_platform.components.core.models import key_path
from gpu_platform.infra.errors import capped

__all__ = ["ConfigError", "PreviewError", "SECRET_PLACEHOLDER", "credential_like", "format_validation_error", "model_at", "secret_like"]


class ConfigError(pulumi.RunError):
    """Stack config that cannot be deployed; ``lines`` holds one line per problem.

    A RunError, so `pulumi up` prints the message without a traceback.
    """

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        super().__init__("invalid stack config:\n" + "\n".join(capped(lines)))


_SECRET_WORDS = re.compile(
    r"(token|passw(or)?d|pwd|passphrase|secret|credential|private|api_?key|access_?key|(^|[_.-])keys?$|cookie)",
    re.IGNORECASE,
)
"""What a key's name holds when its value may be a secret: token, password, secret, credential, key..."""


def secret_like(name: Any) -> bool:
    """Whether a key's name says its value may be a secret (``api_token``, ``db_password``, ``access_key``)."""
    return isinstance(name, str) and bool(_SECRET_WORDS.search(name))


_CREDENTIAL_SHAPES = re.compile(
    r"(AKIA|ASIA)[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_|glpat-|xox[abprs]-|sk-[A-Za-z0-9_-]{20,}|AIza[0-9A-Za-z_-]{30,}"
    r"|-----BEGIN|eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"
)
"""Well-known credential formats: AWS access key ids, GitHub, GitLab, Slack, OpenAI-style and Google API keys, PEM, JWT."""


_UPPER, _LOWER, _DIGIT = re.compile("[A-Z]"), re.compile("[a-z]"), re.compile("[0-9]")
"""What a run of credential characters must mix (searched in C: a 5 MB value is read at once, not a character at a time)."""


def credential_like(text: str) -> bool:
    """Whether ``text`` looks like a credential whatever key holds it: a well-known format, or a run of 32 or
    more letters, digits and ``+/=_-`` mixing upper case, lower case and digits (an access key's secret)."""
    if _CREDENTIAL_SHAPES.search(text):
        return True
    return any(_UPPER.search(run) and _LOWER.search(run) and _DIGIT.search(run) for run in re.findall(r"[A-Za-z0-9+/=_-]{32,}", text))


HIDDEN = "<hidden>"
"""What an error shows in place of a value under a key whose name looks secret, inside a shown mapping."""


def _unclassified(key: Any, model: type[BaseModel] | None) -> bool:
    """Whether ``key`` of a mapping read as ``model`` is one the model does not classify (a map entry, an
    unknown key) and its name looks secret: a model's own field is secret only when it is a SecretStr."""
    return secret_like(key) and (model is None or key not in model.model_fields)


def _field_model(model: type[BaseModel] | None, key: Any) -> type[BaseModel] | None:
    field = model.model_fields.get(key) if model is not None and isinstance(key, str) else None
    models = _unwrap(field.annotation) if field is not None else []
    return models[0] if models else None


def _redacted(value: Any, model: type[BaseModel] | None = None) -> Any:
    """``value`` with the values under unclassified secret-looking keys replaced, at any depth (a mapping
    shown in an error may hold a token under a key the user added)."""
    if isinstance(value, dict):
        return {k: HIDDEN if _unclassified(k, model) else _redacted(v, _field_model(model, k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_redacted(v, model) for v in value]
    return value


def _show(value: Any, model: type[BaseModel] | None = None) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return ".nan" if math.isnan(value) else (".inf" if value > 0 else "-.inf")
    try:
        text = json.dumps(_redacted(value, model), default=str)
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


def model_at(root: type[BaseModel], loc: tuple[Any, ...]) -> type[BaseModel] | None:
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
UNKNOWN_SHOWN = "a value, not shown: an unknown key may hold a secret"
"""What an error shows in place of an unknown key's value (it cannot be classified, so it is masked)."""


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


def _secret_texts(value: Any, model: type[BaseModel] | None = None) -> list[str]:
    """The texts under unclassified secret-looking keys inside ``value``, to cut out of a validator's message that quotes them."""
    if isinstance(value, dict):
        return [t for k, v in value.items() for t in (_texts(v) if _unclassified(k, model) else _secret_texts(v, _field_model(model, k)))]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _secret_texts(v, model)]
    return []


def _message(error: ErrorDetails, root: type[BaseModel], secret: bool = False) -> str:
    kind = error["type"]
    msg: str = error["msg"]
    loc = tuple(p for p in error["loc"] if not (isinstance(p, str) and ("[" in p or p.startswith("function-"))))
    value = error.get("input")
    if not secret and any(credential_like(t) for t in _texts(value)):
        secret = True  # a token pasted under a plain key: shown nowhere
    here = model_at(root, loc)
    shown = SECRET_SHOWN if secret else _show(value, here)
    if kind == "extra_forbidden" and not secret:
        secret, shown = True, UNKNOWN_SHOWN
    if secret:
        # A validator's own message may quote the value: cut out every text the value holds.
        for text in _texts(error.get("input")):
            msg = msg.replace(text, "<secret>")
    for text in sorted(set(_secret_texts(value, here)), key=len, reverse=True):
        msg = msg.replace(text, HIDDEN)
    if kind == "string_type" and isinstance(error.get("input"), float):
        number = error["input"]
        return f'text expected, but YAML read an unquoted number ({number}; 1.30 becomes 1.3): quote it as you mean it, e.g. "{number}" (got {shown})'
    if kind == "missing":
        return "required (got nothing)"
    if isinstance(value, float) and not math.isfinite(value) and not secret:
        return f"must be a finite number; .inf, -.inf and .nan are not values a setting can hold (got {shown})"
    if kind == "extra_forbidden":
        parent = model_at(root, loc[:-1])
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
    secret), of a SecretStr field, holding a secure placeholder, under a key whose name looks
    secret (``secret_like``: token, password, key...) or under an unknown key (it cannot be
    classified) is never shown; inside a mapping that is shown, the values under secret-looking
    keys are masked, and so is a value that looks like a credential (``credential_like``). ``renames``
    maps a key the program derived to the key the user wrote.
    """

    lines: list[str] = []
    seen: set[str] = set()
    for error in exc.errors():
        # Drop pydantic's union/tagged-union markers so the path is the user's key path.
        loc = tuple(p for p in error["loc"] if not (isinstance(p, str) and ("[" in p or p.startswith("function-"))))
        for derived, written in (renames or {}).items():
            if loc[: len(derived)] == derived:
                loc = written
                break
        hidden = (
            (bool(loc) and str(loc[0]) in secret)
            or SECRET_PLACEHOLDER in json.dumps(error.get("input"), default=str)
            or _is_secret_field(root, loc)
            or any(_unclassified(part, model_at(root, loc[:i])) for i, part in enumerate(loc))
        )
        path = key_path(loc)
        prefix = f"{namespace}:{path}" if namespace else path
        line = f"{prefix}: {_message(error, root, hidden)}"
        if line not in seen:  # a set: 20,000 problems are checked once each, not against every line before them
            seen.add(line)
            lines.append(line)
    return lines


def _is_secret_field(root: type[BaseModel], loc: tuple[Any, ...]) -> bool:
    """Whether ``loc`` is (inside) a SecretStr field of ``root``."""
    for end in range(1, len(loc) + 1):
        parent = model_at(root, loc[: end - 1])
        field = parent.model_fields.get(loc[end - 1]) if parent and isinstance(loc[end - 1], str) else None
        if field is not None and (field.annotation is SecretStr or SecretStr in typing.get_args(field.annotation)):
            return True
    return False


class PreviewError(Exception):
    """A problem that stops the preview before the program runs; one line per problem."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        super().__init__("\n".join(capped(lines)))


SECRET_PLACEHOLDER = "offline-placeholder-"
"""How every secure value starts once the offline reader has replaced it."""
