"""The provider's settings as Hermes' dashboard shows and saves them.

The dashboard reads a provider's values only from files of its own naming, never
``tablestore_memory.json``: each field's default is its saved value, so the form shows it and
a save that leaves it out keeps it. A field the user blanks is sent back as ``""``, which
Hermes replaces by that default (``value or default``): the saved value would come back. The
default is therefore a :class:`SavedSetting`, a ``str`` that the save recognises as "the
form sent nothing here", and clears (the key's own default applies again).

Kept free of memcore imports: Hermes asks for the schema before the dependencies install.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memcore_hermes.config.envfile import AK_VAR, API_KEY_VAR, SK_VAR


class SavedSetting(str):
    """A saved value given to Hermes as a field's default. It comes back as this type (not a
    plain ``str``) only where the form sent a blank field: Hermes' save returns the default
    object itself for a blank value and a plain string for any other."""

    __slots__ = ()


def form_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """The values a dashboard save hands the provider, a blanked field as ``""`` (which the
    config save reads as "back to the default") instead of the saved value it came back as."""
    return {k: "" if isinstance(v, SavedSetting) else v for k, v in values.items()}


#: Fields that say whose memories a session reads: blanked, the default names another store
#: (or app), and the memories kept under the saved value would silently leave every recall.
WHERE_MEMORIES_LIVE = ("memory_store_name", "app_id")


def hiding_blank(values: Mapping[str, Any]) -> tuple[str, str] | None:
    """The key and the reason when the form blanked a :data:`WHERE_MEMORIES_LIVE` field
    whose saved value is not its default; None otherwise (a blank that is the default
    already changes nothing)."""
    defaults = {f["key"]: f.get("default") for f in settings_schema(False)}
    for key in WHERE_MEMORIES_LIVE:
        saved = values.get(key)
        if isinstance(saved, SavedSetting) and str(saved) != defaults[key]:
            return key, (
                f"{key} left blank: its default {defaults[key]!r} would be used, and the "
                f"memories kept under {str(saved)!r} would no longer be recalled or searched; "
                f"type {defaults[key]} to switch to it, or keep {str(saved)!r}"
            )
    return None


def settings_schema(pair_required: bool) -> list[dict[str, Any]]:
    """The settings, backend first (others depend on it); the pair required unless an API
    key is set (Hermes' schema has no "one of these")."""
    return [
        {
            "key": "backend",
            "description": "Where memories live: TableStore (cloud) or local (offline SQLite)",
            "default": "tablestore",
            "choices": ["tablestore", "local"],
        },
        {
            "key": "api_key",
            "description": "TableStore API key for the Memory Store (HTTPS only; used "
            "instead of the AccessKey pair when set; an existing instance only)",
            "secret": True,
            "required": False,
            "env_var": API_KEY_VAR,
            "when": {"backend": "tablestore"},
        },
        {
            "key": "access_key_id",
            "description": "TableStore AccessKey ID (not needed when an API key is set)",
            "secret": True,
            "required": pair_required,
            "env_var": AK_VAR,
            "url": "https://ram.console.aliyun.com/manage/ak",
            "when": {"backend": "tablestore"},
        },
        {
            "key": "access_key_secret",
            "description": "TableStore AccessKey secret (not needed when an API key is set)",
            "secret": True,
            "required": pair_required,
            "env_var": SK_VAR,
            "when": {"backend": "tablestore"},
        },
        {
            "key": "instance_name",
            "description": "TableStore instance (blank: create one on first run)",
            "when": {"backend": "tablestore"},
        },
        {
            "key": "endpoint",
            "description": "Instance endpoint, e.g. https://<instance>.cn-beijing.ots.aliyuncs.com",
            "when": {"backend": "tablestore"},
        },
        {
            "key": "region",
            "description": "Region",
            "default": "cn-beijing",
            "when": {"backend": "tablestore"},
        },
        {
            "key": "memory_store_name",
            "description": "Memory store name",
            "default": "hermes_mem",
        },
        {"key": "app_id", "description": "App id (first scope level)", "default": "hermes"},
        {
            "key": "tenant_id",
            "description": "A fixed tenant for everyone (blank: each user's own)",
        },
        {
            "key": "tenant_scope",
            "description": "Each user's tenant: platform (telegram:12345 and discord:12345 "
            "are two people) or user (the user id alone, shared across platforms)",
            "default": "platform",
            "choices": ["platform", "user"],
        },
        {"key": "top_k", "description": "Memories recalled before each turn", "default": "5"},
        {
            "key": "enable_rerank",
            "description": "Rerank search results",
            "default": "true",
            "choices": ["true", "false"],
        },
        {
            "key": "store_assistant",
            "description": "Assistant replies kept as memories: auto (only those worth "
            "recalling, not acknowledgements or tool-output echoes), always, never",
            "default": "auto",
            "choices": ["auto", "always", "never"],
        },
        {
            "key": "recall_wait_ms",
            # Both backends: on the local one it bounds the wait for a store a session's
            # start left still opening (it was offered for TableStore only).
            "description": "How long a turn waits for its recall: TableStore's search, or a "
            "store still opening (ms)",
            "default": "1000",
        },
        {
            "key": "recall_neighbours",
            "description": "Turns of its conversation shown around each recalled memory "
            "(0 to 5, within the same block size)",
            "default": "0",
            "when": {"backend": "local"},
        },
    ]


def with_saved_values(
    fields: list[dict[str, Any]], saved: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """``fields`` with each non-secret one's default set to its value in ``saved`` (as the
    text a form holds, a :class:`SavedSetting` where the field is free text), unless that
    value is not one of the field's choices."""
    for field in fields:
        value = saved.get(field["key"])
        if field.get("secret") or value is None:
            continue
        if field["key"] == "endpoint":
            try:
                from memcore.config import strip_userinfo
            except ImportError:  # asked before the dependencies are installed: not offered
                continue
            # Shown in the form and written back on every save: a config file keeps no
            # user:password@ (TableStore signs with the keys, never with these).
            value = strip_userinfo(value)
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, (str, int, float)):
            # As written: Hermes sends the default back on every save, and a trimmed
            # tenant id ("alice " is its own tenant) moved every later read to another one.
            text = str(value)
        else:
            continue
        if not text.strip():
            continue
        if "choices" not in field:
            field["default"] = SavedSetting(text)
        elif text in field["choices"]:
            field["default"] = text
    return fields
