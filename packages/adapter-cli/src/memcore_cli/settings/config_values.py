"""Turning ``config set KEY VALUE`` text into a typed value, by the key's declared type."""

from __future__ import annotations

import re
from typing import Any

import attrs

from memcore.config import CONFIG_KEYS, EMBEDDERS, TENANT_SCOPES, MemcoreConfig, merge_config
from memcore.errors import ConfigError
from memcore.limits import unicode_problem
from memcore.turn_policy import STORE_ASSISTANT

_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0")
_UNSET = ("null", "none")
#: Keys that cannot be unset but take one of the unset words as a value (``embedder none``).
_WORDS = {"embedder": EMBEDDERS, "tenant_scope": TENANT_SCOPES, "store_assistant": STORE_ASSISTANT}
#: Never printed by ``config show``; the config model holds none today, but a future key might.
SECRET_WORDS = ("secret", "password", "token", "access_key", "api_key", "apikey")
#: Secrets asked for by name, and the variable that holds each (the config file holds none).
SECRET_KEYS = {
    "api_key": "TABLESTORE_MEMORY_API_KEY",
    "access_key_id": "TABLESTORE_MEMORY_AK",
    "access_key_secret": "TABLESTORE_MEMORY_SK",
}


def parse_value(key: str, text: str, *, source: str) -> Any:
    """The typed value for ``key``; ``null`` unsets an optional key (back to its default)."""
    fields = attrs.fields_dict(MemcoreConfig)
    if key in SECRET_KEYS:
        raise ConfigError(
            f"{key} is a secret and is not kept in the config file; set it in the environment "
            f"({SECRET_KEYS[key]}=...) or in a Hermes home's .env",
            field=key,
            source=source,
        )
    if key not in fields:
        raise ConfigError(
            f"unknown key; known keys are {', '.join(CONFIG_KEYS)}", field=key, source=source
        )
    problem = unicode_problem(text)
    if problem is not None:  # bytes that are not UTF-8 on the command line: no JSON holds them
        raise ConfigError(f"the value is {problem}", field=key, source=source)
    if key == "local_path" and not text.strip():
        # Else the file was named " " (or, empty, the default) by every later command.
        raise ConfigError(
            "local_path is empty; give a file path, or null for the default",
            field=key,
            source=source,
        )
    if key == "local_path" and text.strip().lower() not in _UNSET:
        from memcore_cli.settings.home import home_expanded

        if home_expanded(text) is None:  # else written, and refused by every later command
            raise ConfigError(
                f"{text!r} names a home folder this system does not know",
                field=key,
                source=source,
            )
    declared = fields[key].type
    kind = declared.__name__ if isinstance(declared, type) else str(declared)
    optional = "None" in kind
    raw = text.strip()
    if raw.lower() in _UNSET:
        if optional:
            return None
        if raw.lower() in _WORDS.get(key, ()):
            return raw.lower()  # a value of the key (``embedder none``), not an unset
        # Else ``app_id null`` named an app "null", holding none of the memories.
        default = fields[key].default
        raise ConfigError(
            f"{key} cannot be unset; give a value (its default is {default!r})",
            field=key,
            source=source,
        )
    if optional and not raw:
        _refuse_empty(key, text, source=source)
    if kind.startswith("bool"):
        if raw.lower() in _TRUE:
            return True
        if raw.lower() in _FALSE:
            return False
        raise ConfigError(f"expected true or false, got {text!r}", field=key, source=source)
    for prefix, spelled, convert, expected in _NUMBERS:
        if kind.startswith(prefix):
            # Written as a number is written in JSON and in every language: Python's own int()
            # and float() also read "1_0" as 10, "９" as 9, and "nan".
            if not spelled.fullmatch(raw):
                raise ConfigError(f"expected {expected}, got {text!r}", field=key, source=source)
            return convert(raw)
    return text


#: The number types a key may have: how ``config set`` takes one spelled (ASCII digits, a
#: sign, a point, an exponent), what makes it, and what a refusal says it expected.
_NUMBERS: tuple[tuple[str, re.Pattern[str], type, str], ...] = (
    ("int", re.compile(r"[+-]?[0-9]+"), int, "a whole number"),
    ("float", re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?"), float, "a number"),
)


def _refuse_empty(key: str, text: str, *, source: str) -> None:
    """An empty value the key's own rule refuses: ``config set tenant_id ""`` is how one
    clears a value elsewhere, so the refusal says how to clear it here."""
    try:
        merge_config(MemcoreConfig(), {key: text}, source=source)
    except ConfigError:
        raise ConfigError(
            f"{key} is empty; give a value, or null to unset it (back to its default)",
            field=key,
            source=source,
        ) from None


def redact(data: dict[str, Any]) -> dict[str, Any]:
    return {
        k: ("***" if v is not None and any(w in k.lower() for w in SECRET_WORDS) else v)
        for k, v in data.items()
    }
