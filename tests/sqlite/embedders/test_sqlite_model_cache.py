"""The optimised model is saved once per user and reused; a bad or unwritable cache never
breaks embedding; every path gives the vectors the embedder gave before the cache existed."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memcore_sqlite.embedders import missing_onnx_requirements

pytestmark = pytest.mark.skipif(
    bool(missing_onnx_requirements()), reason="the semantic extra is not installed"
)

_DATA = Path(__file__).parents[2] / "data"
#: Vectors computed by the embedder before the model cache, the parallel batches and the int8
#: products existed (a text past 256 tokens, Chinese, a duplicate and two-letter texts among
#: them): what ``quantize=False`` must still give.
FLOAT_REFERENCE = json.loads((_DATA / "minilm_reference_vectors.json").read_text("utf-8"))
#: The same texts through the default embedder (int8 products, fused attention), when it was
#: introduced.
REFERENCE = json.loads((_DATA / "minilm_qint8_fused_reference_vectors.json").read_text("utf-8"))


@pytest.fixture
def sessions(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The model file of every onnxruntime session created (the real sessions, recorded)."""
    import onnxruntime  # type: ignore[import-untyped]

    opened: list[str] = []
    real = onnxruntime.InferenceSession

    def recording(path: str, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(onnxruntime, "InferenceSession", recording)
    return opened


def _embedder(cache: object, **kw: Any) -> Any:
    from memcore_sqlite.embedders.onnx import OnnxEmbedder

    return OnnxEmbedder(cache_dir=cache, **kw)  # type: ignore[arg-type]


_UNCACHED: dict[str, Any] = {}


def _assert_reference_vectors(embedder: Any) -> None:
    """The reference's vectors under the onnxruntime that made them; under another, whose
    kernels round a little differently, vectors close to them and equal to the plain path's."""
    import onnxruntime

    reference = next(r for r in (REFERENCE, FLOAT_REFERENCE) if r["model"] == embedder.name)
    got = np.asarray(embedder.embed(reference["texts"]))
    want = np.asarray(reference["vectors"])
    if reference["onnxruntime"] == onnxruntime.__version__:
        assert np.abs(got - want).max() < 1e-6
        return
    assert (got * want).sum(axis=1).min() > 0.99
    if embedder.name not in _UNCACHED:
        plain = _embedder("off", quantize=embedder.quantize, threads=1)
        _UNCACHED[embedder.name] = np.asarray([plain.embed([t])[0] for t in reference["texts"]])
    assert np.abs(got - _UNCACHED[embedder.name]).max() < 1e-6


def test_int8_products_stay_close_to_the_float_vectors_under_their_own_name(
    tmp_path: Path,
) -> None:
    fast = _embedder(tmp_path / "models")
    plain = _embedder(tmp_path / "models", quantize=False)
    assert fast.name != plain.name  # stored vectors of one are never compared with the other's
    _assert_reference_vectors(fast)
    _assert_reference_vectors(plain)  # the float products are still there, unchanged
    got = np.asarray(fast.embed(FLOAT_REFERENCE["texts"]))
    cosines = (got * np.asarray(FLOAT_REFERENCE["vectors"])).sum(axis=1)
    assert cosines.min() > 0.95 and float(np.median(cosines)) > 0.985
    assert len(_entries(tmp_path / "models")) == 2  # one saved graph per recipe


def test_the_environment_turns_the_int8_products_off(monkeypatch: pytest.MonkeyPatch) -> None:
    from memcore_sqlite.embedders.onnx import MODEL_NAME, QUANTIZED_MODEL_NAME

    monkeypatch.setenv("MEMCORE_ONNX_QUANTIZE", "0")
    assert _embedder("off").name == MODEL_NAME
    monkeypatch.setenv("MEMCORE_ONNX_QUANTIZE", "1")
    assert _embedder("off").name == QUANTIZED_MODEL_NAME


def _entries(cache: Path) -> list[Path]:
    return sorted(p for p in cache.iterdir() if not p.name.startswith("."))


def test_the_first_load_saves_the_model_privately_and_later_loads_reuse_it(
    tmp_path: Path, sessions: list[str]
) -> None:
    cache = tmp_path / "cache" / "models"
    first = _embedder(cache)
    _assert_reference_vectors(first)
    [entry] = _entries(cache)
    assert sorted(p.name for p in entry.iterdir()) == ["manifest.json", "model.data", "model.onnx"]
    for folder in (cache, entry):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    for file in entry.iterdir():
        assert stat.S_IMODE(file.stat().st_mode) == 0o600
    written = {p.name: p.stat().st_mtime_ns for p in entry.iterdir()}

    second = _embedder(cache)
    _assert_reference_vectors(second)
    assert sessions[-1] == str(entry / "model.onnx")  # loaded from the cache, not rebuilt
    assert _entries(cache) == [entry]
    assert {p.name: p.stat().st_mtime_ns for p in entry.iterdir()} == written


@pytest.mark.parametrize(
    "damage",
    ["cut-off weights", "garbage graph", "no manifest", "zeroed weights", "flipped weights"],
)
def test_a_damaged_entry_falls_back_to_the_packaged_model_and_is_rebuilt(
    tmp_path: Path, sessions: list[str], damage: str
) -> None:
    cache = tmp_path / "models"
    _embedder(cache).warm_up()
    [entry] = _entries(cache)
    if damage == "cut-off weights":
        with (entry / "model.data").open("r+b") as f:
            f.truncate(1000)
    elif damage == "garbage graph":
        size = (entry / "model.onnx").stat().st_size
        (entry / "model.onnx").write_bytes(b"\x07" * size)  # the size still matches
    elif damage == "zeroed weights":  # as a crash can leave a file: its size, no content
        size = (entry / "model.data").stat().st_size
        (entry / "model.data").write_bytes(bytes(size))
    elif damage == "flipped weights":  # a few rows of the word embeddings, same size
        with (entry / "model.data").open("r+b") as f:
            f.seek(1 << 20)
            block = f.read(4096)
            f.seek(1 << 20)
            f.write(bytes(b ^ 0xFF for b in block))
    else:
        (entry / "manifest.json").unlink()

    again = _embedder(cache)
    _assert_reference_vectors(again)
    assert sessions[-1] != str(entry / "model.onnx")  # built from the packaged model
    [rebuilt] = _entries(cache)
    assert (rebuilt / "manifest.json").is_file()
    _embedder(cache).warm_up()
    assert sessions[-1] == str(rebuilt / "model.onnx")


def test_an_unwritable_cache_is_not_an_error(tmp_path: Path, sessions: list[str]) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    _assert_reference_vectors(_embedder(blocker / "models"))  # mkdir fails, even as root
    assert blocker.read_text(encoding="utf-8") == "not a folder"
    assert not (tmp_path / "models").exists()


def test_a_cache_in_an_unknown_users_home_is_not_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``MEMCORE_MODEL_CACHE=~someone/models``, for a user this system does not know, made
    every load fail with Python's RuntimeError, which a search reported as "the embedder
    failed" (exit 5); it is a cache that cannot be written, and the model is built unsaved."""
    monkeypatch.setenv("MEMCORE_MODEL_CACHE", "~no-such-user-here/models")
    monkeypatch.chdir(tmp_path)
    _assert_reference_vectors(_embedder(None))
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("whose", ["writable by all", "another user's"])
def test_a_cache_folder_others_can_write_is_not_trusted(
    tmp_path: Path, sessions: list[str], whose: str
) -> None:
    """``MEMCORE_MODEL_CACHE`` may name a folder in a shared place: if another user made it
    (or anyone can write it), an entry in it may be theirs, a model that gives the vectors
    they choose. Such a folder is used as a cache that cannot be written: not at all."""
    cache = tmp_path / "shared" / "models"
    _embedder(cache).warm_up()
    [entry] = _entries(cache)
    if whose == "writable by all":
        cache.chmod(0o777)
    else:
        if os.geteuid() != 0:
            pytest.skip("chown needs root")
        os.chown(cache, 65534, 65534)
    written = sorted(p.name for p in cache.iterdir())
    _assert_reference_vectors(_embedder(cache))
    assert sessions[-1] != str(entry / "model.onnx")  # not loaded from there
    assert sorted(p.name for p in cache.iterdir()) == written  # nor written to


def test_the_cache_can_be_turned_off_or_moved_by_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMCORE_MODEL_CACHE", "off")
    monkeypatch.chdir(tmp_path)
    _assert_reference_vectors(_embedder(None))
    assert os.listdir(tmp_path) == []
    monkeypatch.setenv("MEMCORE_MODEL_CACHE", str(tmp_path / "elsewhere"))
    _embedder(None).warm_up()
    assert len(_entries(tmp_path / "elsewhere")) == 1


def test_an_outdated_entry_of_the_same_model_is_removed_and_others_are_kept(
    tmp_path: Path,
) -> None:
    from memcore_sqlite.embedders.onnx import _default_model
    from memcore_sqlite.embedders.quantize import EARLIER, RECIPE

    cache = tmp_path / "models"
    cache.mkdir()
    source = str(_default_model().resolve())
    for name, owner, recipe in (
        ("old-onnxruntime", source, RECIPE),
        ("earlier-recipe", source, EARLIER[0]),  # what the previous release loaded
        ("float-products", source, ""),  # what quantize=False loads: not outdated
        ("another-model", "/elsewhere/model.onnx", RECIPE),
    ):
        (cache / name).mkdir()
        manifest = {"source": owner, "recipe": recipe}
        (cache / name / "manifest.json").write_text(json.dumps(manifest), "utf-8")
    _embedder(cache).warm_up()
    names = {p.name for p in _entries(cache)}
    assert not {"old-onnxruntime", "earlier-recipe"} & names
    assert {"another-model", "float-products"} <= names
    assert len(names) == 3


def test_parallel_batches_return_every_vector_in_input_order(tmp_path: Path) -> None:
    """Small batches on two threads: batched by token count, put back in the caller's order."""
    embedder = _embedder(tmp_path / "models", batch_size=3, threads=2)
    _assert_reference_vectors(embedder)
    together = np.asarray(embedder.embed(REFERENCE["texts"]))
    one_by_one = [embedder.embed([t])[0] for t in REFERENCE["texts"]]
    assert np.abs(np.asarray(one_by_one) - together).max() < 1e-6
    assert embedder.embed([]) == []


def _install(root: Path, content: bytes | None = None) -> Path:
    """The packaged model as another virtualenv holds it (same file and folder name)."""
    from memcore_sqlite.embedders.onnx import _default_model

    packaged = _default_model()
    target = root / "site-packages" / packaged.parent.name / packaged.name
    target.parent.mkdir(parents=True)
    target.write_bytes(packaged.read_bytes() if content is None else content)
    return target


def _use_model(monkeypatch: pytest.MonkeyPatch, model: Path) -> None:
    from memcore_sqlite.embedders import onnx

    monkeypatch.setattr(onnx, "_default_model", lambda: model)


def test_virtualenvs_holding_the_same_model_share_one_entry(
    tmp_path: Path, sessions: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keyed by path, every virtualenv had kept its own identical copy."""
    cache = tmp_path / "models"
    _use_model(monkeypatch, _install(tmp_path / "venv-a"))
    _embedder(cache).warm_up()
    [entry] = _entries(cache)
    _use_model(monkeypatch, _install(tmp_path / "venv-b"))
    _assert_reference_vectors(_embedder(cache))
    assert sessions[-1] == str(entry / "model.onnx")  # venv-b loaded venv-a's entry
    assert _entries(cache) == [entry]


def test_a_new_content_of_the_model_replaces_the_old_entry_wherever_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import onnx

    from memcore_sqlite.embedders.onnx import _default_model

    cache = tmp_path / "models"
    _use_model(monkeypatch, _install(tmp_path / "venv-a"))
    _embedder(cache).warm_up()
    [old] = _entries(cache)
    newer = onnx.load(str(_default_model()))
    newer.doc_string = "a later release of the same model"
    _use_model(monkeypatch, _install(tmp_path / "venv-b", newer.SerializeToString()))
    _embedder(cache).warm_up()
    [entry] = _entries(cache)
    assert entry != old
    manifest = json.loads((entry / "manifest.json").read_text("utf-8"))
    assert manifest["model"].endswith("/model.onnx")


def test_an_entry_of_the_first_layout_keyed_by_path_is_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memcore_sqlite.embedders.quantize import RECIPE

    model = _install(tmp_path / "venv-a")
    _use_model(monkeypatch, model)
    cache = tmp_path / "models"
    for venv in ("venv-x", "venv-y"):  # copies the processes of other virtualenvs left
        old = cache / f"path-keyed-{venv}"
        old.mkdir(parents=True)
        source = str(tmp_path / venv / "site-packages" / model.parent.name / model.name)
        manifest = {"source": source, "recipe": RECIPE}
        (old / "manifest.json").write_text(json.dumps(manifest), "utf-8")
    _embedder(cache).warm_up()
    [entry] = _entries(cache)
    assert not entry.name.startswith("path-keyed")


_LOAD = """
import sys
from memcore_sqlite.embedders.onnx import OnnxEmbedder
print(len(OnnxEmbedder(cache_dir=sys.argv[1]).embed(["two processes at once"])[0]))
"""


def test_two_processes_writing_at_once_leave_one_intact_entry(tmp_path: Path) -> None:
    import subprocess
    import sys

    cache = tmp_path / "models"
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", _LOAD, str(cache)], stdout=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    outputs = [run.communicate(timeout=240)[0].strip() for run in runs]
    assert [run.returncode for run in runs] == [0, 0]
    assert outputs == ["384", "384"]
    [entry] = _entries(cache)
    assert sorted(p.name for p in entry.iterdir()) == ["manifest.json", "model.data", "model.onnx"]
    assert not [p for p in cache.iterdir() if p.name.startswith(".new-")]
    _assert_reference_vectors(_embedder(cache))
