"""Live sync: connecting an account, its beat schedule, and `account_sync`, the run itself.

`account_sync` takes the account's lease (one worker at a time; a dead worker's lease
expires), then fetches page after page from the connector's cursor and records each
through the sink with the cursor inside the batch, so the cursor advances in the same
transaction as what it covers. A provider's "wait" (429, retry_after, FloodWait) is waited
out when it is short and ends the run otherwise, to be resumed by the next one; network
errors are retried with backoff; a refused credential stops the account and shows on the
Sync page. Every run leaves a SyncRun. Credentials are opened only here, in memory, and no
log line or error holds them.
"""

from __future__ import annotations

import json
import logging
import os
import random
import secrets
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.conf import settings as django_settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from archive.connectors.live import (
    CredentialError,
    LiveConnector,
    LiveError,
    Page,
    RateLimitedError,
    TransientError,
    live_connector,
)
from archive.connectors.sending import OutboundMessage, SendError, register_sender
from archive.store.blobs import blob_put
from archive.store.domain import Batch, DeletionRecord
from archive.store.models import Account, ConnectorState, Message
from archive.store.sink import batch_record
from archive.sync.credentials import SealedError, seal, unseal
from archive.sync.models import SyncAccount, SyncRun, SyncState
from wirecat.errors import Invalid, NotFound

if TYPE_CHECKING:
    from archive.connectors.telegram import user as telegram_user

log = logging.getLogger(__name__)

PAGE_SIZE = 100
BUDGET_SECONDS = 45.0  # a run stops here and the next one continues from the cursor
BUDGET_MESSAGES = 20_000
MAX_WAIT_SECONDS = 30.0  # a provider's "wait" up to this is waited out within the run
RETRIES = 4  # transient errors in a row before the run gives up (backoff 1, 2, 4, 8 s ±)
MIN_INTERVAL_SECONDS = 10
FLUSH_MESSAGES = 1_000  # pages are recorded together up to this many messages…
FLUSH_SECONDS = 1.0  # …or this long after the first of them was fetched
SYNC_TASK = "archive.jobs.account_sync"

Sleep = Callable[[float], None]


def _run_name() -> str:
    """Who holds a lease: this host and process, and this run (two threads of one worker
    are two holders)."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


def _opened(sync: SyncAccount) -> LiveConnector:
    return live_connector(sync.kind, unseal(sync.credentials), sync.settings)


# connecting -------------------------------------------------------------------------------


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
    try:
        connector = live_connector(kind, credentials, settings or {})
        connected = connector.connect()
    except LiveError as exc:
        raise Invalid(f"connecting: {exc}") from None
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


# the lease --------------------------------------------------------------------------------


def _lease_take(sync_id: int, owner: str, seconds: int) -> bool:
    now = timezone.now()
    with transaction.atomic():
        taken = (
            SyncAccount.objects.filter(pk=sync_id)
            .filter(Q(lease_until__isnull=True) | Q(lease_until__lt=now))
            .update(
                lease_owner=owner,
                lease_until=now + timedelta(seconds=seconds),
                state=SyncState.RUNNING,
            )
        )
    return taken == 1


def _lease_renew(sync_id: int, owner: str, seconds: int) -> None:
    SyncAccount.objects.filter(pk=sync_id, lease_owner=owner).update(
        lease_until=timezone.now() + timedelta(seconds=seconds)
    )


# the run ----------------------------------------------------------------------------------


def _backoff(attempt: int) -> float:
    return float(min(60, 2**attempt)) * (0.5 + random.random())  # noqa: S311 - jitter only


def account_sync(
    *,
    sync_account_id: int,
    budget_seconds: float = BUDGET_SECONDS,
    budget_messages: int = BUDGET_MESSAGES,
    page_size: int = PAGE_SIZE,
    lease_seconds: int | None = None,
    sleep: Sleep = time.sleep,
    force: bool = False,
    repair_hours: float | None = None,
) -> SyncRun | None:
    """One run for one account; None when another worker holds its lease, or (unless
    `force`, the owner's "Sync now") when the account is paused or its credentials failed.

    With `repair_hours`, the run re-reads that trailing window instead (edits the live pass
    cannot see) and leaves the live cursor where it is; None when the connector cannot
    re-read."""
    found = SyncAccount.objects.filter(pk=sync_account_id).values_list("enabled", "state").first()
    if found is None:
        raise NotFound(f"no live account {sync_account_id}")
    enabled, current = found
    if not force and (not enabled or current == SyncState.FAILED):
        return None
    owner = _run_name()
    lease_seconds = lease_seconds or django_settings.SYNC_LEASE_SECONDS
    if not _lease_take(sync_account_id, owner, lease_seconds):
        log.info("sync %s: another worker holds the lease", sync_account_id)
        return None
    sync = SyncAccount.objects.select_related("account").get(pk=sync_account_id)
    run = SyncRun.objects.create(sync_account=sync, started_at=timezone.now())
    started = time.monotonic()
    state, error = SyncState.IDLE, ""
    connector: LiveConnector | None = None
    try:
        connector = _opened(sync)
        stream = connector.kind
        row = ConnectorState.objects.filter(account=sync.account, stream=stream).first()
        cursor: dict[str, Any] = dict(row.cursor) if row else {}
        repair_since = None
        if repair_hours is not None:
            since = repair_since = timezone.now() - timedelta(hours=repair_hours)
            rewound = connector.rewind(cursor, since)
            if rewound is None:
                run.outcome = "no-repair"
                return run
            cursor = rewound
        failures = 0
        run.outcome = "done" if repair_hours is None else "repaired"
        pending: list[Batch] = []
        pending_since = 0.0

        def flush() -> None:
            """Record the pages fetched so far in one transaction, the cursor of the last
            inside it (a transaction's fixed cost, paid per 100-message page, was half of a
            sync's time)."""
            if not pending:
                return
            batch = _merged(pending)
            pending.clear()  # recorded or refused, never tried twice
            if repair_hours is not None:  # a repair re-reads behind the live cursor
                batch = replace(batch, cursor=None)
            result = batch_record(batch=_staged(batch))
            run.added += result.added
            run.updated += result.updated
            run.deleted += result.tombstoned
            _lease_renew(sync.pk, owner, lease_seconds)
            SyncRun.objects.filter(pk=run.pk).update(
                fetched=run.fetched,
                added=run.added,
                updated=run.updated,
                deleted=run.deleted,
                pages=run.pages,
            )

        try:
            while True:
                if run.fetched >= budget_messages or time.monotonic() - started >= budget_seconds:
                    run.outcome = "budget"
                    break
                try:
                    page = connector.fetch(cursor, page_size)
                except RateLimitedError as exc:
                    flush()
                    left = budget_seconds - (time.monotonic() - started)
                    if exc.retry_after <= min(MAX_WAIT_SECONDS, left):
                        log.info(
                            "sync %s: provider asks to wait %.0f s",
                            sync.public_id,
                            exc.retry_after,
                        )
                        sleep(exc.retry_after)
                        continue
                    run.outcome, run.error = "rate-limited", str(exc)
                    break
                except TransientError as exc:
                    flush()
                    failures += 1
                    if failures > RETRIES:
                        run.outcome, run.error = "error", str(exc)
                        error = str(exc)
                        break
                    sleep(_backoff(failures))
                    continue
                failures = 0
                run.pages += 1
                cursor = dict(page.cursor)
                if page.batch is not None:
                    if not pending:
                        pending_since = time.monotonic()
                    batch = page.batch
                    if repair_since is not None and page.spans:
                        vanished = _vanished(sync.account_id, page, repair_since)
                        batch = replace(batch, deletions=(*batch.deletions, *vanished))
                    pending.append(batch)
                    run.fetched += len(page.batch.messages)
                if (
                    not page.more
                    or sum(len(b.messages) for b in pending) >= FLUSH_MESSAGES
                    or time.monotonic() - pending_since >= FLUSH_SECONDS
                ):
                    flush()
                if not page.more:
                    break
        finally:
            flush()  # what was fetched before a refused credential or an error is kept
    except (CredentialError, SealedError) as exc:
        state, error = SyncState.FAILED, str(exc)
        run.outcome, run.error = "credentials", error
    except (LiveError, Invalid) as exc:  # Invalid: the sink refused what the provider sent
        error = str(exc)
        run.outcome, run.error = "error", error
    except Exception as exc:  # provider data no translation foresaw: a failed run, not a lost one
        log.exception("sync %s: the run failed", sync.public_id)
        error = f"unexpected {type(exc).__name__} while syncing (the worker's log has details)"
        run.outcome, run.error = "error", error
    finally:
        if connector is not None:
            connector.close()
        run.ended_at = timezone.now()
        run.save()
        SyncAccount.objects.filter(pk=sync.pk, lease_owner=owner).update(
            lease_owner="",
            lease_until=None,
            state=state,
            last_error=error,
            last_run_at=run.ended_at,
        )
    log.log(
        logging.WARNING if run.error else logging.INFO,
        "sync %s: %s, %d fetched, %d added, %d updated%s",
        sync.public_id,
        run.outcome,
        run.fetched,
        run.added,
        run.updated,
        f" ({run.error})" if run.error else "",
    )
    return run


def _vanished(account_id: int, page: Page, since: datetime) -> tuple[DeletionRecord, ...]:
    """What the store holds within the page's complete spans (since `since`) that the
    provider no longer has: deleted while the live pass was not looking."""
    present = (
        {(m.chat_external_id, m.external_id) for m in page.batch.messages} if page.batch else set()
    )
    now = timezone.now()
    gone = []
    for span in page.spans:
        stored = Message.objects.filter(
            account_id=account_id,
            chat__external_id=span.chat,
            deleted_at__isnull=True,
            sent_at__gte=since,
        ).values_list("external_id", flat=True)
        for external_id in stored:
            try:
                number = int(external_id)
            except ValueError:
                continue
            if span.after < number <= span.through and (span.chat, external_id) not in present:
                gone.append(
                    DeletionRecord(
                        chat_external_id=span.chat, external_id=external_id, deleted_at=now
                    )
                )
    return tuple(gone)


def _staged(batch: Batch) -> Batch:
    """The batch with the attachment bytes a connector handed over (mail parts) already in
    the blob store, before the batch's transaction."""
    if not any(a.content is not None for m in batch.messages for a in m.attachments):
        return batch
    messages = []
    for message in batch.messages:
        staged = []
        for attachment in message.attachments:
            if attachment.content is None:
                staged.append(attachment)
                continue
            with attachment.content() as stream:
                stored = blob_put(stream)
            staged.append(
                replace(
                    attachment,
                    content=None,
                    sha256=stored.sha256,
                    size=stored.size,
                    blob_path=stored.path,
                )
            )
        messages.append(replace(message, attachments=tuple(staged)))
    return replace(batch, messages=tuple(messages))


def _merged(batches: list[Batch]) -> Batch:
    """Consecutive pages of one account as one batch, with the last page's cursor."""
    last = batches[-1]
    if len(batches) == 1:
        return last
    return replace(
        last,
        chats=tuple(c for b in batches for c in b.chats),
        identities=tuple(i for b in batches for i in b.identities),
        messages=tuple(m for b in batches for m in b.messages),
        deletions=tuple(d for b in batches for d in b.deletions),
    )


REPAIR_HOURS = 48.0  # the daily repair pass re-reads two days


def accounts_repair(*, hours: float = REPAIR_HOURS) -> list[SyncRun]:
    """The daily repair pass: every enabled, working account whose provider can re-read."""
    runs = []
    for sync_id in (
        SyncAccount.objects.filter(enabled=True)
        .exclude(state=SyncState.FAILED)
        .values_list("pk", flat=True)
    ):
        run = account_sync(sync_account_id=sync_id, repair_hours=hours)
        if run is not None:
            runs.append(run)
    return runs


# sending ----------------------------------------------------------------------------------


def _send_live(message: OutboundMessage, provider: str) -> str:
    sync = (
        SyncAccount.objects.select_related("account")
        .filter(account__provider=provider, account__external_id=message.account_external_id)
        .first()
    )
    if sync is None:
        raise SendError(f"account {message.account_external_id!r} has no live connection")
    try:
        connector = _opened(sync)
    except (LiveError, SealedError) as exc:
        raise SendError(str(exc)) from None
    try:
        if not connector.capabilities.send:
            raise SendError(f"{connector.label} cannot send")
        return connector.send(message)
    finally:
        connector.close()


def senders_register() -> None:
    """The send port's sender for every provider a live connector can send on."""
    register_sender("telegram", lambda message: _send_live(message, "telegram"))
    register_sender("discord", lambda message: _send_live(message, "discord"))
    register_sender("max", lambda message: _send_live(message, "max"))


# logging in to a Telegram account (the Sync page's three steps) ---------------------------


def _login_state(sealed: str) -> telegram_user.LoginState:
    from archive.connectors.telegram import user as telegram_user

    try:
        values = unseal(sealed)
        return telegram_user.LoginState(**values)
    except (SealedError, TypeError) as exc:
        raise Invalid("the login has expired; start again") from exc


def telegram_login_start(*, api_id: str, api_hash: str, phone: str) -> tuple[str, str]:
    """Step 1: Telegram sends a code to the owner's app. Returns (sealed state, next step)."""
    from archive.connectors.telegram import user as telegram_user

    api_id, api_hash, phone = api_id.strip(), api_hash.strip().lower(), phone.strip()
    if not api_id.isdigit() or len(api_id) > 12:
        raise Invalid("API id: the number from my.telegram.org → API development tools")
    if len(api_hash) != 32 or any(c not in "0123456789abcdef" for c in api_hash):
        raise Invalid("API hash: the 32 hexadecimal characters from my.telegram.org")
    digits = phone.removeprefix("+").replace(" ", "").replace("-", "")
    if not digits.isdigit() or not 6 <= len(digits) <= 15:
        raise Invalid("phone: the account's number with its country code, e.g. +44 7700 900123")
    try:
        state = telegram_user.login_start(api_id=int(api_id), api_hash=api_hash, phone=f"+{digits}")
    except telegram_user.LoginError as exc:
        raise Invalid(str(exc)) from None
    return seal(asdict(state)), state.step


def telegram_login_continue(
    *, sealed: str, code: str = "", password: str = "", interval_seconds: int = 300
) -> tuple[str, SyncAccount | None]:
    """Step 2 (the code) or 3 (the two-step password). Returns the sealed state and, once
    logged in, the connected account (its session sealed like any credential)."""
    from archive.connectors.telegram import user as telegram_user

    state = _login_state(sealed)
    try:
        if state.step == "code":
            if not code.strip().isdigit():
                raise Invalid("code: the digits Telegram sent to your app")
            state = telegram_user.login_code(state, code.strip())
        elif state.step == "password":
            if not password:
                raise Invalid("password: needed")
            state = telegram_user.login_password(state, password)
        else:
            raise Invalid("the login has ended; start again")
    except telegram_user.LoginError as exc:
        raise Invalid(str(exc)) from None
    if state.step != "done":
        return seal(asdict(state)), None
    sync = sync_connect(
        kind=telegram_user.TelegramUser.kind,
        credentials={"session": state.session, "api_id": state.api_id, "api_hash": state.api_hash},
        interval_seconds=interval_seconds,
    )
    return "", sync
