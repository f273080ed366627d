"""Request authentication as the data plane does it: content MD5 plus SignV2 or SignV4, or an
API key (``x-ots-apikey`` with ``x-ots-instancename``, nothing signed).

Written from the protocol, not borrowed from the SDK, so the emulator really checks what the
unmodified client sends: HMAC over ``/<Api>\\nPOST\\n\\n`` and the sorted lower-case
``x-ots-*`` header lines (SignV2: HMAC-SHA1 with the secret; SignV4: HMAC-SHA256 with a key
derived from the secret, the sign date, the region and the product, over the same string
plus ``ots``).
"""

from __future__ import annotations

import base64
import datetime as _dt
import hashlib
import hmac
from collections.abc import Mapping

import attrs

_SIGNATURE_HEADERS = frozenset({"x-ots-signature", "x-ots-signaturev4"})
_REQUIRED = (
    "x-ots-date",
    "x-ots-apiversion",
    "x-ots-accesskeyid",
    "x-ots-instancename",
    "x-ots-contentmd5",
)
#: The service refuses requests whose clock is this far off.
MAX_SKEW_SECONDS = 15 * 60


@attrs.frozen
class AuthError(Exception):
    message: str

    def __str__(self) -> str:
        return self.message


@attrs.frozen
class Identity:
    """Who the emulator accepts: one key pair (and optional STS token) for one instance, and
    an API key for it when one is set."""

    access_key_id: str
    access_key_secret: str = attrs.field(repr=False)
    instance_name: str
    security_token: str | None = attrs.field(default=None, repr=False)
    region: str | None = None
    api_key: str | None = attrs.field(default=None, repr=False)


def verify_api_key(headers: Mapping[str, str], identity: Identity) -> None:
    """Raise :class:`AuthError` unless ``x-ots-apikey`` is this instance's API key."""
    if not headers.get("x-ots-instancename"):
        raise AuthError("missing header x-ots-instancename")
    sent = headers.get("x-ots-apikey", "")
    if identity.api_key is None or not hmac.compare_digest(
        sent.encode(), identity.api_key.encode()
    ):
        raise AuthError("the API key is invalid")
    if headers["x-ots-instancename"] != identity.instance_name:
        raise AuthError("the instance does not exist or is not this API key's")


def canonical(api: str, headers: Mapping[str, str]) -> str:
    lines = sorted(
        f"{k}:{v.strip()}"
        for k, v in headers.items()
        if k.startswith("x-ots-") and k not in _SIGNATURE_HEADERS
    )
    return f"/{api}\nPOST\n\n" + "\n".join(lines) + "\n"


def sign_v2(secret: str, text: str) -> str:
    return base64.b64encode(
        hmac.new(secret.encode(), text.encode(), hashlib.sha1).digest()
    ).decode()


def v4_key(secret: str, date: str, region: str) -> bytes:
    key = hmac.new(f"aliyun_v4{secret}".encode(), date.encode(), hashlib.sha256).digest()
    key = hmac.new(key, region.encode(), hashlib.sha256).digest()
    key = hmac.new(key, b"ots", hashlib.sha256).digest()
    key = hmac.new(key, b"aliyun_v4_request", hashlib.sha256).digest()
    return base64.b64encode(key)


def sign_v4(secret: str, date: str, region: str, text: str) -> str:
    digest = hmac.new(
        v4_key(secret, date, region), (text + "ots").encode(), hashlib.sha256
    ).digest()
    return base64.b64encode(digest).decode()


def verify(api: str, headers: Mapping[str, str], body: bytes, identity: Identity) -> None:
    """Raise :class:`AuthError` unless the request is signed by ``identity`` and intact.

    ``headers`` must have lower-case names. A request carrying ``x-ots-apikey`` is checked as an
    API-key request only.
    """
    if "x-ots-apikey" in headers:
        verify_api_key(headers, identity)
        return
    for name in _REQUIRED:
        if not headers.get(name):
            raise AuthError(f"missing header {name}")
    md5 = base64.b64encode(hashlib.md5(body).digest()).decode()
    if not hmac.compare_digest(md5, headers["x-ots-contentmd5"]):
        raise AuthError("x-ots-contentmd5 does not match the body")
    if not hmac.compare_digest(headers["x-ots-accesskeyid"], identity.access_key_id):
        raise AuthError("unknown AccessKeyId")
    if headers["x-ots-instancename"] != identity.instance_name:
        raise AuthError("the instance does not exist or is not this AccessKey's")
    token = headers.get("x-ots-ststoken")
    if (identity.security_token or None) != (token or None):
        raise AuthError("the security token is missing, expired or wrong")
    try:
        sent = _dt.datetime.strptime(headers["x-ots-date"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
            tzinfo=_dt.timezone.utc
        )
    except ValueError:
        raise AuthError("x-ots-date is not an ISO-8601 UTC time") from None
    if abs((_dt.datetime.now(_dt.timezone.utc) - sent).total_seconds()) > MAX_SKEW_SECONDS:
        raise AuthError("x-ots-date is more than 15 minutes away from the server's clock")
    text = canonical(api, headers)
    if "x-ots-signaturev4" in headers:
        date, region = headers.get("x-ots-signdate", ""), headers.get("x-ots-signregion", "")
        if not date or not region:
            raise AuthError("SignV4 needs x-ots-signdate and x-ots-signregion")
        if identity.region is not None and region != identity.region:
            raise AuthError(f"SignV4 region {region!r} is not this endpoint's region")
        expected = sign_v4(identity.access_key_secret, date, region, text)
        if not hmac.compare_digest(expected, headers["x-ots-signaturev4"]):
            raise AuthError("the request signature (SignV4) does not match")
        return
    signature = headers.get("x-ots-signature")
    if not signature:
        raise AuthError("missing header x-ots-signature")
    if not hmac.compare_digest(sign_v2(identity.access_key_secret, text), signature):
        raise AuthError("the request signature does not match")


def response_authorization(
    api: str, reply: Mapping[str, str], request: Mapping[str, str], identity: Identity
) -> str:
    """The ``Authorization`` header of an answer: ``OTS <ak>:<signature>``.

    HMAC-SHA1 over the sorted lower-case ``x-ots-*`` reply headers, a newline and ``/<Api>``,
    keyed like the request (the secret for SignV2, the derived key for SignV4). SDK 6.4.8 does
    not check it on JSON answers; the vendor's TypeScript SDK refuses a 2xx answer without it.
    """
    lines = sorted(
        f"{k.lower()}:{v.strip()}" for k, v in reply.items() if k.lower().startswith("x-ots-")
    )
    if "x-ots-signaturev4" in request:
        key = v4_key(
            identity.access_key_secret, request["x-ots-signdate"], request["x-ots-signregion"]
        )
    else:
        key = identity.access_key_secret.encode()
    text = "\n".join(lines) + f"\n/{api}"
    digest = hmac.new(key, text.encode(), hashlib.sha1).digest()
    return f"OTS {identity.access_key_id}:{base64.b64encode(digest).decode()}"
