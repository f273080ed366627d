"""Credentials for the data plane: an API key, or an access key pair found the way the
original plugin found them.

``TABLESTORE_MEMORY_API_KEY`` wins when it is set (:func:`resolve_auth`); the Memory Store calls
then go through the vendor's ``tablestore-agent-storage`` client, the only one that sends it.
Otherwise ``TABLESTORE_MEMORY_AK``/``TABLESTORE_MEMORY_SK``, then the Alibaba Cloud default chain
(``ALIBABA_CLOUD_ACCESS_KEY_ID``/``_SECRET``/``_SECURITY_TOKEN``, profile files, RAM roles).
Secrets never appear in a repr, a log line or an error message.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping
from typing import Any

import attrs

from memcore.errors import PermissionDenied, Unavailable


class _QuietChain:
    """While the default chain is asked, its logger ("credentials") is off. The SDK gives it
    stderr handlers of its own and logs every provider it tried and failed with a traceback,
    which may quote file paths and settings: a library user saw a screen of them before our
    one PermissionDenied, which says what failed without them. Counted, so threads asking
    at once neither wait for each other nor turn it back on under one another."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._asking = 0
        self._was = False

    def __enter__(self) -> None:
        log = logging.getLogger("credentials")
        with self._lock:
            if not self._asking:
                self._was = log.disabled
                log.disabled = True
            self._asking += 1

    def __exit__(self, *_: object) -> None:
        with self._lock:
            self._asking -= 1
            if not self._asking:
                logging.getLogger("credentials").disabled = self._was


_quiet_chain = _QuietChain()

AK_ENV = "TABLESTORE_MEMORY_AK"
SK_ENV = "TABLESTORE_MEMORY_SK"
STS_ENV = "TABLESTORE_MEMORY_STS_TOKEN"
API_KEY_ENV = "TABLESTORE_MEMORY_API_KEY"
CLOUD_AK_ENV = "ALIBABA_CLOUD_ACCESS_KEY_ID"
CLOUD_SK_ENV = "ALIBABA_CLOUD_ACCESS_KEY_SECRET"
CLOUD_STS_ENV = "ALIBABA_CLOUD_SECURITY_TOKEN"


def _non_empty(_: object, attribute: attrs.Attribute[str], value: str) -> None:
    if not isinstance(value, str) or not value.strip():
        raise PermissionDenied(
            f"credentials: {attribute.name} must be a non-empty string", field=attribute.name
        )


def _unsendable(name: str, value: str, *, field: str) -> None:
    """Refuse a key with a character no HTTP header carries (printable ASCII only), naming
    ``name`` (the variable or field it came from) and the position, never the key: a stray
    byte (a key pasted from a document, an environment variable not in UTF-8) failed on the
    first call as "could not be sent: 'utf-8' codec can't encode" or as "the service
    answered with a non-object JSON body", blaming the service for a key never sent. An
    access key pair's secret only signs, but is as ASCII as its id."""
    for i, char in enumerate(value):
        if not (char.isascii() and char.isprintable()):
            raise PermissionDenied(
                f"credentials: {name} holds a character no HTTP header can carry "
                f"(character {i + 1}); copy the key again",
                field=field,
            )


def _header_safe(_: object, attribute: attrs.Attribute[str], value: str) -> None:
    """An API key travels in a header (see :func:`_unsendable`)."""
    _non_empty(_, attribute, value)
    _unsendable(API_KEY_ENV, value, field=attribute.name)


def _key_safe(_: object, attribute: attrs.Attribute[str], value: str) -> None:
    """A part of an access key pair, as :func:`_header_safe` checks an API key."""
    _non_empty(_, attribute, value)
    _unsendable(attribute.name, value, field=attribute.name)


def _token_safe(_: object, attribute: attrs.Attribute[str | None], value: str | None) -> None:
    if value is not None:
        _unsendable(attribute.name, value, field=attribute.name)


def _mask(value: str) -> str:
    return f"{value[:4]}…" if len(value) > 8 else "…"


@attrs.frozen(repr=False)
class Credentials:
    """An access key pair, optionally with an STS token (passed on to the SDK).

    ``renewal``: where renewed ones come from (the default chain's STS credentials expire);
    the stores then ask it before each request. None: these are used as they are."""

    access_key_id: str = attrs.field(validator=_key_safe)
    access_key_secret: str = attrs.field(validator=_key_safe)
    security_token: str | None = attrs.field(default=None, validator=_token_safe)
    renewal: ChainRenewal | None = attrs.field(default=None, eq=False, kw_only=True)

    def current(self) -> Credentials:
        """The credentials to sign the next request with."""
        return self if self.renewal is None else self.renewal()

    def __repr__(self) -> str:
        token = "None" if self.security_token is None else "'***'"
        return (
            f"Credentials(access_key_id='{_mask(self.access_key_id)}', "
            f"access_key_secret='***', security_token={token})"
        )

    __str__ = __repr__

    @property
    def secrets(self) -> tuple[str, ...]:
        """What must never be shown (an answer that quotes the request is scrubbed of it)."""
        token = (self.security_token,) if self.security_token else ()
        renewed = self.renewal.secrets if self.renewal is not None else ()
        return (self.access_key_id, self.access_key_secret, *token, *renewed)


class ChainRenewal:
    """The Alibaba Cloud default chain, asked again for each request: it caches what it has
    and renews an STS token (a RAM role's lasts about an hour) before it expires, so a
    long-running store keeps signing with valid credentials. It remembers the secrets it
    handed out, so that errors can be scrubbed of them."""

    #: Secrets kept for scrubbing: the last few renewals' (an answer quotes the latest).
    KEPT = 30

    def __init__(self, client: Any) -> None:
        self._client = client
        self._lock = threading.Lock()
        self._issued: dict[str, None] = {}

    def __call__(self) -> Credentials:
        try:
            with _quiet_chain:
                model = self._client.get_credential()
        except Exception:
            # The chain's own message may quote file paths and settings: only ours is shown.
            raise Unavailable(
                "could not renew the TableStore credentials from the Alibaba Cloud default "
                "chain (profile, RAM role); nothing was sent",
                field="credentials",
            ) from None
        fresh = _from_chain(model)
        with self._lock:
            for secret in fresh.secrets:
                self._issued.pop(secret, None)
                self._issued[secret] = None
            while len(self._issued) > self.KEPT:
                self._issued.pop(next(iter(self._issued)))
        return fresh

    @property
    def secrets(self) -> tuple[str, ...]:
        with self._lock:
            return tuple(self._issued)

    def __repr__(self) -> str:
        return "ChainRenewal()"


def _from_chain(model: Any) -> Credentials:
    ak, sk = getattr(model, "access_key_id", None), getattr(model, "access_key_secret", None)
    if not ak or not sk:
        raise PermissionDenied(_missing_message(), field="credentials")
    return Credentials(ak, sk, getattr(model, "security_token", None) or None)


@attrs.frozen(repr=False)
class ApiKey:
    """A TableStore API key (header ``x-ots-apikey``): one secret instead of a key pair, sent
    only over HTTPS (plain HTTP only to a loopback emulator)."""

    key: str = attrs.field(validator=_header_safe)

    def __repr__(self) -> str:
        return "ApiKey(key='***')"

    __str__ = __repr__

    @property
    def secrets(self) -> tuple[str, ...]:
        """What must never be shown (see :attr:`Credentials.secrets`)."""
        return (self.key,)


def resolve_auth(env: Mapping[str, str] | None = None) -> Credentials | ApiKey:
    """The API key when ``TABLESTORE_MEMORY_API_KEY`` is set (it takes precedence over any
    access key pair), else :func:`resolve_credentials`."""
    source = os.environ if env is None else env
    key = source.get(API_KEY_ENV, "").strip()
    if key:
        return ApiKey(key)
    try:
        return resolve_credentials(env)
    except PermissionDenied as exc:
        if exc.field != "credentials":
            raise
        raise PermissionDenied(
            f"{_missing_message()}; or set {API_KEY_ENV} for an existing instance",
            field="credentials",
        ) from None


def _missing_message() -> str:
    return (
        f"no TableStore credentials: set {AK_ENV} and {SK_ENV} (or {CLOUD_AK_ENV} and "
        f"{CLOUD_SK_ENV}), or configure an Alibaba Cloud credentials profile or RAM role"
    )


def resolve_credentials(env: Mapping[str, str] | None = None) -> Credentials:
    """Credentials from ``env`` (default: the process environment).

    With an explicit ``env`` only that mapping is read, so tests are deterministic. With the
    process environment, the ``alibabacloud-credentials`` default chain is the last resort;
    it is imported only then, because it reads the environment when it is imported.
    """
    source = os.environ if env is None else env
    for id_var, secret_var, token_var in (
        (AK_ENV, SK_ENV, STS_ENV),
        (CLOUD_AK_ENV, CLOUD_SK_ENV, CLOUD_STS_ENV),
    ):
        ak, sk = source.get(id_var, "").strip(), source.get(secret_var, "").strip()
        if ak and sk:
            token = source.get(token_var) or None
            for var, value in ((id_var, ak), (secret_var, sk), (token_var, token or "")):
                _unsendable(var, value, field=var)  # named by its variable, not the field
            return Credentials(ak, sk, token)
        if ak or sk:
            # Half a pair is a mistake to name, not a reason to ask the default chain, whose
            # providers reach the network (the ECS metadata service) or another identity.
            missing, given = (secret_var, id_var) if ak else (id_var, secret_var)
            raise PermissionDenied(f"{missing} is not set, but {given} is; set both", field=missing)
    if env is not None:
        raise PermissionDenied(_missing_message(), field="credentials")
    return _default_chain()


def _default_chain() -> Credentials:
    try:
        from alibabacloud_credentials.client import Client
    except ImportError:  # pragma: no cover - a declared dependency
        raise PermissionDenied(_missing_message(), field="credentials") from None
    try:
        client = Client()
        with _quiet_chain:
            model = client.get_credential()
    except Exception:
        # The chain's own message lists every provider it tried; it may quote file paths
        # and settings, so only our own text is surfaced.
        raise PermissionDenied(_missing_message(), field="credentials") from None
    first = _from_chain(model)
    # Kept: a RAM role's STS credentials expire, and the chain renews them.
    return attrs.evolve(first, renewal=ChainRenewal(client))
