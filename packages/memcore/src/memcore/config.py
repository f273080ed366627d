"""The configuration model: the keys of the original plugin's ``tablestore_memory.json``.

The core parses text it is handed; reading and writing files is the hosts' job. Secrets are
never part of this model: they come from the environment.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    import cattrs

from memcore import limits
from memcore.errors import ConfigError, InvalidInput
from memcore.limits import STORE_NAME_RE
from memcore.turn_policy import STORE_ASSISTANT
from memcore.userinfo import repr_without_userinfo

# Where the hosts and adapters import them from, with the configuration they hide.
from memcore.userinfo import strip_userinfo as strip_userinfo
from memcore.userinfo import without_userinfo as without_userinfo
from memcore.wording import shown

#: The embedded store's backend name (its writes end with the process that made them).
LOCAL = "local"
BACKENDS = (LOCAL, "tablestore")
EMBEDDERS = ("auto", "onnx", "multilingual", "multilingual-use", "none")
#: How a host that knows the user's chat platform names the tenant: ``platform`` (one tenant
#: per platform and user id) or ``user`` (the user id alone, as in 0.1.0: the same id on two
#: platforms shares one tenant; for one person reaching the agent from several platforms).
TENANT_SCOPES = ("platform", "user")
#: The service names a VCU instance itself, in a format its pages do not give (the 3-16
#: character rule is for names a user picks with CreateInstance). A saved name is checked only
#: for what it is used as: the first label of the data host, so at most 63 characters.
_INSTANCE_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,62}")
_REGION_RE = re.compile(r"[a-z]{2}(-[a-z0-9]+)+")


class _BadValue(ConfigError, ValueError):
    """A validator's complaint, carrying the key so errors never need parsing; a
    ``ConfigError`` for a caller who builds a config in code."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message, field=key)
        self.key = key
        self.detail = message


_KINDS = {"str": str, "bool": bool, "int": int, "float": float}


def _typed(cls: type, fields: list[attrs.Attribute[Any]]) -> list[attrs.Attribute[Any]]:
    """Put a type check before each field's own validator (from its annotation), so a value
    of the wrong type is a ``ConfigError`` naming the key, never an AttributeError or a
    TypeError from inside a check."""
    typed = []
    for field in fields:
        annotation = str(field.type).replace(" ", "")
        optional = annotation.endswith("|None")
        kind = _KINDS[annotation.removesuffix("|None")]
        own = [field.validator] if field.validator is not None else []
        typed.append(field.evolve(validator=attrs.validators.and_(_kind_of(kind, optional), *own)))
    return typed


def _kind_of(kind: type, optional: bool) -> Any:
    words = {str: "a string", bool: "true or false", int: "a whole number", float: "a number"}

    def check(_: Any, attribute: attrs.Attribute[Any], value: object) -> None:
        if value is None and optional:
            return
        fits = isinstance(value, kind) and not (kind is not bool and isinstance(value, bool))
        if kind is float:
            fits = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not fits:
            raise _BadValue(
                attribute.name,
                f"{attribute.name} must be {words[kind]}, not {type(value).__name__}",
            )
        # Half an emoji ("\ud800" in the JSON) or a stray byte: no host prints or stores it,
        # and a tenant_id holding one named a tenant that --tenant refuses.
        problem = limits.unicode_problem(value) if isinstance(value, str) else None
        if problem is not None:
            raise _BadValue(attribute.name, f"{attribute.name} is {problem}")

    return check


def _segment_value(_: Any, attribute: attrs.Attribute[Any], value: str | None) -> None:
    if value is None:
        return
    if not value.strip():
        raise _BadValue(attribute.name, f"{attribute.name} must not be empty or only whitespace")
    if "*" in value or "/" in value or any(ord(c) < 32 for c in value):
        raise _BadValue(
            attribute.name,
            f"{attribute.name} must be a plain name without '*', '/' or control codes",
        )
    if len(value) > 128:
        raise _BadValue(attribute.name, f"{attribute.name} must be at most 128 characters")


def _store_name(_: Any, attribute: attrs.Attribute[Any], value: str) -> None:
    if not STORE_NAME_RE.fullmatch(value):
        raise _BadValue(attribute.name, f"{attribute.name} must match [A-Za-z0-9_]{{1,32}}")


def _instance_name(_: Any, attribute: attrs.Attribute[Any], value: str | None) -> None:
    if value is not None and not _INSTANCE_RE.fullmatch(value):
        raise _BadValue(
            attribute.name,
            f"{attribute.name} must be 1 to 63 letters, digits, '-' or '_', starting with a "
            "letter or digit",
        )


def _endpoint(_: Any, attribute: attrs.Attribute[Any], value: str | None) -> None:
    if value is not None and not (re.fullmatch(r"https?://[^\s/]+/?", value) and _has_host(value)):
        raise _BadValue(
            attribute.name,
            f"{attribute.name} must look like https://<instance>.<region>.ots.aliyuncs.com",
        )


def _has_host(url: str) -> bool:
    """Whether ``url`` names a host and, if any, a port from 1 to 65535: ``https://u:p@`` or
    ``https://:99999`` passed the pattern, and the HTTP client then failed to parse them
    after the store had been opened, in an error that blamed the service's answer."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return False
    return bool(parts.hostname) and port != 0


def _region(_: Any, attribute: attrs.Attribute[Any], value: str) -> None:
    if not _REGION_RE.fullmatch(value):
        raise _BadValue(attribute.name, f"{attribute.name} must look like cn-beijing")


def _local_path(_: Any, attribute: attrs.Attribute[Any], value: str | None) -> None:
    """A path no file can have (a NUL, half a UTF-16 pair) is refused here, naming the key:
    else it failed only when the store opened, as a ValueError or a UnicodeEncodeError."""
    if value is None:
        return
    problem = limits.path_problem(value)
    if problem is not None:
        raise _BadValue(attribute.name, f"{attribute.name} must be a file path: {problem}")


def _timeout(_: Any, attribute: attrs.Attribute[Any], value: float) -> None:
    if not math.isfinite(value) or not 0 < value <= 600:
        raise _BadValue(
            attribute.name, f"{attribute.name} must be a number of seconds above 0, at most 600"
        )


def _one_of(choices: tuple[str, ...]) -> Any:
    def check(_: Any, attribute: attrs.Attribute[Any], value: str | None) -> None:
        if value is not None and value not in choices:
            raise _BadValue(
                attribute.name,
                f"{attribute.name} must be one of {', '.join(choices)}, not {shown(value)}",
            )

    return check


def _instructions(_: Any, attribute: attrs.Attribute[Any], value: str | None) -> None:
    """The same check a store applies, so a config the core accepts never fails at create."""
    try:
        limits.check_extract_instructions(value)
    except InvalidInput as exc:
        raise _BadValue(attribute.name, str(exc)) from None


def _description(_: Any, attribute: attrs.Attribute[Any], value: str) -> None:
    """As :func:`_instructions`: a description over the store's limit was accepted here and
    failed every first write that creates the store, naming no config."""
    try:
        limits.check_description(value)
    except InvalidInput as exc:
        raise _BadValue(attribute.name, str(exc)) from None


def _top_k(_: Any, attribute: attrs.Attribute[Any], value: int) -> None:
    if not 1 <= value <= 50:
        raise _BadValue(attribute.name, f"{attribute.name} must be from 1 to 50")


def _recall_wait(_: Any, attribute: attrs.Attribute[Any], value: int) -> None:
    if not 0 <= value <= 10_000:
        raise _BadValue(attribute.name, f"{attribute.name} must be from 0 to 10000 milliseconds")


def _recall_neighbours(_: Any, attribute: attrs.Attribute[Any], value: int) -> None:
    if not 0 <= value <= limits.MAX_NEIGHBOURS:
        raise _BadValue(
            attribute.name, f"{attribute.name} must be from 0 to {limits.MAX_NEIGHBOURS}"
        )


@attrs.frozen(field_transformer=_typed)
class MemcoreConfig:
    """Every non-secret setting, with the original plugin's defaults."""

    #: Shown without ``user:password@`` in the repr (a hand-written one loads and is used).
    endpoint: str | None = attrs.field(
        default=None, validator=_endpoint, repr=repr_without_userinfo
    )
    instance_name: str | None = attrs.field(default=None, validator=_instance_name)
    memory_store_name: str = attrs.field(default="hermes_mem", validator=_store_name)
    description: str = attrs.field(
        default="Long-term memory for Hermes Agent", validator=_description
    )
    #: Custom extraction instructions for a store memcore creates (at most 4,096 characters);
    #: None leaves the service's default.
    extract_instructions: str | None = attrs.field(default=None, validator=_instructions)
    app_id: str = attrs.field(default="hermes", validator=_segment_value)
    tenant_id: str | None = attrs.field(default=None, validator=_segment_value)
    #: Without ``tenant_id``: whether the session's platform is part of its tenant
    #: (:data:`TENANT_SCOPES`); a host with no platforms (the library, CLI, MCP) ignores it.
    tenant_scope: str = attrs.field(default="platform", validator=_one_of(TENANT_SCOPES))
    enable_rerank: bool = True
    auto_create_store: bool = True
    timeout: float = attrs.field(default=30.0, validator=_timeout)
    #: ``local`` (embedded SQLite) or ``tablestore``; None lets the host choose its default.
    backend: str | None = attrs.field(default=None, validator=_one_of(BACKENDS))
    region: str = attrs.field(default="cn-beijing", validator=_region)
    #: How many memories a prefetch recalls.
    top_k: int = attrs.field(default=5, validator=_top_k)
    #: The embedded store's database file; None means the platform's user data directory.
    local_path: str | None = attrs.field(default=None, validator=_local_path)
    #: ``auto`` uses the ONNX embedder when installed, ``multilingual`` multilingual-e5 (about
    #: 100 languages), ``multilingual-use`` the faster Universal Sentence Encoder (16
    #: languages, better across languages), ``none`` keeps search lexical-only.
    embedder: str = attrs.field(default="auto", validator=_one_of(EMBEDDERS))
    #: Which assistant messages become memories: ``auto`` (those worth recalling, not an
    #: acknowledgement or a tool-output echo), ``always`` or ``never``. User messages always do;
    #: every message is kept in the message log.
    store_assistant: str = attrs.field(default="auto", validator=_one_of(STORE_ASSISTANT))
    #: How long a prefetch waits for a remote backend's search for the message being answered
    #: before it falls back to the last recall of this session (the embedded store always
    #: answers at once). 1,000 ms: on the emulator with 200 ms of latency per call, a search of
    #: a tenant of 500 memories took 580-720 ms on a busy 2-core machine (230-250 ms at 50
    #: memories; benchmarks/hermes_loop_recall.py); the model's own answer takes seconds after
    #: it, and Hermes' bundled mem0 provider waits up to 3 s.
    recall_wait_ms: int = attrs.field(default=1_000, validator=_recall_wait)
    #: Turns of its own conversation shown before and after each recalled memory (0 to 5),
    #: within the recall block's same character budget; the embedded store only (TableStore
    #: keeps no order of turns). Off by default, as measured in Hermes' loop
    #: (docs/benchmarks/hermes.md).
    recall_neighbours: int = attrs.field(default=0, validator=_recall_neighbours)

    def with_changes(self, **changes: Any) -> MemcoreConfig:
        return attrs.evolve(self, **changes)


CONFIG_KEYS = tuple(a.name for a in attrs.fields(MemcoreConfig))


class _UnknownKey(ConfigError, TypeError):
    """A keyword that is no config key: a ``ConfigError`` naming it, and still the
    ``TypeError`` a call with an unexpected keyword raises."""


def _known_keys_only(init: Any) -> Any:
    """attrs' ``__init__``, refusing an unknown keyword (``embeder=``) as a ``ConfigError``
    naming it, as a config file's unknown key is, rather than as a bare ``TypeError``."""

    @functools.wraps(init)
    def checked(self: MemcoreConfig, *args: Any, **kwargs: Any) -> None:
        unknown = sorted(set(kwargs) - set(CONFIG_KEYS))
        if unknown:
            raise _UnknownKey(
                f"unknown key {shown(unknown[0])}; known keys are {', '.join(CONFIG_KEYS)}",
                field=unknown[0],
            )
        init(self, *args, **kwargs)

    return checked


# Assigned, not written in the class: mypy still reads the keywords (and their types) from attrs.
setattr(MemcoreConfig, "__init__", _known_keys_only(MemcoreConfig.__init__))  # noqa: B010


def _strict(kind: type, name: str) -> Any:
    def structure(value: Any, _: Any) -> Any:
        if kind is float:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"expected a number, got {type(value).__name__}")
            return float(value)
        if kind is int and isinstance(value, bool):
            raise TypeError("expected a whole number, got a boolean")
        if not isinstance(value, kind):
            raise TypeError(f"expected {name}, got {type(value).__name__}")
        return value

    return structure


def make_converter() -> cattrs.Converter:
    """A converter that refuses unknown keys and never coerces ``"false"`` into ``True``."""
    import cattrs
    from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

    conv = cattrs.Converter(forbid_extra_keys=True)
    conv.register_structure_hook(str, _strict(str, "a string"))
    conv.register_structure_hook(bool, _strict(bool, "true or false"))
    conv.register_structure_hook(int, _strict(int, "a whole number"))
    conv.register_structure_hook(float, _strict(float, "a number"))
    conv.register_structure_hook(
        MemcoreConfig,
        make_dict_structure_fn(MemcoreConfig, conv, _cattrs_forbid_extra_keys=True),
    )
    conv.register_unstructure_hook(
        MemcoreConfig,
        make_dict_unstructure_fn(
            MemcoreConfig, conv, _cattrs_omit_if_default=False, local_path=override()
        ),
    )
    return conv


@functools.cache
def converter() -> cattrs.Converter:
    """The shared converter, built on first use: cattrs is costly to import, and a command
    that reads no configuration file should not pay for it."""
    return make_converter()


def _first_error(exc: BaseException) -> tuple[str | None, str]:
    """Find the key and message of the first problem inside a cattrs error group."""
    import cattrs
    from cattrs.errors import AttributeValidationNote

    if isinstance(exc, cattrs.ForbiddenExtraKeysError):
        return sorted(exc.extra_fields)[0], f"unknown key; known keys are {', '.join(CONFIG_KEYS)}"
    if isinstance(exc, _BadValue):
        return exc.key, exc.detail
    if isinstance(exc, cattrs.BaseValidationError):
        for sub in exc.exceptions:
            key: str | None = None
            for note in getattr(sub, "__notes__", None) or []:
                if isinstance(note, AttributeValidationNote):
                    key = note.name
            inner_key, message = _first_error(sub)
            return (inner_key or key), message
    return None, str(exc) or type(exc).__name__


def given_config(
    config: MemcoreConfig | Mapping[str, Any] | None, *, source: str = "the config argument"
) -> MemcoreConfig:
    """A caller's ``config=``: a config, a mapping of its keys, or None for the defaults;
    anything else is :class:`InvalidInput`, never an AttributeError deep in a backend."""
    if config is None:
        return MemcoreConfig()
    if isinstance(config, MemcoreConfig):
        return config
    if isinstance(config, Mapping):
        return config_from_mapping(config, source=source)
    raise InvalidInput(
        f"config must be a MemcoreConfig or a mapping of its keys, not {type(config).__name__}",
        field="config",
    )


def config_from_mapping(data: Mapping[str, Any], *, source: str = "<config>") -> MemcoreConfig:
    """Structure a mapping into a config; :class:`ConfigError` names the key and the source."""
    if not isinstance(data, Mapping):
        raise ConfigError("the configuration must be a JSON object", source=source)
    try:
        return converter().structure(dict(data), MemcoreConfig)
    except Exception as exc:  # cattrs raises groups of TypeError/ValueError/KeyError
        key, message = _first_error(exc)
        raise ConfigError(f"bad configuration: {message}", field=key, source=source) from None


def parse_config(raw: bytes | str, *, source: str = "<config>") -> MemcoreConfig:
    """Parse the bytes of a JSON config file (a UTF-8 BOM is accepted; empty means defaults)."""
    if isinstance(raw, bytes):
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise ConfigError(f"not UTF-8 text (byte {exc.start})", source=source) from None
    else:
        text = raw.removeprefix("\ufeff")
    if not text.strip():
        return MemcoreConfig()
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        raise ConfigError(f"not valid JSON: {exc}", source=source) from None
    if not isinstance(data, dict):
        raise ConfigError("the configuration must be a JSON object", source=source)
    return config_from_mapping(data, source=source)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed")


def config_to_dict(config: MemcoreConfig, *, include_defaults: bool = True) -> dict[str, Any]:
    data: dict[str, Any] = converter().unstructure(config)
    if not include_defaults:
        defaults = converter().unstructure(MemcoreConfig())
        data = {k: v for k, v in data.items() if defaults.get(k) != v}
    return data


def shown_config(config: MemcoreConfig) -> dict[str, Any]:
    """``config_to_dict`` for people and reports: URL credentials hidden (never for saving)."""
    return {k: without_userinfo(v) for k, v in config_to_dict(config).items()}


def dump_config(config: MemcoreConfig) -> str:
    """The JSON text of a config, without keys that are unset (None)."""
    data = {k: v for k, v in config_to_dict(config).items() if v is not None}
    return json.dumps(data, indent=2, ensure_ascii=False, sort_keys=True) + "\n"


def merge_config(
    base: MemcoreConfig, updates: Mapping[str, Any], *, source: str = "<update>"
) -> MemcoreConfig:
    """Apply ``updates`` to ``base`` with full validation (used by ``config set`` and save).

    An endpoint with ``user:password@`` is refused here, where a config is about to be
    written: the file never holds a secret (the SDK signs with the keys from the environment,
    never with a URL's). A hand-written one still loads, and is shown hidden."""
    endpoint = updates.get("endpoint")
    if isinstance(endpoint, str) and without_userinfo(endpoint) != endpoint:
        raise ConfigError(
            "endpoint must not hold a user name or password (user:password@): TableStore "
            "keys come only from the environment (TABLESTORE_MEMORY_AK, TABLESTORE_MEMORY_SK)",
            field="endpoint",
            source=source,
        )
    data = config_to_dict(base)
    data.update(updates)
    return config_from_mapping({k: v for k, v in data.items() if v is not None}, source=source)
