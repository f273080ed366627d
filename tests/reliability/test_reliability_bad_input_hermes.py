"""Every Hermes tool with arbitrary JSON arguments: wrong types, huge strings, nesting, null,
NaN. The answer is always a JSON string (``{"error": ...}`` when refused); nothing raises into
the agent loop, nothing hangs, and no refused call leaves a record behind.
"""

from __future__ import annotations

import json
import math
import threading
from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memcore.paging import every_item
from memcore_hermes.session.tools import TOOL_NAMES

HUGE = [
    "x" * 40_000,
    "界" * 12_000,
    "a " * 20_000,
    "\x00" * 1000,
    "}" * 5000 + "</recalled-memory>",
]
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.sampled_from(HUGE),
)
json_like = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=10,
)
ARG_NAMES = [
    "limit",
    "query",
    "top_k",
    "enable_rerank",
    "metadata",
    "content",
    "sync",
    "memory_id",
    "agent_id",
    "run_id",
    "app_id",
    "tenant_id",
    "scope",
]
plausible = st.one_of(
    st.fixed_dictionaries(
        {"content": st.text(min_size=1, max_size=80).filter(str.strip)},
        optional={
            "metadata": st.dictionaries(
                st.text(min_size=1, max_size=10), st.text(max_size=10), max_size=3
            ),
            "sync": st.booleans(),
        },
    ),
    st.fixed_dictionaries(
        {"query": st.text(min_size=1, max_size=40)}, optional={"top_k": st.integers(-2, 60)}
    ),
    st.fixed_dictionaries({"limit": st.integers(-5, 200)}),
)
tool_args = st.one_of(
    plausible,
    st.dictionaries(st.sampled_from(ARG_NAMES), json_like, max_size=5),
    st.fixed_dictionaries(
        {"content": json_like}, optional={"metadata": json_like, "sync": json_like}
    ),
    st.fixed_dictionaries(
        {"query": json_like}, optional={"metadata": json_like, "top_k": json_like}
    ),
    st.fixed_dictionaries(
        {"memory_id": json_like}, optional={"agent_id": json_like, "run_id": json_like}
    ),
    st.fixed_dictionaries({"limit": json_like}),
    json_like,
)
CALL_TIMEOUT_S = 30.0


def _call_bounded(provider, tool: str, args):
    """Run the tool in a thread so a hang shows up as a failure, not a stuck suite."""
    box: dict = {}

    def run() -> None:
        try:
            box["result"] = provider.handle_tool_call(tool, args)
        except BaseException as exc:  # recorded and asserted on below
            box["exception"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(CALL_TIMEOUT_S)
    assert not worker.is_alive(), f"{tool} hung on {args!r:.200}"
    return box


def _strict_json(text: str):
    def refuse(name: str):
        raise ValueError(f"non-standard JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


def test_reliability_hermes_tools_arbitrary_arguments(local_provider, scenario, pick):
    provider = local_provider
    stats: Counter = Counter()
    accepted_content: set[str] = set()
    untyped: list[str] = []

    @settings(
        max_examples=int(pick(300, 800, 500)),
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(tool=st.sampled_from([*TOOL_NAMES, "tablestore_unknown"]), args=tool_args)
    def check(tool, args):
        stats["calls"] += 1
        box = _call_bounded(provider, tool, args)
        assert "exception" not in box, f"{tool} raised {box.get('exception')!r}"
        result = box["result"]
        assert isinstance(result, str)
        data = _strict_json(result)
        assert isinstance(data, dict)
        if "error" in data:
            stats["errors"] += 1
            err = data["error"]
            assert isinstance(err, dict) and isinstance(err.get("message"), str)
            if err.get("type") == "Error":
                untyped.append(f"{tool}: {err['message']}")
            return
        stats[f"ok_{tool}"] += 1
        if tool == "tablestore_remember":
            assert data["status"] in ("queued", "completed")
            accepted_content.add(args["content"])

    with scenario(
        "bad input: Hermes tools", "arbitrary JSON args (types, huge, nested, null, NaN)"
    ) as s:
        check()
        # Everything accepted lands; nothing refused leaves a record.
        assert provider.runtime.flush(30.0)
        svc = provider.runtime.service(provider.runtime.handle.ready())
        stored = [
            m.text for m in every_item(lambda token: svc.profile(limit=100, next_token=token))
        ]
        stored_set = set(stored)
        lost = accepted_content - stored_set
        partial = stored_set - accepted_content
        s.counts(
            issued=stats["calls"],
            acknowledged=len(accepted_content),
            stored=len(stored_set & accepted_content),
            lost=len(lost),
            duplicated=len(stored) - len(stored_set),
        )
        s.note(
            typed_errors=stats["errors"] - len(untyped),
            untyped_errors=len(untyped),
            unexpected_records=len(partial),
            untyped_examples=sorted(set(untyped))[:5],
        )
        assert not lost, f"accepted but not stored: {list(lost)[:3]!r:.300}"
        assert not partial, f"stored without being accepted: {list(partial)[:3]!r:.300}"
    assert stats["errors"] > 0 and stats["ok_tablestore_remember"] > 0


def test_reliability_hermes_tool_nan_metadata_is_refused(local_provider):
    out = json.loads(
        local_provider.handle_tool_call(
            "tablestore_remember", {"content": "x", "metadata": {"k": math.nan}}
        )
    )
    assert "error" in out
