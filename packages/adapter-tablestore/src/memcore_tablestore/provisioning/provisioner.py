"""First-run bootstrap: buy a TableStore instance when the config names none, and save it.

Steps, each safe to repeat: take a lock; write a pending marker naming the alias the instance
will carry; find an instance with that alias or create one (``CreateVCUInstance``); save its
name in the JSON config at once (atomically, mode 0600); open its network ACL
(``UpdateInstance``); wait until its data host resolves and, optionally, until a data-plane
probe succeeds; save the ``endpoint`` too; remove the marker. A crash anywhere before the end
leaves the marker, and the next run finishes with the same instance instead of buying another.

At most one purchase per intent: the marker records that a create is about to be sent, and
while an answer is missing (lost, timed out, a 5xx) the alias is looked for, for up to
``listing_patience`` seconds after the send (ListInstances can lag behind a new instance),
before a create is ever sent again. A create the service refused (4xx) bought nothing.

Warm-up: for ``warmup`` seconds after its purchase (10 minutes by default) a new instance may
answer ``OTSAuthFailed`` ("instance not running", "denied by instance ACL") on the data plane
and 4xx on its first ``UpdateInstance``; those are retried with backoff until then, each retry
reported through ``progress``. A key without permission still fails on the first control-plane
call (``ListInstances``), before anything is bought.
"""

from __future__ import annotations

import logging
import math
import os
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import attrs

from memcore.config import (
    MemcoreConfig,
    dump_config,
    merge_config,
    parse_config,
    without_userinfo,
)
from memcore.errors import (
    ConfigError,
    InvalidInput,
    MemcoreError,
    NotFound,
    PermissionDenied,
    Unavailable,
)
from memcore.ports import InstanceFacts, ProgressCallback
from memcore_tablestore.provisioning.control_client import (
    AccessKeys,
    ControlPlaneClient,
    InstanceRecord,
)
from memcore_tablestore.provisioning.errors import (
    ControlPlaneError,
    ControlPlaneUnreachable,
    InstanceUnusable,
)
from memcore_tablestore.provisioning.files import (
    PENDING_MARKER,
    PendingInstance,
    atomic_write_text,
    bootstrap_lock,
    clear_pending,
    read_pending,
    write_pending,
)
from memcore_tablestore.provisioning.wait import (
    Clock,
    Resolver,
    Sleep,
    backoff,
    retry_transient,
    system_resolver,
    wait_for_dns,
)

logger = logging.getLogger(__name__)

DATA_ENDPOINT_TEMPLATE = "https://{instance}.{region}.ots.aliyuncs.com"
INSTANCE_DESCRIPTION = "Long-term agent memory, created by memcore"
#: Statuses GetInstance/ListInstances name besides ``normal``; such an instance is never used.
UNUSABLE_STATUSES = {
    "forbidden": "is disabled (forbidden), often for an overdue payment: re-enable it in the "
    "TableStore console and run again, or release it",
    "deleting": "is being released (Deleting) and cannot be used: let the release finish",
}
Probe = Callable[[InstanceFacts], object]


def data_endpoint(instance_name: str, region: str, template: str = DATA_ENDPOINT_TEMPLATE) -> str:
    """The data-plane endpoint of an instance: ``https://{instance}.{region}.ots.aliyuncs.com``."""
    return template.format(instance=instance_name, region=region)


def data_plane_probe(credentials: AccessKeys | None = None, *, timeout: float = 10.0) -> Probe:
    """A probe that lists the new instance's memory stores through the data-plane adapter.

    Listing is a read, so the provisioner may repeat it freely while the instance warms up.
    """

    def probe(facts: InstanceFacts) -> object:
        from memcore_tablestore.backend import open_backend
        from memcore_tablestore.credentials import Credentials

        keys = credentials or _environment_credentials()
        store = open_backend(
            MemcoreConfig(),
            endpoint=facts.endpoint,
            instance_name=facts.instance_name,
            credentials=Credentials(
                keys.access_key_id, keys.access_key_secret, keys.security_token
            ),
            timeout=timeout,
            retry=False,
        )
        try:
            return store.list_stores()
        finally:
            store.close()

    return probe


class TableStoreProvisioner:
    """Implements :class:`memcore.ports.Provisioner` over the TableStore control plane.

    ``control_endpoint``/``control_protocol`` point the SDK elsewhere (the emulator's twin:
    ``"127.0.0.1:PORT"``, ``"http"``). ``resolver``, ``probe``, ``clock`` and ``sleep`` are
    injectable so every wait is testable; all waits are bounded by their ``*_timeout``,
    ``listing_patience`` and ``warmup`` (seconds; see the module docstring). ``wall_clock`` times
    what the marker records across runs (a purchase, a create in flight).
    """

    def __init__(
        self,
        config: MemcoreConfig,
        config_path: str | os.PathLike[str],
        *,
        credentials: AccessKeys | None = None,
        control_endpoint: str | None = None,
        control_protocol: str = "https",
        endpoint_template: str = DATA_ENDPOINT_TEMPLATE,
        resolver: Resolver = system_resolver,
        probe: Probe | None = None,
        clock: Clock = time.monotonic,
        sleep: Sleep = time.sleep,
        wall_clock: Clock = time.time,
        control_timeout: float = 60.0,
        dns_timeout: float = 300.0,
        probe_timeout: float = 120.0,
        lock_timeout: float = 900.0,
        listing_patience: float = 180.0,
        warmup: float = 600.0,
    ) -> None:
        if control_protocol not in ("http", "https"):
            raise ConfigError(
                "the control-plane protocol must be http or https", field="control_protocol"
            )
        _check_template(endpoint_template, config.region)
        _check_control_endpoint(control_endpoint)
        for name, seconds in (
            ("control_timeout", control_timeout),
            ("dns_timeout", dns_timeout),
            ("probe_timeout", probe_timeout),
            ("lock_timeout", lock_timeout),
            ("listing_patience", listing_patience),
            ("warmup", warmup),
        ):
            _check_seconds(name, seconds)
        self.config = config
        self.config_path = Path(config_path)
        self.region = config.region
        self._credentials = credentials
        self._control_endpoint = control_endpoint
        self._control_protocol = control_protocol
        self._endpoint_template = endpoint_template
        self._resolver = resolver
        self._probe = probe
        self._clock = clock
        self._sleep = sleep
        self._wall = wall_clock
        self._listing_patience = listing_patience
        self._warmup = warmup
        self._control_timeout = control_timeout
        self._dns_timeout = dns_timeout
        self._probe_timeout = probe_timeout
        self._lock_timeout = lock_timeout

    @classmethod
    def from_file(
        cls, config_path: str | os.PathLike[str], **options: Any
    ) -> TableStoreProvisioner:
        """Read the JSON config at ``config_path`` (missing means defaults) and wrap it."""
        path = Path(config_path)
        return cls(_read_config(path), path, **options)

    def __repr__(self) -> str:
        return (
            f"TableStoreProvisioner(config_path={str(self.config_path)!r}, region={self.region!r})"
        )

    @property
    def _state_dir(self) -> Path:
        return self.config_path.parent

    def data_endpoint(self, instance_name: str) -> str:
        return data_endpoint(instance_name, self.region, self._endpoint_template)

    # -- the port ----------------------------------------------------------------------------
    def ensure_instance(self, *, progress: ProgressCallback | None = None) -> InstanceFacts:
        """Return the configured instance, or bootstrap one (see the module docstring)."""
        say = _Reporter(progress)
        known = self._configured(self.config)
        if known is not None and not self._unfinished(known):
            return known
        with bootstrap_lock(
            self._state_dir, timeout=self._lock_timeout, sleep=self._sleep, clock=self._clock
        ):
            # Another process may have finished the bootstrap while we waited for the lock.
            known = self._configured(_read_config(self.config_path))
            if known is not None and not self._unfinished(known):
                say(f"Using TableStore instance {known.instance_name} from {self.config_path}")
                return known
            return self._bootstrap(say)

    def _unfinished(self, known: InstanceFacts) -> bool:
        """The configured instance is the one a bootstrap saved early and has yet to finish."""
        try:
            pending = read_pending(self._state_dir)
        except ConfigError:
            return False
        return pending is not None and pending.instance_name == known.instance_name

    def _configured(self, config: MemcoreConfig) -> InstanceFacts | None:
        if not config.instance_name:
            return None
        endpoint = config.endpoint or self.data_endpoint(config.instance_name)
        return InstanceFacts(
            config.instance_name, endpoint.rstrip("/"), config.region, created=False
        )

    def _bootstrap(self, say: _Reporter) -> InstanceFacts:
        # Credentials first: a run that cannot authenticate should leave nothing behind.
        client = ControlPlaneClient(
            region=self.region,
            credentials=self._credentials
            if self._credentials is not None
            else _environment_credentials(),
            endpoint=self._control_endpoint,
            protocol=self._control_protocol,
            timeout=min(self._control_timeout, self.config.timeout),
        )
        pending = read_pending(self._state_dir)
        if pending is not None and pending.region != self.region:
            raise _other_region(pending, self._state_dir / PENDING_MARKER, self.config_path)
        if pending is None:
            pending = PendingInstance(
                alias=f"memcore-{secrets.token_hex(6)}", region=self.region, started_at=self._wall()
            )
            # Recorded before buying anything: this alias is how a re-run finds the instance.
            write_pending(self._state_dir, pending)
        name, created, pending = self._find_or_create(client, pending, say)
        facts = InstanceFacts(name, self.data_endpoint(name), self.region, created=created)
        # Saved before anything else can fail: whatever happens next, the name is kept (the
        # endpoint follows at the end, so a host that finds none runs the bootstrap again).
        self._persist(facts, endpoint=False)
        warm_until = self._warm_until(pending)
        say(f"Opening network access to {name} (Internet, VPC, classic network; console)")
        # UpdateInstance sets the same lists every time, so repeating it is harmless.
        self._control(
            lambda: client.set_network_acl(name),
            say,
            warming=_refused_by_service,
            warm_until=warm_until,
            instance=name,
        )
        host = urlsplit(facts.endpoint).hostname or ""
        say(f"Waiting for {host} to resolve in DNS")
        wait_for_dns(
            host,
            resolver=self._resolver,
            timeout=self._dns_timeout,
            clock=self._clock,
            sleep=self._sleep,
            on_retry=lambda n, delay: say(
                f"{host} does not resolve yet; retrying in {delay:.1f} s"
            ),
        )
        if self._probe is not None:
            probe = self._probe
            say(f"Checking the data endpoint {facts.endpoint}")
            retry_transient(
                lambda: probe(facts),
                timeout=self._probe_timeout,
                clock=self._clock,
                sleep=self._sleep,
                on_retry=lambda n, exc, delay: say(
                    _warming_note(name, exc, delay, warm_until, self._clock())
                    if _auth_shaped(exc)
                    else f"the data endpoint is not ready ({type(exc).__name__}); "
                    f"retrying in {delay:.1f} s"
                ),
                warming=_auth_shaped,
                warm_until=warm_until,
            )
        self._persist(facts)
        say(f"Saved instance_name={name} and endpoint={facts.endpoint} to {self.config_path}")
        clear_pending(self._state_dir)
        return facts

    def _find_or_create(
        self, client: ControlPlaneClient, pending: PendingInstance, say: _Reporter
    ) -> tuple[str, bool, PendingInstance]:
        if pending.instance_name:
            recorded = pending.instance_name
            record = self._control(lambda: client.exists(recorded), say)
            if record is not None:
                self._check_usable(record)
                say(f"Resuming the bootstrap of instance {record.name}")
                return record.name, False, pending
        sent = pending.create_sent_at
        if sent is not None and sent > self._wall():
            # The wall clock was set back since the marker was written: count from now, or
            # the patience would last as long as the clock was ahead.
            pending = attrs.evolve(pending, create_sent_at=self._wall())
            write_pending(self._state_dir, pending)
        started = self._clock()
        # Bounds the purchase attempts; each one with an unclear answer is then looked for.
        deadline = started + self._control_timeout + self._listing_patience
        sent_here = False
        alias = pending.alias
        attempt = 0
        while True:
            attempt += 1
            found = self._control(lambda: client.find_by_alias(alias), say)
            if found is not None:
                self._check_usable(found)
                pending = attrs.evolve(
                    pending,
                    instance_name=found.name,
                    bought_at=pending.bought_at or pending.create_sent_at,
                    create_sent_at=None,
                )
                write_pending(self._state_dir, pending)
                say(f"Found instance {found.name} (alias {pending.alias}); using it")
                return found.name, sent_here, pending
            if pending.create_sent_at is not None:
                # A create went out and its answer never said what happened: look, don't buy.
                # Bounded by the patience alone: giving up sooner could leave a bought
                # instance unsaved.
                left = pending.create_sent_at + self._listing_patience - self._wall()
                if left > 0:
                    delay = min(backoff(attempt, first=2.0, cap=15.0), left)
                    say(
                        f"An instance with alias {pending.alias} may have been bought but is not "
                        f"listed yet; looking again in {delay:.1f} s (up to {left:.0f} s more)"
                    )
                    self._sleep(delay)
                    continue
                say(
                    f"No instance carries alias {pending.alias} "
                    f"{self._listing_patience:.0f} s after the create was sent: nothing was bought"
                )
            if self._clock() >= deadline:
                raise _nothing_bought(pending.alias, self._clock() - started)
            say(
                "Creating a TableStore VCU instance (SSD, elastic VCU, one month, auto-renew monthly)"
            )
            pending = attrs.evolve(pending, create_sent_at=self._wall())
            write_pending(self._state_dir, pending)  # before sending: the answer may be lost
            sent_here = True
            try:
                name = client.create_vcu_instance(
                    alias=pending.alias, description=INSTANCE_DESCRIPTION
                )
            except MemcoreError as exc:
                code = getattr(exc, "service_code", None) or exc.code
                if _outcome_unknown(exc):
                    say(
                        f"CreateVCUInstance gave no clear answer ({code}); looking for alias "
                        f"{pending.alias} before anything else"
                    )
                    attempt = 0
                    continue
                # The service refused it: nothing was bought, so trying again is safe.
                pending = attrs.evolve(pending, create_sent_at=None)
                write_pending(self._state_dir, pending)
                remaining = deadline - self._clock()
                if not exc.retryable or remaining <= 0:
                    raise
                delay = min(backoff(attempt, first=1.0), remaining)
                say(
                    f"CreateVCUInstance was refused for now ({code}); trying again in {delay:.1f} s"
                )
                self._sleep(delay)
                continue
            pending = attrs.evolve(
                pending, instance_name=name, bought_at=self._wall(), create_sent_at=None
            )
            write_pending(self._state_dir, pending)
            say(f"Created instance {name}")
            return name, True, pending

    def _check_usable(self, record: InstanceRecord) -> None:
        why = UNUSABLE_STATUSES.get((record.status or "").lower())
        if why is None:
            return
        marker = self._state_dir / PENDING_MARKER
        raise InstanceUnusable(
            f"TableStore instance {record.name} (alias {record.alias or '-'}) {why}; to buy a "
            f"new one instead, delete {marker} (and instance_name in {self.config_path}, if "
            "set) and run again",
            action="ListInstances",
            service_code=record.status,
            field="instance_name",
        )

    def _warm_until(self, pending: PendingInstance) -> float | None:
        """The ``clock`` time until which the instance counts as new, or None if it does not."""
        if pending.bought_at is None:
            return None
        # At most ``warmup``, should the wall clock have been set back since the purchase.
        left = min(pending.bought_at + self._warmup - self._wall(), self._warmup)
        return self._clock() + left if left > 0 else None

    def _control(
        self,
        call: Callable[[], Any],
        say: _Reporter,
        *,
        warming: Callable[[BaseException], bool] | None = None,
        warm_until: float | None = None,
        instance: str = "",
    ) -> Any:
        def note(n: int, exc: BaseException, delay: float) -> None:
            if warming is not None and warming(exc) and not getattr(exc, "retryable", True):
                say(_warming_note(instance, exc, delay, warm_until, self._clock()))
            elif isinstance(exc, ControlPlaneUnreachable):
                say(
                    f"nothing answers at {exc.endpoint} ({exc.reason}); "
                    f"trying again in {delay:.1f} s"
                )
            else:
                say(
                    f"the control plane is busy ({getattr(exc, 'code', type(exc).__name__)}); "
                    f"retrying in {delay:.1f} s"
                )

        return retry_transient(
            call,
            timeout=self._control_timeout,
            clock=self._clock,
            sleep=self._sleep,
            on_retry=note,
            warming=warming,
            warm_until=warm_until,
            unreachable=lambda exc: isinstance(exc, ControlPlaneUnreachable),
        )

    def _persist(self, facts: InstanceFacts, *, endpoint: bool = True) -> None:
        """Merge the instance into the config file as it is now (not as it was at start)."""
        source = str(self.config_path)
        current = _read_config(self.config_path)
        changes = {"instance_name": facts.instance_name, "region": facts.region}
        if endpoint:
            changes["endpoint"] = facts.endpoint
        try:
            updated = merge_config(current, changes, source=source)
        except ConfigError as exc:
            raise ConfigError(
                f"instance {facts.instance_name} was bought but cannot be saved ({exc}); set "
                f"instance_name in {source} by hand",
                field=exc.field,
                source=source,
            ) from None
        try:
            atomic_write_text(self.config_path, dump_config(updated))
        except OSError as exc:
            raise ConfigError(
                f"cannot save the new instance ({exc.strerror or type(exc).__name__}); the next "
                "run will find it again",
                field="instance_name",
                source=source,
            ) from None


def _other_region(pending: PendingInstance, marker: Path, config_path: Path) -> ConfigError:
    """A marker of another region: what it says was bought decides what to tell the user."""
    where = pending.region
    if pending.instance_name is None and pending.create_sent_at is None:
        # No create in flight and none answered: refused (a quota) or never sent.
        advice = (
            f"nothing was bought there; set region to {where} to try again, or delete the "
            "marker to start over in this region"
        )
    else:
        which = (
            f"{pending.instance_name}, alias {pending.alias}"
            if pending.instance_name
            else f"alias {pending.alias}, if one was bought"
        )
        advice = (
            f"set region to {where} to finish it, or delete the marker after removing that "
            f"instance ({which})"
        )
    return ConfigError(
        f"an unfinished bootstrap in region {where} is recorded in {marker}; {advice}",
        field="region",
        source=str(config_path),
    )


def _outcome_unknown(exc: MemcoreError) -> bool:
    """No answer, a 5xx, or an answer without a name: the instance may have been bought.
    Not when nothing answered at all: the create was never sent."""
    if isinstance(exc, ControlPlaneUnreachable):
        return False
    status = getattr(exc, "status", None)
    return isinstance(exc, Unavailable) or (isinstance(status, int) and status >= 500)


def _refused_by_service(exc: BaseException) -> bool:
    """A 4xx from the control plane: what a minutes-old instance answers to UpdateInstance."""
    status = getattr(exc, "status", None)
    return isinstance(exc, ControlPlaneError) and isinstance(status, int) and 400 <= status < 500


def _auth_shaped(exc: BaseException) -> bool:
    """``OTSAuthFailed`` and kin: also "instance not running/not found/denied by ACL"."""
    return isinstance(exc, (PermissionDenied, NotFound))


def _warming_note(
    instance: str, exc: BaseException, delay: float, warm_until: float | None, now: float
) -> str:
    code = getattr(exc, "service_code", None) or getattr(exc, "code", type(exc).__name__)
    left = max(0.0, (warm_until or now) - now)
    return (
        f"instance {instance} is still warming up ({code}); retrying in {delay:.1f} s "
        f"(gives up in {left:.0f} s)"
    )


def _nothing_bought(alias: str, waited: float) -> Unavailable:
    return Unavailable(
        f"CreateVCUInstance did not go through in {waited:.0f} s and no instance carries "
        f"alias {alias}: nothing was bought; run again later",
        field="instance_name",
    )


def _check_seconds(name: str, seconds: object) -> None:
    """Refuse a wait that is not a time now: NaN or infinity would wait forever, and a
    negative one is a typo; found only after a purchase otherwise."""
    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, (int, float))
        or not math.isfinite(seconds)
        or seconds < 0
    ):
        shown = f"{seconds:g}" if isinstance(seconds, float) else repr(seconds)
        raise InvalidInput(
            f"{name} must be a number of seconds, 0 or more, not {shown}", field=name
        )


def _check_template(template: str, region: str) -> None:
    """Refuse a bad endpoint template now, not after an instance has been bought: one that
    gives ``user:password@`` too, since the endpoint is saved to a config file that holds no
    secret (:func:`~memcore.config.merge_config` refuses it there, after the purchase)."""
    try:
        endpoint = data_endpoint("abc", region, template)
        MemcoreConfig(endpoint=endpoint)
    except (KeyError, IndexError, ValueError):
        raise ConfigError(
            "the endpoint template must give a URL like https://{instance}.{region}.ots.aliyuncs.com",
            field="endpoint_template",
        ) from None
    if without_userinfo(endpoint) != endpoint:
        raise ConfigError(
            "the endpoint template must not hold a user name or password (user:password@): "
            "TableStore keys come only from the environment",
            field="endpoint_template",
        )


def _check_control_endpoint(endpoint: str | None) -> None:
    """Refuse a control endpoint that is not ``host[:port]`` before any call: an empty one
    would mean the region's own control plane (where an instance is bought), and a malformed
    one fails only at connect time, where it reads as a busy service and is retried."""
    if endpoint is None:
        return
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(f"//{endpoint}")
        port = parts.port
    except ValueError:
        port = -1
    if (
        port == -1
        or port == 0
        or not parts.hostname
        or f"//{endpoint}" != f"//{parts.netloc}"  # a scheme, a path, a query
        or parts.username is not None
        or any(c.isspace() or not c.isprintable() for c in endpoint)
    ):
        raise ConfigError(
            f"the control endpoint must be host or host:port (127.0.0.1:8765), not {endpoint!r}",
            field="control_endpoint",
        )


def _environment_credentials() -> AccessKeys:
    """``TABLESTORE_MEMORY_AK``/``_SK``, then the Alibaba Cloud default chain."""
    from memcore_tablestore.credentials import resolve_credentials

    return resolve_credentials()


def _read_config(path: Path) -> MemcoreConfig:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return MemcoreConfig()
    except OSError as exc:
        raise ConfigError(
            f"cannot read the config ({exc.strerror or type(exc).__name__})", source=str(path)
        ) from None
    return parse_config(raw, source=str(path))


class _Reporter:
    """Sends each step to the caller's progress callback and to the log."""

    def __init__(self, progress: ProgressCallback | None) -> None:
        self._progress = progress

    def __call__(self, message: str) -> None:
        logger.info("%s", message)
        if self._progress is not None:
            self._progress(message)


__all__ = [
    "DATA_ENDPOINT_TEMPLATE",
    "INSTANCE_DESCRIPTION",
    "UNUSABLE_STATUSES",
    "Probe",
    "TableStoreProvisioner",
    "data_endpoint",
    "data_plane_probe",
]
