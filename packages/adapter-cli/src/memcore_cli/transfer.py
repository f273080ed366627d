"""Export and import of memories as JSON Lines (the records of :mod:`memcore_cli.records`).

Ids are kept when the backend can take them (the embedded store's bulk path, when its
``TextItem`` has an ``id``); otherwise the backend assigns new ids and the import reports the
old -> new map (``id_map`` in ``--json`` output). Nothing is written until
every line has been validated, so a bad file never leaves a half import.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

import attrs

from memcore import limits
from memcore.errors import InvalidInput, NotFound
from memcore.paging import every_item
from memcore.scope import Scope
from memcore.transfer import ImportRecord, export_record, line_error, parse_record
from memcore.values import Memory
from memcore_cli.output import Output
from memcore_cli.runtime import Runtime
from memcore_sqlite.file_modes import FILE_MODE

#: Records per store transaction and embedding call. Big enough that the embedder works in
#: full batches; small enough that progress moves and memory stays flat.
_BATCH = 256


def iter_memories(runtime: Runtime) -> Iterator[Memory]:
    service = runtime.service()
    return every_item(lambda token: service.profile(limit=limits.MAX_PAGE_LIMIT, next_token=token))


def export_memories(runtime: Runtime, output: Output, out_path: Path | None) -> int:
    if out_path is None:
        return _write_lines(runtime, output, sys.stdout)
    target = out_path.expanduser()
    try:
        fd, tmp = tempfile.mkstemp(
            prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or "."
        )
    except OSError as exc:
        raise InvalidInput(f"cannot write {out_path} ({exc.strerror})", field="out") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            if hasattr(os, "fchmod"):  # POSIX; Windows has no owner-only mode bits
                os.fchmod(fh.fileno(), FILE_MODE)
            count = _write_lines(runtime, output, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return count


def _write_lines(runtime: Runtime, output: Output, fh: TextIO) -> int:
    count = 0
    with output.progress("exporting") as advance:
        for memory in iter_memories(runtime):
            fh.write(json.dumps(export_record(memory), ensure_ascii=False, separators=(",", ":")))
            fh.write("\n")
            count += 1
            advance()
    return count


@attrs.define
class ImportReport:
    total: int = 0
    added: int = 0
    present: int = 0
    renamed: dict[str, str] = attrs.field(factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "added": self.added,
            "present": self.present,
            "id_map": dict(self.renamed),
        }


def read_records(
    path: Path, tenant: Scope, *, retarget: bool = False, lines: bool = False
) -> list[ImportRecord]:
    """Every record of the file, checked; ``lines``: each non-empty line is one memory's text,
    written to ``tenant`` (the current write scope)."""
    try:
        if str(path) == "-":
            text = sys.stdin.read().splitlines()
        else:
            text = path.expanduser().read_text(encoding="utf-8-sig").splitlines()
    except FileNotFoundError:
        raise InvalidInput(f"{path} does not exist", field="file") from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise InvalidInput(f"cannot read {path} ({reason})", field="file") from None
    numbered = [(i, raw) for i, raw in enumerate(text, start=1) if raw.strip()]
    if lines:
        return [_text_record(i, raw, tenant) for i, raw in numbered]
    return [parse_record(i, raw, tenant, retarget=retarget) for i, raw in numbered]


def _text_record(line_no: int, raw: str, scope: Scope) -> ImportRecord:
    text = raw.strip()
    try:
        limits.check_text(text)
    except InvalidInput as exc:
        raise line_error(line_no, exc.message, "text") from None
    return ImportRecord(line_no, None, text, scope, {}, None)


def _existing_ids(runtime: Runtime) -> set[str]:
    """Every memory id of the tenant (imports may target any agent or run in it)."""
    store = runtime.ready_store()
    pattern = runtime.settings.scope.scope.tenant_pattern()
    listing = every_item(
        lambda token: store.list_memories(
            runtime.store_name, pattern, limit=limits.MAX_PAGE_LIMIT, next_token=token
        )
    )
    return {m.id for m in listing}


def import_memories(
    runtime: Runtime, output: Output, path: Path, *, lines: bool = False
) -> ImportReport:
    """Import ``path``; records of another tenant go to the tenant that --app/--tenant name
    (and are refused when neither flag was given, so nothing lands in a tenant by accident)."""
    options = runtime.options
    retarget = options.tenant is not None or options.app is not None
    choice = runtime.settings.scope
    target = choice.write_scope() if lines else choice.scope
    records = read_records(path, target, retarget=retarget, lines=lines)
    report = ImportReport(total=len(records))
    store = runtime.ready_store()
    known = _existing_ids(runtime)
    bulk = _bulk_writer(store)
    with output.progress("importing", total=len(records)) as advance:
        pending: list[ImportRecord] = []
        for record in records:
            if record.id is not None and record.id in known and _holds(runtime, record):
                report.present += 1
                advance()
                continue
            pending.append(record)
        if bulk is not None:
            for start in range(0, len(pending), _BATCH):
                chunk = pending[start : start + _BATCH]
                upcoming = pending[start + _BATCH : start + 2 * _BATCH]
                ids = bulk(runtime.store_name, chunk, upcoming)
                for record, new_id in zip(chunk, ids):
                    _account(report, known, record, new_id)
                advance(len(chunk))
        else:
            service = runtime.service()
            for record in pending:
                service.switch_scope(record.scope)
                receipt = service.remember(record.text, metadata=dict(record.metadata), sync=True)
                new_id = receipt.memory_ids[0] if receipt.memory_ids else None
                _account(report, known, record, new_id)
                advance()
    return report


def _holds(runtime: Runtime, record: ImportRecord) -> bool:
    """True when the record's id is already in its scope with the same text."""
    assert record.id is not None
    try:
        found = runtime.ready_store().get_memory(runtime.store_name, record.scope, record.id)
    except NotFound:
        return False
    return found.text.strip() == record.text.strip()


def _account(
    report: ImportReport, known: set[str], record: ImportRecord, new_id: str | None
) -> None:
    if new_id is None or new_id in known:
        report.present += 1
    else:
        report.added += 1
        known.add(new_id)
    if record.id is not None and new_id is not None and new_id != record.id:
        report.renamed[record.id] = new_id


def _bulk_writer(store: Any) -> Any:
    """The embedded store's batch path: one transaction and one embedding batch per chunk,
    the next chunk embedding while this one is written.

    The original ids are kept (``TextItem.id``), so an export restores exactly.
    """
    add_many = getattr(store, "add_many", None)
    if add_many is None:
        return None
    from memcore_sqlite.store import TextItem

    def items(chunk: list[ImportRecord]) -> list[TextItem]:
        return [
            TextItem(
                scope=r.scope,
                text=r.text,
                metadata=dict(r.metadata),
                id=r.id,
                created_at=r.created_at,
            )
            for r in chunk
        ]

    def write(
        store_name: str, chunk: list[ImportRecord], upcoming: list[ImportRecord]
    ) -> list[str]:
        return list(add_many(store_name, items(chunk), ahead=items(upcoming)))

    return write
