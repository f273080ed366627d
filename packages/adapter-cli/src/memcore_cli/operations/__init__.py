"""The work behind the bigger commands: export and import, doctor's checks, the emulator's
wiring, and finding memories or tasks by id or id prefix.

May import ``wiring``, ``settings``, ``output`` and ``parsing``; never ``commands``.
"""
