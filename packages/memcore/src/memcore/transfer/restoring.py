"""What an import writes, and how it is taken back: the records a batch at a time, the
replaced versions kept with their links, the message log, and the one line both command
lines report a stopped import with. A memory an import counts present under its own id is
claimed (:func:`claim_present`), so another import's rollback keeps it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence

import attrs

from memcore.errors import MemcoreError, NotFound, OutcomeUnknown, Unavailable
from memcore.scope import Scope
from memcore.service import MemoryService
from memcore.transfer.parsing import ImportRecord, MessageRecord
from memcore.transfer.planning import Plan
from memcore.values import LoggedMessage, MemoryRecord, MemoryVersion, VersionLink
from memcore.wording import counted


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
        return service.logs.restore_messages(logged)
    except MemcoreError as exc:
        exc.message = f"line {messages[0].line}: {exc.message}"
        raise


def history_kept(service: MemoryService, records: Sequence[ImportRecord]) -> set[int]:
    """The lines of the replaced versions an import restores: records of format 2 on a store
    that keeps the history (:attr:`~memcore.service.logs.Logs.keeps_history`), whose successor,
    or its successor in turn, is a current record of the file. The rest are left out, as before,
    and so is one whose text a current record of its scope has (a text edited back to an old
    version's): a scope holds a text once, and the current memory must keep it."""
    if not service.logs.keeps_history:
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


def held_texts(
    service: MemoryService, memories: Iterable[MemoryRecord]
) -> dict[tuple[Scope, str], str]:
    """Each current text of ``memories`` (what the tenant holds) by scope -> its memory's id,
    on a store that does not restore exactly (TableStore): nothing documented says it keeps a
    text once, and the file's ids are not the ones it gave, so an import counts a record whose
    text its scope holds as present instead of sending it again. Empty elsewhere: the
    embedded store answers a repeat with the memory it has."""
    if service.restores_exactly:
        return {}
    return {(m.scope, m.text.strip()): m.id for m in memories if m.is_current}


def version_links(
    created: Sequence[tuple[ImportRecord, str]],
    ids: Mapping[str, str],
    found: Sequence[tuple[ImportRecord, MemoryRecord]] = (),
) -> list[VersionLink]:
    """The links an import gives the memories it created (``ids``: a file's memory id -> the
    id it has here); a link to a version not restored is dropped. A memory present already
    (``found``: its record and the memory as listed) gets only what links it to the versions
    this import created: one it replaced joins its ``supersedes``, and one that replaced it
    becomes its ``superseded_by`` unless it has one. Written with
    :meth:`~memcore.service.logs.Logs.restore_links` ``adding``, so its other links stay as they
    are now, a dream's since the import listed it too; the history reads both ways, and recall
    answers with the current fact, as where the backup came from."""
    links = []
    for record, new_id in created:
        if record.fmt < 2 or not (record.superseded_by or record.supersedes):
            continue
        by = None if record.superseded_by is None else ids.get(record.superseded_by)
        replaced = tuple(ids[i] for i in record.supersedes if i in ids)
        if by is not None or replaced:
            how = record.superseded_how if by is not None else None
            links.append(VersionLink(record.scope, new_id, by, how, replaced))
    made = {new_id for _, new_id in created}
    for record, memory in found:
        if record.fmt < 2:
            continue
        had = memory.supersedes
        new = tuple(
            dict.fromkeys(
                ids[i] for i in record.supersedes if ids.get(i) in made and ids[i] not in had
            )
        )
        successor = None if record.superseded_by is None else ids.get(record.superseded_by)
        if memory.superseded_by is not None or successor not in made:
            successor = None
        if new or successor is not None:
            how = record.superseded_how if successor is not None else None
            links.append(VersionLink(memory.scope, memory.id, successor, how, new))
    return links


#: Records an import writes at once: one transaction and one embedding call on the local
#: store. Big enough that the embedder works in full batches; small enough that progress
#: moves and memory stays flat.
IMPORT_BATCH = 256


def claim_present(service: MemoryService, plan: Plan) -> set[str]:
    """Land a write in each memory ``plan`` counts present under its record's own id
    (``plan.found``), where the store tells claims: such a memory may be one another import
    still under way created, and that import's rollback deletes only a memory no write
    landed in since, so this import's "present" holds. One deleted meanwhile (that rollback
    came first) is not present any more: its record joins ``plan.pending``, written again
    with the rest, and its id is returned. Elsewhere nothing is written: the store cannot
    tell a claim (:attr:`MemoryService.tells_claims`)."""
    if not service.tells_claims or not plan.found:
        return set()
    gone: set[str] = set()
    for start in range(0, len(plan.found), IMPORT_BATCH):
        part = plan.found[start : start + IMPORT_BATCH]
        gone.update(service.claim([(memory.scope, memory.id) for _, memory in part]))
    if gone:
        back = [record for record, memory in plan.found if memory.id in gone]
        plan.found = [(record, memory) for record, memory in plan.found if memory.id not in gone]
        plan.present -= len(back)
        plan.pending.extend(back)
    return gone


def restore_batches(
    service: MemoryService,
    pending: Sequence[ImportRecord],
    versions: dict[str, int] | None = None,
) -> Iterator[list[tuple[ImportRecord, str | None, bool]]]:
    """Write ``pending`` a batch at a time (the next batch embedded ahead), yielding each
    batch's ``(record, id, made)``: the id it has (None: the store made nothing new), and
    whether this write created it. Where the store tells (``restores_exactly``), a text
    another writer stored first answers with that memory's id, not made here; elsewhere every
    id counts as made. A failed batch's error names its first line.

    ``versions`` receives, where the store tells claims (:attr:`MemoryService.tells_claims`),
    each memory made here -> the version this import left it at: what :func:`take_back`
    deletes it at. A later batch that repeats its text moves it on as well; when it moved
    further, another write landed in it between the batches, and it stays where it was."""
    exact = service.restores_exactly
    track = versions is not None and exact and service.tells_claims
    # A store without a bulk write takes one memory per call, with nothing to undo a failed
    # call's earlier ones: each is yielded (and counted for the rollback) as soon as it lands.
    batch = IMPORT_BATCH if exact else 1
    for start in range(0, len(pending), batch):
        chunk = pending[start : start + batch]
        ahead = pending[start + batch : start + 2 * batch]
        created: set[str] = set()
        after: dict[str, int] | None = {} if track else None
        try:
            ids = service.restore(
                [r.item() for r in chunk],
                ahead=[r.item() for r in ahead],
                created=created,
                versions=after,
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
        if versions is not None and after is not None:
            _left_at(versions, ids, created, after)
        yield [
            (record, new_id, new_id is not None and (new_id in created or not exact))
            for record, new_id in zip(chunk, ids)
        ]


def _left_at(
    versions: dict[str, int],
    ids: Sequence[str | None],
    created: set[str],
    after: Mapping[str, int],
) -> None:
    """Note the versions one batch left this import's memories at (``after``, as the store
    reported them): those it created, and those of earlier batches it wrote again, each
    repeat moving the version by one. One that moved by more was written by someone else
    between the batches: its version stays behind, so the rollback keeps it."""
    again = Counter(i for i in ids if i is not None and i in versions and i not in created)
    for memory_id, times in again.items():
        if after.get(memory_id) == versions[memory_id] + times:
            versions[memory_id] = after[memory_id]
    for memory_id in created:
        if memory_id in after:
            versions[memory_id] = after[memory_id]


@attrs.frozen
class Undone:
    """What the rollback of an import did: ``added`` memories, ``left`` of them still stored
    (the store refused to delete them), ``claimed`` of them kept because another write landed
    in them since the import wrote them (the store answered that write with their id)."""

    added: int
    left: int
    claimed: int = 0
    #: What the backend answered when it stopped taking deletes (an outage, a full disk):
    #: the rest were not tried (each try waits out a timeout). None while it answered.
    stopped: str | None = None

    @property
    def unreachable(self) -> bool:
        return self.stopped is not None

    def describe(self) -> str:
        if not self.added:
            return "import stopped; it had added nothing"
        deleted = self.added - self.left - self.claimed
        added = f"the {counted(self.added, 'memory')} it had added"
        if not self.left and not self.claimed:
            return f"import stopped; {added} {_was(self.added)} deleted again"
        kept = (
            f"{self.claimed} {_was(self.claimed)} kept because another write landed in "
            f"{'it' if self.claimed == 1 else 'them'} meanwhile"
            if self.claimed
            else ""
        )
        if not self.left:
            return f"import stopped; of {added}, {deleted} {_was(deleted)} deleted again and {kept}"
        why = (
            "the store refused to delete them"
            if self.stopped is None
            else f"the store could not delete them: {self.stopped}"
        )
        return (
            f"import stopped; of {added}, {self.left} {'is' if self.left == 1 else 'are'} still "
            f"stored ({why}){', ' + kept if kept else ''} and "
            f"{deleted} {_was(deleted)} deleted again; running the import again is safe"
        )


def _was(count: int) -> str:
    return "was" if count == 1 else "were"


def take_back(
    service: MemoryService,
    added: Sequence[tuple[Scope, str]],
    versions: Mapping[str, int],
    links: Sequence[VersionLink] = (),
) -> Undone:
    """Delete what a stopped import added (scope, id), newest first, through the service (its
    tenant check applies); the caller holds Ctrl-C. Where the store tells claims, a batch at a
    time, each batch one transaction, and only a memory still at the version in ``versions``
    (:func:`restore_batches`): one another write landed in since is kept and counted, since
    that writer was told it had landed. Elsewhere each is deleted whatever landed in it.
    One already gone counts as deleted; what the store refuses to delete is left.

    ``links`` are those the import gives (:func:`version_links` of what it created and found
    present), written or not: an import links after its last batch. Only what they add is taken
    back (:meth:`~memcore.service.logs.Logs.unlink`), never a present memory's whole links as
    the import listed them, so what a dream or an edit linked since stays. First the present
    memories lose their links to the memories it added, so none names a memory deleted here;
    then those it kept for another writer (that writer found the history as the import left
    it, or as the file gives it, and was told it was there) get theirs again, both ways and
    without the memories it deleted."""
    mine = {memory_id for _, memory_id in added}
    present = [_only(link, mine) for link in links if link.memory_id not in mine]
    _amend(service, [link for link in present if _names(link)], undo=True)
    newest = list(reversed(added))
    outage = _Outage()
    if service.tells_claims and all(memory_id in versions for _, memory_id in newest):
        left = 0
        kept: set[str] = set()
        for start in range(0, len(newest), IMPORT_BATCH):
            part = newest[start : start + IMPORT_BATCH]
            try:
                kept.update(
                    service.forget_unclaimed(
                        [MemoryVersion(scope, mid, versions[mid]) for scope, mid in part]
                    )
                )
                outage.answered()
            except Unavailable as exc:
                if outage.down():  # the rest would wait out the same outage, batch by batch
                    rest = left + len(newest) - start
                    return Undone(len(added), rest, len(kept), exc.message)
                left += len(part)
            except MemcoreError:
                left += len(part)
        gone = mine - kept
        if kept:
            # What a kept memory the import linked says of one it deleted goes; the rest of
            # what the import gives is added where it is not (again, or not yet, there).
            stale = [_only(link, gone) for link in links if link.memory_id in kept]
            _amend(service, [link for link in stale if _names(link)], undo=True)
            again = [_without(link, gone) for link in links if link.memory_id not in gone]
            _amend(service, [link for link in again if _names(link)], undo=False)
        return Undone(len(added), left, len(kept))
    left = 0
    for done, (scope, memory_id) in enumerate(newest):
        try:
            service.switch_scope(scope)  # the scope it was written to, as the store keeps it
            service.forget(memory_id)
            outage.answered()
        except NotFound:
            outage.answered()
        except Unavailable as exc:
            if outage.down():
                rest = left + len(newest) - done
                return Undone(len(added), rest, stopped=exc.message)
            left += 1
        except MemcoreError:
            left += 1
    return Undone(len(added), left)


class _Outage:
    """Unavailable answers in a row during a rollback. At the second the backend is taken for
    down: each further delete would wait out the call's timeout and retries (minutes for a
    few hundred memories, with Ctrl-C held), so the rollback stops and says what is left; a
    rerun of the import is safe. One alone (a busy moment) is counted and passed over."""

    def __init__(self) -> None:
        self._misses = 0

    def answered(self) -> None:
        self._misses = 0

    def down(self) -> bool:
        self._misses += 1
        return self._misses >= 2


def _amend(service: MemoryService, links: Sequence[VersionLink], *, undo: bool) -> None:
    """Take ``links`` out of their memories' (``undo``) or add them. A failure is the store
    failing: what the rollback then deletes, or could not, is what its line reports."""
    if not links or not service.logs.keeps_history:
        return
    try:
        if undo:
            service.logs.unlink(links)
        else:
            service.logs.restore_links(links, adding=True)
    except MemcoreError:
        pass


def _names(link: VersionLink) -> bool:
    return link.superseded_by is not None or bool(link.supersedes)


def _only(link: VersionLink, ids: set[str]) -> VersionLink:
    """``link`` with only what names a memory of ``ids``."""
    by = link.superseded_by if link.superseded_by in ids else None
    return attrs.evolve(
        link,
        superseded_by=by,
        superseded_how=None if by is None else link.superseded_how,
        supersedes=tuple(i for i in link.supersedes if i in ids),
    )


def _without(link: VersionLink, ids: set[str]) -> VersionLink:
    """``link`` without what names a memory of ``ids``."""
    by = None if link.superseded_by in ids else link.superseded_by
    return attrs.evolve(
        link,
        superseded_by=by,
        superseded_how=None if by is None else link.superseded_how,
        supersedes=tuple(i for i in link.supersedes if i not in ids),
    )


def finished(added: int, messages: int) -> KeyboardInterrupt:
    """The interrupt to raise for an import that Ctrl-C reached in its last step (the message
    log, one transaction): it had finished by then. Nothing is taken back, since deleting
    the memories would leave the messages it logged: the line says what it kept."""
    logged = f" and {counted(messages, 'message')}" if messages else ""
    kept = "is" if added == 1 and not messages else "are"
    return KeyboardInterrupt(
        f"import finished before it could stop; the {counted(added, 'memory')}{logged} it "
        f"added {kept} kept"
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
