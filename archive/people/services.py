"""People: link an owner's contacts' identities across messengers to one person, by hand.
Each link and unlink is an audit row (IdentityLink). Suggestions come from a shared phone
number or e-mail address across providers; equal display names alone never link anyone."""

from __future__ import annotations

from collections.abc import Sequence

from django.db import transaction

from archive.people.models import IdentityLink
from archive.store.models import Identity, Person
from wirecat.errors import Invalid, NotFound

NAME_MAX = 200


def person_name_clean(name: str) -> str:
    cleaned = " ".join(str(name).split())
    if not cleaned:
        raise Invalid("name: empty")
    if len(cleaned) > NAME_MAX:
        raise Invalid(f"name: at most {NAME_MAX} characters")
    return cleaned


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
    """A new person, with these identities linked to it."""
    person = Person.objects.create(name=person_name_clean(name))
    for identity_id in identity_ids:
        identity_link(identity_id=identity_id, person_id=person.pk, actor=actor)
    return person


@transaction.atomic
def person_rename(*, person_id: int, name: str) -> Person:
    person = _person(person_id)
    person.name = person_name_clean(name)
    person.save(update_fields=["name"])
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
    for identity in identities:
        identity_link(identity_id=identity.pk, person_id=person.pk, actor=actor)
    return person
