"""Writes on their way to the backend: the turn journal, the SQLite spool
(``SqliteOutbox``, holding the core's ``OutboxEntry`` values), the lane that runs backend
calls in order, and delivery exactly once.

May import ``config`` (where the spool file lives) and the core; never ``session``,
``backend`` or ``commands``: it is handed an open store, it does not open one.
"""
