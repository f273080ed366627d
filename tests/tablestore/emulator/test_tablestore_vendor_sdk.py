"""The vendor's own TypeScript SDK (``@tablestore/agent-storage``, its typed request classes
and its transport, which checks the answer's headers, MD5 and signature) against the emulator,
for all 22 APIs, with SignV2 and SignV4.

Runs when ``node`` is installed and ``MEMCORE_AGENT_STORAGE_SDK`` names an unpacked copy of
the package (``npm pack @tablestore/agent-storage@0.0.13`` and untar it); nothing is
downloaded at test time.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from memcore.testing import InMemoryMemoryStore
from memcore_tablestore.emulator import EmulatorServer

SDK = os.environ.get("MEMCORE_AGENT_STORAGE_SDK", "")
SCRIPT = Path(__file__).with_name("vendor_sdk_roundtrip.mjs")

pytestmark = pytest.mark.skipif(
    not (shutil.which("node") and SDK and Path(SDK, "dist/src/index.js").is_file()),
    reason="needs node and MEMCORE_AGENT_STORAGE_SDK (an unpacked @tablestore/agent-storage)",
)


@pytest.mark.parametrize("sign", ["v2", "v4"])
def test_the_vendor_sdk_round_trips_every_api(sign: str) -> None:
    region = "cn-beijing" if sign == "v4" else None
    with EmulatorServer(InMemoryMemoryStore(), region=region) as server:
        args = ["node", str(SCRIPT), server.url, sign] + ([region] if region else [])
        run = subprocess.run(args, capture_output=True, text=True, timeout=120, check=True)
    outcome = json.loads(run.stdout)
    failed = {api: o for api, o in outcome.items() if not o["ok"]}
    assert set(failed) == {"GetMemory(missing)"}, failed
    assert (failed["GetMemory(missing)"]["status"], failed["GetMemory(missing)"]["code"]) == (
        404,
        "NOT_FOUND",
    )
    assert len(outcome) == 23 and outcome["ListMemoryDreamActions"]["actions"] == ["MERGE"]
