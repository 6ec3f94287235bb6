"""People: link an owner's contacts' identities across messengers to one person, by hand.
Each link and unlink is an audit row (IdentityLink). Suggestions come from a shared phone
number or e-mail address across providers; equal display names alone never link anyone."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from django.db import connection, transaction
from django.utils import timezone

from archive.people.models import IdentityLink
from archive.store.models import Identity, Person
from archive.store.signals import people_named_send
from wirecat.errors import Invalid, NotFound

NAME_MAX = 200
BULK_MAX = 20_000  # identities in one bulk action of the People page
OWNER_NAME = "You"  # the owner's person when none of their identities has a name


def person_name_clean(name: str) -> str:
    cleaned = " ".join(str(name).split())
    if not cleaned:
        raise Invalid("name: empty")
    if len(cleaned) > NAME_MAX:
        raise Invalid(f"name: at most {NAME_MAX} characters")
    return cleaned


def identity_name(identity: Identity) -> str:
    """The name a person made from this identity gets: its first non-blank name, handle,
    e-mail, phone or id, cut to NAME_MAX."""
    for value in (identity.display_name, identity.handle, identity.email, identity.phone):
        cleaned = " ".join(str(value or "").split())
        if cleaned:
            return cleaned[:NAME_MAX]
    return " ".join(identity.external_id.split())[:NAME_MAX] or f"identity {identity.pk}"


def _identity(identity_id: int) -> Identity:
    identity = Identity.objects.select_related("person").filter(pk=identity_id).first()
    if identity is None:
        raise NotFound(f"identity {identity_id} does not exist")
    return identity


def _person(person_id: int) -> Person:
    person = Person.objects.filter(pk=person_id).first()
    if person is None:
        raise NotFound(f"person {person_id} does not exist")
    return person


def _audit(identity: Identity, person: Person, action: str, actor: str) -> None:
    IdentityLink.objects.create(
        identity=identity, person=person, person_name=person.name, action=action, actor=actor
    )


@transaction.atomic
def identity_link(*, identity_id: int, person_id: int, actor: str = "owner") -> Identity:
    """Link an identity to a person (moving it from another person). Idempotent."""
    identity, person = _identity(identity_id), _person(person_id)
    if identity.person_id == person.pk:
        return identity
    if identity.person is not None:
        _audit(identity, identity.person, IdentityLink.Action.UNLINK, actor)
    identity.person = person
    identity.save(update_fields=["person", "updated_at"])
    _audit(identity, person, IdentityLink.Action.LINK, actor)
    people_named_send([person.pk])
    return identity


@transaction.atomic
def identity_unlink(
    *, identity_id: int, person_id: int | None = None, actor: str = "owner"
) -> Identity:
    """Take an identity off its person (the person stays). With `person_id` (the pages and
    the API always give it: the person they unlink from) NotFound unless the identity is
    linked to that person, so nobody unlinks another person's identity by its id. Without
    it, idempotent."""
    identity = _identity(identity_id)
    if person_id is not None and identity.person_id != person_id:
        raise NotFound(f"identity {identity_id} is not linked to person {person_id}")
    if identity.person is None:
        return identity
    _audit(identity, identity.person, IdentityLink.Action.UNLINK, actor)
    identity.person = None
    identity.save(update_fields=["person", "updated_at"])
    return identity


@transaction.atomic
def person_create(*, name: str, identity_ids: Sequence[int] = (), actor: str = "owner") -> Person:
    """A new person, with these identities linked to it (set-wise; NotFound names the first
    identity that does not exist)."""
    person = Person.objects.create(name=person_name_clean(name))
    if identity_ids:
        found = Identity.objects.in_bulk(list(identity_ids))
        missing = [pk for pk in identity_ids if pk not in found]
        if missing:
            raise NotFound(f"identity {missing[0]} does not exist")
        _link_many([found[pk] for pk in dict.fromkeys(identity_ids)], person, actor)
    people_named_send([person.pk])
    return person


def person_from_identity(*, identity_id: int, actor: str = "owner") -> Person:
    """A new person made from one identity, named after it."""
    return person_create(
        name=identity_name(_identity(identity_id)), identity_ids=[identity_id], actor=actor
    )


@transaction.atomic
def person_rename(*, person_id: int, name: str) -> Person:
    person = _person(person_id)
    person.name = person_name_clean(name)
    person.save(update_fields=["name"])
    people_named_send([person.pk])
    return person


@transaction.atomic
def suggestion_accept(*, identity_ids: list[int], actor: str = "owner") -> Person:
    """Link identities that share a phone number or e-mail address into one person: the
    person one of them already has (the one holding the most), else a new one named after
    the first. Refused unless they really share a phone or an address."""
    from archive.people.selectors import contact_key

    identities = list(Identity.objects.select_related("person").filter(pk__in=identity_ids))
    if len(identities) < 2 or len(identities) != len(set(identity_ids)):
        raise Invalid("suggestion: needs two or more existing identities")
    shared = set.intersection(*(contact_key(identity) for identity in identities))
    if not shared:
        raise Invalid("suggestion: these identities share no phone number or e-mail address")
    people: dict[int, int] = {}
    for identity in identities:
        if identity.person_id:
            people[identity.person_id] = people.get(identity.person_id, 0) + 1
    if people:
        person = _person(max(people, key=lambda pk: (people[pk], -pk)))
    else:
        first = identities[0]
        name = first.display_name or first.handle or first.email or first.phone
        person = Person.objects.create(name=person_name_clean(name or first.external_id))
        people_named_send([person.pk])
    for identity in identities:
        identity_link(identity_id=identity.pk, person_id=person.pk, actor=actor)
    return person


# --- many at once -------------------------------------------------------------------------


def _link_many(identities: list[Identity], person: Person, actor: str) -> int:
    """Link `identities` to `person` set-wise: one UPDATE, the audit rows in one insert
    (an identity moved from another person is first audited as unlinked from it)."""
    moving = [i for i in identities if i.person_id != person.pk]
    if not moving:
        return 0
    before = Person.objects.in_bulk({i.person_id for i in moving if i.person_id is not None})
    audit: list[IdentityLink] = []
    for identity in moving:
        old = before.get(identity.person_id) if identity.person_id is not None else None
        if old is not None:
            audit.append(
                IdentityLink(
                    identity=identity,
                    person=old,
                    person_name=old.name,
                    action=IdentityLink.Action.UNLINK,
                    actor=actor,
                )
            )
        audit.append(
            IdentityLink(
                identity=identity,
                person=person,
                person_name=person.name,
                action=IdentityLink.Action.LINK,
                actor=actor,
            )
        )
    Identity.objects.filter(pk__in=[i.pk for i in moving]).update(
        person=person, updated_at=timezone.now()
    )
    IdentityLink.objects.bulk_create(audit)
    people_named_send([person.pk])
    return len(moving)


def _bulk_identities(identity_ids: Iterable[int]) -> list[Identity]:
    ids = sorted(set(identity_ids))
    if not ids:
        raise Invalid("Choose one or more identities first.")
    if len(ids) > BULK_MAX:
        raise Invalid(f"At most {BULK_MAX:,} identities at once; narrow the list first.")
    return list(Identity.objects.filter(pk__in=ids).order_by("pk"))


@transaction.atomic
def identities_link(*, identity_ids: Iterable[int], person_id: int, actor: str = "owner") -> int:
    """Link many identities to one person (moving them from others), set-wise and audited
    as `identity_link` audits one. Returns how many changed person."""
    person = _person(person_id)
    return _link_many(_bulk_identities(identity_ids), person, actor)


@transaction.atomic
def identities_gather(
    *, identity_ids: Iterable[int], person: str, actor: str = "owner"
) -> tuple[Person, int]:
    """Link many identities to the person a picker's text names ("Name (#12)", or a name
    one person has), or to a new person of that name. (The person, how many moved.)"""
    from archive.people.selectors import person_picked

    identities = _bulk_identities(identity_ids)
    target = person_picked(person)
    if target is None:
        target = Person.objects.create(name=person_name_clean(person))
        people_named_send([target.pk])
    return target, _link_many(identities, target, actor)


@transaction.atomic
def people_from_identities(*, identity_ids: Iterable[int], actor: str = "owner") -> list[Person]:
    """Make each identity no person holds yet a person of its own, named after it; the
    ones a person already holds are left as they are. Set-wise: the people in one insert,
    the links in one prepared statement, the audit in one insert."""
    loose = [i for i in _bulk_identities(identity_ids) if i.person_id is None]
    if not loose:
        return []
    made = Person.objects.bulk_create([Person(name=identity_name(i)) for i in loose])
    now = timezone.now()
    for identity, person in zip(loose, made, strict=True):
        identity.person = person
        identity.updated_at = now
    # One prepared statement run per row (bulk_update's CASE takes seconds for 10,000).
    with connection.cursor() as cursor:
        cursor.executemany(
            "UPDATE archive_identity SET person_id = %s, updated_at = %s WHERE id = %s",
            [(person.pk, now, identity.pk) for identity, person in zip(loose, made, strict=True)],
        )
    IdentityLink.objects.bulk_create(
        IdentityLink(
            identity=identity,
            person=person,
            person_name=person.name,
            action=IdentityLink.Action.LINK,
            actor=actor,
        )
        for identity, person in zip(loose, made, strict=True)
    )
    people_named_send(person.pk for person in made)
    return made


# --- the owner ----------------------------------------------------------------------------


def _owner_person(candidates: list[Identity], named_first: set[int]) -> Person:
    """The owner's person: the one marked so; else the person already holding most of the
    owner's identities (linked by hand before), marked now; else a new one, named after
    the owner's identity (their accounts' first)."""
    person = Person.objects.filter(is_owner=True).first()
    if person is not None:
        return person
    held = Counter(i.person_id for i in candidates if i.person_id is not None)
    if held:
        person = _person(held.most_common(1)[0][0])
        person.is_owner = True
        person.save(update_fields=["is_owner"])
        return person
    ordered = sorted(candidates, key=lambda i: (i.pk not in named_first, i.pk))
    name = next((i.display_name or i.handle for i in ordered if i.display_name or i.handle), "")
    return Person.objects.create(
        name=" ".join(name.split())[:NAME_MAX] or OWNER_NAME, is_owner=True
    )


@transaction.atomic
def owner_identities_link(
    *, identity_ids: Iterable[int], accounts_own: Iterable[int] = (), actor: str = "system"
) -> int:
    """Link the owner's own identities (an account's owner identity, the sender of what the
    owner sent) to the owner's person, made on first need, set-wise and audited. An
    identity another person holds, or that anyone linked or unlinked before, is left as
    it is: the owner's hand wins over the guess. Returns how many were linked."""
    ids = set(identity_ids)
    if not ids:
        return 0
    candidates = list(Identity.objects.filter(pk__in=ids))
    touched = set(
        IdentityLink.objects.filter(identity_id__in=ids).values_list("identity_id", flat=True)
    )
    loose = [i for i in candidates if i.person_id is None and i.pk not in touched]
    if not loose:
        return 0
    owner = _owner_person(candidates, set(accounts_own))
    return _link_many(loose, owner, actor)


@transaction.atomic
def suggestions_accept(*, groups: list[list[int]], actor: str = "owner") -> list[Person]:
    """Accept several suggestions at once: each group linked as `suggestion_accept` links
    it, all or none."""
    if not groups:
        raise Invalid("Tick one or more suggestions first.")
    return [suggestion_accept(identity_ids=ids, actor=actor) for ids in groups]
