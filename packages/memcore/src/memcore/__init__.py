"""memcore: long-term memory for AI agents. The pure core: scopes, policies, limits, ports."""

from typing import TYPE_CHECKING, Any

from memcore.config import MemcoreConfig, dump_config, merge_config, parse_config
from memcore.discovery import installed_backends, open_store
from memcore.errors import (
    ConfigError,
    Conflict,
    InvalidInput,
    MemcoreError,
    NotFound,
    PermissionDenied,
    ProtocolError,
    StoreClosed,
    Throttled,
    Unavailable,
    Unsupported,
)
from memcore.facade import Memory
from memcore.policies import ScopePolicy
from memcore.ports import Embedder, MemoryStore, Outbox, OutboxEntry, Provisioner
from memcore.scope import (
    Scope,
    ScopePattern,
    SessionContext,
    identity_segment,
    normalize_segment,
    resolve_scope,
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

if TYPE_CHECKING:
    from memcore.async_facade import AsyncMemory

__version__ = "0.1.0"

__all__ = [
    "AsyncMemory",
    "ConfigError",
    "Conflict",
    "DreamAction",
    "DreamTask",
    "Embedder",
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
    "Outbox",
    "OutboxEntry",
    "Page",
    "PermissionDenied",
    "ProtocolError",
    "Provisioner",
    "RequestRecord",
    "Scope",
    "ScopePattern",
    "ScopePolicy",
    "SearchHit",
    "SessionContext",
    "StoreClosed",
    "StoreInfo",
    "Throttled",
    "Unavailable",
    "Unsupported",
    "WriteReceipt",
    "dump_config",
    "installed_backends",
    "merge_config",
    "identity_segment",
    "normalize_segment",
    "open_store",
    "parse_config",
    "resolve_scope",
]


def __getattr__(name: str) -> Any:
    # asyncio is a heavy import that only asyncio hosts need: load AsyncMemory on first use.
    if name == "AsyncMemory":
        from memcore.async_facade import AsyncMemory

        return AsyncMemory
    raise AttributeError(f"module 'memcore' has no attribute {name!r}")
