"""Option values of the plain types, converted without pydantic.

Typer 0.29 converts every parameter through a pydantic ``TypeAdapter``: importing pydantic and
building the adapters cost about 80 ms of CPU per command, more than a ``list`` needs for all
its own work. Our options are plain ``str``, ``int``, ``float``, ``bool`` and lists of ``str``, whose
well-formed values convert the same in one line of Python, and an absent path needs no
conversion at all. Anything else (a malformed number,
a path, a type added later) goes to Typer's own conversion, so results and error messages
stay Typer's. Typer keeps the converter of a parameter in ``_runtime_param`` and builds it on
first use; we fill that slot as a command hands out its parameters, and leave it to Typer
when the slot is gone.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

_INT = re.compile(r"-?[0-9]{1,18}")
_FLOAT = re.compile(r"-?[0-9]{1,15}(\.[0-9]{1,15})?")
_SLOT = "_runtime_param"


class _Plain:
    """Converts well-formed values of one plain type; hands the rest to Typer's converter."""

    def __init__(self, kind: Any, multiple: bool) -> None:
        self.kind = kind
        self.multiple = multiple
        self._typer: Any = None

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        if value is None:
            return () if self.multiple else None
        fast = self._convert(value)
        if fast is not None:
            return fast
        return self._fallback(param).coerce(value, param=param, ctx=ctx)

    def _convert(self, value: Any) -> Any:
        if self.kind is str:
            if self.multiple:
                ok = isinstance(value, (list, tuple)) and all(type(v) is str for v in value)
                return list(value) if ok else None
            return value if type(value) is str else None
        if self.kind is bool:
            return value if type(value) is bool else None
        if self.kind is int:
            if type(value) is int:
                return value
            return int(value) if type(value) is str and _INT.fullmatch(value) else None
        if self.kind is float:
            if type(value) in (int, float):
                return float(value)
            return float(value) if type(value) is str and _FLOAT.fullmatch(value) else None
        return None  # a path: Typer checks it, only an absent one is answered here

    def _fallback(self, param: Any) -> Any:
        if self._typer is None:
            from typer._coercion import build_runtime_param

            self._typer = build_runtime_param(param.type_descriptor)
        return self._typer


def _plain_kind(param: Any) -> tuple[Any, bool] | None:
    """``(type, multiple)`` for a parameter this module converts, else ``None``."""
    descriptor = getattr(param, "type_descriptor", None)
    info = getattr(descriptor, "parameter_info", None)
    if descriptor is None or info is None or descriptor.file_annotation is not None:
        return None
    if info.parser is not None or getattr(info, "click_type", None) is not None:
        return None
    if info.min is not None or info.max is not None or descriptor.choices is not None:
        return None
    annotation = descriptor.annotation
    multiple = bool(param.multiple or param.nargs == -1)
    if annotation == list[str] and multiple:
        return str, True
    if annotation in (str, int, float, bool, Path) and not multiple:
        return annotation, False
    return None


def install(command: Any) -> None:
    """Give every plain parameter of ``command`` and its subcommands the light converter,
    including the ``--help`` option that each command makes when it first parses."""
    original = command.get_params

    def get_params(ctx: Any) -> Any:
        params = original(ctx)
        for param in params:
            kind = _plain_kind(param)
            if kind is not None and getattr(param, _SLOT, "missing") is None:
                setattr(param, _SLOT, _Plain(*kind))
        return params

    command.get_params = get_params
    for sub in getattr(command, "commands", {}).values():
        install(sub)
