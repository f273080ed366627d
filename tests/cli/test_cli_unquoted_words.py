"""Words given without quotes: ``memcore search green tea`` was refused with "Got unexpected
extra argument(s) (tea)" and no hint. ``search`` and ``add`` now take their words joined by
one space, as ``echo`` joins them; a quoted text keeps its own spacing, and ``-`` alone is
still stdin. ``update ID --text green tea`` was refused the same way; it now sets "green tea",
and words in any other place are refused, asking for quotes, rather than one of them taken
for the id."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

MAIN = "from memcore_cli.entry import main; main()"


def test_search_takes_its_words_unquoted(local_cli):
    local_cli.ok("add", "--sync", "The user drinks green tea every morning")
    local_cli.ok("add", "--sync", "The user walks to work")
    quoted = local_cli.json("search", "green tea")
    unquoted = local_cli.json("search", "green", "tea")
    assert [h["id"] for h in unquoted] == [h["id"] for h in quoted]
    assert unquoted[0]["text"] == "The user drinks green tea every morning"


def test_options_between_the_words_are_still_options(local_cli):
    local_cli.ok("add", "--sync", "green tea in the morning")
    local_cli.ok("add", "--sync", "green shirts only")
    hits = local_cli.json("search", "green", "--top-k", "1", "tea")
    assert [h["text"] for h in hits] == ["green tea in the morning"]


def test_add_joins_its_words_with_one_space(local_cli):
    added = local_cli.json("add", "Lives", "in", "Hangzhou")
    (memory_id,) = added["memory_ids"]
    assert local_cli.json("get", memory_id)["text"] == "Lives in Hangzhou"
    kept = local_cli.json("add", "two  spaces", "kept")
    assert local_cli.json("get", kept["memory_ids"][0])["text"] == "two  spaces kept"


def test_a_dash_alone_is_stdin_and_among_words_is_text(local_cli):
    piped = local_cli.json("add", "-", input="from a pipe\n")
    assert local_cli.json("get", piped["memory_ids"][0])["text"] == "from a pipe"
    listed = local_cli.json("add", "-", "milk")  # a shopping-list line, as echo prints it
    assert local_cli.json("get", listed["memory_ids"][0])["text"] == "- milk"


def test_words_and_a_messages_file_together_are_refused(local_cli, tmp_path):
    turn = tmp_path / "turn.json"
    turn.write_text('[{"role": "user", "content": "hi there"}]', encoding="utf-8")
    result = local_cli("add", "some", "words", "--messages-file", str(turn))
    assert result.exit_code == 2
    assert result.stderr == (
        "memcore: error: give either TEXT (or '-' for stdin) or --messages-file\n"
    )


def test_search_without_words_is_a_missing_argument(local_cli):
    result = local_cli("search")
    assert result.exit_code == 2
    assert result.stderr.startswith("memcore: error: Missing argument 'QUERY'")


def test_update_joins_the_words_typed_after_its_text(local_cli):
    (memory_id,) = local_cli.json("add", "--sync", "The user drinks coffee")["memory_ids"]
    short = memory_id[:8]
    updated = local_cli.json("update", short, "--text", "likes", "green", "tea", "-m", "k=v")
    assert (updated["text"], updated["metadata"]) == ("likes green tea", {"k": "v"})
    updated = local_cli.json("update", short, "-m", "k=w", "--text=drinks", "oolong")
    assert (updated["text"], updated["metadata"]) == ("drinks oolong", {"k": "w"})
    kept = local_cli.json("update", short, "--text", "two  spaces", "kept")
    assert kept["text"] == "two  spaces kept"


def test_update_text_dash_alone_is_stdin(local_cli):
    """As add reads it (the README says so of both): the memory's text became a "-"."""
    (memory_id,) = local_cli.json("add", "--sync", "precious text")["memory_ids"]
    updated = local_cli.json("update", memory_id, "--text", "-", input="from a pipe\n")
    assert updated["text"] == "from a pipe"
    listed = local_cli.json("update", memory_id, "--text", "-", "milk")
    assert listed["text"] == "- milk"


def test_update_words_anywhere_else_are_refused_not_guessed(local_cli):
    """``update --text add cafe 5f0c`` would have the parser take ``cafe`` for the id (a hex
    word, so a prefix of some memory's): words not right after the text's are refused."""
    (memory_id,) = local_cli.json("add", "--sync", "The user drinks coffee")["memory_ids"]
    short = memory_id[:8]
    for argv, words in (
        (("--text", "green", "tea", short), short),
        ((short, "green", "--text", "tea"), "green"),
        ((short, "--text", "green", "-m", "k=v", "tea"), "tea"),
        ((short, "--text", "green", "--", "tea"), "tea"),
    ):
        result = local_cli("update", *argv)
        assert result.exit_code == 2, (argv, result.stdout, result.stderr)
        assert result.stderr == (
            f'memcore: error: unexpected words {words!r}: quote the text (--text "..."), or '
            "type the id first and the text's words right after --text\n"
        ), argv
    result = local_cli("update", short, "green", "tea")
    assert (result.exit_code, result.stderr) == (
        2,
        "memcore: error: unexpected words 'green tea': to set the text, type --text right "
        'before them (or quote it: --text "...")\n',
    )
    assert local_cli.json("get", memory_id)["text"] == "The user drinks coffee"


def test_the_real_command_searches_unquoted_words(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.json").write_text('{"embedder": "none"}', encoding="utf-8")
    env = {**os.environ, "MEMCORE_HOME": str(home)}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", MAIN, *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )

    assert run("add", "green", "tea", "is", "nice").returncode == 0
    found = run("search", "green", "tea")
    assert found.returncode == 0, found.stderr
    assert "green tea is nice" in found.stdout
    (hit,) = json.loads(run("--json", "search", "green", "tea").stdout)
    memory_id = hit["id"]
    updated = run("update", memory_id, "--text", "oolong", "is", "nicer")
    assert updated.returncode == 0, updated.stderr
    assert "oolong is nicer" in run("get", memory_id).stdout
