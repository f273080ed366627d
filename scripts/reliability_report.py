"""Regenerate RELIABILITY.md from a run of the reliability suite.

    uv run python scripts/reliability_report.py            # full: 60 s windows, 200 turns x 8
    uv run python scripts/reliability_report.py --mode medium
    uv run python scripts/reliability_report.py --mode short   # what CI runs

It runs ``pytest tests/reliability`` with the chosen durations, collects the row every scenario
records (``MEMCORE_RELIABILITY_OUT``), runs the dependency audit (``.ci/audit``), and writes the
table, the load figures, the known bugs (strict xfails) and the audit findings.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
MODES = {
    "full": {"MEMCORE_RELIABILITY_FULL": "1"},
    "medium": {"MEMCORE_RELIABILITY_MEDIUM": "1"},
    "short": {},
}
MODE_TEXT = {
    "full": "full (60 s fault windows, 60 s multi-process run, 8 threads x 200 turns)",
    "medium": "medium (15 s fault windows, 20 s multi-process run, 8 threads x 100 turns)",
    "short": "short, as in CI (3-4 s fault windows, 8 s multi-process run, 8 threads x 40 turns)",
}


def run_suite(mode: str, extra: list[str]) -> tuple[list[dict[str, Any]], dict[str, Any], float]:
    with tempfile.TemporaryDirectory() as tmp:
        rows_file = Path(tmp) / "rows.jsonl"
        junit = Path(tmp) / "junit.xml"
        env = dict(os.environ, MEMCORE_RELIABILITY_OUT=str(rows_file), **MODES[mode])
        for other in ("MEMCORE_RELIABILITY_FULL", "MEMCORE_RELIABILITY_MEDIUM"):
            if other not in MODES[mode]:
                env.pop(other, None)
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            "tests/reliability",
            "-q",
            "-p",
            "no:randomly",
            "--timeout=1800",
            f"--junitxml={junit}",
            *extra,
        ]
        started = time.monotonic()
        proc = subprocess.run(cmd, cwd=REPO, env=env, check=False)
        elapsed = time.monotonic() - started
        rows = (
            [json.loads(line) for line in rows_file.read_text().splitlines()]
            if rows_file.exists()
            else []
        )
        outcome = parse_junit(junit) if junit.exists() else {}
        outcome["exit_code"] = proc.returncode
    return rows, outcome, elapsed


def parse_junit(path: Path) -> dict[str, Any]:
    root = ET.parse(path).getroot()
    out: dict[str, Any] = {
        "passed": 0,
        "failed": 0,
        "xfailed": 0,
        "skipped": 0,
        "xfails": {},
        "failures": [],
        "skips": [],
    }
    for case in root.iter("testcase"):
        skipped = case.find("skipped")
        failed = case.find("failure") if case.find("failure") is not None else case.find("error")
        if skipped is not None and skipped.get("type") == "pytest.xfail":
            out["xfailed"] += 1
            out["xfails"][case.get("name")] = skipped.get("message", "").removeprefix("reason: ")
        elif skipped is not None:
            out["skipped"] += 1
            out["skips"].append(f"{case.get('name')}: {skipped.get('message', '')}")
        elif failed is not None:
            out["failed"] += 1
            out["failures"].append(f"{case.get('name')}: {(failed.get('message') or '')[:200]}")
        else:
            out["passed"] += 1
    return out


def run_layouts(mode: str) -> dict[str, Any] | None:
    """The gateway layouts benchmark (one shared spool vs one spool per provider)."""
    turns = {"full": 200, "medium": 100, "short": 40}[mode]
    problem = ""
    for _ in range(2):  # once more if the emulator process could not start (a port race)
        proc = subprocess.run(
            [sys.executable, "-m", "benchmarks.reliability_load", "--turns", str(turns)],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=False,
        )
        try:
            return dict(json.loads(proc.stdout))
        except ValueError:
            problem = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    print(f"the gateway layouts benchmark failed: {problem}", file=sys.stderr)
    return {"error": problem}


def run_audit() -> tuple[int, str]:
    """``.ci/audit`` as CI runs it."""
    proc = subprocess.run(
        ["bash", ".ci/audit"], cwd=REPO, capture_output=True, text=True, check=False
    )
    return proc.returncode, (proc.stdout + proc.stderr).strip()


#: Bugs this suite found in the other packages; each was fixed by its owner and its test stays
#: as a regression test (strict xfail until the fix landed).
FIXED_FINDINGS = (
    "Spool (`memcore_hermes.outbox.spool.SqliteOutbox._run`): a lone surrogate (half an emoji) raised "
    "UnicodeEncodeError after `BEGIN IMMEDIATE` without a rollback: `sync_turn` raised into the agent "
    "and the open transaction made the next, valid turn fail (a lost turn). Now refused as InvalidInput "
    "by the core limits (`test_reliability_unicode_*`).",
    "Embedded store (`memcore_sqlite`): the same surrogate escaped as UnicodeEncodeError instead of a "
    "typed error (`test_reliability_unicode_sqlite_store_maps_surrogates`).",
    "Spool `claim(force=True)` ignored another worker's live lease: a flush in one process re-sent a turn "
    "another process was sending, storing it twice (`test_reliability_forced_flush_does_not_resend_an_entry_in_flight`, "
    "two-process rows).",
    "Spool lease voided as soon as its owner pid died: a restart right after `kill -9` replayed a turn "
    "whose request was still in flight, storing it twice "
    "(`test_reliability_kill_9_with_a_request_in_flight_replays_exactly_once`).",
    "`HermesHome.peek_backend` let RecursionError out of a deeply nested `tablestore_memory.json`, so "
    "`is_available()` crashed `hermes memory status` "
    "(`test_reliability_config_hermes_is_available_survives_deep_nesting`).",
    "Emulator: a client hanging up printed a BrokenPipeError traceback per request "
    "(`test_reliability_emulator_is_quiet_when_a_client_hangs_up`).",
    "Turn path under gateway load: with 8 sessions in one process, `sync_turn` p99 was 8.6 ms (goal "
    "< 1 ms): each spool commit and key derivation released the GIL, and getting it back behind the "
    "8 delivery lanes took milliseconds; several connections on one file met in SQLite's busy handler. "
    "Now the turn path copies into a memory-mapped journal (no system call) and spools on one file share "
    "a connection (`tests/hermes/outbox/test_hermes_journal.py`; figures under Load).",
    "One shared spool drained about one entry at a time (36 turns/s against 146 with a spool per "
    "provider): a lane ended its pass at the first entry another lane was sending. Delivery now keeps "
    "order per scope, so a gateway's lanes work side by side (`tests/hermes/outbox/test_hermes_delivery_order.py`).",
    "The TableStore adapter read a 200 answer lacking its list as an empty page (`wire._list`), which "
    "could make a landed write look unsent; an answer with other fields but no list is now a "
    "ProtocolError (`test_an_answer_without_its_list_is_empty_only_when_it_holds_nothing_else`).",
    'Tenant mapping (issue 28): a segment over 128 characters is shortened to `prefix + "~" + sha256`, but `~` was not escaped, so a short user id spelled like a long id\'s shortened form shared its tenant (victim `"0"*129`, attacker `"0"*103 + "~beab..."`): the attacker read, overwrote and deleted the victim\'s memories through the library and the Hermes tools. `~` is now escaped, only a shortened segment holds one, and one rule (`tenant_segment`) maps user ids on every host (`test_tenant_mapping_attack.py`: 14,383 generated pairs a run, 57,340 in the slow run, no collision).',
    "Dream task ids were not checked against the tenant (issue 28): `Memory.dream_actions`/`apply_dream_actions` and `memcore dream status|actions|apply|undo|cancel` read and applied another tenant's proposals, deleting its memories; `memcore dream list` showed an operator's task over the whole app to every tenant (fake and SQLite). Every id-taking operation now goes through `MemoryService` (`test_cross_tenant_ids.py`: `test_finding_*`, and every entry point on the fake, SQLite and TableStore over the emulator).",
    "A 2xx that was not the service's counted as delivered (issue 28): a proxy answering 200 with HTML, an empty body or garbage made the spool drop 2 of 4 turns, remembers and mirror writes each; a late answer or a reset made a remember land up to 4 extra times. A 2xx is the service's only with its request id and a JSON object; anything else is `OutcomeUnknown`, and a text write is looked for (by its `memcore_write` marker, else its exact text) before it is sent again (`test_reliability_unknown_outcomes.py`: garbage, empty and HTML 2xx, late answers, resets, kill -9: 0 lost, 0 duplicated).",
    "Repeating a text merged metadata past the 16-key limit (32 keys, 33 after `update`), and `memcore export` then wrote a file `memcore import` refused whole; a repeat now keeps the newer write's keys and fills the rest in key order up to 16, and an update past the limit is refused (contract suite, every backend; export/import round-trip property test).",
    "A damaged database went unnoticed (`doctor` said ok, writes kept landing) and a damaged spool turned Hermes memory off until fixed by hand; the store now refuses writes (`StoreCorrupted`) with the fix, `doctor` runs `quick_check`, and a damaged spool is kept aside and rebuilt from what it and the turn journals still hold (`test_sqlite_integrity.py`, `test_hermes_spool_damage.py`).",
    "An import's rollback deleted writes that landed meanwhile: the embedded store keeps one memory per text in a scope, so `memcore add` of a text a running import had just added answered with the import's memory, and a second import of the same file (`--lines`) counted those records as already present; stopping the first import (Ctrl-C, SIGTERM, a failed batch) then deleted them (two imports at once, one stopped, lost records in 8 of 8 runs). Every write that lands in a memory now moves its version, a repeat that changes nothing too, and the rollback deletes, one transaction per batch, only the memories still at the version the import left them at; its line counts the ones kept (`test_reliability_import_rollback.py`, `test_sqlite_rollbacks.py`, the contract suite). TableStore cannot tell, and deletes what the import created as before.",
    "Import left the first 256 records of a file whose record 401 clashed, and answered `Conflict` for another tenant's memory id (an existence oracle); it is now all or nothing (memcore and `hermes tablestore-mem`), and another tenant's id answers as a free id.",
)
OPEN_FINDINGS = (
    "Import into the embedded store: memory ids are unique per database file, not per tenant. A record carrying another tenant's id gets a new id and the same answer as a free id, but an importer who already holds that (random, 128-bit) id can still learn it is taken by looking up the old id afterwards (not found, where a free id would have been kept). Closing this needs ids unique per tenant in the schema.",
    "A second import of an export file (ids kept) while another import of it runs: a record whose id the running import has already restored is found in the second import's listing and counted as already present without any write, so the memory keeps the version the running import left it at, and if that import is then stopped its rollback deletes it (what the second import reported as present is gone). A `--lines` import, or any record the second import writes, moves the version and is kept. Closing this needs the second import to leave a trace on the memories it counts present: a version move on each (which a plain re-import would then show in every memory's `version`, and which would make pending dream proposals stale), or a schema step (`test_a_stopped_import_keeps_what_a_finished_import_of_an_export_found_present`, strict xfail until fixed).",
    "Import is all or nothing by undoing: a failure, Ctrl-C or SIGTERM midway deletes what the import added, but a process killed midway (SIGKILL, a crash, power loss) leaves the batches committed so far (running the import again adds the rest), and metadata that a newer-dated record merged into a memory already present is not undone.",
    "A damaged embedded database: writes committed between opening and the background `quick_check` reporting are not refused, and reads keep trying (undamaged pages answer). An open checks the whole file only when it may have changed since a check found it sound (a crash, another program's write, a copy, or a day since the last check): damage another program makes while a store is open and writing is found by the next such check or by the first statement that reads it.",
    "A rebuilt spool replays every record the turn journals still hold: one that the damaged file had already delivered is sent again; turns are checked at the backend before a resend, other writes only as far as the delivery's already-landed check covers them.",
    "Tenant mapping: two ids longer than 128 characters share a tenant only if their 96-bit digests collide. User ids are taken as given: no Unicode normalisation and no case folding, so NFC and NFD spellings of one name are two tenants (the platform treats them as two ids). Ids holding `~` and configured tenants with spaces at either end map differently than before 2026-12; their earlier memories stay under the old segment until moved (README, Tenant ids).",
    "Cross-tenant ids, what the threat model leaves open: a backend that answers a task without its scope (TableStore's GetMemoryTask names it; its GetMemoryDreamTask lists the scopes a task expanded to, none for an empty tenant) makes that task not found even to its owner (fail closed). The library's `Memory.store` is the caller's own store object and is not tenant-checked; hosts never use it for ids (import-linter contract, `test_hosts_never_call_an_id_taking_store_method`). Equal answers are checked by value and, on the fake, by the number of store calls; wall-clock timing is not measured.",
    "Unknown outcomes on the real service: the look-before-resend check is proven against the emulator, which applies a text write at once. The service extracts memories asynchronously and does not document keeping a write's metadata on them, so a write that landed may not be found yet and be sent again: a duplicate, never a loss. The SDK does not verify response signatures on JSON calls, so a proxy that forges `x-ots-requestid` is not caught. The `memcore_write` marker is visible in a memory's metadata.",
    "MCP over HTTP: a bearer token maps to one tenant (only SHA-256 digests kept, compared in constant time); anyone holding a token is that tenant. There is no token expiry or rotation beyond editing the token file and restarting.",
    "The dependency audit cannot check every locked package from this machine: PyPI answers its "
    "project pages (which list the advisories of the latest release) but not its per-version pages, "
    "so a package locked below its latest release is listed as not audited (see Dependency audit). "
    "They are held there by `hermes-agent`'s exact pins (certifi, cryptography, rich, tenacity and "
    "others) and the SDKs' ranges (protobuf by `tablestore`, aiofiles by `alibabacloud-credentials`).",
)


#: Table order: faults first, then processes and disks, load, bad input, security.
ORDER = (
    "faults",
    "restart",
    "disk_full",
    "shared",
    "load",
    "chaos",
    "bad_input",
    "config",
    "recall",
    "secrets",
    "tenancy",
)


def _order(row: dict[str, Any]) -> tuple[int, str]:
    path = row["test"].split("::", 1)[0]
    for i, key in enumerate(ORDER):
        if f"test_reliability_{key}" in path:
            return i, ""
    return len(ORDER), path


def _cell(value: Any) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def _test_name(row: dict[str, Any]) -> str:
    return row["test"].split("::", 1)[-1]


def render(
    mode: str,
    rows: list[dict[str, Any]],
    outcome: dict[str, Any],
    elapsed: float,
    audit: tuple[int, str],
    layouts: dict[str, Any] | None = None,
) -> str:
    xfails: dict[str, str] = outcome.get("xfails", {})
    rows = sorted(rows, key=_order)
    lines = [
        "# Reliability",
        "",
        "What memcore survives, measured. Every figure below comes from the latest run of",
        "`tests/reliability/`; regenerate this page with one command:",
        "",
        "```",
        "uv run python scripts/reliability_report.py            # --mode full (default) | medium | short",
        "```",
        "",
        f"- Run: {dt.datetime.now(dt.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}, mode **{MODE_TEXT[mode]}**, "
        f"{elapsed / 60:.1f} min wall clock.",
        f"- Machine: {os.cpu_count()} CPUs (shared, noisy), Linux {platform.release()}, Python {platform.python_version()}.",
        f"- Tests: {outcome.get('passed', 0)} passed, {outcome.get('failed', 0)} failed, "
        f"{outcome.get('xfailed', 0)} known bugs (strict xfail, listed below), {outcome.get('skipped', 0)} skipped.",
        "- Writes are Hermes turns through the real plugin (`sync_turn` → memory-mapped turn journal →",
        "  durable SQLite spool → lane → real `OTSClient` → emulator on 127.0.0.1) unless the scenario says",
        "  otherwise. *Acknowledged* means the plugin accepted the write (`sync_turn` returned with it in the",
        "  journal or the spool, or the store returned a receipt); *stored* is counted at the",
        "  backing store after recovery; *lost* = acknowledged but not stored; *duplicated* = extra copies.",
        "  The spool's retry backoff is scaled down (0.05 s base, 0.5 s cap) so windows recover within",
        "  the run; the algorithm is the production one.",
        "",
        "| Scenario | Injected | Issued | Acked | Stored | Lost | Dup | Result |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        name = _test_name(row).split("[")[0]
        if row["passed"]:
            result = "pass"
        elif name in xfails or _test_name(row) in xfails:
            result = "**FAIL** (known bug, see below)"
        else:
            result = "**FAIL**"
        lines.append(
            f"| {_cell(row['scenario'])} | {_cell(row['fault'])} | {row['issued']} | {row['acknowledged']} | "
            f"{row['stored']} | {row['lost']} | {row['duplicated']} | {result} |"
        )
    lines += [
        "",
        "For the bad-input and security rows, *issued* counts the inputs, calls or checks tried and *acked*",
        "those accepted (everything else got a typed error); the notes below give the counts by kind. In",
        "the tenant-isolation rows, *stored* is the victim's memories found intact after every attack and",
        "*lost* counts victim memories an attacker could read, change or delete.",
        "",
        "## Load",
        "",
    ]
    for row in rows:
        notes = row.get("notes", {})
        if "turn_ms_p99" in notes:
            lines += [
                f"- **{row['scenario']}** ({row['fault']}): every turn stored: "
                f"{row['stored']}/{row['acknowledged']}, lost {row['lost']}, duplicated {row['duplicated']}.",
                f"  Turn path (time on the agent's thread in `sync_turn`): p50 {notes['turn_ms_p50']} ms, "
                f"p99 {notes['turn_ms_p99']} ms, max {notes['turn_ms_max']} ms (goal: p99 < 1 ms).",
                f"  RSS {notes['rss_mb_start']} MB at start, {notes['rss_mb_end']} MB at the end. "
                f"Delivered {notes['turns_per_s_delivered']} turns/s overall.",
            ]
        if "write_ops_per_s" in notes:
            lines += [
                f"- **{row['scenario']}** ({row['fault']}): {notes['write_ops_per_s']} writes/s and "
                f"{notes['read_ops_per_s']} reads/s (search + list) in total; {notes['errors']} errors "
                f"{notes.get('error_kinds') or ''}; {row['lost']} acknowledged writes lost; integrity {notes['integrity']}.",
            ]
    if layouts and "error" in layouts:
        lines += [
            "",
            f"The gateway layouts benchmark failed in this run: `{_cell(layouts['error'])}`.",
        ]
    elif layouts:
        lines += [
            "",
            f"Gateway layouts (`uv run python -m benchmarks.reliability_load`, {layouts['latency_ms']:.0f} ms "
            "latency, emulator in its own process):",
            "",
            "| Threads | Layout | Turn path p50 / p99 / max (ms) | Drain (turns/s) | RSS start → end (MB) |",
            "|---:|---|---|---:|---|",
        ]
        for run in layouts["runs"]:
            tp = run["turn_path"]
            lines.append(
                f"| {run['threads']} | {run['layout']} | {tp['p50_ms']:.2f} / {tp['p99_ms']:.2f} / {tp['max_ms']:.1f} "
                f"| {run['turns_delivered_per_s']} | {run['rss_mb_start']} → {run['rss_mb_end']} |"
            )
    lines += ["", "## Scenario notes", ""]
    for row in rows:
        notes = {k: v for k, v in row.get("notes", {}).items() if v not in (None, [], {})}
        if not notes and not row.get("error"):
            continue
        text = f"`{json.dumps(notes, ensure_ascii=False, sort_keys=True)[:600]}`" if notes else ""
        lines.append(f"- {row['scenario']}: {text}".rstrip())
        if row.get("error"):
            lines.append(f"  - failed with: `{_cell(row['error'])}`")
    lines += ["", "## Bugs this suite found (fixed; the tests stay as regressions)", ""]
    lines += [f"- {item}" for item in FIXED_FINDINGS]
    lines += ["", "## Open findings (not failures)", ""]
    lines += [f"- {item}" for item in OPEN_FINDINGS]
    lines += ["", "## Known bugs (tests marked strict xfail until fixed)", ""]
    if xfails:
        for name, reason in sorted(xfails.items()):
            lines.append(f"- `{name}`: {reason}")
    else:
        lines.append("- none")
    if outcome.get("failures"):
        lines += ["", "## Unexpected failures in this run", ""]
        lines += [f"- {f}" for f in outcome["failures"]]
    if outcome.get("skips"):
        lines += ["", "## Skipped", ""]
        lines += [f"- {s}" for s in outcome["skips"]]
    rc, text = audit
    tail = "\n".join(text.splitlines()[-16:])
    summary = next((line for line in text.splitlines() if line.startswith("audit:")), "")
    if (
        rc != 0
        and "known vulnerabilities" in summary
        and not summary.rstrip().endswith(" 0 known vulnerabilities")
    ):
        verdict = "known vulnerabilities were found (listed below); CI fails until they are fixed"
    elif rc != 0:
        verdict = "the audit could not run"
    else:
        verdict = "no known vulnerability in any package it could check; the packages it could not check are listed"
    lines += [
        "",
        "## Dependency audit",
        "",
        f"`bash .ci/audit` (pip-audit over the locked runtime dependencies, then PyPI project pages "
        f"for what pip-audit could not reach) exited {rc}: {verdict}.",
        "",
        "```",
        tail,
        "```",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=sorted(MODES), default="full")
    parser.add_argument("--out", default=str(REPO / "RELIABILITY.md"))
    parser.add_argument("--skip-audit", action="store_true")
    parser.add_argument(
        "--skip-benchmark", action="store_true", help="leave out the gateway layouts benchmark"
    )
    parser.add_argument(
        "pytest_args", nargs="*", help="extra pytest arguments (for example -k faults)"
    )
    args = parser.parse_args(argv)
    rows, outcome, elapsed = run_suite(args.mode, args.pytest_args)
    layouts = None if args.skip_benchmark else run_layouts(args.mode)
    audit = (0, "audit skipped (--skip-audit)") if args.skip_audit else run_audit()
    Path(args.out).write_text(
        render(args.mode, rows, outcome, elapsed, audit, layouts), encoding="utf-8"
    )
    print(f"wrote {args.out}: {len(rows)} scenarios, pytest exit {outcome.get('exit_code')}")
    return 0 if outcome.get("exit_code") == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
