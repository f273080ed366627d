"""``hermes tablestore-mem doctor``: read-only diagnostics as a JSON-ready dict.

It never writes memories or creates the store; on a first run it does run the bootstrap
(that is its job) and then checks that the new endpoint answers. A local file at an older
schema is read as it is, never upgraded (:func:`_older_file`): the older memcore that wrote
it may still be in use, and refuses an upgraded file. Secrets are shown only as
"set" or "missing", and the whole report is redacted once more before it is printed.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from typing import Any

from memcore.errors import ConfigError, MemcoreError, NotFound, PermissionDenied, StoreNotFound
from memcore.scope import SessionContext, resolve_scope
from memcore_hermes.config.credentials import AccessKeys, access_keys, load_environment, redact
from memcore_hermes.config.envfile import AK_VAR, API_KEY_VAR, SK_VAR, TOKEN_VAR, env_file_problem
from memcore_hermes.config.home import HermesHome

_SAMPLE = 5


def _error(exc: MemcoreError) -> dict[str, Any]:
    return exc.to_dict()


def run_doctor(
    home: HermesHome,
    *,
    environ: Mapping[str, str] | None = None,
    user_id: str | None = None,
    platform: str | None = None,
    progress: Any = None,
    provisioner_options: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Inspect config, secrets, backend, store, memories and spool; never raises."""
    report: dict[str, Any] = {
        "provider": "tablestore-mem",
        "hermes_home": str(home.root),
        "config_file": str(home.config_file),
        "spool_file": str(home.spool_file),
        "ok": False,
    }
    keys: AccessKeys | None = None
    try:
        config = home.load_config()
    except ConfigError as exc:
        report["config"] = {"error": _error(exc)}
        return report
    problem = env_file_problem(home.env_file)
    secrets_report: dict[str, Any] = {
        "env_file": str(home.env_file),
        "env_file_ok": problem is None,
    }
    if problem:
        secrets_report["env_file_problem"] = problem
    try:
        env = load_environment(home.env_file, environ)
        keys = access_keys(env)
    except ConfigError as exc:
        secrets_report["error"] = _error(exc)
        env = dict(os.environ if environ is None else environ)  # an unsafe file adds nothing
    secrets_report[AK_VAR] = "set" if keys and keys.has_pair else "missing"
    secrets_report[SK_VAR] = "set" if keys and keys.has_pair else "missing"
    secrets_report[TOKEN_VAR] = "set" if keys and keys.security_token else "missing"
    secrets_report[API_KEY_VAR] = "set" if keys and keys.api_key else "missing"
    report["secrets"] = secrets_report

    scope = resolve_scope(
        SessionContext(user_id=user_id, session_id="cli", platform=platform),
        app_id=config.app_id,
        tenant_id=config.tenant_id,
    )
    report["scope"] = {"write": str(scope), "read": str(scope.tenant_pattern())}
    report["spool"] = spool_report(home)
    report["disk"] = disk_report(home, config, keys)
    try:
        from memcore_hermes.backend.open_store import choose_backend, open_backend_store

        backend = choose_backend(config, keys)
        report["backend"] = backend
        if backend == "local" and not home.local_db_file(config).exists():
            _no_file_yet(report, home, config, env)
            if "backend_error" not in report:
                report["ok"] = _all_well(report, problem)
            return _redacted(report, keys)
        if backend == "local":
            report["integrity"] = integrity_report(home.local_db_file(config))
            from memcore_sqlite.storage.older_schema import older_schema

            older = older_schema(home.local_db_file(config))
            if older is not None:
                _older_file(report, home, config, older, scope, env, platform, user_id)
                report["ok"] = _all_well(report, problem)
                return _redacted(report, keys)
        bootstrapping = backend == "tablestore" and not (config.instance_name and config.endpoint)
        config, store = open_backend_store(
            home,
            config,
            keys,
            progress=progress,
            provisioner_options=provisioner_options,
            environ=env,
        )
    except MemcoreError as exc:
        report["backend_error"] = _error(exc)
        report["config"] = _config_report(config)
        return _redacted(report, keys)
    report["config"] = _config_report(config)
    from memcore.config import without_userinfo

    shown_endpoint = without_userinfo(config.endpoint)
    report["endpoint"] = shown_endpoint if report["backend"] == "tablestore" else None
    if report["backend"] == "local":
        report["local_db"] = str(home.local_db_file(config))
    report["search"] = search_report(store, config)
    try:
        if report["spool"].get("depth"):  # delivered first: doctor shows what still waits
            from memcore_hermes.outbox.drain import drain_spool

            try:
                report["drained"] = drain_spool(home, store, config)["delivered"]
            except MemcoreError as exc:
                report["drained"] = 0
                report["drain_error"] = _error(exc)
            report["spool"] = spool_report(home)
        report["store"] = _store_report(store, config.memory_store_name, scope)
        if platform is not None and user_id is not None:
            from memcore_hermes.session import tenancy

            if tenancy.has_legacy_memories(store, config, user_id):
                report["legacy_tenant"] = {
                    "read": str(tenancy.legacy_scope(config.app_id, user_id).tenant_pattern()),
                    "note": "memories kept before tenants were per platform; no session reads "
                    "them. " + tenancy.migrate_advice(user_id),
                }
        if report["backend"] == "local":
            lacking = _without_vector(store, config)
            report["search"]["memories_without_vector"] = lacking
            if lacking:
                report["search"]["reindex"] = (
                    "hermes tablestore-mem reindex computes them now; otherwise the next search "
                    "does for an add without --sync, and the provider re-embeds the rest in the "
                    "background when the agent starts"
                )
        if bootstrapping:
            report["bootstrap"] = {
                "instance_name": config.instance_name,
                "endpoint": shown_endpoint,
                "serves_requests": _serves_requests(store),
            }
    finally:
        try:
            store.close()
        except MemcoreError:
            pass
    report["ok"] = _all_well(report, problem)
    return _redacted(report, keys)


def _all_well(report: dict[str, Any], env_problem: str | None) -> bool:
    """Every check passed: store, bootstrap, ``.env``, spool, integrity, schema."""
    spool = report["spool"]
    schema = report.get("schema", {})
    return bool(
        "error" not in report["store"]
        and report.get("bootstrap", {}).get("serves_requests", True)
        and env_problem is None
        and not spool.get("full")
        and all(folder["ok"] for folder in report.get("disk", ()))
        and not spool.get("dead_letters")
        and not spool.get("error")
        and report.get("integrity", {}).get("ok", True)
        and not schema.get("open_in_pids")
        and schema.get("upgradable", True)
    )


def _no_file_yet(
    report: dict[str, Any], home: HermesHome, config: Any, env: Mapping[str, str]
) -> None:
    """A local store not made yet: a diagnosis creates nothing (opening the store would
    make the file); what a session will search with is found on a store in memory."""
    db = home.local_db_file(config)
    report["config"] = _config_report(config)
    search = _probe_search(home, config, env)
    if "error" in search:  # the settings a session would refuse are refused here too
        report["backend_error"] = search["error"]
        return
    report["search"] = search
    report["endpoint"] = None
    report["local_db"] = str(db)
    report["store"] = {
        "name": config.memory_store_name,
        "status": "missing (the database file does not exist yet: the first session or "
        "command that writes a memory creates it)",
    }
    from memcore_hermes.backend.open_store import location_advice
    from memcore_sqlite.storage.file_modes import in_the_way

    blocked = in_the_way(db.parent)
    if blocked is not None:  # no session can create it: every write would wait in the spool
        advice = location_advice(config, home)
        message = f"cannot create {db.parent}: {blocked} ({advice})"
        report["store"]["status"] = "missing (and no session can create it)"
        report["store"]["error"] = _error(PermissionDenied(message, field="local_path"))


def _older_file(
    report: dict[str, Any],
    home: HermesHome,
    config: Any,
    older: Any,
    scope: Any,
    env: Mapping[str, str],
    platform: str | None,
    user_id: str | None,
) -> None:
    """A local file an older memcore wrote: opening the store would upgrade it, and that
    release, if still in use, then refuses it. Its version, who has it open and its count are
    read on a read-only connection; what needs the upgraded file is listed as not run."""
    db = home.local_db_file(config)
    report["config"] = _config_report(config)
    report["endpoint"] = None
    report["local_db"] = str(db)
    report["schema"] = _schema_report(older, db)
    report["search"] = _probe_search(home, config, env)
    report["store"] = _older_store(older, config.memory_store_name, scope)
    not_run = ["sample"]
    if report["search"].get("embedder"):
        not_run.append("memories_without_vector")
    if report["spool"].get("depth"):
        not_run.append("spool delivery")
    if platform is not None and user_id is not None:
        not_run.append("legacy_tenant")
    report["not_run"] = {
        "checks": not_run,
        "reason": f"they need the file at schema {older.current}, and opening it upgrades it",
    }


def _schema_report(older: Any, db: Any) -> dict[str, Any]:
    """The file's schema, and what the next open does with it."""
    pids = list(older.others)
    out: dict[str, Any] = {
        "version": older.version,
        "current": older.current,
        "upgraded": False,
        "open_in_pids": pids,
        "upgradable": os.access(db, os.W_OK) and os.access(os.path.dirname(db), os.W_OK),
    }
    said = "read without upgrading it"
    if not out["upgradable"]:
        out["note"] = (
            f"{said}; the file is read-only here, so it cannot be upgraded to schema "
            f"{older.current}: open it once where it is writable"
        )
    elif pids:
        out["note"] = (
            f"{said}; it is open in another process (pid {', '.join(map(str, pids))}), which "
            f"may run an older memcore: the upgrade to schema {older.current} waits until that "
            "process closes the file (a session keeps its turns in the spool meanwhile, a "
            "command is refused with exit 5); stop it (a Hermes gateway, an MCP server, "
            "another memcore)"
        )
    else:
        out["note"] = (
            f"{said}: the next command or session that opens the file upgrades it to schema "
            f"{older.current}, and an older memcore then refuses it"
        )
    return out


def _probe_search(home: HermesHome, config: Any, env: Mapping[str, str]) -> dict[str, Any]:
    """The search mode this install gives, from a throwaway store in memory."""
    from memcore_hermes.backend.open_store import open_backend_store

    try:
        _, probe = open_backend_store(home, config, None, environ=env, local_path=":memory:")
    except MemcoreError as exc:
        return {"error": _error(exc)}
    try:
        return search_report(probe, config)
    finally:
        probe.close()


def _older_store(older: Any, name: str, scope: Any) -> dict[str, Any]:
    """The memory store of an older file, and its memories in the read scope."""
    from memcore_sqlite.storage.older_schema import stored_count

    out: dict[str, Any] = {"name": name}
    try:
        found = stored_count(older.path, name, scope.tenant_pattern())
    except MemcoreError as exc:
        out["error"] = _error(exc)
        return out
    if found is None:
        out["status"] = "missing (created on the first write when auto_create_store is true)"
        return out
    out["status"] = "ready"
    out["description"] = found.description
    out["memories"] = found.memories
    out["read"] = str(scope.tenant_pattern())
    return out


def search_report(store: Any, config: Any) -> dict[str, Any]:
    """Which search this store gives, and how to get semantic recall when it is missing."""
    from memcore_hermes.config.readiness import missing_semantic_packages, semantic_fix

    mode = getattr(store, "search_mode", None)
    if mode is None:
        return {"mode": "tablestore (semantic search on the server)"}
    out: dict[str, Any] = {"mode": mode}
    embedder = getattr(store, "embedder", None)
    if embedder is not None:
        out["embedder"] = embedder.name
    elif config.embedder == "none":
        out["note"] = 'semantic search is off ("embedder": "none" in tablestore_memory.json)'
    else:
        missing = missing_semantic_packages()
        out["missing_packages"] = missing
        out["fix"] = semantic_fix(missing)
    return out


def _without_vector(store: Any, config: Any) -> int | None:
    """Memories the current embedder has not embedded yet (None without an embedder)."""
    from memcore_hermes.backend.reindex import missing_vectors

    return missing_vectors(store, config.memory_store_name)


def _serves_requests(store: Any) -> bool:
    """The new endpoint answers a read (doctor stays read-only: it lists, never creates)."""
    try:
        store.list_stores()
    except MemcoreError:
        return False
    return True


def _config_report(config: Any) -> dict[str, Any]:
    from memcore.config import shown_config

    return shown_config(config)


def _store_report(store: Any, name: str, scope: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name}
    started = time.perf_counter()
    try:
        info = store.describe_store(name)
    except NotFound:
        from memcore.store_names import MISTYPED, did_you_mean

        # A mistyped memory_store_name: the stores close to it, as the exit-3 line names them.
        hint = did_you_mean(store, name)
        out["status"] = "missing (created on the first write when auto_create_store is true)"
        out["status"] += hint
        if hint:  # a typo: every read refuses (exit 3), so doctor does not pass it
            missing = f"memory store {name!r} {MISTYPED}{hint}"
            out["error"] = _error(StoreNotFound(missing, field="memory_store_name"))
        return out
    except MemcoreError as exc:
        out["error"] = _error(exc)
        return out
    out["status"] = info.status
    out["storage_mode"] = info.storage_mode
    out["description"] = info.description
    out["latency_ms"] = round((time.perf_counter() - started) * 1000, 1)
    try:
        page = store.list_memories(name, scope.tenant_pattern(), limit=_SAMPLE)
        out["sample"] = [
            {"id": m.id, "scope": str(m.scope), "text": m.text[:120]} for m in page.items
        ]
    except MemcoreError as exc:
        out["sample_error"] = _error(exc)
    return out


def disk_report(home: HermesHome, config: Any, keys: AccessKeys | None) -> list[dict[str, Any]]:
    """Room on the disks the plugin writes: the home (the spool), and the local store's folder
    where it is elsewhere. Under 1 MiB free fails, as ``memcore doctor``'s data home does:
    the files may be sound and a read work while every write fails."""
    from memcore.config import LOCAL
    from memcore_hermes.backend.open_store import choose_backend
    from memcore_sqlite.storage.room import free_bytes, too_little

    folders = [home.spool_file.parent]
    try:
        if choose_backend(config, keys) == LOCAL:
            folders.append(home.local_db_file(config).parent)
    except MemcoreError:
        pass  # a local_path that will not do: the backend's error reports it
    out: list[dict[str, Any]] = []
    for folder in dict.fromkeys(folders):
        free = free_bytes(folder)
        problem = too_little(free)
        entry: dict[str, Any] = {"path": str(folder), "free_bytes": free, "ok": problem is None}
        if problem is not None:
            entry["problem"] = f"{folder}: {problem}"
        out.append(entry)
    return out


def spool_report(home: HermesHome) -> dict[str, Any]:
    """Depth, size, age, refusals and dead letters of the spool (without creating it)."""
    from memcore_hermes.outbox.spool_connection import check_folder

    try:
        check_folder(home.spool_file)  # the provider would refuse to make or open it
    except MemcoreError as exc:
        return {"error": _error(exc)}
    if not home.spool_file.exists():
        return {"depth": 0, "bytes": 0, "full": False, "exists": False}
    from memcore_hermes.outbox.journal import journal_glob
    from memcore_hermes.outbox.spool import SqliteOutbox

    sound = integrity_report(home.spool_file)
    if "error" in sound:
        return {"exists": True, "integrity": sound, "error": sound["error"]}
    if not sound["ok"]:
        # Not opened here (opening rebuilds it, and doctor changes nothing): the provider
        # moves it aside and rebuilds it from the journals when it next starts.
        detail = "damaged; the provider moves it aside and rebuilds it from the journals"
        return {"exists": True, "integrity": sound, "error": {"message": detail}}

    try:
        spool = SqliteOutbox(home.spool_file)
    except MemcoreError as exc:
        return {"error": _error(exc)}
    try:
        stats = spool.stats(time.time())
        dead = spool.dead_letter_count()
        limits = spool.limits
        full = stats.depth >= limits.max_entries or stats.bytes >= limits.max_bytes
        report: dict[str, Any] = {
            "exists": True,
            "integrity": sound,
            "depth": stats.depth,
            "bytes": stats.bytes,
            "oldest_age_s": None if stats.oldest_age_s is None else round(stats.oldest_age_s, 1),
            "refused_when_full": stats.dropped_full,
            "last_error": stats.last_error,
            "dead_letters": dead,
            # Opening the spool replayed dead processes' journals; these belong to live ones,
            # whose newest turns may not be counted in the depth yet.
            "running_journals": len(journal_glob(home.spool_file)),
            "full": full,
            "limits": {
                "max_entries": limits.max_entries,
                "max_bytes": limits.max_bytes,
                "max_age_s": limits.max_age_s,
            },
        }
        if stats.depth:
            from memcore_hermes.outbox.drain import waiting_writes

            report["waiting"] = waiting_writes(spool)
        return report
    except MemcoreError as exc:
        return {"error": _error(exc)}
    finally:
        spool.close()


def integrity_report(path: Any) -> dict[str, Any]:
    """SQLite's ``quick_check`` of a database file, how long it took, and the fix if damaged."""
    from memcore_sqlite.storage import integrity

    try:
        found = integrity.quick_check(path)
    except MemcoreError as exc:  # it could not read the file (a full disk): no verdict on it
        return {"ok": False, "check": "quick_check", "error": _error(exc)}
    out: dict[str, Any] = {
        "ok": found.ok,
        "check": "quick_check",
        "ms": round(found.seconds * 1000, 1),
    }
    if not found.ok:
        out["problems"] = list(found.problems)
        out["fix"] = integrity.recovery_hint(path)
    return out


def _redacted(report: dict[str, Any], keys: AccessKeys | None) -> dict[str, Any]:
    if keys is None:
        return report
    text = redact(json.dumps(report, default=str), keys.values())
    result: dict[str, Any] = json.loads(text)
    return result
