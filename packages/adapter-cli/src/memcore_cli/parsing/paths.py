"""File and folder names given on the command line, refused when empty.

Typer reads an empty ``Path`` value (an unset shell variable) as ".", the current folder:
``doctor --record ""`` saved its answers there, and ``export --out ""`` was refused as
"cannot write . (a folder)", a name the user never gave. These options take text, and
:func:`given_path` makes the path.
"""

from __future__ import annotations

from pathlib import Path

from memcore.errors import InvalidInput


def given_path(value: str, *, name: str, field: str, instead: str) -> Path:
    """``value`` as a path; an empty or blank one is refused, naming the option ``name`` and
    saying what to give ``instead``."""
    if not value.strip():
        raise InvalidInput(f"{name} is empty (an unset shell variable?); {instead}", field=field)
    return Path(value)
