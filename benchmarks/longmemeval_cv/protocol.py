"""The folds, the choice on the training folds and the held-out rows of the cross-validation."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import attrs

from benchmarks.longmemeval_cv.questions import Question
from benchmarks.longmemeval_cv.rankings import metrics, rank
from benchmarks.longmemeval_cv.settings import (
    CENTRED_VECTORS,
    CONTEXT_VECTORS,
    DEFAULT,
    LEXICAL,
    NO_PRIOR,
    OBJECTIVE,
    RRF_K,
    RRF_OURS,
    distance,
    families,
)


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


def objective_of(rows: Sequence[dict[str, float]], objective: Sequence[str] = OBJECTIVE) -> float:
    return sum(r.get(m, 0.0) for r in rows for m in objective) / max(1, len(rows))


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
        return objective_of(rows, part.objective) / len(part.objective)

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
            pick = min(settings, key=lambda s: (-round(value[s], 9), distance(s)))
            return name, pick
    raise AssertionError("no family")


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
                name: round(objective_of([p.table[ref][i] for i in test], p.objective), 4)
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


def has_context(questions: Sequence[Question]) -> bool:
    return bool(questions) and all(q.context for q in questions)


def table_of(questions: Sequence[Question]) -> dict[tuple[Any, ...], list[dict[str, float]]]:
    """Every candidate and reference setting's metrics, question by question."""
    context = has_context(questions)
    settings = {s for _, group in families(context) for s in group}
    settings |= {("vector",), LEXICAL, DEFAULT, RRF_OURS, NO_PRIOR, *CENTRED_VECTORS}
    if context:
        settings |= set(CONTEXT_VECTORS)
    return {s: [metrics(q, rank(q, s)) for q in questions] for s in settings}
