"""Each ``hermes tablestore-mem`` sub-command's work, by name (``HANDLERS``); ``cli`` parses
the command line and reports what a handler raises."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from memcore_hermes.commands.output import ProgressBar, print_json, say, write
from memcore_hermes.commands.sessions import CommandSession, open_provider, who

if TYPE_CHECKING:
    from memcore.errors import MemcoreError


def _run_doctor(args: argparse.Namespace) -> None:
    result = _doctor(args)
    print_json(result)
    if not result.get("ok"):
        raise SystemExit(1)


def _run_add(args: argparse.Namespace) -> None:
    from memcore.exit_codes import exit_code_for

    out, problem = _add(args)
    print_json(out)
    if problem is not None:  # the write waits in the spool; the backend did not take it
        sys.stderr.write(f"tablestore-mem: error: {' '.join(problem.message.split())}\n")
        raise SystemExit(int(exit_code_for(problem)))


def _doctor(args: argparse.Namespace) -> dict[str, Any]:
    from memcore_hermes.commands.doctor import run_doctor
    from memcore_hermes.config.home import HermesHome

    def progress(message: str) -> None:
        sys.stderr.write(message + "\n")

    user_id, platform = who(args)
    return run_doctor(HermesHome(), user_id=user_id, platform=platform, progress=progress)


def _add(args: argparse.Namespace) -> tuple[dict[str, Any], Any]:
    """The answer, and the error that kept the write from the backend (None when it landed)."""
    from memcore.errors import MemcoreError, Unavailable

    # Without --sync the vector is left to the next search: this process loads no model.
    provider = open_provider(args, defer_vectors=not args.sync)
    runtime = provider.runtime
    try:
        metadata = _parse_metadata(args.metadata)
        if args.sync:
            receipt = runtime.remember_now(args.text, metadata=metadata)
            synced = {
                "status": receipt.status,
                "memory_ids": list(receipt.memory_ids),
                "task_id": receipt.task_id,
                "scope": str(runtime.scope),
            }
            return synced, None
        key = runtime.remember(args.text, metadata=metadata)
        problem: MemcoreError | None
        try:
            runtime.handle.ready()  # an unreachable endpoint answers in seconds, not a timeout
        except MemcoreError as exc:
            delivered, problem = False, exc
        else:
            delivered, problem = runtime.flush(runtime.config.timeout), None
        ids = runtime.deliverer.receipts.get(key)
        out: dict[str, Any] = {
            "status": "stored" if delivered or ids else "queued",
            "memory_ids": list(ids or ()),
            "scope": str(runtime.scope),
        }
        if not delivered and not ids:
            problem = (
                problem
                or runtime.deliverer.last_error
                or Unavailable("the backend did not take the write in time", field="backend")
            )
            out["error"] = problem.to_dict()
            out["note"] = (
                "kept in the spool; the next command or agent start delivers it once the "
                "backend takes it (fix the cause above first) and it gets its memory id then"
            )
        elif not ids:
            out["note"] = "the backend assigns the memory id asynchronously; --sync waits for it"
        elif getattr(runtime.handle.store, "defer_vectors", False):
            out["note"] = (
                "found by its words now; its vector (for search by meaning) is computed by the "
                "next search or the agent's background re-embedding; --sync embeds it at once"
            )
        return out, (None if delivered or ids else problem)
    finally:
        provider.shutdown()


def _parse_metadata(pairs: list[str]) -> dict[str, str]:
    from memcore.errors import InvalidInput

    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise InvalidInput(f"--metadata expects KEY=VALUE, got {pair!r}", field="metadata")
        out[key] = value
    return out


def _run_search(args: argparse.Namespace) -> None:
    from memcore_hermes.session.clock import asked_at, now
    from memcore_hermes.session.tools import hit_json

    # As the search tool asks: now in Hermes' time zone, unless --at says when.
    asked = asked_at(args.at, now(), field="at", label="--at")
    with CommandSession(args) as session:
        hits = session.service.search(args.query, top_k=args.top_k, reference_time=asked)
        results = [hit_json(h, asked.tzinfo) for h in hits]
        print_json({"scope": str(session.service.search_pattern), "results": results})


def _run_list(args: argparse.Namespace) -> None:
    from memcore import limits
    from memcore.transfer import memory_record

    limits.check_limit(args.limit)
    with CommandSession(args) as session:
        if args.all:
            items, token = [memory_record(m) for m in session.memories()], None
        else:
            page = session.service.profile(limit=args.limit, next_token=args.next_token)
            items, token = [memory_record(m) for m in page.items], page.next_token
        print_json({"scope": session.pattern, "items": items, "next_token": token})


def _run_get(args: argparse.Namespace) -> None:
    from memcore.transfer import memory_record

    with CommandSession(args) as session:
        print_json(memory_record(session.service.get(args.memory_id)))


def _run_forget(args: argparse.Namespace) -> None:
    from memcore.errors import no_terminal_to_confirm, not_confirmed
    from memcore.wording import counted

    ids = list(dict.fromkeys(args.memory_ids))
    with CommandSession(args) as session:
        found = [session.service.get(i) for i in ids]  # every id checked before any delete
        if not args.yes:
            what = counted(len(found), "memory")
            if sys.stdin is None or not sys.stdin.isatty():  # `<&-` leaves it None
                raise no_terminal_to_confirm(what)
            preview = "; ".join(m.text[:60] for m in found[:3])
            # Asked on stderr, as progress is: stdout stays the one JSON document.
            sys.stderr.write(f"Delete {what} ({preview})? [y/N] ")
            sys.stderr.flush()
            answer = sys.stdin.readline()
            if answer.strip().lower() not in ("y", "yes"):
                raise not_confirmed()
        forgotten = []
        for memory in found:
            scope = session.service.forget(memory.id)
            forgotten.append({"id": memory.id, "scope": scope.as_dict(), "deleted": True})
        print_json({"forgotten": forgotten})


def _run_export(args: argparse.Namespace) -> None:
    from memcore.errors import InvalidInput
    from memcore.transfer import export_lines
    from memcore.wording import counted
    from memcore_hermes.config.home import home_expanded
    from memcore_sqlite.storage.file_modes import make_home
    from memcore_sqlite.storage.out_file import is_stdout, open_out

    to_stdout = args.out is None or args.out == "-"  # as import's '-' is stdin
    if not to_stdout and not args.out.strip():  # else ".": "cannot write . (a folder)"
        raise InvalidInput(
            "--out is empty (an unset shell variable?); give a file, or '-' (or no --out) "
            "for stdout",
            field="out",
        )
    target = None if to_stdout else home_expanded(args.out)
    if not to_stdout and target is None:  # "~nobody/x": refused before the store opens
        raise InvalidInput(
            f"cannot write {args.out} (a home folder this system does not know)", field="out"
        )
    counts: dict[str, int] = {}
    with CommandSession(args) as session:
        # The memories, then the message log where the store keeps one (the turns that
        # recall_neighbours shows), so an import restores both.
        lines = list(export_lines(session.service, counts))
    memories, messages = counts["memories"], counts["messages"]
    said = f"exported {counted(memories, 'memory')}" + (
        f" and {counted(messages, 'message')}" if messages else ""
    )
    if target is None:
        write("".join(lines))
        say(said)
        return
    from pathlib import Path

    # As `memcore export --out`: a FIFO or device written through, a symlink's target replaced.
    if not target.parent.exists():
        make_home(target.parent, advice="choose another --out")
    onto_stdout = is_stdout(target)
    with open_out(Path(args.out)) as fh:
        fh.write("".join(lines))
    if onto_stdout:  # a line after the data would end the backup as no import reads it
        say(f"{said} to {target}")
        return
    print_json({"exported": memories, "messages": messages, "out": str(target)})


def _run_import(args: argparse.Namespace) -> None:
    from memcore.errors import InvalidInput, PermissionDenied
    from memcore.transfer import split_lines
    from memcore_hermes.commands.importing import import_lines
    from memcore_hermes.config.home import home_expanded

    if not args.file.strip():  # else " does not exist": a file the user never named
        raise InvalidInput(
            "the file name is empty (an unset shell variable?); give a file, or '-' for stdin",
            field="file",
        )
    # '~' is the home folder, as for export's --out (and memcore import): a file written
    # with one path is read back with it.
    path = None if args.file == "-" else home_expanded(args.file)
    if args.file != "-" and path is None:  # "~nobody/x": no such user's home
        raise InvalidInput(
            f"{args.file} names a home folder this system does not know", field="file"
        )
    try:
        if path is None:
            # A byte order mark, as a file's is (utf-8-sig): not part of the first record.
            raw_lines = split_lines(_bounded(sys.stdin, args.file).removeprefix("\ufeff"))
        else:
            with open(path, encoding="utf-8-sig") as fh:
                raw_lines = split_lines(_bounded(fh, args.file))
    except FileNotFoundError:
        raise InvalidInput(f"{args.file} does not exist", field="file") from None
    except PermissionError:  # exit 4, the code for a permission: not a malformed file
        raise PermissionDenied(
            f"cannot read {args.file} (permission denied)", field="file"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise InvalidInput(f"cannot read {args.file} ({reason})", field="file") from None
    with CommandSession(args, writes=True) as session:
        print_json(import_lines(session.service, raw_lines, session.memories()))


#: The most an import reads (characters): an endless input (``/dev/zero``, ``yes |``) grew
#: until the machine ran out of memory and ended in a MemoryError traceback.
MAX_IMPORT_CHARS = 256 << 20


def _bounded(stream: Any, shown: str) -> str:
    """All of ``stream``, refused past :data:`MAX_IMPORT_CHARS`."""
    text = stream.read(MAX_IMPORT_CHARS + 1)
    if len(text) > MAX_IMPORT_CHARS:
        from memcore.errors import InvalidInput

        raise InvalidInput(
            f"{shown} is larger than an import reads ({MAX_IMPORT_CHARS >> 20} MiB at most); "
            "split it into smaller files",
            field="file",
        )
    return str(text)


def _run_stats(args: argparse.Namespace) -> None:
    from memcore_hermes.commands.doctor import spool_report
    from memcore_hermes.config.home import HermesHome

    with CommandSession(args) as session:
        by_agent: dict[str, int] = {}
        total, oldest, newest = 0, None, None
        for memory in session.memories():
            total += 1
            by_agent[memory.scope.agent_id] = by_agent.get(memory.scope.agent_id, 0) + 1
            stamp = memory.created_at
            if stamp is not None:
                oldest = stamp if oldest is None else min(oldest, stamp)
                newest = stamp if newest is None else max(newest, stamp)
        spool = spool_report(HermesHome())
        print_json(
            {
                "scope": session.pattern,
                "memories": total,
                "by_agent": by_agent,
                "oldest_created_at": oldest,
                "newest_created_at": newest,
                "spool": {k: spool.get(k) for k in ("depth", "last_error", "dead_letters")},
            }
        )


def _run_reindex(args: argparse.Namespace) -> None:
    print_json(_reindex(args))


def _run_migrate(args: argparse.Namespace) -> None:
    from memcore.errors import InvalidInput
    from memcore.scope import resolve_scope
    from memcore.service import MemoryService
    from memcore_hermes.commands.migrating import migrate_tenant
    from memcore_hermes.session.tenancy import per_platform

    with CommandSession(args) as session:
        config = session.config
        if not per_platform(config):
            raise InvalidInput(
                "nothing to move: tenants are not per platform here (tenant_scope: user, or a "
                "fixed tenant_id)",
                field="tenant_scope",
            )

        def open_service(context: Any) -> MemoryService:
            scope = resolve_scope(context, app_id=config.app_id)
            return MemoryService(session.store, store_name=config.memory_store_name, scope=scope)

        print_json(
            migrate_tenant(
                open_service,
                args.legacy_user,
                platform=args.fallback_platform,
                alts=_alternate_ids(args.alt_users),
                dry_run=args.dry_run,
            )
        )


def _alternate_ids(given: list[str]) -> dict[str, str]:
    """``--user-id-alt PLATFORM=ID`` options as a mapping; one platform given twice, or a
    value without ``=``, is refused."""
    from memcore.errors import InvalidInput

    alts: dict[str, str] = {}
    for value in given:
        platform, sep, alt = value.partition("=")
        if not sep:
            raise InvalidInput(
                f"--user-id-alt takes PLATFORM=ID (signal=8c1f...), not {value!r}",
                field="user_id_alt",
            )
        if alts.setdefault(platform, alt) != alt:
            raise InvalidInput(
                f"--user-id-alt gives {platform!r} two ids; give one", field="user_id_alt"
            )
    return alts


def _setup(args: argparse.Namespace) -> None:
    """The wizard's words go to stderr (a person reads them on the terminal either way), and
    its outcome to stdout as one JSON document, as every other command's."""
    from memcore_hermes.backend.setup import Answers, run_setup
    from memcore_hermes.config.home import HermesHome

    answers = Answers(
        backend=args.backend,
        instance_name=args.instance_name,
        endpoint=args.endpoint,
        region=args.region,
        tenant_id=args.tenant_id,
        tenant_scope=args.tenant_scope,
    )
    home = HermesHome()
    readiness = run_setup(home, answers=answers, say=lambda line: print(line, file=sys.stderr))
    if readiness is None:  # cancelled: nothing saved
        print_json({"saved": False})
        raise SystemExit(1)
    print_json(
        {
            "saved": True,
            "config": str(home.config_file),
            "available": readiness.available,
            **readiness.status_lines(),
        }
    )
    if not readiness.available:  # saved, but unusable as it stands: a configuration error
        from memcore.exit_codes import ExitCode

        why = " ".join(f"{readiness.reason} {readiness.fix}".split()) or "no usable backend"
        sys.stderr.write(f"tablestore-mem: error: {why}\n")
        raise SystemExit(int(ExitCode.USAGE))


def _reindex(args: argparse.Namespace) -> dict[str, Any]:
    from memcore_hermes.backend.reindex import check_reindexable, missing_vectors, reindex

    # A read of the store, not a session: a mistyped store is refused, not made empty.
    with CommandSession(args, check=check_reindexable) as session:
        store, name = session.store, session.config.memory_store_name
        total = missing_vectors(store, name) or 0
        with ProgressBar("re-embedding", total) as step:
            done = reindex(store, name, progress=step)
        return {"embedded": done, "model": store.embedder.name}


HANDLERS = {
    "add": _run_add,
    "search": _run_search,
    "list": _run_list,
    "get": _run_get,
    "forget": _run_forget,
    "export": _run_export,
    "import": _run_import,
    "stats": _run_stats,
    "doctor": _run_doctor,
    "setup": lambda args: _setup(args),
    "reindex": _run_reindex,
    "migrate-tenant": _run_migrate,
}
