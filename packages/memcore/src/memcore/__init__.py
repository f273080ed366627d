"""memcore: long-term memory for AI agents. The pure core: scopes, policies, limits, ports.

The names below load on first use (PEP 562): a host that needs only ``memcore.errors`` or
``memcore.config`` (a plugin's status check, a CLI's ``--help``) does not pay for the rest.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memcore.async_facade import AsyncMemory
    from memcore.config import MemcoreConfig, dump_config, merge_config, parse_config
    from memcore.discovery import installed_backends, open_store
    from memcore.errors import (
        ConfigError,
        Conflict,
        InvalidInput,
        MemcoreError,
        NotFound,
        OutcomeUnknown,
        PermissionDenied,
        ProtocolError,
        StoreClosed,
        StoreCorrupted,
        Throttled,
        Unavailable,
        Unsupported,
    )
    from memcore.facade import Memory
    from memcore.outbox import OutboxEntry
    from memcore.policies import (
        AgentRead,
        ExactSessionWrite,
        ForgetPolicy,
        ReadPolicy,
        ScopePolicy,
        SessionRead,
        TenantForget,
        TenantRead,
        WritePolicy,
    )
    from memcore.ports import Embedder, MemoryStore, Provisioner
    from memcore.scope import (
        Scope,
        ScopePattern,
        SessionContext,
        identity_segment,
        normalize_segment,
        resolve_scope,
        tenant_segment,
        unescape_segment,
    )
    from memcore.service import MemoryService
    from memcore.values import (
        DreamAction,
        DreamTask,
        MemoryTask,
        Message,
        Page,
        RequestRecord,
        SearchHit,
        StoreInfo,
        WriteReceipt,
    )
    from memcore.values import Memory as MemoryUnit

__version__ = "0.1.0"

#: Public name -> (module, attribute) it comes from.
_EXPORTS: dict[str, tuple[str, str]] = {
    "AsyncMemory": ("memcore.async_facade", "AsyncMemory"),
    **{
        name: ("memcore.config", name)
        for name in ("MemcoreConfig", "dump_config", "merge_config", "parse_config")
    },
    **{name: ("memcore.discovery", name) for name in ("installed_backends", "open_store")},
    **{
        name: ("memcore.errors", name)
        for name in (
            "ConfigError",
            "Conflict",
            "InvalidInput",
            "MemcoreError",
            "NotFound",
            "OutcomeUnknown",
            "PermissionDenied",
            "ProtocolError",
            "StoreClosed",
            "StoreCorrupted",
            "Throttled",
            "Unavailable",
            "Unsupported",
        )
    },
    "Memory": ("memcore.facade", "Memory"),
    **{
        name: ("memcore.policies", name)
        for name in (
            "AgentRead",
            "ExactSessionWrite",
            "ForgetPolicy",
            "ReadPolicy",
            "ScopePolicy",
            "SessionRead",
            "TenantForget",
            "TenantRead",
            "WritePolicy",
        )
    },
    "OutboxEntry": ("memcore.outbox", "OutboxEntry"),
    **{name: ("memcore.ports", name) for name in ("Embedder", "MemoryStore", "Provisioner")},
    **{
        name: ("memcore.scope", name)
        for name in (
            "Scope",
            "ScopePattern",
            "SessionContext",
            "identity_segment",
            "normalize_segment",
            "resolve_scope",
            "tenant_segment",
            "unescape_segment",
        )
    },
    "MemoryService": ("memcore.service", "MemoryService"),
    **{
        name: ("memcore.values", name)
        for name in (
            "DreamAction",
            "DreamTask",
            "MemoryTask",
            "Message",
            "Page",
            "RequestRecord",
            "SearchHit",
            "StoreInfo",
            "WriteReceipt",
        )
    },
    "MemoryUnit": ("memcore.values", "Memory"),
}

__all__ = [
    "AgentRead",
    "AsyncMemory",
    "ConfigError",
    "Conflict",
    "DreamAction",
    "DreamTask",
    "Embedder",
    "ExactSessionWrite",
    "ForgetPolicy",
    "InvalidInput",
    "MemcoreConfig",
    "MemcoreError",
    "Memory",
    "MemoryService",
    "MemoryStore",
    "MemoryTask",
    "MemoryUnit",
    "Message",
    "NotFound",
    "OutcomeUnknown",
    "OutboxEntry",
    "Page",
    "PermissionDenied",
    "ProtocolError",
    "Provisioner",
    "ReadPolicy",
    "RequestRecord",
    "Scope",
    "ScopePattern",
    "ScopePolicy",
    "SearchHit",
    "SessionContext",
    "SessionRead",
    "StoreClosed",
    "StoreCorrupted",
    "StoreInfo",
    "TenantForget",
    "TenantRead",
    "Throttled",
    "Unavailable",
    "Unsupported",
    "WritePolicy",
    "WriteReceipt",
    "dump_config",
    "identity_segment",
    "installed_backends",
    "merge_config",
    "normalize_segment",
    "open_store",
    "parse_config",
    "resolve_scope",
    "tenant_segment",
    "unescape_segment",
]


def __getattr__(name: str) -> Any:
    try:
        module, attribute = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'memcore' has no attribute {name!r}") from None
    import importlib

    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
