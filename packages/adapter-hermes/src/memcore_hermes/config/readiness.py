"""Whether the provider can start, and if not the real reason and its fix (no network).

``is_available()``, ``hermes memory status`` and ``setup`` share this one verdict, so they
never disagree: a broken config names its file and key, an out-of-range value is caught
before every call fails, an unsafe ``.env`` says ``chmod 600``, and missing keys point at the
offline backend as the way to start without an account.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from memcore_hermes.config.envfile import (
    AK_VAR,
    API_KEY_VAR,
    SK_VAR,
    UnsafeSecretsFile,
    secret_values,
)
from memcore_hermes.config.home import HermesHome

SETUP_COMMAND = "hermes memory setup tablestore-mem"
OFFLINE_HINT = (
    f"no cloud account? run `{SETUP_COMMAND}` and choose the offline local store, "
    'or put {"backend": "local"} in tablestore_memory.json'
)


@attrs.frozen
class Readiness:
    """The verdict: ``available``, the backend it would open, and why not / how to fix."""

    available: bool
    backend: str | None
    reason: str = ""
    fix: str = ""
    search: str = ""

    def status_lines(self) -> dict[str, str]:
        """What ``hermes memory status`` prints under the provider's name."""
        out = {"backend": self.backend or "(not chosen)"}
        if self.search:
            out["search"] = self.search
        if self.reason:
            out["problem" if not self.available else "note"] = self.reason
        if self.fix:
            out["fix"] = self.fix
        return out


def missing_semantic_packages() -> list[str]:
    """Pip names of the semantic-search packages that are not installed (found, not imported):
    the store's own list, which decides whether it embeds."""
    from memcore_sqlite.embedders import missing_onnx_requirements

    return [module.replace("_", "-") for module in missing_onnx_requirements()]


def semantic_fix(missing: list[str]) -> str:
    return (
        f"install them into the Python that runs Hermes: "
        f"{sys.executable} -m pip install {' '.join(missing)} "
        f"(or rerun `{SETUP_COMMAND}`), then `hermes tablestore-mem reindex`"
    )


def local_search_mode(embedder: str) -> tuple[str, str]:
    """(mode text, fix) for the local store with the configured ``embedder`` setting."""
    if embedder == "none":
        return "lexical (embedder: none in tablestore_memory.json)", ""
    missing = missing_semantic_packages()
    if not missing:
        return "hybrid (full-text and semantic)", ""
    return (
        f"lexical only: the semantic packages are missing ({', '.join(missing)})",
        semantic_fix(missing),
    )


def check_readiness(home: HermesHome, environ: Mapping[str, str] | None = None) -> Readiness:
    """The provider's readiness in ``home``; never raises, never touches the network."""
    from memcore.errors import ConfigError

    try:
        config = home.load_config()
    except ConfigError as exc:
        return Readiness(
            False,
            None,
            reason=str(exc),
            fix=f"correct {home.config_file}, or rerun `{SETUP_COMMAND}`",
        )
    except Exception as exc:  # odd files must never break Hermes' provider scan
        return Readiness(False, None, reason=f"cannot read {home.config_file}: {exc}")
    try:
        secrets: dict[str, Any] = secret_values(home.env_file, environ)
        unsafe = ""
    except UnsafeSecretsFile as exc:
        secrets, unsafe = {}, str(exc)
    has_pair = {AK_VAR, SK_VAR} <= set(secrets)
    has_api_key = API_KEY_VAR in secrets
    backend = config.backend or ("tablestore" if has_pair or has_api_key else None)
    if unsafe:
        # The local store reads its chat model's settings (and key) from the same file, and
        # ``initialize()`` refuses it for either backend.
        return Readiness(
            False, backend or "tablestore", reason=unsafe, fix=f"chmod 600 {home.env_file}"
        )
    if backend == "local":
        fix = f"correct local_path in {home.config_file}, or leave it out for the default"
        try:  # a blank local_path, or one in an unknown user's home: initialize() refuses it
            db = home.local_db_file(config)
        except ConfigError as exc:
            return Readiness(False, "local", reason=str(exc), fix=fix)
        unusable = _no_file_path(db)
        if unusable:  # every session's start failed, while status said available
            return Readiness(False, "local", reason=unusable, fix=fix)
        search, fix = local_search_mode(config.embedder)
        note = "" if not fix else "semantic recall is off"
        return Readiness(True, "local", reason=note, fix=fix, search=search)
    if has_api_key and not has_pair and not (config.endpoint and config.instance_name):
        return Readiness(
            False,
            "tablestore",
            reason=f"{API_KEY_VAR} reaches an existing instance only, and no endpoint and "
            "instance_name are configured",
            fix=f"rerun `{SETUP_COMMAND}` and give the instance's endpoint and name, or add "
            f"{AK_VAR} and {SK_VAR} to create one",
        )
    missing = [] if has_api_key else [name for name in (AK_VAR, SK_VAR) if name not in secrets]
    if missing:
        return Readiness(
            False,
            backend or "tablestore",
            reason=f"missing {' and '.join(missing)} (environment or {home.env_file})",
            fix=f"add them to {home.env_file} (mode 0600); {OFFLINE_HINT}",
        )
    from memcore.config import without_userinfo

    # Printed by ``hermes memory status``: a hand-written user:password@ is used, never shown.
    where = without_userinfo(config.endpoint) or "a new instance is created on the first start"
    return Readiness(True, "tablestore", search=f"TableStore memory search ({where})")


def _no_file_path(db: Path) -> str:
    """Why no database file can be at ``db`` (a folder there, or a file where a folder
    should be), else ""; a file that cannot be written or read is the store's to say."""
    from memcore_sqlite.storage.room import nearest_existing

    try:
        if db.is_dir():
            return f"the memory database {db} is a folder; give the path of a file"
        above = nearest_existing(db.parent)
        if not above.is_dir():
            return f"the memory database {db} cannot be made: {above} is a file"
    except OSError:
        pass
    return ""
