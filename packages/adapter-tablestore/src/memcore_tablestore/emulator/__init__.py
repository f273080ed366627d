"""A loopback Memory Store (plus a control-plane twin) that the unmodified SDK talks to.

Use it to develop against TableStore offline, and as the integration-test rig::

    from memcore.testing import InMemoryMemoryStore
    from memcore_tablestore.emulator import EmulatorServer, Faults

    with EmulatorServer(InMemoryMemoryStore(), faults=Faults(latency_ms=20)) as server:
        ...  # point OTSClient at server.url with "emu-ak"/"emu-sk", instance "emulator"
"""

from memcore_tablestore.emulator.faults import Faults
from memcore_tablestore.emulator.ledger import Ledger
from memcore_tablestore.emulator.server import EmulatorServer

__all__ = ["EmulatorServer", "Faults", "Ledger"]
