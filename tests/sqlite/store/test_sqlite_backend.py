"""open_backend: where the file goes and which embedder is chosen."""

from __future__ import annotations

from pathlib import Path

import platformdirs
import pytest

from memcore.config import MemcoreConfig
from memcore.discovery import open_store
from memcore.errors import ConfigError, InvalidInput
from memcore.scope import Scope
from memcore.testing import HashingEmbedder
from memcore_sqlite import SqliteMemoryStore, default_path, open_backend
from memcore_sqlite.embedders import missing_onnx_requirements


def test_path_option_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMCORE_HOME", str(tmp_path / "home"))
    config = MemcoreConfig(local_path=str(tmp_path / "config.db"), embedder="none")
    with open_backend(config, path=tmp_path / "option.db") as store:
        assert store.path == str(tmp_path / "option.db")


def test_config_local_path_then_memcore_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMCORE_HOME", str(tmp_path / "home"))
    with open_backend(MemcoreConfig(local_path=str(tmp_path / "c.db"), embedder="none")) as store:
        assert store.path == str(tmp_path / "c.db")
    with open_backend(MemcoreConfig(embedder="none")) as store:
        assert store.path == str(tmp_path / "home" / "memcore.db")
        assert Path(store.path).exists()


@pytest.mark.parametrize(
    ("local_path", "path", "advice"),
    [
        (None, None, "set MEMCORE_HOME to a writable folder"),
        ("c.db", None, "set local_path to a file in a writable folder"),
        (None, "option.db", "set MEMCORE_HOME to a writable folder"),
    ],
)
def test_a_folder_that_cannot_be_written_advises_what_placed_the_file(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    local_path: str | None,
    path: str | None,
    advice: str,
) -> None:
    from memcore.errors import PermissionDenied
    from memcore_sqlite.storage import file_modes

    monkeypatch.setenv("MEMCORE_HOME", str(tmp_path))
    monkeypatch.setattr(file_modes, "writable", lambda _path: False)
    config = MemcoreConfig(
        local_path=str(tmp_path / local_path) if local_path else None, embedder="none"
    )
    options = {"path": tmp_path / path} if path else {}
    with pytest.raises(PermissionDenied) as err:
        open_backend(config, **options)
    assert err.value.message.endswith(f"is not writable ({advice})")
    with pytest.raises(PermissionDenied) as err:
        open_backend(config, **options, location_advice="move it")
    assert err.value.message.endswith("is not writable (move it)")


def test_default_is_the_platform_user_data_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMCORE_HOME", raising=False)
    expected = Path(platformdirs.user_data_dir("memcore", appauthor=False)) / "memcore.db"
    assert default_path() == expected


def test_the_library_opens_the_file_the_cli_opens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The library kept spaces around ``MEMCORE_HOME`` (another folder than ``memcore``'s,
    or one under the working directory) and read a relative ``local_path`` from the
    working directory where ``memcore`` reads it under the home: the two opened different
    files for the same settings. A path the caller passes is still read as Python reads it."""
    from memcore_sqlite.backend import resolve_path

    home = tmp_path / "home"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MEMCORE_HOME", f" {home} ")
    assert default_path() == home / "memcore.db"
    assert resolve_path(MemcoreConfig(local_path="mem.db")) == home / "mem.db"
    assert resolve_path(MemcoreConfig(), "mine.db") == Path("mine.db")


def test_embedder_none_is_lexical(tmp_path: Path) -> None:
    with open_backend(MemcoreConfig(embedder="none"), path=tmp_path / "m.db") as store:
        assert store.search_mode == "lexical"


def test_explicit_embedder_option(tmp_path: Path) -> None:
    with open_backend(
        MemcoreConfig(embedder="none"), path=tmp_path / "m.db", embedder=HashingEmbedder()
    ) as store:
        assert store.search_mode == "hybrid"


@pytest.mark.skipif(bool(missing_onnx_requirements()), reason="semantic extra not installed")
def test_auto_and_onnx_pick_the_onnx_embedder(tmp_path: Path) -> None:
    for setting in ("auto", "onnx"):
        with open_backend(
            MemcoreConfig(embedder=setting), path=tmp_path / f"{setting}.db"
        ) as store:
            assert store.search_mode == "hybrid"
            assert store.embedder is not None and store.embedder.dimension == 384


def test_onnx_with_a_directory_without_model_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        open_backend(MemcoreConfig(embedder="onnx"), path=tmp_path / "m.db", model_dir=tmp_path)
    assert info.value.field == "embedder"


def test_unknown_option_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        open_backend(MemcoreConfig(embedder="none"), path=tmp_path / "m.db", colour="blue")


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("busy_timeout", "30"),
        ("busy_timeout", None),
        ("busy_timeout", True),
        ("vector_cache_rows", "1000"),
        ("vector_cache_rows", 1.5),
        ("vector_cache_rows", -5),
        ("defer_vectors", "yes"),
        ("location_advice", 5),
        ("embedder", "onnx"),
        ("embedder", 5),
        ("model", "gpt-4o"),
        ("model_dir", 5),
    ],
)
def test_an_option_of_the_wrong_kind_is_refused_at_open_naming_it(
    tmp_path: Path, option: str, value: object
) -> None:
    with pytest.raises((InvalidInput, ConfigError)) as info:
        open_backend(MemcoreConfig(embedder="onnx"), path=tmp_path / "m.db", **{option: value})
    assert info.value.field == option
    assert option in str(info.value)


@pytest.mark.parametrize(
    "name",
    [
        "x" * 300,  # one name longer than the file system allows
        "/".join(["d"] * 3000) + "/m.db",  # a path longer than the system allows
    ],
)
def test_a_path_too_long_for_the_system_is_a_typed_error(tmp_path: Path, name: str) -> None:
    """It was a raw OSError (File name too long), a CLI "unexpected error"."""
    with pytest.raises(InvalidInput, match="too long"):
        open_backend(MemcoreConfig(embedder="none"), path=str(tmp_path / name))
    with pytest.raises(InvalidInput, match="too long"):
        SqliteMemoryStore(str(tmp_path / name))


@pytest.mark.parametrize("name", ["a\x00b.db", "\ud800.db"])
def test_a_path_no_file_can_have_is_a_typed_error(tmp_path: Path, name: str) -> None:
    """A NUL or half a UTF-16 pair, given past the config's own check (the ``path`` option,
    the store itself): it was a raw ValueError or UnicodeEncodeError."""
    with pytest.raises(ConfigError) as info:
        open_backend(MemcoreConfig(embedder="none"), path=str(tmp_path / name))
    assert info.value.field == "local_path"
    with pytest.raises(InvalidInput):
        SqliteMemoryStore(str(tmp_path / name))


def test_a_home_folder_that_does_not_exist_is_a_config_error() -> None:
    """``~nobody-here/m.db`` raised RuntimeError("Could not determine home directory.")."""
    with pytest.raises(ConfigError) as info:
        open_backend(MemcoreConfig(local_path="~no-such-user-here/m.db", embedder="none"))
    assert info.value.field == "local_path"
    assert "~no-such-user-here" in str(info.value)


def test_a_memcore_home_in_an_unknown_user_s_home_is_a_config_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``MEMCORE_HOME=~nobody/h`` with no local_path (the default file) raised the same
    RuntimeError out of ``open_backend``, and so out of ``memcore.open_store("local")``."""
    monkeypatch.setenv("MEMCORE_HOME", "~no-such-user-here/h")
    with pytest.raises(ConfigError) as info:
        open_backend(MemcoreConfig(embedder="none"))
    assert info.value.field == "MEMCORE_HOME"
    assert "~no-such-user-here/h" in str(info.value)


def test_an_option_given_as_a_numpy_number_is_taken(tmp_path: Path) -> None:
    """A number read from numpy (a dimension from an array, a row count computed) is a
    number the store works with: it is not refused as the wrong kind."""
    np = pytest.importorskip("numpy")
    scope = Scope("a", "t", "g", "r")
    store = open_backend(
        MemcoreConfig(embedder="none"),
        path=tmp_path / "m.db",
        embedder=HashingEmbedder(np.int64(16)),
        busy_timeout=np.int64(5),
        vector_cache_rows=np.int64(1_000),
    )
    try:
        store.ensure_store("m")
        store.add_text("m", scope, "Nell keeps bees on the roof", sync=True)
        hits = store.search("m", scope.pattern(), "bees", top_k=3)
        assert [h.memory.text for h in hits] == ["Nell keeps bees on the roof"]
    finally:
        store.close()


def test_entry_point_local_opens_this_store(tmp_path: Path) -> None:
    store = open_store("local", MemcoreConfig(embedder="none"), path=tmp_path / "ep.db")
    try:
        assert isinstance(store, SqliteMemoryStore)
    finally:
        store.close()


def test_open_store_takes_a_mapping_as_memory_open_does(tmp_path: Path) -> None:
    """``Memory.open(config={...})`` takes a mapping; ``open_store`` (which the README's
    upgrade script calls) raised AttributeError from inside the backend for one."""
    store = open_store("local", {"local_path": str(tmp_path / "m.db"), "embedder": "none"})
    try:
        assert isinstance(store, SqliteMemoryStore)
        assert store.path == str(tmp_path / "m.db")
    finally:
        store.close()
    with pytest.raises(ConfigError) as bad:
        open_store("local", {"local_pth": "x"})
    assert "local_pth" in str(bad.value)
    with pytest.raises(InvalidInput, match="mapping of its keys"):
        open_store("local", 5)  # type: ignore[arg-type]


def test_importing_the_package_loads_no_numeric_runtime() -> None:
    import subprocess
    import sys

    code = (
        "import sys, memcore_sqlite;"
        "print(sorted(m for m in ('numpy', 'onnxruntime', 'tokenizers') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
