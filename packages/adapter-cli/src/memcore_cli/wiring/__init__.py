"""The composition root: per-invocation state, the runtime that opens the store and builds a
``MemoryService``, and the overrides tests inject.

May import ``settings`` and ``output``; never ``operations`` or ``commands``.
"""
