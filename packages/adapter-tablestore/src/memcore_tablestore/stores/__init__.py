"""The ``MemoryStore`` port over TableStore, sync and async.

``base`` declares the port's operations once, each by its plan, with what both stores share;
``sync_store`` (``OTSClient``) and ``async_store`` (``AsyncOTSClient``) add only how a call is
sent and how they wait.

May import: ``memcore``, ``client``, ``protocol``, ``credentials``.
"""
