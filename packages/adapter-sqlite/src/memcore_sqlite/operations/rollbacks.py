"""An import's rollback (:class:`~memcore.ports.UnclaimedDelete`): a batch of the memories it
created deleted in one transaction, each only while its version is the one the import left.

Every write that lands in a memory moves its version, a repeat of its text that changes
nothing too (:meth:`memcore_sqlite.operations.writes.MemoryWrites._repeat`): a ``remember``
of that text was answered with the memory's id, another import that wrote it counted it
present. Such a
memory is the other writer's as much as the import's, so the rollback keeps it.

An import that finds a record present under its own id writes nothing of it, and claims it
instead (``claim_memories``): its version moves all the same, so another import still under
way that created it cannot take back what this one told its user was there.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from memcore import limits
from memcore.errors import InvalidInput
from memcore.scope import Scope
from memcore.values import MemoryVersion
from memcore_sqlite.operations.transactions import Transactions
from memcore_sqlite.operations.writes import MemoryWrites
from memcore_sqlite.storage.rows import check_scope


class ImportRollbacks:
    """Deletes what an import created and nobody has written to since."""

    def __init__(self, tx: Transactions) -> None:
        self._tx = tx

    def delete_unclaimed(self, store: str, memories: Sequence[MemoryVersion]) -> list[str]:
        started = time.perf_counter()
        if isinstance(memories, (str, bytes)) or not isinstance(memories, Sequence):
            raise InvalidInput("memories must be a list", field="memories")
        for i, memory in enumerate(memories):  # every one, before anything is deleted
            if not isinstance(memory, MemoryVersion):
                raise InvalidInput(f"memories[{i}] must be a MemoryVersion", field="memories")
            check_scope(memory.scope)
            limits.check_id(memory.memory_id, field=f"memories[{i}].memory_id")
            if type(memory.version) is not int:
                raise InvalidInput(
                    f"memories[{i}].version must be an integer", field=f"memories[{i}].version"
                )
        if not memories:
            return []
        kept: list[str] = []
        removed: list[tuple[tuple[str, str, str, str], int]] = []
        with self._tx.write() as conn:
            sid = self._tx.store_id(conn, store)
            gen = self._tx.bump(conn, sid)
            for memory in memories:
                found = conn.execute(
                    "SELECT seq, version FROM memories WHERE id = ? AND store_id = ?"
                    " AND app_id = ? AND tenant_id = ? AND agent_id = ? AND run_id = ?",
                    (memory.memory_id, sid, *memory.scope.as_tuple()),
                ).fetchone()
                if found is None:
                    continue  # deleted already; another tenant's id answers the same
                if int(found[1]) != memory.version:
                    kept.append(memory.memory_id)
                    continue
                MemoryWrites.drop(conn, int(found[0]))
                removed.append((memory.scope.as_tuple(), int(found[0])))
                self._tx.audit(
                    conn, sid, "DeleteMemory", started, scope=memory.scope, target=memory.memory_id
                )
            self._tx.after_write(sid, gen, (), removed)
        return kept

    def claim_memories(self, store: str, memories: Sequence[tuple[Scope, str]]) -> list[str]:
        started = time.perf_counter()
        if isinstance(memories, (str, bytes)) or not isinstance(memories, Sequence):
            raise InvalidInput("memories must be a list", field="memories")
        for i, memory in enumerate(memories):  # every one, before anything is written
            if not isinstance(memory, tuple) or len(memory) != 2:
                raise InvalidInput(f"memories[{i}] must be a (scope, id) pair", field="memories")
            check_scope(memory[0])
            limits.check_id(memory[1], field=f"memories[{i}].memory_id")
        if not memories:
            return []
        gone: list[str] = []
        with self._tx.write() as conn:
            sid = self._tx.store_id(conn, store)
            gen = self._tx.bump(conn, sid)
            for scope, memory_id in memories:
                moved = conn.execute(
                    "UPDATE memories SET version = version + 1 WHERE id = ? AND store_id = ?"
                    " AND app_id = ? AND tenant_id = ? AND agent_id = ? AND run_id = ?",
                    (memory_id, sid, *scope.as_tuple()),
                ).rowcount
                if not moved:
                    gone.append(memory_id)  # another tenant's id answers the same
            self._tx.audit(conn, sid, "ClaimMemories", started, scope=memories[0][0])
            self._tx.after_write(sid, gen, ())
        return gone
