"""``doctor --live`` and ``--record`` against the emulator (documented shapes only), and the
new search options."""

from __future__ import annotations

import json

import pytest

from memcore_tablestore.protocol.apis import READ_ONLY


def test_doctor_live_checks_every_read_only_api(emulator_fake_cli, tmp_path):
    emulator_fake_cli.ok("add", "--sync", "User likes coffee")
    emulator_fake_cli.ok("add", "--sync", "user likes  COFFEE")
    emulator_fake_cli.json("dream", "create")
    record = tmp_path / "answers"
    report = emulator_fake_cli.json("doctor", "--live", "--record", str(record))
    assert report["ok"], report
    live = {
        c["name"].removeprefix("live "): c
        for c in report["checks"]
        if c["name"].startswith("live ")
    }
    assert set(live) == set(READ_ONLY)
    assert all(c["detail"] == "documented shape" for c in live.values()), live
    store = next(c for c in report["checks"] if c["name"] == "memory store")
    assert "storage mode ots" in store["detail"]
    saved = {p.stem: json.loads(p.read_text()) for p in record.glob("*.json")}
    assert set(saved) == set(READ_ONLY)
    text = "\n".join(p.read_text() for p in record.glob("*.json"))
    # Redacted: no memory text, scope value, store name or 32-hex id survives.
    assert "coffee" not in text.lower()
    assert "hermes" not in text
    assert emulator_fake_cli.home.name not in text
    memory = saved["GetMemory"]["response"]["memory"]
    assert memory["id"].startswith("<id-")
    assert memory["id"] == saved["ListMemories"]["response"]["memories"][0]["id"]


def test_a_record_of_calls_that_all_failed_says_nothing_was_saved(emulator_fake_cli, tmp_path):
    """With a wrong secret every live call failed, and the last line still passed: "answers
    saved in ...", over an empty folder."""
    record = tmp_path / "answers"
    wrong = {"TABLESTORE_MEMORY_SK": "not-the-secret"}
    result = emulator_fake_cli("--json", "doctor", "--live", "--record", str(record), env=wrong)
    assert result.exit_code == 4, result.stderr
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    assert not checks["recorded"]["ok"]
    assert "nothing saved" in checks["recorded"]["detail"]
    assert list(record.glob("*.json")) == []


def test_doctor_live_on_the_local_backend_says_there_is_no_service(local_cli):
    local_cli.ok("add", "a fact")
    report = local_cli.json("doctor", "--live")
    (check,) = [c for c in report["checks"] if c["name"] == "live check"]
    assert check["ok"] and "tablestore" in check["detail"]


def test_search_with_evidence_and_without_context(emulator_fake_cli):
    emulator_fake_cli.ok("add", "--sync", "The team lunch is on friday")
    hits = emulator_fake_cli.json("search", "--evidence", "team lunch")
    assert hits and {"similarity", "source"} <= set(hits[0])
    assert emulator_fake_cli.json("search", "--no-context", "team lunch")[0]["id"] == hits[0]["id"]


def test_doctor_record_into_a_file_is_a_failed_check_not_an_unexpected_error(
    emulator_fake_cli, tmp_path
):
    """``--record`` naming a file made the recorder's mkdir raise FileExistsError: the user saw
    "unexpected FileExistsError" (exit 1) and none of the checks."""
    emulator_fake_cli.ok("add", "--sync", "User likes coffee")
    taken = tmp_path / "answers.json"
    taken.write_text("keep me")
    result = emulator_fake_cli("doctor", "--record", str(taken))
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert "unexpected" not in result.stderr and "Traceback" not in result.stderr
    failed = [line for line in result.stdout.splitlines() if line.startswith("FAIL")]
    assert len(failed) == 1 and "recorded" in failed[0] and str(taken) in failed[0], failed
    assert "PASS  backend" in result.stdout
    assert taken.read_text() == "keep me"


@pytest.mark.parametrize("backend", ["emulator_fake_cli", "local_cli"])
@pytest.mark.parametrize("name", ["", " "])
def test_doctor_refuses_an_empty_record_folder(request, tmp_path, monkeypatch, backend, name):
    """``doctor --record ''`` (an unset shell variable) saved the answers in the current
    folder (the empty name read as "."), or on the local backend passed, saving nothing; it
    is refused in one line, exit 2, before any check runs."""
    cli = request.getfixturevalue(backend)
    here = tmp_path / "cwd"
    here.mkdir()
    monkeypatch.chdir(here)
    result = cli("doctor", "--record", name)
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("memcore: error: --record is empty")
    assert list(here.iterdir()) == []
