"""Undoing what a stopped import added, with Ctrl-C held until it is done.

The rollback runs with Ctrl-C held: a second interrupt (``timeout`` signals both the process
and its group; an impatient user presses twice) must not leave it half done behind a message
that claims otherwise. The line counts what was deleted and what is still stored, so it never
claims a rollback that did not happen (:class:`memcore.transfer.Undone`, shared with
``hermes tablestore-mem import``).
"""

from __future__ import annotations

from memcore.errors import MemcoreError, NotFound
from memcore.scope import Scope
from memcore.transfer import Undone
from memcore_cli.output.interrupts import held_interrupts
from memcore_cli.wiring.runtime import Runtime


def undo_import(runtime: Runtime, added: list[tuple[Scope, str]]) -> Undone:
    """Delete what the import added, newest first, with Ctrl-C held until done. Each goes
    through the service from the scope it was written to, so the tenant check applies to an
    import's undo as to any ``forget``; one already gone (another writer deleted it) counts
    as deleted."""
    left = 0
    with held_interrupts():
        service = runtime.service()
        for scope, memory_id in reversed(added):
            try:
                service.switch_scope(scope)
                service.forget(memory_id)
            except NotFound:
                pass
            except MemcoreError:
                left += 1
    return Undone(len(added), left)
