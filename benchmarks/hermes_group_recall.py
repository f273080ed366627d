"""What the agent sees in a session several people share: the dialog set lived in Hermes' loop.

Hermes gives each message of a shared group or thread session as "[Name] text" (the gateway's
sender prefix for shared multi-user sessions). Each conversation of
``benchmarks/data/dialogs_dev.json`` is lived that way on the embedded store, as
:mod:`benchmarks.hermes_loop_recall` lives LongMemEval: the plugin installed in a temporary
``$HERMES_HOME`` and loaded by Hermes' own loader into its ``MemoryManager``; each dated session
is a Hermes session, replayed at its date (the provider's ``turn_time``), and each turn one
``sync_all`` of "[Name] text" with no reply (the agent was not addressed). Then each question
is asked as the first message of a new session, as the other member would ask it ("[Tom] When
did Priya ...?"), and once more without the asker's label.

Reported: the share of questions whose injected context (``prefetch_all`` wrapped by
``build_memory_context_block``) holds an evidence turn, with its 95% Wilson interval, per
kind, and question by question (sign test) against ``as_text``: the same run with
:func:`memcore.speakers.spoken` made the identity, i.e. the labels embedded and searched as
words, as the store did before it told them apart.

    uv run python -m benchmarks hermes_group_recall [--cache /tmp/dialog-cache] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from benchmarks._stats import sign_test_p, wilson_interval
from benchmarks.hermes_loop_recall import EVIDENCE_CHARS, Loop, TurnClock, _home, fold
from benchmarks.hermes_loop_recall import _share_one_model as share_one_model

DATA = Path(__file__).parent / "data" / "dialogs_dev.json"
VARIANTS = ("labels", "as_text")
ASKED = ("asker", "plain")


def _said(turn: dict[str, Any]) -> str:
    return f"[{turn['speaker']}] {turn['text']}"


def _asker(question: str, speakers: Sequence[str]) -> str:
    """The member the question is not about (the first one, when it names both or neither)."""
    others = [s for s in speakers if s not in question]
    return (others or list(speakers))[0]


def live(
    conversation: dict[str, Any], questions: Sequence[dict[str, Any]], home: Path, switch: Any
) -> list[dict[str, Any]]:
    """One conversation through the loop; a row per question with what each ask found."""
    turns = {t["id"]: t for t in conversation["turns"]}
    speakers = sorted({t["speaker"] for t in conversation["turns"]})
    sessions: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for turn in conversation["turns"]:
        sessions[turn["session"]].append(turn)
    clock = TurnClock()
    loop = Loop(home, f"dlg-{conversation['id']}", clock)
    try:
        for number, said in sorted(sessions.items()):
            if number != min(sessions):
                loop.new_session(f"dlg-s{number}", [])
            loop.replay_at(datetime.fromisoformat(said[0]["date"]).replace(tzinfo=timezone.utc))
            for turn in said:
                loop.mm.sync_all(_said(turn), "", session_id=loop.session)
        loop.new_session("dlg-ask", [])
        loop.settle()
        clock.at = None
        if switch is not None:
            switch.asking = True
        rows: list[dict[str, Any]] = []
        for q in questions:
            evidence = [fold(_said(turns[e]))[:EVIDENCE_CHARS] for e in q["evidence"]]
            row: dict[str, Any] = {"kind": q["kind"]}
            for asked, text in (
                ("asker", f"[{_asker(q['question'], speakers)}] {q['question']}"),
                ("plain", q["question"]),
            ):
                block, _ = loop.ask(1, text)
                loop.new_session(f"dlg-ask-{len(rows)}-{asked}", [])
                row[asked] = float(any(e in fold(block) for e in evidence))
            rows.append(row)
        return rows
    finally:
        if switch is not None:
            switch.asking = False
        loop.close()


def run(data: dict[str, Any], root: Path, switch: Any, limit: int) -> dict[str, Any]:
    import memcore.speakers as speakers

    asked: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for q in data["questions"]:
        asked[q["conversation"]].append(q)
    real = speakers.spoken
    rows: dict[str, list[dict[str, Any]]] = {v: [] for v in VARIANTS}
    try:
        for variant in VARIANTS:
            speakers.spoken = real if variant == "labels" else (lambda text: text)
            for conversation in data["conversations"][: limit or None]:
                name = f"{variant}-{conversation['id']}"
                config = {"backend": "local", "local_path": str(root / f"{name}.db")}
                home = _home(root, f"home-{name}", config, None)
                os.environ["HERMES_HOME"] = str(home)
                found = live(conversation, asked[conversation["id"]], home, switch)
                rows[variant] += found
                shutil.rmtree(home, ignore_errors=True)
                print(
                    json.dumps(
                        {
                            "variant": variant,
                            "conversation": conversation["id"],
                            "asker": sum(r["asker"] for r in found),
                            "questions": len(found),
                        }
                    ),
                    file=sys.stderr,
                )
    finally:
        speakers.spoken = real
    return summarize(rows)


def summarize(rows: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    def cell(part: Sequence[dict[str, Any]], key: str) -> dict[str, Any]:
        hits = round(sum(r[key] for r in part))
        low, high = wilson_interval(hits, len(part))
        return {
            "evidence_in_context": round(hits / max(1, len(part)), 4),
            "wilson95": [round(low, 4), round(high, 4)],
        }

    out: dict[str, Any] = {"questions": len(rows["labels"])}
    for variant in VARIANTS:
        part = rows[variant]
        kinds: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in part:
            kinds[r["kind"]].append(r)
        out[variant] = {
            asked: cell(part, asked)
            | {
                "by_kind": {
                    k: round(sum(r[asked] for r in v) / len(v), 4) for k, v in sorted(kinds.items())
                }
            }
            for asked in ASKED
        }
    for asked in ASKED:
        pairs = list(zip(rows["labels"], rows["as_text"]))
        better = sum(a[asked] > b[asked] for a, b in pairs)
        worse = sum(a[asked] < b[asked] for a, b in pairs)
        out[f"labels_vs_as_text_{asked}"] = {
            "better": better,
            "worse": worse,
            "sign_test_p": round(sign_test_p(better, worse), 4),
        }
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--cache", default=None, help="directory for cached ingest vectors")
    parser.add_argument("--limit", type=int, default=0, help="first N conversations (0: all)")
    args = parser.parse_args()
    from memcore_sqlite.embedders import missing_onnx_requirements

    if missing_onnx_requirements():
        print(json.dumps({"skipped": "semantic extra not installed"}))
        return 0
    switch = share_one_model(args.cache)
    data = json.loads(args.data.read_text(encoding="utf-8"))
    result: dict[str, Any] = {
        "benchmark": "hermes_group_recall",
        "data": args.data.name,
        "machine": {"cpus": os.cpu_count()},
    }
    with tempfile.TemporaryDirectory() as tmp:
        result |= run(data, Path(tmp), switch, args.limit)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
