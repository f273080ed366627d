"""Undoing what a stopped import added, with Ctrl-C held until it is done.

The rollback runs with Ctrl-C held: a second interrupt (``timeout`` signals both the process
and its group; an impatient user presses twice) must not leave it half done behind a message
that claims otherwise. It deletes only what no other write has claimed since the import wrote
it, where the store can tell (:func:`memcore.transfer.take_back`): a ``memcore add`` of the
same text, answered with the import's memory, keeps it. The line counts what was deleted,
what was kept for another write and what is still stored, so it never claims a rollback that
did not happen (:class:`memcore.transfer.Undone`, shared with ``hermes tablestore-mem import``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from memcore.scope import Scope
from memcore.transfer import Undone, take_back
from memcore.values import VersionLink
from memcore_cli.output.interrupts import held_interrupts
from memcore_cli.wiring.runtime import Runtime


def undo_import(
    runtime: Runtime,
    added: list[tuple[Scope, str]],
    versions: Mapping[str, int],
    links: Sequence[VersionLink] = (),
) -> Undone:
    """Delete what the import added, newest first, with Ctrl-C held until done. Each goes
    through the service, so the tenant check applies to an import's undo as to any
    ``forget``; one already gone (another writer deleted it) counts as deleted, and one
    another write landed in since (``versions``: the version the import left each at) is
    kept. Of the links the import gives (``links``, written or not yet) only what they add
    is taken back, so a dream's since stays, and those of the memories it kept are given
    again."""
    with held_interrupts():
        return take_back(runtime.service(), added, versions, links)
