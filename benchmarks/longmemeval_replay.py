"""LongMemEval recall replayed on kept stores: re-rank after a scoring change in seconds.

``capture`` ingests the development split once (vectors from a ``--cache`` that is only read,
never written) and keeps one store per question, with each question's evidence and query
vector, in ``--out``. ``score`` then runs every question's searches on those stores with the
code as it is now and prints :mod:`benchmarks.longmemeval`'s summary (overall, per type,
``hybrid_below_a_signal_by_type``...). Nothing is embedded when scoring: the query vector is
the captured one, so any change in the figures comes from ranking, lexical scoring or query
analysis. A store is ranked exactly as :mod:`benchmarks.longmemeval` ranks it (same search
path, same ingest), about a second for 120 questions.

    uv run python -m benchmarks longmemeval_replay capture --roles user --cache /tmp/lme-cache \\
        --out /tmp/lme-replay-user
    uv run python -m benchmarks longmemeval_replay score /tmp/lme-replay-user
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.longmemeval import (
    DEFAULT_DATA,
    ingest,
    load,
    open_question,
    search_question,
    summarize,
)
from memcore.errors import InvalidInput

INDEX = "questions.json"


class ReplayEmbedder:
    """Answers the captured query vectors by text and embeds nothing else."""

    def __init__(self, name: str, dimension: int, vectors: dict[str, list[float]]) -> None:
        self.name, self.dimension, self._vectors = name, dimension, vectors

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        try:
            return [self._vectors[t] for t in texts]
        except KeyError as e:
            raise LookupError(f"no captured vector for {str(e)[:60]}") from None


def stratified_order(items: Sequence[dict[str, Any]]) -> list[int]:
    """Question indices such that every prefix holds each question type in about its share
    of the split: a capture stopped half-way is still a sample of every type."""
    seen: dict[str, int] = {}
    counts: dict[str, int] = {}
    for item in items:
        counts[item["question_type"]] = counts.get(item["question_type"], 0) + 1
    keyed = []
    for i, item in enumerate(items):
        kind = item["question_type"]
        keyed.append(((seen.get(kind, 0) + 0.5) / counts[kind], i))
        seen[kind] = seen.get(kind, 0) + 1
    return [i for _, i in sorted(keyed)]


def capture(
    data: str, roles: str, cache: str, out: Path, limit: int, fill: bool = False
) -> dict[str, Any]:
    """Keep each question's store; the index is rewritten after every question, so a capture
    cut short (``fill`` embeds what the cache lacks, which is slow) leaves usable stores."""
    from benchmarks._embed_cache import CachingEmbedder
    from memcore_sqlite.embedders.onnx import OnnxEmbedder

    embedder = CachingEmbedder(OnnxEmbedder(), cache, read_only=not fill)
    every = load(data)
    order = stratified_order(every)[: limit or None]
    out.mkdir(parents=True, exist_ok=True)
    kept = []
    index = {"model": embedder.name, "dimension": embedder.dimension, "roles": roles}
    for i in order:
        item = every[i]
        path = out / f"q{i}.db"
        path.unlink(missing_ok=True)
        store, mem = open_question(path, embedder, i)
        try:
            started = time.perf_counter()
            turns, count = ingest(mem, item, roles)
            ingest_s = time.perf_counter() - started
            qvec = embedder.embed([item["question"]])[0]
        finally:
            store.close()
        keep = ("question_id", "question_type", "question", "answer_session_ids")
        kept.append(
            {
                "index": i,
                "item": {k: item[k] for k in keep},
                "evidence": sorted(turns),
                "turns": count,
                "ingest_s": ingest_s,
                "qvec": qvec,
            }
        )
        partial = out / f"{INDEX}.part"
        partial.write_text(json.dumps({**index, "questions": kept}), encoding="utf-8")
        partial.replace(out / INDEX)
    return {**index, "questions": len(kept), "out": str(out)}


def score(directory: Path, data: str = str(DEFAULT_DATA)) -> dict[str, Any]:
    """Each kept store searched as :mod:`benchmarks.longmemeval` searches it. The question
    itself is read from the split (``data``), by id: the search takes the question's date as
    its reference time, and the scores count every evidence turn of the haystack, neither of
    which the index keeps (a replay scored without them stopped with a KeyError)."""
    index = json.loads((directory / INDEX).read_text(encoding="utf-8"))
    questions = index["questions"]
    vectors = {q["item"]["question"]: q["qvec"] for q in questions}
    embedder = ReplayEmbedder(index["model"], index["dimension"], vectors)
    split = {item["question_id"]: item for item in load(data)}
    rows = []
    for i, q in enumerate(questions):
        i = q.get("index", i)
        item = split.get(q["item"]["question_id"])
        if item is None:
            raise LookupError(f"question {q['item']['question_id']} is not in {data}")
        store, mem = open_question(directory / f"q{i}.db", embedder, i)
        try:
            found = search_question(mem, store, item, set(q["evidence"]))
        finally:
            store.close()
        rows.append({**found, "ingest_s": q["ingest_s"], "turns": q["turns"]})
    return {"embedder": index["model"], "roles": index["roles"], **summarize(rows)}


def main() -> int:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    cap = sub.add_parser("capture")
    cap.add_argument("--data", default=os.environ.get("LONGMEMEVAL_DATA", str(DEFAULT_DATA)))
    cap.add_argument("--roles", choices=("user", "all"), default="user")
    cap.add_argument("--cache", required=True, help="vector cache to read (never written)")
    cap.add_argument("--fill", action="store_true", help="embed and add what the cache lacks")
    cap.add_argument("--out", required=True, type=Path)
    cap.add_argument(
        "--limit", type=int, default=0, help="first N questions, stratified by type (0: all)"
    )
    sc = sub.add_parser("score")
    sc.add_argument("directory", type=Path)
    sc.add_argument("--data", default=os.environ.get("LONGMEMEVAL_DATA", str(DEFAULT_DATA)))
    args = parser.parse_args()
    try:
        if args.command == "capture":
            result = capture(args.data, args.roles, args.cache, args.out, args.limit, args.fill)
        else:
            result = score(args.directory, args.data)
    except (LookupError, FileNotFoundError, InvalidInput) as e:
        # A text missing from the cache reaches us through the store as InvalidInput.
        cause = e.__cause__ or e
        print(json.dumps({"error": f"{type(cause).__name__}: {cause}"}), file=sys.stderr)
        return 1
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
