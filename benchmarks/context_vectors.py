"""Contextual row vectors: each stored turn ranked by a vector that also sees the turn before it.

A short turn ("Jonah: Makes sense.") is little more than its speaker's name, so its own vector
is close to every question naming that speaker, and an evidence turn often shares no word with
the question. Here a row's *window* is the turn written just before it in its session and the
turn itself (``"prev\\nturn"``; a session's first turn is its own window), embedded with the
product's embedder, and the vector the ranking sees is ``normalize(v_turn + beta * v_window)``
(beta in :data:`BETAS`) or the window's alone; the query vector is unchanged. On LongMemEval
user-turn stores the turn before is the previous *user* turn of the session (that is all such a
store is written), taken from the split the stores were captured from; on the dialogs it is
the previous turn of the session, either speaker's.

``embed`` fills a window-vector cache (a :class:`~benchmarks._embed_cache.CachingEmbedder`
SQLite file, resumable) for kept LongMemEval stores and the dialog set; :mod:`benchmarks.
longmemeval_cv` ``--context-cache`` reads it (never embedding) and adds the ``context``
families to its cross-validation. ``speed`` times the embedder alone on the same turns as
turn texts and as window texts (what each write would add: one more text per turn).

    uv run python -m benchmarks context_vectors embed R --cache /tmp/ctx-cache [--limit 60] \\
        [--dialogs benchmarks/data/dialogs_dev.json]
    uv run python -m benchmarks context_vectors speed R [--texts 300] [--rounds 3] \\
        [--dialogs benchmarks/data/dialogs_dev.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from benchmarks.longmemeval_replay import INDEX

#: Mixing weights of the window's vector (0: the turn's own vector, the shipped row vector).
BETAS = (0.5, 1.0, 2.0)
#: Row-vector variants, by label: "turn" the stored vector, "ctx<beta>" the mix, "window" alone.
LABELS = ("turn", *(f"ctx{b:g}" for b in BETAS), "window")
#: Windows embedded per call (and per cache commit, so an interrupted fill keeps its work).
CHUNK = 256


def previous_turns(item: dict[str, Any], roles: str) -> dict[str, str]:
    """Each written LongMemEval turn's key ("session:turn") -> the text of the turn written
    just before it in its session, as :func:`benchmarks.longmemeval.ingest` writes them: with
    ``roles="user"`` the previous *user* turn (nothing else is stored), with ``"all"`` the
    previous turn of either role; empty turns are skipped as ingest skips them."""
    if roles not in ("user", "all"):
        raise LookupError(f"windows are defined for roles user and all, not {roles!r}")
    out: dict[str, str] = {}
    for si, session in enumerate(item["haystack_sessions"]):
        before: str | None = None
        for ti, turn in enumerate(session):
            if (roles == "user" and turn["role"] != "user") or not turn["content"].strip():
                continue
            if before is not None:
                out[f"{si}:{ti}"] = before
            before = turn["content"]
    return out


def dialog_previous(conversation: dict[str, Any]) -> dict[str, str]:
    """Each dialog turn's id -> the turn before it in its session ("Speaker: text", as
    :func:`benchmarks.dialog_recall.ingest` stores a turn)."""
    out: dict[str, str] = {}
    before: dict[int, str] = {}
    for turn in conversation["turns"]:
        if turn["session"] in before:
            out[turn["id"]] = before[turn["session"]]
        before[turn["session"]] = f"{turn['speaker']}: {turn['text']}"
    return out


def windows(rows: Iterable[tuple[str, str]], previous: dict[str, str]) -> list[str]:
    """Each row's window from its (turn key, text): the turn written before it, a newline and
    the row; a session's first turn alone. The store keeps one row per distinct text (a
    repeat moves the row's metadata to the latest occurrence), so a repeated text's window is
    that of the occurrence its metadata names."""
    out = []
    for key, text in rows:
        before = previous.get(key)
        out.append(text if before is None else f"{before}\n{text}")
    return out


@attrs.frozen
class Windows:
    """What a reader needs for one store's contextual vectors: the turn written before each
    turn and an embedder that answers windows (a read-only cache)."""

    embedder: Any
    previous: dict[str, str]

    def vectors(self, keys: Sequence[str], texts: Sequence[str]) -> np.ndarray:
        return np.asarray(
            self.embedder.embed(windows(zip(keys, texts), self.previous)), dtype=np.float32
        )


def store_windows(path: Path, name: str, previous: dict[str, str]) -> list[str]:
    """The windows of the rows of store ``name`` at ``path``, in ``seq`` order."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT m.text, m.metadata FROM memories m JOIN stores s ON s.id = m.store_id"
            " WHERE s.name = ? ORDER BY m.seq",
            (name,),
        ).fetchall()
    finally:
        conn.close()
    return windows(((json.loads(meta).get("turn", ""), text) for text, meta in rows), previous)


def haystacks(directory: Path, limit: int) -> list[tuple[dict[str, Any], dict[str, str]]]:
    """The first ``limit`` kept questions (0: all), each with its turns' previous turns, read
    from the development split the stores were captured from (``LONGMEMEVAL_DATA`` or
    :data:`benchmarks.longmemeval.DEFAULT_DATA`)."""
    from benchmarks.longmemeval import DEFAULT_DATA, load

    index = json.loads((directory / INDEX).read_text(encoding="utf-8"))
    items = load(os.environ.get("LONGMEMEVAL_DATA", str(DEFAULT_DATA)))
    out = []
    for q in index["questions"][: limit or None]:
        item = items[q["index"]]
        if item["question_id"] != q["item"]["question_id"]:
            raise LookupError(f"the split's question {q['index']} is not the kept one")
        out.append((q, previous_turns(item, index["roles"])))
    return out


def mixed(turn: np.ndarray, window: np.ndarray) -> dict[str, np.ndarray]:
    """Row matrices of every label of :data:`LABELS` but ``turn``, unit rows (float32)."""
    out = {}
    for beta in BETAS:
        both = turn.astype(np.float64) + beta * window.astype(np.float64)
        out[f"ctx{beta:g}"] = both / np.linalg.norm(both, axis=1, keepdims=True)
    out["window"] = window.astype(np.float64)
    return {k: v.astype(np.float32) for k, v in out.items()}


def embed(directory: Path | None, cache: Path, limit: int, dialogs: Path | None) -> dict[str, Any]:
    """Embed every window of the kept stores (first ``limit`` questions) and of the dialog
    set into ``cache``; texts already there are skipped."""
    from benchmarks._embed_cache import CachingEmbedder
    from benchmarks.longmemeval import STORE
    from memcore_sqlite.embedders.onnx import OnnxEmbedder

    texts: list[str] = []
    if directory is not None:
        for q, previous in haystacks(directory, limit):
            texts += store_windows(directory / f"q{q['index']}.db", STORE, previous)
    if dialogs is not None:
        data = json.loads(dialogs.read_text(encoding="utf-8"))
        for conversation in data["conversations"]:
            previous = dialog_previous(conversation)
            rows = [(t["id"], f"{t['speaker']}: {t['text']}") for t in conversation["turns"]]
            texts += windows(rows, previous)
    distinct = list(dict.fromkeys(texts))
    embedder = CachingEmbedder(OnnxEmbedder(), cache)
    started = time.perf_counter()
    for i in range(0, len(distinct), CHUNK):
        embedder.embed(distinct[i : i + CHUNK])
        done = min(i + CHUNK, len(distinct))
        print(f"{done}/{len(distinct)} {time.perf_counter() - started:.0f}s", file=sys.stderr)
    return {
        "model": embedder.name,
        "windows": len(texts),
        "distinct": len(distinct),
        "embedded": embedder.misses,
        "already_cached": embedder.hits,
        "seconds": round(time.perf_counter() - started, 1),
        "cache": str(cache),
    }


def _timed(embedder: Any, texts: Sequence[str]) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    embedder.embed(list(texts))
    return time.perf_counter() - wall, time.process_time() - cpu


def _longmemeval_pairs(directory: Path, count: int) -> tuple[list[str], list[str]]:
    """``count`` stored turns of the kept stores that have a turn before them (a session's
    first turn is its own window, which would flatter the windows), and their windows."""
    turns: list[str] = []
    wins: list[str] = []
    for q, previous in haystacks(directory, 0):
        path = directory / f"q{q['index']}.db"
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            rows = [
                (json.loads(m).get("turn", ""), t)
                for t, m in conn.execute("SELECT text, metadata FROM memories ORDER BY seq")
            ]
        finally:
            conn.close()
        for (_, text), window in zip(rows, windows(rows, previous)):
            if window != text:
                turns.append(text)
                wins.append(window)
        if len(turns) >= count:
            break
    return turns[:count], wins[:count]


def _dialog_pairs(path: Path, count: int) -> tuple[list[str], list[str]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    turns: list[str] = []
    wins: list[str] = []
    for conversation in data["conversations"]:
        previous = dialog_previous(conversation)
        for t in conversation["turns"]:
            if t["id"] in previous:
                turns.append(f"{t['speaker']}: {t['text']}")
                wins.append(f"{previous[t['id']]}\n{turns[-1]}")
    return turns[:count], wins[:count]


def speed(directory: Path, count: int, rounds: int, dialogs: Path | None = None) -> dict[str, Any]:
    """Texts per second of the embedder alone (no cache) on ``count`` turns as they are and
    as windows, turn texts and window texts taking turns round by round (the machine's load
    moves); CPU time is the process's, every thread, so it holds under load."""
    from memcore_sqlite.embedders.onnx import OnnxEmbedder

    sets = {"longmemeval_user_turns": _longmemeval_pairs(directory, count)}
    if dialogs is not None:
        sets["dialogs"] = _dialog_pairs(dialogs, count)
    embedder = OnnxEmbedder()
    embedder.embed(["warm up"])
    out: dict[str, Any] = {"model": embedder.name, "rounds": rounds}
    load = [os.getloadavg()[0]]
    for name, (turns, wins) in sets.items():
        runs: dict[str, list[tuple[float, float]]] = {"turn": [], "window": []}
        for _ in range(rounds):
            runs["turn"].append(_timed(embedder, turns))
            runs["window"].append(_timed(embedder, wins))
        entry: dict[str, Any] = {
            "texts": len(turns),
            "mean_chars": {
                "turn": round(sum(map(len, turns)) / len(turns), 1),
                "window": round(sum(map(len, wins)) / len(wins), 1),
            },
        }
        for kind, timings in runs.items():
            entry[kind] = {
                "texts_per_s_wall": sorted(round(len(turns) / w, 1) for w, _ in timings),
                "texts_per_cpu_s": sorted(round(len(turns) / c, 1) for _, c in timings),
            }
        entry["window_cpu_over_turn_cpu_best_of_rounds"] = round(
            min(c for _, c in runs["window"]) / min(c for _, c in runs["turn"]), 2
        )
        out[name] = entry
    load.append(os.getloadavg()[0])
    out["load_average_before_after"] = [round(x, 2) for x in load]
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    emb = sub.add_parser("embed")
    emb.add_argument("directory", type=Path, nargs="?", default=None, help="kept stores")
    emb.add_argument("--cache", type=Path, required=True, help="window-vector cache (written)")
    emb.add_argument("--limit", type=int, default=0, help="first N kept questions (0: all)")
    emb.add_argument("--dialogs", type=Path, default=None, help="also the dialog set")
    sp = sub.add_parser("speed")
    sp.add_argument("directory", type=Path, help="kept stores (the turns timed)")
    sp.add_argument("--texts", type=int, default=300)
    sp.add_argument("--rounds", type=int, default=3)
    sp.add_argument("--dialogs", type=Path, default=None, help="also the dialog set's turns")
    args = parser.parse_args()
    try:
        if args.command == "embed":
            result = embed(args.directory, args.cache, args.limit, args.dialogs)
        else:
            result = speed(args.directory, args.texts, args.rounds, args.dialogs)
    except (LookupError, FileNotFoundError) as e:
        print(json.dumps({"error": f"{type(e).__name__}: {e}"}), file=sys.stderr)
        return 1
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
