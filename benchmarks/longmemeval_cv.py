"""LongMemEval and dialog recall with every tuned choice made by k-fold cross-validation.

The fusion's settings were once chosen on the whole development split, and its figures there
were in-sample. Here the split's questions are folded (by question, stratified by type, fixed
seed); for each fold the settings are chosen on the other folds only and scored on it, and
only those held-out figures are reported: each with its 95% Wilson interval, and question by
question against each signal alone, against a plain reciprocal-rank fusion (RRF, k = 60, of
FTS5's own ``bm25()`` ranking and the vector ranking; ``rrf_ours_k60`` fuses our own lexical
ranking instead, as :mod:`benchmarks.dialog_recall` does) and against the shipped default,
with the exact sign test. The shipped default was chosen with these data, so its figures here
are in-sample, shown only as the reference the cross-validated choice is compared with.

``--dialogs`` adds the short-turn dialog set (:mod:`benchmarks.dialog_recall`'s
``dialogs_dev.json``, vectors read from ``--dialog-cache``, never embedded here) and chooses
every setting over both sets jointly: fold f of each set is held out at once, the setting is
chosen on the other folds of both, and each set's held-out figures are reported on their own.
A dialog's questions are folded by whole question form (``--dialog-folds form``, the default:
the generator's templates, each asked in several conversations in other names, sorted within
each kind, shuffled with the seed and dealt round-robin), so no form is both trained and
tested on. Folding by whole conversation (``--dialog-folds conversation``, the protocol until
then) kept a conversation out but not its forms: every conversation draws its questions from
the same 27 forms, so a held-out conversation's questions had been asked, in other names, in
the training folds, and a setting that mended one form's wording was scored as held out.
``--also R2`` adds another capture of the split as a set of its own (``capture --roles all``:
user and assistant turns indexed, as the Hermes provider keeps worthwhile replies by default),
folded and chosen for jointly in the same way. ``--max-weight W`` leaves out every candidate
whose vector weight is above W: a higher weight makes more hybrid searches build the vector
shortlist, and the latency goals bound it (0.4 broke the goal of a hybrid search 2.5 times
faster than an exact scan at 100k memories, and the 1M p50 goal; 0.3 keeps both).

Cheap by construction: stores kept by :mod:`benchmarks.longmemeval_replay` (``capture``) are
read once per question (each row's session, turn and vector, the lexical pool of every
lexical setting through :func:`memcore_sqlite.search.ranking.lexical` itself, FTS5's bm25
order) and every setting is then ranked in numpy without touching the store again; each
dialog conversation is ingested once into a temporary store and read the same way. The
default setting's order is checked against the store's own search (``agreement``, per set):
the replayed ranking is the product's, not a model of it.

Protocol (``--folds 5 --seed 32``; ``--seeds N`` repeats it with N fold assignments):

* objective on the training folds, per set: LongMemEval session recall_any@5 + turn
  recall_any@5 + turn NDCG@10; dialogs turn recall_any@5 + turn NDCG@10 (a dialog's six
  sessions say little). A setting's value is the sum over the sets of its per-metric mean, so
  each set weighs the same whatever its size;
* candidates, simplest first: RRF (k = 60, nothing tuned); the convex fusion with its vector
  weight tuned (0 to 1 by 0.05; the shipped b, 8 terms, the shipped coverage power); the weight
  and b (0, 0.25, 0.5, 0.75, 1); the weight and the lexical coverage power
  (``ranking.COVERAGE_POWER``: 1, 1.5, 2, 3); the weight and the query's centre (:data:`CENTRES`:
  the vector signal's query minus that times the mean of the scope's row vectors, so a row
  that says what every row says, a speaker's name alone, no longer looks like the answer);
  with ``--context-cache`` (window vectors from :mod:`benchmarks.context_vectors` ``embed``),
  the contextual row vectors (:data:`CONTEXTS`: the row's vector mixed with that of the
  previous stored turn of its session and the turn, or that window's alone; the query's
  vector unchanged) at the shipped weight (``context``) and with the weight
  (``weight_context``), each of them alone as a reference, and each fixed at the shipped
  setting against the shipped default (``context_fixed``, in sample);
  the English prior on a query word's IDF at the shipped weight (``prior``: :data:`PRIORS`,
  :func:`memcore_sqlite.lexical.english.share`'s rare rank and strength; in a small store a
  common verb held by three rows has as much IDF as a rare word) and with the weight
  (``weight_prior``);
  the vector quota at the shipped setting (``quota``: :data:`QUOTAS`, the vector signal's
  best one or two rows placed among the first 3, 5 or 10 hits; where a question shares no
  word with its evidence, any row holding a query word outranks the vector's best row);
  the adaptive weight (``adaptive``: :data:`ADAPTIVE`; the vector weight raised towards 1 for
  a question whose best lexical score is below a threshold, as the shipped fusion already
  does, wholly, when no query word is in the store);
  pseudo-relevance feedback (``feedback``: :data:`FEEDBACK`; the query vector moved towards
  the mean vector of the shipped order's first k hits, the candidates rescored);
  the weight, b and the term cap (8 or none);
* choice: the simplest family whose best setting is within one training question of the best
  of all (one metric of one question of the set where that weighs most); in it, the best
  setting (ties: nearest the shipped default);
* ``--guard``: the adoption rule below applied inside the choice, on the training folds only:
  a setting is a candidate only if on every set its training value is at least the shipped
  default's less one training question. Without it the equal weighting of the sets lets a
  large gain on one set buy a loss on the other (the query centre with a vector weight of
  0.65-0.75 was chosen that way, and lost LongMemEval turn NDCG@10 on held-out folds);
* adoption (by hand, from the output): a setting replaces the default only if on each set's
  held-out folds it is not worse than the default by the sign test and better on at least
  one; a setting that wins on one set and loses on the other is not a win.

``--protocol type`` (leave one question type out) is the stricter protocol: random folds,
even stratified, put every question type in both the training and the test folds, so a
setting that suits a type's wording is trained on that type and scored on it; on questions
of other kinds the fit need not carry over (a fusion tuned on the split ranked fewer
evidence sessions than the vector signal alone on LongMemEval questions outside it). Here
fold f holds out one question type (:func:`type_folds`: the sorted types of every set; a
type held out of every set that has it, so the two LongMemEval captures, which share their
questions, never train on what they test), the setting is chosen on every other type of
every set, and each set's figures are those of its types when held out. The choice, the
guard and the references are as above; ``--folds``, ``--seed`` and ``--seeds`` do not apply.
Every set's report gives, per type, the held-out recall with its Wilson interval, the sign
test against each signal, each RRF and the shipped default, and where the fusion's mean is
below a signal's or an RRF's (``below_a_signal_or_rrf``).

Session-aware ranking and context around a hit are measured on LongMemEval with the chosen
fusion's order: ``session``: a turn's score plus lambda times the best other candidate turn
of its session (lambda chosen by the same protocol, 0 being the simplest), ``session_first``:
sessions ranked by their best turn, each one's turns together, ``one_per_session_first``:
each session's best turn first, then the other turns (each also reported fixed);
``neighbours``: how often an evidence turn missed by the first five hits is the indexed turn
just before or after one of them, and the first five hits with those neighbours against the
same number of plain hits.

    uv run python -m benchmarks longmemeval_replay capture --roles user --cache DIR --out R
    uv run python -m benchmarks longmemeval_cv R [--folds 5] [--seed 32] [--seeds 5] \\
        [--dialogs benchmarks/data/dialogs_dev.json --dialog-cache DIALOG_CACHE] \\
        [--context-cache CONTEXT_CACHE] [--also R2] [--max-weight W] \\
        [--dialog-folds form|conversation] [--protocol kfold|type]

``DIALOG_CACHE`` is the vector cache :mod:`benchmarks.dialog_recall` ``--cache`` fills.
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import sys
import tempfile
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from itertools import product
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from benchmarks import context_vectors
from benchmarks._stats import sign_test_p, wilson_interval
from benchmarks.longmemeval import STORE, open_question, score_keys
from benchmarks.longmemeval_replay import INDEX, ReplayEmbedder
from memcore_sqlite.lexical import analysis, english, tags
from memcore_sqlite.search import ranking
from memcore_sqlite.storage import tenant_prefixes as prefixes
from memcore_sqlite.vector import stored

WEIGHTS = tuple(round(0.05 * i, 2) for i in range(21))
DISCOUNTS = (0.0, 0.25, 0.5, 0.75, 1.0)
TERM_CAPS = (8, 0)  # 0: no cap
#: ranking.COVERAGE_POWER candidates (with the shipped b and eight terms only).
POWERS = (1.0, 1.5, 2.0, 3.0)
#: Query centring: the vector signal's query is the question's vector minus this times the
#: mean of the scope's row vectors, renormalised (0: the plain cosine). Stored vectors and
#: their int8 codes are untouched, only the query moves.
CENTRES = (0.0, 0.25, 0.5, 0.75, 1.0)
#: The English prior on a query word's IDF (:func:`memcore_sqlite.lexical.english.share`):
#: (rare rank, strength) pairs; a word ranked at the rare rank or rarer keeps its IDF whole,
#: and a rare rank of 0 is no prior (the scope's IDF alone). Every other family's lexical
#: pool carries the shipped one.
SHIPPED_PRIOR = (ranking.ENGLISH_PRIOR, ranking.ENGLISH_STRENGTH)
RARE_RANKS = (1000, 3000, 10000, 30000)
STRENGTHS = (1.0, 2.0, 3.0)
PRIORS = ((0, 1.0), *product(RARE_RANKS, STRENGTHS))
RRF_K = 60
LAMBDAS = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5)
#: The vector quota: the vector signal's best ``m`` rows are placed in the first ``within``
#: hits of the shipped fusion's order (where a question shares no word with its evidence,
#: any row holding a query word outranks the vector's best row at a vector weight of 0.3).
QUOTAS = tuple((m, within) for m in (1, 2) for within in (3, 5, 10))
#: The adaptive weight's thresholds: when the best lexical score L of a question is below
#: ``t`` the vector weight moves from the shipped one towards 1 by ``(t - L) / t`` (at L = 0,
#: no query word in the store, the shipped fusion already ranks by the vector alone).
ADAPTIVE = (0.1, 0.2, 0.3, 0.4, 0.5, 0.7)
#: Pseudo-relevance feedback (``feedback``): (first k hits, beta).
FEEDBACK = tuple(product((3, 5, 10), (0.25, 0.5, 1.0)))
DEFAULT = ("convex", ranking.VECTOR_WEIGHT, ranking.LENGTH_B, 8, ranking.COVERAGE_POWER)
LEXICAL = ("lexical", 0.0, ranking.LENGTH_B, 8, ranking.COVERAGE_POWER)
#: RRF of our own lexical ranking and the vector ranking (:mod:`benchmarks.dialog_recall`'s).
RRF_OURS = ("rrf", 60, "ours")
#: The shipped fusion with no English prior on a query word's IDF, as a reference.
NO_PRIOR = (*DEFAULT, 0.0, "turn", 0, 1.0)
#: The vector signal alone with a centred query, as references.
CENTRED_VECTORS = (("vector", 0.5), ("vector", 1.0))
#: Contextual row vectors (:mod:`benchmarks.context_vectors`, ``--context-cache``): the row
#: vector's label, "turn" being the stored one. Each label alone, as references.
CONTEXTS = context_vectors.LABELS
CONTEXT_VECTORS = tuple(("vector", 0.0, label) for label in CONTEXTS[1:])
#: How far each label lies from the stored vector, for ties (as the centre's own value).
CONTEXT_DISTANCE = {"turn": 0.0, "ctx0.5": 0.5, "ctx1": 1.0, "ctx2": 2.0, "window": 3.0}
OBJECTIVE = ("session_recall_any@5", "turn_recall_any@5", "turn_ndcg@10")
#: A dialog's sessions are a handful of one conversation: only its turns are scored.
DIALOG_OBJECTIVE = ("turn_recall_any@5", "turn_ndcg@10")
#: Hits kept per ranking: the neighbours' budget reaches 15.
DEPTH = 20


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


# -- rankings: each returns row positions (into Question.seqs), best first ------------------


def _order(q: Question, scores: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``rows`` by score, then newest first (as the store breaks ties)."""
    return rows[np.lexsort((-q.seqs[rows], -scores[rows]))]


def _cosines(q: Question, centre: float, context: str = "turn") -> np.ndarray:
    if context != "turn":
        if centre:
            raise ValueError("a centred query with contextual row vectors is not measured")
        return q.context[context]
    return q.centred[centre] if centre else q.cosines


def _vector_pool(q: Question, centre: float = 0.0, context: str = "turn") -> np.ndarray:
    """The vector pool: the best POOL rows by the (centred) query's cosine."""
    return _order(q, _cosines(q, centre, context), np.arange(len(q.seqs)))[: ranking.POOL]


def _positions(q: Question, seqs: Iterable[int]) -> np.ndarray:
    return np.searchsorted(q.seqs, np.asarray(list(seqs), dtype=np.int64))


def fused_scores(q: Question, setting: tuple[Any, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(score of every row, candidate rows) of a fusion setting."""
    kind = setting[0]
    scores = np.zeros(len(q.seqs))
    if kind == "vector":  # ("vector",), ("vector", centre) or ("vector", centre, context)
        centre = setting[1] if len(setting) > 1 else 0.0
        context = setting[2] if len(setting) > 2 else "turn"
        return np.clip(_cosines(q, centre, context), 0.0, 1.0), _vector_pool(q, centre, context)
    if kind == "rrf":
        k = setting[1]
        vec = _vector_pool(q)
        if len(setting) > 2:  # ("rrf", k, "ours"): our lexical ranking instead of bm25
            pool = q.lexical[(*LEXICAL[2:], *SHIPPED_PRIOR)]
            lex = _positions(q, pool.keys())
            scores[lex] = list(pool.values())
            lex = _order(q, scores, lex)
            scores = np.zeros(len(q.seqs))
        else:
            lex = _positions(q, q.bm25)
        scores[vec] += 1.0 / (k + 1 + np.arange(len(vec)))
        scores[lex] += 1.0 / (k + 1 + np.arange(len(lex)))
        return scores, np.union1d(vec, lex)
    if kind == "feedback":
        return _feedback_scores(q, int(setting[1]), float(setting[2]))
    if kind == "adaptive":  # the shipped fusion, its weight raised where words match little
        best = max(q.lexical[(*DEFAULT[2:], *SHIPPED_PRIOR)].values(), default=0.0)
        threshold = float(setting[1])
        weight = DEFAULT[1]
        if best < threshold:
            weight += (1 - DEFAULT[1]) * (threshold - best) / threshold
        return fused_scores(q, ("convex", weight, *DEFAULT[2:]))
    _, weight, b, cap, power = setting[:5]
    centre = setting[5] if len(setting) > 5 else 0.0
    context = setting[6] if len(setting) > 6 else "turn"
    pool = q.lexical[(b, cap, power, *(setting[7:9] or SHIPPED_PRIOR))]
    lex = _positions(q, pool.keys())
    scores[lex] = list(pool.values())
    if kind == "lexical":
        return scores, lex
    vector = np.clip(_cosines(q, centre, context), 0.0, 1.0)
    if not pool:  # no query term in the store: the vector order (ranking.fuse)
        return vector, _vector_pool(q, centre, context)
    fused = np.clip(weight * vector + (1 - weight) * scores, 0.0, 1.0)
    return fused, np.union1d(_vector_pool(q, centre, context), lex)


def _feedback_scores(q: Question, k: int, beta: float) -> tuple[np.ndarray, np.ndarray]:
    """The shipped fusion with its query vector moved ``beta`` towards the mean vector of
    the shipped order's first ``k`` hits (pseudo-relevance feedback: a question that shares
    no word with its evidence, "how many musical instruments", borrows the vocabulary of its
    best hits, a Stratocaster). Only the shipped candidates are rescored, so the store would
    need no second scan (rescoring every row changed no figure on any set)."""
    if q.matrix is None or q.qvec is None:
        raise ValueError("feedback needs the rows' vectors")
    scores, rows = fused_scores(q, DEFAULT)
    first = _order(q, scores, rows)[:k]
    centre = q.matrix[first].astype(np.float64).mean(axis=0)
    query = q.qvec.astype(np.float64)
    moved = query / np.linalg.norm(query) + beta * centre / np.linalg.norm(centre)
    vector = np.clip(q.matrix.astype(np.float64) @ (moved / np.linalg.norm(moved)), 0.0, 1.0)
    pool = q.lexical[(*DEFAULT[2:], *SHIPPED_PRIOR)]
    if not pool:
        return vector, rows
    lexical = np.zeros(len(q.seqs))
    lexical[_positions(q, pool.keys())] = list(pool.values())
    weight = DEFAULT[1]
    return np.clip(weight * vector + (1 - weight) * lexical, 0.0, 1.0), rows


def rank(q: Question, setting: tuple[Any, ...], lam: float = 0.0, how: str = "") -> np.ndarray:
    """Row positions of the first DEPTH hits. ``lam``: each turn gains ``lam`` times the best
    other candidate turn of its session. ``how``: ``first``, sessions by their best turn and
    each session's turns together; ``diverse``, each session's best turn first (in fused
    order), then the other turns."""
    if setting[0] == "quota":
        return _with_quota(q, rank(q, DEFAULT, lam, how), setting[1], setting[2])
    scores, rows = fused_scores(q, setting)
    if lam:
        best: dict[str, list[float]] = defaultdict(list)
        for r in rows.tolist():
            best[q.sessions[r]].append(float(scores[r]))
        tops = {s: [*sorted(v, reverse=True)[:2], 0.0] for s, v in best.items()}
        scores = scores.copy()
        for r in rows.tolist():
            one, two = tops[q.sessions[r]][:2]
            scores[r] += lam * (two if scores[r] >= one else one)
    order = _order(q, scores, rows)
    if how:
        lead: dict[str, int] = {}
        for place, r in enumerate(order.tolist()):
            lead.setdefault(q.sessions[r], place)
        if how == "first":  # a session's turns follow its best one
            key = [(lead[q.sessions[r]], place) for place, r in enumerate(order.tolist())]
        else:  # every session's best turn, then the rest
            key = [(place != lead[q.sessions[r]], place) for place, r in enumerate(order.tolist())]
        order = order[sorted(range(len(order)), key=key.__getitem__)]
    return order[:DEPTH]


def _with_quota(q: Question, order: np.ndarray, m: int, within: int) -> np.ndarray:
    """``order`` with the vector's best ``m`` rows among its first ``within``: each one
    missing there takes the last places of that prefix, in vector order; the rows it pushes
    out follow, in their order."""
    best = [int(r) for r in _vector_pool(q)[:m]]
    head = [int(r) for r in order[:within]]
    missing = [r for r in best if r not in head]
    if not missing:
        return order
    kept = [r for r in head if r not in missing][: within - len(missing)]
    rest = [int(r) for r in order if int(r) not in kept and int(r) not in missing]
    return np.asarray([*kept, *missing, *rest][:DEPTH], dtype=order.dtype)


def metrics(q: Question, order: np.ndarray) -> dict[str, float]:
    return score_keys(
        [q.sessions[r] for r in order],
        [q.turns[r] for r in order],
        q.evidence_sessions,
        q.evidence_turns,
    )


# -- the protocol ---------------------------------------------------------------------------


def fold_of(questions: Sequence[tuple[str, str]], k: int, seed: int) -> list[int]:
    """Each question's fold, from (question id, type) pairs (ids distinct): each question a
    group of its own (:func:`fold_by_group`), so each type's ids are sorted, shuffled with
    ``seed`` and dealt round-robin, type after type. It depends on the questions alone, not
    on the order they were kept in."""
    return fold_by_group([qid for qid, _ in questions], k, seed, [kind for _, kind in questions])


def fold_by_group(
    groups: Sequence[str], k: int, seed: int, kinds: Sequence[str] | None = None
) -> list[int]:
    """Each question's fold when its group (a dialog's conversation or question form) must
    stay whole: the distinct groups sorted, shuffled with ``seed`` and dealt round-robin;
    with ``kinds`` (each question's, one per group), kind after kind, so that every fold
    holds groups of every kind."""
    rng = random.Random(seed)
    kind_of = dict(zip(groups, kinds)) if kinds is not None else dict.fromkeys(groups, "")
    fold: dict[str, int] = {}
    for kind in sorted(set(kind_of.values())):
        names = sorted(g for g, of in kind_of.items() if of == kind)
        rng.shuffle(names)
        for name in names:
            fold[name] = len(fold) % k
    return [fold[g] for g in groups]


@attrs.frozen
class Part:
    """One development set of a joint cross-validation: its questions, every setting's rows
    for them, how its folds are made and what its objective sums."""

    name: str
    questions: Sequence[Question]
    table: dict[tuple[Any, ...], list[dict[str, float]]]
    objective: tuple[str, ...]
    #: What a fold holds whole: a ``question`` (by type), a dialog's ``conversation``
    #: (a question's ``qid``) or a question ``form`` (by type).
    fold_by: str = "question"

    def folds(self, k: int, seed: int, kinds: Sequence[str] = ()) -> list[int]:
        """Each question's fold; with ``kinds`` (:func:`type_folds`), its type's place there:
        one fold per question type, whatever ``fold_by`` says."""
        if kinds:
            return [kinds.index(q.kind) for q in self.questions]
        if self.fold_by == "conversation":
            return fold_by_group([q.qid for q in self.questions], k, seed)
        if self.fold_by == "form":
            forms = [q.form for q in self.questions]
            if not all(forms):
                raise LookupError("--dialog-folds form needs each question's form")
            return fold_by_group(forms, k, seed, [q.kind for q in self.questions])
        return fold_of([(q.qid, q.kind) for q in self.questions], k, seed)


def type_folds(parts: Sequence[Part]) -> list[str]:
    """The question types of every set, sorted: fold f of leave-one-type-out holds out type
    f in every set that has it (the LongMemEval captures of either role share their types,
    and their questions, so a type is never trained on in one and tested in the other) and
    trains on every other type of every set."""
    return sorted({q.kind for p in parts for q in p.questions})


def families(context: bool = False) -> list[tuple[str, list[tuple[Any, ...]]]]:
    """Candidate settings, simplest family first (the shipped power but in its own family).
    ``context``: with the contextual row vectors' families (the shipped weight, then any
    weight), after the query centre's."""
    b0, p0 = DEFAULT[2], DEFAULT[4]
    labels = CONTEXTS[1:]
    contextual = [
        ("context", [("convex", DEFAULT[1], b0, 8, p0, 0.0, c) for c in labels]),
        ("weight_context", [("convex", w, b0, 8, p0, 0.0, c) for w in WEIGHTS for c in labels]),
    ]
    return [
        ("rrf_k60", [("rrf", RRF_K)]),
        ("weight", [("convex", w, b0, 8, p0) for w in WEIGHTS]),
        ("weight_b", [("convex", w, b, 8, p0) for w in WEIGHTS for b in DISCOUNTS]),
        ("weight_power", [("convex", w, b0, 8, p) for w in WEIGHTS for p in POWERS]),
        (
            "centre",
            [("convex", DEFAULT[1], b0, 8, p0, c) for c in CENTRES[1:]],
        ),
        (
            "weight_centre",
            [("convex", w, b0, 8, p0, c) for w in WEIGHTS for c in CENTRES[1:]],
        ),
        *(contextual if context else []),
        ("prior", [(*DEFAULT, 0.0, "turn", r, s) for r, s in PRIORS]),
        (
            "weight_prior",
            [("convex", w, b0, 8, p0, 0.0, "turn", r, s) for w in WEIGHTS for r, s in PRIORS],
        ),
        ("quota", [("quota", m, within) for m, within in QUOTAS]),
        ("adaptive", [("adaptive", t) for t in ADAPTIVE]),
        ("feedback", [("feedback", k, beta) for k, beta in FEEDBACK]),
        (
            "weight_b_terms",
            [("convex", w, b, c, p0) for w in WEIGHTS for b in DISCOUNTS for c in TERM_CAPS],
        ),
    ]


def _objective(rows: Sequence[dict[str, float]], objective: Sequence[str] = OBJECTIVE) -> float:
    return sum(r.get(m, 0.0) for r in rows for m in objective) / max(1, len(rows))


def _distance(setting: tuple[Any, ...]) -> float:
    if setting[0] == "quota":
        return float(setting[1]) + 10.0 / float(setting[2])
    if setting[0] == "adaptive":
        return float(setting[1])
    if setting[0] == "feedback":
        return float(setting[2]) + float(setting[1]) / 10
    if setting[0] != "convex":
        return 0.0
    weight, b, cap = float(setting[1]), float(setting[2]), int(setting[3])
    power = float(setting[4])
    centre = float(setting[5]) if len(setting) > 5 else 0.0
    context = CONTEXT_DISTANCE[setting[6]] if len(setting) > 6 else 0.0
    prior = 0.0
    if len(setting) > 8:
        prior = float(tuple(setting[7:9]) != SHIPPED_PRIOR) + abs(setting[8] - SHIPPED_PRIOR[1])
    return (
        centre
        + context
        + prior
        + abs(weight - DEFAULT[1])
        + abs(b - DEFAULT[2])
        + float(cap != DEFAULT[3])
        + abs(power - DEFAULT[4])
    )


def choose(
    training: Sequence[tuple[Part, Sequence[int]]],
    groups: list[tuple[str, list[tuple[Any, ...]]]],
    guard: bool = False,
) -> tuple[str, tuple[Any, ...]]:
    """The simplest family within one training question of the best; its best setting.

    The value of a setting is the sum over the sets of its mean objective per metric on that
    set's training questions, so each set weighs the same whatever its size; one training
    question is one metric of one question of the set where that counts most.

    ``guard``: the adoption rule applied on the training folds. Only settings that on every
    set score at least the shipped default's value there less one training question are
    candidates (the default itself always is), so a gain on one set cannot buy a loss on
    the other."""

    # A set whose every question is held out (its one type, under --protocol type) has
    # nothing to train on and no say in the choice.
    training = [(part, train) for part, train in training if train]

    def on(part: Part, train: Sequence[int], s: tuple[Any, ...]) -> float:
        rows = [part.table[s][i] for i in train]
        return _objective(rows, part.objective) / len(part.objective)

    if guard:
        floor = {
            part.name: on(part, train, DEFAULT) - 1.0 / (len(train) * len(part.objective))
            for part, train in training
        }
        groups = [
            (name, kept)
            for name, settings in groups
            if (
                kept := [
                    s
                    for s in settings
                    if all(on(p, t, s) >= floor[p.name] - 1e-9 for p, t in training)
                ]
            )
        ]
    value = {
        s: sum(on(part, train, s) for part, train in training)
        for _, settings in groups
        for s in settings
    }
    best = max(value.values())
    tolerance = max(1.0 / (len(train) * len(part.objective)) for part, train in training)
    for name, settings in groups:
        top = max(value[s] for s in settings)
        if top >= best - tolerance - 1e-9:
            pick = min(settings, key=lambda s: (-round(value[s], 9), _distance(s)))
            return name, pick
    raise AssertionError("no family")


def _summary(rows: Sequence[dict[str, float]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for metric in sorted({m for r in rows for m in r}):
        values = [r[metric] for r in rows if metric in r]
        mean = sum(values) / len(values)
        entry: dict[str, Any] = {"mean": round(mean, 4)}
        if "recall" in metric:
            low, high = wilson_interval(round(sum(values)), len(values))
            entry["wilson95"] = [round(low, 4), round(high, 4)]
        out[metric] = entry
    return out


def _paired(a: Sequence[dict[str, float]], b: Sequence[dict[str, float]]) -> dict[str, Any]:
    out = {}
    for metric in ("session_recall_any@5", "turn_recall_any@5", "session_ndcg@10", "turn_ndcg@10"):
        diffs = [x.get(metric, 0.0) - y.get(metric, 0.0) for x, y in zip(a, b) if metric in x]
        better = sum(d > 1e-12 for d in diffs)
        worse = sum(d < -1e-12 for d in diffs)
        out[metric] = {
            "better": better,
            "worse": worse,
            "sign_test_p": round(sign_test_p(better, worse), 4),
        }
    return out


def candidates(
    context: bool, only: Sequence[str] = (), max_weight: float = 1.0
) -> list[tuple[str, list[tuple[Any, ...]]]]:
    """The families a run chooses among, simplest first: :func:`families`, only those named
    in ``only`` (with the shipped default), none with a vector weight above ``max_weight``."""
    groups = [
        (name, kept)
        for name, group in families(context)
        if (kept := [s for s in group if s[0] != "convex" or s[1] <= max_weight + 1e-9])
    ]
    if only:  # the default stays a candidate: "weight" holds it
        default = [("shipped", [DEFAULT])] if "weight" not in only else []
        groups = default + [(name, group) for name, group in groups if name in only]
    return groups


def cross_validate(
    parts: Sequence[Part],
    k: int,
    seed: int,
    guard: bool,
    groups: list[tuple[str, list[tuple[Any, ...]]]],
    by_type: bool = False,
) -> dict[str, Any]:
    """Held-out rows of the fusion chosen fold by fold over every part together (fold f of
    each part is held out at once; the setting is chosen on all the other folds), the
    choices, and per-fold held-out objectives of each part. ``groups``: the candidate
    families (:func:`candidates`). ``by_type``: one fold per question type
    (:func:`type_folds`; ``k`` and ``seed`` unused)."""
    kinds = type_folds(parts) if by_type else []
    k = len(kinds) or k
    folds = {part.name: part.folds(k, seed, kinds) for part in parts}
    held: dict[str, list[dict[str, float]]] = {p.name: [{}] * len(p.questions) for p in parts}
    choices = []
    for f in range(k):
        split = {
            p.name: (
                [i for i, g in enumerate(folds[p.name]) if g != f],
                [i for i, g in enumerate(folds[p.name]) if g == f],
            )
            for p in parts
        }
        family, setting = choose([(p, split[p.name][0]) for p in parts], groups, guard)
        fold_means: dict[str, dict[str, float]] = {}
        for p in parts:
            test = split[p.name][1]
            for i in test:
                held[p.name][i] = p.table[setting][i]
            fold_means[p.name] = {
                name: round(_objective([p.table[ref][i] for i in test], p.objective), 4)
                for name, ref in (
                    ("chosen", setting),
                    ("rrf_k60", ("rrf", RRF_K)),
                    ("shipped", DEFAULT),
                )
            }
        choices.append(
            {
                "fold": f,
                **({"held_out_type": kinds[f]} if kinds else {}),
                "test_questions": {p.name: len(split[p.name][1]) for p in parts},
                "family": family,
                "setting": list(setting),
                "held_out_objective": fold_means,
            }
        )
    return {"folds": folds, "held": held, "choices": choices, "k": k}


def _session_cv(
    questions: Sequence[Question], fold: list[int], chosen: list[tuple[Any, ...]], k: int
) -> dict[str, Any]:
    """On each fold's chosen fusion: lambda (0 simplest) and session-first chosen on the
    training folds like the fusion, held-out rows of what was chosen."""
    variants: list[tuple[str, float, str]] = [("lambda", lam, "") for lam in LAMBDAS]
    variants += [("session_first", 0.0, "first"), ("one_per_session_first", 0.0, "diverse")]
    held: list[dict[str, float]] = [{}] * len(questions)
    each: dict[tuple[str, float, str], list[dict[str, float]]] = {
        v: [{}] * len(questions) for v in variants
    }
    picks = []
    for f in range(k):
        setting = chosen[f]
        train = [i for i in range(len(questions)) if fold[i] != f]
        test = [i for i in range(len(questions)) if fold[i] == f]
        rows = {
            v: {
                i: metrics(questions[i], rank(questions[i], setting, v[1], v[2]))
                for i in train + test
            }
            for v in variants
        }
        value = {v: _objective([rows[v][i] for i in train]) for v in variants}
        base = value[variants[0]]
        tolerance = 1.0 / len(train) + 1e-9
        best = max(value, key=lambda v: (round(value[v], 9), -v[1]))
        pick = best if value[best] > base + tolerance else variants[0]
        for i in test:
            held[i] = rows[pick][i]
            for v in variants:
                each[v][i] = rows[v][i]
        picks.append({"fold": f, "variant": pick[0], "lambda": pick[1]})
    # Each variant fixed, on the fold's chosen fusion (held out for that choice), against
    # the fusion alone: how far each one is from winning, not only which one was chosen.
    fixed = {
        f"{name} {lam}": {
            "session_recall_any@5": _summary(each[v])["session_recall_any@5"]["mean"],
            "turn_recall_any@5": _summary(each[v])["turn_recall_any@5"]["mean"],
            "vs_fusion": _paired(each[v], each[variants[0]]),
        }
        for v in variants[1:]
        for name, lam, _ in [v]
    }
    return {"held": held, "choices": picks, "fixed_variants": fixed}


def _neighbours(questions: Sequence[Question], chosen_of: list[tuple[Any, ...]]) -> dict[str, Any]:
    """Evidence one turn away from a top-5 hit, and top 5 with neighbours against plain hits
    at the same budget (per question, the number of distinct turns the neighbours give)."""
    within = beside = 0
    with_n: list[dict[str, float]] = []
    plain: list[dict[str, float]] = []
    budgets = []
    for q, setting in zip(questions, chosen_of):
        if not q.evidence_turns:
            continue
        order = rank(q, setting)
        top = [q.turns[r] for r in order[:5]]
        expanded = list(dict.fromkeys(t for key in top for t in [key, *q.neighbours.get(key, [])]))
        budget = len(expanded)
        budgets.append(budget)
        deep = [q.turns[r] for r in order[:budget]]
        hit5 = bool(set(top) & q.evidence_turns)
        within += hit5
        beside += (not hit5) and bool(set(expanded) & q.evidence_turns)
        with_n.append({"turn_recall_any": float(bool(set(expanded) & q.evidence_turns))})
        plain.append({"turn_recall_any": float(bool(set(deep) & q.evidence_turns))})
    n = len(with_n)
    diffs = [a["turn_recall_any"] - b["turn_recall_any"] for a, b in zip(with_n, plain)]
    better, worse = sum(d > 0 for d in diffs), sum(d < 0 for d in diffs)
    return {
        "questions_with_evidence_turns": n,
        "evidence_in_top5": within,
        "evidence_only_a_neighbour_of_top5": beside,
        "mean_budget_turns": round(sum(budgets) / max(1, n), 2),
        "top5_with_neighbours": _summary(with_n)["turn_recall_any"],
        "plain_hits_same_budget": _summary(plain)["turn_recall_any"],
        "paired_neighbours_vs_plain": {
            "better": better,
            "worse": worse,
            "sign_test_p": round(sign_test_p(better, worse), 4),
        },
    }


def _has_context(questions: Sequence[Question]) -> bool:
    return bool(questions) and all(q.context for q in questions)


def table_of(questions: Sequence[Question]) -> dict[tuple[Any, ...], list[dict[str, float]]]:
    """Every candidate and reference setting's metrics, question by question."""
    context = _has_context(questions)
    settings = {s for _, group in families(context) for s in group}
    settings |= {("vector",), LEXICAL, DEFAULT, RRF_OURS, NO_PRIOR, *CENTRED_VECTORS}
    if context:
        settings |= set(CONTEXT_VECTORS)
    return {s: [metrics(q, rank(q, s)) for q in questions] for s in settings}


def _agreement(questions: Sequence[Question]) -> dict[str, str]:
    """The replay is the store's ranking: the default's order against the store's own search."""
    agree = {
        mode: sum(
            [q.turns[r] for r in rank(q, setting)[:10]] == q.store_top[mode] for q in questions
        )
        for mode, setting in (("hybrid", DEFAULT), ("lexical", LEXICAL), ("vector", ("vector",)))
    }
    return {m: f"{v}/{len(questions)}" for m, v in agree.items()}


def _references(part: Part) -> dict[str, list[dict[str, float]]]:
    return (
        {
            "lexical": part.table[LEXICAL],
            "vector": part.table[("vector",)],
            "rrf_k60": part.table[("rrf", RRF_K)],
            "rrf_ours_k60": part.table[RRF_OURS],
            "shipped_default": part.table[DEFAULT],
            "no_english_prior": part.table[NO_PRIOR],
        }
        | {f"vector_centred_{s[1]}": part.table[s] for s in CENTRED_VECTORS}
        | {f"vector_{s[2]}": part.table[s] for s in CONTEXT_VECTORS if s in part.table}
    )


def _context_fixed(part: Part) -> dict[str, Any]:
    """Each contextual row vector fixed (nothing chosen, so in sample), at the shipped
    setting and alone, against the shipped default and against the stored vector alone."""
    out: dict[str, Any] = {}
    for label in CONTEXTS[1:]:
        shipped_with: tuple[Any, ...] = (*DEFAULT, 0.0, label)
        fused = part.table[shipped_with]
        alone = part.table[("vector", 0.0, label)]
        out[label] = {
            "shipped_setting": _summary(fused),
            "shipped_setting_vs_shipped": _paired(fused, part.table[DEFAULT]),
            "vector_alone": _summary(alone),
            "vector_alone_vs_vector": _paired(alone, part.table[("vector",)]),
            "vector_alone_vs_shipped": _paired(alone, part.table[DEFAULT]),
        }
    return out


def _part_report(part: Part, held: list[dict[str, float]]) -> dict[str, Any]:
    """One set's held-out figures, its untuned references and the paired sign tests."""
    refs = _references(part)
    by_kind: dict[str, list[int]] = defaultdict(list)
    for i, q in enumerate(part.questions):
        by_kind[q.kind].append(i)
    return {
        "questions": len(part.questions),
        "objective": "+".join(part.objective),
        "agreement_with_store_top10": _agreement(part.questions),
        "held_out": {
            "cv_fusion": _summary(held),
            "by_type_cv_fusion": {
                kind: {
                    m: v["mean"]
                    for m, v in _summary([held[i] for i in idx]).items()
                    if m.endswith("@5")
                }
                | {"n": len(idx)}
                for kind, idx in sorted(by_kind.items())
            },
        },
        "untuned_references": {name: _summary(rows) for name, rows in refs.items()},
        "paired_cv_fusion_vs": {name: _paired(held, rows) for name, rows in refs.items()},
        "by_type": {kind: _type_report(held, refs, idx) for kind, idx in sorted(by_kind.items())},
    } | ({"context_fixed": _context_fixed(part)} if _has_context(part.questions) else {})


#: The references each question type is compared with: each signal alone and the RRFs.
TYPE_REFERENCES = ("lexical", "vector", "rrf_k60", "rrf_ours_k60", "shipped_default")


def _type_report(
    held: Sequence[dict[str, float]], refs: dict[str, list[dict[str, float]]], idx: list[int]
) -> dict[str, Any]:
    """One question type's held-out figures (Wilson intervals), its references' means, the
    sign test against each, and where the chosen fusion's mean is below a single signal's
    or an RRF's (the questions to read first)."""
    mine = [held[i] for i in idx]
    means = {name: _summary([refs[name][i] for i in idx]) for name in TYPE_REFERENCES}
    below = sorted(
        f"{name} {metric}"
        for name in TYPE_REFERENCES[:-1]
        for metric, value in _summary(mine).items()
        if metric in means[name] and value["mean"] < means[name][metric]["mean"]
    )
    return {
        "n": len(idx),
        "cv_fusion": _summary(mine),
        "reference_means": {
            name: {m: v["mean"] for m, v in summary.items()} for name, summary in means.items()
        },
        "paired_cv_fusion_vs": {
            name: _paired(mine, [refs[name][i] for i in idx]) for name in TYPE_REFERENCES
        },
        "below_a_signal_or_rrf": below,
    }


def _kept(
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


def run(
    directory: Path,
    k: int,
    seed: int,
    seeds: int,
    limit: int,
    dialogs: Sequence[Path] = (),
    dialog_cache: Path | None = None,
    guard: bool = False,
    only: Sequence[str] = (),
    context_cache: Path | None = None,
    also: Sequence[Path] = (),
    max_weight: float = 1.0,
    dialog_folds: str = "form",
    protocol: str = "kfold",
) -> dict[str, Any]:
    by_type = protocol == "type"
    if by_type and seeds > 1:
        raise LookupError("--protocol type has one fold assignment: --seeds is for kfold")
    windows = None
    if context_cache is not None:
        from benchmarks._embed_cache import CachingEmbedder
        from memcore_sqlite.embedders.onnx import OnnxEmbedder

        windows = CachingEmbedder(OnnxEmbedder(), context_cache, read_only=True)
    index, questions = _kept(directory, limit, windows)
    parts = [Part("longmemeval", questions, table_of(questions), OBJECTIVE)]
    for other in also:
        other_index, asked = _kept(other, limit, windows)
        name = f"longmemeval_{other_index['roles']}_roles"
        if any(p.name == name for p in parts):
            raise LookupError(f"two sets of kept stores index the same roles: {other}")
        parts.append(Part(name, asked, table_of(asked), OBJECTIVE))
    for path in dialogs:
        if dialog_cache is None:
            raise LookupError("--dialogs needs --dialog-cache (vectors are never embedded here)")
        asked = dialog_questions(path, dialog_cache, windows)
        name = "dialogs" if path.stem == "dialogs_dev" else path.stem
        if any(p.name == name for p in parts):
            raise LookupError(f"two dialog sets of one name: {path}")
        parts.append(Part(name, asked, table_of(asked), DIALOG_OBJECTIVE, dialog_folds))
    lme = parts[0]
    searched = candidates(all(_has_context(p.questions) for p in parts), only, max_weight)
    main = cross_validate(parts, k, seed, guard, searched, by_type)
    held = main["held"]
    k = main["k"]
    lme_fold = main["folds"][lme.name]
    chosen_by_fold = [tuple(c["setting"]) for c in main["choices"]]
    chosen_of = [chosen_by_fold[f] for f in lme_fold]
    session = _session_cv(questions, lme_fold, chosen_by_fold, k)
    repeats = []
    for extra in range(1, seeds):
        again = cross_validate(parts, k, seed + extra, guard, searched)
        repeats.append(
            {
                "seed": seed + extra,
                "held_out": {
                    p.name: {
                        m: v["mean"]
                        for m, v in _summary(again["held"][p.name]).items()
                        if m.endswith("@5")
                    }
                    for p in parts
                },
                "vs_shipped": {
                    p.name: _paired(again["held"][p.name], p.table[DEFAULT]) for p in parts
                },
                "choices": [c["family"] + " " + str(c["setting"]) for c in again["choices"]],
            }
        )
    return {
        "roles": index["roles"],
        "embedder": index["model"],
        "protocol": {
            "name": protocol,
            "folds": k,
            "seed": None if by_type else seed,
            "sets": {
                p.name: "one question type held out per fold, in every set that has it"
                if by_type
                else {
                    "question": "questions, by type",
                    "conversation": "whole conversations",
                    "form": "whole question forms, by type",
                }[p.fold_by]
                for p in parts
            },
            "held_out_types": type_folds(parts) if by_type else None,
            "objective": {p.name: "+".join(p.objective) for p in parts},
            "families_simplest_first": [name for name, _ in searched],
            "settings": len({s for _, group in searched for s in group}),
            "context_cache": None if context_cache is None else str(context_cache),
            "also": [str(d) for d in also],
            "max_weight": max_weight,
            "shipped_default": list(DEFAULT),
            "guard": guard,
            "families_searched": list(only) or "all",
        },
        "sets": {p.name: _part_report(p, held[p.name]) for p in parts},
        "choices": main["choices"],
        "longmemeval_session_and_context": {
            "held_out_cv_fusion_session": _summary(session["held"]),
            "paired_cv_session_vs_cv_fusion": _paired(session["held"], held[lme.name]),
            "session_choices": session["choices"],
            "session_variants_fixed": session["fixed_variants"],
            "neighbours": _neighbours(questions, chosen_of),
        },
        "other_fold_assignments": repeats,
    }


def protocol_parser() -> argparse.ArgumentParser:
    """The arguments of a benchmark run under this protocol: the kept stores and the folds."""
    parser = argparse.ArgumentParser()
    parser.add_argument("directory", type=Path, help="stores kept by longmemeval_replay capture")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=32)
    parser.add_argument("--seeds", type=int, default=1, help="fold assignments to repeat on")
    return parser


def report(compute: Callable[[], dict[str, Any]]) -> int:
    """Print ``compute()`` as JSON (exit 0), or a missing store or question as one JSON error
    line on stderr (exit 1)."""
    try:
        result = compute()
    except (LookupError, FileNotFoundError) as e:
        print(json.dumps({"error": f"{type(e).__name__}: {e}"}), file=sys.stderr)
        return 1
    print(json.dumps(result, indent=2))
    return 0


def main() -> int:
    parser = protocol_parser()
    parser.add_argument(
        "--protocol",
        choices=("kfold", "type"),
        default="kfold",
        help="kfold: --folds random folds, stratified by type; type: leave one question type"
        " out (one fold per type of every set, held out of each set that has it; --folds"
        " and --seed unused)",
    )
    parser.add_argument("--limit", type=int, default=0, help="first N kept questions (0: all)")
    parser.add_argument(
        "--dialogs",
        type=Path,
        action="append",
        default=[],
        help="also a dialog set (dialogs_dev.json, dialogs_echo.json); repeatable",
    )
    parser.add_argument(
        "--dialog-cache", type=Path, default=None, help="its vectors (read, never written)"
    )
    parser.add_argument(
        "--guard",
        action="store_true",
        help="choose only among settings no worse than the shipped default on any set's"
        " training folds (by more than one question)",
    )
    parser.add_argument(
        "--families",
        default="",
        help="comma-separated candidate families (default all; the shipped default is always one)",
    )
    parser.add_argument(
        "--context-cache",
        type=Path,
        default=None,
        help="window vectors (context_vectors embed): adds the contextual row-vector families",
    )
    parser.add_argument(
        "--also",
        type=Path,
        action="append",
        default=[],
        help="more kept stores (another --roles capture), chosen for jointly; repeatable",
    )
    parser.add_argument(
        "--max-weight",
        type=float,
        default=1.0,
        help="no candidate with a larger vector weight (what the latency goals allow)",
    )
    parser.add_argument(
        "--dialog-folds",
        choices=("form", "conversation"),
        default="form",
        help="what a dialog fold holds whole: a question form (default) or a conversation",
    )
    args = parser.parse_args()
    return report(
        lambda: run(
            args.directory,
            args.folds,
            args.seed,
            args.seeds,
            args.limit,
            tuple(args.dialogs),
            args.dialog_cache,
            args.guard,
            tuple(f for f in args.families.split(",") if f),
            args.context_cache,
            tuple(args.also),
            args.max_weight,
            args.dialog_folds,
            args.protocol,
        )
    )


if __name__ == "__main__":
    raise SystemExit(main())
