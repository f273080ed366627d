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
older file, or when its successor is not in the file, it is left out and counted. A record
a successor names in ``supersedes`` is taken as replaced by it even when its own line names
no successor (:func:`with_named_successors`: an export read across a dream pass).

Parsing checks every field against the limits, so nothing is written from a bad line.
An import stopped midway is undone by its command line through :func:`take_back`, which keeps
a memory another write landed in meanwhile (where the store can tell); :class:`Undone` and
:func:`stopped` say what that did, in the one line both command lines report it with. A
record an import counts present under its own id is claimed there (:func:`claim_present`), a
write that moves nothing but the memory's version, so another import's rollback keeps it too.
"""

from memcore.transfer.lines import dump_line, escape_json, split_lines
from memcore.transfer.parsing import (
    OTHER_TENANT_HINT,
    ImportRecord,
    MessageRecord,
    line_error,
    parse_line,
    parse_record,
    record_format,
    with_named_successors,
)
from memcore.transfer.planning import Plan, plan_import
from memcore.transfer.records import (
    EXPORT_FORMAT,
    export_lines,
    export_record,
    memory_record,
    message_record,
)
from memcore.transfer.restoring import (
    Undone,
    claim_present,
    finished,
    held_texts,
    history_kept,
    restore_batches,
    restore_log,
    stopped,
    take_back,
    version_links,
)

__all__ = [
    "EXPORT_FORMAT",
    "OTHER_TENANT_HINT",
    "ImportRecord",
    "MessageRecord",
    "Plan",
    "Undone",
    "claim_present",
    "dump_line",
    "escape_json",
    "export_lines",
    "export_record",
    "finished",
    "held_texts",
    "history_kept",
    "with_named_successors",
    "line_error",
    "memory_record",
    "message_record",
    "parse_line",
    "parse_record",
    "plan_import",
    "record_format",
    "restore_batches",
    "restore_log",
    "split_lines",
    "stopped",
    "take_back",
    "version_links",
]
