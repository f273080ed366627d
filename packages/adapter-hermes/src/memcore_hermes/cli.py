"""``hermes tablestore-mem add|search|doctor`` (active only while this provider is selected).

Every command prints one JSON document; errors are ``{"error": ...}`` with exit status 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def register_cli(subparser: argparse.ArgumentParser) -> None:
    """Build the argument tree under ``hermes tablestore-mem``."""
    commands = subparser.add_subparsers(dest="tablestore_mem_action", metavar="{add,search,doctor}")

    add = commands.add_parser("add", help="Store a memory for the current user")
    add.add_argument("text", help="The memory text")
    add.add_argument(
        "--metadata",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="A metadata tag (repeatable)",
    )
    add.add_argument("--sync", action="store_true", help="Wait until the backend has stored it")
    add.add_argument("--user-id", default=None, help="The user (tenant) to act for")

    search = commands.add_parser("search", help="Search the current user's memories")
    search.add_argument("query", help="What to look for")
    search.add_argument("--top-k", type=int, default=None, help="How many results (1-50)")
    search.add_argument("--user-id", default=None, help="The user (tenant) to act for")

    doctor = commands.add_parser("doctor", help="Read-only diagnostics (secrets redacted)")
    doctor.add_argument("--user-id", default=None, help="The user (tenant) to inspect")


def _print(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")
    sys.stdout.flush()


def _parse_metadata(pairs: list[str]) -> dict[str, str]:
    from memcore.errors import InvalidInput

    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise InvalidInput(f"--metadata expects KEY=VALUE, got {pair!r}", field="metadata")
        out[key] = value
    return out


def tablestore_mem_command(args: argparse.Namespace) -> None:
    """Run the chosen sub-command; exits with status 1 after printing an error."""
    from memcore.errors import MemcoreError

    action = getattr(args, "tablestore_mem_action", None)
    try:
        if action == "doctor":
            result = _doctor(args)
            _print(result)
            if not result.get("ok"):
                raise SystemExit(1)
            return
        if action == "add":
            _print(_add(args))
            return
        if action == "search":
            _print(_search(args))
            return
        _print({"error": {"code": "usage", "message": "choose one of: add, search, doctor"}})
        raise SystemExit(2)
    except MemcoreError as exc:
        _print({"error": exc.to_dict()})
        raise SystemExit(1) from None


def _doctor(args: argparse.Namespace) -> dict[str, Any]:
    from memcore_hermes.doctor import run_doctor
    from memcore_hermes.home import HermesHome

    def progress(message: str) -> None:
        sys.stderr.write(message + "\n")

    return run_doctor(HermesHome(), user_id=args.user_id, progress=progress)


def _open(args: argparse.Namespace) -> Any:
    from memcore_hermes.provider import TablestoreMemProvider

    provider = TablestoreMemProvider()
    provider.initialize(
        "cli",
        platform="cli",
        agent_context="primary",
        user_id=args.user_id,
        status_callback=lambda m: sys.stderr.write(f"{m}\n"),
    )
    return provider


def _add(args: argparse.Namespace) -> dict[str, Any]:
    provider = _open(args)
    runtime = provider.runtime
    try:
        metadata = _parse_metadata(args.metadata)
        if args.sync:
            receipt = runtime.remember_now(args.text, metadata=metadata)
            return {
                "status": receipt.status,
                "memory_ids": list(receipt.memory_ids),
                "task_id": receipt.task_id,
                "scope": str(runtime.scope),
            }
        key = runtime.remember(args.text, metadata=metadata)
        delivered = runtime.flush(runtime.config.timeout)
        return {
            "status": "stored" if delivered else "queued",
            "key": key,
            "scope": str(runtime.scope),
        }
    finally:
        provider.shutdown()


def _search(args: argparse.Namespace) -> dict[str, Any]:
    provider = _open(args)
    runtime = provider.runtime
    try:
        service = runtime.service(runtime.handle.ready())
        hits = service.search(args.query, top_k=args.top_k)
        return {
            "scope": str(service.search_pattern),
            "results": [
                {
                    "id": h.memory.id,
                    "text": h.memory.text,
                    "score": h.score,
                    "scope": str(h.memory.scope),
                }
                for h in hits
            ],
        }
    finally:
        provider.shutdown()


# Hermes looks the handler up as ``<provider name>_command``; the name has a dash.
globals()["tablestore-mem_command"] = tablestore_mem_command
