"""Participants, written set-wise per meeting, and the archive identities their e-mail
addresses are: an address finds the identity that has it (a mailbox's first), or becomes
an identity of its own. A display name alone never finds anyone."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from django.db.models import Q
from django.db.models.functions import Lower

from archive.store.models import Identity
from meetings.domain import ParticipantRecord
from meetings.models import Participant
from meetings.services.common import BATCH, chunks

# The provider of the identities meetings make for an address no identity has yet. Not a
# messenger: an address's own identity, keyed by the address as a mailbox's is, so the
# People page suggests linking it to a mailbox of the same address (the owner confirms).
MEETINGS_PROVIDER = "meetings"
ID_MAX = 255


def _cut(value: str, limit: int) -> str:
    return " ".join(str(value or "").split())[:limit]


def email_clean(value: str) -> str:
    address = str(value or "").strip().lower()
    if address.startswith("mailto:"):
        address = address[len("mailto:") :]
    return address[:320] if "@" in address else ""


def _rank(identity: Identity, address: str) -> tuple[int, int, int, int]:
    """Lower is better: a real provider's over one meetings made, a mailbox (its id is the
    address) over another provider's contact that lists it, one linked to a person, the
    oldest."""
    return (
        identity.provider == MEETINGS_PROVIDER,
        identity.external_id != address,
        identity.person_id is None,
        identity.pk,
    )


def identities_for(addresses: Mapping[str, str]) -> dict[str, Identity]:
    """Address (lower-cased) → its identity, for every address of `addresses` (address →
    a name to give a new identity). Addresses no identity has get a meetings identity,
    created in one insert."""
    wanted = [a for a in addresses if a and len(a) <= ID_MAX]
    found: dict[str, Identity] = {}
    for chunk in chunks(wanted):
        rows = Identity.objects.annotate(email_lower=Lower("email")).filter(
            Q(email_lower__in=chunk) | Q(external_id__in=chunk)
        )
        for identity in rows:
            for address in {identity.external_id, (identity.email or "").strip().lower()}:
                if address not in addresses:
                    continue
                best = found.get(address)
                if best is None or _rank(identity, address) < _rank(best, address):
                    found[address] = identity
    fresh = [
        Identity(
            provider=MEETINGS_PROVIDER,
            external_id=address,
            email=address,
            display_name=_cut(addresses[address], 255),
        )
        for address in wanted
        if address not in found
    ]
    if fresh:
        Identity.objects.bulk_create(fresh, batch_size=BATCH)
        found.update((identity.external_id, identity) for identity in fresh)
    return found


@dataclass(frozen=True)
class Wanted:
    """A participant as the store keeps it."""

    email: str
    name: str
    response: str
    role: str


def wanted_participants(
    records: Iterable[ParticipantRecord], organizer: ParticipantRecord | None = None
) -> list[Wanted]:
    """The participants of one meeting, each once (by address, else by name); the organizer
    among them (role "organizer") unless listed as an attendee too."""
    out: dict[tuple[str, str], Wanted] = {}
    for record in records:
        email = email_clean(record.email)
        name = _cut(record.name, 300)
        if not email and not name:
            continue
        key = (email, "") if email else ("", name)
        out[key] = Wanted(email, name, _cut(record.response, 16).lower(), _cut(record.role, 20))
    if organizer is not None:
        email = email_clean(organizer.email)
        name = _cut(organizer.name, 300)
        key = (email, "") if email else ("", name)
        if (email or name) and key not in out:
            out[key] = Wanted(email, name, _cut(organizer.response, 16).lower(), "organizer")
    return list(out.values())


def participants_write(
    *,
    wanted: Mapping[int, Sequence[Wanted]],
    stored: Iterable[Participant],
    identities: Mapping[str, Identity],
) -> None:
    """Bring the participants of the meetings in `wanted` (meeting id → its participants)
    to what is wanted, set-wise: `stored` holds their current rows (any others are left
    alone); changed rows in bulk updates, new ones in bulk inserts, gone ones deleted."""
    current: dict[tuple[int, str, str], Participant] = {}
    for row in stored:
        if row.meeting_id in wanted:
            current[(row.meeting_id, row.email, "" if row.email else row.name)] = row
    fresh: list[Participant] = []
    changed: list[Participant] = []
    kept: set[int] = set()
    for meeting_id, people in wanted.items():
        for person in people:
            identity = identities.get(person.email) if person.email else None
            identity_id = identity.pk if identity is not None else None
            held = current.get((meeting_id, person.email, "" if person.email else person.name))
            if held is None:
                fresh.append(
                    Participant(
                        meeting_id=meeting_id,
                        email=person.email,
                        name=person.name,
                        response=person.response,
                        role=person.role,
                        identity_id=identity_id,
                    )
                )
                continue
            kept.add(held.pk)
            values = {
                "name": person.name or held.name,
                "response": person.response,
                "role": person.role,
                "identity_id": identity_id if identity_id is not None else held.identity_id,
            }
            if any(getattr(held, field) != value for field, value in values.items()):
                for field, value in values.items():
                    setattr(held, field, value)
                changed.append(held)
    gone = [row.pk for row in current.values() if row.pk not in kept]
    for chunk in chunks(gone):
        Participant.objects.filter(pk__in=chunk).delete()
    if changed:
        Participant.objects.bulk_update(
            changed, ["name", "response", "role", "identity"], batch_size=BATCH
        )
    if fresh:
        Participant.objects.bulk_create(fresh, batch_size=BATCH)
