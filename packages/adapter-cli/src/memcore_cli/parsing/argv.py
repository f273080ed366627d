"""Global options given after the command (``memcore search coffee --json``) are moved in
front of it before the parser runs, so they work wherever a user types them.

Only whole option words are moved, each with its value when it takes one (one that ends the
line without it is a usage error). The command's own
options (and their values) stay where they are, even when a value looks like a global option
(``add --metadata --json``); so does everything after ``--``. A command that defines an option
of the same name keeps it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from typer._click.exceptions import BadOptionUsage

#: Root options that stop the run at once (and ``--help`` belongs to every command).
_NOT_MOVED = frozenset({"--help", "-h", "--version"})


def _takes_value(params: Iterable[Any]) -> dict[str, bool]:
    """Each option word of these parameters, and whether a value follows it."""
    found: dict[str, bool] = {}
    for param in params:
        if getattr(param, "param_type_name", "") != "option":
            continue
        value = not (param.is_flag or param.count)
        for name in (*param.opts, *param.secondary_opts):
            found[name] = value
    return found


def _width(word: str, options: dict[str, bool]) -> int:
    """How many words the option ``word`` spans (0: not one of ``options``)."""
    name = word.split("=", 1)[0] if word.startswith("--") else word
    if name not in options:
        return 0
    return 2 if options[name] and "=" not in word else 1


def _root_end(root: dict[str, bool], args: list[str]) -> int:
    """Where the root options at the front of ``args`` (and their values) end."""
    i = 0
    while i < len(args) and args[i] != "--" and (width := _width(args[i], root)):
        i += width
    return i


class MissingValue(BadOptionUsage):
    """A global option that ends the line without its value. ``globals_before``: the global
    options given before it, as they would have been moved (``--json`` among them decides
    how the error is written)."""

    def __init__(self, option: str, globals_before: list[str]) -> None:
        super().__init__(option, f"Option '{option}' requires an argument.")
        self.globals_before = globals_before


def _check_value(args: list[str], i: int, width: int, before: list[str]) -> None:
    """Refuse a global option that ends the line without its value: moved in front of the
    command, it would take the command's first word as its value (``dream list --tenant``
    listed the memories of a tenant named ``dream``)."""
    if i + width > len(args):
        raise MissingValue(args[i], before)


class RepeatedOption(BadOptionUsage):
    """An option that takes one value, given twice with different values."""

    def __init__(self, option: str, first: str, second: str) -> None:
        super().__init__(
            option,
            f"{option} is given twice ({first!r}, then {second!r}); give it once",
        )


def _single_valued(params: Iterable[Any]) -> dict[str, str]:
    """Each option word of the parameters that take exactly one value, mapped to the
    parameter's long name (``-o`` and ``--out`` are one option)."""
    found: dict[str, str] = {}
    for param in params:
        if getattr(param, "param_type_name", "") != "option":
            continue
        if param.is_flag or param.count or param.multiple or param.nargs != 1:
            continue
        shown = max(param.opts, key=len)
        for name in param.opts:
            found[name] = shown
    return found


class _Repeats:
    """Refuses a one-value option given again with another value: the parser keeps the last
    silently, so ``--tenant alice ... --tenant bob`` (a wrapper's option, then the user's)
    read and wrote bob's memories without a word."""

    def __init__(self, params: Iterable[Any]) -> None:
        self.single = _single_valued(params)
        self.seen: dict[str, str] = {}

    def note(self, args: list[str], i: int, width: int) -> None:
        word = args[i]
        name = word.split("=", 1)[0] if word.startswith("--") else word
        shown = self.single.get(name)
        if shown is None or i + width > len(args):  # a missing value: the parser says so
            return
        value = word.split("=", 1)[1] if width == 1 and "=" in word else args[i + 1]
        first = self.seen.setdefault(shown, value)
        if first != value:
            raise RepeatedOption(shown, first, value)


def hoist_globals(group: Any, args: list[str]) -> list[str]:
    """``args`` with the root group's options that follow the command moved before it; a
    one-value option given twice with different values is refused."""
    root = _takes_value(group.params)
    i = start = _root_end(root, args)
    globals_seen = _Repeats(group.params)
    j = 0
    while j < start:
        width = _width(args[j], root)
        globals_seen.note(args, j, width)
        j += width
    movable = {k: v for k, v in root.items() if k not in _NOT_MOVED}
    moved: list[str] = []
    words: list[str] = []
    command = group
    while isinstance(getattr(command, "commands", None), dict):
        if words and i < len(args) and (width := _width(args[i], movable)):
            _check_value(args, i, width, [*args[:start], *moved])
            globals_seen.note(args, i, width)
            moved.extend(args[i : i + width])  # between a group and its command
            i += width
            continue
        if i >= len(args) or args[i] not in command.commands:
            return args  # no command, or an unknown one: the parser says what is wrong
        command = command.commands[args[i]]
        words.append(args[i])
        i += 1
    own = _takes_value(command.params)
    own_seen = _Repeats(command.params)
    movable = {k: v for k, v in movable.items() if k not in own}
    kept: list[str] = []
    while i < len(args):
        if args[i] == "--":
            kept.extend(args[i:])
            break
        if width := _width(args[i], own):
            own_seen.note(args, i, width)
            kept.extend(args[i : i + width])
        elif width := _width(args[i], movable):
            _check_value(args, i, width, [*args[:start], *moved])
            globals_seen.note(args, i, width)
            moved.extend(args[i : i + width])
        else:
            width = 1
            kept.append(args[i])
        i += width
    return [*args[:start], *moved, *words, *kept]


def leading_json(group: Any, args: list[str]) -> bool:
    """Whether the root options at the front of ``args`` (where :func:`hoist_globals` puts
    them) ask for JSON, by ``--json`` or ``--format json``. Read before the parser runs, so
    that an error of the parser itself (an unknown command, a bad option value) is written as
    the JSON error object too."""
    root = _takes_value(group.params)
    wanted = False
    i = 0
    while i < len(args) and args[i] != "--" and (width := _width(args[i], root)):
        name, _, inline = args[i].partition("=")
        if name == "--json":
            wanted = True
        elif name == "--format":
            value = inline if "=" in args[i] else (args[i + 1] if i + 1 < len(args) else "")
            wanted = wanted or value == "json"
        i += width
    return wanted


def unknown_command_json(group: Any, args: list[str]) -> bool:
    """Whether ``args`` name a command the group (or one of its groups) does not have and ask
    for JSON after it (``memcore frob --json``, ``memcore dream frob --json``):
    :func:`hoist_globals` leaves such a line alone, so the parser's "no such command" would
    otherwise be plain text to a script that asked for JSON."""
    i = _root_end(_takes_value(group.params), args)
    command = group
    while i < len(args) and args[i] in getattr(command, "commands", {}):
        command = command.commands[args[i]]
        i += 1
    if not isinstance(getattr(command, "commands", None), dict) or i >= len(args):
        return False  # a known command, or a group with none named: not this case
    rest = args[i:]
    rest = rest[: rest.index("--")] if "--" in rest else rest
    pairs = zip(rest, [*rest[1:], ""])
    return any(a in ("--json", "--format=json") or (a, b) == ("--format", "json") for a, b in pairs)
