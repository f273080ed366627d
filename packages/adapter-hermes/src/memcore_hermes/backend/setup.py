"""``hermes memory setup tablestore-mem``: choose the backend, its settings, and check the result.

Hermes asks nothing itself once a provider has ``post_setup``, so this walks the user through
it. Settings go to ``tablestore_memory.json``, the key pair only to ``$HERMES_HOME/.env`` (both
mode 0600), as the original plugin kept them. Without a terminal nothing is read from stdin:
the answers come from ``Answers`` (flags of ``hermes tablestore-mem setup`` or
``TABLESTORE_MEMORY_BACKEND``) and the defaults, so a scripted setup never hangs.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import attrs

from memcore.config import BACKENDS, MemcoreConfig, strip_userinfo
from memcore_hermes.config.envfile import (
    AK_VAR,
    API_KEY_VAR,
    SECRET_VARS,
    SK_VAR,
    UnsafeSecretsFile,
    env_file_problem,
    parse_env_text,
    read_env_file,
)
from memcore_hermes.config.home import HermesHome, atomic_write
from memcore_hermes.config.readiness import Readiness, check_readiness

BACKEND_VAR = "TABLESTORE_MEMORY_BACKEND"
LOCAL, TABLESTORE = BACKENDS
BACKEND_CHOICES = (
    (LOCAL, "offline local store under $HERMES_HOME (no account needed)"),
    (TABLESTORE, "Alibaba Cloud TableStore Memory Store (needs an AccessKey pair)"),
)


class Asker(Protocol):
    """How the wizard asks; the terminal one uses Hermes' own pickers and prompts."""

    def choose(self, title: str, options: list[tuple[str, str]], default: int) -> int | None: ...

    def text(self, label: str, default: str) -> str: ...

    def secret(self, label: str) -> str: ...


class DefaultsAsker:
    """No terminal: every question takes its default (never reads stdin)."""

    def choose(self, title: str, options: list[tuple[str, str]], default: int) -> int | None:
        return default

    def text(self, label: str, default: str) -> str:
        return default

    def secret(self, label: str) -> str:
        return ""


class TerminalAsker:
    """Hermes' curses picker and prompts (imported only when a terminal is there)."""

    def choose(self, title: str, options: list[tuple[str, str]], default: int) -> int | None:
        from hermes_cli.memory_setup import _CANCELLED, _curses_select  # type: ignore[import-untyped,unused-ignore]

        picked = _curses_select(title, options, default=default, cancel_returns=_CANCELLED)
        return None if picked == _CANCELLED else int(picked)

    def text(self, label: str, default: str) -> str:
        from hermes_cli.memory_setup import _prompt

        return str(_prompt(label, default=default or None))

    def secret(self, label: str) -> str:
        from hermes_cli.secret_prompt import masked_secret_prompt  # type: ignore[import-untyped,unused-ignore]

        return str(masked_secret_prompt(f"  {label}: ")).strip()


@attrs.frozen
class Answers:
    """Values given up front (flags); None means ask, or take the default without a terminal."""

    backend: str | None = None
    instance_name: str | None = None
    endpoint: str | None = None
    region: str | None = None
    tenant_id: str | None = None
    tenant_scope: str | None = None


def default_asker() -> Asker:
    if all(stream is not None and stream.isatty() for stream in (sys.stdin, sys.stdout)):
        return TerminalAsker()  # a closed stream (`<&-`) is None: never a terminal
    return DefaultsAsker()


def run_setup(
    home: HermesHome,
    *,
    answers: Answers | None = None,
    asker: Asker | None = None,
    environ: Mapping[str, str] | None = None,
    hermes_config: dict[str, Any] | None = None,
    say: Callable[[str], None] = print,
) -> Readiness | None:
    """Ask, write the config and ``.env``, and report readiness; None when cancelled."""
    env = os.environ if environ is None else environ
    answers = answers or Answers()
    if answers.backend is None:  # flags first, then the variable
        answers = attrs.evolve(
            answers, backend=(env.get(BACKEND_VAR) or "").strip().lower() or None
        )
    asker = asker or default_asker()
    existing = _existing_config(home)
    file_keys, unsafe = _env_file_values(home)
    if unsafe:
        say(f"  ! {unsafe}; its keys are not used")
    have_api_key = bool(env.get(API_KEY_VAR) or file_keys.get(API_KEY_VAR))
    have_keys = have_api_key or all(env.get(v) or file_keys.get(v) for v in (AK_VAR, SK_VAR))

    say("\n  Configuring tablestore-mem:\n")
    backend = answers.backend
    if backend is not None and backend not in BACKENDS:
        from memcore.errors import ConfigError

        # Never a silent fallback: a typo must not put memories somewhere else.
        raise ConfigError(
            f"unknown backend {backend!r} (from {BACKEND_VAR} or --backend); choose "
            f"{' or '.join(BACKENDS)}",
            field="backend",
        )
    if backend is None:
        current = existing.get("backend") or (TABLESTORE if have_keys else LOCAL)
        names = [name for name, _ in BACKEND_CHOICES]
        picked = asker.choose(
            "  Where should memories live?",
            list(BACKEND_CHOICES),
            names.index(current) if current in names else 0,
        )
        if picked is None:
            say("\n  Cancelled. No changes saved.\n")
            return None
        backend = names[picked]

    values: dict[str, Any] = {"backend": backend}
    secrets: dict[str, str] = {}
    if backend == TABLESTORE:
        for var, label in ((AK_VAR, "AccessKey ID"), (SK_VAR, "AccessKey secret")):
            kept = " (blank keeps the current one)" if env.get(var) or file_keys.get(var) else ""
            value = asker.secret(f"TableStore {label}{kept}")
            if value:
                secrets[var] = value
        # Without a pair, an API key (it reaches an existing instance's Memory Store only).
        if not all(secrets.get(v) or env.get(v) or file_keys.get(v) for v in (AK_VAR, SK_VAR)):
            kept = " (blank keeps the current one)" if have_api_key else ""
            value = asker.secret(f"TableStore API key, instead of an AccessKey pair{kept}")
            if value:
                secrets[API_KEY_VAR] = value
        for key, label, fallback in (
            ("instance_name", "Instance name (blank: create one on the first start)", ""),
            ("endpoint", "Instance endpoint (blank: found or created with the instance)", ""),
            ("region", "Region", attrs.fields(MemcoreConfig).region.default),
        ):
            given = getattr(answers, key)
            default = str(existing.get(key) or fallback)
            if key == "endpoint":
                # Shown in the prompt, and a config file may not keep a user:password@
                # (TableStore signs with the keys, never with these).
                default = strip_userinfo(default)
            values[key] = given if given is not None else asker.text(label, default)
    if answers.tenant_id is not None:  # config hygiene; a session's user id is never trimmed
        values["tenant_id"] = answers.tenant_id.strip() or None
    if answers.tenant_scope is not None:  # the parser offers only the valid ones
        values["tenant_scope"] = answers.tenant_scope

    saved = home.save_config(values)
    say(f"  ✓ Settings saved to {home.config_file}")
    precompile()
    if secrets:
        write_env_values(home, secrets)
        say(f"  ✓ Keys saved to {home.env_file} (mode 0600)")
    _activate(hermes_config, say)

    readiness = check_readiness(home, env)
    probed = ""
    if (
        readiness.available
        and readiness.backend != LOCAL
        and saved.endpoint
        and saved.instance_name
    ):
        # Asked before the verdict: keys the service refuses were reported under
        # "available", and setup exited 0. (An endpoint that does not answer yet may be set
        # up ahead of time: that stays available, its line says so.)
        from memcore.errors import PermissionDenied

        probed, failed = _probe(home, saved, env)
        if isinstance(failed, PermissionDenied):
            readiness = attrs.evolve(
                readiness,
                available=False,
                reason=f"the service refused the keys: {failed}",
                fix="check the keys in .env (or the API key that wins over a pair), then "
                "run setup again",
            )
    if readiness.available:
        say(f"  ✓ tablestore-mem is available: {readiness.backend} backend")
        if readiness.backend == LOCAL:
            say(f"    store: {home.local_db_file(saved)}")
        elif probed:
            say(f"    endpoint: {probed}")
    else:
        say(f"  ✗ not available yet: {readiness.reason}")
    if readiness.search:
        say(f"    search: {readiness.search}")
    if readiness.fix:
        say(f"    fix: {readiness.fix}")
    say("  Check it any time with `hermes tablestore-mem doctor`.\n")
    return readiness


def precompile() -> None:
    """Write the bytecode of memcore's packages now, so each later Hermes command loads it
    instead of compiling the sources (also where ``PYTHONDONTWRITEBYTECODE`` is set)."""
    import compileall
    import importlib.util
    from pathlib import Path

    for name in ("memcore", "memcore_sqlite", "memcore_tablestore", "memcore_hermes"):
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            continue
        for folder in spec.submodule_search_locations:
            try:
                compileall.compile_dir(Path(folder), quiet=2, workers=1)
            except OSError:  # a read-only install: Python compiles on import as before
                pass


def _probe(
    home: HermesHome, config: Any, environ: Mapping[str, str]
) -> tuple[str, Exception | None]:
    """Whether the configured endpoint answers (a read; fails in seconds when unreachable):
    the line to show, and the error when it does not."""
    from memcore.errors import MemcoreError
    from memcore_hermes.backend.open_store import open_backend_store
    from memcore_hermes.config.credentials import access_keys, load_environment

    try:
        env = load_environment(home.env_file, environ)
        _, store = open_backend_store(home, config, access_keys(env), environ=env)
        try:
            store.list_stores()
        finally:
            store.close()
    except MemcoreError as exc:
        return f"✗ {exc}", exc
    return f"✓ {config.endpoint} answers", None


def _existing_config(home: HermesHome) -> dict[str, Any]:
    from memcore.config import config_to_dict
    from memcore.errors import ConfigError

    try:
        return {k: v for k, v in config_to_dict(home.load_config()).items() if v is not None}
    except ConfigError:
        return {}


def _env_file_values(home: HermesHome) -> tuple[dict[str, str], str]:
    """The trusted ``.env``'s variables, or none and why the file is not trusted."""
    try:
        return read_env_file(home.env_file), ""
    except UnsafeSecretsFile as exc:
        return {}, str(exc)


def write_env_values(home: HermesHome, values: Mapping[str, str]) -> None:
    """Set ``values`` in ``.env``, keeping every other line; atomic, mode 0600.

    The rewritten file is trusted, so an untrusted one's secret lines are not carried over.
    """
    try:
        lines = home.env_file.read_text(encoding="utf-8-sig").splitlines()
    except FileNotFoundError:
        lines = []
    if env_file_problem(home.env_file):
        lines = [line for line in lines if not set(parse_env_text(line)) & set(SECRET_VARS)]
    pending = dict(values)
    out: list[str] = []
    for line in lines:
        name = line.split("=", 1)[0].strip().removeprefix("export ").strip() if "=" in line else ""
        if name not in values or line.lstrip().startswith("#"):
            out.append(line)
        elif name in pending:  # the first line that sets it takes the new value...
            out.append(f"{name}={pending.pop(name)}")
        # ...and a later one goes: the file is read last-line-wins, it would keep the old key
    out.extend(f"{name}={value}" for name, value in pending.items())
    atomic_write(home.env_file, ("\n".join(out) + "\n").encode("utf-8"))


def _activate(config: dict[str, Any] | None, say: Callable[[str], None]) -> None:
    """Select the provider in Hermes' ``config.yaml`` (when running inside Hermes)."""
    try:
        from hermes_cli.config import load_config, save_config  # type: ignore[import-untyped,unused-ignore]
    except ImportError:
        return
    if config is None:
        config = load_config()
    if not isinstance(config.get("memory"), dict):
        config["memory"] = {}
    config["memory"]["provider"] = "tablestore-mem"
    save_config(config)
    say("  ✓ Memory provider tablestore-mem activated in config.yaml")
