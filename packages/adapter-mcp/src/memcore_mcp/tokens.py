"""Bearer tokens for the HTTP transport: each token names exactly one tenant.

The map is JSON, from a file (``--tokens FILE`` or ``MEMCORE_MCP_TOKENS_FILE``) or from the
``MEMCORE_MCP_TOKENS`` variable, tenant to token (or to a list of tokens)::

    {"alice": "4f9c...at least 32 characters", "bob": ["token-one...", "token-two..."]}

Tenants go through the same normalisation as ``memcore --tenant``. Only SHA-256 digests are
kept; a presented token is compared with every digest in constant time, and no token ever
appears in a log line, an error or a repr.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import shlex
from collections.abc import Mapping

import attrs

from memcore.errors import ConfigError
from memcore.limits import unicode_problem
from memcore.scope import normalize_segment, tenant_segment
from memcore_cli.settings.home import expand

TOKENS_ENV = "MEMCORE_MCP_TOKENS"
TOKENS_FILE_ENV = "MEMCORE_MCP_TOKENS_FILE"
#: A token shorter than this is refused: it would be guessable (``openssl rand -hex 32`` gives 64).
MIN_TOKEN_CHARS = 32


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


@attrs.frozen(repr=False)
class TokenMap:
    """Token digests and the tenant (as written; normalised where it is used) each one opens."""

    entries: tuple[tuple[bytes, str], ...]

    def __repr__(self) -> str:
        return f"TokenMap({len(self.entries)} tokens)"

    @property
    def tenants(self) -> frozenset[str]:
        return frozenset(tenant for _, tenant in self.entries)

    def tenant_for(self, token: str) -> str | None:
        """The tenant ``token`` opens, or None. Every entry is compared, whatever matches, so
        the time taken says nothing about which entry (or how much of one) matched."""
        presented = _digest(token)
        found: str | None = None
        for digest, tenant in self.entries:
            if hmac.compare_digest(presented, digest):
                found = tenant
        return found

    @classmethod
    def parse(cls, text: str | bytes, *, source: str) -> TokenMap:
        try:
            data = json.loads(text)
        except (ValueError, UnicodeDecodeError, RecursionError):  # Recursion: nested too deeply
            raise ConfigError("the token map is not valid JSON", source=source) from None
        if not isinstance(data, Mapping) or not data:
            raise ConfigError(
                'the token map must be a JSON object of tenant to token: {"alice": "..."}',
                source=source,
            )
        entries: dict[bytes, str] = {}
        for index, (raw_tenant, value) in enumerate(data.items()):
            if not normalize_segment(raw_tenant, default=""):
                raise ConfigError("a tenant in the token map is empty", source=source)
            tenant = str(raw_tenant)
            problem = unicode_problem(tenant)
            if problem is not None:  # a tenant --tenant and MEMCORE_TENANT refuse to name
                raise ConfigError(
                    f"a tenant in the token map is {problem}",
                    field=f"entry {index + 1}",
                    source=source,
                )
            where = _name(tenant, index)
            tokens = value if isinstance(value, list) else [value]
            if not tokens:
                raise ConfigError("the tenant has no token", field=where, source=source)
            for token in tokens:
                if not isinstance(token, str) or len(token) < MIN_TOKEN_CHARS:
                    raise ConfigError(
                        f"each token must be a string of at least {MIN_TOKEN_CHARS} characters",
                        field=where,
                        source=source,
                    )
                if token != token.strip() or any(ch.isspace() for ch in token):
                    raise ConfigError(
                        "a token may not contain whitespace", field=where, source=source
                    )
                if not all("!" <= ch <= "~" for ch in token):
                    # A header is read as Latin-1: such a token never matched what was sent.
                    raise ConfigError(
                        "a token may hold printable ASCII characters only (an HTTP header "
                        "carries no others)",
                        field=where,
                        source=source,
                    )
                digest = _digest(token)
                other = entries.get(digest, tenant)
                # Tenants by the rule that resolves them (never trimmed): "alice " is not
                # "alice", so one token for both would open only one of them.
                if tenant_segment(other) != tenant_segment(tenant):
                    raise ConfigError(
                        "one token is given to two tenants", field=where, source=source
                    )
                entries[digest] = tenant
        return cls(tuple(entries.items()))


def _name(tenant: str, index: int) -> str:
    """How an error names a tenant of the map: by name, unless the name could hold a token (a
    map written token to tenant, perhaps as ``Bearer <token>``), which no error shows; then
    by its place in the map."""
    if any(len(word) >= MIN_TOKEN_CHARS for word in tenant.split()):
        return f"entry {index + 1}"
    return tenant


def load_tokens(path: str | None, environ: Mapping[str, str]) -> TokenMap | None:
    """The token map from ``path``, else ``MEMCORE_MCP_TOKENS_FILE``, else ``MEMCORE_MCP_TOKENS``;
    None when none is given. An empty ``path`` (``--tokens "$UNSET"``) is refused: falling
    back would serve tenants the command line did not name."""
    if path is not None and not path.strip():
        raise ConfigError(
            "--tokens is empty (an unset shell variable?); give the token file, or leave it "
            f"out to use {TOKENS_FILE_ENV} or {TOKENS_ENV}",
            field="tokens",
        )
    file_name = path or environ.get(TOKENS_FILE_ENV, "").strip() or None
    if file_name is not None:
        file_path = expand(file_name, field="tokens" if path else TOKENS_FILE_ENV)
        try:
            text = file_path.read_bytes()
        except OSError as exc:
            raise ConfigError(
                f"cannot read the token file ({exc.strerror})", source=str(file_path)
            ) from None
        mode = file_path.stat().st_mode & 0o777
        if os.name == "posix" and mode & 0o077:
            # The path inside the advice: after it (" in PATH"), it read as where to run chmod.
            raise ConfigError(
                f"other users can read or change the token file (mode {mode:04o}); "
                f"run chmod 600 {shlex.quote(str(file_path))}"
            )
        return TokenMap.parse(text, source=str(file_path))
    inline = environ.get(TOKENS_ENV, "").strip()
    if inline:
        return TokenMap.parse(inline, source=TOKENS_ENV)
    return None
