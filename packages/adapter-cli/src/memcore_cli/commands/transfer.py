"""``export`` and ``import``: memories as JSON Lines, one memory per line, then the message
log (the turns shown around a hit) where the store keeps one.

Import is idempotent: a memory whose id is already in its scope, or whose text is already in
its scope (stores deduplicate by content), is counted as present and not written again.
"""

from typing import Annotated

import typer

from memcore_cli.wiring.state import state_of


def export(
    ctx: typer.Context,
    out: Annotated[
        str | None,
        typer.Option(
            "--out",
            "-o",
            metavar="<path>",
            help="Write here instead of stdout ('-': stdout): a file is replaced whole "
            "(mode 0600), a symlink's target likewise; a FIFO or device is written through.",
        ),
    ] = None,
) -> None:
    """Export the memories of the current tenant (or --agent/--run) as JSON Lines.

    After the memories come the messages of the same scopes (lines with "kind":
    "message"), so that an import restores the turns shown around each memory.

    \b
    Examples:
      memcore export --out memories.jsonl
      memcore --tenant alice export > alice.jsonl
    """
    from memcore.wording import counted
    from memcore_cli.operations.transfer import export_memories, onto_stdout
    from memcore_cli.output.interrupts import terminated_as_interrupted
    from memcore_cli.parsing.paths import given_path

    out_path = None
    if out is not None and out != "-":  # as import's '-' is stdin
        instead = "give a file, or '-' (or no --out) for stdout"
        out_path = given_path(out, name="--out", field="out", instead=instead)
    state = state_of(ctx)
    to_stdout = out_path is not None and onto_stdout(out_path)
    with terminated_as_interrupted():  # the partial file is removed, as on Ctrl-C
        counts = export_memories(state.runtime(), state.output, out_path)
    count, messages = counts["memories"], counts["messages"]
    said = f"exported {counted(count, 'memory')}" + (
        f" and {counted(messages, 'message')}" if messages else ""
    )
    if out_path is None or to_stdout:
        state.output.note(said)
    elif state.json:
        state.output.json({"exported": count, "messages": messages, "out": str(out_path)})
    else:
        state.output.line(f"{said} to {out_path}")


def import_(
    ctx: typer.Context,
    in_file: Annotated[
        str,
        typer.Argument(metavar="FILE", help="A file written by 'memcore export' ('-' for stdin)."),
    ],
    lines: Annotated[
        bool,
        typer.Option("--lines", help="FILE is plain text: each non-empty line is one memory."),
    ] = False,
) -> None:
    """Import memories from JSON Lines; running it twice adds nothing.

    Every line is checked before anything is written; a bad line stops the import with
    its line number. Records of another tenant are refused, unless --tenant (or --app)
    names where they go: then they land there, keeping their agent and run. The file's
    messages are logged after the memories (a store that keeps no log leaves them out).

    \b
    Examples:
      memcore import memories.jsonl
      memcore --tenant bob import alice.jsonl
      memcore --agent notes import --lines notes.txt
      MEMCORE_HOME=/tmp/fresh memcore import memories.jsonl
    """
    from memcore.wording import counted
    from memcore_cli.operations.transfer import import_memories
    from memcore_cli.parsing.paths import given_path

    instead = "give a file, or '-' for stdin"
    in_path = given_path(in_file, name="FILE", field="file", instead=instead)
    state = state_of(ctx)
    report = import_memories(state.runtime(), state.output, in_path, lines=lines)
    given = {"--agent": state.options.agent, "--run": state.options.run}
    ignored = [flag for flag, value in given.items() if value is not None]
    if ignored and not lines:  # a record names its own agent and run; only --lines takes them
        # Once it has run: a failure is one line, the error's.
        state.output.note(
            f"memcore: note: {' and '.join(ignored)} not used: each record of a JSON Lines "
            "import keeps its own agent and run (--tenant and --app move them; --lines "
            "imports plain text into the scope given)"
        )
    if state.json:
        state.output.json(report.as_dict())
        return
    state.output.line(
        f"imported {counted(report.total, 'record')}: {report.added} added, "
        f"{report.present} already present"
        + (
            f", {counted(report.superseded, 'replaced version')} left out"
            if report.superseded
            else ""
        )
    )
    if report.messages:
        counts = report.message_counts()
        state.output.line(
            f"imported {counted(report.messages, 'message')}: {counts['messages_added']} added, "
            f"{counts['messages_present']} already present"
            + (
                f", {counts['messages_left_out']} left out (this backend keeps no message log)"
                if counts["messages_left_out"]
                else ""
            )
        )
    if report.renamed:
        why = (
            "moved into this tenant, or their text was stored here already"
            if report.keeps_ids
            else "this backend assigns its own ids"
        )
        state.output.note(
            f"{counted(len(report.renamed), 'record')} "
            f"{'has' if len(report.renamed) == 1 else 'have'} a different id here than in the file "
            f"({why}); --json lists them in id_map"
        )
