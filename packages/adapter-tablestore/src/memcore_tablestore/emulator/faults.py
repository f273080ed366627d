"""Fault injection for the emulator: latency, error answers, dropped connections, garbage."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import attrs
import cattrs

from memcore.errors import InvalidInput


def _rate(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not 0.0 <= value <= 1.0:
        raise InvalidInput(f"{attribute.name} must be from 0 to 1", field=attribute.name)


def _non_negative(_: object, attribute: attrs.Attribute[Any], value: float) -> None:
    if not math.isfinite(value) or value < 0:
        raise InvalidInput(f"{attribute.name} must be a non-negative number", field=attribute.name)


def _status(_: object, attribute: attrs.Attribute[int], value: int) -> None:
    if not 400 <= value <= 599:
        raise InvalidInput(
            f"{attribute.name} must be an HTTP error status (400-599)", field=attribute.name
        )


@attrs.frozen
class Faults:
    """What the emulator does wrong, on purpose. The default does nothing wrong.

    ``error_burst``/``drop_burst``: the next N affected requests fail, then the rates apply.
    ``drop_after_apply``: a dropped request is carried out first and only its answer is lost
    (the case that makes replaying a write dangerous).
    ``chaos``: answers ``chaos_rate`` of requests with garbage (non-object, truncated, huge,
    mistyped or undecodable JSON). ``init_seconds``: a newly created store answers 409 on
    memory operations (and reports status ``initializing``) for that long. ``apis``: limit the
    request faults to these API names (empty means all). ``dns_delay_s`` is handed to the
    control-plane twin (a new instance's data host resolves only after that long).
    """

    latency_ms: float = attrs.field(default=0.0, converter=float, validator=_non_negative)
    error_rate: float = attrs.field(default=0.0, converter=float, validator=_rate)
    error_status: int = attrs.field(default=503, validator=_status)
    error_code: str = "OTSServerBusy"
    error_burst: int = attrs.field(default=0, validator=_non_negative)
    drop_rate: float = attrs.field(default=0.0, converter=float, validator=_rate)
    drop_burst: int = attrs.field(default=0, validator=_non_negative)
    drop_after_apply: bool = False
    chaos: bool = False
    chaos_rate: float = attrs.field(default=1.0, converter=float, validator=_rate)
    init_seconds: float = attrs.field(default=0.0, converter=float, validator=_non_negative)
    dns_delay_s: float = attrs.field(default=0.0, converter=float, validator=_non_negative)
    apis: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    seed: int | None = None

    def applies_to(self, api: str) -> bool:
        return not self.apis or api in self.apis

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = _CONVERTER.unstructure(self)
        out["apis"] = list(self.apis)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Faults:
        """Strict: unknown keys and wrong types are :class:`InvalidInput` naming the key."""
        try:
            return _CONVERTER.structure(dict(data), cls)
        except cattrs.BaseValidationError as exc:
            raise InvalidInput(f"bad faults: {_first(exc)}", field="faults") from None
        except (TypeError, ValueError) as exc:
            raise InvalidInput(f"bad faults: {exc}", field="faults") from None


def _first(exc: BaseException) -> str:
    if isinstance(exc, cattrs.BaseValidationError) and exc.exceptions:
        return _first(exc.exceptions[0])
    return str(exc)


def _make_converter() -> cattrs.Converter:
    conv = cattrs.Converter(forbid_extra_keys=True)

    def number(value: Any, _: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"expected a number, got {type(value).__name__}")
        return float(value)

    def whole(value: Any, _: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"expected a whole number, got {type(value).__name__}")
        return value

    def flag(value: Any, _: Any) -> bool:
        if not isinstance(value, bool):
            raise TypeError(f"expected true or false, got {type(value).__name__}")
        return value

    def text(value: Any, _: Any) -> str:
        if not isinstance(value, str):
            raise TypeError(f"expected a string, got {type(value).__name__}")
        return value

    conv.register_structure_hook(float, number)
    conv.register_structure_hook(int, whole)
    conv.register_structure_hook(bool, flag)
    conv.register_structure_hook(str, text)
    return conv


_CONVERTER = _make_converter()
