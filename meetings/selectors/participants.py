"""A meeting's participants with the people their identities belong to (for the services
and the pages)."""

from __future__ import annotations

from dataclasses import dataclass

from archive.store.models import Person
from meetings.models import Meeting, Participant

# --- for the services ---


@dataclass(frozen=True)
class ParticipantPerson:
    """A participant and the person their identity belongs to (None: no person yet)."""

    participant: Participant
    person: Person | None


def meeting_participants(meeting: Meeting) -> list[ParticipantPerson]:
    """The meeting's participants (organizer first, then by name and address), each with
    the person reached through their identity — never through a display name. One query."""
    rows = (
        Participant.objects.filter(meeting=meeting)
        .select_related("identity__person")
        .order_by("name", "email", "pk")
    )
    out = [
        ParticipantPerson(
            participant=row,
            person=row.identity.person if row.identity is not None else None,
        )
        for row in rows
    ]
    out.sort(key=lambda item: item.participant.role != "organizer")
    return out
