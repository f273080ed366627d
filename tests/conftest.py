"""Suite-wide collection rules."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

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
