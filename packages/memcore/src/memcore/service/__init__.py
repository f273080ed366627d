"""The application service: :class:`MemoryService`, every memory use case of one session.

``memory_service`` holds the service; ``session`` what its use cases share (the store, the
scope, the tenant checks); ``dreams`` and ``logs`` the two families it carries as
collaborators; ``lookup``, ``mirror`` and ``turns`` the rules its own use cases call;
``inputs`` the checks hosts reuse on what they parse.
"""

from memcore.service.inputs import (
    RESERVED_METADATA_KEYS,
    check_filters,
    check_user_metadata,
    refuse_scope_keys,
    restorable_text,
)
from memcore.service.memory_service import MemoryService
from memcore.service.mirror import BUILTIN_SOURCE
from memcore.service.turns import TurnWrite

__all__ = [
    "BUILTIN_SOURCE",
    "RESERVED_METADATA_KEYS",
    "MemoryService",
    "TurnWrite",
    "check_filters",
    "check_user_metadata",
    "refuse_scope_keys",
    "restorable_text",
]
