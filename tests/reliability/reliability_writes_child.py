"""A child Hermes process for the unknown-outcome fault run: for each i it takes a turn,
remembers a text and mirrors a built-in memory write, printing ``ACK <kind> <text>`` once each
was accepted (spooled), then ``SENT`` and waits to be killed.

usage: reliability_writes_child.py HOME NONCE COUNT
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

# The rig module sits next to this file.
sys.path.insert(0, str(Path(__file__).resolve().parent))

import reliability_rig as rig
import test_reliability_unknown_outcomes as run


def main(home: str, nonce: str, count: str) -> None:
    provider = rig.new_provider(Path(home), flush_timeout=1.0)
    print("READY", flush=True)
    for i in range(int(count)):
        for kind, text in run.write(provider, nonce, i):
            print("ACK", kind, text, flush=True)
    print("SENT", flush=True)
    time.sleep(600)  # killed with SIGKILL by the test while delivering


if __name__ == "__main__":
    main(*sys.argv[1:])
