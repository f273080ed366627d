"""Undoing what a stopped import added, and the one line that says what was undone.

The rollback runs with Ctrl-C held: a second interrupt (``timeout`` signals both the process
and its group; an impatient user presses twice) must not leave it half done behind a message
that claims otherwise. The line counts what was deleted and what is still stored, so it never
claims a rollback that did not happen.
"""

from __future__ import annotations

import attrs

from memcore.errors import MemcoreError, NotFound
from memcore.scope import Scope
from memcore_cli.output.interrupts import held_interrupts
from memcore_cli.wiring.runtime import Runtime


@attrs.frozen
class Undone:
    """What the rollback of an import did: ``added`` memories, ``left`` of them still stored
    (the store refused to delete them)."""

    added: int
    left: int

    def describe(self) -> str:
        if not self.added:
            return "import stopped; it had added nothing"
        if not self.left:
            return f"import stopped; the {self.added} memories it had added were deleted again"
        return (
            f"import stopped; of the {self.added} memories it had added, {self.left} are still "
            f"stored (the store refused to delete them) and {self.added - self.left} were "
            "deleted again; running the import again is safe"
        )


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


def stopped(cause: BaseException, undone: Undone) -> BaseException:
    """The error to raise for an import that ``cause`` stopped: the same kind (so the same
    exit code), its message followed by what the rollback did, one line in all."""
    note = undone.describe()
    if isinstance(cause, KeyboardInterrupt):
        return KeyboardInterrupt(note)
    if isinstance(cause, MemcoreError):
        cause.message = f"{cause.message} ({note})"
        return cause
    if isinstance(cause, Exception):
        # Unexpected (exit 1) as before, with the rollback in the same line.
        return MemcoreError(f"unexpected {type(cause).__name__}: {cause} ({note})")
    return cause  # SystemExit and the like: not an import failure to describe
