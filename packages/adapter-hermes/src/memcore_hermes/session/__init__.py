"""One agent session: the ``MemoryProvider`` Hermes loads, its runtime, tools and hooks.

The agent's thread only validates and spools here; recall and delivery run on the outbox's
lane. May import ``outbox``, ``backend`` and ``config``, never ``commands``.
"""
