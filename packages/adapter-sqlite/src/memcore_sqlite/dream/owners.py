"""Which process runs a dream pass, and whether it still can.

A pass runs inside the call that created it, so its task is only ever moved on by that one
process. A task left unfinished by a process that is gone (killed, the machine restarted)
would otherwise say ``running`` for ever; the store reports it ``failed`` instead. The owner
is kept as this machine's name and boot, the process id, its pid namespace (containers on
one kernel count ids apart) and the process's start time (a process id alone may be given
to a new process later).

A process on another machine cannot be checked from here: its tasks are never taken for
abandoned. Neither are other processes' tasks on Windows, where probing a process id with
``os.kill`` would end that process.
"""

from __future__ import annotations

import json
import os
import socket
import threading
from pathlib import Path

#: The tasks this process is running now (a task of ours not in it was left by an error).
_running: set[str] = set()
_lock = threading.Lock()


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text(encoding="ascii", errors="replace").strip()
    except OSError:
        return None


def _stat(pid: int) -> tuple[str, str] | None:
    """A process's state letter and start time (clock ticks after boot), where /proc has them."""
    text = _read(f"/proc/{pid}/stat")
    if not text or ")" not in text:
        return None
    fields = text.rsplit(")", 1)[1].split()
    # After "pid (name)": state is field 3 of the line, the start time field 22.
    return (fields[0], fields[19]) if len(fields) > 19 else None


def _boot() -> str | None:
    return _read("/proc/sys/kernel/random/boot_id")


def _pid_space() -> str | None:
    """This process's pid namespace: containers on one kernel (one boot, perhaps one host
    name) count process ids apart, so another one's pid says nothing here."""
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return None


def this_process() -> str:
    """The owner a new task records."""
    stat = _stat(os.getpid())
    return json.dumps(
        {
            "host": socket.gethostname(),
            "boot": _boot(),
            "pid": os.getpid(),
            "pids": _pid_space(),
            "start": stat[1] if stat else None,
        },
        sort_keys=True,
    )


def started(task_id: str) -> None:
    with _lock:
        _running.add(task_id)


def ended(task_id: str) -> None:
    with _lock:
        _running.discard(task_id)


def gone(owner: str | None, task_id: str) -> bool:
    """Whether the process that ran ``task_id`` is certainly no longer running it.

    A task without an owner was left by a release that did not record one."""
    if owner is None:
        return True
    try:
        found = json.loads(owner)
        host, boot, pid, start = found["host"], found["boot"], int(found["pid"]), found["start"]
    except (ValueError, TypeError, KeyError):
        return False  # not ours to judge
    if host != socket.gethostname():
        return False
    if boot is not None and _boot() not in (None, boot):
        return True  # the machine started again since
    if found.get("pids") != _pid_space():
        return False  # another container's process ids (or one we cannot tell)
    if pid == os.getpid():  # this process (or one before it with the same id)
        with _lock:
            return task_id not in _running
    if os.name == "nt":
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # alive, another user's
        pass
    stat = _stat(pid)
    if stat is None:
        return False
    return stat[0] in ("Z", "X") or (start is not None and stat[1] != start)
