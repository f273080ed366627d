"""The ONNX embedder's runtime settings: defaults for a process that also scans, overrides."""

from __future__ import annotations

from typing import Any

import pytest

from memcore.errors import ConfigError
from memcore_sqlite.embedders import missing_onnx_requirements

pytestmark = pytest.mark.skipif(
    bool(missing_onnx_requirements()), reason="the semantic extra is not installed"
)


def _embedder(**kw: object) -> Any:
    from memcore_sqlite.embedders.onnx import OnnxEmbedder

    return OnnxEmbedder(**kw)  # type: ignore[arg-type]


def _options(**kw: object) -> Any:
    import onnxruntime  # type: ignore[import-untyped]

    return _embedder(**kw)._session_options(onnxruntime)


def test_threads_do_not_spin_and_the_arena_is_on_by_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("MEMCORE_ONNX_THREADS", "MEMCORE_ONNX_SPINNING", "MEMCORE_ONNX_ARENA"):
        monkeypatch.delenv(name, raising=False)
    options = _options()
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    assert options.enable_cpu_mem_arena is True
    # Each run on one thread; a bulk call runs up to two batches at once instead.
    assert options.intra_op_num_threads == 1
    assert 1 <= _embedder().workers <= 2


def test_arguments_and_environment_override_the_defaults(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MEMCORE_ONNX_THREADS", "3")
    monkeypatch.setenv("MEMCORE_ONNX_SPINNING", "1")
    monkeypatch.setenv("MEMCORE_ONNX_ARENA", "0")
    assert _options().enable_cpu_mem_arena is False
    options = _options(arena=True)
    assert _embedder().workers == 3
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "1"
    assert options.enable_cpu_mem_arena is True
    assert _embedder(threads=1, spinning=False).workers == 1


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("MEMCORE_ONNX_THREADS", "two"),
        ("MEMCORE_ONNX_THREADS", "0"),
        ("MEMCORE_ONNX_SPINNING", "maybe"),
    ],
)
def test_a_bad_setting_is_a_config_error(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError) as err:
        _options()
    assert err.value.field == name


def test_batches_hold_few_long_texts_and_many_short_ones() -> None:
    from memcore_sqlite.embedders.onnx import TOKENS_PER_BATCH, _batches

    lengths = [8] * 100 + [256] * 20 + [400]
    batches = _batches(list(range(len(lengths))), lengths, 32)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    for batch in batches:
        width = max(lengths[i] for i in batch)
        assert len(batch) <= 32
        assert len(batch) == 1 or len(batch) * width <= TOKENS_PER_BATCH
    assert [len(b) for b in batches[:5]] == [32, 32, 32, 8, 8]
    assert batches[-1] == [120]  # longer than a whole batch: alone


@pytest.mark.parametrize("arena", [True, False])
def test_vectors_do_not_depend_on_the_arena_or_the_batching(arena: bool) -> None:
    texts = ["short one", "a much longer text about the weather " * 30, "third"] * 4
    one_by_one = [_embedder(arena=False).embed([t])[0] for t in texts[:3]]
    together = _embedder(arena=arena, batch_size=5).embed(texts)
    for i, vector in enumerate(together):
        assert vector == pytest.approx(one_by_one[i % 3], abs=1e-6)
