"""The access key pair as a value whose repr never shows it, and output redaction."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import attrs

from memcore.errors import ConfigError
from memcore_hermes.envfile import (
    AK_VAR,
    SK_VAR,
    TOKEN_VAR,
    UnsafeSecretsFile,
    environment,
    secrets_in,
)


def _hidden(_: object) -> str:
    return "<redacted>"


@attrs.frozen
class AccessKeys:
    """An access key pair (and optional STS token)."""

    access_key_id: str = attrs.field(repr=_hidden)
    access_key_secret: str = attrs.field(repr=_hidden)
    security_token: str | None = attrs.field(default=None, repr=_hidden)

    def values(self) -> tuple[str, ...]:
        """Every secret string, for redacting output."""
        return tuple(
            v for v in (self.access_key_id, self.access_key_secret, self.security_token) if v
        )


def load_environment(env_file: Path, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment over the trusted ``.env`` (read once); :class:`ConfigError` if unsafe."""
    try:
        return environment(env_file, environ)
    except UnsafeSecretsFile as exc:
        raise ConfigError(str(exc), field=".env", source=str(env_file)) from None


def load_access_keys(env_file: Path, environ: Mapping[str, str] | None = None) -> AccessKeys | None:
    """The key pair, or None when a half is missing; :class:`ConfigError` for an unsafe file."""
    return access_keys(load_environment(env_file, environ))


def access_keys(env: Mapping[str, str]) -> AccessKeys | None:
    """The key pair in ``env`` (as :func:`load_environment` returns it), or None."""
    values = secrets_in(env)
    if AK_VAR not in values or SK_VAR not in values:
        return None
    return AccessKeys(values[AK_VAR], values[SK_VAR], values.get(TOKEN_VAR))


def redact(text: str, secrets: tuple[str, ...]) -> str:
    """Replace every occurrence of a secret value (belt and braces for diagnostics output)."""
    for value in secrets:
        if value and len(value) >= 4:
            text = text.replace(value, "***")
    return text
