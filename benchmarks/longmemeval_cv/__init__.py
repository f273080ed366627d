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
  maximal marginal relevance (``mmr``: :data:`NOVELTY`; the shipped order's first hits placed
  again one by one, each worth lambda times its fused score less 1 - lambda times its largest
  cosine with a hit already placed);
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

Where each part lives: :mod:`.settings` (the candidates, their families and distances),
:mod:`.questions` (each store read once), :mod:`.rankings` (every setting's order, in numpy),
:mod:`.protocol` (folds, the choice, the held-out rows), :mod:`.report` (the output and the
command line).
"""

from __future__ import annotations

from benchmarks.longmemeval_cv.report import main

__all__ = ["main"]
