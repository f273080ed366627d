"""Control characters in stored text (it may come from an untrusted chat) never reach the
terminal raw: tables, plain lines, ``get`` and errors show them escaped; ``--json`` is exact."""

from __future__ import annotations

import json

import pytest

from memcore_cli.output.visible import one_line, visible

HOSTILE = "esc \x1b[31mRED\x1b[0m nul a\x00b del \x7f c1 \x9b bidi \u202eevil"
RAW = ("\x1b", "\x00", "\x7f", "\x9b", "\u202e")


def _clean(text: str) -> None:
    for char in RAW:
        assert char not in text, (char, text)


def test_visible_escapes_every_control_but_layout():
    assert visible("a\x1bb\tc\nd\re\x00\u202e") == "a\\x1bb\tc\nd\\re\\x00\\u202e"
    assert one_line("a\\b\tc\nd\x1b") == "a\\\\b\\tc\\nd\\x1b"


@pytest.mark.parametrize("fmt", ["plain", "table"])
def test_human_formats_escape_control_characters(local_cli, fmt):
    memory_id = local_cli.json("add", HOSTILE)["memory_ids"][0]
    for args in (["list"], ["get", memory_id], ["search", "esc"], ["list", "--newest"]):
        out = local_cli.ok("--format", fmt, *args).stdout
        _clean(out)
        assert "\\x1b[31mRED" in out, (args, out)
    got = local_cli.ok("--format", fmt, "get", memory_id).stdout
    assert "\\x00" in got and "\\u202e" in got


def test_metadata_values_are_escaped_too(local_cli):
    memory_id = local_cli.json("add", "-m", "k=v\x1b[2J", "plain text")["memory_ids"][0]
    for fmt in ("plain", "table"):
        out = local_cli.ok("--format", fmt, "get", memory_id).stdout
        _clean(out)


def test_json_keeps_the_text_exact(local_cli):
    memory_id = local_cli.json("add", HOSTILE)["memory_ids"][0]
    out = local_cli.ok("--json", "get", memory_id).stdout
    _clean(out)  # JSON escapes controls itself
    assert json.loads(out)["text"] == HOSTILE


@pytest.mark.parametrize("args", [["export"], ["--json", "export"], ["--json", "list", "--all"]])
def test_json_lines_keep_the_text_exact_too(local_cli, args):
    local_cli.ok("add", HOSTILE)
    out = local_cli.ok(*args).stdout
    _clean(out)  # an export to a terminal, or `export --out /dev/stdout`, is read there
    [record] = [json.loads(line) for line in out.splitlines()]
    assert record["text"] == HOSTILE


def test_an_export_file_holds_the_text_exact_and_escaped(local_cli, tmp_path):
    local_cli.ok("add", HOSTILE)
    out = tmp_path / "m.jsonl"
    local_cli.ok("export", "--out", str(out))
    text = out.read_text(encoding="utf-8")
    _clean(text)
    assert json.loads(text)["text"] == HOSTILE


def test_error_lines_escape_what_they_quote(capsys):
    from memcore.errors import InvalidInput
    from memcore_cli.group import report_error

    report_error(InvalidInput("no memory \x1b]0;pwned\x07 here"), as_json=False, debug=False)
    line = capsys.readouterr().err
    _clean(line)
    assert "\\x1b]0;pwned\\x07" in line
