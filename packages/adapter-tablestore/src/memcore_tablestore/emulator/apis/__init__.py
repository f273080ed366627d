"""The emulator's data plane: one module per group of Memory Store APIs.

``handlers`` maps API names to handlers; ``stores``, ``memories``, ``records`` (messages,
audit, scopes, tasks) and ``dreams`` (with ``dream_planner`` and ``dream_actions``) answer
them over a core ``MemoryStore``.

May import: ``memcore`` and the emulator's shared modules (``context``, ``ledger``,
``request_fields``, ``scopes``, ``encode``, ``service_errors``); never the server, the client
or the stores.
"""
