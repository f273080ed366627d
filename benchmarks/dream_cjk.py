"""Local dream on Chinese, Japanese and fullwidth text: precision and recall of MERGE and of
supersession (UPDATE / DELETE) over the labelled pairs of ``data/dream_pairs_cjk.json``.

Each pair is planned twice: ``alone`` (a task over its two memories, older first) and
``pooled`` (one task over every pair's memories, as one user's: word weights over all of
them, and an action joining two pairs counts against precision). Similarities come from the
shipped embedder when the semantic extra is installed (``vectors``) and are left out
(``lexical``, a store without vectors) otherwise or with ``--lexical``.

A prediction counts at ``proposed`` (any action a person is shown) and at ``applied``
(what ``safe_auto`` applies by itself: MERGE from 0.70, UPDATE from 0.85; DELETE never).

    uv run python -m benchmarks dream_cjk [--lexical] [--show]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memcore.dream import DEFAULT_THRESHOLDS
from memcore.scope import Scope
from memcore.values import Message
from memcore_sqlite import SqliteMemoryStore

DATA = Path(__file__).resolve().parent / "data" / "dream_pairs_cjk.json"
SCOPE = Scope("bench", "user", "assistant", "run")
STORE = "bench"


def _embedder() -> Any:
    from memcore_sqlite.embedders import missing_onnx_requirements

    if missing_onnx_requirements():
        return None
    from memcore_sqlite.embedders.onnx import OnnxEmbedder

    return OnnxEmbedder()


def _write(store: SqliteMemoryStore, i: int, pair: dict[str, str]) -> dict[str, str]:
    """The pair's two memories, the older said first; their ids by name (``o<i>``, ``n<i>``)."""
    out = {}
    for name, when in (("o", 10.0 * i + 1.0), ("n", 10.0 * i + 2.0)):
        receipt = store.add_messages(
            STORE, SCOPE, [Message("user", pair["old" if name == "o" else "new"], timestamp=when)]
        )
        out[receipt.memory_ids[0]] = f"{name}{i}"
    return out


def _dream(
    store: SqliteMemoryStore, names: dict[str, str]
) -> list[tuple[str, tuple[str, ...], float]]:
    """What a dream task (proposal mode) proposes: (action, the pair names it reads, confidence)."""
    task = store.create_dream_task(STORE, SCOPE.tenant_pattern())
    out = []
    token: str | None = None
    while True:
        page = store.list_dream_actions(STORE, task.id, limit=100, next_token=token)
        for a in page.items:
            ids = {*a.memory_ids, *([a.target_memory_id] if a.target_memory_id else [])}
            out.append((a.action, tuple(sorted(names[i] for i in ids)), float(a.confidence or 0)))
        if page.next_token is None:
            break
        token = page.next_token
    return out


def _predicted(
    actions: Sequence[tuple[str, tuple[str, ...], float]], applied: bool
) -> dict[frozenset[str], str]:
    """What the actions say of each pair of memories they join."""
    out: dict[frozenset[str], str] = {}
    for action, ids, confidence in actions:
        if applied and (action == "DELETE" or confidence < DEFAULT_THRESHOLDS[action.lower()]):
            continue
        kind = "merge" if action == "MERGE" else "supersede"
        for i, x in enumerate(ids):
            for y in ids[i + 1 :]:
                out[frozenset((x, y))] = kind
    return out


def _score(pairs: Sequence[dict[str, str]], said: dict[frozenset[str], str]) -> dict[str, Any]:
    labelled = {frozenset((f"o{i}", f"n{i}")): p["label"] for i, p in enumerate(pairs)}
    out: dict[str, Any] = {}
    for kind in ("merge", "supersede"):
        told = {k for k, v in said.items() if v == kind}
        want = {k for k, v in labelled.items() if v == kind}
        hit = len(told & want)
        out[kind] = {
            "predicted": len(told),
            "correct": hit,
            "labelled": len(want),
            "precision": round(hit / len(told), 3) if told else None,
            "recall": round(hit / len(want), 3) if want else None,
        }
    out["wrong_on_keep"] = sorted(
        i for i, p in enumerate(pairs) if p["label"] == "keep" and labelled_key(i) in said
    )
    return out


def labelled_key(i: int) -> frozenset[str]:
    return frozenset((f"o{i}", f"n{i}"))


def run(pairs: Sequence[dict[str, str]], embedder: Any) -> dict[str, Any]:
    alone: list[tuple[str, tuple[str, ...], float]] = []
    for i, pair in enumerate(pairs):
        with SqliteMemoryStore(":memory:", embedder=embedder) as store:
            store.ensure_store(STORE)
            alone.extend(_dream(store, _write(store, i, pair)))
    with SqliteMemoryStore(":memory:", embedder=embedder) as store:
        store.ensure_store(STORE)
        names: dict[str, str] = {}
        for i, pair in enumerate(pairs):
            names |= _write(store, i, pair)
        pooled = _dream(store, names)
    return {
        name: {m: _score(pairs, _predicted(acts, m == "applied")) for m in ("proposed", "applied")}
        for name, acts in (("alone", alone), ("pooled", pooled))
    } | {"actions": pooled}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lexical", action="store_true", help="plan without vectors")
    parser.add_argument("--show", action="store_true", help="list the pooled actions")
    args = parser.parse_args()
    pairs = json.loads(DATA.read_text(encoding="utf-8"))["pairs"]
    embedder = None if args.lexical else _embedder()
    result = run(pairs, embedder)
    shown = result.pop("actions")
    report: dict[str, Any] = {
        "benchmark": "dream_cjk",
        "pairs": len(pairs),
        "similarities": "lexical" if embedder is None else embedder.name,
        **result,
    }
    if args.show:
        report["pooled_actions"] = shown
    print(json.dumps(report, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
