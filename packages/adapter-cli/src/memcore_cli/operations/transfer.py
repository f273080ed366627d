"""Export and import of memories as JSON Lines (the records of :mod:`memcore_cli.output.records`).

Ids and times are kept when the backend can take them (``MemoryService.restore`` on the
embedded store); otherwise the backend assigns new ids and the import reports the old -> new
map (``id_map`` in ``--json`` output).

All or nothing: every line is validated, and every id checked against the tenant, before
anything is written; a record whose id names a different memory of this tenant (another text
or scope) stops the import there. Should a write still fail (the disk, the embedder, the
network), or Ctrl-C stop it, the memories this import added are deleted again before the
error is reported, in the one line that reports it (:mod:`memcore_cli.operations.rollback`),
except one another write landed in meanwhile (the embedded store tells): that writer was told
it had landed, so it is kept and counted.
The message log of the file (the turns shown around a hit) is logged after the last batch, in
one transaction, each message linked to its memory as restored here; should that fail, the
memories are deleted again as well. A store that keeps no log leaves the messages out.
The writes run with Ctrl-C held (:func:`memcore_cli.output.interrupts.held_interrupts`) and the
import stops between batches and before the message log, so an interrupt never falls between
a stored batch and the record of what it added, nor into the rollback. One that comes while
the log is written (one transaction, the last step) finds the import finished: it is kept,
and the interrupted line (exit 130) says so (:func:`memcore.transfer.finished`).
"Added" counts what this process created: a text another writer stored first is present.
A record present under its own id is claimed, a write that moves only its memory's version
(the embedded store), so that another import still under way, stopped later, keeps it.
An id that this tenant does not hold but another tenant does is never an error: the answer
is the same as for a free id (the embedded store keeps it, ids being unique per tenant), so
an import cannot be used to ask whether another tenant's memory exists.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

import attrs

from memcore import limits
from memcore.errors import InvalidInput, PermissionDenied
from memcore.paging import every_item
from memcore.scope import Scope
from memcore.service import restorable_text
from memcore.transfer import (
    ImportRecord,
    MessageRecord,
    claim_present,
    export_lines,
    finished,
    held_texts,
    history_kept,
    line_error,
    parse_line,
    plan_import,
    restore_batches,
    restore_log,
    stopped,
    version_links,
    with_named_successors,
)
from memcore.values import MemoryRecord
from memcore_cli.operations.rollback import undo_import
from memcore_cli.output.interrupts import held_interrupts
from memcore_cli.output.render import Output
from memcore_cli.parsing.bounded import bounded_lines
from memcore_cli.settings.home import home_expanded
from memcore_cli.wiring.runtime import Runtime
from memcore_sqlite.storage.out_file import is_stdout, open_out

#: Whether ``--out`` is where stdout goes (the summary then goes to stderr).
onto_stdout = is_stdout


def export_memories(runtime: Runtime, output: Output, out_path: Path | None) -> dict[str, int]:
    """Write the export; how many ``memories`` and ``messages`` (of the log) it holds."""
    if out_path is None:
        return _write_lines(runtime, output, sys.stdout)
    with open_out(out_path) as fh:
        return _write_lines(runtime, output, fh)


def _write_lines(runtime: Runtime, output: Output, fh: TextIO) -> dict[str, int]:
    counts: dict[str, int] = {}
    with output.progress("exporting") as advance:
        # dump_line escapes what a terminal acts on, as --json output does.
        for line in export_lines(runtime.service(create=False), counts):
            fh.write(line)
            advance()
    return counts


@attrs.define
class ImportReport:
    total: int = 0
    added: int = 0
    present: int = 0
    #: Records of versions a later one replaced that were not written (see ``superseded_by``):
    #: all of them from an older file or into TableStore, else those whose successor is not in
    #: the file.
    superseded: int = 0
    renamed: dict[str, str] = attrs.field(factory=dict)
    #: The backend kept every free id (the embedded store): an id changed only because the
    #: record moved to another tenant or its text was stored already.
    keeps_ids: bool = False
    #: Lines of the message log in the file, and what became of them.
    messages: int = 0
    messages_added: int = 0
    messages_left_out: int = 0
    #: A file's memory id -> the id that memory has here (to link the log's messages).
    ids: dict[str, str] = attrs.field(factory=dict)
    #: The records this import created, with their ids (to give them their version links).
    created: list[tuple[ImportRecord, str]] = attrs.field(factory=list)

    def as_dict(self) -> dict[str, Any]:
        answer: dict[str, Any] = {
            "total": self.total,
            "added": self.added,
            "present": self.present,
            "superseded": self.superseded,
            "id_map": dict(self.renamed),
        }
        if self.messages:
            answer.update(self.message_counts())
        return answer

    def message_counts(self) -> dict[str, int]:
        """The message log's lines: ``added``, ``present`` (logged already), ``left_out``
        (the store keeps no log)."""
        present = self.messages - self.messages_added - self.messages_left_out
        return {
            "messages_added": self.messages_added,
            "messages_present": present,
            "messages_left_out": self.messages_left_out,
        }


def read_records(
    path: Path, tenant: Scope, *, retarget: bool = False, lines: bool = False
) -> list[ImportRecord | MessageRecord]:
    """Every record of the file, checked; ``lines``: each non-empty line is one memory's text,
    written to ``tenant`` (the current write scope)."""
    if str(path) == "-" and sys.stdin is None:  # started with stdin closed (`<&-`)
        raise InvalidInput("cannot read '-': stdin is closed", field="file")
    expanded = home_expanded(path)
    if expanded is None:  # "~nobody/x": no such user's home
        raise InvalidInput(f"{path} names a home folder this system does not know", field="file")
    if lines:
        instead = "give a text file, one memory a line"
        numbered = _plain_lines(_numbered(path, expanded, instead))
        # A line that shows nothing (spaces, a zero-width space) is skipped, not refused.
        return [_text_record(i, raw, tenant) for i, raw in numbered if not limits.is_blank(raw)]
    instead = "give a file written by 'memcore export'"
    return [
        parse_line(i, raw, tenant, retarget=retarget)
        for i, raw in _numbered(path, expanded, instead)
        if raw.strip()
    ]


def _numbered(path: Path, expanded: Path, instead: str) -> Iterator[tuple[int, str]]:
    """The file's lines, numbered, read a line at a time within the bounds of
    :func:`memcore_cli.parsing.bounded.bounded_lines` (``/dev/zero`` or an endless pipe is
    refused, not read until memory runs out)."""
    if str(path) == "-":
        stream = getattr(sys.stdin, "buffer", None)
        if stream is None:  # a text stream without bytes under it (a test's): its own lines
            yield from bounded_lines(_encoded(sys.stdin), path, field="file", instead=instead)
            return
        yield from bounded_lines(stream.readline, path, field="file", instead=instead)
        return
    try:
        with expanded.open("rb") as fh:
            yield from bounded_lines(fh.readline, path, field="file", instead=instead)
    except FileNotFoundError:
        raise InvalidInput(f"{path} does not exist", field="file") from None
    except PermissionError:  # exit 4, as an unreadable config: not a malformed file
        raise PermissionDenied(f"cannot read {path} (permission denied)", field="file") from None
    except OSError as exc:
        raise InvalidInput(f"cannot read {path} ({exc.strerror})", field="file") from None


def _encoded(stream: TextIO) -> Callable[[int], bytes]:
    return lambda most: stream.readline(most).encode("utf-8", "surrogateescape")


def _plain_lines(numbered: Iterator[tuple[int, str]]) -> Iterator[tuple[int, str]]:
    """A text file's lines as ``str.splitlines`` breaks them (a form feed, U+2028 and the like
    end a line too), numbered anew."""
    line_no = 0
    for _, line in numbered:
        for part in (line + "\n").splitlines():
            line_no += 1
            yield line_no, part


def _text_record(line_no: int, raw: str, scope: Scope) -> ImportRecord:
    try:
        text = restorable_text(raw.strip())
    except InvalidInput as exc:
        raise line_error(line_no, exc.message, "text") from None
    return ImportRecord(line_no, None, text, scope, {}, None)


def _existing(runtime: Runtime) -> dict[str, MemoryRecord]:
    """Every memory of the tenant by id (imports may target any agent or run in it)."""
    store = runtime.ready_store()
    pattern = runtime.settings.scope.scope.tenant_pattern()
    listing = every_item(
        lambda token: store.list_memories(
            runtime.store_name, pattern, limit=limits.MAX_PAGE_LIMIT, next_token=token
        )
    )
    return {m.id: m for m in listing}


def import_memories(
    runtime: Runtime, output: Output, path: Path, *, lines: bool = False
) -> ImportReport:
    """Import ``path``; records of another tenant go to the tenant that --app/--tenant name
    (and are refused when neither flag was given, so nothing lands in a tenant by accident)."""
    options = runtime.options
    retarget = options.tenant is not None or options.app is not None
    choice = runtime.settings.scope
    target = choice.write_scope() if lines else choice.scope
    parsed = read_records(path, target, retarget=retarget, lines=lines)
    records = with_named_successors([r for r in parsed if isinstance(r, ImportRecord)])
    messages = [r for r in parsed if isinstance(r, MessageRecord)]
    report = ImportReport(total=len(records), messages=len(messages))
    runtime.ready_store()
    existing = _existing(runtime)
    known = set(existing)
    service = runtime.service()
    texts = held_texts(service, existing.values())
    plan = plan_import(records, existing, history_kept(service, records), texts)
    # What it counts present is claimed, so another import's rollback cannot delete it; one
    # such a rollback deleted first is written again, and counted as added.
    known -= claim_present(service, plan)
    pending = plan.pending
    report.present, report.superseded = plan.present, plan.superseded
    report.ids.update(plan.ids)
    report.renamed.update(plan.renamed)
    exact = report.keeps_ids = service.restores_exactly
    added: list[tuple[Scope, str]] = []
    versions: dict[str, int] = {}  # each added memory -> the version this import left it at
    with output.progress("importing", total=len(records)) as advance, held_interrupts() as held:
        advance(report.present + report.superseded)
        try:
            for written in restore_batches(service, pending, versions):
                for record, new_id, made in written:
                    _account(report, known, record, new_id, added, made=made, keeps_ids=exact)
                advance(len(written))
                if held.interrupted:  # Ctrl-C, held until this batch was stored and counted
                    raise KeyboardInterrupt
            # Added to what each memory has now: a dream since the listing keeps its links.
            links = version_links(report.created, report.ids, plan.found)
            if links:
                service.logs.restore_links(links, adding=True)
            if held.interrupted:  # Ctrl-C during the links: what was added is taken back
                raise KeyboardInterrupt
            if messages and not service.logs.keeps_messages:
                report.messages_left_out = len(messages)
            elif messages:
                report.messages_added = restore_log(service, messages, report.ids)
        except BaseException as exc:
            links = version_links(report.created, report.ids, plan.found)
            error = stopped(exc, undo_import(runtime, added, versions, links))
            if error is exc:
                raise
            raise error from exc
        if held.interrupted:  # during the log, the last step: the import had finished
            raise finished(report.added, report.messages_added)
    return report


def _account(
    report: ImportReport,
    known: set[str],
    record: ImportRecord,
    new_id: str | None,
    added: list[tuple[Scope, str]],
    *,
    made: bool,
    keeps_ids: bool,
) -> None:
    """Count one written record. ``made``: this import created ``new_id`` (a text already
    stored, by this import or by another writer meanwhile, answers with its memory's id).
    ``keeps_ids``: the backend keeps every id its tenant does not hold (whatever other
    tenants hold), so an added record under another id is not reported: the answer stays
    the one a free id gets. A record moved to another tenant is always reported under the id
    it had."""
    if new_id is None or new_id in known or not made:
        report.present += 1
        present = True
    else:
        report.added += 1
        known.add(new_id)
        added.append((record.scope, new_id))
        report.created.append((record, new_id))
        present = False
    if new_id is None:
        return
    source = record.id if record.source_id is None else record.source_id
    if source is not None:
        report.ids[source] = new_id
    if record.id is not None and new_id != record.id and (present or not keeps_ids):
        report.renamed[record.id] = new_id
    elif record.source_id is not None and new_id != record.source_id:
        report.renamed[record.source_id] = new_id
