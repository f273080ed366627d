"""The README's CLI transcripts are real runs: the commands it lists exist, its error
transcript prints what the CLI prints, and its JSON and `get` samples show the fields the
CLI shows. A transcript pasted before the CLI changed fails here, not in a user's terminal."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
import typer

from memcore_cli.app import app
from tests.cli.conftest import Cli, write_config

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")
CLI_README = (REPO / "packages" / "adapter-cli" / "README.md").read_text(encoding="utf-8")


def _console_blocks(markdown: str) -> list[list[str]]:
    return [m.group(1).splitlines() for m in re.finditer(r"```console\n(.*?)```", markdown, re.S)]


def _block_with(command: str) -> list[str]:
    [block] = [b for b in _console_blocks(README) if f"$ uv run memcore {command}" in b]
    return block


def _top_level_commands() -> set[str]:
    group = typer.main.get_command(app)
    assert isinstance(group, typer.core.TyperGroup)
    return set(group.list_commands(None))  # type: ignore[arg-type]


def test_readme_names_every_command_the_cli_has() -> None:
    [line] = [ln for ln in README.splitlines() if ln.startswith("Commands: `add`")]
    paragraph = README[README.index(line) :].split("\n\n", 1)[0]
    named = {m.split()[0] for m in re.findall(r"`([a-z][a-z ]*?)(?: [a-z|]+)?`", paragraph)}
    assert named == _top_level_commands()


def test_cli_readme_table_names_every_command_the_cli_has() -> None:
    table = [ln for ln in CLI_README.splitlines() if ln.startswith("| `")]
    named = {w.split()[0] for ln in table for w in re.findall(r"`([a-z][^`]*)`", ln.split("|")[1])}
    assert _top_level_commands() <= named


def test_cli_readme_does_not_say_the_embedded_store_cannot_dream() -> None:
    assert "the embedded store has none" not in CLI_README


def test_readme_error_transcript_is_what_the_cli_prints(local_cli: Cli) -> None:
    """`When something is wrong`: every command's one line and exit code, as printed."""
    lines = _block_with("get no-such-id")
    local_cli.ok("add", "The user likes coffee")  # the transcript runs on a store in use
    checked = 0
    i = 0
    while i < len(lines):
        assert lines[i].startswith("$ uv run memcore "), lines[i]
        args = shlex.split(lines[i].removeprefix("$ uv run memcore "))
        output = lines[i + 1]
        assert lines[i + 2] == "$ echo $?"
        code = int(lines[i + 3])
        result = local_cli(*args)
        assert (result.exit_code, result.stderr.strip().splitlines()[-1]) == (code, output), args
        checked += 1
        i += 4
    assert checked >= 6


def test_readme_json_sample_has_the_fields_search_prints(local_cli: Cli) -> None:
    lines = _block_with('--json search "What does the user drink?" --top-k 1')
    [sample] = json.loads("\n".join(lines[1:]))
    local_cli.ok("add", "--metadata", "topic=food", "The user likes coffee")
    [hit] = local_cli.json("search", "coffee", "--top-k", "1")
    assert list(sample) == list(hit)
    assert list(sample["scope"]) == list(hit["scope"])


@pytest.mark.parametrize("command", ["get", "update"])
def test_readme_get_table_has_the_fields_get_prints(local_cli: Cli, command: str) -> None:
    """The `get` and `update` tables list the fields `get` shows, in its order."""
    marker = f"$ uv run memcore {command} "
    [lines] = [
        b
        for b in _console_blocks(README)
        if any(ln.startswith(marker) for ln in b) and any(ln.startswith("┃ field") for ln in b)
    ]
    start = next(i for i, ln in enumerate(lines) if ln.startswith(marker))
    rows = []
    for ln in lines[start + 4 :]:
        if ln.startswith("└"):
            break
        rows.append(ln.split("│")[1].strip())
    added = local_cli.ok("--json", "add", "The user likes coffee").stdout
    memory_id = json.loads(added)["memory_ids"][0]
    shown = local_cli.ok("--format", "plain", "get", memory_id).stdout.splitlines()
    assert rows == [ln.split("\t")[0] for ln in shown]


def test_cli_readme_round_trip_names_what_an_export_gives_back(local_cli: Cli, tmp_path) -> None:
    """ "Export then import into a fresh store gives back ...": every field it names comes
    back equal on the embedded store, and every field that does come back is named."""
    [sentence] = re.findall(
        r"Export then import into a fresh store[^.]*\.", CLI_README.replace("\n", " ")
    )
    added = local_cli.json("add", "--metadata", "topic=food", "The user likes coffee")
    [memory_id] = added["memory_ids"]
    local_cli.ok("update", memory_id, "--text", "The user likes tea")
    before = local_cli.json("get", memory_id)
    out = tmp_path / "memories.jsonl"
    local_cli.ok("export", "--out", str(out))
    write_config(tmp_path / "fresh", {"embedder": "none"})
    fresh = Cli(tmp_path / "fresh")
    fresh.ok("import", str(out))
    after = fresh.json("get", memory_id)
    kept = {key for key in before if key != "score" and before[key] == after[key]}
    assert before["version"] > 1  # an update moved it, so a kept version is a real one
    named = {"id", "text", "scope", "metadata"} | set(
        re.findall(r"`([a-z_]+)`", sentence.split(";")[0].split("(")[0])
    )
    assert kept - {"salience", "superseded_by"} <= named, sentence
    assert named - {"ids", "texts", "scopes"} <= kept | {"ids", "texts", "scopes"}, sentence


def test_cli_readme_names_every_field_of_a_memory_and_a_hit(local_cli: Cli) -> None:
    """ "A memory is always ...": the fields `--json get` prints, and those a search hit adds
    (it left out `superseded_by`)."""
    [sentence] = re.findall(r"A memory is always [^;]*;[^)]*\)", CLI_README.replace("\n", " "))
    memory_part, hit_part = sentence.split("a search hit also")
    named = set(re.findall(r"\b([a-z_]+)\b", " ".join(re.findall(r"`([^`]*)`", memory_part))))
    named -= {"app_id", "tenant_id", "agent_id", "run_id"}  # inside scope{...}
    [memory_id] = local_cli.json("add", "The user likes coffee")["memory_ids"]
    shown = set(local_cli.json("get", memory_id))
    assert named == shown
    [hit] = local_cli.json("search", "coffee", "--top-k", "1")
    assert set(re.findall(r"`([a-z_]+)`", hit_part)) == set(hit) - shown
