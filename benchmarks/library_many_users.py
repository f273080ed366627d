"""One ``Memory`` serving many users on the embedded store, against one ``Memory`` per user.

Each layout runs in a fresh child process (so one cannot inherit the other's loaded model or
page cache in its RSS) over its own SQLite file with the default embedder:

* ``shared``: one ``Memory.open``, then per user ``add`` (``--adds`` facts) and one
  ``search``, naming the user per call;
* ``separate``: ``--separate`` ``Memory.open`` objects, one per user, all kept open as a
  server would keep them, each doing the same work.

Reported per layout: RSS before opening and after the work (and the peak), time to open, and
per-call add and search times. ``uv run python -m benchmarks library_many_users``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._stats import summary_ms

FACTS = (
    "{user} drinks green tea every morning",
    "{user} has a dog called Pixel",
    "{user} works as a night nurse",
    "{user} is learning to play the cello",
)


def rss_mb() -> float:
    """Resident set size now, from ``/proc`` (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")  # pragma: no cover - not Linux


def peak_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def work(mem: Any, user: str, adds: int, add_s: list[float], search_s: list[float]) -> bool:
    """``adds`` facts for ``user``, then one search; whether the search found the user's own."""
    for fact in FACTS[:adds]:
        t = time.perf_counter()
        mem.add(text=fact.format(user=user), user_id=user)
        add_s.append(time.perf_counter() - t)
    t = time.perf_counter()
    hits = mem.search("What does the user drink?", user_id=user, top_k=3)
    search_s.append(time.perf_counter() - t)
    return bool(hits) and all(h.memory.scope.tenant_id == user for h in hits)


def child(layout: str, users: int, adds: int, path: Path) -> dict[str, Any]:
    import memcore

    before = rss_mb()
    add_s: list[float] = []
    search_s: list[float] = []
    names = [f"user{i:04d}" for i in range(users)]
    started = time.perf_counter()
    if layout == "shared":
        t = time.perf_counter()
        mem = memcore.Memory.open("local", path=path)
        open_s = [time.perf_counter() - t]
        mode = getattr(mem.store, "search_mode", None)
        isolated = all([work(mem, name, adds, add_s, search_s) for name in names])
        after = rss_mb()
        mem.close()
    else:
        mems = []
        open_s = []
        for name in names:
            t = time.perf_counter()
            mems.append(memcore.Memory.open("local", user_id=name, path=path))
            open_s.append(time.perf_counter() - t)
        mode = getattr(mems[0].store, "search_mode", None)
        isolated = all([work(m, n, adds, add_s, search_s) for m, n in zip(mems, names)])
        after = rss_mb()
        for m in mems:
            m.close()
    first_s = add_s.pop(0) if add_s else None
    return {
        "layout": layout,
        "users": users,
        "adds_per_user": adds,
        "search_mode": mode,
        "each_user_saw_only_its_own": isolated,
        "rss_before_mb": before,
        "rss_after_mb": after,
        "rss_growth_mb": round(after - before, 1),
        "rss_peak_mb": peak_mb(),
        "wall_s": round(time.perf_counter() - started, 2),
        "open": summary_ms(open_s),
        "open_total_s": round(sum(open_s), 2),
        #: The first add loads the embedding model; the add figures leave it out.
        "first_add_s": None if first_s is None else round(first_s, 2),
        "add": summary_ms(add_s),
        "search": summary_ms(search_s),
    }


def run_child(layout: str, users: int, adds: int, timeout: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        args = [
            sys.executable,
            "-m",
            "benchmarks.library_many_users",
            "--child",
            layout,
            "--users",
            str(users),
            "--adds",
            str(adds),
            "--path",
            str(Path(tmp) / "memory.db"),
        ]
        env = {**os.environ, "MEMCORE_HOME": tmp}
        done = subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=env)
        if done.returncode != 0:
            return {"layout": layout, "error": done.stderr.strip().splitlines()[-1:]}
        result: dict[str, Any] = json.loads(done.stdout)
        return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--users", type=int, default=1_000, help="users of the shared Memory")
    parser.add_argument("--separate", type=int, default=30, help="users, one Memory each")
    parser.add_argument("--adds", type=int, default=2, help="facts added per user (1 to 4)")
    parser.add_argument("--timeout", type=float, default=110.0, help="seconds per layout")
    parser.add_argument("--child", choices=("shared", "separate"), help=argparse.SUPPRESS)
    parser.add_argument("--path", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    adds = max(1, min(len(FACTS), args.adds))
    if args.child:
        print(json.dumps(child(args.child, args.users, adds, args.path)))
        return 0
    shared = run_child("shared", args.users, adds, args.timeout)
    separate = run_child("separate", args.separate, adds, args.timeout)
    out: dict[str, Any] = {"benchmark": "library_many_users", "shared": shared}
    out["separate"] = separate
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
