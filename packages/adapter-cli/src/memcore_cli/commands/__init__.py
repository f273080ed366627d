"""The CLI commands, one module per family; each imports its heavy dependencies lazily.

May import every lower folder (``operations``, ``wiring``, ``settings``, ``parsing``,
``output``); ``app`` registers them.
"""
