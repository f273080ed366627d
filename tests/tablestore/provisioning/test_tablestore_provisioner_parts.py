"""The provisioner's building blocks: error classification, atomic files, bounded waits."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from memcore.errors import (
    ConfigError,
    Conflict,
    InvalidInput,
    NotFound,
    PermissionDenied,
    Throttled,
    Unavailable,
)
from memcore_tablestore.provisioning.errors import classify, redact
from memcore_tablestore.provisioning.files import (
    LOCK_FILE,
    PENDING_MARKER,
    PendingInstance,
    atomic_write_text,
    bootstrap_lock,
    clear_pending,
    read_pending,
    write_pending,
)
from memcore_tablestore.provisioning.wait import backoff, retry_transient, wait_for_dns


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.mark.parametrize(
    ("status", "code", "kind"),
    [
        (400, "SignatureDoesNotMatch", PermissionDenied),
        (404, "InvalidAccessKeyId.NotFound", PermissionDenied),
        (403, "Forbidden.RAM", PermissionDenied),
        (403, "SomethingNew", PermissionDenied),
        (400, "InvalidParameter.VCU", InvalidInput),
        (400, "MissingClusterType", InvalidInput),
        (400, "Throttling.User", Throttled),
        (429, None, Throttled),
        (503, "ServiceUnavailable", Throttled),
        (500, "InternalError", Unavailable),
        (409, None, Conflict),
        (400, "OTSObjectAlreadyExist", Conflict),
        (404, "InvalidInstanceName.NotFound", NotFound),
        (None, None, Unavailable),
    ],
)
def test_errors_are_classified_by_code_then_status(
    status: int | None, code: str | None, kind: type
) -> None:
    assert issubclass(classify(status, code), kind)


def test_redact_hides_every_secret() -> None:
    assert redact("key abcdef and tok 123456", ["abcdef", "123456", None]) == "key *** and tok ***"


def test_atomic_write_keeps_the_old_file_when_writing_fails(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    atomic_write_text(path, '{"top_k": 3}\n')
    with pytest.raises(UnicodeEncodeError):
        atomic_write_text(path, "\udcff")  # cannot be encoded: fails halfway through
    assert path.read_text() == '{"top_k": 3}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["c.json"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_atomic_write_never_replaces_what_is_not_a_file(tmp_path: Path) -> None:
    """A config path that names a device or a named pipe (``--config /dev/null``, or a link
    to one) was renamed over: the device became a file."""
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    (tmp_path / "c.json").symlink_to(pipe)
    for path in (pipe, tmp_path / "c.json"):
        with pytest.raises(ConfigError, match="not a file"):
            atomic_write_text(path, "{}\n")
    assert stat.S_ISFIFO(pipe.stat().st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.json", "pipe"]


@pytest.mark.parametrize("umask", [0o022, 0o002])
def test_a_folder_made_for_the_config_or_the_lock_is_private(tmp_path: Path, umask: int) -> None:
    """A first ``memcore provision`` makes the data home that later holds the memories: it
    must be 0700 as the store makes it, whatever the umask; a folder already there is kept."""
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    old = os.umask(umask)
    try:
        atomic_write_text(tmp_path / "a" / "home" / "config.json", "{}\n")
        with bootstrap_lock(tmp_path / "b" / "home", timeout=1.0):
            pass
        write_pending(tmp_path / "c" / "home", PendingInstance(alias="x", region="cn-beijing"))
        atomic_write_text(shared / "config.json", "{}\n")
    finally:
        os.umask(old)
    for made in ("a", "b", "c"):
        assert stat.S_IMODE((tmp_path / made / "home").stat().st_mode) == 0o700
    assert stat.S_IMODE(shared.stat().st_mode) == 0o755


def test_atomic_write_keeps_a_symlinked_config_linked(tmp_path: Path) -> None:
    """The provisioner saves the instance into the config: a linked config (dotfiles) gets it
    in its target, and stays a link."""
    kept = tmp_path / "dotfiles" / "tablestore_memory.json"
    kept.parent.mkdir()
    kept.write_text("{}\n")
    link = tmp_path / "home" / "tablestore_memory.json"
    link.parent.mkdir()
    link.symlink_to(kept)
    atomic_write_text(link, '{"instance_name": "ots-1"}\n')
    assert link.is_symlink()
    assert kept.read_text() == '{"instance_name": "ots-1"}\n'
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600


def test_pending_marker_round_trips_and_clears(tmp_path: Path) -> None:
    pending = PendingInstance(
        alias="memcore-1", region="cn-beijing", instance_name="ots-1", started_at=5.0
    )
    write_pending(tmp_path, pending)
    assert read_pending(tmp_path) == pending
    clear_pending(tmp_path)
    assert read_pending(tmp_path) is None
    clear_pending(tmp_path)  # clearing twice is fine


def test_a_damaged_marker_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / PENDING_MARKER).write_text('{"alias": 3}')
    with pytest.raises(ConfigError):
        read_pending(tmp_path)


def test_dns_wait_is_bounded() -> None:
    clock = Clock()
    lookups: list[str] = []

    def never(host: str) -> object:
        lookups.append(host)
        raise socket.gaierror(socket.EAI_NONAME, "unknown")

    with pytest.raises(Unavailable):
        wait_for_dns("x.example", resolver=never, timeout=30.0, clock=clock, sleep=clock.sleep)
    assert clock.now == pytest.approx(30.0)
    assert 3 <= len(lookups) <= 12


def test_a_long_dns_wait_keeps_its_capped_delay() -> None:
    """``--dns-timeout`` has no upper bound: hours of lookups must not overflow the backoff."""
    clock = Clock()
    with pytest.raises(Unavailable):
        wait_for_dns(
            "x.example",
            resolver=lambda host: (_ for _ in ()).throw(OSError("unknown")),
            timeout=6 * 3600.0,
            clock=clock,
            sleep=clock.sleep,
        )
    assert clock.now == pytest.approx(6 * 3600.0)
    assert backoff(5000) == backoff(5000, first=10.0) == 10.0


def test_retry_stops_at_the_first_non_retryable_error() -> None:
    clock = Clock()
    calls: list[int] = []

    def refused() -> None:
        calls.append(1)
        raise PermissionDenied("no")

    with pytest.raises(PermissionDenied):
        retry_transient(refused, timeout=60.0, clock=clock, sleep=clock.sleep)
    assert calls == [1]
    assert clock.now == 0.0


def test_retry_gives_up_with_the_last_error_after_the_timeout() -> None:
    clock = Clock()

    def busy() -> None:
        raise Throttled("busy")

    with pytest.raises(Throttled):
        retry_transient(busy, timeout=15.0, clock=clock, sleep=clock.sleep)
    assert clock.now == pytest.approx(15.0)


def _shared_with_a_planted_link(tmp_path: Path, name: str) -> tuple[Path, Path]:
    """A sticky folder every user can write, where user 65534 left ``name`` linking to a file
    of their choosing (``victim``)."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    victim = tmp_path / "victim"
    victim.write_text("{}", encoding="utf-8")
    (shared / name).symlink_to(victim)
    os.lchown(shared / name, 65534, 65534)
    return shared, victim


needs_root = pytest.mark.skipif(
    not hasattr(os, "lchown") or os.geteuid() != 0, reason="making a link of another user"
)


@needs_root
@pytest.mark.parametrize("name", ["tablestore_memory.json", PENDING_MARKER])
def test_a_link_another_user_left_in_a_shared_folder_is_never_written_through(
    tmp_path: Path, name: str
) -> None:
    shared, victim = _shared_with_a_planted_link(tmp_path, name)
    with pytest.raises(PermissionDenied, match="another user left in a shared folder"):
        if name == PENDING_MARKER:
            write_pending(shared, PendingInstance(alias="a", region="cn-hangzhou"))
        else:
            atomic_write_text(shared / name, '{"instance_name": "ots-1"}\n')
    assert victim.read_text(encoding="utf-8") == "{}"
    assert sorted(p.name for p in shared.iterdir()) == [name]


@needs_root
def test_the_lock_never_opens_a_link_another_user_left_in_a_shared_folder(
    tmp_path: Path,
) -> None:
    shared, victim = _shared_with_a_planted_link(tmp_path, LOCK_FILE)
    victim.unlink()  # a link to a file that does not exist yet: opening it would create it
    with (
        pytest.raises(PermissionDenied, match="another user left in a shared folder"),
        bootstrap_lock(shared, timeout=1.0),
    ):
        pass
    assert not victim.exists()


def test_a_link_of_ones_own_in_a_shared_folder_is_still_followed(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    kept = tmp_path / "kept.json"
    kept.write_text("{}\n")
    (shared / "tablestore_memory.json").symlink_to(kept)
    atomic_write_text(shared / "tablestore_memory.json", '{"instance_name": "ots-1"}\n')
    assert kept.read_text() == '{"instance_name": "ots-1"}\n'


def test_an_answer_echoing_the_request_into_every_field_shows_no_secret() -> None:
    """A broken gateway that quotes the signed request (the key id in ``Authorization``, the
    STS token in ``x-acs-security-token``) in the code and the request id too, not only in
    the message: no field of the error, its repr or its ``to_dict`` carries a secret."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from memcore_tablestore import Credentials
    from memcore_tablestore.provisioning.control_client import ControlPlaneClient

    class Echo(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            quoted = f"{self.requestline} {self.headers}"
            body = json.dumps(
                {
                    "Code": f"SignatureDoesNotMatch {quoted}",
                    "Message": quoted,
                    "Recommend": quoted,
                    "RequestId": quoted,
                }
            ).encode()
            self.send_response(400)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    ak, sk, sts = "LTAIechoedKeyId0042", "echoed-secret-value-77", "STS.echoedTokenValue-99"
    try:
        client = ControlPlaneClient(
            region="cn-beijing",
            credentials=Credentials(ak, sk, sts),
            endpoint=f"127.0.0.1:{server.server_address[1]}",
            protocol="http",
            timeout=5.0,
        )
        with pytest.raises(InvalidInput) as info:
            client.find_by_alias("memcore-abc")
    finally:
        server.shutdown()
        server.server_close()
    err = info.value
    shown = f"{err} {err!r} {json.dumps(err.to_dict())} {vars(err)}"
    assert "x-acs-security-token" in shown  # the request was quoted back
    for secret in (ak, sk, sts):
        assert secret not in shown, (secret, shown)
