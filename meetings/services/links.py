"""A meeting's links to chats, messages, tasks and people: each row names who made it
("owner" or "agent:<name>", as the archive's audit rows do)."""

from __future__ import annotations

from django.db import models, transaction

from archive.store.models import Chat, Message, Person
from meetings.models import Meeting, MeetingLink
from meetings.services.common import actor_clean
from tasks.models import Task
from wirecat.errors import Invalid, NotFound

TARGETS: dict[str, type[models.Model]] = {
    MeetingLink.Kind.CHAT: Chat,
    MeetingLink.Kind.MESSAGE: Message,
    MeetingLink.Kind.TASK: Task,
    MeetingLink.Kind.PERSON: Person,
}


def _kind_clean(kind: str) -> str:
    if kind not in TARGETS:
        raise Invalid(f"A meeting links to a {', a '.join(TARGETS)}; not to {kind!r}.")
    return kind


@transaction.atomic
def meeting_link(
    *, meeting: Meeting, kind: str, target_id: int, actor: str = "owner"
) -> MeetingLink:
    """Link `meeting` to the chat, message, task or person `target_id` (its primary key).
    Idempotent: linking again keeps the first link and who made it."""
    kind = _kind_clean(kind)
    actor = actor_clean(actor)
    if not TARGETS[kind]._default_manager.filter(pk=target_id).exists():
        raise NotFound(f"There is no {kind} {target_id} to link this meeting to.")
    if not Meeting.objects.filter(pk=meeting.pk).exists():
        raise NotFound(f"Meeting {meeting.public_id} does not exist any more.")
    link, _created = MeetingLink.objects.get_or_create(
        meeting=meeting, kind=kind, target_id=target_id, defaults={"actor": actor}
    )
    return link


@transaction.atomic
def meeting_unlink(*, meeting: Meeting, kind: str, target_id: int, actor: str = "owner") -> bool:
    """Take the link off; True if there was one. Idempotent (no link: False). `actor` is
    checked like a link's (the link row, the only record of it, goes)."""
    kind = _kind_clean(kind)
    actor_clean(actor)
    deleted, _ = MeetingLink.objects.filter(
        meeting=meeting, kind=kind, target_id=target_id
    ).delete()
    return deleted > 0
