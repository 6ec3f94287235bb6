"""The API for people: list, create, link and unlink identities, suggestions."""

from __future__ import annotations

from typing import Annotated

from django.http import HttpRequest
from ninja import Router

from archive.people.schemas import (
    ChatCountOut,
    IdentityCountOut,
    IdentityIn,
    IdentityOut,
    PersonDetailOut,
    PersonIn,
    PersonOut,
    SuggestionIn,
    SuggestionOut,
)
from archive.people.selectors import PEOPLE_SORTS, people_list, person_page, suggestions
from archive.people.services import identity_link, identity_unlink, person_create, suggestion_accept
from archive.store.models import Identity
from archive.tags.schemas import tag_out
from archive.web.api import (
    answers,
    caller_actor,
    caller_sees,
    limit_query,
    links,
    offset_query,
    requires,
    row_id,
    scope,
    window,
)
from archive.web.schemas import Choice
from wirecat.errors import Conflict, Invalid, NotFound

router = Router(tags=["archive"])

PERSON = {"person_id": "$response.body#/id"}


# --- people -------------------------------------------------------------------------------


def _identity_out(identity: Identity) -> IdentityOut:
    return IdentityOut(
        id=identity.pk,
        provider=identity.provider,
        external_id=identity.external_id,
        display_name=identity.display_name,
        handle=identity.handle,
        phone=identity.phone,
        email=identity.email,
        person_id=identity.person_id,
    )


def _person_detail(request: HttpRequest, person_id: int) -> PersonDetailOut:
    """The person; an agent limited to accounts or chats sees only those of their chats."""
    page = person_page(person_id=person_id, latest=0)
    return PersonDetailOut(
        id=page.person.pk,
        name=page.person.name,
        is_owner=page.person.is_owner,
        identities=[
            IdentityCountOut(
                identity=_identity_out(row.identity), messages=row.messages, last_at=row.last_at
            )
            for row in page.identities
        ],
        chats=[
            ChatCountOut(
                chat_id=row.chat.pk,
                title=row.chat.title or row.chat.external_id,
                source=row.chat.account.provider,
                messages=row.messages,
                last_at=row.last_at,
            )
            for row in page.chats
            if caller_sees(request, row.chat)
        ],
        tags=[tag_out(tag) for tag in page.tags],
        messages=page.messages,
    )


@router.get(
    "/people",
    response=answers(list[PersonOut]),
    summary="People, by last activity or name",
    **scope("messages.read"),
)
@requires("messages.read")
def people_index(
    request: HttpRequest,
    q: str = "",
    sort: Annotated[str, Choice("sort", PEOPLE_SORTS)] = "recent",
    limit: int = limit_query(50, 200),
    offset: int = offset_query(),
) -> list[PersonOut]:
    """`q` finds a person by name or by any identity's name, handle, phone or e-mail."""
    page = window(limit, offset, 200)
    rows = people_list(q=q[:200], sort=sort)[page]
    return [
        PersonOut(
            id=p.pk,
            name=p.name,
            identity_count=getattr(p, "identity_count", 0),
            last_at=getattr(p, "last_at", None),
            is_owner=p.is_owner,
        )
        for p in rows
    ]


@router.post(
    "/people",
    response=answers(PersonDetailOut),
    summary="Make a person from identities",
    **scope(
        "people.write",
        responses={
            200: links(
                __name__,
                GetPerson=("people_show", PERSON),
                LinkIdentity=("people_link", PERSON),
                UnlinkIdentity=("people_unlink", PERSON),
            )
        },
    ),
)
@requires("people.write")
def people_create(request: HttpRequest, body: PersonIn) -> PersonDetailOut:
    person = person_create(
        name=body.name, identity_ids=body.identity_ids, actor=caller_actor(request)
    )
    return _person_detail(request, person.pk)


@router.get(
    "/people/suggestions",
    response=answers(list[SuggestionOut]),
    summary="Identities that share a phone number or e-mail address across providers",
    **scope("messages.read"),
)
@requires("messages.read")
def people_suggestions(request: HttpRequest) -> list[SuggestionOut]:
    return [
        SuggestionOut(key=s.key, identities=[_identity_out(i) for i in s.identities])
        for s in suggestions()
    ]


@router.post(
    "/people/suggestions/accept",
    response=answers(PersonDetailOut),
    summary="Link identities that share a phone or e-mail as one person",
    **scope("people.write"),
)
@requires("people.write")
def people_suggestion_accept(request: HttpRequest, body: SuggestionIn) -> PersonDetailOut:
    """404 when an identity does not exist; 409 when they share no phone number or e-mail
    address (the request is well formed: the archive's state refuses it)."""
    found = set(Identity.objects.filter(pk__in=body.identity_ids).values_list("pk", flat=True))
    missing = [pk for pk in body.identity_ids if pk not in found]
    if missing:
        raise NotFound(f"identity {missing[0]} does not exist")
    try:
        person = suggestion_accept(identity_ids=body.identity_ids, actor=caller_actor(request))
    except Invalid as exc:
        raise Conflict(str(exc)) from exc
    return _person_detail(request, person.pk)


@router.get(
    "/people/{person_id}",
    response=answers(PersonDetailOut),
    summary="A person, all identities",
    **scope("messages.read"),
)
@requires("messages.read")
def people_show(request: HttpRequest, person_id: int = row_id("person")) -> PersonDetailOut:
    return _person_detail(request, person_id)


@router.post(
    "/people/{person_id}/link",
    response=answers(PersonDetailOut),
    summary="Link an identity",
    **scope("people.write"),
)
@requires("people.write")
def people_link(
    request: HttpRequest, body: IdentityIn, person_id: int = row_id("person")
) -> PersonDetailOut:
    identity_link(identity_id=body.identity_id, person_id=person_id, actor=caller_actor(request))
    return _person_detail(request, person_id)


@router.post(
    "/people/{person_id}/unlink",
    response=answers(PersonDetailOut),
    summary="Unlink an identity",
    **scope("people.write"),
)
@requires("people.write")
def people_unlink(
    request: HttpRequest, body: IdentityIn, person_id: int = row_id("person")
) -> PersonDetailOut:
    identity_unlink(identity_id=body.identity_id, person_id=person_id, actor=caller_actor(request))
    return _person_detail(request, person_id)
