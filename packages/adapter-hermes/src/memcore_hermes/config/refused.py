"""A setting the config refused, in the type Hermes' dashboard reports as the user's mistake.

Its own module: importing the plugin must not load memcore (Hermes imports every provider
to ask ``is_available()``).
"""

from __future__ import annotations

from memcore.errors import ConfigError


class SettingRefused(ConfigError, ValueError):
    """A ``ConfigError`` that is also a ``ValueError``: Hermes' dashboard answers that with a
    400 and the message (any other error is its 500, without a reason)."""

    @classmethod
    def of(cls, error: ConfigError) -> SettingRefused:
        """``error`` as this type: same message, key and file."""
        refused = cls.__new__(cls)
        refused.__dict__.update(vars(error))
        refused.args = error.args
        return refused
