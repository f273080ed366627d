"""Local dream tasks: their lifecycle (``tasks``), what a task plans over (``inputs``), applying
an action and undoing it (``apply``), and how tasks and actions are stored (``rows``).

May import: ``operations``, ``search``, ``storage`` and the core.
"""
