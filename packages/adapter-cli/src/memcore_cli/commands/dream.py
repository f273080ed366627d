"""Dream (consolidation) commands: the service (or the local store) proposes merges,
updates and deletions; you apply them, and on the local store you can undo them."""

from typing import Annotated, Any

import typer

from memcore_cli.wiring.state import state_of

app = typer.Typer(
    help=(
        "Consolidate memories: create a dream task, review its actions, apply them.\n\n"
        "\b\nExample (review, then apply what you agree with):\n"
        "  memcore dream create\n"
        "  memcore dream actions 7a2e\n"
        "  memcore dream apply 7a2e 3f9c 81b0\n"
        "  memcore dream undo 7a2e 3f9c        # the embedded store keeps an undo record"
    ),
    no_args_is_help=True,
)
TaskArg = Annotated[
    str, typer.Argument(metavar="TASK_ID", help="The dream task id, or a unique prefix of it.")
]
LimitOpt = Annotated[int, typer.Option("--limit", help="Items per page (1 to 100).")]
TokenOpt = Annotated[
    str | None, typer.Option("--next-token", help="Continue from a previous page.")
]


def _show_task(state: Any, task: Any) -> None:
    from memcore_cli.output.records import to_record

    record = to_record(task)
    if state.json:
        state.output.json(record)
        return
    scope = ", ".join("/".join(p.as_tuple()) for p in task.scopes)
    state.output.fields(
        [
            ("id", task.id),
            ("status", task.status),
            ("error", task.error),  # what stopped a failed task
            ("scope", scope),
            ("apply mode", task.apply_mode),
            ("actions", ", ".join(f"{k} {v}" for k, v in task.action_counts.items()) or None),
            ("extras", record["extras"] or None),
        ],
        title="dream task",
    )


def _task(state: Any, task_id: str) -> Any:
    """The dream task with this id or unique id prefix, in this tenant only (the id is checked
    first; commands that do more before the lookup check it themselves, earlier)."""
    from memcore import limits
    from memcore_cli.operations.lookup import find_dream_task

    limits.check_id(task_id, field="task_id")
    return find_dream_task(state.runtime(), task_id)


@app.command("create")
def create(
    ctx: typer.Context,
    apply_mode: Annotated[
        str,
        typer.Option(
            "--apply-mode",
            help="proposal (review, then apply) or safe_auto (confident merges and updates "
            "apply at once; deletions always wait).",
        ),
    ] = "proposal",
    instructions: Annotated[
        str | None, typer.Option("--instructions", help="Guidance for this run (4,000 bytes).")
    ] = None,
) -> None:
    """Start a consolidation over the current tenant (or --agent/--run).

    The embedded store reads the newest 1,000 memories of it, the ones stored last (the
    task's memoryCount says how many it read); older ones are not looked at. TableStore
    reads what its service does.

    \b
    Examples:
      memcore dream create
      memcore dream create --apply-mode safe_auto
    """
    state = state_of(ctx)
    runtime = state.runtime()
    # A dream reads the store: a missing one (a mistyped name) is reported, not made empty.
    task = runtime.service(create=False).dreams.start(
        pattern=runtime.settings.scope.read_pattern,
        apply_mode=apply_mode,
        instructions=instructions,
    )
    _show_task(state, task)


@app.command("status")
def status(ctx: typer.Context, task_id: TaskArg) -> None:
    """Show a dream task.

    \b
    Example:
      memcore dream status 7a2e
    """
    state = state_of(ctx)
    _show_task(state, _task(state, task_id))


@app.command("actions")
def actions(
    ctx: typer.Context, task_id: TaskArg, limit: LimitOpt = 50, next_token: TokenOpt = None
) -> None:
    """List the actions a dream task proposes.

    \b
    Example:
      memcore dream actions 7a2e
    """
    from memcore import limits
    from memcore_cli.output.records import to_record

    state = state_of(ctx)
    limits.check_id(task_id, field="task_id")
    limits.check_limit(limit)
    runtime = state.runtime()
    page = runtime.service(create=False).dreams.actions(
        _task(state, task_id).id, limit=limit, next_token=next_token
    )
    if state.json:
        state.output.json(
            {"items": [to_record(a) for a in page.items], "next_token": page.next_token}
        )
        return
    state.output.table(
        ("id", "action", "status", "confidence", "memories", "reason"),
        (
            (
                a.id,
                a.action,
                a.status + (f" ({a.skipped_reason})" if a.skipped_reason else ""),
                "" if a.confidence is None else f"{a.confidence:.2f}",
                ", ".join(a.memory_ids),
                a.reason or a.text or "",
            )
            for a in page.items
        ),
        empty="no actions proposed",
    )


@app.command("apply")
def apply(
    ctx: typer.Context,
    task_id: TaskArg,
    action_ids: Annotated[
        list[str],
        typer.Argument(metavar="ACTION_ID...", help="Actions to apply (ids or unique prefixes)."),
    ],
) -> None:
    """Apply some of a dream task's proposed actions.

    Each action's outcome is shown (a skipped one with its reason); the exit code is 3 when
    an id is unknown, 1 when an action failed (each action applies whole or not at all).

    \b
    Example:
      memcore dream apply 7a2e 3f9c 81b0
    """
    from memcore import limits
    from memcore_cli.operations.lookup import action_ids as full_action_ids
    from memcore_cli.output.records import to_record

    state = state_of(ctx)
    limits.check_id(task_id, field="task_id")
    for action_id in action_ids:
        limits.check_id(action_id, field="action_id")
    runtime = state.runtime()
    task = _task(state, task_id)
    chosen = full_action_ids(runtime, task.id, action_ids)
    applied = runtime.service().dreams.apply(task.id, chosen)
    if state.json:
        state.output.json([to_record(a) for a in applied])
    else:
        state.output.table(
            ("id", "action", "status"),
            (
                (a.id, a.action, a.status + (f" ({a.skipped_reason})" if a.skipped_reason else ""))
                for a in applied
            ),
            empty="nothing applied",
        )
    missing = [a.id for a in applied if a.status == "not_found"]
    if missing:
        # Every result is shown above; the error line (and exit 3) says which ids were unknown.
        from memcore.errors import NotFound

        names = ", ".join(repr(m) for m in missing)
        raise NotFound(
            f"dream action {names} does not exist"
            if len(missing) == 1
            else f"dream actions {names} do not exist",
            field="action_ids",
        )
    failed = [a for a in applied if a.status == "failed"]
    if failed:
        # Each action lands whole or not at all: these did not, and a script must know it.
        from memcore.errors import MemcoreError
        from memcore.wording import counted

        reasons = "; ".join(f"{a.id!r}: {a.error or 'no reason given'}" for a in failed)
        raise MemcoreError(
            f"{len(failed)} of {counted(len(applied), 'dream action')} failed and changed "
            f"nothing ({reasons})",
            field="action_ids",
        )


@app.command("undo")
def undo(
    ctx: typer.Context,
    task_id: TaskArg,
    action_id: Annotated[
        str, typer.Argument(metavar="ACTION_ID", help="An applied action (id or unique prefix).")
    ],
) -> None:
    """Take back an applied action from its undo record (the local store).

    \b
    Example:
      memcore dream undo 7a2e 3f9c
    """
    from memcore import limits
    from memcore.errors import NotFound
    from memcore_cli.operations.lookup import action_ids as full_action_ids
    from memcore_cli.output.records import to_record

    state = state_of(ctx)
    limits.check_id(task_id, field="task_id")
    limits.check_id(action_id, field="action_id")
    runtime = state.runtime()
    service = runtime.service(create=False)
    try:  # exact ids first: a backend without undo records refuses before any lookup
        action = service.dreams.undo(
            task_id, action_id, pattern=runtime.settings.scope.read_pattern
        )
    except NotFound:
        found = _task(state, task_id)
        [chosen] = full_action_ids(runtime, found.id, [action_id])
        if (found.id, chosen) == (task_id, action_id):
            raise
        action = service.dreams.undo(found.id, chosen)
    if state.json:
        state.output.json(to_record(action))
    else:
        state.output.fields(
            [("id", action.id), ("action", action.action), ("status", action.status)],
            title="undone",
        )


@app.command("cancel")
def cancel(ctx: typer.Context, task_id: TaskArg) -> None:
    """Cancel a dream task; one that has already ended is left as it is (its status is shown).

    \b
    Example:
      memcore dream cancel 7a2e
    """
    state = state_of(ctx)
    found = _task(state, task_id)
    _show_task(state, state.runtime().service().dreams.cancel(found.id))


@app.command("list")
def list_tasks(ctx: typer.Context, limit: LimitOpt = 20, next_token: TokenOpt = None) -> None:
    """List dream tasks.

    \b
    Example:
      memcore dream list
    """
    from memcore import limits
    from memcore_cli.output.records import to_record

    state = state_of(ctx)
    limits.check_limit(limit)
    runtime = state.runtime()
    page = runtime.service(create=False).dreams.tasks(
        limit=limit, next_token=next_token, pattern=runtime.settings.scope.read_pattern
    )
    if state.json:
        state.output.json(
            {"items": [to_record(t) for t in page.items], "next_token": page.next_token}
        )
        return
    state.output.table(
        ("id", "status", "scope"),
        ((t.id, t.status, ", ".join("/".join(p.as_tuple()) for p in t.scopes)) for t in page.items),
        empty="no dream tasks",
    )
