"""An option's text given as unquoted words: ``memcore update ID --text green tea``.

``add`` and ``search`` join their words by one space, as ``echo`` does; ``update`` takes an
id as well, so a word could be either. Words are taken as the option's only when typed right
after its value, and the id elsewhere; any other order is refused, asking for quotes, rather
than guessed (``update --text add cafe 5f0c`` must not update the memory ``cafe...``).
"""

from __future__ import annotations

from collections.abc import Sequence

#: ``ctx.meta`` key of the command line below the root group (global options moved out).
COMMAND_ARGS = "memcore.command_args"


def with_words(
    option: str, value: str | None, words: Sequence[str], argv: Sequence[str]
) -> str | None:
    """``value`` of ``option`` with ``words`` (the positional words beyond the id) joined on
    by one space, when ``argv`` shows them typed right after that value; else
    :class:`~memcore.errors.InvalidInput` saying to quote the text. No words: ``value``."""
    if not words:
        return value
    from memcore.errors import InvalidInput

    field = option.lstrip("-")
    shown = " ".join(words)
    if value is None:
        raise InvalidInput(
            f"unexpected words {shown!r}: to set the text, type {option} right before them "
            f'(or quote it: {option} "...")',
            field=field,
        )
    if not _typed_after(option, value, list(words), list(argv)):
        # Not guessed: the parser may have taken one of these words for the id.
        raise InvalidInput(
            f'unexpected words {shown!r}: quote the text ({option} "..."), or type the '
            f"id first and the text's words right after {option}",
            field=field,
        )
    return " ".join([value, *words])


def _typed_after(option: str, value: str, words: list[str], argv: list[str]) -> bool:
    """Whether ``words`` follow the last ``option value`` (or ``option=value``) of ``argv``,
    the one the parser kept, and end before any ``--``."""
    end = argv.index("--") if "--" in argv else len(argv)
    after = None
    for i in range(end):
        if argv[i] == option and i + 1 < end and argv[i + 1] == value:
            after = i + 2
        elif argv[i] == f"{option}={value}":
            after = i + 1
    return after is not None and argv[after : after + len(words)] == words
