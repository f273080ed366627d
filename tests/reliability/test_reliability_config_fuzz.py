"""Config files with arbitrary bytes, wrong types, unknown keys and a UTF-8 BOM.

Every loader (the core parser, the Hermes plugin's ``tablestore_memory.json``, the CLI's
``--config``) answers with a config or a ``ConfigError`` that names the file; never another
exception, never a traceback, never a hang.
"""

from __future__ import annotations

import json
import math
from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memcore.config import CONFIG_KEYS, MemcoreConfig, dump_config, parse_config
from memcore.errors import ConfigError

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=50),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)
wrong_typed = st.dictionaries(
    st.one_of(st.sampled_from(CONFIG_KEYS), st.text(max_size=20)), json_values, max_size=8
)

SPECIAL_DOCUMENTS = [
    b"",
    b"\xef\xbb\xbf",
    b"\xef\xbb\xbf{}",
    b'\xef\xbb\xbf{"top_k": 7}',
    b"\xff\xfe{\x00}\x00",
    b"null",
    b"[]",
    b'"text"',
    b'{"timeout": NaN}',
    b'{"timeout": Infinity}',
    b'{"timeout": 1e400}',
    b'{"top_k": ' + b"9" * 5000 + b"}",
    b"[" * 100_000 + b"]" * 100_000,
    b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
    b'{"top_k": "5"}',
    b'{"enable_rerank": "false"}',
    b'{"enable_rerank": 0}',
    b'{"tenant_id": "*"}',
    b'{"tenant_id": "a/b"}',
    b'{"app_id": "\\u0000"}',
    b'{"memory_store_name": "../../etc"}',
    b'{"backend": "tablestore", "backend": "nope"}',
    b'{"unknown_key": 1}',
    b'{"local_path": 5}',
    b"\x00\x01\x02",
    b"\xed\xa0\x80",
]


def _documents():
    return st.one_of(
        st.sampled_from(SPECIAL_DOCUMENTS),
        st.binary(max_size=300),
        wrong_typed.map(lambda d: json.dumps(d).encode()),
        wrong_typed.map(lambda d: b"\xef\xbb\xbf" + json.dumps(d).encode()),
        st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")),
    )


def _check_config(cfg: MemcoreConfig) -> None:
    """An accepted config satisfies the model's invariants."""
    assert isinstance(cfg, MemcoreConfig)
    assert 1 <= cfg.top_k <= 50
    assert math.isfinite(cfg.timeout) and cfg.timeout > 0
    assert cfg.backend in (None, "local", "tablestore")
    assert isinstance(cfg.enable_rerank, bool)
    for seg in (cfg.app_id, cfg.tenant_id):
        assert seg is None or ("*" not in seg and "/" not in seg)
    # What we accept we can write back and read again unchanged.
    assert parse_config(dump_config(cfg).encode()) == cfg


def _record(scenario, name, check, stats: Counter, *, special: bool = True, **notes: str) -> None:
    """Run ``check`` (then each of SPECIAL_DOCUMENTS, when ``special``) as one report row;
    each keyword ``note=key`` records ``stats[key]`` under that note."""
    with scenario(name, "arbitrary bytes, wrong types, unknown keys, BOM") as s:
        check()
        for raw in SPECIAL_DOCUMENTS if special else ():
            check.hypothesis.inner_test(raw)
        s.counts(
            issued=stats["cases"], acknowledged=stats["accepted"], stored=0, lost=0, duplicated=0
        )
        s.note(**{note: stats[key] for note, key in notes.items()})


def test_reliability_config_core_parser_total(scenario, pick):
    stats: Counter = Counter()

    @settings(max_examples=int(pick(400, 2000, 1000)), deadline=None, database=None)
    @given(_documents())
    def check(raw):
        stats["cases"] += 1
        try:
            cfg = parse_config(raw, source="tablestore_memory.json")
        except ConfigError as exc:
            stats["config_errors"] += 1
            assert "tablestore_memory.json" in str(exc)
            return
        stats["accepted"] += 1
        _check_config(cfg)

    _record(scenario, "bad config: core parser", check, stats, config_errors="config_errors")
    assert stats["config_errors"] > 0 and stats["accepted"] > 0


def test_reliability_config_bom_is_the_same_config():
    plain = b'{"top_k": 9, "tenant_id": "alice", "backend": "local"}'
    assert parse_config(b"\xef\xbb\xbf" + plain) == parse_config(plain)


def test_reliability_config_hermes_home_loader_total(tmp_path, scenario, pick):
    from memcore_hermes.config.home import HermesHome

    home = HermesHome(tmp_path / "hermes")
    home.root.mkdir()
    stats: Counter = Counter()

    @settings(
        max_examples=int(pick(200, 800, 400)),
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(_documents())
    def check(raw):
        stats["cases"] += 1
        home.config_file.write_bytes(raw)
        try:
            cfg = home.load_config()
        except ConfigError as exc:
            stats["config_errors"] += 1
            assert str(home.config_file) in str(exc)
        else:
            stats["accepted"] += 1
            _check_config(cfg)

    _record(
        scenario,
        "bad config: Hermes tablestore_memory.json",
        check,
        stats,
        config_errors="config_errors",
    )


def test_reliability_config_hermes_peek_backend_total(tmp_path):
    """``is_available()`` reads the backend cheaply; odd files must not raise into Hermes."""
    from memcore_hermes.config.home import HermesHome

    home = HermesHome(tmp_path / "hermes")
    home.root.mkdir()
    for raw in [d for d in SPECIAL_DOCUMENTS if len(d) < 10_000]:  # deep nesting: see below
        home.config_file.write_bytes(raw)
        assert home.peek_backend() in (None, "local", "tablestore", "nope")


def test_reliability_config_hermes_is_available_survives_deep_nesting(tmp_path, monkeypatch):
    from memcore_hermes import MemcoreMemoryProvider

    home = tmp_path / "hermes"
    home.mkdir()
    (home / "tablestore_memory.json").write_bytes(b'{"a":' * 50_000 + b"1" + b"}" * 50_000)
    monkeypatch.setenv("HERMES_HOME", str(home))
    assert MemcoreMemoryProvider(environ={}).is_available() is False


def test_reliability_config_cli_one_line_errors(tmp_path, scenario, pick):
    """``memcore --config F list`` with a broken file: exit 2 and exactly one stderr line."""
    from typer.testing import CliRunner

    from memcore_cli.app import app

    runner = CliRunner()
    cfg = tmp_path / "config.json"
    env = {"MEMCORE_HOME": str(tmp_path / "home"), "MEMCORE_BACKEND": ""}
    stats: Counter = Counter()

    @settings(
        max_examples=int(pick(60, 200, 120)),
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(_documents())
    def check(raw):
        stats["cases"] += 1
        cfg.write_bytes(raw)
        result = runner.invoke(app, ["--config", str(cfg), "list"], env=env)
        assert "Traceback" not in result.output
        assert result.exception is None or isinstance(result.exception, SystemExit), repr(
            result.exception
        )
        try:
            parse_config(raw)
        except ConfigError:
            stats["exit_2"] += 1
            assert result.exit_code == 2, (raw, result.output)
            lines = [line for line in result.stderr.splitlines() if line.strip()]
            assert len(lines) == 1, lines
        else:
            stats["accepted"] += 1
            assert result.exit_code in (0, 2, 4, 5), (raw, result.exit_code, result.output)

    _record(
        scenario, "bad config: CLI --config", check, stats, special=False, exit_2_one_line="exit_2"
    )
