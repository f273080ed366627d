"""The access key pair and API key as a value whose repr never shows them, and output
redaction."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import attrs

from memcore.errors import ConfigError
from memcore_hermes.config.envfile import (
    AK_VAR,
    API_KEY_VAR,
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
    """An access key pair (and optional STS token), and/or a TableStore API key.

    The API key, when set, is what the Memory Store calls use (it takes precedence); creating
    an instance on first run still needs the pair. Either half of the pair is empty when only
    the API key is set."""

    access_key_id: str = attrs.field(repr=_hidden)
    access_key_secret: str = attrs.field(repr=_hidden)
    security_token: str | None = attrs.field(default=None, repr=_hidden)
    api_key: str | None = attrs.field(default=None, repr=_hidden)

    @property
    def has_pair(self) -> bool:
        return bool(self.access_key_id and self.access_key_secret)

    def values(self) -> tuple[str, ...]:
        """Every secret string, for redacting output."""
        return tuple(
            v
            for v in (self.access_key_id, self.access_key_secret, self.security_token, self.api_key)
            if v
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
    """The key pair and/or API key in ``env`` (as :func:`load_environment` returns it), or
    None when neither a whole pair nor an API key is set."""
    values = secrets_in(env)
    api_key = values.get(API_KEY_VAR)
    if AK_VAR not in values or SK_VAR not in values:
        return None if api_key is None else AccessKeys("", "", None, api_key)
    return AccessKeys(values[AK_VAR], values[SK_VAR], values.get(TOKEN_VAR), api_key)


def redact(text: str, secrets: tuple[str, ...]) -> str:
    """Replace every occurrence of a secret value (belt and braces for diagnostics output)."""
    for value in secrets:
        if value and len(value) >= 4:
            text = text.replace(value, "***")
    return text
