"""Page tokens that tell a tenant nothing about other tenants' writes.

A listing resumes after the row sequence number of the last item it returned. That number
counts every write to the file, so a token that showed it let one tenant watch the others'
activity between two of its own pages. Here the number is sealed: one AES block under a key
the file keeps (schema 12, ``secrets``), holding the number and a digest of the listing's
name (what is listed, the store, the pattern or scope, the filters). So a token opens only
in the listing that issued it: one tenant's token given to another tenant's listing, or a
messages token given to the memories, is refused like a token this file did not issue
(forged, from another file, from a release before schema 12), never read as some other
position. A forgery passes with probability 2**-64.
"""

from __future__ import annotations

import base64
import hashlib
import struct
from typing import Any

from memcore.paging import foreign_token

_BLOCK = struct.Struct(">8sQ")


class PageTokens:
    """Seals and opens the cursors of one database file's listings."""

    def __init__(self, key: bytes) -> None:
        self._key = key
        self._cipher: Any = None

    def listing(self, *parts: object) -> Cursor:
        """The cursor of one listing, named by its parts (kind, store, pattern, filters)."""
        name = "\x1f".join(map(str, parts)).encode("utf-8", "surrogatepass")
        return Cursor(self, hashlib.blake2b(name, digest_size=8, person=b"memcore-page").digest())

    def aes(self) -> Any:
        if self._cipher is None:  # cryptography loads on the first token, not at open
            from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

            self._cipher = Cipher(algorithms.AES(self._key), modes.ECB())
        return self._cipher


class Cursor:
    """Where one listing resumes: sealed with the listing's name, opened only with it."""

    def __init__(self, tokens: PageTokens, marker: bytes) -> None:
        self._tokens = tokens
        self._marker = marker

    def seal(self, after: int) -> str:
        """The token of a listing that resumes after row ``after`` (-1: the start)."""
        block = _BLOCK.pack(self._marker, after + 1)
        sealed = self._tokens.aes().encryptor().update(block)
        return base64.urlsafe_b64encode(sealed).decode().rstrip("=")

    def open(self, token: str | None) -> int:
        """The row a token resumes after (-1 for None, the start)."""
        if token is None:
            return -1
        try:
            if not isinstance(token, str) or len(token) != 22:
                raise ValueError
            sealed = base64.urlsafe_b64decode(token + "==")
            marker, position = _BLOCK.unpack(self._tokens.aes().decryptor().update(sealed))
            if marker != self._marker or position >= 2**63:
                raise ValueError
            return int(position) - 1
        except Exception:
            raise foreign_token() from None
