"""The ``MemoryStore`` port over TableStore, sync and async.

``sync_store`` (``OTSClient``) and ``async_store`` (``AsyncOTSClient``) run the same plans
and differ only in how they send a call and wait.

May import: ``memcore``, ``client``, ``protocol``, ``credentials``, ``live_check``.
"""
