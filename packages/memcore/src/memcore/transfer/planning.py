"""What an import writes, decided before anything is: every record's id checked against what
the tenant holds, the same way for both command lines, so a file one refuses the other does
not half restore."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from memcore.errors import Conflict
from memcore.scope import Scope
from memcore.transfer.parsing import ImportRecord
from memcore.values import MemoryRecord


@attrs.define
class Plan:
    """The records to write, and what the import answers for the others: ``present`` (here
    already), ``superseded`` (replaced versions left out), ``ids`` (a file's memory id -> the
    id it has here) and ``renamed`` (the ids that differ, for the answer's ``id_map``).
    ``found``: each record present under its own id, with the memory that holds it (whose
    links the import extends, :func:`memcore.transfer.version_links`)."""

    pending: list[ImportRecord] = attrs.field(factory=list)
    present: int = 0
    superseded: int = 0
    ids: dict[str, str] = attrs.field(factory=dict)
    renamed: dict[str, str] = attrs.field(factory=dict)
    found: list[tuple[ImportRecord, MemoryRecord]] = attrs.field(factory=list)


def plan_import(
    records: Sequence[ImportRecord],
    existing: Mapping[str, MemoryRecord],
    kept: set[int],
    held: Mapping[tuple[Scope, str], str],
) -> Plan:
    """Check every id against the tenant (``existing``: its memories by id), nothing written.

    A record whose id is already in its scope with the same text is present; one whose id
    names a different memory of this tenant (another text, or another agent or run), or
    that repeats an earlier record's id with another text or scope, stops the whole import
    with :class:`Conflict`: the file and the store disagree about what the id is, and
    neither counting it present (its own scope would get nothing) nor writing it under a new
    id (a second restore of the backup would not know it) is what was asked. A replaced
    version is written when its line is in ``kept`` (:func:`memcore.transfer.history_kept`).
    Where the store does not restore exactly, a record whose text its scope holds (``held``,
    :func:`memcore.transfer.held_texts`) is present under that memory's id.
    """
    plan = Plan()
    first: dict[str, ImportRecord] = {}
    for record in records:
        if record.superseded and record.line not in kept:
            plan.superseded += 1
            continue
        if record.id is None:
            if not _held(plan, record, held):
                plan.pending.append(record)
            continue
        if record.id in existing:
            if not _holds(existing[record.id], record):
                raise Conflict(
                    f"line {record.line}: id {record.id!r} already names another memory of "
                    "this tenant (its text or scope differs); nothing was imported",
                    field="id",
                    retryable=False,
                )
            plan.present += 1
            plan.ids[record.id] = record.id
            plan.found.append((record, existing[record.id]))
            continue
        earlier = first.setdefault(record.id, record)
        if earlier is not record and (earlier.scope, earlier.text.strip()) != (
            record.scope,
            record.text.strip(),
        ):
            raise Conflict(
                f"line {record.line}: id {record.id!r} was already given to line "
                f"{earlier.line} with another text or scope; nothing was imported",
                field="id",
                retryable=False,
            )
        if not _held(plan, record, held):
            plan.pending.append(record)
    return plan


def _held(plan: Plan, record: ImportRecord, held: Mapping[tuple[Scope, str], str]) -> bool:
    """Count ``record`` present when its scope holds its text already (``held``), reporting
    the id it has here as a write of it would have."""
    found = held.get((record.scope, record.text.strip()))
    if found is None:
        return False
    plan.present += 1
    if record.file_id is not None:
        plan.ids[record.file_id] = found
        if found != record.file_id:
            plan.renamed[record.file_id] = found
    return True


def _holds(found: MemoryRecord, record: ImportRecord) -> bool:
    """True when ``found`` (the tenant's memory under the record's id, from the listing the
    import starts with) is in the record's scope with the same text."""
    return found.scope == record.scope and found.text.strip() == record.text.strip()
