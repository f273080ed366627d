"""Commands over many memories: list (paged, or --since / --newest), count, forget.

``forget`` takes ids (or unique id prefixes), a selection (``--filter``, ``--since``) or
``--all`` and shows what it would delete with ``--dry-run``. It asks first on a terminal; elsewhere it
needs ``--yes``, and says so.
"""

from typing import Annotated, Any

import typer

from memcore_cli.wiring.state import state_of

LimitOpt = Annotated[int, typer.Option("--limit", help="Items per page (1 to 100).")]
TokenOpt = Annotated[
    str | None, typer.Option("--next-token", help="Continue from a previous page.")
]
SinceOpt = Annotated[
    str | None,
    typer.Option("--since", help="Only memories created since: 30m, 12h, 7d, or 2026-11-01."),
]
FilterOpt = Annotated[
    list[str] | None,
    typer.Option("--filter", "-f", help="Only memories whose metadata has key=value; repeatable."),
]
COLUMNS = ("id", "text", "scope", "created")
#: With --all-versions: else a replaced version reads as a current fact beside its successor.
VERSION_COLUMNS = (*COLUMNS, "superseded by")


def _row(memory: Any) -> tuple[str, str, str, str]:
    from memcore_cli.output.render import when

    return (
        memory.id,
        memory.text,
        f"{memory.scope.agent_id}/{memory.scope.run_id}",
        when(memory.created_at),
    )


def _version_row(memory: Any) -> tuple[str, ...]:
    return (*_row(memory), memory.superseded_by or "")


def _superseded(memory: Any) -> bool:
    """A dream pass marked it as replaced by a newer memory (the local store says so)."""
    return not memory.is_current


def list_memories(
    ctx: typer.Context,
    limit: LimitOpt = 20,
    all_pages: Annotated[
        bool, typer.Option("--all", help="Everything, not one page (JSON Lines with --json).")
    ] = False,
    next_token: TokenOpt = None,
    since: SinceOpt = None,
    newest: Annotated[
        bool, typer.Option("--newest", help="Newest first (reads the whole tenant or scope).")
    ] = False,
    current: Annotated[
        bool,
        typer.Option(
            "--current/--all-versions",
            help="Hide memories a dream pass superseded (the default), or show every version "
            "with the memory that superseded each.",
        ),
    ] = True,
) -> None:
    """List the memories of the current tenant (or --agent/--run), a page at a time.

    \b
    Examples:
      memcore list --limit 10
      memcore list --newest --since 7d
      memcore list --all-versions
      memcore --agent coder list --all
      memcore --json list --all > memories.jsonl
    """
    from memcore import limits
    from memcore.paging import pages
    from memcore_cli.output.records import memory_record
    from memcore_cli.parsing.selection import selection

    state = state_of(ctx)
    limits.check_limit(limit)
    chosen = selection(since, None)
    columns, row = (COLUMNS, _row) if current else (VERSION_COLUMNS, _version_row)
    runtime = state.runtime()
    out = state.output
    if chosen.narrows or newest:
        if next_token is not None:
            raise typer.BadParameter("--next-token does not combine with --since or --newest")
        from memcore_cli.operations.lookup import select

        found = [m for m in select(runtime, chosen) if not (current and _superseded(m))]
        if newest:
            found.sort(key=lambda m: m.created_at or 0, reverse=True)
        shown = found if all_pages else found[:limit]
        if state.json and all_pages:
            for memory in shown:
                out.json_line(memory_record(memory))
        elif state.json:  # one selection, no pages: "more" says what the limit left out
            more = len(found) - len(shown)
            out.json({"items": [memory_record(m) for m in shown], "next_token": None, "more": more})
        else:
            out.table(columns, map(row, shown), empty="no memories match")
        if len(shown) < len(found):
            out.note(f"{len(found) - len(shown)} more; raise --limit or pass --all")
        return
    service = runtime.service(create=False)

    def fetch(token: str | None) -> Any:
        # current_only reads past superseded memories until the page is full: filtered
        # here after one read, a page came back short or empty with a next_token, and an
        # empty first page said "no memories yet" over current ones.
        return service.profile(limit=limit, next_token=token, current_only=current)

    if not all_pages:
        page = fetch(next_token)
        if state.json:
            out.json(
                {"items": [memory_record(m) for m in page.items], "next_token": page.next_token}
            )
            return
        out.table(columns, map(row, page.items), empty="no memories yet")
        if page.next_token:
            # The same listing's next page: without --all-versions it went on with current ones.
            versions = [] if current else ["--all-versions"]
            out.note(state.more_hint("list", page.next_token, [*versions, "--limit", str(limit)]))
        return
    rows = []
    listing = pages(fetch, start=next_token)
    with out.progress("listing memories") as advance:
        for page in listing:
            for memory in page.items:
                if state.json:
                    out.json_line(memory_record(memory))
                else:
                    rows.append(row(memory))
            advance(len(page.items))
    if not state.json:
        out.table(columns, rows, empty="no memories yet")


def count(
    ctx: typer.Context,
    since: SinceOpt = None,
    filters: FilterOpt = None,
    current: Annotated[
        bool,
        typer.Option(
            "--current/--all-versions",
            help="Leave out memories a dream pass superseded (the default, as list does), or "
            "count every version.",
        ),
    ] = True,
) -> None:
    """Count the memories of the current tenant (or --agent/--run), the ones list shows.

    \b
    Examples:
      memcore count
      memcore --tenant alice count --since 7d --filter topic=style
      memcore count --all-versions
    """
    from memcore_cli.operations.lookup import memories_in_reach
    from memcore_cli.parsing.pairs import parse_pairs
    from memcore_cli.parsing.selection import selection

    state = state_of(ctx)
    chosen = selection(since, parse_pairs(filters, option="--filter"))
    runtime = state.runtime()
    total = sum(
        1 for m in memories_in_reach(runtime) if chosen(m) and not (current and _superseded(m))
    )
    if state.json:
        state.output.json({"count": total, "scope": runtime.settings.scope.read_pattern.as_dict()})
    else:
        state.output.line(str(total))


def forget(
    ctx: typer.Context,
    memory_ids: Annotated[
        list[str] | None,
        typer.Argument(metavar="[ID...]", help="Memory ids (or unique id prefixes) to delete."),
    ] = None,
    filters: FilterOpt = None,
    since: SinceOpt = None,
    every: Annotated[
        bool,
        typer.Option(
            "--all", help="Every memory of the current tenant (or --agent/--run), all versions."
        ),
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show what would be deleted; delete nothing.")
    ] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
) -> None:
    """Delete memories of the current tenant by id, every one a filter selects, or all.

    Asks first on a terminal; without one (a script, a pipe) it needs --yes (exit 2
    without it, 1 when the question is answered no).

    \b
    Examples:
      memcore forget 5f0c2a1e
      memcore forget --yes 5f0c2a1e 9b7d0e44
      memcore forget --filter topic=style --dry-run
      memcore --agent coder forget --since 1h --yes
      memcore --tenant alice forget --all --yes
    """
    from memcore.errors import InvalidInput
    from memcore_cli.operations.lookup import find_memory, select
    from memcore_cli.parsing.pairs import parse_pairs
    from memcore_cli.parsing.selection import selection

    state = state_of(ctx)
    chosen = selection(since, parse_pairs(filters, option="--filter"))
    ids = list(dict.fromkeys(memory_ids or []))
    if [bool(ids), chosen.narrows, every].count(True) != 1:
        raise InvalidInput(
            "give memory ids, --filter/--since to select memories, or --all (one of them)",
            field="memory_id",
        )
    runtime = state.runtime()
    if every:
        from memcore_cli.output.interrupts import terminated_as_interrupted

        with terminated_as_interrupted():  # says how many it deleted, as on Ctrl-C
            _forget_all(state, dry_run=dry_run, yes=yes)
        return
    found = [find_memory(runtime, i) for i in ids] if ids else select(runtime, chosen)
    found = list({m.id: m for m in found}.values())
    out = state.output
    if dry_run:
        _show_doomed(state, found)
        return
    if not found:
        out.note("nothing to forget")
        if state.json:
            out.json([])  # the list of what was deleted, as when something was
        return
    if not yes:
        _confirm(found)
    from memcore.errors import MemcoreError
    from memcore.wording import forgotten_so_far
    from memcore_cli.output.interrupts import held_interrupts

    service = runtime.service()
    deleted: list[dict[str, Any]] = []
    with held_interrupts() as held:  # Ctrl-C stops between two deletes, and says how far
        for memory in found:
            service.switch_scope(memory.scope)
            try:
                scope = service.forget(memory.id)
            except MemcoreError as exc:  # the backend went away half way: say how far too
                if not deleted:
                    raise
                raise exc.saying(forgotten_so_far(len(deleted), len(found))) from None
            deleted.append({"id": memory.id, "scope": scope.as_dict(), "deleted": True})
            if held.interrupted and len(deleted) < len(found):
                raise KeyboardInterrupt(forgotten_so_far(len(deleted), len(found)))
    if state.json:
        out.json(deleted)
        return
    for item in deleted:
        out.line(f"forgot {item['id']}")


def _forget_all(state: Any, *, dry_run: bool, yes: bool) -> None:
    """Every memory in reach, through the service's ``forget_all`` (which never leaves the
    tenant); what is shown and confirmed is the same listing."""
    from memcore_cli.operations.lookup import select

    runtime = state.runtime()
    pattern = runtime.settings.scope.read_pattern
    found = select(runtime, lambda m: True)
    out = state.output
    if dry_run:
        _show_doomed(state, found, f" in {pattern}")
        return
    if not found:
        out.note("nothing to forget")
        if state.json:
            out.json({"forgot": 0, "scope": pattern.as_dict()})
        return
    if not yes:
        _confirm(found, whole=str(pattern))
    try:
        deleted = runtime.service(create=False).forget_all(pattern=pattern)
    except KeyboardInterrupt:
        from memcore.wording import forgotten_so_far
        from memcore_cli.output.interrupts import held_interrupts

        with held_interrupts():  # counted whole: a second Ctrl-C does not cut the count short
            left = len(select(runtime, lambda m: True))
        raise KeyboardInterrupt(forgotten_so_far(max(len(found) - left, 0), len(found))) from None
    if state.json:
        out.json({"forgot": deleted, "scope": pattern.as_dict()})
    else:
        out.line(f"forgot {_memories(deleted)} in {pattern}")


def _show_doomed(state: Any, found: list[Any], where: str = "") -> None:
    """What a ``--dry-run`` would forget."""
    from memcore_cli.output.records import memory_record

    if state.json:
        state.output.json({"would_forget": [memory_record(m) for m in found], "count": len(found)})
        return
    state.output.table(COLUMNS, map(_row, found), empty="nothing to forget")
    state.output.note(f"dry run: would forget {_memories(len(found))}{where}")


def _memories(n: int) -> str:
    from memcore.wording import counted

    return counted(n, "memory")


def _confirm(found: list[Any], *, whole: str | None = None) -> None:
    from memcore_cli.output.asking import confirm_delete
    from memcore_cli.output.visible import one_line

    what = _memories(len(found)) if whole is None else f"all {_memories(len(found))} of {whole}"
    preview = "; ".join(one_line(m.text[:60]) for m in found[:3])
    confirm_delete(what, preview, instead=" (or --dry-run to see them)")
