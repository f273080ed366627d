"""The configuration model: strict parsing, clear errors, and cattrs round trips."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memcore.config import (
    CONFIG_KEYS,
    MemcoreConfig,
    config_from_mapping,
    config_to_dict,
    dump_config,
    merge_config,
    parse_config,
)
from memcore.errors import ConfigError


def test_defaults_match_the_original_plugin() -> None:
    cfg = parse_config(b"")
    assert cfg.memory_store_name == "hermes_mem"
    assert cfg.app_id == "hermes"
    assert cfg.enable_rerank is True
    assert cfg.auto_create_store is True
    assert cfg.timeout == 30
    assert cfg.region == "cn-beijing"


def test_bom_is_accepted() -> None:
    assert parse_config(b'\xef\xbb\xbf{"tenant_id": "t1"}').tenant_id == "t1"


@pytest.mark.parametrize("seconds", [0, -1, 601])
def test_a_timeout_out_of_range_is_refused_in_words_that_fit_it(seconds: int) -> None:
    """The refusal of 0 said "from 0 to 600", a range holding the value it refused."""
    with pytest.raises(ConfigError, match="above 0, at most 600"):
        parse_config(json.dumps({"timeout": seconds}).encode())


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('{"timeout": "30"}', "timeout"),
        ('{"enable_rerank": "false"}', "enable_rerank"),
        ('{"memory_store_name": "bad-name"}', "memory_store_name"),
        ('{"backend": "redis"}', "backend"),
        ('{"tenannt_id": "x"}', "tenannt_id"),
        ('{"app_id": "*"}', "app_id"),
        ('{"top_k": 0}', "top_k"),
        ('{"endpoint": "not a url"}', "endpoint"),
        # Passed the pattern, then failed in the HTTP client as "a non-object JSON body".
        ('{"endpoint": "https://u:p@"}', "endpoint"),
        ('{"endpoint": "https://:99999"}', "endpoint"),
        ('{"endpoint": "https://host:0"}', "endpoint"),
        ('{"endpoint": "https://host:http"}', "endpoint"),
        ('{"extract_instructions": "half an emoji \\ud83d"}', "extract_instructions"),
        (json.dumps({"extract_instructions": "x" * 4097}), "extract_instructions"),
        # Half an emoji (or a stray byte) no host can print or store: every text key.
        ('{"tenant_id": "al\\ud800ce"}', "tenant_id"),
        ('{"app_id": "\\udcff"}', "app_id"),
        ('{"description": "memories \\ud83d"}', "description"),
        ('{"instance_name": "\\udc80"}', "instance_name"),
    ],
)
def test_bad_values_name_key_and_file(text: str, key: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(text, source="/x/tablestore_memory.json")
    assert err.value.field == key
    assert "/x/tablestore_memory.json" in str(err.value)
    assert "u:p" not in str(err.value)


@pytest.mark.parametrize(
    "raw", [b"\xff\xfe", b"[1, 2]", b"{not json", b'{"timeout": NaN}', b"null"]
)
def test_garbage_is_a_config_error(raw: bytes) -> None:
    with pytest.raises(ConfigError):
        parse_config(raw, source="cfg.json")


@given(st.binary(max_size=200))
def test_arbitrary_bytes_never_crash(raw: bytes) -> None:
    try:
        parse_config(raw, source="cfg.json")
    except ConfigError:
        pass


configs = st.builds(
    MemcoreConfig,
    memory_store_name=st.from_regex(r"[A-Za-z0-9_]{1,32}", fullmatch=True),
    tenant_id=st.one_of(st.none(), st.from_regex(r"[a-z0-9_]{1,20}", fullmatch=True)),
    enable_rerank=st.booleans(),
    auto_create_store=st.booleans(),
    timeout=st.floats(min_value=0.5, max_value=600),
    backend=st.sampled_from([None, "local", "tablestore"]),
    top_k=st.integers(1, 50),
)


@given(configs)
def test_config_round_trips_through_cattrs(cfg: MemcoreConfig) -> None:
    assert parse_config(dump_config(cfg)) == cfg
    assert set(config_to_dict(cfg)) == set(CONFIG_KEYS)


def test_merge_validates() -> None:
    cfg = merge_config(MemcoreConfig(), {"tenant_id": "t9"})
    assert cfg.tenant_id == "t9"
    with pytest.raises(ConfigError):
        merge_config(cfg, {"timeout": -1})


def test_dump_has_no_secrets_or_nulls() -> None:
    data = json.loads(dump_config(MemcoreConfig()))
    assert "endpoint" not in data
    assert not any("secret" in k or k.endswith("_sk") for k in data)


@pytest.mark.parametrize(
    ("changes", "key"),
    [
        ({"top_k": 0}, "top_k"),
        ({"tenant_id": ""}, "tenant_id"),
        ({"memory_store_name": "a b"}, "memory_store_name"),
        ({"embedder": "bogus"}, "embedder"),
        ({"app_id": 123}, "app_id"),
        ({"timeout": "5"}, "timeout"),
        ({"enable_rerank": "x"}, "enable_rerank"),
        ({"top_k": True}, "top_k"),
        ({"local_path": 3}, "local_path"),
        ({"local_path": "/data/a\x00b.db"}, "local_path"),
        ({"local_path": "/data/\ud800.db"}, "local_path"),
    ],
)
def test_a_config_built_in_code_names_the_bad_key(changes: dict[str, Any], key: str) -> None:
    """It raised a private ValueError, an AttributeError or a TypeError, by the value."""
    with pytest.raises(ConfigError) as built:
        MemcoreConfig(**changes)
    assert built.value.field == key
    with pytest.raises(ConfigError) as changed:
        MemcoreConfig().with_changes(**changes)
    assert changed.value.field == key
    with pytest.raises(ConfigError, match=f"key '{key}'") as read:
        config_from_mapping(changes)
    assert str(read.value).count("(key") == 1


def test_an_unknown_key_in_code_is_a_config_error_naming_it() -> None:
    """The README: a wrong key "in MemcoreConfig(...) itself" raises ConfigError naming the
    key; a misspelt one raised the TypeError of any call, which ``except ConfigError`` missed."""
    with pytest.raises(ConfigError, match="embedder") as built:
        MemcoreConfig(embeder="multilingual")  # type: ignore[call-arg]
    assert built.value.field == "embeder"
    assert isinstance(built.value, TypeError)  # what it was, for code that caught that
    with pytest.raises(ConfigError) as changed:
        MemcoreConfig().with_changes(colour="blue")
    assert changed.value.field == "colour"
    assert MemcoreConfig(embedder="none").embedder == "none"


def test_repr_never_shows_an_endpoints_password() -> None:
    """A hand-written endpoint with ``user:password@`` loads, and is used as written; the
    config's repr (in a traceback's locals, a log line, a host's own debug print) hides it."""
    cfg = parse_config(
        json.dumps({"endpoint": "https://LTAIurlUser:UrlPasswordCanary@127.0.0.1:9"})
    )
    assert cfg.endpoint == "https://LTAIurlUser:UrlPasswordCanary@127.0.0.1:9"
    for shown in (repr(cfg), str(cfg), repr([cfg])):
        assert "UrlPasswordCanary" not in shown and "LTAIurlUser" not in shown, shown
        assert "endpoint='https://***@127.0.0.1:9'" in shown, shown
    assert "endpoint=None" in repr(MemcoreConfig())


def test_instance_facts_repr_never_shows_an_endpoints_password() -> None:
    from memcore.ports import InstanceFacts

    facts = InstanceFacts("inst", "https://user:UrlPasswordCanary@127.0.0.1:9", "cn-beijing")
    assert "UrlPasswordCanary" not in repr(facts), repr(facts)
    assert "endpoint='https://***@127.0.0.1:9'" in repr(facts)


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        ("https://u:p@host.example.com:9/", "https://host.example.com:9/"),
        ("http://a@b@host/x?y=@z", "http://host/x?y=@z"),
        ("https://host.example.com", "https://host.example.com"),
        (None, None),
    ],
)
def test_strip_userinfo(given: Any, kept: Any) -> None:
    from memcore.config import strip_userinfo

    assert strip_userinfo(given) == kept


@pytest.mark.parametrize("key", ["app_id", "tenant_id"])
@pytest.mark.parametrize("blank", ["", "   "])
def test_a_blank_scope_key_is_named_as_blank(key: str, blank: str) -> None:
    """An empty tenant_id was told it "must be a plain name without '*', '/' or control
    codes", which it is; the error says what is wrong with it."""
    with pytest.raises(ConfigError) as bad:
        MemcoreConfig(**{key: blank})
    assert bad.value.field == key
    assert "empty" in bad.value.message and "'*'" not in bad.value.message
