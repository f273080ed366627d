"""What an import reads: each line of a file checked against the limits, as a memory record or
a line of the message log, in the tenant it goes to; nothing is written from a bad line."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from memcore import limits
from memcore.errors import InvalidInput
from memcore.scope import Scope
from memcore.service import check_user_metadata, restorable_text
from memcore.transfer.records import EXPORT_FORMAT
from memcore.values import SUPERSESSION_KINDS, Message, TextItem
from memcore.wording import shown


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
        raise line_error(line_no, f"unknown record kind {shown(kind)}", "kind")
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


def with_named_successors(records: Sequence[ImportRecord]) -> list[ImportRecord]:
    """``records``, each that a record of the file names in ``supersedes`` but that names no
    successor itself marked replaced by it. An export reads page by page while others may
    write: one taken while a dream pass merged two memories held the older as current (read
    before the merge) and the newer naming it as replaced (read after), and the restore
    brought the merged-away memory back as current. The links agree again as the store had
    them; ``superseded_how`` stays unknown."""
    named: dict[str, str] = {}
    for record in records:
        if record.file_id is not None:
            for older in record.supersedes:
                named.setdefault(older, record.file_id)
    out = []
    for record in records:
        successor = named.get(record.file_id) if record.file_id is not None else None
        if record.superseded_by is None and successor not in (None, record.file_id):
            record = attrs.evolve(record, superseded=True, superseded_by=successor)
        out.append(record)
    return out
