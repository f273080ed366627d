"""How large an export of typical memories is, and the peak memory ``memcore import`` takes
to restore it (what the import's input bound is chosen from). Prints JSON.

Each memory is a chat message of 15 to 35 words with one metadata key, in sessions of 40,
followed in the file by its line of the message log, as ``memcore export`` writes them. The
import runs in a fresh process on the embedded store, lexical-only (no model load).

    uv run python -m benchmarks.cli_import_memory [--memories 100000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

_WORDS = [
    "user",
    "likes",
    "green",
    "tea",
    "coffee",
    "morning",
    "hiking",
    "mountain",
    "prefers",
    "concise",
    "answers",
    "python",
    "code",
    "lives",
    "hangzhou",
    "works",
    "dentist",
    "dog",
    "corgi",
    "named",
    "travels",
    "often",
    "reads",
    "books",
    "weekend",
    "jazz",
    "piano",
]
_MAIN = "from memcore_cli.entry import main; main()"


def write_export(path: Path, count: int) -> None:
    """``count`` memories, then their message log, in the export's format 2."""
    rng = random.Random(7)
    memories, messages = [], []
    for i in range(count):
        memory_id = uuid.uuid4().hex
        text = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(15, 35)))
        scope = {
            "app_id": "hermes",
            "tenant_id": "__default__",
            "agent_id": "hermes",
            "run_id": f"session-{i // 40}",
        }
        at = 1_790_000_000.0 + i
        memories.append(
            {
                **{"format": 2, "id": memory_id, "text": text, "scope": scope},
                **{"metadata": {"topic": rng.choice(_WORDS)}, "created_at": at},
                **{"updated_at": at, "unit_type": "message", "salience": None, "version": 1},
                **{"said_at": at, "superseded_by": None, "superseded_how": None},
                "supersedes": [],
            }
        )
        messages.append(
            {
                **{"format": 2, "kind": "message", "id": uuid.uuid4().hex, "role": "user"},
                **{"content": text, "scope": scope, "metadata": {}, "timestamp": at},
                "memory_id": memory_id,
            }
        )
    with path.open("w", encoding="utf-8") as fh:
        for record in memories + messages:
            fh.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--memories", type=int, default=100_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        export = Path(tmp) / "export.jsonl"
        write_export(export, args.memories)
        home = Path(tmp) / "home"
        home.mkdir(mode=0o700)
        (home / "config.json").write_text('{"embedder": "none"}', encoding="utf-8")
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", _MAIN, "import", str(export)],
            capture_output=True,
            text=True,
            env={**os.environ, "MEMCORE_HOME": str(home)},
            check=True,
        )
        seconds = time.perf_counter() - started
        size = export.stat().st_size
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    report = {
        "benchmark": "cli_import_memory",
        "memories": args.memories,
        "export_bytes": size,
        "bytes_per_memory": round(size / args.memories),
        "import_peak_rss_mib": round(peak_kib / 1024, 1),
        "import_seconds": round(seconds, 1),
        "said": done.stdout.strip().splitlines(),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
