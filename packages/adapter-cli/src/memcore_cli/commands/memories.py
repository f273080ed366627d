"""Memory commands: add, search, get, update, messages (list, count, forget: ``listing``).

Each goes through ``MemoryService`` so the limits and scope policies apply exactly as they do
for the agent plugin.
"""

import io
import json
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from memcore_cli.wiring.state import state_of

if TYPE_CHECKING:
    from memcore.service import MemoryService
    from memcore.values import MemoryRecord, Message, WriteReceipt


def _words(metavar: str, help: str) -> Any:
    """Words typed without quotes, one argument each: the command joins them by one space."""
    return typer.Argument(metavar=metavar, help=help, show_default=False)


MetadataOpt = Annotated[
    list[str] | None,
    typer.Option("--metadata", "-m", help="A metadata entry key=value; repeat for more."),
]
LimitOpt = Annotated[int, typer.Option("--limit", help="Items per page (1 to 100).")]
TokenOpt = Annotated[
    str | None, typer.Option("--next-token", help="Continue from a previous page.")
]


def add(
    ctx: typer.Context,
    words: Annotated[
        list[str] | None,
        _words(
            "TEXT",
            "The text to remember: its words, joined by one space as echo joins them "
            "(quote it to keep other spacing); '-' alone reads it from stdin.",
        ),
    ] = None,
    messages_file: Annotated[
        str | None,
        typer.Option(
            "--messages-file",
            metavar="<path>",
            help='A JSON file holding a list of {"role": ..., "content": ...} messages.',
        ),
    ] = None,
    metadata: MetadataOpt = None,
    sync: Annotated[bool, typer.Option("--sync", help="Wait until the memory is indexed.")] = False,
) -> None:
    """Remember a piece of text, or a chat transcript, in the current scope.

    \b
    Examples:
      memcore add "User prefers concise answers"
      memcore add User prefers concise answers
      memcore add --metadata topic=style --sync "Answer in English"
      echo "Lives in Hangzhou" | memcore add -
      memcore --agent coder add --messages-file turn.json
    """
    from memcore import limits
    from memcore.errors import InvalidInput
    from memcore_cli.output.records import to_record
    from memcore_cli.parsing.pairs import check_user_metadata, parse_pairs

    state = state_of(ctx)
    meta = parse_pairs(metadata, option="--metadata")
    text = joined(words)
    if (text is None) == (messages_file is None):
        raise InvalidInput("give either TEXT (or '-' for stdin) or --messages-file", field="text")
    # Everything is checked before the store is opened, so bad input never creates a database.
    check_user_metadata(meta)
    if text == "-":
        text = _without_final_newline(_read_stdin())
    messages: list[Any] = []
    if text is not None:
        limits.check_text(text)
    else:
        from memcore_cli.parsing.paths import given_path

        assert messages_file is not None
        instead = "give a JSON file of messages"
        path = given_path(
            messages_file, name="--messages-file", field="messages_file", instead=instead
        )
        from memcore_cli.settings.home import home_expanded

        expanded = home_expanded(path)  # '~/turn.json' as export --out and import take it
        if expanded is None:
            raise InvalidInput(
                f"{path} names a home folder this system does not know", field="messages_file"
            )
        messages = _read_messages(expanded, meta)
    runtime = state.runtime()
    scope = runtime.settings.scope.write_scope()
    service = runtime.service()
    if text is not None:
        receipts = [service.remember(text, metadata=meta, sync=sync)]
    else:
        receipts = _write_conversation(service, messages, sync=sync)
    out = state.output
    if state.json:
        out.json(
            {
                "scope": scope.as_dict(),
                "receipts": [to_record(r) for r in receipts],
                "memory_ids": [i for r in receipts for i in r.memory_ids],
            }
        )
        return
    for receipt in receipts:
        if receipt.memory_ids:
            ids = ", ".join(receipt.memory_ids)
            out.line(f"remembered {ids} in {scope} ({receipt.status})")
        else:
            out.line(f"accepted as task {receipt.task_id} in {scope} ({receipt.status})")
        if receipt.problem:
            # Accepted (HTTP 2xx) but unreadable: landed, not resent; say it plainly.
            sys.stderr.write(f"memcore: warning: {receipt.problem}\n")


def _write_conversation(
    service: "MemoryService", messages: "list[Message]", *, sync: bool
) -> "list[WriteReceipt]":
    """A conversation's writes with Ctrl-C and SIGTERM held: a stop comes between two writes,
    and says how many messages were stored before it (a long file is many writes, and each
    that landed stays)."""
    from memcore_cli.output.interrupts import held_interrupts

    writes = service.plan_turn("", "", messages=messages)
    with held_interrupts() as held:
        receipts = service.write_turns(writes, sync=sync, stop=lambda: held.interrupted)
    if len(receipts) < len(writes):
        stored = sum(len(w.messages) for w in writes[: len(receipts)])
        total = sum(len(w.messages) for w in writes)
        raise KeyboardInterrupt(
            f"the first {stored} of {total} messages were stored before it; the rest were not"
        )
    return receipts


def joined(words: list[str] | None) -> str | None:
    """The words of the command line as one text, joined by one space as ``echo`` joins
    them (``None`` when there are none): ``memcore search green tea`` searches "green tea"."""
    return " ".join(words) if words else None


def _read_stdin(field: str = "text") -> str:
    """stdin as text, a byte that is not UTF-8 (of its encoding) kept as the surrogate Python
    makes of it in argv, so the text check names the byte rather than the decoder failing
    (stdin decodes strictly under most UTF-8 locales)."""
    from memcore import limits
    from memcore.errors import InvalidInput

    if sys.stdin is None:  # started with stdin closed (`<&-`)
        raise InvalidInput("cannot read '-': stdin is closed", field=field)
    # Read no further than a text can be (``yes |`` and /dev/zero never end): a character is
    # a UTF-8 byte at least, and echo's line break adds two at most.
    most = limits.MAX_TEXT_BYTES + 2
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is None:
        text = sys.stdin.read(most + 1)
    else:
        encoding = getattr(sys.stdin, "encoding", None) or "utf-8"
        # A text wrapper of its own: the line breaks are read as ``sys.stdin`` reads them.
        reader = io.TextIOWrapper(buffer, encoding=encoding, errors="surrogateescape")
        try:
            text = reader.read(most + 1)
        finally:
            reader.detach()  # stdin stays open
    if len(text) > most:
        limit = limits.MAX_TEXT_BYTES
        raise InvalidInput(
            f"{field} is more than {limit} UTF-8 bytes; the limit is {limit}", field=field
        )
    # A byte order mark (a file Windows Notepad saved) is no character of the text: kept,
    # the text was stored with it, apart from the same text added or imported without it.
    return text.removeprefix("\ufeff")


def _without_final_newline(text: str) -> str:
    """What ``echo`` meant: the text without the one line break it ends with (any others,
    and every other space, are the text's own)."""
    for end in ("\r\n", "\n"):
        if text.endswith(end):
            return text[: -len(end)]
    return text


def _read_messages(path: Path, metadata: dict[str, str] | None) -> list[Any]:
    from memcore import limits
    from memcore.errors import InvalidInput, PermissionDenied
    from memcore.values import Message
    from memcore_cli.parsing.bounded import MAX_DOCUMENT_BYTES

    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_DOCUMENT_BYTES + 1)
        if len(raw) > MAX_DOCUMENT_BYTES:
            raise InvalidInput(
                f"{path} is larger than any write takes ({MAX_DOCUMENT_BYTES >> 20} MiB "
                "at most); give a JSON file of messages",
                field="messages_file",
            )
        data = json.loads(raw.decode("utf-8-sig"))
    except PermissionError:  # exit 4, as an unreadable config: not a malformed file
        raise PermissionDenied(
            f"cannot read {path} (permission denied)", field="messages_file"
        ) from None
    except OSError as exc:
        raise InvalidInput(f"cannot read {path} ({exc.strerror})", field="messages_file") from None
    except (ValueError, RecursionError) as exc:  # RecursionError: nested too deeply
        raise InvalidInput(f"{path} is not valid JSON: {exc}", field="messages_file") from None
    if isinstance(data, dict) and "messages" in data:
        data = data["messages"]
    if not isinstance(data, list) or not data:
        raise InvalidInput(f"{path} must hold a non-empty list of messages", field="messages_file")
    extra = limits.check_metadata(metadata)
    messages = []
    for i, item in enumerate(data):
        parsed = limits.message_from_json(item, index=i)
        role, content = parsed.role, parsed.content
        if role not in limits.MESSAGE_ROLES:
            raise InvalidInput(
                f"messages[{i}].role must be one of {sorted(limits.MESSAGE_ROLES)}, not {role!r}",
                field=f"messages[{i}].role",
            )
        if not content.strip():
            # The service would skip an empty message; refuse it rather than drop it silently.
            raise InvalidInput(f"messages[{i}].content is empty", field=f"messages[{i}].content")
        own = item.get("metadata") or {}
        if not isinstance(own, dict):
            raise InvalidInput(f"messages[{i}].metadata must be an object", field=f"messages[{i}]")
        merged = {**extra, **own}
        limits.check_metadata(merged, field=f"messages[{i}].metadata")
        messages.append(
            Message(role=role, content=content, timestamp=parsed.timestamp, metadata=merged)
        )
    return messages


def search(
    ctx: typer.Context,
    words: Annotated[
        list[str],
        _words(
            "QUERY",
            "What to look for, in plain words: the words are joined by one space as "
            "echo joins them, so quotes are optional; '-' alone reads it from stdin.",
        ),
    ],
    top_k: Annotated[
        int | None, typer.Option("--top-k", "-k", help="How many hits (1 to 50).")
    ] = None,
    no_rerank: Annotated[
        bool, typer.Option("--no-rerank", help="Skip the service's reranking step.")
    ] = False,
    filters: Annotated[
        list[str] | None,
        typer.Option("--filter", "-f", help="Only memories whose metadata has key=value."),
    ] = None,
    min_similarity: Annotated[
        float | None, typer.Option("--min-similarity", help="Drop hits scoring below (0 to 1).")
    ] = None,
    context: Annotated[
        bool,
        typer.Option(
            "--context/--no-context",
            help="Rank the configured session's memories higher (TableStore's context "
            "scope; the embedded store ranks every session alike).",
        ),
    ] = True,
    evidence: Annotated[
        bool,
        typer.Option(
            "--evidence",
            help="Attach the messages each hit came from (TableStore; the embedded store keeps "
            "none, and --neighbours shows a hit's conversation there).",
        ),
    ] = False,
    at: Annotated[
        str | None,
        typer.Option(
            "--at",
            metavar="ISO8601",
            help="When the question is asked (default now; UTC without an offset): of "
            "memories found equally relevant, those said when time words such as 'last month' "
            "or '3 days ago' point, counted from it, come first. The embedded store only "
            "(TableStore checks it and ranks without it).",
        ),
    ] = None,
    neighbours: Annotated[
        int,
        typer.Option(
            "--neighbours",
            metavar="N",
            help="Show each hit's N turns of its own conversation before and after it (0 to "
            "5; rows -N..-1 above the hit, +1..+N below it). The embedded store only.",
        ),
    ] = 0,
) -> None:
    """Search memories; without --agent/--run it covers the whole tenant.

    \b
    Examples:
      memcore search "answer style"
      memcore search answer style
      memcore search --top-k 3 --filter topic=style "how should I reply"
      memcore search --at 2026-05-20T09:00 "where did I go hiking last month"
      memcore search --neighbours 1 "mountain hut"
      memcore --json search "coffee" | jq '.[0].text'
    """
    from memcore import limits
    from memcore_cli.output.records import hit_record
    from memcore_cli.parsing.pairs import check_filters, parse_pairs

    state = state_of(ctx)
    flt = parse_pairs(filters, option="--filter")
    query = joined(words) or ""
    if query == "-":  # as add reads its text
        query = _without_final_newline(_read_stdin("query"))
    limits.check_query(query)
    if top_k is not None:
        limits.check_top_k(top_k)
    check_filters(flt)
    limits.check_min_similarity(min_similarity)
    asked = limits.parse_reference_time(at, field="at", label="--at")
    limits.check_neighbours(neighbours)
    hits = (
        state.runtime()
        .service(create=False)
        .search(
            query,
            top_k=top_k,
            enable_rerank=False if no_rerank else None,
            filters=flt,
            min_similarity=min_similarity,
            context_scope=context,
            include_evidence=evidence,
            reference_time=asked,
            neighbours=neighbours,
        )
    )
    out = state.output
    if state.json:
        out.json([hit_record(h) for h in hits])
        return
    if neighbours:
        out.table(("score", "id", "turn", "text", "scope"), _rows_with_turns(hits), empty=NO_MATCH)
        return
    out.table(
        ("score", "id", "text", "scope"),
        (
            (f"{h.score:.3f}", h.memory.id, h.memory.text, _short_scope(h.memory.scope))
            for h in hits
        ),
        empty=NO_MATCH,
    )


NO_MATCH = "no memories matched"


def _rows_with_turns(hits: Any) -> Iterator[tuple[str, str, str, str, str]]:
    """Each hit's row (turn ``0``), its turns before (``-2``, ``-1``) above it and after
    (``+1``, ``+2``) below it, their text ``role: content``, score and id left empty."""
    for h in hits:
        around = h.neighbours
        before = around.before if around is not None else ()
        after = around.after if around is not None else ()
        scope = _short_scope(h.memory.scope)
        for i, m in enumerate(before):
            yield ("", "", f"-{len(before) - i}", f"{m.role}: {m.content}", scope)
        yield (f"{h.score:.3f}", h.memory.id, "0", h.memory.text, scope)
        for i, m in enumerate(after):
            yield ("", "", f"+{i + 1}", f"{m.role}: {m.content}", scope)


def _short_scope(scope: Any) -> str:
    return f"{scope.agent_id}/{scope.run_id}"


def get(
    ctx: typer.Context,
    memory_id: Annotated[
        str, typer.Argument(metavar="ID", help="The memory id, or a unique prefix of it.")
    ],
) -> None:
    """Show one memory of the current tenant.

    \b
    Examples:
      memcore get 5f0c2a1e
      memcore --json get 5f0c2a1e
    """
    from memcore_cli.operations.lookup import find_memory
    from memcore_cli.output.records import memory_record

    state = state_of(ctx)
    memory = find_memory(state.runtime(), memory_id)
    _show_memory(state, memory_record(memory))


def _show_memory(state: Any, record: dict[str, Any]) -> None:
    from memcore_cli.output.render import when

    if state.json:
        state.output.json(record)
        return
    shown = dict(record)
    shown.pop("score", None)
    shown["scope"] = "/".join(record["scope"].values())
    for key, value in record.items():  # created_at, updated_at, said_at: every time readable
        if key.endswith("_at") and isinstance(value, (int, float)):
            shown[key] = when(value)
    state.output.fields((k, v) for k, v in shown.items() if v not in (None, ""))


def update(
    ctx: typer.Context,
    memory_id: Annotated[
        str, typer.Argument(metavar="ID", help="The memory id, or a unique prefix of it.")
    ],
    words: Annotated[
        list[str] | None,
        _words(
            "WORDS",
            "More words of --text, typed right after it: --text green tea sets "
            '"green tea" (joined by one space, as echo joins them).',
        ),
    ] = None,
    text: Annotated[
        str | None, typer.Option("--text", help="The new text ('-' reads it from stdin).")
    ] = None,
    metadata: Annotated[
        list[str] | None,
        typer.Option(
            "--metadata",
            "-m",
            help="Merge key=value into the metadata (other keys stay); repeat for more.",
        ),
    ] = None,
    unset: Annotated[
        list[str] | None,
        typer.Option("--unset", help="Remove this metadata key; repeat for more."),
    ] = None,
) -> None:
    """Change a memory's text, or merge keys into its metadata: a key given again is
    overwritten, keys not given stay (more than 16 keys in all is refused); --unset removes
    a key.

    \b
    Examples:
      memcore update 5f0c2a1e --text "User prefers short, direct answers"
      memcore update 5f0c2a1e --text prefers green tea
      memcore update 5f0c2a1e --metadata topic=style --metadata source=cli
      memcore update 5f0c2a1e --unset source
    """
    from memcore import limits
    from memcore.errors import InvalidInput
    from memcore_cli.operations.lookup import find_memory
    from memcore_cli.output.interrupts import held_interrupts
    from memcore_cli.output.records import memory_record
    from memcore_cli.parsing.pairs import check_user_metadata, parse_pairs
    from memcore_cli.parsing.words import COMMAND_ARGS, with_words

    state = state_of(ctx)
    text = with_words("--text", text, words or [], ctx.meta.get(COMMAND_ARGS, []))
    meta = parse_pairs(metadata, option="--metadata")
    limits.check_id(memory_id)
    removed = set(unset or [])
    if any(not key.strip() for key in removed):
        raise InvalidInput("--unset needs a metadata key, not an empty one", field="unset")
    if text is None and meta is None and not removed:
        raise InvalidInput("update needs --text, --metadata or --unset", field="text")
    if text == "-":  # as add reads its text; the old text was replaced by a "-"
        text = _without_final_newline(_read_stdin())
    if text is not None:
        limits.check_text(text)
    check_user_metadata(meta)
    both = sorted(removed & set(meta or {}))
    if both:
        raise InvalidInput(
            f"--unset {both[0]} and --metadata {both[0]}=... disagree", field="unset"
        )
    runtime = state.runtime()
    found = find_memory(runtime, memory_id)
    absent = sorted(removed - found.metadata.keys())
    if absent:  # a write for them alone moved the version, and nothing said they were not set
        state.output.note(f"memcore: note: not set, so nothing to remove: {', '.join(absent)}")
        removed -= set(absent)
    service = runtime.service()
    service.switch_scope(found.scope)
    if removed and service.removes_keys:
        # One write, which reads the map as it is then: a key set since `found` stays.
        memory = service.update(found.id, text=text, metadata=meta, remove=removed)
    elif removed & found.metadata.keys():
        # The store merges what it is given and clears on {}: keep the rest, clear, write it.
        kept = {k: v for k, v in found.metadata.items() if k not in removed}
        meta = {**kept, **(meta or {})}
        check_user_metadata(meta)  # before the clear, so a refusal changes nothing
        # Ctrl-C or SIGTERM between the two writes would leave the kept keys cleared.
        with held_interrupts():
            memory = service.update(found.id, metadata={})
            if meta or text is not None:
                memory = _write_back(service, found.id, text, meta)
    elif text is None and meta is None:
        memory = found  # the keys to remove are not there: nothing to change
    else:
        memory = service.update(found.id, text=text, metadata=meta)
    _show_memory(state, memory_record(memory))


def _write_back(
    service: "MemoryService", memory_id: str, text: str | None, meta: dict[str, str]
) -> "MemoryRecord":
    """The second write of an ``--unset`` (the store merges metadata, or clears it on ``{}``,
    so removing a key is a clear and then the kept keys written back). If it fails, the
    error says so and gives the command that restores the kept keys: they are no longer
    stored, and a plain error would read as if nothing had changed."""
    from memcore.errors import MemcoreError

    try:
        return service.update(memory_id, text=text, metadata=meta or None)
    except MemcoreError as exc:
        if meta:
            pairs = " ".join(f"-m {shlex.quote(f'{k}={v}')}" for k, v in sorted(meta.items()))
            exc.message = (
                f"{exc.message} (the memory's metadata was cleared and its other keys were not "
                f"written back; restore them with: memcore update {memory_id} {pairs})"
            )
            exc.args = (exc.message,)
        raise


def messages(
    ctx: typer.Context,
    limit: LimitOpt = 20,
    next_token: TokenOpt = None,
) -> None:
    """List the short-term messages of the exact current scope (app/tenant/agent/run).

    \b
    Examples:
      memcore messages
      memcore --agent coder --run session-42 messages --limit 50
    """
    from memcore import limits
    from memcore_cli.output.records import to_record
    from memcore_cli.output.render import when

    state = state_of(ctx)
    limits.check_limit(limit)
    runtime = state.runtime()
    scope = runtime.settings.scope.write_scope()
    page = runtime.service(create=False).messages(limit=limit, next_token=next_token)
    out = state.output
    if state.json:
        out.json(
            {
                "scope": scope.as_dict(),
                "items": [to_record(m) for m in page.items],
                "next_token": page.next_token,
            }
        )
        return
    out.table(
        ("role", "content", "time"),
        ((m.role, m.content, when(m.timestamp)) for m in page.items),
        title=f"messages in {scope}",
        empty=f"no messages in {scope}",
    )
    if page.next_token:
        out.note(state.more_hint("messages", page.next_token, ["--limit", str(limit)]))
