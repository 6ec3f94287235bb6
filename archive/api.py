from __future__ import annotations

from django.http import HttpRequest
from ninja import Router

from archive.api_auth import answers, requires, scope, window
from archive.models import Identity, Tag
from archive.schemas import (
    ChatCountOut,
    FacetsOut,
    FacetValueOut,
    IdentityCountOut,
    IdentityIn,
    IdentityOut,
    PersonDetailOut,
    PersonIn,
    PersonOut,
    RemovedOut,
    SearchHitOut,
    SearchOut,
    SnippetPart,
    StatsOut,
    SuggestionIn,
    SuggestionOut,
    TagCountsOut,
    TagMergeIn,
    TagNameIn,
    TagOut,
    TagRenameIn,
    TagTargetIn,
)
from archive.selectors.archive import store_counts, worker_status
from archive.selectors.people import PEOPLE_SORTS, people_list, person_page, suggestions
from archive.selectors.search.facets import FacetValue
from archive.selectors.search.messages import message_search
from archive.selectors.tags import tag_list, tags_of
from archive.services.people import (
    identity_link,
    identity_unlink,
    person_create,
    suggestion_accept,
)
from archive.services.searches import search_record
from archive.services.tags import (
    tag_add,
    tag_delete,
    tag_merge,
    tag_remove,
    tag_rename,
    tag_target,
)
from wirecat.errors import Invalid, NotFound

router = Router(tags=["archive"])


@router.get(
    "/stats",
    response=answers(StatsOut),
    summary="Counts of the archive and worker liveness",
    **scope("messages.read"),
)
@requires("messages.read")
def stats(request: HttpRequest) -> StatsOut:
    counts = store_counts()
    worker = worker_status()
    return StatsOut(
        accounts=counts.accounts,
        chats=counts.chats,
        messages=counts.messages,
        attachments=counts.attachments,
        worker_seen_at=worker.seen_at if worker else None,
        worker_alive=bool(worker and worker.alive),
    )


@router.get(
    "/search/messages",
    response=answers(SearchOut),
    summary="Search messages with the query language (the page's search)",
    **scope("messages.read"),
)
@requires("messages.read")
def search_messages(
    request: HttpRequest,
    q: str = "",
    sort: str = "relevance",
    cursor: str | None = None,
    limit: int = 20,
    facets: bool = False,
) -> SearchOut:
    """`q` uses the query language (words, "phrases", prefix*, *infix*, -not, OR,
    parentheses, from:, in:, source:, before:, after:, on:, has:, is:, exact:, filename:,
    tag:).
    `facets=true` adds counts per chat, sender, source and year, each with the operator
    that narrows the query to it. A syntax error answers 422 with the problem and its
    `position`."""
    page = message_search(query=q, sort=sort, cursor=cursor, limit=limit, facets=facets)
    if cursor is None:
        search_record(query=q, sort=sort)

    def values(found: list[FacetValue]) -> list[FacetValueOut]:
        return [FacetValueOut(label=v.label, count=v.count, operator=v.operator) for v in found]

    return SearchOut(
        query=page.query,
        sort=page.sort,
        parsed=page.parsed,
        hits=[
            SearchHitOut(
                id=hit.message.public_id,
                chat_id=hit.message.chat_id,
                chat_title=hit.message.chat.title or hit.message.chat.external_id,
                source=hit.message.chat.account.provider,
                sender=str(hit.message.sender) if hit.message.sender else None,
                direction=hit.message.direction,
                sent_at=hit.message.sent_at,
                deleted=hit.message.deleted_at is not None,
                text=hit.message.text,
                snippet=[SnippetPart(text=part.text, hit=part.hit) for part in hit.snippet],
                score=hit.score,
                tagged=list(hit.tagged),
            )
            for hit in page.hits
        ],
        next_cursor=page.next_cursor,
        facets=FacetsOut(
            chat=values(page.facets.chat),
            sender=values(page.facets.sender),
            source=values(page.facets.source),
            year=values(page.facets.year),
            sampled=page.facets.sampled,
        )
        if page.facets
        else None,
        suggestion=page.suggestion,
    )


# --- tags ---------------------------------------------------------------------------------


def _tag_out(tag: Tag) -> TagOut:
    return TagOut(name=tag.name, colour=tag.colour)


@router.get(
    "/tags",
    response=answers(list[TagCountsOut]),
    summary="Every tag with its counts per kind",
    **scope("messages.read"),
)
@requires("messages.read")
def tags_list(request: HttpRequest) -> list[TagCountsOut]:
    return [
        TagCountsOut(
            name=row.tag.name,
            colour=row.tag.colour,
            chats=row.chats,
            people=row.people,
            messages=row.messages,
        )
        for row in tag_list()
    ]


@router.get(
    "/tags/of",
    response=answers(list[TagOut]),
    summary="The tags on one chat, person or message",
    **scope("messages.read"),
)
@requires("messages.read")
def tags_on(request: HttpRequest, kind: str, key: str) -> list[TagOut]:
    target = tag_target(kind=kind, key=key)
    return [_tag_out(tag) for tag in tags_of(target.kind, [target.pk]).get(target.pk, [])]


@router.post(
    "/tags/add",
    response=answers(TagOut),
    summary="Tag a chat, person or message (idempotent)",
    **scope("tags.write"),
)
@requires("tags.write")
def tags_add(request: HttpRequest, body: TagTargetIn) -> TagOut:
    return _tag_out(tag_add(target=tag_target(kind=body.kind, key=body.key), name=body.name))


@router.post(
    "/tags/remove",
    response=answers(RemovedOut),
    summary="Untag a target (idempotent)",
    **scope("tags.write"),
)
@requires("tags.write")
def tags_remove(request: HttpRequest, body: TagTargetIn) -> RemovedOut:
    target = tag_target(kind=body.kind, key=body.key)
    return RemovedOut(removed=int(tag_remove(target=target, name=body.name)))


@router.post(
    "/tags/rename",
    response=answers(TagOut),
    summary="Rename a tag (409 if the name is taken)",
    **scope("tags.write"),
)
@requires("tags.write")
def tags_rename(request: HttpRequest, body: TagRenameIn) -> TagOut:
    return _tag_out(tag_rename(name=body.name, new_name=body.new_name))


@router.post(
    "/tags/merge",
    response=answers(TagOut),
    summary="Merge a tag into another",
    **scope("tags.write"),
)
@requires("tags.write")
def tags_merge(request: HttpRequest, body: TagMergeIn) -> TagOut:
    return _tag_out(tag_merge(name=body.name, into=body.into))


@router.post(
    "/tags/delete",
    response=answers(RemovedOut),
    summary="Delete a tag and its taggings",
    **scope("tags.write"),
)
@requires("tags.write")
def tags_delete(request: HttpRequest, body: TagNameIn) -> RemovedOut:
    return RemovedOut(removed=tag_delete(name=body.name))


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


def _person_detail(person_id: int) -> PersonDetailOut:
    page = person_page(person_id=person_id, latest=0)
    return PersonDetailOut(
        id=page.person.pk,
        name=page.person.name,
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
        ],
        tags=[_tag_out(tag) for tag in page.tags],
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
    request: HttpRequest, q: str = "", sort: str = "recent", limit: int = 50, offset: int = 0
) -> list[PersonOut]:
    """`q` finds a person by name or by any identity's name, handle, phone or e-mail."""
    if sort not in PEOPLE_SORTS:
        raise Invalid(f"sort: one of {', '.join(PEOPLE_SORTS)}")
    page = window(limit, offset, 200)
    rows = people_list(q=q[:200], sort=sort)[page]
    return [
        PersonOut(
            id=p.pk,
            name=p.name,
            identity_count=getattr(p, "identity_count", 0),
            last_at=getattr(p, "last_at", None),
        )
        for p in rows
    ]


@router.post(
    "/people",
    response=answers(PersonDetailOut),
    summary="Make a person from identities",
    **scope("people.write"),
)
@requires("people.write")
def people_create(request: HttpRequest, body: PersonIn) -> PersonDetailOut:
    person = person_create(name=body.name, identity_ids=body.identity_ids)
    return _person_detail(person.pk)


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
    return _person_detail(suggestion_accept(identity_ids=body.identity_ids).pk)


@router.get(
    "/people/{person_id}",
    response=answers(PersonDetailOut),
    summary="A person, all identities",
    **scope("messages.read"),
)
@requires("messages.read")
def people_show(request: HttpRequest, person_id: int) -> PersonDetailOut:
    return _person_detail(person_id)


@router.post(
    "/people/{person_id}/link",
    response=answers(PersonDetailOut),
    summary="Link an identity",
    **scope("people.write"),
)
@requires("people.write")
def people_link(request: HttpRequest, person_id: int, body: IdentityIn) -> PersonDetailOut:
    identity_link(identity_id=body.identity_id, person_id=person_id)
    return _person_detail(person_id)


@router.post(
    "/people/{person_id}/unlink",
    response=answers(PersonDetailOut),
    summary="Unlink an identity",
    **scope("people.write"),
)
@requires("people.write")
def people_unlink(request: HttpRequest, person_id: int, body: IdentityIn) -> PersonDetailOut:
    identity = Identity.objects.filter(pk=body.identity_id).first()
    if identity is None or identity.person_id != person_id:
        raise NotFound(f"identity {body.identity_id} is not linked to person {person_id}")
    identity_unlink(identity_id=body.identity_id)
    return _person_detail(person_id)
