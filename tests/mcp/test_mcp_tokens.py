"""The bearer-token map: each token opens exactly one tenant, and no token is ever shown."""

from __future__ import annotations

import json
import os

import pytest

from memcore.errors import ConfigError
from memcore_mcp.tokens import TOKENS_ENV, TOKENS_FILE_ENV, TokenMap, load_tokens

A = "a" * 31 + "1"
B = "b" * 40
B2 = "c" * 64


def test_each_token_opens_its_own_tenant_only() -> None:
    tokens = TokenMap.parse(json.dumps({"alice": A, "bob": [B, B2]}), source="test")
    assert tokens.tenant_for(A) == "alice"
    assert tokens.tenant_for(B) == tokens.tenant_for(B2) == "bob"
    for wrong in (A[:-1], A + "x", A.upper(), "", B[:32]):
        assert tokens.tenant_for(wrong) is None
    assert tokens.tenants == {"alice", "bob"}
    assert A not in repr(tokens) and B not in repr(tokens)


@pytest.mark.parametrize("other", ["bob", " alice", "alice ", "Alice"])
def test_one_token_for_two_tenants_is_refused(other: str) -> None:
    """Tenants are never trimmed, so "alice " is another tenant than "alice": one token for
    both opened only the second, and "alice" was left without one."""
    with pytest.raises(ConfigError, match="two tenants") as refused:
        TokenMap.parse(json.dumps({"alice": A, other: A}), source="t")
    assert A not in str(refused.value)


@pytest.mark.parametrize(
    "data",
    ["not json", "[]", "{}", '{"alice": []}', '{"alice": 7}', '{"alice": "short"}'],
)
def test_unusable_maps_are_config_errors_that_quote_no_token(data: str) -> None:
    with pytest.raises(ConfigError) as refused:
        TokenMap.parse(data, source="t")
    assert "short" not in str(refused.value)


@pytest.mark.parametrize(
    "data",
    [{A: "alice"}, {A: ["alice"]}, {A: 7}, {A: []}, {"alice": B, A: B}, {A: A + " x"}],
)
def test_a_map_written_token_to_tenant_quotes_no_token(data: dict) -> None:
    """A map written the wrong way round (token to tenant) was refused with its key, the
    token, in the message and the field: one line on stderr, in a service's log."""
    with pytest.raises(ConfigError) as refused:
        TokenMap.parse(json.dumps(data), source="t")
    assert A not in json.dumps(refused.value.to_dict()), refused.value.to_dict()
    assert "entry" in str(refused.value)


@pytest.mark.parametrize("key", [f"Bearer {A}", f"{A}\n", f"alice {A}"])
def test_a_key_holding_a_token_among_other_words_is_not_quoted(key: str) -> None:
    """A token pasted as a key with more around it (an HTTP header's "Bearer ", a line end)
    is as much a token: the error names its place in the map."""
    with pytest.raises(ConfigError) as refused:
        TokenMap.parse(json.dumps({key: "alice"}), source="t")
    assert A not in json.dumps(refused.value.to_dict()), refused.value.to_dict()
    assert "entry 1" in str(refused.value)


@pytest.mark.parametrize("tenant", ["al\ud800ce", "a\udcffb"])
def test_a_tenant_holding_half_an_emoji_is_refused(tenant: str) -> None:
    """A tenant written with a lone surrogate escape ("\\ud800") opened a tenant of its own,
    one ``--tenant`` and ``MEMCORE_TENANT`` refuse to name; the map is refused instead."""
    with pytest.raises(ConfigError, match="not valid") as refused:
        TokenMap.parse(json.dumps({"bob": B, tenant: A}), source="t")
    assert refused.value.field == "entry 2"
    assert A not in json.dumps(refused.value.to_dict())


def test_a_token_with_whitespace_is_refused() -> None:
    with pytest.raises(ConfigError, match="whitespace"):
        TokenMap.parse(json.dumps({"alice": A + " " + A}), source="t")


@pytest.mark.parametrize(
    "odd", ["\u043f\u0430\u0440\u043e\u043b\u044c", "caf\u00e9", "\u200b", "\x00", "\x7f"]
)
def test_a_token_no_http_header_can_carry_is_refused(odd: str) -> None:
    """An Authorization header is read as Latin-1 text, so a token with a character outside
    printable ASCII never matched what a client sent for it (or a client could not send
    it): the server started and answered that token 401 for ever."""
    with pytest.raises(ConfigError, match="printable ASCII") as refused:
        TokenMap.parse(json.dumps({"alice": A + odd}), source="t")
    assert A not in json.dumps(refused.value.to_dict())


def test_a_token_of_printable_ascii_is_taken() -> None:
    punctuated = "!#$%&'()*+,-./:;<=>?@[]^_`{|}~" + A
    assert TokenMap.parse(json.dumps({"alice": punctuated}), source="t").tenant_for(punctuated)


def test_file_then_file_variable_then_inline_variable(tmp_path) -> None:
    path = tmp_path / "tokens.json"
    path.write_text(json.dumps({"alice": A}))
    path.chmod(0o600)
    inline = json.dumps({"bob": B})
    assert load_tokens(None, {}) is None
    assert load_tokens(None, {TOKENS_ENV: inline}).tenant_for(B) == "bob"
    env = {TOKENS_ENV: inline, TOKENS_FILE_ENV: str(path)}
    assert load_tokens(None, env).tenant_for(A) == "alice"
    assert load_tokens(str(path), {TOKENS_ENV: inline}).tenant_for(B) is None
    with pytest.raises(ConfigError, match="cannot read"):
        load_tokens(str(tmp_path / "missing.json"), {})


@pytest.mark.skipif(os.name != "posix", reason="file modes")
def test_a_token_file_other_users_may_open_says_which_command_fixes_it(tmp_path) -> None:
    """The line read "...; chmod 600 it in /path/tokens.json", the file's name added after
    the advice as if chmod were to be run in it."""
    path = tmp_path / "my tokens.json"
    path.write_text(json.dumps({"alice": A}))
    path.chmod(0o640)
    with pytest.raises(ConfigError) as refused:
        load_tokens(str(path), {})
    message = str(refused.value)
    assert message == (
        f"other users can read or change the token file (mode 0640); run chmod 600 '{path}'"
    )
    assert A not in message
