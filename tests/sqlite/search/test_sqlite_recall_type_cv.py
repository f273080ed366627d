"""Leave-one-question-type-out cross-validation (``benchmarks/longmemeval_cv --protocol
type``) never scores a question with a setting chosen on its own type, in any set.

The tables are written by hand: setting A is far better on one type only (and nothing on
the others), B a little better on every other. Random folds see that type in training and
score it with A; holding the type out of every set must score it with B, chosen on the
other types alone."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from benchmarks.longmemeval_cv.protocol import Part, cross_validate, type_folds
from benchmarks.longmemeval_cv.questions import Question
from benchmarks.longmemeval_cv.settings import DEFAULT, OBJECTIVE, RRF_K

A = ("convex", 0.9, 0.5, 8, 1.0)
B = ("convex", 0.1, 0.5, 8, 1.0)


def question(qid: str, kind: str) -> Question:
    empty = np.zeros(0)
    return Question(qid, kind, empty, [], [], empty, {}, [], set(), set(), {}, {})


def row(value: float) -> dict[str, float]:
    return dict.fromkeys(OBJECTIVE, value)


def part(name: str, kinds: list[str], special: str) -> Part:
    """Questions of ``kinds``; A wins on ``special`` by far, B on the rest by a little."""
    questions = [question(f"{name}{i}", kind) for i, kind in enumerate(kinds)]
    table: dict[tuple[Any, ...], list[dict[str, float]]] = {
        A: [row(1.0 if q.kind == special else 0.0) for q in questions],
        B: [row(0.0 if q.kind == special else 0.1) for q in questions],
        DEFAULT: [row(0.0) for _ in questions],
        ("rrf", RRF_K): [row(0.0) for _ in questions],
    }
    return Part(name, questions, table, OBJECTIVE)


def families() -> list[tuple[str, list[tuple[Any, ...]]]]:
    return [("pair", [A, B])]


def kinds() -> list[str]:
    return ["t"] * 4 + ["u"] * 12 + ["v"] * 12


def test_a_type_held_out_of_every_set_is_scored_with_what_the_other_types_chose() -> None:
    parts = [part("user", kinds(), "t"), part("all", kinds(), "t"), part("d", ["x"] * 6, "t")]
    result = cross_validate(parts, 5, 32, False, families(), by_type=True)
    assert result["k"] == 4
    assert [c["held_out_type"] for c in result["choices"]] == ["t", "u", "v", "x"]
    for p in parts[:2]:
        held = [got for q, got in zip(p.questions, result["held"][p.name]) if q.kind == "t"]
        assert held == [row(0.0)] * 4, p.name
    assert [c["setting"] for c in result["choices"]] == [list(B), list(A), list(A), list(A)]


def test_random_folds_train_on_the_type_they_test() -> None:
    """The leak the type protocol closes: with random folds the type is in training."""
    parts = [part("user", kinds(), "t")]
    held = cross_validate(parts, 2, 32, False, families())["held"]["user"]
    assert any(got == row(1.0) for got in held)


def test_folds_by_type_follow_the_sorted_types_of_every_set() -> None:
    parts = [part("user", ["v", "t"], "t"), part("d", ["a"], "t")]
    kinds_seen = type_folds(parts)
    assert kinds_seen == ["a", "t", "v"]
    assert parts[0].folds(5, 32, kinds_seen) == [2, 1]
