"""A child Hermes process for the reliability tests: takes turns and prints ``ACK <text>`` once
each ``sync_turn`` returned (``REFUSED <text>`` when the plugin could not spool it).

usage: reliability_child.py HOME NONCE COUNT INTERVAL SESSION FLUSH_TIMEOUT
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

# The rig module sits next to this file.
sys.path.insert(0, str(Path(__file__).resolve().parent))

import reliability_rig as rig


def main(
    home: str, nonce: str, count: str, interval: str, session: str, flush_timeout: str
) -> None:
    provider = rig.new_provider(Path(home), session=session, flush_timeout=float(flush_timeout))
    ledger = rig.TurnLedger()
    ledger.nonce = nonce
    print("READY", flush=True)
    for _ in range(int(count)):
        ledger.issue(provider)
        if ledger.acknowledged and ledger.acknowledged[-1] == ledger.issued[-1]:
            print("ACK", ledger.issued[-1], flush=True)
        else:
            print("REFUSED", ledger.issued[-1], flush=True)
        time.sleep(float(interval))
    provider.shutdown()
    print("DONE", flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
