"""``python -m memcore_tablestore.emulator``: serve the emulator over the in-memory fake.

Prints one JSON line (``url``, ``port``, ``instance_name``) once listening, then serves until
interrupted or until stdin closes (so a parent process can stop it by closing the pipe).
``memcore emulator serve`` is the full command, with the SQLite store behind it.
"""

from __future__ import annotations

import argparse
import errno
import json
import sys
import threading

from memcore_tablestore.emulator.faults import Faults
from memcore_tablestore.emulator.server import EmulatorServer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m memcore_tablestore.emulator")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument(
        "--faults", default="{}", help="Faults as JSON, e.g. '{\"latency_ms\": 20}'"
    )
    parser.add_argument("--until-stdin-closes", action="store_true")
    args = parser.parse_args(argv)
    from memcore.testing import InMemoryMemoryStore

    faults = Faults.from_dict(json.loads(args.faults))
    try:
        server = EmulatorServer(InMemoryMemoryStore(), port=args.port, faults=faults).start()
    except OSError as exc:
        busy = exc.errno == errno.EADDRINUSE
        reason = "is already in use; pick another with --port" if busy else f"({exc.strerror})"
        print(f"emulator: error: port {args.port} on 127.0.0.1 {reason}", file=sys.stderr)
        return 5
    print(
        json.dumps({"url": server.url, "port": server.port, "instance_name": server.instance_name}),
        flush=True,
    )
    done = threading.Event()
    try:
        if args.until_stdin_closes:
            sys.stdin.read()
        else:
            done.wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
