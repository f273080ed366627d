"""One error hierarchy for every boundary, so hosts can map failures without reading text."""

from __future__ import annotations

import shlex
from collections.abc import Sequence


class MemcoreError(Exception):
    """Base of every error memcore raises; ``retryable`` tells callers whether to try again."""

    retryable: bool = False
    code: str = "error"

    def __init__(
        self, message: str, *, field: str | None = None, retryable: bool | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        #: Task ids of the writes of the same call that had landed before this one failed
        #: (a turn sent in several writes); sending the whole call again would repeat them.
        self.landed: tuple[str, ...] = ()
        if retryable is not None:
            self.retryable = retryable

    def __str__(self) -> str:
        return self.message

    @property
    def kind(self) -> str:
        """The public class a caller can catch: a private subclass (a validator's
        ``_BadValue``) answers as the error it is, never under a name the API does not have."""
        return next(c.__name__ for c in type(self).__mro__ if not c.__name__.startswith("_"))

    def __repr__(self) -> str:
        return f"{self.kind}({self.message!r})"

    def to_dict(self) -> dict[str, object]:
        """A JSON-safe description, used by tools and the CLI."""
        out: dict[str, object] = {
            "type": self.kind,
            "code": self.code,
            "message": self.message,
        }
        if self.field is not None:
            out["field"] = self.field
        out["retryable"] = self.retryable
        if self.landed:
            out["landed"] = list(self.landed)
        return out

    def after_landed(self, landed: tuple[str, ...], of: int) -> MemcoreError:
        """A copy of this error saying that ``landed`` (task ids) of the call's ``of`` writes
        had landed before it: not retryable as a whole any more, since a resend repeats them.
        This error itself is left as it was (a store may raise one object for every later
        call, which must not tell of this one's writes); with nothing landed, it is returned."""
        if not landed:
            return self
        told = self.saying(
            f"{len(landed)} of this turn's {of} writes had landed before this one: "
            f"{', '.join(landed)}; sending the whole turn again stores them twice"
        )
        told.landed = landed
        told.retryable = False
        return told

    def saying(self, more: str) -> MemcoreError:
        """A copy of this error whose message adds ``more`` in brackets (what the call had
        done before it failed); this error itself is left as it was."""
        # Not through __init__: some subclasses take other arguments (ConfigError's source).
        told = type(self).__new__(type(self))
        told.__dict__.update(vars(self))
        told.message = f"{self.message} ({more})"
        told.args = (told.message,)
        return told


class InvalidInput(MemcoreError):
    """The caller passed something the service would refuse; ``field`` names it."""

    code = "invalid_input"


class NotFound(MemcoreError):
    """The store, memory or task does not exist in the caller's scope."""

    code = "not_found"


class StoreNotFound(NotFound):
    """The memory store itself does not exist (deleted, or a mistyped name): not an empty one.

    Kept apart from a missing memory so a read never answers "nothing here" for a store that is
    gone; still a ``NotFound`` (the same exit code). ``field`` is ``memory_store_name``.
    """

    code = "store_not_found"

    def advised_with(self, flags: Sequence[str]) -> StoreNotFound:
        """This error with the ``memcore ...`` commands its message advises given ``flags``
        (the ones that chose the store: ``--backend``, ``--config``, ``--hermes-home``): run
        as written without them, they reach the configured default store instead."""
        if not flags:
            return self
        quoted = " ".join(shlex.quote(flag) for flag in flags)
        told = self.message.replace("'memcore ", f"'memcore {quoted} ")
        return StoreNotFound(told, field=self.field, retryable=self.retryable)


class PermissionDenied(MemcoreError):
    """Credentials were refused, or the scope is not the caller's."""

    code = "permission_denied"


class Conflict(MemcoreError):
    """The resource is busy (for example a new store's index is still initialising)."""

    code = "conflict"
    retryable = True


class Throttled(MemcoreError):
    """The backend asked us to slow down."""

    code = "throttled"
    retryable = True


class Unavailable(MemcoreError):
    """The backend could not be reached or did not answer usefully."""

    code = "unavailable"
    retryable = True


class ProtocolError(Unavailable):
    """The backend answered with something that is not the protocol (bad JSON, wrong types)."""

    code = "protocol_error"


class StoreCorrupted(ProtocolError):
    """The store's file is damaged (SQLite found a malformed page, or it is not a database).

    Not retryable: nothing more is written into it; the message names the file and the fix.
    """

    code = "store_corrupted"
    retryable = False


class OutcomeUnknown(Unavailable):
    """A write was sent but no answer from the service says whether it was applied (a timeout,
    a dropped connection, a 2xx that is not the service's). Not ``retryable``: sending it again
    blindly may store it twice; look for it first (the Hermes spool does)."""

    code = "outcome_unknown"
    retryable = False


class StoreClosed(MemcoreError):
    """The store (or the ``Memory`` over it) was closed; open a new one. Not retryable."""

    code = "store_closed"


class ConfigError(MemcoreError):
    """A configuration file or value is wrong; ``field`` is the key, ``source`` the file."""

    code = "config_error"

    def __init__(
        self, message: str, *, field: str | None = None, source: str | None = None
    ) -> None:
        from memcore.wording import shown  # only on an error: hosts import this module early

        where = f" in {source}" if source else ""
        key = f" (key {shown(field)})" if field else ""
        super().__init__(f"{message}{key}{where}", field=field)
        self.source = source


class Unsupported(MemcoreError):
    """The backend has no such operation; raised instead of pretending."""

    code = "unsupported"


def not_confirmed() -> MemcoreError:
    """A delete's question answered no: a failure (exit 1), not invalid input, worded alike
    by every host so that a user reads the same line from ``memcore`` and from Hermes."""
    return MemcoreError("not confirmed; nothing was deleted", field="yes")


def no_terminal_to_confirm(what: str, instead: str = "") -> InvalidInput:
    """A delete that would ask but has no terminal to ask on (stdin redirected or closed):
    invalid input (exit 2), worded alike by every host. ``instead`` ends the line ("(or
    --dry-run ...)")."""
    return InvalidInput(
        f"not deleting {what} without confirmation: stdin is not a terminal; pass --yes" + instead,
        field="yes",
    )


__all__ = [
    "Conflict",
    "ConfigError",
    "InvalidInput",
    "MemcoreError",
    "NotFound",
    "OutcomeUnknown",
    "PermissionDenied",
    "ProtocolError",
    "StoreClosed",
    "StoreCorrupted",
    "StoreNotFound",
    "Throttled",
    "Unavailable",
    "Unsupported",
]
