"""``memcore import`` names the line an editor shows, whatever breaks the file's lines.

The reader took a line at a time up to ``\\n`` and broke it at ``\\r`` afterwards, so in a
file broken by a lone ``\\r`` (old Mac files, some Windows tools) or mixed breaks, every
number it gave before the next ``\\n`` was that of the first line of the run: a byte that is
not UTF-8 on line 3 was "at line 1", and a file of short lines past 16 MiB was refused as
"line 1 is longer than any record". Lines break at ``\\n``, ``\\r\\n`` and ``\\r``, each
counted once (the export writes ``\\n`` and escapes every other break inside its strings).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

MAIN = "from memcore_cli.entry import main; main()"


def _import(home: Path, path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.json").write_text('{"embedder": "none"}', encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-c", MAIN, "import", *args, str(path)],
        capture_output=True,
        text=True,
        env={**os.environ, "MEMCORE_HOME": str(home)},
        timeout=120,
        check=False,
    )


def test_a_byte_that_is_not_utf8_is_named_on_its_own_line(tmp_path: Path) -> None:
    for name, data in (
        ("cr", b"first note\rsecond note\r\xe9 third\rfourth\r"),
        ("mixed", b"first note\r\nsecond note\r\xe9 third\nfourth\n"),
    ):
        path = tmp_path / f"{name}.txt"
        path.write_bytes(data)
        done = _import(tmp_path / name, path, "--lines")
        assert done.returncode == 2, done.stderr
        assert done.stderr == f"memcore: error: cannot read {path} (not UTF-8 text at line 3)\n"


def test_short_lines_past_16_mib_are_lines_not_one_long_record(tmp_path: Path) -> None:
    path = tmp_path / "old-mac.jsonl"
    blank = b" " * 1023 + b"\r"  # 17,000 blank lines of 1 KiB, skipped as blank lines are
    path.write_bytes(blank * 17_000 + b'{"format": 2, "text": 5}\r')
    done = _import(tmp_path / "home", path)
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("memcore: error: line 17001: "), line
