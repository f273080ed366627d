"""The ``memcore`` command line: the whole memory surface from a terminal.

Importing this package stays cheap on purpose: ``memcore --help`` must answer quickly, so the
core, the backends and rich are imported only by the commands that need them.
"""

__version__ = "0.1.0"
