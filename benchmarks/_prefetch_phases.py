"""Where a prefetch's time goes, for ``hermes_loop_recall --phases`` (benchmark-only).

The embedded store's search path and the plugin's recall are wrapped with
``time.perf_counter`` for the duration of a run; each prefetch gets a record of the time spent
in each phase on the prefetching thread, the garbage collections that ran inside it, and the
work other threads (the write lane, the session-end pass) did meanwhile. Nothing here stays
installed after :func:`uninstall`, and nothing is logged: the records go into the JSON.

Phases (milliseconds; nested ones are also counted in their parent, see ``rank_other``):
``embed`` the query's vector; ``coverage`` its script weight; ``snapshot`` entering a read
(the store's lock and ``BEGIN``: a wait behind another thread's write shows here);
``store_key``; ``rank`` the candidate generation, holding ``lexical``, ``postings`` and
``lengths`` (the lexical stage and its caches), ``vector_load`` (the codes of the scope,
built on a store's first search or after a write) and ``vector_score``; ``hits`` reading the
rows (and the exact cosines the order needs); ``supersession``; ``index_pending``; ``audit``;
``format`` the recall block; ``recall`` the plugin's whole search; ``fts_merge`` a write's
full-text merge after its commit, under the store's lock (another thread's shows in
``beside``). ``gc`` is the time of the
collections that ran inside the prefetch, ``gc_gen2`` how many were full ones.
"""

from __future__ import annotations

import contextlib
import gc
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

#: The record of the prefetch being measured. Hermes runs each provider's prefetch on a
#: thread of its own (``memory-prefetch-<name>``): that thread's work is the prefetch's.
_active: dict[str, Any] = {"record": None, "thread": None}
_restore: list[tuple[Any, str, Any]] = []
_others: list[tuple[str, str, float, float]] = []  # (thread, phase, start, end)
_others_lock = threading.Lock()
_gc_started: dict[int, float] = {}


def _record() -> dict[str, Any] | None:
    record = _active["record"]
    if record is None:
        return None
    thread = threading.current_thread()
    if thread.ident == _active["thread"] or thread.name.startswith("memory-prefetch-"):
        return record  # type: ignore[no-any-return]
    return None


def _add(phase: str, seconds: float, start: float) -> None:
    record = _record()
    if record is not None:
        record[phase] = record.get(phase, 0.0) + seconds * 1000
    elif phase in ("embed", "recall", "write_held", "snapshot_held", "fts_merge"):
        with _others_lock:
            _others.append((threading.current_thread().name, phase, start, start + seconds))


def _timed(owner: Any, name: str, phase: str) -> None:
    original = getattr(owner, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            _add(phase, time.perf_counter() - start, start)

    wrapper.__wrapped__ = original  # type: ignore[attr-defined]
    _restore.append((owner, name, original))
    setattr(owner, name, wrapper)


def _timed_enter(owner: Any, name: str, phase: str) -> None:
    """A context manager method: only the time to enter it (a lock wait) is counted."""
    original = getattr(owner, name)

    @contextlib.contextmanager
    def wrapper(*args: Any, **kwargs: Any) -> Iterator[Any]:
        start = time.perf_counter()
        with original(*args, **kwargs) as value:
            entered = time.perf_counter()
            _add(phase, entered - start, start)
            try:
                yield value
            finally:
                if _record() is None:  # another thread: how long it held the store
                    _add(f"{phase}_held", time.perf_counter() - entered, entered)

    _restore.append((owner, name, original))
    setattr(owner, name, wrapper)


def _on_gc(phase: str, info: dict[str, Any]) -> None:
    ident = threading.get_ident()
    if phase == "start":
        _gc_started[ident] = time.perf_counter()
        return
    started = _gc_started.pop(ident, None)
    record = _active["record"]  # a collection stops every thread: any counts
    if started is None or record is None:
        return
    record["gc"] = record.get("gc", 0.0) + (time.perf_counter() - started) * 1000
    if info.get("generation") == 2:
        record["gc_gen2"] = record.get("gc_gen2", 0) + 1


def install() -> None:
    """Wrap the search path (idempotent)."""
    if _restore:
        return
    import memcore_hermes.session.runtime as runtime
    import memcore_sqlite.search.pipeline as pipeline
    import memcore_sqlite.search.ranking as ranking
    import memcore_sqlite.search.supersession as supersession
    import memcore_sqlite.store as store
    from memcore_sqlite.lexical.lengths import LengthCache
    from memcore_sqlite.lexical.postings.cache import PostingsCache
    from memcore_sqlite.vector.cache import VectorCache

    cls = store.SqliteMemoryStore
    _timed(cls, "_embed", "embed")
    _timed(store, "coverage", "coverage")
    _timed_enter(cls, "_read", "snapshot")
    _timed_enter(cls, "_write", "write")
    _timed(cls, "_store_key", "store_key")
    _timed(pipeline, "ranked", "rank")
    _timed(ranking, "lexical", "lexical")
    _timed(PostingsCache, "term_rows", "postings")
    _timed(LengthCache, "reader", "lengths")
    _timed(pipeline, "vector_candidates", "vector_load")
    for name in ("top", "shortlist", "cosines"):
        _timed(VectorCache, name, "vector_score")
    _timed(pipeline, "hits", "hits")
    from memcore_sqlite.lexical.fts_upkeep import Upkeep

    _timed(Upkeep, "after_commit", "fts_merge")  # a write's merge, under the store's lock
    _timed(supersession, "prefer_current", "supersession")
    _timed(cls, "_index_pending", "index_pending")
    _timed(cls, "_audit_read", "audit")
    _timed(runtime, "format_recall", "format")
    _timed(runtime.MemoryRuntime, "_search_recall", "recall")
    from memcore_hermes.session import provider

    _timed(provider.MemcoreMemoryProvider, "prefetch", "provider")
    gc.callbacks.append(_on_gc)


def uninstall() -> None:
    while _restore:
        owner, name, original = _restore.pop()
        setattr(owner, name, original)
    if _on_gc in gc.callbacks:
        gc.callbacks.remove(_on_gc)


def measure(call: Callable[[], Any]) -> tuple[Any, float, dict[str, Any]]:
    """Run ``call`` (a prefetch) and return its result, seconds and phase record."""
    record: dict[str, Any] = {}
    _active["thread"] = threading.get_ident()
    _active["record"] = record
    started = time.perf_counter()
    try:
        value = call()
    finally:
        ended = time.perf_counter()
        _active["record"] = None
    with _others_lock:
        beside = [
            (t, p, round((min(e, ended) - max(s, started)) * 1000, 1))
            for t, p, s, e in _others
            if s < ended and e > started
        ]
        del _others[:-200]  # keep the recent ones only; the lane may still be running
    if beside:
        record["beside"] = beside
    if "rank" in record:
        inner = sum(record.get(k, 0.0) for k in ("lexical", "postings", "lengths", "vector_load"))
        inner += record.get("vector_score", 0.0)
        record["rank_other"] = record["rank"] - inner
    if "provider" in record:  # Hermes' thread start and join around the provider's call
        record["host"] = (ended - started) * 1000 - record["provider"]
    return value, ended - started, {k: _round(v) for k, v in record.items()}


def _round(value: Any) -> Any:
    return round(value, 2) if isinstance(value, float) else value


def breakdown(
    records: list[dict[str, Any]], totals_ms: list[float], labels: list[str]
) -> dict[str, Any]:
    """Per phase: mean over all prefetches and over the slowest tenth (p90 and above), and
    the slowest tenth one by one."""
    if not records:
        return {}
    order = sorted(range(len(totals_ms)), key=totals_ms.__getitem__)
    slow = order[int(len(order) * 0.9) :]
    phases = sorted({k for r in records for k, v in r.items() if isinstance(v, (int, float))})

    def mean(idx: list[int], phase: str) -> float:
        return round(sum(records[i].get(phase, 0.0) for i in idx) / max(1, len(idx)), 2)

    return {
        "mean_ms": {p: mean(order, p) for p in phases},
        "slowest_tenth_mean_ms": {p: mean(slow, p) for p in phases},
        "slowest_tenth": [
            {"call": labels[i], "total_ms": round(totals_ms[i], 1), **records[i]} for i in slow
        ],
    }
