"""What an import writes, and how it is taken back: the records a batch at a time, the
replaced versions kept with their links, the message log, and the one line both command
lines report a stopped import with."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import attrs

from memcore.errors import MemcoreError, OutcomeUnknown
from memcore.service import MemoryService
from memcore.transfer.parsing import ImportRecord, MessageRecord
from memcore.values import LoggedMessage, VersionLink


def restore_log(
    service: MemoryService, messages: Sequence[MessageRecord], ids: Mapping[str, str]
) -> int:
    """Log the file's ``messages`` in one transaction, each linked to the memory it became as
    restored here (``ids``: a file's memory id -> the id it has now; one not there, such as a
    replaced version left out, links to none); how many were added. A failure names the
    first message's line."""
    logged = [
        LoggedMessage(r.message, None if r.memory_id is None else ids.get(r.memory_id))
        for r in messages
    ]
    try:
        return service.restore_messages(logged)
    except MemcoreError as exc:
        exc.message = f"line {messages[0].line}: {exc.message}"
        raise


def history_kept(service: MemoryService, records: Sequence[ImportRecord]) -> set[int]:
    """The lines of the replaced versions an import restores: records of format 2 on a store
    that keeps the history (:attr:`MemoryService.restores_history`), whose successor, or its
    successor in turn, is a current record of the file. The rest are left out, as before, and
    so is one whose text a current record of its scope has (a text edited back to an old
    version's): a scope holds a text once, and the current memory must keep it."""
    if not service.restores_history:
        return set()
    current = {r.file_id for r in records if not r.superseded}
    said = {(r.scope, r.text.strip()) for r in records if not r.superseded}
    replaced = {
        r.file_id: r
        for r in records
        if r.superseded
        and r.fmt >= 2
        and r.file_id is not None
        and (r.scope, r.text.strip()) not in said
    }
    known: dict[str | None, bool] = {}
    for start in replaced:
        path: list[str | None] = []
        at: str | None = start
        while at not in known and at not in current and at in replaced and at not in path:
            path.append(at)
            at = replaced[at].superseded_by
        ends = known.get(at, at in current)
        for step in path:
            known[step] = ends
    return {r.line for key, r in replaced.items() if known.get(key)}


def version_links(
    created: Sequence[tuple[ImportRecord, str]], ids: Mapping[str, str]
) -> list[VersionLink]:
    """The links of the memories an import created (``ids``: a file's memory id -> the id it
    has here); a link to a version not restored is dropped."""
    links = []
    for record, new_id in created:
        if record.fmt < 2 or not (record.superseded_by or record.supersedes):
            continue
        by = None if record.superseded_by is None else ids.get(record.superseded_by)
        replaced = tuple(ids[i] for i in record.supersedes if i in ids)
        if by is not None or replaced:
            how = record.superseded_how if by is not None else None
            links.append(VersionLink(record.scope, new_id, by, how, replaced))
    return links


#: Records an import writes at once: one transaction and one embedding call on the local
#: store. Big enough that the embedder works in full batches; small enough that progress
#: moves and memory stays flat.
IMPORT_BATCH = 256


def restore_batches(
    service: MemoryService, pending: Sequence[ImportRecord]
) -> Iterator[list[tuple[ImportRecord, str | None, bool]]]:
    """Write ``pending`` a batch at a time (the next batch embedded ahead), yielding each
    batch's ``(record, id, made)``: the id it has (None: the store made nothing new), and
    whether this write created it. Where the store tells (``restores_exactly``), a text
    another writer stored first answers with that memory's id, not made here; elsewhere every
    id counts as made. A failed batch's error names its first line."""
    exact = service.restores_exactly
    # A store without a bulk write takes one memory per call, with nothing to undo a failed
    # call's earlier ones: each is yielded (and counted for the rollback) as soon as it lands.
    batch = IMPORT_BATCH if exact else 1
    for start in range(0, len(pending), batch):
        chunk = pending[start : start + batch]
        ahead = pending[start + batch : start + 2 * batch]
        created: set[str] = set()
        try:
            ids = service.restore(
                [r.item() for r in chunk], ahead=[r.item() for r in ahead], created=created
            )
        except MemcoreError as exc:
            line = chunk[0].line
            exc.message = f"line {line}: {exc.message}"
            if isinstance(exc, OutcomeUnknown) and len(chunk) == 1:
                # Not among what the rollback deletes: say so, or a second import stores it twice.
                exc.message += (
                    f"; line {line} may be stored (its answer was lost): look for it before "
                    "importing again"
                )
            raise
        yield [
            (record, new_id, new_id is not None and (new_id in created or not exact))
            for record, new_id in zip(chunk, ids)
        ]


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
