"""A path's leading ``~`` or ``~user`` made that home folder, or None where there is none.

Python's ``expanduser`` raises ``RuntimeError`` for ``~user`` of a user this system does not
know (or ``~`` without a home), which reached users as an unexpected error; each caller turns
None into its own error, naming the setting it came from.
"""

from __future__ import annotations

import os
from pathlib import Path


def expand_home(path: str | os.PathLike[str]) -> Path | None:
    """``path`` with its home folder filled in, or None when that home is unknown here."""
    try:
        return Path(path).expanduser()
    except RuntimeError:
        return None
