"""The checks behind ``memcore doctor``. None changes a memory or a setting: a store that does
not exist yet is reported, never created (the search mode is probed on an in-memory database
instead), and a file at an older schema is read as it is, never upgraded (:func:`_older_file`).
The test search is a search like any other: it embeds what an ``add`` deferred, and is
logged in the request log."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import attrs

from memcore.errors import InvalidInput, MemcoreError, NotFound, PermissionDenied, Unavailable
from memcore_cli.output.exit_codes import ExitCode, exit_code_for
from memcore_cli.wiring.state import CliState
from memcore_sqlite.storage.room import free_bytes, nearest_existing, too_little


@attrs.frozen
class Check:
    name: str
    ok: bool
    detail: str
    #: Not run (it needs what doctor must not do, such as upgrading the file): neither a pass
    #: nor a failure, shown as SKIP.
    skipped: bool = False

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "ok": self.ok, "detail": self.detail}
        if self.skipped:
            out["skipped"] = True
        return out


class _Checks:
    def __init__(self) -> None:
        self.items: list[Check] = []
        self.code = 0

    def ok(self, name: str, detail: str) -> None:
        self.items.append(Check(name, True, detail))

    def skip(self, name: str, detail: str) -> None:
        self.items.append(Check(name, True, detail, skipped=True))

    def fail(self, name: str, detail: str, exc: BaseException | None = None) -> None:
        self.items.append(Check(name, False, detail))
        if not self.code:
            self.code = int(exit_code_for(exc)) if exc is not None else int(ExitCode.UNEXPECTED)


def _message(exc: BaseException) -> str:
    return exc.message if isinstance(exc, MemcoreError) else f"{type(exc).__name__}: {exc}"


def _writable_dir(path: Path) -> bool:
    probe = nearest_existing(path)
    return probe.is_dir() and os.access(probe, os.W_OK | os.X_OK)


def _read_only_files(db: Path) -> list[Path]:
    """The database and those of its WAL files that exist but this process cannot write:
    SQLite refuses every write then (SQLITE_READONLY), though reads still work."""
    files = [db, Path(f"{db}-wal"), Path(f"{db}-shm")]
    return [f for f in files if f.exists() and not os.access(f, os.W_OK)]


def _search_mode(store: Any) -> str:
    mode = getattr(store, "search_mode", None)
    if mode is None:
        return (
            "decided by the service" if type(store).__name__.startswith("TableStore") else "unknown"
        )
    return str(mode)


def run_checks(
    state: CliState, *, live: bool = False, record: Path | None = None
) -> tuple[list[Check], int]:
    """``live``: also call each read-only API of the store (see :func:`_live_checks`)."""
    checks = _Checks()
    try:
        runtime = state.runtime()
    except Exception as exc:
        checks.fail("config", _message(exc), exc)
        return checks.items, checks.code
    settings = runtime.settings
    exists = settings.config_path.exists()
    checks.ok(
        "config",
        f"backend {settings.backend} (from {settings.backend_source}); config file "
        f"{settings.config_path}{'' if exists else ' (none; using defaults)'}",
    )
    checks.ok(
        "scope", f"writes go to {settings.scope.scope}; reads cover {settings.scope.read_pattern}"
    )
    if settings.backend == "local":
        _local(state, runtime, checks)
    else:
        _remote(state, runtime, checks)
    if live:
        _live_checks(runtime, checks, record)
    return checks.items, checks.code


def _live_checks(runtime: Any, checks: _Checks, record: Path | None) -> None:
    """Per read-only API: does the service's answer have the documented shape?"""
    none = "only the tablestore backend has a service to check"
    if runtime.settings.backend == "local":
        # Asked before the store is opened: opening the embedded one creates its database.
        checks.ok("live check", none)
        return
    try:
        store = runtime.store
    except Exception:
        return  # already reported by the backend check
    send = getattr(store, "call_read_only", None)
    if send is None:
        checks.ok("live check", none)
        return
    from memcore_tablestore import live_check

    settings = runtime.settings
    try:
        results = live_check.run(
            send, runtime.store_name, settings.scope.scope, settings.scope.read_pattern, record
        )
    except OSError as exc:
        if record is None:
            raise
        # The folder to save in is a file, or cannot be written: a failed check, not a crash.
        error = _record_error(exc, record)
        checks.fail("recorded", error.message, error)
        return
    for result in results:
        if result.ok:
            checks.ok(f"live {result.api}", result.detail)
        else:
            from memcore.errors import ProtocolError

            checks.fail(f"live {result.api}", result.detail, ProtocolError(result.detail))
    if record is not None:
        saved = sum(result.answered for result in results)
        if saved:
            detail = f"{saved} answers saved in {record} (ids, scopes and texts redacted)"
            checks.ok("recorded", detail)
        else:  # every call failed: said above, and nothing was there to save
            checks.fail("recorded", f"nothing saved in {record}: no call was answered")


def _record_error(exc: OSError, record: Path) -> MemcoreError:
    """Why the answers could not be saved in ``record``: exit 4 for a permission problem or a
    read-only file system, else 2 (the folder is a file, say)."""
    from memcore_sqlite.storage.file_modes import not_writable

    if isinstance(exc, (FileExistsError, NotADirectoryError)):
        why = "it (or a folder above it) is a file, not a folder"
    else:
        why = not_writable(exc) or exc.strerror or type(exc).__name__
    message = f"cannot save the answers in {record}: {why}"
    if not_writable(exc) is not None:
        return PermissionDenied(message, field="record")
    return InvalidInput(message, field="record")


def _local(state: CliState, runtime: Any, checks: _Checks) -> None:
    settings = runtime.settings
    from memcore_sqlite.storage import file_modes

    if file_modes.open_to_all(settings.db_path.parent):  # every command refuses it (exit 4)
        detail = (
            f"{settings.db_path.parent} can be written by every user, who could read the "
            f"memories through files they put beside the database: every command refuses it; "
            f"use a folder only you can write ({settings.move_advice})"
        )
        checks.fail("data home", detail, PermissionDenied(detail, field="home"))
        return
    writable = _writable_dir(settings.db_path.parent)
    full = too_little(free_bytes(settings.db_path.parent)) if writable else None
    if full is not None:
        detail = f"{settings.db_path.parent} is writable, but {full}"
        checks.fail("data home", detail, Unavailable(detail, field="home", retryable=True))
    elif writable and not settings.db_path.parent.exists():
        # Said "is writable" of a folder that is not there yet.
        made_in = nearest_existing(settings.db_path.parent)
        checks.ok(
            "data home",
            f"{settings.db_path.parent} does not exist yet; it can be made ({made_in} is writable)",
        )
    elif writable:
        checks.ok("data home", f"{settings.db_path.parent} is writable")
    else:
        detail = (
            f"{settings.db_path.parent} is not writable: reads work, writes are refused "
            f"({settings.move_advice})"
        )
        checks.fail("data home", detail, PermissionDenied(detail, field="home"))
    if not settings.db_path.exists():
        checks.ok(
            "database",
            f"{settings.db_path} does not exist yet; the first command that opens the store "
            "creates it",
        )
        _probe_search_mode(state, runtime, checks)
        return
    if settings.db_path.is_dir():
        # Not a damaged file (whose repair copies it aside): a path no store can open, as
        # every other command says (exit 2).
        detail = f"the memory database {settings.db_path} is a folder; give the path of a file"
        checks.fail("database", detail, InvalidInput(detail, field="db_path"))
        return
    size = f"{settings.db_path.stat().st_size:,} bytes"
    read_only = _read_only_files(settings.db_path)
    if read_only:
        detail = (
            f"{settings.db_path} ({size}) is read-only ({', '.join(map(str, read_only))} cannot "
            "be written): reads work, writes are refused; make it writable (chmod u+w) or "
            "run as its owner"
        )
        checks.fail("database", detail, PermissionDenied(detail, field="db_path"))
    else:
        checks.ok("database", f"{settings.db_path} ({size}, writable)")
    integrity_check(settings.db_path, checks)
    from memcore_sqlite.storage.older_schema import older_schema

    older = older_schema(settings.db_path)
    if older is None:
        _store_checks(runtime, checks)
    else:
        upgradable = not read_only and file_modes.writable(settings.db_path)
        _older_file(state, runtime, older, checks, writable=upgradable)


def integrity_check(path: Path, checks: _Checks) -> None:
    """SQLite's ``quick_check`` of the file (every page read), and how long it took."""
    from memcore_sqlite.storage import integrity

    try:
        report = integrity.quick_check(path)
    except MemcoreError as exc:  # it could not read the file (a full disk): no verdict on it
        checks.fail("integrity", f"could not check the file: {exc.message}", exc)
        return
    took = f"{report.seconds * 1000:.0f} ms"
    if report.ok:
        checks.ok("integrity", f"quick_check ok in {took}")
        return
    error = integrity.corrupted(path, f"quick_check in {took}: {report.problems[0]}")
    checks.fail("integrity", error.message, error)


def _older_file(
    state: CliState, runtime: Any, older: Any, checks: _Checks, *, writable: bool
) -> None:
    """A file an older memcore wrote: opening the store would upgrade it, and that release,
    if still in use, then refuses it. Its version, who has it open and its count are read on
    a read-only connection; what needs the upgraded file is reported as not run."""
    from memcore.errors import Conflict

    settings = runtime.settings
    behind = f"version {older.version}, older than this memcore's ({older.current})"
    if older.others:
        pids = ", ".join(str(pid) for pid in older.others)
        detail = (
            f"{behind}, and open in another process (pid {pids}), which may run an older "
            "memcore: read without upgrading it; the upgrade waits until it closes the file, "
            "and until then every command that opens the file is refused (exit 5); stop that "
            "process (a Hermes gateway, an MCP server, another memcore) and run the command again"
        )
        checks.fail("schema", detail, Conflict(detail, field="schema_version", retryable=True))
    elif not writable:
        detail = (
            f"{behind}: read without upgrading it; the file is read-only here, so it cannot be "
            "upgraded: open it once where it is writable"
        )
        checks.fail("schema", detail, PermissionDenied(detail, field="schema_version"))
    else:
        checks.ok(
            "schema",
            f"{behind}: read without upgrading it; the next command that opens the file "
            "upgrades it, and an older memcore then refuses it",
        )
    needs = f"needs the file at schema {older.current}"
    checks.skip("backend", f"not opened: opening the file upgrades it to schema {older.current}")
    mode = _probe_search_mode(state, runtime, checks)
    _older_store(older, settings, checks)
    if mode == "hybrid":
        checks.skip("vectors", f"not counted: this {needs}")
    checks.skip("search", f"not run: a search {needs}")


def _older_store(older: Any, settings: Any, checks: _Checks) -> None:
    """The configured memory store of an older file, and its memories in the read scope."""
    from memcore_sqlite.storage.older_schema import stored_count

    name = settings.config.memory_store_name
    pattern = settings.scope.read_pattern
    try:
        found = stored_count(older.path, name, pattern)
    except Exception as exc:
        checks.fail("memory store", _message(exc), exc)
        return
    if found is None:
        if settings.config.auto_create_store:
            checks.ok("memory store", f"{name} does not exist yet; the first write creates it")
        else:
            detail = f"{name} does not exist and auto_create_store is off"
            checks.fail("memory store", detail, NotFound(detail, field="memory_store_name"))
        return
    noun = "memory" if found.memories == 1 else "memories"
    checks.ok(
        "memory store",
        f"{found.name} (schema {older.version}; {found.memories} {noun} in {pattern})",
    )


def _probe_search_mode(state: CliState, runtime: Any, checks: _Checks) -> str | None:
    """Open a throwaway in-memory store to learn which search mode this install gives."""
    probe_settings = attrs.evolve(runtime.settings, db_path=Path(":memory:"))
    factory = state.overrides.store_factory
    try:
        if factory is None:
            from memcore_cli.wiring.runtime import open_default_store

            store = open_default_store(probe_settings)
        else:
            store = factory(probe_settings)
    except Exception as exc:
        checks.fail("search mode", _message(exc), exc)
        return None
    try:
        checks.ok("search mode", _describe_mode(store, runtime.settings.config.embedder))
        return _search_mode(store)
    finally:
        store.close()


def _describe_mode(store: Any, embedder: str = "auto") -> str:
    mode = _search_mode(store)
    if mode == "lexical" and embedder == "none":
        return "lexical (the config sets embedder none)"
    if mode == "lexical":
        return "lexical (install memcore-sqlite[semantic] for hybrid semantic search)"
    if mode == "hybrid":
        model = getattr(getattr(store, "embedder", None), "name", None)
        return f"hybrid (lexical + semantic{', ' + model if model else ''})"
    return mode


def _vector_check(store: Any, name: str, checks: _Checks, pattern: Any) -> None:
    """How many memories semantic search cannot see yet (written without an embedder, by
    another model, or by an ``add`` that deferred its vector) or sees by a stale vector (one
    an older release computed from the speaker's label too)."""
    missing = getattr(store, "missing_vectors", None)
    model = getattr(getattr(store, "embedder", None), "name", None)
    if missing is None or model is None:
        return
    try:
        # The reads' own scope: another tenant's deferred writes are none of this one's.
        count = int(missing(name, pattern))
    except Exception as exc:
        checks.fail("vectors", _message(exc), exc)
        return
    if count == 0:
        checks.ok("vectors", f"every memory has a vector from {model}")
        return
    noun = "memory has" if count == 1 else "memories have"
    checks.ok(
        "vectors",
        f"{count} {noun} no current vector from {model} yet (searches find them by their "
        "words, or by an older release's vector); the next search embeds those an add "
        "deferred, 'memcore reindex' embeds them all",
    )


def _remote(state: CliState, runtime: Any, checks: _Checks) -> None:
    settings = runtime.settings
    if settings.backend == "tablestore":
        from memcore_cli.wiring.runtime import tablestore_auth
        from memcore_tablestore.credentials import ApiKey

        env = None if state.overrides.environ is None else state.environ
        try:
            creds = tablestore_auth(settings, env)  # a Hermes home's .env keys too
        except Exception as exc:
            checks.fail("credentials", _message(exc), exc)
            return
        if isinstance(creds, ApiKey):
            kind = "API key, over the access key pair if one is set too"
        else:
            kind = "with an STS token" if creds.security_token else "access key pair"
        checks.ok("credentials", f"found ({kind}; never shown)")
        config = settings.config
        if not (config.endpoint or config.instance_name):
            checks.fail(
                "endpoint",
                "no endpoint or instance_name configured; run 'memcore provision' or "
                "'memcore config set endpoint https://<instance>.<region>.ots.aliyuncs.com'",
                NotFound("no instance configured", field="endpoint"),
            )
            return
        from memcore.config import without_userinfo

        checks.ok("endpoint", f"{without_userinfo(config.endpoint or config.instance_name)}")
    _store_checks(runtime, checks)


def _store_checks(runtime: Any, checks: _Checks) -> None:
    try:
        store = runtime.store
    except Exception as exc:
        checks.fail("backend", _message(exc), exc)
        return
    checks.ok("backend", f"{type(store).__name__} opened")
    checks.ok("search mode", _describe_mode(store, runtime.settings.config.embedder))
    name = runtime.store_name
    try:
        info = store.describe_store(name)
    except NotFound as exc:
        from memcore.store_names import MISTYPED, did_you_mean

        hint = did_you_mean(store, name)
        if runtime.settings.config.auto_create_store and not hint:
            detail = f"{name} does not exist yet; the first write creates it"
            checks.ok("memory store", detail)
        elif runtime.settings.config.auto_create_store:  # a typo: every read refuses (exit 3)
            detail = f"{name} {MISTYPED}{hint}"
            checks.fail("memory store", detail, exc)
        else:
            detail = f"{name} does not exist and auto_create_store is off{hint}"
            checks.fail("memory store", detail, exc)
        return
    except Exception as exc:
        checks.fail("memory store", _message(exc), exc)
        return
    mode = f", storage mode {info.storage_mode}" if info.storage_mode else ""
    checks.ok("memory store", f"{info.name} ({info.status}{mode})")
    _vector_check(store, name, checks, runtime.settings.scope.read_pattern)
    started = time.perf_counter()
    try:
        hits = store.search(name, runtime.settings.scope.read_pattern, "memcore doctor", top_k=1)
    except Exception as exc:
        checks.fail("search", _message(exc), exc)
        return
    elapsed = (time.perf_counter() - started) * 1000
    checks.ok(
        "search", f"answered in {elapsed:.0f} ms ({len(hits)} hit{'s' if len(hits) != 1 else ''})"
    )
