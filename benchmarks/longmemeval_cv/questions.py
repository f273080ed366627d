"""Each question's store read once, LongMemEval's kept stores and the dialogs alike: every
ranking any setting needs."""

from __future__ import annotations

import json
import sqlite3
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from functools import partial
from itertools import product
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from benchmarks import context_vectors
from benchmarks.longmemeval import STORE, open_question
from benchmarks.longmemeval_cv.settings import (
    CENTRES,
    DEFAULT,
    DISCOUNTS,
    POWERS,
    PRIORS,
    SHIPPED_PRIOR,
    TERM_CAPS,
)
from benchmarks.longmemeval_replay import INDEX, ReplayEmbedder
from memcore_sqlite.lexical import analysis, english, tags
from memcore_sqlite.search import ranking
from memcore_sqlite.storage import tenant_prefixes as prefixes
from memcore_sqlite.vector import stored


@attrs.frozen
class Question:
    """One question's store, read once: everything any setting needs to rank it."""

    qid: str
    kind: str
    seqs: np.ndarray
    sessions: list[str]
    turns: list[str]
    cosines: np.ndarray
    #: (b, term cap, power, rare rank, strength) -> {seq: lexical score}: the lexical pool
    #: of that setting (the last two: the English prior, :data:`PRIORS`).
    lexical: dict[tuple[Any, ...], dict[int, float]]
    bm25: list[int]
    evidence_sessions: set[str]
    evidence_turns: set[str]
    #: The store's own hybrid, lexical and vector top 10 (turn keys), for ``agreement``.
    store_top: dict[str, list[str]]
    #: Each turn key's neighbours among the indexed turns of its session.
    neighbours: dict[str, list[str]]
    #: Each row's session date (metadata ``date``), as the haystack gives it.
    dates: list[str] = attrs.field(factory=list)
    #: Centre (of :data:`CENTRES`, above 0) -> each row's cosine with the centred query.
    centred: dict[float, np.ndarray] = attrs.field(factory=dict)
    #: Context label (of :data:`CONTEXTS` but "turn") -> each row's cosine with the query
    #: when the row's vector is that contextual one; empty without ``--context-cache``.
    context: dict[str, np.ndarray] = attrs.field(factory=dict)
    #: The question's form (a dialog generator's template; empty for LongMemEval).
    form: str = ""
    #: Each row's vector and the query's, for the pseudo-relevance feedback (``feedback``).
    matrix: np.ndarray | None = None
    qvec: np.ndarray | None = None


def _terms(question: str, cap: int) -> tuple[str, ...]:
    if cap == analysis.MAX_QUERY_TERMS:
        return analysis.query_terms(question)
    seen = list(dict.fromkeys(analysis.tokens(question)))
    return tuple(t for t in seen if t not in analysis.STOP_WORDS) or tuple(seen)


def read_question(
    directory: Path,
    q: dict[str, Any],
    embedder: ReplayEmbedder,
    windows: context_vectors.Windows | None = None,
) -> Question:
    index = q["index"]
    path = directory / f"q{index}.db"
    item = q["item"]
    store, mem = open_question(path, embedder, index)
    try:
        top = store_top(mem, store, item["question"])
    finally:
        store.close()
    rows = read_rows(path, mem.service.search_pattern, item["question"], q["qvec"], windows=windows)
    sessions = [m.get("session_id", "") for m in rows.meta]
    turns = [m.get("turn", "") for m in rows.meta]
    by_session: dict[str, list[str]] = defaultdict(list)
    for s, t in zip(sessions, turns):
        by_session[s].append(t)
    neighbours: dict[str, list[str]] = {}
    for keys in by_session.values():
        keys.sort(key=lambda k: int(k.split(":")[1]))
        for i, key in enumerate(keys):
            neighbours[key] = keys[max(0, i - 1) : i] + keys[i + 1 : i + 2]
    return Question(
        item["question_id"],
        item["question_type"],
        rows.seqs,
        sessions,
        turns,
        rows.cosines,
        rows.lexical,
        rows.bm25,
        {str(s) for s in item["answer_session_ids"]},
        set(q["evidence"]),
        top,
        neighbours,
        [m.get("date", "") for m in rows.meta],
        rows.centred,
        rows.context,
        matrix=rows.matrix,
        qvec=rows.qvec,
    )


def centred_cosines(matrix: np.ndarray, qvec: Sequence[float]) -> dict[float, np.ndarray]:
    """Each row's cosine with the query minus each centre times the rows' mean vector,
    renormalised: rows that say what every row of the scope says (a speaker's name alone)
    lose against rows that say what the question asks."""
    mean = matrix.astype(np.float64).mean(axis=0)
    query = np.asarray(qvec, dtype=np.float64)
    out = {}
    for centre in CENTRES[1:]:
        moved = query - centre * mean
        out[centre] = matrix.astype(np.float64) @ (moved / np.linalg.norm(moved))
    return out


def store_top(mem: Any, store: Any, question: str, name: str = STORE) -> dict[str, list[str]]:
    """The store's own hybrid, lexical and vector top 10 (turn keys)."""
    pattern = mem.service.search_pattern
    found = {"hybrid": mem.search(question, top_k=10)}
    for mode in ("lexical", "vector"):
        found[mode] = store.search(name, pattern, question, top_k=10, mode=mode)
    return {m: [h.memory.metadata["turn"] for h in hits] for m, hits in found.items()}


@attrs.frozen
class Rows:
    """One store's rows as a question sees them: every ranking any setting needs."""

    seqs: np.ndarray
    meta: list[dict[str, Any]]
    cosines: np.ndarray
    lexical: dict[tuple[Any, ...], dict[int, float]]
    bm25: list[int]
    centred: dict[float, np.ndarray]
    context: dict[str, np.ndarray] = attrs.field(factory=dict)
    matrix: np.ndarray | None = None
    qvec: np.ndarray | None = None


def read_rows(
    path: Path,
    pattern: Any,
    question: str,
    qvec: Sequence[float],
    name: str = STORE,
    windows: context_vectors.Windows | None = None,
) -> Rows:
    """Read the store at ``path`` once (read-only) for ``question``: each row's metadata and
    cosine with ``qvec``, the lexical pool of every (b, term cap, power) setting through
    :func:`ranking.lexical` itself, and FTS5's bm25 order. ``windows``: each row's window
    and its vector (:class:`context_vectors.Windows`, from a read-only cache), for the
    cosines of the contextual row vectors."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        sid = conn.execute("SELECT id FROM stores WHERE name = ?", (name,)).fetchone()[0]
        rows = conn.execute(
            "SELECT m.seq, m.metadata, v.vector, m.text FROM memories m JOIN memory_vectors v"
            " ON v.seq = m.seq WHERE m.store_id = ? ORDER BY m.seq",
            (sid,),
        ).fetchall()
        seqs = np.array([r[0] for r in rows], dtype=np.int64)
        meta = [json.loads(r[1]) for r in rows]
        matrix = stored.matrix([r[2] for r in rows], len(rows[0][2]) // stored.ITEM_BYTES)
        cosines = (matrix @ np.asarray(qvec, dtype=np.float32)).astype(np.float64)
        context = {}
        if windows is not None:
            window = windows.vectors([m.get("turn", "") for m in meta], [r[3] for r in rows])
            query = np.asarray(qvec, dtype=np.float32)
            context = {
                label: (rowv @ query).astype(np.float64)
                for label, rowv in context_vectors.mixed(matrix, window).items()
            }
        restrict = tags.filter_expression(sid, pattern, {})
        prefix = prefixes.pattern_prefix(conn, sid, pattern)
        exact_tenant = pattern.agent_id == "*" and prefix is not None
        tenant = None if prefix is None else (sid, pattern.app_id, pattern.tenant_id)
        lexical: dict[tuple[Any, ...], dict[int, float]] = {}
        pools = {(b, c, DEFAULT[4], *SHIPPED_PRIOR) for b, c in product(DISCOUNTS, TERM_CAPS)}
        pools |= {(DEFAULT[2], DEFAULT[3], p, *SHIPPED_PRIOR) for p in POWERS}
        pools |= {(*DEFAULT[2:5], rare, strength) for rare, strength in PRIORS}
        for pool in sorted(pools):
            b, cap, power, rare, strength = pool
            prior = partial(english.share, rare_rank=rare, strength=strength) if rare else _no_prior
            lexq = analysis.LexicalQuery(
                _terms(question, cap),
                None if exact_tenant else restrict,
                prefix,
                restrict,
            )
            found = ranking.lexical(
                conn,
                lexq,
                ranking.POOL,
                ranking.ENOUGH,
                tenant,
                discount=partial(ranking.length_discount, b=b),
                power=power,
                prior=prior,
            )
            lexical[pool] = {seq: hit.score for seq, hit in found.items()}
        bm25 = _bm25(conn, question, prefix, restrict if not exact_tenant else None)
    finally:
        conn.close()
    centred = centred_cosines(matrix, qvec)
    query = np.asarray(qvec, dtype=np.float32)
    return Rows(seqs, meta, cosines, lexical, bm25, centred, context, matrix, query)


def _no_prior(term: str) -> float:
    """Every term's IDF whole, whatever the product ships (the references are unprimed)."""
    return 1.0


def dialog_questions(path: Path, cache: Path, window_cache: Any = None) -> list[Question]:
    """The dialog development set's questions (:mod:`benchmarks.dialog_recall`), read like a
    kept LongMemEval store: each conversation ingested once into a temporary store, its
    vectors read from ``cache`` only (a text it lacks is an error, nothing is embedded).
    A question's id is its conversation's, so folds keep a conversation whole."""
    from benchmarks import dialog_recall
    from benchmarks._embed_cache import CachingEmbedder
    from memcore import Memory
    from memcore.scope import Scope
    from memcore_sqlite import SqliteMemoryStore
    from memcore_sqlite.embedders.onnx import OnnxEmbedder

    data = json.loads(path.read_text(encoding="utf-8"))
    embedder = CachingEmbedder(OnnxEmbedder(), cache, read_only=True)
    asked: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for item in data["questions"]:
        asked[item["conversation"]].append(item)
    out: list[Question] = []
    with tempfile.TemporaryDirectory() as tmp:
        for conversation in data["conversations"]:
            cid = conversation["id"]
            db = Path(tmp) / f"{cid}.db"
            store = SqliteMemoryStore(db, embedder=embedder)
            name = dialog_recall.STORE
            try:
                mem = Memory(store, scope=Scope("dlg", cid, "agent", "run"), store_name=name)
                dialog_recall.ingest(mem, conversation)
                tops = [store_top(mem, store, item["question"], name) for item in asked[cid]]
                qvecs = embedder.embed([item["question"] for item in asked[cid]])
                pattern = mem.service.search_pattern
            finally:
                store.close()
            session_of = {t["id"]: f"{cid}:{t['session']}" for t in conversation["turns"]}
            windows = None
            if window_cache is not None:
                previous = context_vectors.dialog_previous(conversation)
                windows = context_vectors.Windows(window_cache, previous)
            for item, top, qvec in zip(asked[cid], tops, qvecs):
                rows = read_rows(db, pattern, item["question"], qvec, name, windows)
                out.append(
                    Question(
                        cid,
                        item["kind"],
                        rows.seqs,
                        [m.get("session_id", "") for m in rows.meta],
                        [m.get("turn", "") for m in rows.meta],
                        rows.cosines,
                        rows.lexical,
                        rows.bm25,
                        {session_of[t] for t in item["evidence"]},
                        set(item["evidence"]),
                        top,
                        {},
                        [m.get("date", "") for m in rows.meta],
                        rows.centred,
                        rows.context,
                        item.get("form", ""),
                        rows.matrix,
                        rows.qvec,
                    )
                )
    return out


def _bm25(
    conn: sqlite3.Connection, question: str, prefix: str | None, tag: str | None
) -> list[int]:
    """FTS5's own bm25 order of the rows holding any query term (best POOL): the lexical half
    of the RRF baseline, with nothing of our lexical scoring in it."""
    terms = analysis.query_terms(question)
    if not terms:
        return []
    column = "tbody" if prefix else "body"
    body = " OR ".join(f'"{prefix or ""}{t}"' for t in terms)
    match = f"{column} : ({body})" + (f" AND tags : ({tag})" if tag else "")
    sql = "SELECT rowid FROM memory_fts WHERE memory_fts MATCH ? ORDER BY bm25(memory_fts), rowid DESC LIMIT ?"
    return [int(r[0]) for r in conn.execute(sql, (match, ranking.POOL))]


def kept_stores(
    directory: Path, limit: int, windows: Any = None
) -> tuple[dict[str, Any], list[Question]]:
    """A directory of kept stores: its index and its questions, each read once."""
    index = json.loads((directory / INDEX).read_text(encoding="utf-8"))
    kept = index["questions"][: limit or None]
    vectors = {q["item"]["question"]: q["qvec"] for q in kept}
    embedder = ReplayEmbedder(index["model"], index["dimension"], vectors)
    each: list[context_vectors.Windows | None] = [None] * len(kept)
    if windows is not None:
        if windows.name != index["model"]:
            raise LookupError(f"the stores hold {index['model']} vectors, not {windows.name}")
        each = [
            context_vectors.Windows(windows, previous)
            for _, previous in context_vectors.haystacks(directory, limit)
        ]
    return index, [read_question(directory, q, embedder, w) for q, w in zip(kept, each)]
