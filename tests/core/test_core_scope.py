"""Scopes, patterns and the resolution of untrusted session strings."""

from __future__ import annotations

import hashlib
import tracemalloc

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memcore.errors import InvalidInput
from memcore.scope import (
    DEFAULT_SEGMENT,
    MAX_SEGMENT_CHARS,
    Scope,
    ScopePattern,
    SessionContext,
    identity_segment,
    normalize_segment,
    resolve_scope,
    tenant_segment,
    unescape_segment,
)

untrusted = st.one_of(st.none(), st.text(max_size=400), st.integers(), st.binary(max_size=20))


def test_resolution_follows_the_original_plugin() -> None:
    scope = resolve_scope(
        SessionContext(
            user_id="u1",
            agent_identity="coder",
            gateway_session_key="gw",
            session_title="title",
            session_id="sid",
        ),
        app_id="myapp",
    )
    assert scope == Scope("myapp", "u1", "coder", "gw")


def test_resolution_defaults() -> None:
    assert resolve_scope(SessionContext()) == Scope(
        "hermes", DEFAULT_SEGMENT, "hermes", DEFAULT_SEGMENT
    )


def test_config_tenant_wins_over_user_id() -> None:
    scope = resolve_scope(SessionContext(user_id="u1"), tenant_id="fixed")
    assert scope.tenant_id == "fixed"


@pytest.mark.parametrize(
    ("title", "session_id", "expected"),
    [("t", "s", "t"), (None, "s", "s"), ("  ", "s", "s"), (None, None, DEFAULT_SEGMENT)],
)
def test_run_id_fallbacks(title: str | None, session_id: str | None, expected: str) -> None:
    assert (
        resolve_scope(SessionContext(session_title=title, session_id=session_id)).run_id == expected
    )


@pytest.mark.parametrize(
    "evil", ["*", "a/b", "../t2", "t2/*", "%2A", "__default__", "x\x00y", "\u202e*"]
)
def test_evil_user_ids_never_become_wildcards_or_other_tenants(evil: str) -> None:
    scope = resolve_scope(SessionContext(user_id=evil))
    assert "*" not in str(scope)
    assert scope.tenant_id != DEFAULT_SEGMENT
    assert "/" not in scope.tenant_id


#: What a host may pass as a user id: none at all, or a non-blank string (the rest is refused).
user_ids = st.one_of(st.none(), st.text(min_size=1, max_size=400).filter(str.strip))


@given(user_id=user_ids, agent=untrusted, gw=untrusted, title=untrusted, sid=untrusted)
def test_resolution_is_total_and_concrete(
    user_id: object, agent: object, gw: object, title: object, sid: object
) -> None:
    session = SessionContext(user_id, agent, gw, title, sid)  # type: ignore[arg-type]
    scope = resolve_scope(session)
    for segment in scope.as_tuple():
        assert segment and "*" not in segment and "/" not in segment
        assert len(segment) <= MAX_SEGMENT_CHARS
        assert all(ord(c) >= 32 for c in segment)
    assert scope.tenant_pattern().matches(scope)


@given(a=st.text(min_size=1, max_size=300), b=st.text(min_size=1, max_size=300))
def test_distinct_inputs_give_distinct_segments(a: str, b: str) -> None:
    if a.strip() != b.strip() and a.strip() and b.strip():
        assert normalize_segment(a) != normalize_segment(b)


@given(st.text(min_size=1, max_size=10))
def test_escape_is_reversible(raw: str) -> None:
    assert unescape_segment(identity_segment(raw)) == raw


@given(a=user_ids, b=user_ids)
def test_one_tenant_pattern_never_matches_another_tenant(a: str | None, b: str | None) -> None:
    sa = resolve_scope(SessionContext(user_id=a))
    sb = resolve_scope(SessionContext(user_id=b))
    if sa.tenant_id != sb.tenant_id:
        assert not sa.tenant_pattern().matches(sb)


def test_pattern_wildcards_only_as_suffix() -> None:
    assert ScopePattern("app", "t1", "*", "*").matches(Scope("app", "t1", "a", "r"))
    with pytest.raises(InvalidInput) as err:
        ScopePattern("app", "*", "a1", "*")
    assert err.value.field == "agent_id"
    assert ScopePattern.parse("app/t1") == ScopePattern("app", "t1", "*", "*")
    with pytest.raises(InvalidInput):
        ScopePattern.parse("a/b/c/d/e")


def test_scope_must_be_concrete() -> None:
    with pytest.raises(InvalidInput):
        Scope("app", "*", "a", "r")
    with pytest.raises(InvalidInput):
        Scope("app", "t/x", "a", "r")
    with pytest.raises(InvalidInput):
        Scope("app", "", "a", "r")
    with pytest.raises(InvalidInput):
        ScopePattern("app", "t", "*", "*").concrete()


def test_long_segments_are_capped_but_unique() -> None:
    a = normalize_segment("x" * 1000)
    b = normalize_segment("x" * 999 + "y")
    assert len(a) <= MAX_SEGMENT_CHARS and len(b) <= MAX_SEGMENT_CHARS
    assert a != b


def _digest(raw: str) -> str:
    return hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def test_a_huge_id_is_not_escaped_past_the_prefix_its_segment_keeps() -> None:
    """An app may pass a request's id as it came. One of 10 million characters was escaped
    character by character in full, a list entry each (80 MB, seconds), to keep 103."""
    huge = "u" * 10_000_000
    tracemalloc.start()
    try:
        segment = identity_segment(huge)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert segment == "u" * 103 + "~" + _digest(huge)
    assert peak < 2 * len(huge)  # the bytes the digest reads; no list per character


@pytest.mark.parametrize(
    ("raw", "kept"),
    [
        ("a" * 50 + " " * 200, "a" * 50 + "%20" * 17),  # the trailing blanks, escaped
        (" " * 200 + "a", "%20" * 34),  # the leading ones
        ("__" + "x" * 300, "%5F_" + "x" * 99),
        ("x" * 102 + "*" + "y" * 100, "x" * 102),  # an escape that does not fit is left out
    ],
)
def test_a_long_ids_kept_prefix_is_escaped_as_the_whole_id_would_be(raw: str, kept: str) -> None:
    assert identity_segment(raw) == f"{kept}~{_digest(raw)}"


@given(a=st.text(max_size=60), b=st.text(max_size=60))
def test_identity_segments_are_injective(a: str, b: str) -> None:
    if a != b and a and b:
        assert identity_segment(a) != identity_segment(b)


@given(user_id=st.text(min_size=1, max_size=60))
def test_identity_segments_are_reversible_and_never_trimmed(user_id: str) -> None:
    segment = identity_segment(user_id)
    assert segment == segment.strip()  # edge whitespace is escaped, not kept raw
    assert len(segment) <= MAX_SEGMENT_CHARS
    shown = unescape_segment(segment)  # never fails, shortened or not
    digest = hashlib.sha256(user_id.encode("utf-8", "surrogatepass")).hexdigest()[:24]
    if segment.endswith(f"~{digest}"):
        # A digest-shortened segment keeps a prefix of whole characters of the id.
        assert user_id.startswith(unescape_segment(segment[: -len(digest) - 1]))
    else:
        assert shown == user_id


@pytest.mark.parametrize("wide", ["\x80", "\U000107bb", "\u00e9"])
def test_a_shortened_segment_never_splits_an_escaped_character(wide: str) -> None:
    segment = identity_segment(" " + wide * 60)
    assert len(segment) <= MAX_SEGMENT_CHARS
    prefix = segment.rsplit("~", 1)[0]
    assert unescape_segment(prefix) == " " + wide * (len(unescape_segment(prefix)) - 1)


@pytest.mark.parametrize(
    ("user_id", "tenant"),
    [("alice", "alice"), ("alice ", "alice%20"), ("\u00a0bob", "%C2%A0bob"), ("a~b", "a%7Eb")],
)
def test_a_session_user_id_is_escaped_never_stripped(user_id: str, tenant: str) -> None:
    assert resolve_scope(SessionContext(user_id=user_id)).tenant_id == tenant


def test_the_configured_tenant_id_follows_the_same_rule_as_a_user_id() -> None:
    # It was trimmed, so ``--tenant 'alice '`` named alice and never the tenant "alice ".
    scope = resolve_scope(SessionContext(user_id="x"), tenant_id="  team  ")
    assert scope.tenant_id == resolve_scope(SessionContext(user_id="  team  ")).tenant_id
    assert scope.tenant_id == "%20%20team%20%20"


@pytest.mark.parametrize("blank", ["", " ", "\t\n", "\u3000"])
@pytest.mark.parametrize("where", ["user_id", "tenant_id"])
def test_a_blank_tenant_id_is_refused_not_shared(blank: str, where: str) -> None:
    with pytest.raises(InvalidInput) as err:
        if where == "user_id":
            resolve_scope(SessionContext(user_id=blank))
        else:
            resolve_scope(SessionContext(user_id="alice"), tenant_id=blank)
    assert err.value.field == "tenant_id"


@pytest.mark.parametrize("odd", [42, b"alice", 1.5])
def test_a_tenant_id_that_is_not_a_string_is_refused(odd: object) -> None:
    with pytest.raises(InvalidInput):
        tenant_segment(odd)


def test_no_user_at_all_is_the_default_tenant() -> None:
    assert tenant_segment(None) == DEFAULT_SEGMENT
    assert resolve_scope(SessionContext()).tenant_id == DEFAULT_SEGMENT
