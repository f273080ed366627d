"""An import stopped midway deletes what it added, but not a write that landed in one of
those memories meanwhile (real ``memcore`` processes, the embedded store).

The store keeps one memory per text in a scope, so a write of a text the import has just
added lands in the import's memory: ``memcore add`` answers with its id, another import
counts it as already present (one that finds it under its own id, from an export file,
claims it: a write that moves nothing but its version). Such a write moves the memory's
version, and the stopped import's rollback deletes only memories still at the version it
left them at, so the other writer's acknowledged write stays, and the one line says how
many were kept for it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

#: Imports ``sys.argv[1]`` (one memory per line) three records a batch; once two batches are
#: stored (or, with ``STOPPED_IMPORT_AT=restore_links``, once it has linked the versions) it
#: runs ``sys.argv[2:]`` (another writer, to its end) and then stops on Ctrl-C.
_STOPPED_IMPORT = """
import os, signal, subprocess, sys
from importlib.metadata import entry_points

import memcore.transfer.restoring
from memcore.service import MemoryService
from memcore.service.logs import Logs

memcore.transfer.restoring.IMPORT_BATCH = 3
step = os.environ.get("STOPPED_IMPORT_AT", "restore")
owner = Logs if step == "restore_links" else MemoryService
write = getattr(owner, step)
calls = []
other = sys.argv[2:]

def write_then_stop(self, items, **kwargs):
    ids = write(self, items, **kwargs)
    calls.append(1)
    if len(calls) == (2 if step == "restore" else 1):
        done = subprocess.run(other, capture_output=True, text=True)
        sys.stderr.write(f"OTHER {done.returncode} {done.stdout.strip()}\\n")
        os.kill(os.getpid(), signal.SIGINT)
    return ids

setattr(owner, step, write_then_stop)
sys.argv = ["memcore", "import", *os.environ["STOPPED_IMPORT_HOW"].split(), sys.argv[1]]
entry_points(group="console_scripts")["memcore"].load()()
"""

_MEMCORE = str(Path(sys.executable).with_name("memcore"))


def _stopped_import(
    home: Path, lines: Path, *other: str, how: str = "--lines", at: str = "restore"
) -> tuple[str, str]:
    """Run the stopped import of ``lines`` (``how``: its options; ``at``: the step after
    which the other writer runs) with ``other`` as the other writer; (its line, the other's)."""
    env = {
        "MEMCORE_HOME": str(home),
        "PATH": str(Path(sys.executable).parent),
        "STOPPED_IMPORT_HOW": how,
        "STOPPED_IMPORT_AT": at,
    }
    done = subprocess.run(
        [sys.executable, "-c", _STOPPED_IMPORT, str(lines), _MEMCORE, *other],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 130, done.stderr
    other_line = next(line for line in done.stderr.splitlines() if line.startswith("OTHER "))
    return done.stderr.splitlines()[-1], other_line


def _texts(home: Path) -> list[str]:
    done = subprocess.run(
        [_MEMCORE, "--json", "list", "--all"],
        capture_output=True,
        text=True,
        env={"MEMCORE_HOME": str(home)},
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return sorted(json.loads(line)["text"] for line in done.stdout.splitlines() if line.strip())


@pytest.fixture
def lines(tmp_path: Path) -> Path:
    path = tmp_path / "notes.txt"
    path.write_text("".join(f"bulk line {i}\n" for i in range(10)), encoding="utf-8")
    return path


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_a_stopped_import_keeps_a_text_another_writer_added_meanwhile(
    tmp_path: Path, lines: Path
) -> None:
    home = tmp_path / "home"
    last, other = _stopped_import(home, lines, "add", "bulk line 1")
    assert other.startswith("OTHER 0 remembered ")
    assert last == (
        "memcore: interrupted (import stopped; of the 6 memories it had added, 5 were deleted "
        "again and 1 was kept because another write landed in it meanwhile)"
    )
    assert _texts(home) == ["bulk line 1"]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_a_stopped_import_keeps_what_a_finished_import_reported(
    tmp_path: Path, lines: Path
) -> None:
    home = tmp_path / "home"
    last, other = _stopped_import(home, lines, "import", "--lines", str(lines))
    assert other == "OTHER 0 imported 10 records: 4 added, 6 already present"
    assert "0 were deleted again and 6 were kept because another write landed" in last
    assert _texts(home) == sorted(f"bulk line {i}" for i in range(10))


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_a_stopped_import_keeps_what_a_finished_import_of_an_export_found_present(
    tmp_path: Path, lines: Path
) -> None:
    source = tmp_path / "source"
    env = {"MEMCORE_HOME": str(source)}
    for argv in (["import", "--lines", str(lines)], ["export", "--out", str(tmp_path / "b.jsonl")]):
        done = subprocess.run([_MEMCORE, *argv], capture_output=True, env=env, timeout=60)
        assert done.returncode == 0, done.stderr
    home, backup = tmp_path / "home", tmp_path / "b.jsonl"
    last, other = _stopped_import(home, backup, "import", str(backup), how="")
    assert other == "OTHER 0 imported 10 records: 4 added, 6 already present"
    assert "0 were deleted again and 6 were kept because another write landed" in last
    assert _texts(home) == sorted(f"bulk line {i}" for i in range(10))


def _memcore(home: Path, *argv: str) -> str:
    done = subprocess.run(
        [_MEMCORE, *argv], capture_output=True, text=True, env={"MEMCORE_HOME": str(home)}
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_a_stopped_import_keeps_the_history_a_finished_import_found_present(
    tmp_path: Path,
) -> None:
    """The versions a dream replaced were present (restored before without their links), and
    the stopped import had restored what replaced them and linked them to it. Another import
    of the file found all of it present; the stopped import's rollback kept the successors
    (that import had claimed them) but gave the replaced versions back their old links, so
    both were current again: an outdated fact listed and recalled as if nothing replaced it."""
    source, home = tmp_path / "source", tmp_path / "home"
    for where in (source, home):
        where.mkdir()
        (where / "config.json").write_text(json.dumps({"embedder": "none"}), encoding="utf-8")
    for text in (
        "We keep 30 dozen eggs in the fridge at the moment",
        "We now keep 20 dozen eggs in the fridge",
        "User likes green tea",
        "User likes green tea a lot",
    ):
        _memcore(source, "add", "--sync", text)
    _memcore(source, "--json", "dream", "create", "--apply-mode", "safe_auto")
    backup, older = tmp_path / "b.jsonl", tmp_path / "older.jsonl"
    _memcore(source, "export", "--out", str(backup))
    lines = backup.read_text(encoding="utf-8").splitlines()
    records = [r for r in map(json.loads, lines) if r.get("kind") != "message"]
    replaced = [r for r in records if r.get("superseded_by")]
    assert replaced
    older.write_text(
        "".join(
            json.dumps({**r, "superseded_by": None, "superseded_how": None}) + "\n"
            for r in replaced
        ),
        encoding="utf-8",
    )
    _memcore(home, "import", str(older))

    last, other = _stopped_import(home, backup, "import", str(backup), how="", at="restore_links")
    assert (
        other == f"OTHER 0 imported {len(records)} records: 0 added, {len(records)} already present"
    )
    assert f"0 were deleted again and {len(records) - len(replaced)} were kept" in last
    after = {
        m["id"]: m["superseded_by"]
        for m in map(
            json.loads, _memcore(home, "--json", "list", "--all", "--all-versions").splitlines()
        )
    }
    assert after == {r["id"]: r.get("superseded_by") for r in records}


def _record(i: int, ids: list[str], **links: object) -> str:
    scope = {"app_id": "hermes", "tenant_id": "__default__", "agent_id": "hermes"}
    when = 1_790_000_000.0 + i
    record = {
        "format": 2,
        "id": ids[i],
        "text": f"fact number {i} of the backup",
        "scope": {**scope, "run_id": "__default__"},
        "metadata": {},
        "created_at": when,
        "updated_at": when,
        "unit_type": "text",
        "version": 1,
        "said_at": when,
        "superseded_by": None,
        "superseded_how": None,
        "supersedes": [],
        **links,
    }
    return json.dumps(record) + "\n"


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_a_stopped_import_links_the_history_another_import_found_present(
    tmp_path: Path,
) -> None:
    """The stopped import had restored replaced versions and what replaced them, and was
    stopped before it linked them. Another import of the file found them present (and
    claimed them), so it wrote no link and reported the history there; the rollback kept
    them for it but without their links, so each replaced version was current again."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.json").write_text(json.dumps({"embedder": "none"}), encoding="utf-8")
    ids = [f"{i:032x}" for i in range(1, 11)]
    backup = tmp_path / "b.jsonl"
    backup.write_text(
        "".join(
            _record(i, ids, superseded_by=ids[i + 1], superseded_how="updated")
            if i in (0, 2)
            else _record(i, ids, supersedes=[ids[i - 1]])
            if i in (1, 3)
            else _record(i, ids)
            for i in range(10)
        ),
        encoding="utf-8",
    )
    last, other = _stopped_import(home, backup, "import", str(backup), how="")
    assert other == "OTHER 0 imported 10 records: 4 added, 6 already present"
    assert "0 were deleted again and 6 were kept" in last
    _memcore(home, "export", "--out", str(tmp_path / "after.jsonl"))
    after = {
        m["id"]: (m["superseded_by"], m["supersedes"])
        for m in map(json.loads, (tmp_path / "after.jsonl").read_text("utf-8").splitlines())
    }
    assert after == {
        ids[i]: (
            ids[i + 1] if i in (0, 2) else None,
            [ids[i - 1]] if i in (1, 3) else [],
        )
        for i in range(10)
    }


def _links(home: Path, out: Path) -> dict[str, tuple[str | None, list[str]]]:
    _memcore(home, "export", "--out", str(out))
    return {
        m["text"]: (m["superseded_by"], m["supersedes"])
        for m in map(json.loads, out.read_text("utf-8").splitlines())
        if m.get("kind") != "message"
    }


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_a_stopped_import_keeps_the_links_a_dream_wrote_meanwhile(tmp_path: Path) -> None:
    """The stopped import had linked a present memory to a version it restored, and a dream
    then folded that memory into a newer one. The rollback gave the memory back its links as
    the import had listed them, dropping the dream's: the outdated fact was current again,
    listed and recalled beside the one that replaced it."""
    source, home = tmp_path / "source", tmp_path / "home"
    for where in (source, home):
        where.mkdir()
        (where / "config.json").write_text(json.dumps({"embedder": "none"}), encoding="utf-8")
    for text in ("User likes green tea", "User likes green tea a lot"):
        _memcore(source, "add", "--sync", text)
    _memcore(source, "--json", "dream", "create", "--apply-mode", "safe_auto")
    backup, current = tmp_path / "b.jsonl", tmp_path / "current.jsonl"
    _memcore(source, "export", "--out", str(backup))
    records = [json.loads(line) for line in backup.read_text("utf-8").splitlines()]
    current.write_text(
        "".join(
            json.dumps({**r, "supersedes": []}) + "\n"
            for r in records
            if not r.get("superseded_by")
        ),
        encoding="utf-8",
    )
    _memcore(home, "import", str(current))
    _memcore(home, "add", "--sync", "User really likes green tea a lot")

    dream = ("--json", "dream", "create", "--apply-mode", "safe_auto")
    last, other = _stopped_import(home, backup, *dream, how="", at="restore_links")
    assert other.startswith("OTHER 0 {")
    assert "the 1 memory it had added was deleted again" in last
    [newest] = [
        m["id"]
        for m in map(json.loads, _memcore(home, "--json", "list", "--all").splitlines())
        if m["text"] == "User really likes green tea a lot"
    ]
    links = _links(home, tmp_path / "after.jsonl")
    assert links["User likes green tea a lot"] == (newest, [])
    assert links["User really likes green tea a lot"][1] == [
        next(r["id"] for r in records if r["text"] == "User likes green tea a lot")
    ]
    hits = json.loads(_memcore(home, "--json", "search", "green tea"))
    assert [h["text"] for h in hits] == ["User really likes green tea a lot"]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_a_stopped_import_links_a_version_it_kept_both_ways(tmp_path: Path) -> None:
    """The stopped import had restored a version that a memory already present replaced,
    and was stopped before it linked them; another import found both present. The rollback
    kept the version for it and gave it its ``superseded_by``, but the present memory's
    ``supersedes`` did not get it: get and export showed one side of the history."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.json").write_text(json.dumps({"embedder": "none"}), encoding="utf-8")
    ids = [f"{i:032x}" for i in range(1, 11)]
    first = tmp_path / "first.jsonl"
    first.write_text(_record(1, ids), encoding="utf-8")
    _memcore(home, "import", str(first))
    backup = tmp_path / "b.jsonl"
    backup.write_text(
        "".join(
            _record(0, ids, superseded_by=ids[1], superseded_how="updated")
            if i == 0
            else _record(1, ids, supersedes=[ids[0]])
            if i == 1
            else _record(i, ids)
            for i in range(10)
        ),
        encoding="utf-8",
    )
    last, other = _stopped_import(home, backup, "import", str(backup), how="")
    assert other == "OTHER 0 imported 10 records: 3 added, 7 already present"
    assert "0 were deleted again and 6 were kept" in last
    _memcore(home, "export", "--out", str(tmp_path / "after.jsonl"))
    after = {
        m["id"]: (m["superseded_by"], m["supersedes"])
        for m in map(json.loads, (tmp_path / "after.jsonl").read_text("utf-8").splitlines())
    }
    assert after[ids[0]] == (ids[1], [])
    assert after[ids[1]] == (None, [ids[0]])
