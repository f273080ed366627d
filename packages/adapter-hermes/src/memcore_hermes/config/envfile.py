"""Reading ``$HERMES_HOME/.env`` safely, with the standard library only (cheap to import).

A secrets file that another user can write could swap in their keys (and so receive our
memories in their account), so such a file is refused with a message saying how to fix it.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path

AK_VAR = "TABLESTORE_MEMORY_AK"
SK_VAR = "TABLESTORE_MEMORY_SK"
TOKEN_VAR = "TABLESTORE_MEMORY_STS_TOKEN"
#: A TableStore API key: used for the Memory Store calls instead of the pair when set.
API_KEY_VAR = "TABLESTORE_MEMORY_API_KEY"
SECRET_VARS = (AK_VAR, SK_VAR, TOKEN_VAR, API_KEY_VAR)


class UnsafeSecretsFile(Exception):
    """The secrets file may not be trusted; the message says why and how to fix it."""


def env_file_problem(path: Path) -> str | None:
    """Why ``path`` may not be used for secrets, or None when it is fine (or absent)."""
    return _others_may_change(path, "the secrets file", "read keys from it")


def config_file_problem(path: Path) -> str | None:
    """Why the plugin's config file may not be obeyed, or None: as for the secrets file, a
    file another user may change could point ``endpoint`` at a server of theirs, which
    would then receive the keys and every memory."""
    return _others_may_change(path, "the configuration file", "use it")


def _others_may_change(path: Path, what: str, use: str) -> str | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot inspect {what} {path} ({exc.strerror})"
    if not stat.S_ISREG(st.st_mode):
        return None  # the null device and the like: what reads it says so
    getuid = getattr(os, "getuid", None)
    if getuid is not None and st.st_uid not in (getuid(), 0):
        return f"{what} {path} belongs to another user; refusing to {use}"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return (
            f"{what} {path} is writable by other users; refusing to use it. "
            f"Fix it with: chmod 600 {path}"
        )
    return None


def parse_env_text(text: str) -> dict[str, str]:
    """Parse ``KEY=value`` lines (``export``, quotes and comments as in shell-style .env files)."""
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        key = key.strip().removeprefix("export ").strip()
        out[key] = _value(value.strip())
    return out


_COMMENT = re.compile(r"\s#")


def _value(value: str) -> str:
    """A value without its quotes and its trailing comment: ``"abc"  # rotated`` kept its
    quotes (the key was then refused as wrong), where Hermes' own loader reads ``abc``."""
    if value[:1] in ("'", '"'):
        end = value.find(value[0], 1)
        rest = value[end + 1 :].strip() if end > 0 else None
        if rest is not None and (not rest or rest.startswith("#")):
            return value[1:end]
    found = _COMMENT.search(value)
    return value[: found.start()].rstrip() if found else value


def read_env_file(path: Path) -> dict[str, str]:
    """The variables of a trusted secrets file; :class:`UnsafeSecretsFile` otherwise."""
    problem = env_file_problem(path)
    if problem:
        raise UnsafeSecretsFile(problem)
    try:
        return parse_env_text(path.read_text(encoding="utf-8-sig"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError):
        raise UnsafeSecretsFile(f"cannot read the secrets file {path}") from None


def environment(env_file: Path, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The trusted file's variables with the environment's non-blank ones over them.

    The file is checked even when the environment already holds the keys, because that is
    where Hermes loaded them from. One read serves the keys and the model settings alike.
    """
    env = os.environ if environ is None else environ
    merged = read_env_file(env_file)
    merged.update({name: value for name, value in env.items() if value.strip()})
    return merged


def secrets_in(env: Mapping[str, str]) -> dict[str, str]:
    """The secret variables that are set (not blank) in ``env``."""
    values = {name: env.get(name, "").strip() for name in SECRET_VARS}
    return {name: value for name, value in values.items() if value}


def secret_values(env_file: Path, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The secret variables that are set, from the environment first, then the file."""
    return secrets_in(environment(env_file, environ))
