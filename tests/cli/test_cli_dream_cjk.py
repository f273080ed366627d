"""``memcore dream`` on Chinese memories, run as a user runs it: in subprocesses, on the
embedded store with its default (shipped) embedder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.cli.conftest import run_memcore


def _memcore(home: Path, *args: str) -> Any:
    return json.loads(run_memcore(home, *args, "--json").stdout)


def test_dream_merges_a_chinese_fact_said_again_and_keeps_a_negation_apart(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    texts = [
        "我女儿叫小雨",
        "我对花生过敏",
        "我姐姐住在杭州",
        "我的女儿叫小雨",
        "我对花生不过敏",
        "我姐姐住在苏州",
    ]
    ids = [_memcore(home, "add", "--sync", t)["memory_ids"][0] for t in texts]
    task = _memcore(home, "dream", "create")
    actions = _memcore(home, "dream", "actions", task["id"])["items"]
    assert [(a["action"], set(a["memory_ids"])) for a in actions] == [("MERGE", {ids[0], ids[3]})]
    _memcore(home, "dream", "apply", task["id"], actions[0]["id"])
    listed = _memcore(home, "list")["items"]
    assert sorted(m["text"] for m in listed) == sorted(texts[1:])
