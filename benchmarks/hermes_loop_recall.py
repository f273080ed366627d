"""What the agent sees: recall injected by the plugin in Hermes' own loop, on LongMemEval_S.

The plugin is installed in a temporary ``$HERMES_HOME/plugins/tablestore-mem`` and loaded by
Hermes' own loader (``plugins.memory.load_memory_provider``) into Hermes' ``MemoryManager``.
Each question's haystack is lived as Hermes lives a conversation: every haystack session is a
session (``sync_all`` per user/assistant turn; ``commit_session_boundary_async``, i.e.
``on_session_end`` then ``on_session_switch``, between sessions). Then the question is asked
as the FIRST message of a new session, and in another new session as the SECOND (after "hi",
whose turn is synced and ``queue_prefetch_all``-ed as the agent does).

Reported, overall and per question type: the share of questions whose injected context
(``prefetch_all``, wrapped by ``build_memory_context_block``) holds an evidence turn
(``has_answer``: the turn's first 120 characters, whitespace folded, appear in it), the
context size in characters, ``prefetch_all`` p50/p95 (query embedding included: the vector
cache below is off while asking), and the ingest time.

Backends: ``local`` (the embedded SQLite store, one database per question) and ``emulator``
(the TableStore emulator in a process of its own, as the service would be, so its search work
does not take this process's GIL; one tenant per question; ``--latency-ms`` is added to every
call while asking, none while ingesting so a run stays short). ``recall_wait_ms`` is the
config's default unless ``--recall-wait-ms`` sets it.

``--no-consolidation`` skips the local store's end-of-session consolidation pass: it grows
with the tenant (about 3 s a session at 300-500 memories on a busy 2-core machine) and would
make a run of a dozen questions last half an hour; recall is then measured on what the turns
wrote, unmerged.

``--reference-time`` replays each haystack session at its date (the provider's ``turn_time``
set to ``haystack_dates``, so the turns are stored as said then) and asks the question twice,
each as the first message of a new session: with ``turn_time`` at now, and at the question's
``question_date``, so its time words ("last month", "10 days ago") are read from when it was
asked. ``--neighbours N`` asks once more with the plugin's ``recall_neighbours`` at N (each
memory's turns around it, inside the same block budget). ``--fusion W:B`` asks once more with
the embedded store's hybrid mix at vector weight W and BM25 b (``ranking.VECTOR_WEIGHT``,
``ranking.LENGTH_B``), on the same ingest. ``--top-k K`` asks once more with the plugin's
``top_k`` at K (more memories in the same block budget). Reported: evidence in each context
and the paired sign test, per comparison, and ``dates_said``: of the date labels in each
variant's blocks, how many show a day a haystack session was said. ``--types`` keeps only
questions of those types (e.g. ``temporal-reasoning``).

``--cache DIR`` keeps the ingest's vectors per text between runs (outside the repository); the
model is loaded once per process and shared by every question, as a long-running agent would.

    uv run python -m benchmarks.hermes_loop_recall [--limit 12] [--offset 0] [--stride 1] \
        [--backends local,emulator] [--latency-ms 200] [--cache /tmp/lme-cache] [--data FILE] \
        [--no-consolidation] [--types temporal-reasoning] [--reference-time] [--neighbours 1] \
        [--fusion 0.4:1] [--top-k 10]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from benchmarks import _prefetch_phases
from benchmarks._embed_cache import CachingEmbedder, WrappedEmbedder
from benchmarks._stats import sign_test_p, summary_ms
from benchmarks.longmemeval import DEFAULT_DATA, load

REPO_ROOT = Path(__file__).resolve().parents[1]
EMULATOR_KEYS = {"TABLESTORE_MEMORY_AK": "emu-ak", "TABLESTORE_MEMORY_SK": "emu-sk"}
EVIDENCE_CHARS = 120
_WS = re.compile(r"\s+")
_LME_DATE = "%Y/%m/%d (%a) %H:%M"
_LABEL = re.compile(r"^- \[(\d{4}-\d{2}-\d{2})", re.M)


def lme_date(text: str) -> datetime:
    """A LongMemEval date ("2023/04/20 (Thu) 10:12"), taken as UTC."""
    return datetime.strptime(text, _LME_DATE).replace(tzinfo=timezone.utc)


class TurnClock:
    """The provider's ``turn_time``: now unless a replay sets the moment."""

    def __init__(self) -> None:
        self.at: datetime | None = None

    def __call__(self) -> datetime:
        return self.at or datetime.now(timezone.utc)


def fold(text: str) -> str:
    return _WS.sub(" ", text).strip().lower()


class _AskSwitch(WrappedEmbedder):
    """The ingest reads vectors from the cache; questions are always embedded by the model."""

    def __init__(self, inner: Any, cached: CachingEmbedder | None) -> None:
        super().__init__(inner)
        self.cached = cached
        self.asking = False

    def warm_up(self) -> None:
        warm = getattr(self.inner, "warm_up", None)
        if warm is not None:
            warm()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if self.asking or self.cached is None:
            return list(self.inner.embed(texts))
        return self.cached.embed(texts)


def _share_one_model(cache: str | None) -> _AskSwitch | None:
    """Make every local store of this process use one model (and the vector cache)."""
    import memcore_sqlite.backend as backend

    inner = backend.choose_embedder("auto")
    if inner is None:
        return None
    switch = _AskSwitch(inner, CachingEmbedder(inner, cache) if cache else None)
    backend.choose_embedder = lambda setting, *, model_dir=None: switch  # type: ignore[assignment]
    return switch


def _pairs(session: Sequence[dict[str, Any]]) -> list[tuple[str, str]]:
    """The session as (user, assistant) turns, in order. A reply that opens a session (the
    haystack cut its question off: 454 of the development split's 5,707 sessions) is
    dropped, as Hermes' ``MemoryManager.sync_all`` drops a turn with no user message; a
    question whose evidence only such replies hold is counted apart (:func:`_given`)."""
    turns: list[tuple[str, str]] = []
    user: str | None = None
    for msg in session:
        content = msg.get("content") or ""
        if msg["role"] == "user":
            if user is not None:
                turns.append((user, ""))
            user = content
        elif user is not None:
            turns.append((user, content))
            user = None
        elif turns:  # an assistant message with no user before it joins the previous turn
            turns[-1] = (turns[-1][0], f"{turns[-1][1]}\n{content}".strip())
    if user is not None:
        turns.append((user, ""))
    return [(u, a) for u, a in turns if u.strip()]


def _evidence(item: dict[str, Any]) -> list[str]:
    return [
        fold(t["content"])[:EVIDENCE_CHARS]
        for s in item["haystack_sessions"]
        for t in s
        if t.get("has_answer") and t["content"].strip()
    ]


def _given(item: dict[str, Any], evidence: Sequence[str]) -> bool:
    """Whether any of ``evidence`` (:func:`_evidence`) reaches the provider as a turn
    (:func:`_pairs`)."""
    said = "\n".join(
        fold(text)
        for session in item["haystack_sessions"]
        for pair in _pairs(session)
        for text in pair
    )
    return any(e in said for e in evidence)


class Loop:
    """One question lived through Hermes' MemoryManager with the plugin as Hermes loads it."""

    def __init__(self, home: Path, user_id: str, clock: TurnClock | None = None) -> None:
        from agent.memory_manager import MemoryManager
        from plugins.memory import load_memory_provider

        provider = load_memory_provider("tablestore-mem")
        if provider is None:
            raise RuntimeError("Hermes did not load the tablestore-mem plugin")
        if clock is not None:
            # Hermes' loader takes no arguments: what ``turn_time=`` would give the provider.
            provider._turn_time = clock
        self.provider = provider
        self.clock = clock
        self.mm = MemoryManager()
        self.mm.add_provider(provider)
        self.session = "lme-s0"
        self.phases: list[dict[str, Any]] = []
        self.mm.initialize_all(
            session_id=self.session,
            hermes_home=str(home),
            platform="cli",
            agent_context="primary",
            user_id=user_id,
        )
        if getattr(provider, "runtime", None) is None:
            raise RuntimeError("the plugin did not start")

    def new_session(self, session_id: str, messages: list[dict[str, str]]) -> None:
        self.mm.commit_session_boundary_async(
            messages, new_session_id=session_id, parent_session_id=self.session
        )
        self.session = session_id

    def replay_at(self, moment: datetime) -> None:
        """Move the replay's clock once Hermes' worker has run every turn synced before:
        ``sync_all`` returns at once and the provider stamps a turn when the worker runs it,
        so a clock moved first dated those turns with a later session's day."""
        self.mm.flush_pending(120)
        if self.clock is not None:
            self.clock.at = moment

    def settle(self) -> None:
        self.mm.flush_pending(120)
        runtime = self.provider.runtime
        runtime.flush(120)
        runtime.wait_idle(120)

    def ask(self, turn: int, message: str) -> tuple[str, float]:
        from agent.memory_manager import build_memory_context_block

        self.mm.on_turn_start(turn, message)
        raw, elapsed, phases = _prefetch_phases.measure(
            lambda: self.mm.prefetch_all(message, session_id=self.session)
        )
        self.phases.append(phases)
        return build_memory_context_block(raw), elapsed

    def close(self) -> None:
        self.mm.shutdown_all()


def _ask_variants(
    loop: Loop,
    item: dict[str, Any],
    question: str,
    evidence: list[str],
    clock: TurnClock | None,
    neighbours: int,
    fusion: tuple[float, float] | None = None,
    top_k: int = 0,
) -> dict[str, Any]:
    """The question asked as a new session's first message in each variant, back to back on
    the same tenant: ``now`` (turn_time now), ``at`` (at the question's date, when the
    replay was dated), ``nb`` (with ``recall_neighbours``, at the question's date when
    dated), ``fx`` (the hybrid mix ``fusion``, likewise) and ``tk`` (the plugin's ``top_k``
    at ``top_k``, likewise). Evidence found and characters of each context."""
    from memcore_sqlite.search import ranking

    runtime = loop.provider.runtime
    plain = runtime.config
    asked = lme_date(item["question_date"])
    then = asked if clock is not None else None
    k = plain.top_k
    plan: list[tuple[str, datetime | None, int, int]] = [("now", None, 0, k)]
    if clock is not None:
        plan.append(("at", asked, 0, k))
    if neighbours:
        plan.append(("nb", then, neighbours, k))
    if fusion is not None:
        plan.append(("fx", then, 0, k))
    if top_k:
        plan.append(("tk", then, 0, top_k))
    shipped = (ranking.VECTOR_WEIGHT, ranking.LENGTH_B)
    out: dict[str, Any] = {}
    for name, at, around, shown in plan:
        if clock is not None:
            clock.at = at
        runtime.config = plain.with_changes(recall_neighbours=around, top_k=shown)
        if name == "fx" and fusion is not None:
            ranking.VECTOR_WEIGHT, ranking.LENGTH_B = fusion
        try:
            block, _ = loop.ask(1, question)
        finally:
            ranking.VECTOR_WEIGHT, ranking.LENGTH_B = shipped
        loop.new_session(f"lme-ask-{name}", [])
        out[f"{name}_hit"] = any(e in fold(block) for e in evidence)
        out[f"{name}_chars"] = len(block)
        out[f"{name}_block"] = fold(block)
        out[f"{name}_dates"] = _date_labels(block, item)
    runtime.config = plain
    if clock is not None:
        clock.at = None
    return out


def _fusion(text: str) -> tuple[float, float]:
    """``"0.4:1"`` -> (0.4, 1.0): a vector weight and a BM25 b, each from 0 to 1."""
    weight, _, b = text.partition(":")
    try:
        pair = (float(weight), float(b))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected W:B, got {text!r}") from None
    if not all(0.0 <= x <= 1.0 for x in pair):
        raise argparse.ArgumentTypeError(f"W and B must be from 0 to 1, got {text!r}")
    return pair


def _date_labels(block: str, item: dict[str, Any]) -> list[int]:
    """[labels on a day a haystack session was said, date labels in all] of a recall block
    (its lines start ``- [YYYY-MM-DD``): a replayed memory should show the day it was said,
    not the day of the replay."""
    said = {lme_date(d).strftime("%Y-%m-%d") for d in item["haystack_dates"]}
    labels = _LABEL.findall(block)
    return [sum(day in said for day in labels), len(labels)]


def _paired(rows: Sequence[dict[str, Any]], base: str, other: str) -> dict[str, Any]:
    """Evidence in ``other``'s context against ``base``'s, per question, with the sign test."""
    better = sum(r[f"{other}_hit"] and not r[f"{base}_hit"] for r in rows)
    worse = sum(r[f"{base}_hit"] and not r[f"{other}_hit"] for r in rows)
    return {
        f"evidence_{base}": sum(r[f"{base}_hit"] for r in rows),
        f"evidence_{other}": sum(r[f"{other}_hit"] for r in rows),
        "better": better,
        "worse": worse,
        "sign_test_p": round(sign_test_p(better, worse), 4),
        "contexts_differ": sum(r[f"{base}_block"] != r[f"{other}_block"] for r in rows),
        "chars_mean": [
            round(sum(r[f"{name}_chars"] for r in rows) / len(rows)) for name in (base, other)
        ],
        f"missed_{other}": [r["id"] for r in rows if not r[f"{other}_hit"]],
        # Date labels on a day a session was said, of all date labels: [said, all] per variant.
        "dates_said": {
            name: [sum(r[f"{name}_dates"][i] for r in rows) for i in (0, 1)]
            for name in (base, other)
        },
    }


def run_question(
    item: dict[str, Any],
    index: int,
    home: Path,
    switch: _AskSwitch | None,
    server: Any,
    dated: bool = False,
    neighbours: int = 0,
    fusion: tuple[float, float] | None = None,
    top_k: int = 0,
) -> dict[str, Any]:
    evidence = _evidence(item)
    user_id = f"lme-q{index}"
    clock = TurnClock() if dated else None
    loop = Loop(home, user_id, clock)
    try:
        started = time.perf_counter()
        turns = 0
        previous: list[dict[str, str]] = []
        for si, session in enumerate(item["haystack_sessions"]):
            if si:
                loop.new_session(f"lme-s{si}", previous)
            if clock is not None:
                loop.replay_at(lme_date(item["haystack_dates"][si]))
            previous = []
            for user, assistant in _pairs(session):
                loop.mm.sync_all(user, assistant, session_id=loop.session)
                previous += [
                    {"role": "user", "content": user},
                    {"role": "assistant", "content": assistant},
                ]
                turns += 1
        loop.new_session("lme-ask1", previous)
        loop.settle()
        ingest_s = time.perf_counter() - started
        if switch is not None:
            switch.asking = True
        if server is not None:
            server.set_faults({"latency_ms": server.latency_ms})
        question = item["question"]
        variants: dict[str, Any] = {}
        if clock is not None or neighbours or fusion is not None or top_k:
            variants = _ask_variants(
                loop, item, question, evidence, clock, neighbours, fusion, top_k
            )
        first, first_s = loop.ask(1, question)
        loop.new_session("lme-ask2", [])
        loop.mm.flush_pending(60)
        _, hi_s = loop.ask(1, "hi")
        loop.mm.sync_all("hi", "Hello! How can I help you today?", session_id=loop.session)
        loop.mm.queue_prefetch_all("hi", session_id=loop.session)
        loop.mm.flush_pending(60)
        second, second_s = loop.ask(2, question)
        folded = {"first": fold(first), "second": fold(second)}
        return {
            "id": item["question_id"],
            "type": item["question_type"],
            "turns": turns,
            "ingest_s": ingest_s,
            "evidence_given": _given(item, evidence),
            "first_hit": any(e in folded["first"] for e in evidence),
            "second_hit": any(e in folded["second"] for e in evidence),
            "first_chars": len(first),
            "second_chars": len(second),
            "prefetch_s": [first_s, hi_s, second_s],
            "phases": loop.phases,
            **variants,
        }
    finally:
        if switch is not None:
            switch.asking = False
        if server is not None:
            server.set_faults({})
        loop.close()


def summarize(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    def cell(part: Sequence[dict[str, Any]]) -> dict[str, Any]:
        n = len(part)
        return {
            "questions": n,
            "first_message_evidence": round(sum(r["first_hit"] for r in part) / n, 3),
            "second_message_evidence": round(sum(r["second_hit"] for r in part) / n, 3),
            "context_chars_mean": round(
                sum(r["first_chars"] + r["second_chars"] for r in part) / (2 * n)
            ),
        }

    by_type: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_type[r["type"]].append(r)
    dated: dict[str, Any] = {}
    asked = set(rows[0]) if rows else set()
    if "at_hit" in asked:  # asked now against asked at the question's date
        dated["reference_time"] = _paired(rows, "now", "at")
    # Each other variant against the shipped setting asked at the same time.
    base = "at" if "at_hit" in asked else "now"
    for name, variant in (("neighbours", "nb"), ("fusion", "fx"), ("top_k", "tk")):
        if f"{variant}_hit" in asked:
            dated[name] = _paired(rows, base, variant)
    return {
        **dated,
        **cell(rows),
        "prefetch_ms": summary_ms([s for r in rows for s in r["prefetch_s"]]),
        "ingest_s_mean": round(sum(r["ingest_s"] for r in rows) / len(rows), 2),
        "turns_mean": round(sum(r["turns"] for r in rows) / len(rows)),
        "per_type": {t: cell(part) for t, part in sorted(by_type.items())},
        "missed_first": [r["id"] for r in rows if not r["first_hit"]],
        # Questions whose evidence Hermes never hands a provider (a session's opening reply).
        "evidence_never_given": [r["id"] for r in rows if not r["evidence_given"]],
        "first_message_evidence_of_given": _of_given(rows),
        "prefetch_ms_each": {r["id"]: [round(x * 1000, 1) for x in r["prefetch_s"]] for r in rows},
        "prefetch_phases": _prefetch_phases.breakdown(
            [p for r in rows for p in r["phases"]],
            [s * 1000 for r in rows for s in r["prefetch_s"]],
            [f"{r['id']}:{which}" for r in rows for which in ("first", "hi", "second")],
        ),
    }


def _of_given(rows: Sequence[dict[str, Any]]) -> float | None:
    given = [r for r in rows if r["evidence_given"]]
    return round(sum(r["first_hit"] for r in given) / len(given), 3) if given else None


class _Emulator:
    """The spawned emulator and its faults, set through its admin endpoint."""

    def __init__(self, spawned: Any, latency_ms: float) -> None:
        self.spawned = spawned
        self.latency_ms = latency_ms

    def set_faults(self, faults: dict[str, Any]) -> None:
        import urllib.request

        request = urllib.request.Request(
            f"{self.spawned.url.rstrip('/')}/__admin/faults",
            data=json.dumps(faults).encode(),
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            answer.read()


def _default_wait() -> int | None:
    from memcore.config import MemcoreConfig

    return getattr(MemcoreConfig(), "recall_wait_ms", None)  # None: a version without it


def _home(root: Path, name: str, config: dict[str, Any], env: dict[str, str] | None) -> Path:
    from memcore_hermes.plugin_copy import copy_plugin

    home = root / name
    home.mkdir()
    copy_plugin(REPO_ROOT, home / "plugins" / "tablestore-mem")
    (home / "config.yaml").write_text("memory:\n  provider: tablestore-mem\n", encoding="utf-8")
    (home / "tablestore_memory.json").write_text(json.dumps(config), encoding="utf-8")
    if env:
        path = home / ".env"
        path.write_text("".join(f"{k}={v}\n" for k, v in env.items()), encoding="utf-8")
        os.chmod(path, 0o600)
    return home


def run_backend(
    backend: str, items: Sequence[tuple[int, dict[str, Any]]], root: Path, args: Any
) -> dict[str, Any]:
    rows = []
    server = None
    switch = None
    if backend == "local":
        switch = _share_one_model(args.cache)
        started = time.perf_counter()
        if switch is not None:
            switch.inner.embed(["warm up"])
        model_load_s = time.perf_counter() - started
    else:
        from memcore_tablestore.testing import spawned_emulator

        model_load_s = 0.0
        emulator = spawned_emulator()
        server = _Emulator(emulator.__enter__(), args.latency_ms)
    try:
        for index, item in items:
            if backend == "local":
                config = {"backend": "local", "local_path": str(root / f"q{index}.db")}
                home = _home(root, f"home-local-{index}", config, None)
            else:
                config = {
                    "backend": "tablestore",
                    "endpoint": server.spawned.url,
                    "instance_name": server.spawned.instance_name,
                    "timeout": 5.0,
                }
                if args.recall_wait_ms is not None:
                    config["recall_wait_ms"] = args.recall_wait_ms
                home = _home(root, f"home-emu-{index}", config, EMULATOR_KEYS)
            os.environ["HERMES_HOME"] = str(home)
            rows.append(
                run_question(
                    item,
                    index,
                    home,
                    switch,
                    server,
                    dated=args.reference_time,
                    neighbours=args.neighbours,
                    fusion=args.fusion,
                    top_k=args.top_k,
                )
            )
            shutil.rmtree(home, ignore_errors=True)
            (root / f"q{index}.db").unlink(missing_ok=True)
            print(
                json.dumps({k: rows[-1][k] for k in ("id", "first_hit", "second_hit")}),
                file=sys.stderr,
            )
    finally:
        if server is not None:
            emulator.__exit__(None, None, None)
    out = summarize(rows)
    out["model_load_s"] = round(model_load_s, 2)
    if backend == "emulator":
        out["latency_ms"] = args.latency_ms
        out["recall_wait_ms"] = args.recall_wait_ms or _default_wait()
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default=os.environ.get("LONGMEMEVAL_DATA", str(DEFAULT_DATA)))
    parser.add_argument("--limit", type=int, default=12, help="number of questions")
    parser.add_argument("--offset", type=int, default=0, help="first question")
    parser.add_argument("--stride", type=int, default=1, help="take every n-th question")
    parser.add_argument("--backends", default="local,emulator")
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--cache", default=None, help="directory for cached ingest vectors")
    parser.add_argument("--no-consolidation", action="store_true")
    parser.add_argument("--recall-wait-ms", type=int, default=None)
    parser.add_argument(
        "--phases", action="store_true", help="time each prefetch's phases (_prefetch_phases.py)"
    )
    parser.add_argument("--types", default="", help="only these question types (comma list)")
    parser.add_argument(
        "--reference-time",
        action="store_true",
        help="replay each session at its date; ask now and at the question's date",
    )
    parser.add_argument(
        "--neighbours",
        type=int,
        default=0,
        help="also ask with recall_neighbours=N (the embedded store), same block budget",
    )
    parser.add_argument(
        "--fusion",
        type=_fusion,
        default=None,
        help="also ask with the embedded store's hybrid at vector weight W and BM25 b (W:B)",
    )
    parser.add_argument(
        "--top-k",
        type=int,
        default=0,
        help="also ask with the plugin's top_k at K (memories shown), same block budget",
    )
    args = parser.parse_args()
    if args.no_consolidation:
        from memcore_hermes.session import consolidation

        consolidation.schedule = lambda runtime: None  # type: ignore[assignment]

    if args.phases:
        _prefetch_phases.install()
    data = load(args.data)
    if args.types:
        wanted = set(args.types.split(","))
        data = [item for item in data if item["question_type"] in wanted]
    picked = list(enumerate(data))[args.offset :: max(1, args.stride)][: args.limit]
    result: dict[str, Any] = {
        "benchmark": "hermes_loop_recall",
        "data": Path(args.data).name,
        "questions": [i for i, _ in picked],
        "roles": "user+assistant",
        "consolidation": not args.no_consolidation,
        "types": args.types or "all",
        "reference_time": args.reference_time,
        "neighbours": args.neighbours,
        "fusion": args.fusion,
        "top_k": args.top_k,
    }
    with tempfile.TemporaryDirectory() as tmp:
        for backend in args.backends.split(","):
            result[backend] = run_backend(backend, picked, Path(tmp), args)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
