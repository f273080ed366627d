"""Page tokens that tell a tenant nothing about other tenants' writes.

A listing resumes after the row sequence number of the last item it returned. That number
counts every write to the file, so a token that showed it let one tenant watch the others'
activity between two of its own pages. Here the number is sealed: one AES block under a key
the file keeps (schema 12, ``secrets``), holding a fixed marker and the number. A token
opens only with that key, and a token this file did not issue (forged, from another file,
or from a release before schema 12) does not open: it is refused as
:func:`memcore.paging.decode_token` refuses one, never read as some other position.
"""

from __future__ import annotations

import base64
import struct
from typing import Any

from memcore.errors import InvalidInput

#: The first half of every sealed block; a block that decrypts to anything else was not
#: sealed with this file's key (a forgery passes with probability 2**-64).
_MARKER = b"memcore:"
_BLOCK = struct.Struct(">8sQ")


class PageTokens:
    """Seals and opens the cursors of one database file's listings."""

    def __init__(self, key: bytes) -> None:
        self._key = key
        self._cipher: Any = None

    def _aes(self) -> Any:
        if self._cipher is None:  # cryptography loads on the first token, not at open
            from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

            self._cipher = Cipher(algorithms.AES(self._key), modes.ECB())
        return self._cipher

    def seal(self, after: int) -> str:
        """The token of a listing that resumes after row ``after`` (-1: the start)."""
        block = _BLOCK.pack(_MARKER, after + 1)
        sealed = self._aes().encryptor().update(block)
        return base64.urlsafe_b64encode(sealed).decode().rstrip("=")

    def open(self, token: str | None) -> int:
        """The row a token resumes after (-1 for None, the start)."""
        if token is None:
            return -1
        try:
            if not isinstance(token, str) or len(token) != 22:
                raise ValueError
            sealed = base64.urlsafe_b64decode(token + "==")
            marker, position = _BLOCK.unpack(self._aes().decryptor().update(sealed))
            if marker != _MARKER or position >= 2**63:
                raise ValueError
            return int(position) - 1
        except Exception:
            raise InvalidInput(
                "next_token is not a token this store issued", field="next_token"
            ) from None
