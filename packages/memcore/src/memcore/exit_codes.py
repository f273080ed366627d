"""The process exit codes, and which error maps to which; scripts branch on these.

Kept in the core so that every command line (the ``memcore`` CLI, ``hermes tablestore-mem``)
answers the same failure with the same code.
"""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    OK = 0
    UNEXPECTED = 1
    USAGE = 2
    NOT_FOUND = 3
    PERMISSION = 4
    UNAVAILABLE = 5
    #: Stopped by Ctrl-C (SIGINT), as shells report it (128 + 2); what was undone is said.
    INTERRUPTED = 130


def exit_code_for(exc: BaseException) -> ExitCode:
    """Classify by error type only (never by message text).

    ``Unsupported`` counts as invalid input: the request cannot work on this backend, and
    retrying will not help. A retryable ``Conflict`` (a store still initialising) is like a
    throttle; a final one (the store already exists) is invalid input.
    """
    from memcore.errors import (
        ConfigError,
        Conflict,
        InvalidInput,
        NotFound,
        PermissionDenied,
        Throttled,
        Unavailable,
        Unsupported,
    )

    if isinstance(exc, (InvalidInput, ConfigError, Unsupported)):
        return ExitCode.USAGE
    if isinstance(exc, Conflict) and not exc.retryable and not exc.landed:
        # Final, unless only made so because part of a turn had landed (still a busy store).
        return ExitCode.USAGE
    if isinstance(exc, NotFound):
        return ExitCode.NOT_FOUND
    if isinstance(exc, PermissionDenied):
        return ExitCode.PERMISSION
    if isinstance(exc, (Unavailable, Throttled, Conflict)):
        return ExitCode.UNAVAILABLE
    return ExitCode.UNEXPECTED
