"""``hermes tablestore-mem migrate-tenant``: move a user's memories from the tenant of 0.1.0
(the user id alone) to the tenants of the platforms they were said on (``telegram:12345``).

Each current memory goes to the platform its run names: a gateway session's run is Hermes' session
key, ``agent:<profile>:<platform>:...``. One whose run names none (a CLI session, a run of
the library) goes to ``--platform`` when given; otherwise it stays and is counted, because the
same id on two platforms may be two people, and guessing would hand one the other's memories.
Each platform's share is imported into its tenant as ``import`` writes a file (all or nothing;
Ctrl-C undoes it), and only then deleted from the old tenant. A run stopped between the two
finds the copies present the next time, on every store: a memory whose agent, run and text the
target already holds is not copied again, only deleted (TableStore adds a text twice if asked).

On Signal and Feishu a user's tenant is named by the platform's second id (the UUID, the
union_id; see :mod:`memcore_hermes.session.tenancy`), which the old tenant does not know:
``--user-id-alt PLATFORM=ID`` gives it; without it, memories said on such a platform
(:data:`~memcore_hermes.session.tenancy.ALT_NAMED_PLATFORMS`) are refused, since under the user
id alone no session would read them. It names one platform's tenant and nothing else: where the
memories of runs naming no platform go is ``--platform``'s to say. Memories a dream pass superseded stay, as the old
tenant's history: the move copies current memories only (with no replaced version beside
them, a copy would put the outdated fact back in recall).

Each run's message log (the turns shown around a hit) goes where the run's memories go, after
their import and before their delete, in one transaction per platform, so a moved memory keeps
its neighbours and a run stopped anywhere moves no message twice. A store that cannot move it
(TableStore) leaves it with the old tenant, and the answer says so.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Set
from typing import Any

from memcore.errors import InvalidInput, NotFound
from memcore.recall import strip_recall
from memcore.scope import (
    Scope,
    SessionContext,
    platform_tenant,
    tenant_platform,
    unescape_segment,
)
from memcore.service import MemoryService
from memcore.transfer import dump_line, export_record
from memcore.values import MemoryRecord
from memcore_hermes.commands.importing import import_lines
from memcore_hermes.commands.interrupts import held_interrupts
from memcore_hermes.session.tenancy import ALT_NAMED_PLATFORMS, platform_user

#: Runs listed in the answer as examples of those that name no platform.
_EXAMPLES = 5


def run_platform(run_id: str) -> str | None:
    """The platform a run names, when it is a gateway session key (``agent:main:telegram:dm:42``
    gives ``telegram``); None for any other run."""
    parts = unescape_segment(run_id).split(":")
    if len(parts) >= 4 and parts[0] == "agent" and parts[2].strip():
        # Hermes' local platform keys its sessions "local" and names itself "cli" to memory.
        return "cli" if parts[2] == "local" else parts[2]
    return None


def migrate_tenant(
    open_service: Callable[[SessionContext], MemoryService],
    user_id: str,
    *,
    platform: str | None = None,
    alts: Mapping[str, str] | None = None,
    dry_run: bool = False,
) -> dict[str, Any]:
    """Move ``user_id``'s memories out of the tenant of the user id alone; the answer says
    how many went to which tenant and how many stayed. ``alts`` maps a platform of
    :data:`ALT_NAMED_PLATFORMS` to the id that names the user's tenant there (Signal's UUID):
    what was said there goes to ``platform:id``."""
    alts = dict(alts or {})
    # A blank platform or id is refused before anything is read.
    for name, alt in alts.items():
        platform_tenant(name, alt)
        if name not in ALT_NAMED_PLATFORMS:
            raise InvalidInput(
                f"--user-id-alt {name}=...: {name!r} names its tenants by the user id, so an "
                f"alternate id there would move memories where no session reads; the platforms "
                f"that take one: {', '.join(sorted(ALT_NAMED_PLATFORMS))}",
                field="user_id_alt",
            )
    if platform is not None:
        platform_tenant(platform, alts.get(platform, user_id))
    legacy = open_service(SessionContext(user_id=user_id, session_id="cli"))
    memories = list(legacy.every_memory())
    # Each run's message log, counted by scope; None where the store cannot move it.
    logs = legacy.logs.counts() if legacy.logs.moves else None
    shares: dict[str, list[MemoryRecord]] = defaultdict(list)
    stay: list[MemoryRecord] = []
    superseded = 0
    for memory in memories:
        if not memory.is_current:
            superseded += 1  # a copy would be current again: the old fact back in recall
            continue
        named = run_platform(memory.scope.run_id) or platform
        (shares[named] if named else stay).append(memory)
    logged: dict[str, dict[Scope, int]] = defaultdict(dict)
    log_stays: dict[Scope, int] = {}
    for scope, count in (logs or {}).items():
        named = run_platform(scope.run_id) or platform
        (logged[named] if named else log_stays)[scope] = count
    _refuse_a_platform_tenant(user_id, shares.keys() | logged.keys())
    _refuse_a_tenant_no_session_reads(shares.keys() | logged.keys(), alts)
    answer: dict[str, Any] = {
        "from": str(legacy.profile_pattern),
        "memories": len(memories),
        "messages": None if logs is None else sum(logs.values()),
        "dry_run": dry_run,
        "moved": {},
        "left": len(stay),
        "superseded_left": superseded,
    }
    if logs is None:
        answer["messages_note"] = (
            "the message log was not moved: this backend cannot move it to another tenant, so "
            "the turns of these conversations stay with the old tenant"
        )
    else:
        answer["messages_left"] = sum(log_stays.values())
    if superseded:
        answer["superseded_note"] = (
            "memories a dream pass replaced stay where they are, as history (an import would "
            "make them current again); no session recalls them"
        )
    if stay or log_stays:
        runs = {m.scope.run_id for m in stay} | {scope.run_id for scope in log_stays}
        answer["left_runs"] = sorted(runs)[:_EXAMPLES]
        answer["note"] = (
            "memories and messages whose run names no platform stay where they are; "
            "--platform P moves them to P's tenant"
        )
    for name in sorted(shares.keys() | logged.keys()):
        share, log = shares.get(name, []), logged.get(name, {})
        owner = alts.get(name) or platform_user(name, user_id)
        target = open_service(SessionContext(user_id=owner, session_id="cli", platform=name))
        moved: dict[str, Any] = {"memories": len(share)}
        if logs is not None:
            moved["messages"] = sum(log.values())
        answer["moved"][str(target.profile_pattern)] = moved
        if dry_run:
            continue
        # Each record keeps its agent and run and gets a new id in the target tenant (the
        # old tenant holds its id until the copy has landed), as ``import --tenant`` moves one.
        held = list(target.every_memory())
        there = {_said_where(memory) for memory in held}
        fresh = [memory for memory in share if _said_where(memory) not in there]
        lines = [dump_line(export_record(memory)) for memory in fresh]
        result = import_lines(target, lines, held, retarget=True)
        moved.update(added=result["added"], present=result["present"] + len(share) - len(fresh))
        if logs is not None:
            # After the copies, which the moved messages link to; before the deletes, which
            # would take the messages still linked to the originals with them.
            moved["messages_moved"] = legacy.logs.move(list(log), to=target.logs)
        moved["deleted"] = _delete(legacy, share)
    return answer


def _said_where(memory: MemoryRecord) -> tuple[str, str, str]:
    """What makes a copy the same memory in another tenant: its agent, its run, its words as
    the import writes them (a recall block cut out, as every write cuts it)."""
    return memory.scope.agent_id, memory.scope.run_id, strip_recall(memory.text).strip()


def _refuse_a_platform_tenant(user_id: str, platforms: Set[str]) -> None:
    """Refuse a user id that is itself the tenant of a user on a platform it would move
    memories to: ``telegram:12345`` is also where telegram's user 12345 keeps memories now, and
    moving them to ``telegram:telegram:12345`` would take them from that user."""
    owner = tenant_platform(user_id)
    if owner is not None and owner in platforms:
        rest = user_id.partition(":")[2]
        raise InvalidInput(
            f"--user-id {user_id!r} is also the tenant of user {rest!r} on {owner!r}, whose "
            f"memories said on {owner!r} it holds; nothing was moved",
            field="user_id",
        )


def _refuse_a_tenant_no_session_reads(platforms: Set[str], alts: Mapping[str, str]) -> None:
    """Refuse to move memories to a platform whose sessions name their tenant by the user's
    ``user_id_alt`` without that id: under the user id alone they would land in a tenant no
    session reads, and the old tenant, emptied, would no longer be reported."""
    for name in sorted((platforms & ALT_NAMED_PLATFORMS) - alts.keys()):
        raise InvalidInput(
            f"memories said on {name!r} belong to the tenant its sessions name by the "
            f"user's user_id_alt, which --user-id alone does not give (moved by it, no "
            f"session would read them): add --user-id-alt {name}=ID, the user id itself when "
            "the two are the same; nothing was moved",
            field="user_id_alt",
        )


def _delete(legacy: MemoryService, share: list[MemoryRecord]) -> int:
    """Delete the moved memories from the old tenant, with Ctrl-C held until done."""
    deleted = 0
    with held_interrupts():
        for memory in share:
            try:
                legacy.forget(memory.id, agent_id=memory.scope.agent_id, run_id=memory.scope.run_id)
            except NotFound:
                pass  # deleted meanwhile
            else:
                deleted += 1
    return deleted
