"""Reaching a backend: the factory an adapter registers, and the provisioner that makes sure
its instance exists."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import attrs

from memcore.userinfo import repr_without_userinfo

if TYPE_CHECKING:  # for the signatures only: opening a store needs no configuration parser
    from memcore.config import MemcoreConfig
    from memcore.ports.store import MemoryStore, ProgressCallback


class BackendFactory(Protocol):
    """What an adapter registers in the ``memcore.backends`` entry-point group
    (:mod:`memcore.discovery` finds it by name): a store for a configuration."""

    def __call__(self, config: MemcoreConfig, /, **options: Any) -> MemoryStore: ...


@attrs.frozen
class InstanceFacts:
    """Where a provisioned backend instance answers (the repr hides a ``user:password@``)."""

    instance_name: str
    endpoint: str = attrs.field(repr=repr_without_userinfo)
    region: str
    created: bool = False


class Provisioner(Protocol):
    """Makes sure a backend instance exists (first-run bootstrap) and says how to reach it."""

    def ensure_instance(self, *, progress: ProgressCallback | None = None) -> InstanceFacts: ...
