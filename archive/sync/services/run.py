"""One live sync run of one account (`account_sync`), and the daily repair pass.

A run takes the account's lease (one worker at a time; a dead worker's lease expires),
then fetches page after page from the connector's cursor and records them through the
sink with the cursor inside the batch, so the cursor advances in the same transaction as
what it covers. A provider's "wait" (429, retry_after, FloodWait) is waited out when it is
short and ends the run otherwise, to be resumed by the next one; network errors are
retried with backoff; a refused credential stops the account and shows on the Sync page.
Every run leaves a SyncRun.

A repair run reads again from the cursor rewound to a trailing window: edits the live
pass cannot see are recorded, messages gone from a re-read id range become tombstones
(quietly: in the changes feed, told to no webhook), and the live cursor stays where it is.
"""

from __future__ import annotations

import logging
import os
import random
import secrets
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings as django_settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from archive.connectors.live import (
    CalendarPull,
    CredentialError,
    LiveConnector,
    LiveError,
    Page,
    RateLimitedError,
    TransientError,
)
from archive.store.domain import Batch, DeletionRecord
from archive.store.models import ConnectorState, Message
from archive.store.sink import batch_record
from archive.store.staging import batch_staged
from archive.sync.credentials import SealedError
from archive.sync.models import SyncAccount, SyncRun, SyncState
from archive.sync.services.accounts import sync_opened
from meetings.services import calendar_store, events_forget
from wirecat.errors import Invalid, NotFound

log = logging.getLogger(__name__)

PAGE_SIZE = 100
BUDGET_SECONDS = 45.0  # a run stops here and the next one continues from the cursor
BUDGET_MESSAGES = 20_000
MAX_WAIT_SECONDS = 30.0  # a provider's "wait" up to this is waited out within the run
RETRIES = 4  # transient errors in a row before the run gives up (backoff 1, 2, 4, 8 s ±)
FLUSH_MESSAGES = 1_000  # pages are recorded together up to this many messages…
FLUSH_SECONDS = 1.0  # …or this long after the first of them was fetched
REPAIR_HOURS = 48.0  # the daily repair pass re-reads two days

Sleep = Callable[[float], None]


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
    cannot see) and leaves the live cursor where it is; its outcome is "no-repair" when
    the connector cannot re-read."""
    if not _due(sync_account_id, force=force):
        return None
    lease = _Lease.take(sync_account_id, lease_seconds or django_settings.SYNC_LEASE_SECONDS)
    if lease is None:
        log.info("sync %s: another worker holds the lease", sync_account_id)
        return None
    sync = SyncAccount.objects.select_related("account").get(pk=sync_account_id)
    run = SyncRun.objects.create(sync_account=sync, started_at=timezone.now())
    budget = _Budget(started=time.monotonic(), seconds=budget_seconds, messages=budget_messages)
    since = None if repair_hours is None else timezone.now() - timedelta(hours=repair_hours)
    connector: LiveConnector | None = None
    try:
        connector = sync_opened(sync)
        cursor = _cursor_start(sync, connector, since)
        if cursor is None:
            run.outcome = "no-repair"
        else:
            run.outcome = "done" if since is None else "repaired"
            pages = _Pages(sync=sync, run=run, lease=lease, repair_since=since)
            _pages_read(connector, cursor, pages, budget=budget, page_size=page_size, sleep=sleep)
    except (CredentialError, SealedError) as exc:
        run.outcome, run.error = "credentials", str(exc)
    except (LiveError, Invalid) as exc:  # Invalid: the sink refused what the provider sent
        run.outcome, run.error = "error", str(exc)
    except Exception as exc:  # provider data no translation foresaw: a failed run, not a lost one
        log.exception("sync %s: the run failed", sync.public_id)
        run.outcome = "error"
        run.error = f"unexpected {type(exc).__name__} while syncing (the worker's log has details)"
    finally:
        if connector is not None:
            connector.close()
        _run_finish(run, lease)
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


# the steps of a run, in order -------------------------------------------------------------


def _due(sync_account_id: int, *, force: bool) -> bool:
    """Whether the account runs now: forced (the owner's "Sync now"), or neither paused nor
    stopped by refused credentials. NotFound when the account is gone."""
    found = SyncAccount.objects.filter(pk=sync_account_id).values_list("enabled", "state").first()
    if found is None:
        raise NotFound(f"no live account {sync_account_id}")
    enabled, state = found
    return force or (enabled and state != SyncState.FAILED)


@dataclass(frozen=True)
class _Lease:
    """The account's lease, held by one run: one worker at a time syncs an account, and the
    lease of a worker that died lapses after `seconds` without renewal."""

    sync_id: int
    holder: str  # this host and process, and this run (two threads of a worker are two)
    seconds: int

    @classmethod
    def take(cls, sync_id: int, seconds: int) -> _Lease | None:
        """The lease, or None while another run holds it."""
        holder = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        now = timezone.now()
        with transaction.atomic():
            taken = (
                SyncAccount.objects.filter(pk=sync_id)
                .filter(Q(lease_until__isnull=True) | Q(lease_until__lt=now))
                .update(
                    lease_owner=holder,
                    lease_until=now + timedelta(seconds=seconds),
                    state=SyncState.RUNNING,
                )
            )
        return cls(sync_id, holder, seconds) if taken == 1 else None

    def renew(self) -> None:
        SyncAccount.objects.filter(pk=self.sync_id, lease_owner=self.holder).update(
            lease_until=timezone.now() + timedelta(seconds=self.seconds)
        )

    def release(self, *, state: str, last_error: str, last_run_at: datetime) -> None:
        SyncAccount.objects.filter(pk=self.sync_id, lease_owner=self.holder).update(
            lease_owner="",
            lease_until=None,
            state=state,
            last_error=last_error,
            last_run_at=last_run_at,
        )


@dataclass(frozen=True)
class _Budget:
    """How long a run goes on and how much it fetches; the next run continues."""

    started: float  # time.monotonic() at the run's start
    seconds: float
    messages: int

    def left(self) -> float:
        return self.seconds - (time.monotonic() - self.started)

    def spent(self, fetched: int) -> bool:
        return fetched >= self.messages or self.left() <= 0


def _cursor_start(
    sync: SyncAccount, connector: LiveConnector, repair_since: datetime | None
) -> dict[str, Any] | None:
    """Where the run reads from: the cursor committed with the last recorded page or, for
    a repair, that cursor rewound to the window's start (None: the connector cannot)."""
    row = ConnectorState.objects.filter(account=sync.account, stream=connector.kind).first()
    cursor: dict[str, Any] = dict(row.cursor) if row else {}
    if repair_since is None:
        return cursor
    return connector.rewind(cursor, repair_since)


def _pages_read(
    connector: LiveConnector,
    cursor: dict[str, Any],
    pages: _Pages,
    *,
    budget: _Budget,
    page_size: int,
    sleep: Sleep,
) -> None:
    """Page after page from `cursor` until the provider has no more, the budget is spent,
    or the provider says stop (the run's outcome says which). What was fetched before an
    error or a refused credential is recorded all the same."""
    try:
        while True:
            page = _page_fetch(
                connector, cursor, pages, budget=budget, page_size=page_size, sleep=sleep
            )
            if page is None:
                break
            pages.run.pages += 1
            cursor = dict(page.cursor)
            pages.add(page)
            if not page.more or pages.due():
                pages.record()
            if not page.more:
                break
    finally:
        pages.record()


def _page_fetch(
    connector: LiveConnector,
    cursor: dict[str, Any],
    pages: _Pages,
    *,
    budget: _Budget,
    page_size: int,
    sleep: Sleep,
) -> Page | None:
    """The page after `cursor`. A provider's short "wait" is waited out and network errors
    are retried with backoff, the pages fetched so far recorded first; None when the run
    stops here (its outcome says why)."""
    run = pages.run
    failures = 0
    while not budget.spent(run.fetched):
        try:
            return connector.fetch(cursor, page_size)
        except RateLimitedError as exc:
            pages.record()
            if exc.retry_after <= min(MAX_WAIT_SECONDS, budget.left()):
                log.info(
                    "sync %s: provider asks to wait %.0f s", pages.sync.public_id, exc.retry_after
                )
                sleep(exc.retry_after)
                continue
            run.outcome, run.error = "rate-limited", str(exc)
            return None
        except TransientError as exc:
            pages.record()
            failures += 1
            if failures > RETRIES:
                run.outcome, run.error = "error", str(exc)
                return None
            sleep(_backoff(failures))
    run.outcome = "budget"
    return None


def _backoff(attempt: int) -> float:
    return float(min(60, 2**attempt)) * (0.5 + random.random())  # noqa: S311 - jitter only


@dataclass
class _Pages:
    """The pages fetched and not yet recorded. They are recorded together, in one
    transaction with the cursor of the last inside it, once they hold FLUSH_MESSAGES or
    the first of them waited FLUSH_SECONDS (a transaction's fixed cost, paid per
    100-message page, was half of a sync's time)."""

    sync: SyncAccount
    run: SyncRun
    lease: _Lease
    repair_since: datetime | None
    pending: list[Batch] = field(default_factory=list)
    calendars: list[CalendarPull] = field(default_factory=list)  # a calendar connector's
    first_at: float = 0.0  # time.monotonic() when the first pending page was fetched

    def add(self, page: Page) -> None:
        self.calendars.extend(page.calendars)
        self.run.fetched += sum(pull.fetched for pull in page.calendars)
        if page.batch is None:
            return
        if not self.pending:
            self.first_at = time.monotonic()
        batch = page.batch
        if self.repair_since is not None and page.spans:
            vanished = _vanished(self.sync.account_id, page, self.repair_since)
            batch = replace(batch, deletions=(*batch.deletions, *vanished))
        self.pending.append(batch)
        self.run.fetched += len(page.batch.messages)

    def due(self) -> bool:
        held = sum(len(batch.messages) for batch in self.pending)
        held += sum(pull.fetched for pull in self.calendars)
        return held >= FLUSH_MESSAGES or time.monotonic() - self.first_at >= FLUSH_SECONDS

    def record(self) -> None:
        """The pending pages into the store as one batch, with the run's figures so far."""
        if not self.pending:
            return
        batch = _merged(self.pending)
        pulls = list(self.calendars)
        self.pending.clear()  # recorded or refused, never tried twice
        self.calendars.clear()
        if self.repair_since is not None:  # a repair re-reads behind the live cursor
            batch = replace(batch, cursor=None)
        batch, unreadable = batch_staged(batch)
        if unreadable:
            log.warning(
                "sync %s: %d attachments could not be read (kept without their bytes)",
                self.sync.public_id,
                unreadable,
            )
        run = self.run
        result = batch_record(
            batch=batch,
            quiet=self.repair_since is not None,  # not news
            then=(lambda _result: _calendars_store(pulls, run)) if pulls else None,
        )
        run.added += result.added
        run.updated += result.updated
        run.deleted += result.tombstoned
        self.lease.renew()
        SyncRun.objects.filter(pk=run.pk).update(
            fetched=run.fetched,
            added=run.added,
            updated=run.updated,
            deleted=run.deleted,
            pages=run.pages,
        )


def _calendars_store(pulls: list[CalendarPull], run: SyncRun) -> None:
    """A calendar connector's pages into meetings, inside the transaction that records
    their batch's cursor: the events read, then the deleted ones' coming meetings
    cancelled (never deleted). Events count as the run's added and updated; events
    deleted at the source as its deleted."""
    for pull in pulls:
        if pull.read is not None:
            stored = calendar_store(kind=pull.kind, key=pull.key, read=pull.read, name=pull.name)
            run.added += stored.events_added
            run.updated += stored.events_updated
            for problem in stored.problems[:20]:
                log.warning("sync %s: %s", run.sync_account_id, problem)
        if pull.gone:
            events_forget(kind=pull.kind, key=pull.key, uids=pull.gone)
            run.deleted += len(pull.gone)


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


def _run_finish(run: SyncRun, lease: _Lease) -> None:
    """The run kept, and the lease given back with how the run left the account: refused
    credentials stop it until the owner acts; an error shows on the Sync page until a run
    ends well. A provider's long "wait" is no error of the account's."""
    run.ended_at = timezone.now()
    run.save()
    failed = run.outcome in ("error", "credentials")
    lease.release(
        state=SyncState.FAILED if run.outcome == "credentials" else SyncState.IDLE,
        last_error=run.error if failed else "",
        last_run_at=run.ended_at,
    )
