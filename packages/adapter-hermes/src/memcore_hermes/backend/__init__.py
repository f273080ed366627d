"""Choosing, setting up and opening the backend (``local`` SQLite or TableStore), and its
embedding model: preloading it, re-embedding after it changed.

The SDKs and the embedded store are imported here, lazily. May import ``config`` and the
storage adapters' entry points; never ``outbox``, ``session`` or ``commands``.
"""
