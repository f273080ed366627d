"""Credentials: where they come from, and that secrets never show."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from memcore.errors import PermissionDenied
from memcore_tablestore.credentials import Credentials, resolve_credentials
from memcore_tablestore.emulator import EmulatorServer
from memcore_tablestore.stores.sync_store import TableStoreMemoryStore


def test_plugin_variables_come_first() -> None:
    env = {
        "TABLESTORE_MEMORY_AK": "plugin-ak-123",
        "TABLESTORE_MEMORY_SK": "plugin-sk-secret",
        "ALIBABA_CLOUD_ACCESS_KEY_ID": "cloud-ak",
        "ALIBABA_CLOUD_ACCESS_KEY_SECRET": "cloud-sk",
    }
    creds = resolve_credentials(env)
    assert (creds.access_key_id, creds.access_key_secret, creds.security_token) == (
        "plugin-ak-123",
        "plugin-sk-secret",
        None,
    )


def test_default_chain_environment_with_sts_token() -> None:
    env = {
        "ALIBABA_CLOUD_ACCESS_KEY_ID": "cloud-ak",
        "ALIBABA_CLOUD_ACCESS_KEY_SECRET": "cloud-sk",
        "ALIBABA_CLOUD_SECURITY_TOKEN": "sts-xyz",
    }
    assert resolve_credentials(env) == Credentials("cloud-ak", "cloud-sk", "sts-xyz")


def test_missing_credentials_name_the_variables() -> None:
    with pytest.raises(PermissionDenied) as caught:
        resolve_credentials({})
    message = str(caught.value)
    assert "TABLESTORE_MEMORY_AK" in message and "TABLESTORE_MEMORY_SK" in message
    assert "ALIBABA_CLOUD_ACCESS_KEY_ID" in message


def test_half_a_pair_is_refused() -> None:
    with pytest.raises(PermissionDenied) as caught:
        resolve_credentials({"TABLESTORE_MEMORY_AK": "only-ak"})
    assert caught.value.field == "TABLESTORE_MEMORY_SK"


def test_half_the_cloud_pair_is_refused_naming_the_other_half() -> None:
    with pytest.raises(PermissionDenied) as caught:
        resolve_credentials({"ALIBABA_CLOUD_ACCESS_KEY_ID": "cloud-ak"})
    assert caught.value.field == "ALIBABA_CLOUD_ACCESS_KEY_SECRET"
    assert "cloud-ak" not in str(caught.value)


def test_secrets_never_appear_in_reprs() -> None:
    creds = Credentials("LTAIexampleid42", "super-secret-value", "sts-secret-token")
    for text in (
        repr(creds),
        str(creds),
        repr(TableStoreMemoryStore("http://127.0.0.1:1", "emulator", creds)),
    ):
        assert "super-secret-value" not in text
        assert "sts-secret-token" not in text
        assert "LTAIexampleid42" not in text


def test_empty_secret_is_refused() -> None:
    with pytest.raises(PermissionDenied):
        Credentials("ak", "  ")


def test_sts_credentials_reach_the_wire(emulator: EmulatorServer) -> None:
    # The emulator expects no token; a token sent means the SDK got it from us.
    store = TableStoreMemoryStore(
        emulator.url, emulator.instance_name, Credentials("emu-ak", "emu-sk", "tok")
    )
    with pytest.raises(PermissionDenied) as caught:
        store.list_stores()
    assert "security token" in str(caught.value)
    store.close()


def test_default_chain_reads_a_profile_file(tmp_path: Path) -> None:
    """The last resort, in a child process: the library reads its environment at import."""
    profile = tmp_path / "credentials.ini"
    profile.write_text(
        "[default]\ntype = access_key\naccess_key_id = file-ak-1\naccess_key_secret = file-sk-1\n"
    )
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "ALIBABA_CLOUD_CREDENTIALS_FILE": str(profile),
        "ALIBABA_CLOUD_ECS_METADATA_DISABLED": "true",
    }
    code = "from memcore_tablestore.credentials import resolve_credentials as r; c = r(); print(c.access_key_id, c.access_key_secret)"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr[-500:]
    assert out.stdout.split() == ["file-ak-1", "file-sk-1"]


def test_default_chain_failure_is_permission_denied(tmp_path: Path) -> None:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "ALIBABA_CLOUD_ECS_METADATA_DISABLED": "true",
    }
    code = (
        "from memcore_tablestore.credentials import resolve_credentials as r\n"
        "from memcore.errors import PermissionDenied\n"
        "try:\n    r()\nexcept PermissionDenied as e:\n    print('denied', e.field)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.stdout.split() == ["denied", "credentials"], out.stderr[-500:]


def test_the_chains_own_log_lines_stay_off_stderr(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """The SDK gives its "credentials" logger stderr handlers of its own and logs each failed
    provider with a traceback (which may quote paths and settings): a library user saw a
    screen of them before the one PermissionDenied."""
    import logging

    import alibabacloud_credentials.client as chain
    import alibabacloud_credentials.provider.refreshable  # noqa: F401  (adds its handlers)

    from memcore.errors import PermissionDenied
    from memcore_tablestore.credentials import resolve_credentials

    class Failing:
        def get_credential(self) -> None:
            try:
                raise OSError("/home/someone/.alibabacloud/credentials: provider failed")
            except OSError as exc:
                logging.getLogger("credentials").exception(exc)
                raise

    log = logging.getLogger("credentials")
    # On as in a fresh process (a logging config loaded by another test may have turned it off).
    monkeypatch.setattr(log, "disabled", False)
    monkeypatch.setattr(chain, "Client", Failing)
    for var in ("TABLESTORE_MEMORY_AK", "ALIBABA_CLOUD_ACCESS_KEY_ID", "TABLESTORE_MEMORY_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    capfd.readouterr()
    with pytest.raises(PermissionDenied):
        resolve_credentials()
    assert "provider failed" not in capfd.readouterr().err
    assert not log.disabled  # on again once asked


def _renewing_chain(monkeypatch: pytest.MonkeyPatch, issued: list[tuple[str, str, str]]) -> None:
    """The Alibaba Cloud default chain as a RAM role gives it: STS credentials that it renews
    before they expire (here: whatever ``issued`` ends with when asked)."""
    from types import SimpleNamespace

    import alibabacloud_credentials.client as chain

    class Chain:
        def get_credential(self) -> SimpleNamespace:
            ak, sk, token = issued[-1]
            return SimpleNamespace(access_key_id=ak, access_key_secret=sk, security_token=token)

    monkeypatch.setattr(chain, "Client", Chain)
    for var in (
        "TABLESTORE_MEMORY_AK",
        "TABLESTORE_MEMORY_SK",
        "ALIBABA_CLOUD_ACCESS_KEY_ID",
        "ALIBABA_CLOUD_ACCESS_KEY_SECRET",
    ):
        monkeypatch.delenv(var, raising=False)


def _accepts(emulator: EmulatorServer, ak: str, sk: str, token: str) -> None:
    import attrs

    emulator.identity = attrs.evolve(
        emulator.identity, access_key_id=ak, access_key_secret=sk, security_token=token
    )


FIRST = ("STS.first-key-id-0001", "first-secret-0001", "first-sts-token-0001")
SECOND = ("STS.second-key-id-0002", "second-secret-0002", "second-sts-token-0002")


def test_sts_credentials_from_the_default_chain_are_renewed_mid_run(
    emulator: EmulatorServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A RAM role's STS token lasts about an hour: a long-running store (the MCP server, a
    Hermes gateway) signed with the one it started with and was refused (403) for good once
    it expired, while the chain had renewed it."""
    issued = [FIRST]
    _renewing_chain(monkeypatch, issued)
    _accepts(emulator, *FIRST)
    store = TableStoreMemoryStore(emulator.url, emulator.instance_name, resolve_credentials())
    assert store.list_stores() == []
    issued.append(SECOND)  # the chain renewed; the service takes only the new ones now
    _accepts(emulator, *SECOND)
    assert store.list_stores() == []
    # An answer quoting the renewed secrets would be scrubbed of them too, and no repr shows them.
    assert set(SECOND) <= set(store._settings.secrets)
    assert not [s for s in (*FIRST, *SECOND) if s in repr(store) + repr(resolve_credentials())]
    store.close()


def test_the_async_store_renews_them_too(
    emulator: EmulatorServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    from memcore_tablestore.stores.async_store import AsyncTableStoreMemoryStore

    issued = [FIRST]
    _renewing_chain(monkeypatch, issued)
    _accepts(emulator, *FIRST)

    async def run() -> None:
        store = AsyncTableStoreMemoryStore(
            emulator.url, emulator.instance_name, resolve_credentials()
        )
        try:
            assert await store.list_stores() == []
            issued.append(SECOND)
            _accepts(emulator, *SECOND)
            assert await store.list_stores() == []
        finally:
            await store.close()

    asyncio.run(run())


@pytest.mark.parametrize(
    "var",
    [
        "TABLESTORE_MEMORY_AK",
        "TABLESTORE_MEMORY_SK",
        "TABLESTORE_MEMORY_STS_TOKEN",
        "ALIBABA_CLOUD_ACCESS_KEY_ID",
        "ALIBABA_CLOUD_ACCESS_KEY_SECRET",
        "ALIBABA_CLOUD_SECURITY_TOKEN",
    ],
)
@pytest.mark.parametrize("bad", ["key-with-a-\udce9-byte", "key-with-a\nline-break", "clé-accent"])
def test_a_key_no_request_can_carry_is_refused_where_it_is_read(var: str, bad: str) -> None:
    """A stray byte in an access key (not UTF-8 in the environment, or pasted with a line
    break) failed on the first call as "could not be sent: 'utf-8' codec can't encode", exit
    2, or as "the service answered with a non-object JSON body", exit 5, blaming the service;
    ``doctor`` had said the credentials were found."""
    prefix = "TABLESTORE_MEMORY" if var.startswith("TABLESTORE") else "ALIBABA_CLOUD"
    names = (
        ("TABLESTORE_MEMORY_AK", "TABLESTORE_MEMORY_SK")
        if prefix == "TABLESTORE_MEMORY"
        else ("ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET")
    )
    env = {name: "good-value-1234" for name in names}
    env[var] = bad
    with pytest.raises(PermissionDenied) as caught:
        resolve_credentials(env)
    assert caught.value.field == var
    assert str(caught.value).startswith(f"credentials: {var} holds a character no HTTP")
    assert bad not in str(caught.value) and "good-value-1234" not in str(caught.value)


def test_a_pair_built_by_hand_is_checked_alike() -> None:
    with pytest.raises(PermissionDenied) as caught:
        Credentials("ak\n", "secret")
    assert caught.value.field == "access_key_id"
