"""The meetings' jobs: keep the stems of transcripts and meetings current; read the
invitations (calendar files) that mail brings."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from archive.connectors.registry import calendar_from_stream
from archive.store.blobs import blob_open
from archive.store.effects import CALENDAR_STORED, effect_connect
from archive.store.models import Attachment
from meetings.search_index import meeting_stems_drain
from meetings.services.invitations import invitation_store
from wirecat.errors import WireCatError

log = logging.getLogger(__name__)

# A run ends well before the next one (beat, every minute) starts.
STEMS_DRAIN_BUDGET_SECONDS = 50.0


@shared_task(name="archive.jobs.meetings_stems_drain", ignore_result=True)
def meetings_stems_drain() -> str:
    """Stem the transcript segments and meetings written since (imports, CalDAV pulls,
    invitations, agents' transcripts): every minute (beat). Until then the words index
    answers for them."""
    result = meeting_stems_drain(budget_seconds=STEMS_DRAIN_BUDGET_SECONDS)
    rebuilt = ", rebuilding for a new analyzer" if result.rebuilt else ""
    return f"meeting stems: {result.indexed} indexed, {result.left} queued{rebuilt}"


# --- invitations in mail --------------------------------------------------------------------


def _invitation_window(sent_at: datetime) -> tuple[datetime, datetime]:
    """The settings' window (the past years to the years ahead) around now, stretched to
    the message's time: an old mail's invitation still names its meeting."""
    now = timezone.now()
    past = timedelta(days=settings.MEETINGS_PAST_DAYS)
    ahead = timedelta(days=settings.MEETINGS_AHEAD_DAYS)
    return min(now, sent_at) - past, max(now, sent_at) + ahead


@shared_task(name="archive.jobs.meetings_invitation_read", ignore_result=True, acks_late=True)
def meetings_invitation_read(public_id: str) -> str:
    """Read the calendar file stored with a mail (an invitation: REQUEST, CANCEL, REPLY)
    into the mail account's calendar, and link the mail to the meetings it touched.
    Idempotent. A broken invitation is logged, and the mail stays as it was stored; an
    attachment or a blob that is gone is skipped."""
    attachment = (
        Attachment.objects.select_related("message__account").filter(public_id=public_id).first()
    )
    if attachment is None or not attachment.path:
        return f"{public_id}: no stored calendar file"
    message = attachment.message
    account = message.account
    source = attachment.file_name or "invitation.ics"
    try:
        with blob_open(attachment.path) as stream:
            read = calendar_from_stream(
                stream, source=source, window=_invitation_window(message.sent_at)
            )
        done = invitation_store(
            key=f"{account.provider}:{account.external_id}",
            name=f"Invitations in mail ({account.name or account.external_id})",
            read=read,
            message_id=message.pk,
            sent_at=message.sent_at,
        )
    except WireCatError as exc:  # not iCalendar, too large, the blob swept, the message gone
        log.warning(
            "invitation %s of message %s not read: %s; the message is kept as it was",
            public_id,
            message.public_id,
            exc,
        )
        return f"{public_id}: not read ({exc})"
    for problem in read.problems:
        log.warning("invitation %s of message %s: %s", public_id, message.public_id, problem)
    stored = done.stored
    return (
        f"{public_id}: {read.method or 'PUBLISH'}, {stored.meetings_added} meetings added, "
        f"{stored.meetings_updated} updated, {stored.meetings_cancelled} cancelled, "
        f"{stored.responses_updated} responses; {done.links_added} links to the message"
    )


def _calendar_stored(*, public_id: str) -> None:
    # A broker that does not answer is not waited for: the mail is stored either way.
    meetings_invitation_read.apply_async(kwargs={"public_id": public_id}, retry=False)


# A calendar file stored with a message (archive/store/sink/record.py) is read here.
effect_connect(CALENDAR_STORED, _calendar_stored)
