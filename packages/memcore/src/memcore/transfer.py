"""The JSON shape of a memory, and the JSON Lines records of export and import.

One format for every command line (``memcore export`` and ``hermes tablestore-mem export``
write it, both imports read it). Field names are a public contract for scripts: a memory is
``id, text, score, scope{app_id,tenant_id,agent_id,run_id}, metadata, created_at`` plus the
optional service fields; timestamps are seconds since the epoch, as the store keeps them.
``said_at`` (when the text was last said, the day recall shows) is exported and imported, so a
restored memory keeps the date it is recalled with.

Each exported record says its ``format`` (:data:`EXPORT_FORMAT`). A record of format 2 is
restored whole where the store can keep it (the embedded store): ``updated_at``, ``unit_type``
and ``version`` too. A record without one was written by an older release and is imported
exactly as it always was (the store stamps the write's time, version 1, kind ``text``), and a
record of a newer format is refused with its line, so nothing is half understood.

After the memories an export holds the message log in reach (``kind: message``, format 2: the
turns a search shows around a hit), on a store that keeps one (:class:`~memcore.ports.
MessageLog`). An import logs them after the memories, each linked to the memory it became as
restored here, in one transaction; a store that keeps no log leaves them out and counts them.
A release before format 2 reads such a line as a memory without a text and refuses the file
with its line number, writing nothing.

A version a dream replaced is exported with ``superseded_by`` (and ``superseded_how``; what a
memory replaced is its ``supersedes``). On a store that keeps that history (the embedded
store) an import of format 2 restores such a version with its links, so the store recalls and
ranks as the original did (an ``updated`` fact still answers right after its successor, and
the replaced versions weigh in the word statistics as they did there); elsewhere, or from an
older file, or when its successor is not in the file, it is left out and counted.

Parsing checks every field against the limits, so nothing is written from a bad line.
An import stopped midway is undone by its command line; :class:`Undone` and :func:`stopped`
say what that did, in the one line both command lines report it with.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import attrs

from memcore import limits
from memcore.errors import InvalidInput, MemcoreError
from memcore.scope import Scope
from memcore.service import MemoryService, check_user_metadata, restorable_text
from memcore.values import (
    SUPERSESSION_KINDS,
    LoggedMessage,
    MemoryRecord,
    Message,
    TextItem,
    VersionLink,
)

#: What ``json.dumps(..., ensure_ascii=False)`` leaves raw and a reader or a terminal acts on,
#: written escaped (only inside JSON strings, where the escape means the same character):
#: line breaks that str.splitlines() and other readers split at (U+0085, U+2028, U+2029), DEL
#: and the C1 controls (0x9b starts an escape sequence on many terminals), and the bidi marks,
#: overrides and isolates that make a line read other than it holds.
_TERMINAL_CONTROLS = (
    *range(0x7F, 0xA0),
    0x061C,
    0x200E,
    0x200F,
    *range(0x202A, 0x202F),
    *range(0x2066, 0x206A),
    0x2028,
    0x2029,
)
_SEPARATORS = str.maketrans({chr(c): f"\\u{c:04x}" for c in _TERMINAL_CONTROLS})


def escape_json(document: str) -> str:
    """A JSON document written with ``ensure_ascii=False``, the same data with nothing a line
    reader or a terminal acts on: stored text may come from an untrusted chat."""
    return document.translate(_SEPARATORS)


def dump_line(record: Mapping[str, Any]) -> str:
    """One JSON Lines record, newline included, that every line reader splits where we do."""
    return escape_json(json.dumps(record, ensure_ascii=False, separators=(",", ":"))) + "\n"


def split_lines(text: str) -> list[str]:
    """The lines of a JSON Lines file: broken at "\\n" only, since a text may hold U+0085 or
    U+2028, which ``str.splitlines`` would take as line breaks inside a record."""
    return text.split("\n")


#: The format export records are written in; an import reads every format up to it. 1 (records
#: without a ``format``): id, text, scope, metadata, created_at and said_at are restored;
#: 2: also updated_at, unit_type and version, the message log, and the versions a dream
#: replaced with their links.
EXPORT_FORMAT = 2


def memory_record(memory: MemoryRecord, score: float | None = None) -> dict[str, Any]:
    return {
        "id": memory.id,
        "text": memory.text,
        "score": score,
        "scope": memory.scope.as_dict(),
        "metadata": dict(memory.metadata),
        "created_at": memory.created_at,
        "updated_at": memory.updated_at,
        "unit_type": memory.unit_type,
        "salience": memory.salience,
        "version": memory.version,
        "said_at": memory.said_at,
        # Set on a version a later one replaced (a dream's merge or update): history, which an
        # import leaves out, so a restore recalls what the store recalled, not the old fact.
        "superseded_by": memory.superseded_by,
    }


def message_record(logged: LoggedMessage) -> dict[str, Any]:
    """One exported line of the message log, after the memories (``memory_id``: the memory
    the message became, as the memory records of the same file name it)."""
    message = logged.message
    assert message.scope is not None
    return {
        "format": EXPORT_FORMAT,
        "kind": "message",
        "id": message.id,
        "role": message.role,
        "content": message.content,
        "scope": message.scope.as_dict(),
        "metadata": dict(message.metadata),
        "timestamp": message.timestamp,
        "memory_id": logged.memory_id,
    }


def export_lines(service: MemoryService, counts: dict[str, int]) -> Iterator[str]:
    """The lines of an export of what ``service`` reaches: its memories, then its message log
    (where the store keeps one); ``counts`` holds how many of each were written so far."""
    counts.setdefault("memories", 0)
    counts.setdefault("messages", 0)
    for memory in service.every_memory():
        yield dump_line(export_record(memory))
        counts["memories"] += 1
    for logged in service.every_logged_message():
        yield dump_line(message_record(logged))
        counts["messages"] += 1


def export_record(memory: MemoryRecord) -> dict[str, Any]:
    """One exported line: the memory's record without a score, in :data:`EXPORT_FORMAT`, with
    its supersession links (how it was replaced, and what it replaced)."""
    record = memory_record(memory)
    record.pop("score")
    how = memory.extras.get("superseded_how") if memory.superseded_by else None
    return {
        "format": EXPORT_FORMAT,
        **record,
        "superseded_how": how if isinstance(how, str) else None,
        "supersedes": list(memory.supersedes),
    }


@attrs.frozen
class ImportRecord:
    line: int
    id: str | None
    text: str
    scope: Scope
    metadata: Mapping[str, str]
    created_at: float | None
    said_at: float | None = None
    #: The id the file gave, when it is not written (the record moved to another tenant):
    #: the import reports what it became.
    source_id: str | None = None
    #: A version a later one replaced (``superseded_by`` in the file): not written, counted.
    superseded: bool = False
    #: Restored from a record of format 2 or later; None (an older record): as a new write.
    updated_at: float | None = None
    unit_type: str | None = None
    version: int | None = None
    #: The record's format, and its links (the file's ids): what replaced it and how, and
    #: what it replaced.
    fmt: int = 1
    superseded_by: str | None = None
    superseded_how: str | None = None
    supersedes: tuple[str, ...] = ()

    @property
    def file_id(self) -> str | None:
        """The id the file gives the record (before a move into another tenant)."""
        return self.id if self.source_id is None else self.source_id

    def item(self) -> TextItem:
        """The record as ``MemoryService.restore`` writes it: scope, id and times as exported."""
        return TextItem(
            scope=self.scope,
            text=self.text,
            metadata=dict(self.metadata),
            id=self.id,
            created_at=self.created_at,
            said_at=self.said_at,
            updated_at=self.updated_at,
            unit_type=self.unit_type,
            version=self.version,
        )


def line_error(line: int, message: str, field: str) -> InvalidInput:
    """An error that names the line of the file it is about."""
    return InvalidInput(f"line {line}: {message}", field=field)


#: How a record of another tenant can be imported, said by the ``memcore`` CLI.
OTHER_TENANT_HINT = "pass --tenant, and --app if it differs, to import into a tenant you name"


@attrs.frozen
class MessageRecord:
    """A line of the message log: the message (in the scope it goes to) and the id the file
    gives the memory it became, which the import resolves to that memory's id here."""

    line: int
    message: Message
    memory_id: str | None


def _decode(line_no: int, raw: str) -> dict[str, Any]:
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise line_error(line_no, f"not valid JSON ({exc.msg})", "line") from None
    except RecursionError:  # a line of thousands of '[': the decoder's stack, not ours
        raise line_error(line_no, "not valid JSON (nested too deeply)", "line") from None
    if not isinstance(data, dict):
        raise line_error(line_no, "a record must be a JSON object", "line")
    return data


def parse_line(
    line_no: int, raw: str, tenant: Scope, *, retarget: bool, hint: str = OTHER_TENANT_HINT
) -> ImportRecord | MessageRecord:
    """One line of an export: a memory, or (``kind: message``) a line of the message log. A
    line without a ``format`` is a memory, read exactly as releases before format 2 read it."""
    data = _decode(line_no, raw)
    kind = data.get("kind") if record_format(line_no, data) >= 2 else None
    if kind == "message":
        return _message(line_no, data, tenant, retarget=retarget, hint=hint)
    if kind is not None and kind != "memory":
        raise line_error(line_no, f"unknown record kind {kind!r}", "kind")
    return _memory(line_no, data, tenant, retarget=retarget, hint=hint)


def parse_record(
    line_no: int, raw: str, tenant: Scope, *, retarget: bool, hint: str = OTHER_TENANT_HINT
) -> ImportRecord:
    """One line of an export as a memory record for ``tenant``; ``hint`` ends the refusal of
    a record of another tenant (the options of the command that reads the file)."""
    return _memory(line_no, _decode(line_no, raw), tenant, retarget=retarget, hint=hint)


def _target(
    line_no: int, scope: Scope, tenant: Scope, *, retarget: bool, hint: str
) -> Scope | None:
    """Where a record of ``scope`` goes: None when it is in ``tenant`` already, the same agent
    and run in ``tenant`` when ``retarget`` moves it there; otherwise it is refused."""
    if tenant.tenant_pattern().matches(scope):
        return None
    if retarget:
        # --app/--tenant name the target: the record keeps its agent and run, in that tenant.
        return Scope(tenant.app_id, tenant.tenant_id, scope.agent_id, scope.run_id)
    raise line_error(
        line_no,
        f"scope {scope} is outside the current tenant {tenant.app_id}/{tenant.tenant_id} ({hint})",
        "scope",
    )


def _scope(data: Mapping[str, Any]) -> Scope:
    raw_scope = data.get("scope")
    if not isinstance(raw_scope, dict):
        raise InvalidInput(
            "scope must be an object of app_id, tenant_id, agent_id, run_id", field="scope"
        )
    return Scope.from_mapping(raw_scope)


def _message(
    line_no: int, data: Mapping[str, Any], tenant: Scope, *, retarget: bool, hint: str
) -> MessageRecord:
    if record_format(line_no, data) < 2:
        raise line_error(line_no, "a message record must say format 2 or later", "format")
    try:
        scope = _scope(data)
        message_id, memory_id = data.get("id"), data.get("memory_id")
        if message_id is not None:
            limits.check_id(message_id, field="id")
        if memory_id is not None:
            limits.check_id(memory_id, field="memory_id")
        metadata = data.get("metadata")
        if not isinstance(metadata, (dict, type(None))):
            raise InvalidInput("metadata must be an object of strings", field="metadata")
        message = limits.check_logged_message(
            Message(
                role=data.get("role"),  # type: ignore[arg-type]  # checked just below
                content=data.get("content"),  # type: ignore[arg-type]
                id=message_id,
                timestamp=data.get("timestamp"),
                metadata=metadata or {},
            ),
            field="message",
        )
    except InvalidInput as exc:
        message_text = exc.message.removeprefix("message.")
        field = (exc.field or "line").removeprefix("message.")
        raise line_error(line_no, message_text, field) from None
    moved = _target(line_no, scope, tenant, retarget=retarget, hint=hint)
    return MessageRecord(line_no, attrs.evolve(message, scope=moved or scope), memory_id)


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


def _memory(
    line_no: int, data: Mapping[str, Any], tenant: Scope, *, retarget: bool, hint: str
) -> ImportRecord:
    text = data.get("text")
    fmt = record_format(line_no, data)
    try:
        text = restorable_text(text)
        meta = check_user_metadata(data.get("metadata"), scope_source="the record's scope")
        scope = _scope(data)
        memory_id = data.get("id")
        if memory_id is not None:
            limits.check_id(memory_id)
        created_at = limits.check_stored_time(data.get("created_at"), field="created_at")
        said_at = limits.check_stored_time(data.get("said_at"), field="said_at")
        # Written from format 2 on (before, the store stamped its own), but a file holding an
        # impossible one is damaged: refused like the other times rather than half trusted.
        updated_at = limits.check_stored_time(data.get("updated_at"), field="updated_at")
        unit_type = version = None
        if fmt >= 2:
            unit_type = limits.check_unit_type(data.get("unit_type"))
            version = limits.check_version(data.get("version"))
        else:
            updated_at = None
        superseded_by = data.get("superseded_by")
        if superseded_by is not None:
            limits.check_id(superseded_by, field="superseded_by")
        how, supersedes = _links(data, superseded_by) if fmt >= 2 else (None, ())
    except InvalidInput as exc:
        raise line_error(line_no, exc.message, exc.field or "line") from None
    source_id: str | None = None
    moved = _target(line_no, scope, tenant, retarget=retarget, hint=hint)
    if moved is not None:
        # Under a new id: its old one may still be in use where it came from.
        scope, source_id, memory_id = moved, memory_id, None
    assert isinstance(text, str)
    return ImportRecord(
        line_no,
        memory_id,
        text,
        scope,
        meta,
        created_at,
        said_at,
        source_id,
        superseded=superseded_by is not None,
        updated_at=updated_at,
        unit_type=unit_type,
        version=version,
        fmt=fmt,
        superseded_by=superseded_by,
        superseded_how=how,
        supersedes=supersedes,
    )


def _links(
    data: Mapping[str, Any], superseded_by: str | None
) -> tuple[str | None, tuple[str, ...]]:
    """A record's ``superseded_how`` (with a ``superseded_by`` only) and ``supersedes``."""
    how = data.get("superseded_how")
    if how is not None and (superseded_by is None or how not in SUPERSESSION_KINDS):
        raise InvalidInput(
            f"superseded_how must be one of {list(SUPERSESSION_KINDS)}, with superseded_by",
            field="superseded_how",
        )
    raw = data.get("supersedes")
    if raw is None:
        return how, ()
    if not isinstance(raw, list):
        raise InvalidInput("supersedes must be a list of ids", field="supersedes")
    return how, tuple(limits.check_id(i, field="supersedes") for i in raw)


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


def record_format(line_no: int, data: Mapping[str, Any]) -> int:
    """The ``format`` a record says it has: 1 when it says none (an older release wrote it);
    one newer than this release reads is refused, so nothing of it is half understood."""
    fmt = data.get("format", 1)
    if isinstance(fmt, bool) or not isinstance(fmt, int) or fmt < 1:
        raise line_error(line_no, "format must be a whole number from 1", "format")
    if fmt > EXPORT_FORMAT:
        raise line_error(
            line_no,
            f"record format {fmt} is newer than this memcore reads (up to {EXPORT_FORMAT}); "
            "upgrade memcore to import this file",
            "format",
        )
    return fmt


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
    batch = IMPORT_BATCH
    for start in range(0, len(pending), batch):
        chunk = pending[start : start + batch]
        ahead = pending[start + batch : start + 2 * batch]
        created: set[str] = set()
        try:
            ids = service.restore(
                [r.item() for r in chunk], ahead=[r.item() for r in ahead], created=created
            )
        except MemcoreError as exc:
            exc.message = f"line {chunk[0].line}: {exc.message}"
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
