"""Connecting a live account: the credentials checked with the provider and kept sealed,
the account's beat schedule, pausing and disconnecting. Credentials are opened only in
these services, in memory, and no log line or error holds them."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from django.db import transaction
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from archive.connectors.live import LiveConnector, LiveError, live_connector
from archive.store.models import Account
from archive.sync.credentials import seal, unseal
from archive.sync.models import SyncAccount
from wirecat.errors import Invalid, NotFound

log = logging.getLogger(__name__)

MIN_INTERVAL_SECONDS = 10
SYNC_TASK = "archive.jobs.account_sync"


def sync_opened(sync: SyncAccount) -> LiveConnector:
    """The account's connector, its credentials opened (SealedError when they do not open,
    LiveError when the connector refuses them)."""
    return live_connector(sync.kind, unseal(sync.credentials), sync.settings)


def _schedule_set(sync: SyncAccount) -> None:
    """The account's django-celery-beat entry (editable in the admin too)."""
    every, _ = IntervalSchedule.objects.get_or_create(
        every=sync.interval_seconds, period=IntervalSchedule.SECONDS
    )
    if sync.schedule is None:
        sync.schedule = PeriodicTask.objects.create(
            name=f"sync {sync.public_id}",
            task=SYNC_TASK,
            interval=every,
            kwargs=json.dumps({"sync_account_id": sync.pk}),
            enabled=sync.enabled,
            expires=None,
        )
        sync.save(update_fields=["schedule"])
    else:
        sync.schedule.interval = every
        sync.schedule.enabled = sync.enabled
        sync.schedule.save(update_fields=["interval", "enabled"])


def sync_connect(
    *,
    kind: str,
    credentials: Mapping[str, Any],
    settings: Mapping[str, Any] | None = None,
    interval_seconds: int = 300,
) -> SyncAccount:
    """Check the credentials with the provider, then keep them sealed with a schedule."""
    if interval_seconds < MIN_INTERVAL_SECONDS:
        raise Invalid(f"interval: at least {MIN_INTERVAL_SECONDS} seconds")
    # A connector's errors are sentences fit to show as they are (archive/connectors/reach.py).
    try:
        connector = live_connector(kind, credentials, settings or {})
    except LiveError as exc:
        raise Invalid(str(exc)) from None
    try:
        connected = connector.connect()
    except LiveError as exc:
        raise Invalid(str(exc)) from None
    finally:
        connector.close()  # the runs open their own
    kept = {**(settings or {}), **connected.settings}
    with transaction.atomic():
        account, _ = Account.objects.get_or_create(
            provider=connector.provider,
            external_id=connected.account_external_id,
            defaults={"name": connected.account_name},
        )
        if hasattr(account, "sync"):
            sync = account.sync
            sync.kind, sync.settings = kind, kept
            sync.credentials = seal(dict(credentials))
            sync.interval_seconds, sync.state, sync.last_error = interval_seconds, "idle", ""
            sync.save()
        else:
            sync = SyncAccount.objects.create(
                account=account,
                kind=kind,
                credentials=seal(dict(credentials)),
                settings=kept,
                interval_seconds=interval_seconds,
            )
        _schedule_set(sync)
    log.info("connected %s account %s", kind, account.name)
    return sync


def sync_interval_set(*, sync: SyncAccount, interval_seconds: int, enabled: bool = True) -> None:
    if interval_seconds < MIN_INTERVAL_SECONDS:
        raise Invalid(f"interval: at least {MIN_INTERVAL_SECONDS} seconds")
    with transaction.atomic():
        sync.interval_seconds, sync.enabled = interval_seconds, enabled
        sync.save(update_fields=["interval_seconds", "enabled"])
        _schedule_set(sync)


def sync_disconnect(*, sync: SyncAccount) -> None:
    """Forget the credentials and the schedule; the archived messages stay."""
    with transaction.atomic():
        if sync.schedule is not None:
            sync.schedule.delete()
        sync.delete()


def sync_get(public_id: str) -> SyncAccount:
    try:
        return SyncAccount.objects.select_related("account", "schedule").get(public_id=public_id)
    except SyncAccount.DoesNotExist:
        raise NotFound(f"no live account {public_id!r}") from None
