"""Invariants: option strings never cross tenants, and streams return every memory once."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memcore.scope import Scope

names = st.text(min_size=1, max_size=40).filter(
    lambda s: s.strip() and s.strip() != "*" and "\x00" not in s
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(first=names, second=names)
def test_a_tenant_string_never_reads_another_tenants_memories(fake_cli, first, second):
    if first.strip() == second.strip():
        return
    fake_cli.ok("--tenant", first, "add", f"owned by {first!r}")
    mine = fake_cli.json("--tenant", first, "list", "--limit", "100")["items"]
    theirs = fake_cli.json("--tenant", second, "list", "--limit", "100")["items"]
    assert f"owned by {first!r}" in {m["text"] for m in mine}
    assert f"owned by {first!r}" not in {m["text"] for m in theirs}
    assert all(m["scope"]["tenant_id"] == mine[0]["scope"]["tenant_id"] for m in mine)
    hits = json.loads(fake_cli.ok("--json", "--tenant", second, "search", "owned").stdout)
    assert all(h["text"] != f"owned by {first!r}" for h in hits)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(value=names)
def test_no_option_value_becomes_a_wildcard_or_separator(fake_cli, value):
    doc = fake_cli.json("--tenant", value, "--agent", value, "--run", value, "add", "x")
    scope = doc["scope"]
    for level in ("tenant_id", "agent_id", "run_id"):
        assert "*" not in scope[level]
        assert "/" not in scope[level]
    Scope.from_mapping(scope)  # a valid concrete scope


def test_list_all_and_export_return_every_memory_exactly_once(fake_cli):
    store = fake_cli.store
    store.ensure_store("hermes_mem")
    scope = Scope("hermes", "__default__", "hermes", "__default__")
    other = Scope("hermes", "__default__", "planner", "r1")
    texts = {f"memory number {i}" for i in range(250)}
    for i, text in enumerate(sorted(texts)):
        store.add_text("hermes_mem", other if i % 3 else scope, text, sync=True)
    store.add_text(
        "hermes_mem", Scope("hermes", "someone_else", "hermes", "x"), "not mine", sync=True
    )
    listed = fake_cli.json_lines("list", "--all", "--limit", "7")
    assert sorted(m["text"] for m in listed) == sorted(texts)
    assert len({m["id"] for m in listed}) == 250
    exported = fake_cli.ok("export").stdout.splitlines()
    assert sorted(json.loads(line)["text"] for line in exported) == sorted(texts)
