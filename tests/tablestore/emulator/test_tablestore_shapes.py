"""The golden shape check catches what it must: a missing key, an undocumented key, a wrong
type at any depth; and lets through what the types allow (optional, free map keys, null)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from memcore_tablestore.emulator.shapes import shape_mismatches

GOLDEN = {
    p.stem: json.loads(p.read_text("utf-8"))
    for p in sorted(Path(__file__).parent.parent.joinpath("golden").glob("*.json"))
}
SEARCH = GOLDEN["SearchMemories"]


def check(answer: object, golden: dict[str, object] = SEARCH) -> list[str]:
    return shape_mismatches(
        golden["response"],
        answer,
        optional=golden.get("optional", ()),  # type: ignore[arg-type]
        maps=golden.get("maps", ()),  # type: ignore[arg-type]
        nullable=golden.get("nullable", ()),  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("api", sorted(GOLDEN))
def test_every_golden_response_matches_itself(api: str) -> None:
    assert check(GOLDEN[api]["response"], GOLDEN[api]) == []


def test_a_missing_required_key_is_reported() -> None:
    answer = copy.deepcopy(SEARCH["response"])
    del answer["results"][0]["unit"]["id"]
    assert check(answer) == ["results[].unit.id: missing"]


def test_an_optional_key_may_be_absent() -> None:
    answer = copy.deepcopy(SEARCH["response"])
    del answer["results"][0]["similarity"]
    del answer["scope"]
    assert check(answer) == []


def test_an_undocumented_key_is_reported() -> None:
    answer = copy.deepcopy(SEARCH["response"])
    answer["memories"] = []
    assert check(answer) == ["memories: not in the documented shape"]


def test_a_wrong_type_is_reported_at_depth() -> None:
    answer = copy.deepcopy(SEARCH["response"])
    answer["results"][0]["unit"]["scope"]["appId"] = 7
    answer["results"][0]["score"] = "0.9"
    assert sorted(check(answer)) == [
        "results[].score: expected number, got string",
        "results[].unit.scope.appId: expected string, got number",
    ]


def test_map_keys_are_free_but_values_are_typed() -> None:
    answer = copy.deepcopy(SEARCH["response"])
    answer["results"][0]["unit"]["metadata"] = {"anything": "goes"}
    assert check(answer) == []
    answer["results"][0]["unit"]["metadata"] = {"anything": 1}
    assert check(answer) == ["results[].unit.metadata.*: expected string, got number"]


def test_nullable_fields_accept_null_only_where_typed() -> None:
    golden = GOLDEN["GetMemoryDreamTask"]
    answer = copy.deepcopy(golden["response"])
    answer["finishedAt"] = None
    assert check(answer, golden) == []
    answer["createdAt"] = None
    assert check(answer, golden) == ["createdAt: expected string, got null"]


def test_the_old_emulator_search_shape_fails() -> None:
    old = {"memories": [{"id": "m", "text": "t", "score": 0.5}]}
    assert "results: missing" in check(old)
