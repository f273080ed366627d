"""Scopes: who a memory belongs to, and the patterns that select many scopes at once.

A scope is ``app_id/tenant_id/agent_id/run_id``. Writes always target a concrete scope;
reads may use a :class:`ScopePattern` whose wildcard levels form a suffix, as in TableStore.

How a string becomes a segment (the rule every host shares; README "Tenant ids"):

* Tenant ids (:func:`tenant_segment`): ``None`` means the host has no user at all and gives
  ``__default__``; an empty or whitespace-only string, or a non-string, is :class:`InvalidInput`.
  Any other string is taken exactly as given: never trimmed, case-folded or Unicode-normalised
  (no NFC: ``"é"`` and ``"e"`` + U+0301 are two tenants, as they are two ids to the platform).
* Escaping: ``%``, ``*``, ``/``, backslash, ``~``, control, format, surrogate, private-use and
  unassigned characters, whitespace at either end, and the first ``_`` of a leading ``__`` become
  ``%XX`` (UTF-8 bytes, upper-case hex). So ``%`` always starts an escape, no literal ``~``
  appears in an unshortened segment, nothing user-made can read ``*`` or ``__default__``, and
  :func:`unescape_segment` gives the input back exactly.
* Shortening: an escaped segment longer than :data:`MAX_SEGMENT_CHARS` becomes the longest
  prefix of whole escaped characters that fits, ``~`` and the first 24 hex digits of the SHA-256
  of the input. A segment holds a literal ``~`` exactly when it is shortened, so a short id can
  never spell a long id's segment; two long ids share one only on a 96-bit digest collision.

The mapping is therefore injective: unshortened segments decode back to their input, shortened
ones differ from every unshortened one and from each other by digest. Up to 0.1.0 ``~`` was
not escaped and a configured tenant was trimmed (CHANGELOG, "Security", says what moves).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterator, Mapping

import attrs

from memcore.errors import InvalidInput
from memcore.wording import shown

WILDCARD = "*"
DEFAULT_SEGMENT = "__default__"
LEVELS = ("app_id", "tenant_id", "agent_id", "run_id")
#: Longest segment we store, in characters after escaping. Longer inputs keep a prefix plus a
#: digest of the whole value, so two different long ids never collapse into one scope.
MAX_SEGMENT_CHARS = 128
_DIGEST_CHARS = 24
# Characters that would change a scope's meaning (wildcard, separator, our escape) or hide in logs.
_ESCAPED = frozenset("%*/\\~")
#: Marks a shortened segment; escaped everywhere else, so it appears only there.
_SHORTENED = "~"


def _needs_escape(ch: str) -> bool:
    return ch in _ESCAPED or unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")


def is_shortened(segment: str) -> bool:
    """True for a digest-shortened segment: only those hold a literal ``~``."""
    return _SHORTENED in segment


def unescape_segment(text: str) -> str:
    """The input a segment was made from: exact for an unshortened segment; a shortened one
    (:func:`is_shortened`) decodes to its kept prefix, ``~`` and the digest, for display."""
    buf = bytearray()
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "%" and i + 3 <= len(text) and _is_hex(text[i + 1 : i + 3]):
            buf.append(int(text[i + 1 : i + 3], 16))
            i += 3
        else:
            buf.extend(ch.encode("utf-8", "surrogatepass"))
            i += 1
    try:
        return buf.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:  # not made by normalize_segment: show it, never fail on it
        return buf.decode("utf-8", "replace")


def _is_hex(pair: str) -> bool:
    return len(pair) == 2 and all(c in "0123456789abcdefABCDEF" for c in pair)


def normalize_segment(value: object, *, default: str = DEFAULT_SEGMENT, trim: bool = True) -> str:
    """Turn an untrusted session or model string into a safe, concrete scope segment.

    Total: any input gives a segment that is non-empty, has no wildcard, separator or control
    character, and is at most :data:`MAX_SEGMENT_CHARS` long. ``None``, non-strings and empty
    strings give ``default``. ``trim`` strips surrounding whitespace first (agent, run and app
    names); tenants go through :func:`tenant_segment`, which never trims. With ``trim=False``
    the result is injective over non-empty strings (the module docstring says why).
    """
    if not isinstance(value, str):
        return default
    value = str.__str__(value)  # a subclass's own encode or strip would steer the segment
    raw = value.strip() if trim else value
    if not raw:
        return default
    # Past MAX_SEGMENT_CHARS characters the segment is shortened whatever follows, and keeps
    # fewer: a huge id is escaped no further (its digest still reads all of it).
    pieces = _escaped_pieces(raw, MAX_SEGMENT_CHARS + 1)
    text = "".join(pieces)
    if len(text) > MAX_SEGMENT_CHARS:
        # Keep whole escaped characters only, so the prefix still decodes; the digest of the
        # whole value keeps two long ids apart.
        digest = hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:_DIGEST_CHARS]
        room = MAX_SEGMENT_CHARS - _DIGEST_CHARS - 1
        kept: list[str] = []
        for piece in pieces:
            if len(piece) > room:
                break
            kept.append(piece)
            room -= len(piece)
        text = f"{''.join(kept)}{_SHORTENED}{digest}"
    return text


def identity_segment(value: object, *, default: str = DEFAULT_SEGMENT) -> str:
    """The segment for an opaque identity (a user id): injective, never stripped or folded."""
    return normalize_segment(value, default=default, trim=False)


def tenant_segment(value: object) -> str:
    """The tenant segment for a user/tenant id, by the one rule every host follows.

    ``None`` (the host has no user at all) is ``__default__``; an empty or whitespace-only
    string, or anything but a string, is refused rather than silently shared; any other string
    is used exactly as given (:func:`identity_segment`), so ``"alice "`` is not ``"alice"``.
    """
    if value is None:
        return DEFAULT_SEGMENT
    if not isinstance(value, str):
        raise InvalidInput(
            f"tenant id must be a string, not {type(value).__name__}", field="tenant_id"
        )
    value = str.__str__(value)  # its characters: a subclass's own strip cannot hide a blank
    if not value.strip():
        raise InvalidInput(
            "tenant id is empty or only whitespace; give an id, or none for the default tenant",
            field="tenant_id",
        )
    return identity_segment(value)


def _escaped_pieces(raw: str, count: int) -> list[str]:
    """The first ``count`` characters of ``raw`` one at a time, percent-encoding what could smuggle a wildcard,
    separator or control code, and whitespace at either end, which stores and logs would
    silently lose. Injective (``%`` itself is escaped), so distinct inputs stay distinct
    scopes; a leading ``__`` is escaped too, so no user can name ``__default__``."""
    head = len(raw) - len(raw.lstrip())
    tail = len(raw.rstrip())
    pieces = [
        _percent(ch) if _needs_escape(ch) or i < head or i >= tail else ch
        for i, ch in enumerate(raw[:count])
    ]
    if raw.startswith("__"):
        pieces[0] = "%5F"
    return pieces


def _percent(text: str) -> str:
    return "".join(f"%{b:02X}" for b in text.encode("utf-8", "surrogatepass"))


def _check_segment(name: str, value: str, *, allow_wildcard: bool) -> None:
    if not isinstance(value, str):
        raise InvalidInput(f"scope {name} must be a string", field=name)
    if not value:
        raise InvalidInput(f"scope {name} must not be empty", field=name)
    if len(value) > MAX_SEGMENT_CHARS:
        raise InvalidInput(
            f"scope {name} is longer than {MAX_SEGMENT_CHARS} characters", field=name
        )
    if value == WILDCARD:
        if not allow_wildcard:
            raise InvalidInput(f"scope {name} must be concrete, not '*'", field=name)
        return
    # ``%`` (escapes) and ``~`` (shortened segments) are what escaped input may hold.
    bad = [
        ch
        for ch in value
        if ch == WILDCARD or ch == "/" or (_needs_escape(ch) and ch not in "%" + _SHORTENED)
    ]
    if bad:
        raise InvalidInput(
            f"scope {name} holds a forbidden character {bad[0]!r} (use normalize_segment)",
            field=name,
        )


@attrs.frozen
class Scope:
    """A concrete scope; every write goes to exactly one."""

    app_id: str
    tenant_id: str
    agent_id: str
    run_id: str

    def __attrs_post_init__(self) -> None:
        for name in LEVELS:
            _check_segment(name, getattr(self, name), allow_wildcard=False)

    def as_tuple(self) -> tuple[str, str, str, str]:
        return (self.app_id, self.tenant_id, self.agent_id, self.run_id)

    def as_dict(self) -> dict[str, str]:
        return dict(zip(LEVELS, self.as_tuple()))

    def pattern(self) -> ScopePattern:
        """The pattern that matches exactly this scope."""
        return ScopePattern(*self.as_tuple())

    def tenant_pattern(self) -> ScopePattern:
        """``app/tenant/*/*``: everything this tenant owns."""
        return ScopePattern(self.app_id, self.tenant_id, WILDCARD, WILDCARD)

    def replace(self, **changes: str) -> Scope:
        return attrs.evolve(self, **changes)

    def __str__(self) -> str:
        return "/".join(self.as_tuple())

    @classmethod
    def from_mapping(cls, data: Mapping[str, object]) -> Scope:
        try:
            values = [data[name] for name in LEVELS]
        except KeyError as exc:
            raise InvalidInput(f"scope is missing {exc.args[0]}", field=str(exc.args[0])) from None
        return cls(*(v if isinstance(v, str) else "" for v in values))


@attrs.frozen
class ScopePattern:
    """A scope that may end in wildcard levels: ``app/t1/*/*`` is valid, ``app/*/a1/*`` is not."""

    app_id: str
    tenant_id: str = WILDCARD
    agent_id: str = WILDCARD
    run_id: str = WILDCARD

    def __attrs_post_init__(self) -> None:
        seen_wildcard = False
        for name in LEVELS:
            value = getattr(self, name)
            _check_segment(name, value, allow_wildcard=True)
            if value == WILDCARD:
                seen_wildcard = True
            elif seen_wildcard:
                raise InvalidInput(
                    f"scope pattern {self}: a wildcard level forces every level below it to be "
                    f"'*', but {name} is {value!r}",
                    field=name,
                )

    def as_tuple(self) -> tuple[str, str, str, str]:
        return (self.app_id, self.tenant_id, self.agent_id, self.run_id)

    def as_dict(self) -> dict[str, str]:
        return dict(zip(LEVELS, self.as_tuple()))

    @property
    def is_concrete(self) -> bool:
        return WILDCARD not in self.as_tuple()

    def concrete(self) -> Scope:
        """This pattern as a scope; :class:`InvalidInput` if it holds a wildcard."""
        if not self.is_concrete:
            raise InvalidInput(f"scope {self} must be concrete here (no '*')", field="scope")
        return Scope(*self.as_tuple())

    def matches(self, scope: Scope) -> bool:
        return all(p == WILDCARD or p == v for p, v in zip(self.as_tuple(), scope.as_tuple()))

    def within(self, other: ScopePattern) -> bool:
        """True when every scope this pattern matches is also matched by ``other``."""
        return all(o == WILDCARD or o == s for s, o in zip(self.as_tuple(), other.as_tuple()))

    def levels(self) -> Iterator[tuple[str, str]]:
        return iter(zip(LEVELS, self.as_tuple()))

    def __str__(self) -> str:
        return "/".join(self.as_tuple())

    @classmethod
    def parse(cls, text: str) -> ScopePattern:
        """Parse ``app/tenant/agent/run``; missing trailing levels are wildcards."""
        if not isinstance(text, str) or not text.strip():
            raise InvalidInput("scope pattern must be a non-empty string", field="scope")
        parts = text.strip().split("/")
        if len(parts) > 4:
            raise InvalidInput(
                f"scope pattern {shown(text)} has more than four levels", field="scope"
            )
        parts += [WILDCARD] * (4 - len(parts))
        return cls(*parts)


@attrs.frozen
class SessionContext:
    """What a host knows about the current session; every field is untrusted."""

    user_id: str | None = None
    agent_identity: str | None = None
    gateway_session_key: str | None = None
    session_title: str | None = None
    session_id: str | None = None
    #: The chat platform the user id belongs to (``telegram``, ``discord``): given, the tenant
    #: is :func:`platform_tenant` of the two, since one id on two platforms is two people.
    platform: str | None = None


#: What a platform's name is written with in a tenant id: ``%``, ``:`` and ``#`` escaped, so
#: the first ``:`` always ends it and a ``#`` before that marks a chat (:func:`chat_tenant`).
_PLATFORM_ESCAPES = {"%": "%25", ":": "%3A", "#": "%23"}
_PLATFORM_UNESCAPES = {v[1:]: k for k, v in _PLATFORM_ESCAPES.items()}
_PLATFORM_ESCAPED = re.compile(f"%({'|'.join(_PLATFORM_UNESCAPES)})")
#: What follows the platform in a chat's tenant id.
_CHAT = "#chat"


def _tenant_parts(**parts: object) -> list[str]:
    """The parts of a tenant id, each an exact, non-blank string (else InvalidInput)."""
    checked: list[str] = []
    for name, value in parts.items():
        label = name.replace("_", " ")
        if not isinstance(value, str):
            raise InvalidInput(
                f"{label} must be a string, not {type(value).__name__}", field="tenant_id"
            )
        if not value.strip():
            raise InvalidInput(f"{label} is empty or only whitespace", field="tenant_id")
        checked.append(value)
    return checked


def _escape_platform(platform: str) -> str:
    return "".join(_PLATFORM_ESCAPES.get(ch, ch) for ch in platform)


def platform_tenant(platform: object, user_id: object) -> str:
    """The tenant id of ``user_id`` on ``platform``: ``platform:user_id``, with ``%``, ``:``
    and ``#`` in the platform percent-escaped, so that the first ``:`` always ends the platform
    and two different pairs never give one tenant (``("a:b", "c")`` is ``a%3Ab:c``,
    ``("a", "b:c")`` is ``a:b:c``), nor a chat's (:func:`chat_tenant`). Both parts are exact
    strings; a blank one is :class:`InvalidInput`."""
    name, user = _tenant_parts(platform=platform, user_id=user_id)
    return f"{_escape_platform(name)}:{user}"


def chat_tenant(platform: object, chat_id: object) -> str:
    """The tenant id of a chat as a whole (a Telegram group an agent observes, where Hermes
    drops the sender; a thread several people share): ``platform#chat:chat_id``, the platform
    escaped as in :func:`platform_tenant`. No user's :func:`platform_tenant` is a chat's,
    whatever the ids: before its first ``:`` it holds no unescaped ``#``. (A user id taken as
    the tenant alone, Hermes' ``tenant_scope: user``, is any string; one spelled
    ``telegram#chat:...`` would be that chat's, and no platform issues such ids.)"""
    name, chat = _tenant_parts(platform=platform, chat_id=chat_id)
    return f"{_escape_platform(name)}{_CHAT}:{chat}"


def tenant_platform(tenant_id: str) -> str | None:
    """The platform a tenant id of :func:`platform_tenant`'s form names: what comes before
    the first ``:``, unescaped; None for an id without ``:``, or a chat's."""
    escaped, sep, _ = tenant_id.partition(":")
    if not sep or "#" in escaped:
        return None
    return _PLATFORM_ESCAPED.sub(lambda m: _PLATFORM_UNESCAPES[m.group(1)], escaped)


def resolve_scope(
    session: SessionContext, *, app_id: str | None = None, tenant_id: str | None = None
) -> Scope:
    """Resolve the write scope as the original TableStore plugin does, but safely.

    app: config or ``hermes``; tenant: config/``--tenant`` ``tenant_id`` when given, else the
    session's ``user_id`` (with its ``platform``, when the session names one:
    :func:`platform_tenant`), by :func:`tenant_segment` (exact, never trimmed or folded; no
    user is ``__default__`` on every platform, blank is :class:`InvalidInput`);
    agent: session ``agent_identity`` or ``hermes``; run: ``gateway_session_key``,
    ``session_title``, ``session_id``, ``__default__``. Every string is normalised, so none can
    become a wildcard or name another tenant's scope.
    """
    app = normalize_segment(app_id, default="hermes")
    if tenant_id is not None:
        tenant = tenant_segment(tenant_id)
    elif session.platform is not None and session.user_id is not None:
        tenant = tenant_segment(platform_tenant(session.platform, session.user_id))
    else:
        tenant = tenant_segment(session.user_id)
    agent = normalize_segment(session.agent_identity, default="hermes")
    run = ""
    for candidate in (session.gateway_session_key, session.session_title, session.session_id):
        run = normalize_segment(candidate, default="")
        if run:
            break
    return Scope(app, tenant, agent, run or DEFAULT_SEGMENT)
