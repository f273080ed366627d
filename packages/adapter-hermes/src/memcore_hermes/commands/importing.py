"""``hermes tablestore-mem import``: a JSON Lines file of either export into the user's tenant.

All or nothing, as ``memcore import``: every line is checked before anything is written
(another tenant's records are refused), and every id against the tenant the same way
(:func:`memcore.transfer.plan_import`): one that names another memory of it (another text,
agent or run) stops the import before anything is written. Should a write fail, or Ctrl-C stop the import, the
memories it added are deleted again and the one line that reports it says what was deleted
and what is left (:class:`memcore.transfer.Undone`). The writes run with Ctrl-C held and the
import stops between batches and before the message log, so an interrupt never falls between
a stored batch and the record of what it added, nor into the rollback; one during the log
(the last step) finds the import finished, and the interrupted line says it was kept. "Added" counts what this import created: a
text another writer stored meanwhile is present, and a rollback leaves it alone; so does it a
memory this import created that another write landed in since (a ``remember`` of the same
text, another import that wrote it, or found it under its id and claimed it, and counted it
present), where the store can tell (the local one).
``id_map`` maps a record's id to the one it has here when they differ. An id that only
another tenant holds is kept as a free one is (the local store's ids are unique per tenant),
so that an import cannot be used to ask whether another user's memory exists. The file's message log (the turns recall_neighbours
shows) is logged after the memories in one transaction, each message linked to its memory as
restored here; should that fail, the memories are taken back too. A store that keeps no log
(TableStore) leaves the messages out and counts them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from memcore.scope import Scope
from memcore.service import MemoryService
from memcore.transfer import (
    ImportRecord,
    MessageRecord,
    Undone,
    claim_present,
    finished,
    held_texts,
    history_kept,
    parse_line,
    plan_import,
    restore_batches,
    restore_log,
    stopped,
    take_back,
    version_links,
    with_named_successors,
)
from memcore.values import MemoryRecord, VersionLink
from memcore_hermes.commands.interrupts import held_interrupts

#: This command has no --tenant: it imports for the user it acts for.
_OTHER_USER_HINT = (
    "another user's memories are refused; to import them for that user, pass their "
    "--user-id and --platform"
)


def import_lines(
    service: MemoryService,
    raw_lines: list[str],
    memories: Iterable[MemoryRecord],
    *,
    retarget: bool = False,
) -> dict[str, Any]:
    """Import the file's lines into the service's tenant; ``memories`` lists what it holds.
    ``retarget`` moves another tenant's records into it (new ids), where the command refuses
    them. The answer: ``total``, ``added``, ``present``, ``superseded`` (versions a later one
    replaced: history, not written) and ``id_map`` (old id -> new id); with messages in the
    file, ``messages_added``, ``messages_present`` and ``messages_left_out``."""
    tenant = service.write_scope
    parsed = [
        parse_line(i, raw, tenant, retarget=retarget, hint=_OTHER_USER_HINT)
        for i, raw in enumerate(raw_lines, start=1)
        if raw.strip()
    ]
    records = with_named_successors([r for r in parsed if isinstance(r, ImportRecord)])
    messages = [r for r in parsed if isinstance(r, MessageRecord)]
    listed = list(memories) if records else []
    known = {m.id: m for m in listed}
    #: Where the store may store a text twice (TableStore): each text a scope holds -> its id.
    texts = held_texts(service, listed)
    # Every id checked against the tenant as ``memcore import`` checks it, nothing written yet.
    plan = plan_import(records, known, history_kept(service, records), texts)
    # What it counts present is claimed, so another import's rollback cannot delete it; one
    # such a rollback deleted first is written again, and counted as added.
    for gone in claim_present(service, plan):
        known.pop(gone, None)
    pending, present, superseded = plan.pending, plan.present, plan.superseded
    #: A file's memory id -> the id that memory has here (to link the log's messages).
    ids, id_map = plan.ids, plan.renamed
    logged = left_out = 0
    exact = service.restores_exactly
    # What this import created, in order, taken back if it stops.
    landed: list[tuple[Scope, str]] = []
    mine: set[str] = set()
    versions: dict[str, int] = {}  # each memory it created -> the version it left it at
    created: list[tuple[ImportRecord, str]] = []
    with held_interrupts() as held:
        try:
            # Ids and times as exported where the store keeps them (the local store).
            for written in restore_batches(service, pending, versions):
                for record, new_id, made in written:
                    # A text another writer stored first is present, not this import's to delete.
                    if new_id is None or new_id in known or new_id in mine or not made:
                        present += 1
                        was_there = True
                    else:
                        mine.add(new_id)
                        landed.append((record.scope, new_id))
                        created.append((record, new_id))
                        was_there = False
                    if new_id is not None and _said(record, new_id, was_there, exact, known):
                        assert record.id is not None
                        id_map[record.id] = new_id
                    source = record.id if record.source_id is None else record.source_id
                    if new_id is not None and source is not None:
                        ids[source] = new_id
                if held.interrupted:  # Ctrl-C, held until this batch was stored and counted
                    raise KeyboardInterrupt
            # Added to what each memory has now: a dream since the listing keeps its links.
            links = version_links(created, ids, plan.found)
            if links:
                service.logs.restore_links(links, adding=True)
            if held.interrupted:  # Ctrl-C during the links: what was added is taken back
                raise KeyboardInterrupt
            if messages and not service.logs.keeps_messages:
                left_out = len(messages)
            elif messages:
                logged = restore_log(service, messages, ids)
        except BaseException as exc:
            links = version_links(created, ids, plan.found)
            error = stopped(exc, undo_import(service, landed, versions, links))
            if error is exc:
                raise
            raise error from exc
        if held.interrupted:  # during the log, the last step: the import had finished
            raise finished(len(landed), logged)
    answer: dict[str, Any] = {
        "total": len(records),
        "added": len(landed),
        "present": present,
        "superseded": superseded,
        "id_map": id_map,
    }
    if messages:
        answer.update(
            messages_added=logged,
            messages_present=len(messages) - logged - left_out,
            messages_left_out=left_out,
        )
    return answer


def _said(
    record: ImportRecord, new_id: str, was_there: bool, exact: bool, known: Mapping[str, object]
) -> bool:
    """Whether ``id_map`` maps the record's id to ``new_id``. Where the store keeps free ids
    (``exact``), a record this import added keeps its id whatever other tenants hold; a new
    one is not said (unless this tenant holds the old one), so the answer is the one a free
    id gets."""
    if record.id is None or new_id == record.id:
        return False
    return was_there or not exact or record.id in known


def undo_import(
    service: MemoryService,
    landed: list[tuple[Scope, str]],
    versions: Mapping[str, int],
    links: Sequence[VersionLink] = (),
) -> Undone:
    """Delete what a stopped import added (scope, id), newest first, with Ctrl-C held until
    done, through the service (its tenant check applies). One already gone (another writer
    deleted it) counts as deleted; one another write landed in since is kept, where the store
    tells (``versions``: the version this import left each at); one the store refuses to
    delete is counted as left. Of the links the import gives (``links``, written or not yet)
    only what they add is taken back, and those of the memories it kept are given again
    (:func:`memcore.transfer.take_back`)."""
    with held_interrupts():
        return take_back(service, landed, versions, links)
