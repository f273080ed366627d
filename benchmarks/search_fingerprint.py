"""SQLite store: a fingerprint of what search returns, to show that a change moved no result.

A refactoring that should change no behaviour is checked by running this before and after it:
the digests must be equal. Two seeded corpora, each in two tenants: ``zipf`` (generated words,
random unit vectors) and ``templated`` (five sentence directions plus small perturbations, the
near-duplicates that break a fast vector path). Every query runs in hybrid, vector and lexical
mode; each hit is recorded as its text, its score's ``repr`` and its signals, so a change in the
last bit of a score shows. Ids and dates are left out: they are drawn anew on every run.

Prints one JSON document: a digest per corpus and mode, and one over all of them. ``--dump``
writes the hits themselves to a JSON file, so two runs that differ can be compared hit by hit.

    uv run python -m benchmarks.search_fingerprint [--size 20000] [--queries 100] [--dump F]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._sqlite_corpus import Corpus, unit_vector
from memcore.scope import Scope
from memcore_sqlite import SqliteMemoryStore, TextItem

STORE = "fingerprint"
DIMENSION = 384
BATCH = 1_000
MODES = ("hybrid", "vector", "lexical")
TENANTS = (Scope("app", "alice", "agent", "run"), Scope("app", "bob", "agent", "run"))


def _templated(texts: Sequence[str], seed: int) -> dict[str, Any]:
    """Five template directions, each row its template plus two of 64 word offsets."""
    rng = np.random.default_rng(seed)
    templates = rng.standard_normal((5, DIMENSION)).astype(np.float32)
    templates /= np.linalg.norm(templates, axis=1, keepdims=True)
    words = rng.standard_normal((64, DIMENSION)).astype(np.float32) * 0.12
    n = len(texts)
    rows = templates[rng.integers(0, 5, n)] + words[rng.integers(0, 64, n)]
    rows += words[rng.integers(0, 64, n)]
    rows += rng.standard_normal((n, DIMENSION)).astype(np.float32) * 0.01
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return dict(zip(texts, rows))


class _Table:
    """A stored vector per text (the corpus's), a hashed one for any other text."""

    def __init__(self, table: dict[str, Any]) -> None:
        self._table = table

    dimension = DIMENSION
    name = "fingerprint-384"

    def embed(self, texts: Sequence[str]) -> list[Any]:
        return [self._table.get(t, unit_vector(t, DIMENSION)) for t in texts]


def _digest(rows: list[Any]) -> str:
    return hashlib.sha256(json.dumps(rows, ensure_ascii=False).encode()).hexdigest()


def _run(kind: str, size: int, queries: int, folder: Path, dump: dict[str, Any]) -> dict[str, Any]:
    corpus = Corpus(seed=11 if kind == "zipf" else 13)
    texts = corpus.texts(size)
    asked = corpus.queries(texts, queries)
    table = _templated(texts + asked, seed=17) if kind == "templated" else {}
    embedder = _Table(table)
    started = time.perf_counter()
    out: dict[str, Any] = {}
    with SqliteMemoryStore(folder / f"{kind}.db", embedder=embedder) as store:
        store.ensure_store(STORE)
        for i in range(0, size, BATCH):
            batch = texts[i : i + BATCH]
            store.add_many(STORE, [TextItem(TENANTS[(i + k) % 2], t) for k, t in enumerate(batch)])
        filled = time.perf_counter() - started
        vectors = embedder.embed(asked)
        for mode in MODES:
            rows: list[Any] = []
            for q, v in zip(asked, vectors):
                for tenant in TENANTS:
                    pattern = tenant.tenant_pattern()
                    hits = (
                        store.search(STORE, pattern, q, mode=mode)
                        if mode == "lexical"
                        else store.search_vector(STORE, pattern, q, v, mode=mode)
                    )
                    rows.append(
                        [[h.memory.text, repr(h.score), sorted(h.signals.items())] for h in hits]
                    )
            out[mode] = {"digest": _digest(rows), "hits": sum(len(r) for r in rows)}
            dump[f"{kind}/{mode}"] = rows
    out["fill_s"] = round(filled, 2)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=20_000, help="memories per corpus")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--dump", type=Path, help="write every hit list here (JSON)")
    args = parser.parse_args(argv)
    dump: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        corpora = {
            kind: _run(kind, args.size, args.queries, Path(tmp), dump)
            for kind in ("zipf", "templated")
        }
    if args.dump is not None:
        args.dump.write_text(json.dumps(dump, ensure_ascii=False))
    overall = _digest([[k, m, corpora[k][m]["digest"]] for k in corpora for m in MODES])
    print(
        json.dumps(
            {"size": args.size, "queries": args.queries, "digest": overall, "corpora": corpora},
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
