"""A loopback Memory Store (plus a control-plane twin) that the unmodified SDK talks to.

Use it to develop against TableStore offline, and as the integration-test rig::

    from memcore.testing import InMemoryMemoryStore
    from memcore_tablestore.emulator import EmulatorServer, Faults

    with EmulatorServer(InMemoryMemoryStore(), faults=Faults(latency_ms=20)) as server:
        ...  # point OTSClient at server.url with "emu-ak"/"emu-sk", instance "emulator"

``server`` serves HTTP, checks signatures (``auth``), injects ``faults`` and keeps an
``audit``; ``apis/`` answers the data-plane APIs; ``control_plane`` is the instance-management
twin. ``context``, ``ledger``, ``request_fields``, ``scopes``, ``encode`` and
``service_errors`` are shared by both. ``shapes`` compares answers with the golden files.

May import: ``memcore`` and ``protocol.answer_fields`` (one time parser); never the client,
the stores or the provisioner, so it cannot agree with the client by sharing its code.
"""

from memcore_tablestore.emulator.faults import Faults
from memcore_tablestore.emulator.ledger import Ledger
from memcore_tablestore.emulator.server import EmulatorServer

__all__ = ["EmulatorServer", "Faults", "Ledger"]
