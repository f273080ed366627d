"""Audit and housekeeping commands: requests, scopes (the store port, read-only) and write
tasks (through the service, so a task id of another tenant is never found)."""

from collections.abc import Callable
from typing import Annotated, Any

import typer

from memcore_cli.wiring.state import state_of

LimitOpt = Annotated[int, typer.Option("--limit", help="Items per page (1 to 100).")]
TokenOpt = Annotated[
    str | None, typer.Option("--next-token", help="Continue from a previous page.")
]


def _list_page(
    ctx: typer.Context,
    fetch: Callable[..., Any],
    columns: tuple[str, ...],
    row: Callable[[Any], tuple[Any, ...]],
    *,
    limit: int,
    next_token: str | None,
    empty: str,
    more: str,
    extra: list[str],
) -> None:
    """One page of a listing, only within the current tenant's (or agent's/run's) reach: never
    another tenant's. ``fetch(runtime, limit=, next_token=, pattern=)`` asks for it; it prints as
    a table (with the command for the next page) or as JSON."""
    from memcore import limits
    from memcore_cli.output.records import to_record

    state = state_of(ctx)
    limits.check_limit(limit)
    runtime = state.runtime()
    page = fetch(
        runtime, limit=limit, next_token=next_token, pattern=runtime.settings.scope.read_pattern
    )
    out = state.output
    if state.json:
        out.json({"items": [to_record(i) for i in page.items], "next_token": page.next_token})
        return
    out.table(columns, (row(i) for i in page.items), empty=empty)
    if page.next_token:
        out.note(state.more_hint(more, page.next_token, [*extra, "--limit", str(limit)]))


def requests(
    ctx: typer.Context,
    operation: Annotated[
        str | None,
        typer.Option(
            "--operation", help="Only this operation, e.g. AddMemories or SearchMemories."
        ),
    ] = None,
    limit: LimitOpt = 20,
    next_token: TokenOpt = None,
) -> None:
    """Show the store's request audit log (operation, scope, target, status, latency).

    Only the current tenant's requests: the embedded store lists writes and reads of one
    memory (a search or listing spans the tenant and is logged under no scope); TableStore's
    log holds searches too.

    \b
    Examples:
      memcore requests
      memcore requests --operation AddMemories --limit 50
    """
    from memcore_cli.output.render import when

    _list_page(
        ctx,
        lambda rt, **paging: rt.ready_store(create=False).list_requests(
            rt.store_name, operation=operation, **paging
        ),
        ("time", "operation", "status", "scope", "target", "ms"),
        lambda r: (
            when(r.created_at),
            r.operation,
            r.status,
            str(r.scope or ""),
            r.target_id or "",
            "" if r.latency_ms is None else f"{r.latency_ms:.1f}",
        ),
        limit=limit,
        next_token=next_token,
        empty="no requests recorded",
        more="requests",
        extra=["--operation", operation] if operation else [],
    )


def scopes(ctx: typer.Context, limit: LimitOpt = 50, next_token: TokenOpt = None) -> None:
    """List the scopes that hold memories, within the current tenant (or agent/run).

    \b
    Examples:
      memcore scopes
      memcore --tenant alice --json scopes
    """
    _list_page(
        ctx,
        lambda rt, pattern, **paging: rt.ready_store(create=False).list_scopes(
            rt.store_name, pattern, **paging
        ),
        ("app_id", "tenant_id", "agent_id", "run_id"),
        lambda s: s.as_tuple(),
        limit=limit,
        next_token=next_token,
        empty="no scopes hold memories yet",
        more="scopes",
        extra=[],
    )


tasks_app = typer.Typer(
    help=(
        "Write tasks: a write on TableStore is a task until it is indexed.\n\n"
        "\b\nExamples:\n  memcore tasks list --status failed\n  memcore tasks get 3c1d9f8e"
    ),
    no_args_is_help=True,
)


@tasks_app.command("get")
def task_get(
    ctx: typer.Context,
    task_id: Annotated[
        str,
        typer.Argument(metavar="ID", help="The task id from 'memcore add', or a unique prefix."),
    ],
) -> None:
    """Show one write task.

    \b
    Example:
      memcore tasks get 3c1d9f8e
    """
    from memcore import limits
    from memcore_cli.operations.lookup import find_task
    from memcore_cli.output.records import to_record

    state = state_of(ctx)
    limits.check_id(task_id, field="task_id")
    task = find_task(state.runtime(), task_id)
    if state.json:
        state.output.json(to_record(task))
        return
    from memcore_cli.output.render import when

    shown = {
        key: when(value) if key.endswith("_at") and isinstance(value, (int, float)) else value
        for key, value in to_record(task).items()
    }
    state.output.fields(shown.items(), title=f"task {task.id}")


@tasks_app.command("list")
def task_list(
    ctx: typer.Context,
    status: Annotated[
        str | None,
        typer.Option(
            "--status",
            help="queued, running, completed, failed or needs_reconcile (TableStore); pending "
            "or completed (the embedded store).",
        ),
    ] = None,
    limit: LimitOpt = 20,
    next_token: TokenOpt = None,
) -> None:
    """List write tasks, optionally by status.

    \b
    Examples:
      memcore tasks list
      memcore tasks list --status failed
    """
    from memcore.errors import InvalidInput
    from memcore.values import KNOWN_TASK_STATUSES
    from memcore_cli.output.render import when

    statuses = KNOWN_TASK_STATUSES
    if status is not None and status not in statuses:
        raise InvalidInput(
            f"--status must be one of {', '.join(statuses)}, not {status!r}", field="status"
        )
    _list_page(
        ctx,
        lambda rt, **paging: rt.service(create=False).tasks(status=status, **paging),
        ("id", "status", "operation", "scope", "created", "memories"),
        lambda t: (
            t.id,
            t.status,
            t.operation,
            str(t.scope or ""),
            when(t.created_at),
            len(t.memory_ids),
        ),
        limit=limit,
        next_token=next_token,
        empty="no tasks",
        more="tasks list",
        extra=["--status", status] if status else [],
    )
