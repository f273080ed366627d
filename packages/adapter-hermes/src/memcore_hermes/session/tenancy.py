"""Which tenant a Hermes user is: the platform and the user id, or (``tenant_scope: user``)
the user id alone, as in 0.1.0.

Hermes gives each session the gateway's ``platform`` (``telegram``, ``discord``; ``cli`` when
it has none) and the platform's ``user_id``. Ids are only unique within a platform, so
Telegram's ``12345`` and Discord's ``12345`` are two tenants, ``telegram:12345`` and
``discord:12345`` (:func:`memcore.scope.platform_tenant`). A session with no user is the
default tenant, as before, unless it is a chat's: Hermes drops the sender of a Telegram group it
observes, so that the whole group shares one session, and such a session is the chat's own
tenant (``telegram#chat:-100123``, :func:`memcore.scope.chat_tenant`), never the default one
that the owner's own CLI sessions use: any member of the group would recall those.

A session several people share is the chat's too. Hermes keys a thread (by default) or a group
with ``group_sessions_per_user: false`` without a participant, builds the agent, and this
provider, for whoever spoke first, and serves every member's turns with it; under the first
speaker's tenant, everyone in the thread would recall that person's memories, and what the
others said would be kept as theirs. The chat's tenant is the group's memory instead; a
person's own is reached in a direct chat, or in threads with ``thread_sessions_per_user: true``.

Where a platform gives a second id that stays with the person and is unique on the whole
platform (``user_id_alt``: Signal's account UUID, Feishu's union_id, Google Chat's ``users/...``
name), that id names the user, as it names the participant in Hermes' own session keys:
Signal's ``user_id`` is the phone number when the sender shares it and the UUID when not, and
Feishu's is the tenant user id or the per-app open_id depending on the bot's permissions, so
either may change under one person and split their memories in two (Google Chat's is the email
address, which can be renamed). DingTalk's ``user_id_alt`` is a staff id, unique only within one
organisation: a bot in two organisations could see one staff id for two people (Hermes' session
keys hold the chat, which tells them apart; a tenant spans chats), so DingTalk keeps its sender id.
"""

from __future__ import annotations

import logging
import shlex
from collections.abc import Mapping
from typing import Any

from memcore.config import MemcoreConfig
from memcore.scope import Scope, SessionContext

logger = logging.getLogger(__name__)

#: Platforms whose gateway gives ``user_id_alt`` with a sender and whose alternate id is
#: unique platform-wide (Hermes' platform names): their sessions' tenants are named by it.
ALT_NAMED_PLATFORMS = frozenset({"signal", "feishu", "google_chat"})


#: Telegram's stand-in senders for a message sent on behalf of a chat (Bot API,
#: ``Message.from_user``): GroupAnonymousBot for a group's anonymous admins, Channel_Bot for a
#: message sent as a channel, 777000 for a linked channel's post. Each is the one sender of
#: such messages in every group, so it names no person: the session is the chat's.
TELEGRAM_STAND_INS = frozenset({"1087968824", "136817688", "777000"})


def per_platform(config: MemcoreConfig) -> bool:
    """Whether a session's platform is part of its tenant here: ``tenant_scope: platform``
    and no fixed ``tenant_id`` (which every session shares)."""
    return config.tenant_scope == "platform" and config.tenant_id is None


def platform_of(kwargs: Mapping[str, Any], config: MemcoreConfig) -> Any:
    """The platform that names the session's tenant: Hermes' ``platform`` (``cli`` when it
    passes none, as Hermes itself does), or None when the tenant is the user id alone. Not
    checked here: :func:`memcore.scope.platform_tenant` refuses a non-string or blank one."""
    if not per_platform(config):
        return None
    return kwargs.get("platform") or "cli"


def tenant_user(kwargs: Mapping[str, Any], config: MemcoreConfig) -> Any:
    """The id that names a session's user in its tenant: per platform, on the platforms of
    :data:`ALT_NAMED_PLATFORMS`, Hermes' participant id (``user_id_alt or user_id``, a blank
    alternate ignored), elsewhere ``user_id``; with ``tenant_scope: user`` the user id alone,
    as in 0.1.0, where one phone number may be the same person on two platforms. Not checked
    here: :func:`memcore.scope.resolve_scope` refuses a bad one. None for one of
    :data:`TELEGRAM_STAND_INS`; WhatsApp's in the form Hermes writes it in session keys."""
    if _stand_in(kwargs):
        return None
    platform, alt, user = (
        platform_of(kwargs, config),
        kwargs.get("user_id_alt"),
        kwargs.get("user_id"),
    )
    if platform in ALT_NAMED_PLATFORMS and isinstance(alt, str) and alt.strip():
        return alt
    return platform_user(platform, user) if isinstance(user, str) and user.strip() else user


def _stand_in(kwargs: Mapping[str, Any]) -> bool:
    """Whether the session's sender is one of :data:`TELEGRAM_STAND_INS`."""
    return kwargs.get("platform") == "telegram" and kwargs.get("user_id") in TELEGRAM_STAND_INS


def platform_user(platform: object, user_id: str) -> str:
    """``user_id`` as a tenant on ``platform`` names it: WhatsApp's in the form Hermes keys
    one person by, whether the bridge gave a phone JID, a device JID or a LID (Hermes' advice to
    plugins that keep anything per sender); any other as given."""
    return _whatsapp_canonical(user_id) if platform == "whatsapp" else user_id


def fixed_tenant(kwargs: Mapping[str, Any], config: MemcoreConfig) -> str | None:
    """The tenant id a session is given whoever its user: the configured ``tenant_id``, or,
    for a session in a chat that names no user or that several people share
    (:func:`shared_by_many`), the chat's (whatever ``tenant_scope`` says); None when the user
    names it (:func:`tenant_user`, or the default tenant without one)."""
    from memcore.scope import chat_tenant

    if config.tenant_id is not None:
        return config.tenant_id
    chat = kwargs.get("chat_id")
    if not isinstance(chat, str) or not chat.strip():
        if _stand_in(kwargs):
            # Neither a person nor a chat: the default tenant would be the owner's, which
            # any member of any group could then recall.
            from memcore.errors import InvalidInput

            raise InvalidInput(
                f"Telegram's stand-in sender {kwargs.get('user_id')} (a message sent on behalf "
                "of a chat) names no person, and this session names no chat_id: it has no "
                "tenant of its own, so it runs without memory",
                field="chat_id",
            )
        return None
    if tenant_user(kwargs, config) is not None and not shared_by_many(kwargs):
        return None
    return chat_tenant(kwargs.get("platform") or "cli", chat)


def shared_by_many(kwargs: Mapping[str, Any]) -> bool:
    """Whether Hermes serves everyone in a chat with this session: a group, channel or thread
    session whose key does not end with its participant (``user_id_alt or user_id``, as
    Hermes' ``build_session_key`` appends it when it isolates people), or a group DM."""
    chat_type, key = kwargs.get("chat_type"), kwargs.get("gateway_session_key")
    if not isinstance(chat_type, str) or not chat_type or not isinstance(key, str):
        return False
    if chat_type == "dm":
        return _group_dm(kwargs)
    participant = str(kwargs.get("user_id_alt") or kwargs.get("user_id") or "")
    if not participant:
        return True
    return not key.endswith(f":{platform_user(kwargs.get('platform'), participant)}")


def _group_dm(kwargs: Mapping[str, Any]) -> bool:
    """Whether a direct chat holds several people: Slack's adapter calls a group DM (an mpim)
    ``dm`` as it does a one-to-one IM, whose ids alone start with ``D`` (the test Hermes'
    adapter itself makes), and Hermes keys a DM by its chat, never by its sender."""
    chat = kwargs.get("chat_id")
    return kwargs.get("platform") == "slack" and isinstance(chat, str) and chat[:1] not in ("", "D")


def _whatsapp_canonical(participant: str) -> str:
    """WhatsApp's participant as Hermes writes it in a session key (one form of its aliases;
    the id as given where that form is empty or Hermes is absent)."""
    try:
        from gateway.whatsapp_identity import (  # type: ignore[import-untyped,unused-ignore]
            canonical_whatsapp_identifier,
        )
    except ImportError:  # pragma: no cover - Hermes is the host
        return participant
    return str(canonical_whatsapp_identifier(participant) or participant)


def command_session(
    user_id: str | None, platform: str | None, config: MemcoreConfig
) -> SessionContext:
    """The session of a ``hermes tablestore-mem`` command run for ``--user-id`` on
    ``--platform``: with per-platform tenants a user id alone names no one, so it is refused
    rather than sent to a tenant no chat reaches."""
    from memcore.errors import InvalidInput

    by_platform = per_platform(config)
    if platform is not None and user_id is None:
        raise InvalidInput(
            "--platform names the platform of a --user-id; give the user id too", field="platform"
        )
    if platform is not None and not by_platform:
        raise InvalidInput(
            "--platform is not part of the tenant here (tenant_scope: user, or a fixed "
            "tenant_id); leave it out",
            field="platform",
        )
    if user_id is not None and platform is None and by_platform:
        raise InvalidInput(
            "--user-id needs --platform (telegram, discord, ...): each platform's users are "
            "tenants of their own, such as telegram:12345",
            field="platform",
        )
    return SessionContext(user_id=user_id, session_id="cli", platform=platform)


def legacy_scope(app_id: str, user_id: str) -> Scope:
    """A scope of the tenant where 0.1.0 kept ``user_id``'s memories: the user id alone."""
    from memcore.scope import resolve_scope

    return resolve_scope(SessionContext(user_id=user_id), app_id=app_id)


def has_legacy_memories(store: Any, config: MemcoreConfig, user_id: object) -> bool:
    """Whether a per-platform session's user still has memories under the tenant of the user
    id alone (written before tenants were per platform), which no session reads now."""
    if not per_platform(config) or not isinstance(user_id, str) or not user_id.strip():
        return False
    from memcore.service import MemoryService

    # Current ones only: what a dream pass superseded stays there after a migration.
    scope = legacy_scope(config.app_id, user_id)
    service = MemoryService(store, store_name=config.memory_store_name, scope=scope)
    return bool(service.profile(limit=1, current_only=True).items)


def migrate_advice(user_id: str, platform: str | None = None, alt: str | None = None) -> str:
    """The command that moves ``user_id``'s memories of 0.1.0; on a platform that names
    tenants by another id (:data:`ALT_NAMED_PLATFORMS`), with the id that names this user's
    (``migrate-tenant`` needs it there, even when it is the user id itself)."""
    command = f"hermes tablestore-mem migrate-tenant --user-id {shlex.quote(user_id)}"
    if platform in ALT_NAMED_PLATFORMS and alt is not None:
        command += f" --user-id-alt {shlex.quote(f'{platform}={alt}')}"
    return (
        f"{command} moves them to the tenant of the platform each was said on (--dry-run "
        "shows where first)"
    )


def warn_of_legacy_memories(runtime: Any, kwargs: Mapping[str, Any]) -> None:
    """Say in the log, once per session start, that this user's memories of 0.1.0 (under the
    ``user_id`` Hermes passed, alone) are not read, and how to move them (a lane task: one
    read of at most one memory)."""
    from memcore.errors import MemcoreError

    user_id = kwargs.get("user_id")
    try:
        found = has_legacy_memories(runtime.handle.ready(), runtime.config, user_id)
    except MemcoreError:
        return  # the store is not ready: the session's own warm-up reports that
    if found:
        assert isinstance(user_id, str)
        logger.warning(
            "tablestore-mem: user %r has memories under the tenant of the user id alone (kept "
            "before tenants were per platform), which this session does not read; %s",
            user_id,
            migrate_advice(
                user_id, platform_of(kwargs, runtime.config), tenant_user(kwargs, runtime.config)
            ),
        )
