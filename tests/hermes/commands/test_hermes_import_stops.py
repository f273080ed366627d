"""``hermes tablestore-mem import`` stopped by Ctrl-C or a failure takes back exactly what it
added and says so in one line; "added" counts only what this import created; a time no date
holds is refused; the id map tells nothing about another tenant's ids."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest

from memcore.service import MemoryService
from memcore.service.logs import Logs

SCOPE = {"app_id": "hermes", "tenant_id": "__default__", "agent_id": "hermes", "run_id": "r1"}
#: More than two of the import's batches (256 records each), so it stops with two stored.
MANY = 600


@pytest.fixture
def home(hermes_home: Path, kit: Any) -> Path:
    kit.write_config(hermes_home, backend="local", embedder="none")
    return hermes_home


@pytest.fixture
def run(kit: Any) -> Any:
    """The handler Hermes calls, in-process: exit status, JSON answer, stderr."""
    return kit.run_cli_full


def texts(run: Any, capsys: pytest.CaptureFixture[str]) -> list[str]:
    code, listed, err = run(capsys, "list", "--all")
    assert code == 0, err
    return sorted(m["text"] for m in listed["items"])


def records_file(path: Path, n: int) -> Path:
    lines = (json.dumps({"text": f"bulk line {i}", "scope": SCOPE}) + "\n" for i in range(n))
    path.write_text("".join(lines), encoding="utf-8")
    return path


def reported(err: str) -> list[str]:
    """The stderr lines that report the outcome (not the store's progress notes)."""
    return [line for line in err.splitlines() if "error" in line or "interrupted" in line]


def test_ctrl_c_after_a_stored_batch_and_again_in_the_rollback_leaves_nothing(
    run: Any, home: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: Any
) -> None:
    """Ctrl-C raised KeyboardInterrupt straight out of the command: the batches already
    stored stayed, and nothing said so."""
    restore, forget = MemoryService.restore, MemoryService.forget_unclaimed
    calls = {"restore": 0, "forget": 0}

    def interrupted_restore(self: MemoryService, items: Any, **kwargs: Any) -> Any:
        ids = restore(self, items, **kwargs)
        calls["restore"] += 1
        if calls["restore"] == 2:  # the second batch is stored: the interrupt comes now
            signal.raise_signal(signal.SIGINT)
        return ids

    def interrupted_forget(self: MemoryService, memories: Any) -> Any:
        calls["forget"] += 1
        if calls["forget"] == 1:  # and again, in the rollback
            signal.raise_signal(signal.SIGINT)
        return forget(self, memories)

    monkeypatch.setattr(MemoryService, "restore", interrupted_restore)
    monkeypatch.setattr(MemoryService, "forget_unclaimed", interrupted_forget)
    code, answer, err = run(capsys, "import", str(records_file(tmp_path / "in.jsonl", MANY)))
    line = (
        "tablestore-mem: interrupted (import stopped; the 512 memories it had added were "
        "deleted again)"
    )
    assert (code, reported(err)) == (130, [line])
    assert answer["error"]["exit_code"] == 130 and answer["error"]["code"] == "interrupted"
    assert calls["restore"] == 2
    assert calls["forget"] == 2  # the rollback's two batches, the second Ctrl-C held
    assert texts(run, capsys) == []


def test_sigterm_after_a_stored_batch_takes_back_what_it_added(
    run: Any, home: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: Any
) -> None:
    """SIGTERM (``kill PID``, ``timeout``, a service manager stopping Hermes) was not held as
    Ctrl-C is: its default action ended the process with the stored batches left behind.
    Here the test's own handler stands in for that default (it would end pytest too): it
    sees the signal only if the import does not hold it."""
    escaped: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: escaped.append(signum))
    restore = MemoryService.restore
    calls: list[int] = []

    def terminated_restore(self: MemoryService, items: Any, **kwargs: Any) -> Any:
        ids = restore(self, items, **kwargs)
        calls.append(1)
        if len(calls) == 2:  # the second batch is stored: the process is told to stop now
            signal.raise_signal(signal.SIGTERM)
        return ids

    monkeypatch.setattr(MemoryService, "restore", terminated_restore)
    try:
        code, answer, err = run(capsys, "import", str(records_file(tmp_path / "in.jsonl", MANY)))
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert escaped == []
    line = (
        "tablestore-mem: interrupted (import stopped; the 512 memories it had added were "
        "deleted again)"
    )
    assert (code, reported(err)) == (130, [line])
    assert answer["error"]["exit_code"] == 130 and answer["error"]["code"] == "interrupted"
    assert len(calls) == 2
    assert texts(run, capsys) == []


def test_an_unexpected_failure_is_rolled_back_and_one_line(
    run: Any, home: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: Any
) -> None:
    """Only a memcore error was rolled back: any other left what had landed, with a traceback."""
    restore = MemoryService.restore
    calls: list[int] = []

    def failing(self: MemoryService, items: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("boom")
        return restore(self, items, **kwargs)

    monkeypatch.setattr(MemoryService, "restore", failing)
    code, answer, err = run(capsys, "import", str(records_file(tmp_path / "in.jsonl", MANY)))
    assert code == 1, answer
    assert reported(err) == [
        "tablestore-mem: error: unexpected RuntimeError: boom (import stopped; the 256 "
        "memories it had added were deleted again)"
    ]
    assert texts(run, capsys) == []


def test_a_rollback_the_store_refuses_in_part_is_reported_as_it_is(
    run: Any, home: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: Any
) -> None:
    """A memory the rollback could not delete got a line of its own, and the error still said
    "nothing was imported". The rollback deletes a batch in one transaction: the one the store
    refuses stays whole, and the line says so."""
    import memcore.transfer.restoring
    from memcore.errors import Unavailable

    monkeypatch.setattr(memcore.transfer.restoring, "IMPORT_BATCH", 100)
    restore, forget = MemoryService.restore, MemoryService.forget_unclaimed
    calls: list[int] = []
    refused: list[int] = []

    def failing(self: MemoryService, items: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 3:
            raise Unavailable("the store went away")
        return restore(self, items, **kwargs)

    def refusing_one(self: MemoryService, memories: Any) -> Any:
        if not refused:
            refused.append(len(memories))
            raise Unavailable("still away")
        return forget(self, memories)

    monkeypatch.setattr(MemoryService, "restore", failing)
    monkeypatch.setattr(MemoryService, "forget_unclaimed", refusing_one)
    code, answer, err = run(capsys, "import", str(records_file(tmp_path / "in.jsonl", MANY)))
    assert code == 5, answer
    assert reported(err) == [
        "tablestore-mem: error: line 201: the store went away (import stopped; of the 200 "
        "memories it had added, 100 are still stored (the store refused to delete them) and "
        "100 were deleted again; running the import again is safe)"
    ]
    assert refused == [100]
    assert len(texts(run, capsys)) == 100


def _racing(monkeypatch: Any, *, fail_at: int | None = None) -> None:
    """Another writer stores the second record's text just before the first batch is written;
    with ``fail_at``, that call of ``restore`` fails."""
    from memcore.errors import Unavailable

    restore = MemoryService.restore
    calls: list[int] = []

    def racing(self: MemoryService, items: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            self.store.add_text(self.store_name, items[1].scope, items[1].text, sync=True)
        if len(calls) == fail_at:
            raise Unavailable("the store went away")
        return restore(self, items, **kwargs)

    monkeypatch.setattr(MemoryService, "restore", racing)


def test_a_text_another_writer_stored_meanwhile_is_present_not_added(
    run: Any, home: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: Any
) -> None:
    """A text another process stored after the import listed the tenant was counted as added:
    two imports of one file at once both claimed every memory."""
    _racing(monkeypatch)
    code, answer, _ = run(capsys, "import", str(records_file(tmp_path / "few.jsonl", 10)))
    assert code == 0, answer
    assert (answer["total"], answer["added"], answer["present"]) == (10, 9, 1)
    assert len(texts(run, capsys)) == 10


def test_a_rollback_spares_what_another_writer_stored_meanwhile(
    run: Any, home: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: Any
) -> None:
    """The rollback deleted the other writer's memory, taking it for one the import added."""
    _racing(monkeypatch, fail_at=3)
    code, answer, err = run(capsys, "import", str(records_file(tmp_path / "many.jsonl", MANY)))
    assert code == 5, answer
    assert texts(run, capsys) == ["bulk line 1"]  # the other writer's memory is still there
    assert "the 511 memories it had added were deleted again" in reported(err)[0]


@pytest.mark.parametrize("field", ["created_at", "updated_at", "said_at"])
@pytest.mark.parametrize("value", [1e300, 1e18, 221_876_928_000.0])  # the last: 9001-01-01
def test_an_impossible_time_stops_the_import_with_one_line(
    run: Any,
    home: Path,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    field: str,
    value: float,
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"text": "User lives in Hangzhou", "scope": SCOPE, field: value}))
    code, answer, err = run(capsys, "import", str(path))
    assert code == 2, answer
    assert reported(err) == [
        f"tablestore-mem: error: line 1: {field} must be a timestamp in seconds, from year 1000 to "
        "the end of year 9000"
    ]
    assert texts(run, capsys) == []


def test_the_id_map_does_not_tell_whether_another_tenant_holds_an_id(
    run: Any, home: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """An id another tenant holds answered in id_map, where a free id did not, so an import
    could ask whether another user's memory exists; then it got a new id where a free one was
    kept, which told the same. Ids are unique per tenant: both are kept."""
    code, added, _ = run(
        capsys, "add", "Alice's secret", "--sync", "--user-id", "alice", "--platform", "telegram"
    )
    assert code == 0
    [alices] = added["memory_ids"]
    code, added, _ = run(
        capsys, "add", "Bob's first note", "--sync", "--user-id", "bob", "--platform", "telegram"
    )
    [bobs] = added["memory_ids"]
    code, listed, _ = run(capsys, "list", "--user-id", "bob", "--platform", "telegram")
    bob_scope = listed["items"][0]["scope"]
    answers = []
    for memory_id, text in ((alices, "Bob's probe"), ("7" * len(alices), "Bob's other probe")):
        path = tmp_path / "probe.jsonl"
        path.write_text(json.dumps({"id": memory_id, "text": text, "scope": bob_scope}) + "\n")
        code, answer, _ = run(
            capsys, "import", str(path), "--user-id", "bob", "--platform", "telegram"
        )
        assert code == 0, answer
        answers.append(answer)
    assert (
        answers[0]
        == answers[1]
        == {"total": 1, "added": 1, "present": 0, "superseded": 0, "id_map": {}}
    )
    code, listed, _ = run(capsys, "list", "--user-id", "bob", "--platform", "telegram")
    assert {m["id"] for m in listed["items"]} == {bobs, alices, "7" * len(alices)}
    # An id of Bob's own with another text is his to know about: the import says it clashes.
    path.write_text(json.dumps({"id": bobs, "text": "Bob's second note", "scope": bob_scope}))
    code, answer, err = run(
        capsys, "import", str(path), "--user-id", "bob", "--platform", "telegram"
    )
    assert code == 2 and f"id {bobs!r} already names another memory" in err, answer
    code, got, _ = run(capsys, "get", alices, "--user-id", "alice", "--platform", "telegram")
    assert code == 0 and got["text"] == "Alice's secret"


def test_a_second_import_into_a_store_that_keeps_a_text_twice_adds_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A store without a bulk write (TableStore) gives its own ids, and nothing documented
    says it keeps a text once: a second import sent every record again."""
    import itertools

    import memcore.testing.fake.reading
    from memcore.scope import Scope
    from memcore.testing import InMemoryMemoryStore
    from memcore_hermes.commands.importing import import_lines

    fresh = itertools.count()  # the store keeps the same text twice when sent twice
    monkeypatch.setattr(
        memcore.testing.fake.reading, "content_key", lambda scope, text: next(fresh)
    )
    store = InMemoryMemoryStore()
    store.ensure_store("m")
    service = MemoryService(store, store_name="m", scope=Scope.from_mapping(SCOPE))
    assert not service.restores_exactly
    lines = [json.dumps({"id": f"old{i}", "text": f"line {i}", "scope": SCOPE}) for i in range(3)]
    first = import_lines(service, lines, service.every_memory())
    assert (first["added"], first["present"]) == (3, 0)
    second = import_lines(service, lines, service.every_memory())
    assert (second["added"], second["present"]) == (0, 3)
    assert second["id_map"] == first["id_map"]
    assert len(list(service.every_memory())) == 3


@pytest.mark.parametrize("moved", ["agent_id", "run_id", "text"])
def test_an_id_that_names_another_memory_of_the_tenant_stops_the_import_as_memcore_import_does(
    run: Any, home: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path, moved: str
) -> None:
    """A record whose id the tenant holds in another agent or run was counted present (its
    own scope got nothing, and the log's messages linked to the other scope's memory), and
    one under another text was added with a new id; ``memcore import`` refuses both files,
    since the file and the store disagree about what the id is. Now so does this import."""
    code, added, _ = run(capsys, "add", "User lives in Hangzhou", "--sync")
    assert code == 0
    [memory_id] = added["memory_ids"]
    _, listed, _ = run(capsys, "list")
    record = {
        "id": memory_id,
        "text": "User lives in Hangzhou",
        "scope": listed["items"][0]["scope"],
    }
    if moved == "text":
        record["text"] = "User lives in Ningbo"
    else:
        record["scope"] = {**record["scope"], moved: "elsewhere"}
    other = {"text": "User likes tea", "scope": record["scope"]}
    path = tmp_path / "clash.jsonl"
    path.write_text(json.dumps(other) + "\n" + json.dumps(record) + "\n", encoding="utf-8")
    code, answer, err = run(capsys, "import", str(path))
    assert code == 2, answer
    assert reported(err) == [
        f"tablestore-mem: error: line 2: id {memory_id!r} already names another memory of this "
        "tenant (its text or scope differs); nothing was imported"
    ]
    assert texts(run, capsys) == ["User lives in Hangzhou"]


def linked_file(path: Path) -> Path:
    """A replaced version, the memory that replaced it, and a message of the log."""
    lines = [
        {
            "format": 2,
            "id": "a" * 32,
            "text": "User lives in Hangzhou",
            "scope": SCOPE,
            "superseded_by": "b" * 32,
            "superseded_how": "updated",
        },
        {"format": 2, "id": "b" * 32, "text": "User lives in Ningbo", "scope": SCOPE},
        {
            "format": 2,
            "kind": "message",
            "role": "user",
            "content": "I moved to Ningbo",
            "scope": SCOPE,
            "timestamp": 1_700_000_000,
            "memory_id": "b" * 32,
        },
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.mark.parametrize("step", ["restore_links", "restore_messages"])
def test_ctrl_c_during_the_last_steps_is_reported_and_leaves_nothing_half_done(
    run: Any,
    home: Path,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: Any,
    step: str,
) -> None:
    """Ctrl-C while the version links or the message log were written was held and then
    forgotten: the import answered as if never interrupted, exit 0. During the links it
    now stops and takes back what it added; during the log (one transaction, the last
    step) the import had finished, which the line says, with exit 130 all the same."""
    original = getattr(Logs, step)

    def interrupted(self: Logs, *args: Any, **kwargs: Any) -> Any:
        answer = original(self, *args, **kwargs)
        signal.raise_signal(signal.SIGINT)
        return answer

    monkeypatch.setattr(Logs, step, interrupted)
    code, answer, err = run(capsys, "import", str(linked_file(tmp_path / "linked.jsonl")))
    assert code == 130 and answer["error"]["code"] == "interrupted", answer
    if step == "restore_links":
        assert reported(err) == [
            "tablestore-mem: interrupted (import stopped; the 2 memories it had added were "
            "deleted again)"
        ]
        assert texts(run, capsys) == []
    else:
        assert reported(err) == [
            "tablestore-mem: interrupted (import finished before it could stop; the 2 "
            "memories and 1 message it added are kept)"
        ]
        assert texts(run, capsys) == ["User lives in Hangzhou", "User lives in Ningbo"]


def test_a_byte_order_mark_on_stdin_is_read_as_in_a_file(
    run: Any, home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: Any
) -> None:
    """A file with a UTF-8 byte order mark imported by name, but piped into ``import -`` it
    was refused ("Unexpected UTF-8 BOM")."""
    import io

    line = json.dumps({"text": "User lives in Hangzhou", "scope": SCOPE}) + "\r\n"
    monkeypatch.setattr("sys.stdin", io.StringIO("\ufeff" + line))
    code, answer, _ = run(capsys, "import", "-")
    assert code == 0 and answer["added"] == 1, answer
    assert texts(run, capsys) == ["User lives in Hangzhou"]


def _local(tmp_path: Path) -> tuple[Any, MemoryService]:
    """An embedded store and a session of ``SCOPE``'s tenant on it."""
    from memcore.scope import Scope
    from memcore_sqlite import SqliteMemoryStore

    store = SqliteMemoryStore(tmp_path / "race.db")
    store.ensure_store("m")
    return store, MemoryService(store, store_name="m", scope=Scope.from_mapping(SCOPE))


def test_what_an_import_found_present_survives_another_imports_rollback(
    tmp_path: Path,
) -> None:
    """An import of an export file counted a record whose id the tenant held as present and
    wrote nothing; another import still under way that had created that memory was then
    stopped, and its rollback deleted it: the first import's "present" was gone."""
    from memcore.scope import Scope
    from memcore.transfer import take_back
    from memcore.values import TextItem
    from memcore_hermes.commands.importing import import_lines

    store, service = _local(tmp_path)
    scope = Scope.from_mapping(SCOPE)
    try:
        versions: dict[str, int] = {}  # the import under way: its first batch
        ids = service.restore(
            [TextItem(scope, f"line {i}", id=f"old{i}") for i in range(3)], versions=versions
        )
        assert ids == ["old0", "old1", "old2"]
        lines = [
            json.dumps({"id": f"old{i}", "text": f"line {i}", "scope": SCOPE}) for i in range(3)
        ]
        answer = import_lines(service, lines, service.every_memory())
        assert (answer["added"], answer["present"]) == (0, 3)
        undone = take_back(service, [(scope, i) for i in ids], versions)  # the first stops
        assert (undone.added, undone.left, undone.claimed) == (3, 0, 3)
        assert sorted(m.id for m in service.every_memory()) == ["old0", "old1", "old2"]
    finally:
        store.close()


def test_a_memory_deleted_after_the_import_listed_it_is_written_again_and_added(
    tmp_path: Path,
) -> None:
    """A memory the import listed, then deleted (another import's rollback) before it was
    claimed, was counted present though the store no longer held it."""
    from memcore.scope import Scope
    from memcore.values import TextItem
    from memcore_hermes.commands.importing import import_lines

    store, service = _local(tmp_path)
    scope = Scope.from_mapping(SCOPE)
    try:
        service.restore([TextItem(scope, f"line {i}", id=f"old{i}") for i in range(3)])
        listed = list(service.every_memory())
        service.forget("old1")
        lines = [
            json.dumps({"id": f"old{i}", "text": f"line {i}", "scope": SCOPE}) for i in range(3)
        ]
        answer = import_lines(service, lines, listed)
        assert (answer["added"], answer["present"], answer["id_map"]) == (1, 2, {})
        assert sorted(m.id for m in service.every_memory()) == ["old0", "old1", "old2"]
    finally:
        store.close()


def test_an_endless_input_is_refused_in_one_line_not_read_into_memory(
    home: Path,
    tmp_path: Path,
    run: Any,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``import /dev/zero`` (or ``yes '{}' |``) read the whole input into memory: 1.4 GB in
    3 s, then a MemoryError traceback, where ``memcore import`` refuses it at once."""
    from memcore_hermes.commands import actions

    monkeypatch.setattr(actions, "MAX_IMPORT_CHARS", 1 << 16)
    big = records_file(tmp_path / "big.jsonl", 3_000)
    code, answer, err = run(capsys, "import", str(big))
    assert code == 2, err
    assert answer["error"]["code"] == "invalid_input"
    assert "larger than an import reads" in answer["error"]["message"]
    assert reported(err) == [f"tablestore-mem: error: {answer['error']['message']}"]
    assert texts(run, capsys) == []
