"""An SDK without the Memory Store API is refused with a message that says what to install."""

from __future__ import annotations

import pytest
from tablestore import AsyncOTSClient, OTSClient

from memcore.errors import ConfigError
from memcore_tablestore.client.driver import require_memory_api


def test_the_installed_sdk_has_the_memory_api() -> None:
    require_memory_api(OTSClient)
    require_memory_api(AsyncOTSClient)


def test_an_old_sdk_is_refused_with_the_fix() -> None:
    class OldClient:  # what tablestore < 6.4.7 offers: tables, no memory stores
        def get_row(self) -> None: ...

    with pytest.raises(ConfigError) as err:
        require_memory_api(OldClient)
    assert "tablestore >= 6.4.7" in str(err.value)
