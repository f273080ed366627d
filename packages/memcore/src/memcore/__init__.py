"""memcore: long-term memory for AI agents. The pure core: scopes, policies, limits, ports.

The names below load on first use (PEP 562): a host that needs only ``memcore.errors`` or
``memcore.config`` (a plugin's status check, a CLI's ``--help``) does not pay for the rest.
Only :mod:`memcore.errors`, which imports nothing, loads with the package: it lists the error
names once.
"""

from typing import TYPE_CHECKING, Any

from memcore import errors as _errors

if TYPE_CHECKING:
    # For type checkers, which do not run __getattr__; a test keeps it equal to _FROM.
    from memcore import values as _values
    from memcore.async_facade import AsyncMemory as AsyncMemory
    from memcore.config import MemcoreConfig as MemcoreConfig
    from memcore.config import dump_config as dump_config
    from memcore.config import merge_config as merge_config
    from memcore.config import parse_config as parse_config
    from memcore.discovery import installed_backends as installed_backends
    from memcore.discovery import open_store as open_store
    from memcore.errors import ConfigError as ConfigError
    from memcore.errors import Conflict as Conflict
    from memcore.errors import InvalidInput as InvalidInput
    from memcore.errors import MemcoreError as MemcoreError
    from memcore.errors import NotFound as NotFound
    from memcore.errors import OutcomeUnknown as OutcomeUnknown
    from memcore.errors import PermissionDenied as PermissionDenied
    from memcore.errors import ProtocolError as ProtocolError
    from memcore.errors import StoreClosed as StoreClosed
    from memcore.errors import StoreCorrupted as StoreCorrupted
    from memcore.errors import StoreNotFound as StoreNotFound
    from memcore.errors import Throttled as Throttled
    from memcore.errors import Unavailable as Unavailable
    from memcore.errors import Unsupported as Unsupported
    from memcore.facade import Memory as Memory
    from memcore.outbox import OutboxEntry as OutboxEntry
    from memcore.policies import AgentRead as AgentRead
    from memcore.policies import ExactSessionWrite as ExactSessionWrite
    from memcore.policies import ForgetPolicy as ForgetPolicy
    from memcore.policies import ReadPolicy as ReadPolicy
    from memcore.policies import ScopePolicy as ScopePolicy
    from memcore.policies import SessionRead as SessionRead
    from memcore.policies import TenantForget as TenantForget
    from memcore.policies import TenantRead as TenantRead
    from memcore.policies import WritePolicy as WritePolicy
    from memcore.ports import Embedder as Embedder
    from memcore.ports import MemoryStore as MemoryStore
    from memcore.ports import Provisioner as Provisioner
    from memcore.scope import Scope as Scope
    from memcore.scope import ScopePattern as ScopePattern
    from memcore.scope import SessionContext as SessionContext
    from memcore.scope import identity_segment as identity_segment
    from memcore.scope import normalize_segment as normalize_segment
    from memcore.scope import resolve_scope as resolve_scope
    from memcore.scope import tenant_segment as tenant_segment
    from memcore.scope import unescape_segment as unescape_segment
    from memcore.service import MemoryService as MemoryService
    from memcore.values import DreamAction as DreamAction
    from memcore.values import DreamTask as DreamTask
    from memcore.values import MemoryRecord as MemoryRecord
    from memcore.values import MemoryTask as MemoryTask
    from memcore.values import Message as Message
    from memcore.values import Page as Page
    from memcore.values import RequestRecord as RequestRecord
    from memcore.values import SearchHit as SearchHit
    from memcore.values import StoreInfo as StoreInfo
    from memcore.values import WriteReceipt as WriteReceipt

    MemoryUnit = _values.MemoryRecord

__version__ = "0.1.0"

#: Module -> the public names it gives, under their own names.
_FROM: dict[str, tuple[str, ...]] = {
    "memcore.async_facade": ("AsyncMemory",),
    "memcore.config": ("MemcoreConfig", "dump_config", "merge_config", "parse_config"),
    "memcore.discovery": ("installed_backends", "open_store"),
    # Every error class, as memcore.errors lists them (a small module without imports).
    "memcore.errors": tuple(_errors.__all__),
    "memcore.facade": ("Memory",),
    "memcore.outbox": ("OutboxEntry",),
    "memcore.policies": (
        "AgentRead",
        "ExactSessionWrite",
        "ForgetPolicy",
        "ReadPolicy",
        "ScopePolicy",
        "SessionRead",
        "TenantForget",
        "TenantRead",
        "WritePolicy",
    ),
    "memcore.ports": ("Embedder", "MemoryStore", "Provisioner"),
    "memcore.scope": (
        "Scope",
        "ScopePattern",
        "SessionContext",
        "identity_segment",
        "normalize_segment",
        "resolve_scope",
        "tenant_segment",
        "unescape_segment",
    ),
    "memcore.service": ("MemoryService",),
    "memcore.values": (
        "DreamAction",
        "DreamTask",
        "MemoryRecord",
        "MemoryTask",
        "Message",
        "Page",
        "RequestRecord",
        "SearchHit",
        "StoreInfo",
        "WriteReceipt",
    ),
}

#: Public name -> (module, attribute) it comes from.
_EXPORTS: dict[str, tuple[str, str]] = {
    **{name: (module, name) for module, names in _FROM.items() for name in names},
    # The record's earlier public name (``memcore.values.Memory`` clashed with the facade).
    "MemoryUnit": ("memcore.values", "MemoryRecord"),
}

__all__ = sorted(_EXPORTS)


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
