"""``hermes tablestore-mem ...`` and its ``doctor``: the plugin's one-shot commands.

The top layer: it may import every other folder (it drives a provider for ``add``, drains the
outbox, opens the backend). Nothing in the plugin imports it; Hermes reaches ``cli`` through the
repository root's ``cli.py`` shim, on every start, so this package imports nothing itself.
"""
