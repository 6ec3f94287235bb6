"""The API's searches: messages with the query language, facets and cursors; and search
all (every kind of thing, by words, meaning or both, fused by rank)."""

from __future__ import annotations

import functools
from typing import Annotated

from django.http import HttpRequest
from django.urls import reverse
from ninja import Query, Router

from archive.conversations.selectors import conversation_by_public_id
from archive.gateway.models import Agent
from archive.gateway.selectors import (
    agent_chat_check,
    agent_chat_scope,
    agent_limits,
    agent_message_get,
    agent_search,
)
from archive.search.everything import KINDS, MODES, AllPage, Item, search_all
from archive.search.everything import MAX_LIMIT as ALL_MAX_LIMIT
from archive.search.facets import FacetValue
from archive.search.parser import MAX_QUERY_CHARS
from archive.search.schemas import (
    AllItemOut,
    FacetsOut,
    FacetValueOut,
    FromMatchOut,
    HitConversationOut,
    MatchedInOut,
    SearchAllOut,
    SearchHitOut,
    SearchOut,
    SnippetPart,
)
from archive.search.selectors import MAX_LIMIT, SORTS
from archive.search.services.searches import search_run, search_run_record
from archive.store.models import Chat
from archive.web.api import answers, caller_agent, limit_query, requires, scope
from archive.web.middleware import after_response
from archive.web.schemas import Choice, Format, Matching
from meetings.models import Meeting
from notes.models import Note
from wirecat.errors import Forbidden, NotFound

router = Router(tags=["archive"])


@router.get(
    "/search/messages",
    response=answers(SearchOut),
    summary="Search messages with the query language (the page's search)",
    **scope("messages.read"),
)
@requires("messages.read")
def search_messages(
    request: HttpRequest,
    q: Annotated[str, Format("wirecat-query", most=MAX_QUERY_CHARS)] = Query(
        "", description="a query in the query language (docs/search.md)"
    ),
    sort: Annotated[str, Choice("sort", SORTS)] = "relevance",
    cursor: Annotated[str, Format("wirecat-search-cursor")] | None = Query(
        None, description="the `next_cursor` of the same search (same `q` and `sort`)"
    ),
    limit: int = limit_query(20, MAX_LIMIT),
    facets: bool = False,
) -> SearchOut:
    """`q` uses the query language (words, "phrases", prefix*, *infix*, -not, OR,
    parentheses, from:, in:, source:, before:, after:, on:, has:, is:, exact:, filename:,
    tag:, content:, transcript:, conv:), `format: wirecat-query`; a `cursor`
    (`format: wirecat-search-cursor`) is the
    `next_cursor` a page of the same search gave out.
    `facets=true` adds counts per chat, sender, source and year, each with the operator
    that narrows the query to it. A hit found by `content:` or `transcript:` says in
    `matched_in` which file it matched in, on which page, with a snippet of the file's
    text. Each hit names its `conversation` (null while its chat's
    conversations are not built); `conv:cnv_…` narrows to one conversation, and a
    conversation id that names none answers 422. A syntax error answers 422 with the
    problem and its `position`."""
    page = agent_search(  # within the agent's limits, if it has any
        agent=caller_agent(request), query=q, sort=sort, cursor=cursor, limit=limit, facets=facets
    )
    run = search_run(query=q, sort=sort, cursor=cursor)
    if run is not None:  # recorded once the answer is sent, as the page does
        after_response(request, functools.partial(search_run_record, run=run))

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
                date_estimated=hit.message.date_estimated,
                deleted=hit.message.deleted_at is not None,
                text=hit.message.text,
                snippet=[SnippetPart(text=part.text, hit=part.hit) for part in hit.snippet],
                score=hit.score,
                tagged=list(hit.tagged),
                matched_in=MatchedInOut(
                    attachment=hit.matched_in.attachment,
                    file_name=hit.matched_in.file_name,
                    page=hit.matched_in.page,
                    snippet=[
                        SnippetPart(text=part.text, hit=part.hit) for part in hit.matched_in.snippet
                    ],
                )
                if hit.matched_in
                else None,
                conversation=HitConversationOut(
                    id=hit.conversation.public_id,
                    title=hit.conversation.title,
                    message_count=hit.conversation.message_count,
                )
                if hit.conversation
                else None,
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
            counted=page.facets.counted,
            total=page.facets.total,
            estimate=page.facets.estimate,
        )
        if page.facets
        else None,
        suggestion=page.suggestion,
        stems_behind=page.stems_behind,
        senders=[FromMatchOut.model_validate(m, from_attributes=True) for m in page.senders],
    )


# --- search all ---------------------------------------------------------------------------

# The scope an agent needs for a kind beyond messages.read (which every kind needs).
KIND_SCOPES = {"note": "notes.read", "meeting": "meetings.read"}
# The kinds that live in chats: an agent limited to some chats sees only theirs.
CHAT_KINDS = ("message", "mail", "conversation", "file")
_KIND = "|".join(KINDS)
KINDS_PATTERN = f"(?:{_KIND})(?:,(?:{_KIND}))*"
# "More like this" starts from a message, a note, a meeting or a conversation.
LIKE_PATTERN = "(?:message:msg|note:note|meeting:mtg|conversation:cnv)_[0-9A-HJKMNP-TV-Z]{26}"
ALL_CURSOR_MAX = 40
# The owner's page of each kind of reference.
PAGES = {
    "message": "archive:message",
    "note": "notes:note",
    "meeting": "meetings:meeting",
    "conversation": "archive:conversation",
    "attachment": "archive:attachment_text",
}


def _scope_need(agent: Agent | None, name: str, what: str) -> None:
    if agent is not None and name not in agent.scopes:
        raise Forbidden(f"{what} needs the scope {name}; agent {agent.name!r} lacks it")


def _kinds_allowed(agent: Agent | None, kinds: str | None) -> tuple[list[str], dict[str, str]]:
    """The kinds to search and the kinds left out for a scope the agent lacks. A kind asked
    for by name without its scope is refused (403); unasked, it is left out and said so."""
    if kinds:
        asked = [kind for kind in KINDS if kind in kinds.split(",")]
        for kind in asked:
            if kind in KIND_SCOPES:
                _scope_need(agent, KIND_SCOPES[kind], f"kinds={kind}")
        return asked, {}
    left_out = {
        kind: f"needs the scope {name}, which this agent lacks"
        for kind, name in KIND_SCOPES.items()
        if agent is not None and name not in agent.scopes
    }
    return [kind for kind in KINDS if kind not in left_out], left_out


def _like_check(agent: Agent | None, like: str) -> None:
    """The thing "more like this" starts from must be there and the agent's to read:
    404 when it is not (or outside the agent's chats), 403 without its kind's scope."""
    kind, _, public = like.partition(":")
    if kind == "message":
        agent_message_get(agent=agent, public_id=public)
    elif kind == "note":
        _scope_need(agent, "notes.read", "like=note:…")
        if not Note.objects.filter(public_id=public).exists():
            raise NotFound(f"note {public!r} does not exist")
    elif kind == "meeting":
        _scope_need(agent, "meetings.read", "like=meeting:…")
        if not Meeting.objects.filter(public_id=public).exists():
            raise NotFound(f"meeting {public!r} does not exist")
    else:
        view = conversation_by_public_id(public)
        if view is None:
            raise NotFound(f"conversation {public!r} does not exist")
        agent_chat_check(agent, Chat.objects.get(pk=view.chat_id), f"conversation {public!r}")


def _item_chat(item: Item) -> int | None:
    """The chat a thing of a chat kind is in (its message's, conversation's or file's)."""
    target = item.target
    chat_id = getattr(target, "chat_id", None)  # a Message, a ConversationView
    if chat_id is None and hasattr(target, "attachment"):  # an AttachmentText
        chat_id = target.attachment.message.chat_id
    return int(chat_id) if chat_id is not None else None


def _within_limits(agent: Agent | None, page: AllPage) -> None:
    """For an agent limited to some chats: only the things of its chats, and no counts of
    the kinds of chats (they would count what is outside its limits)."""
    if agent_limits(agent) is None:
        return
    chats = {_item_chat(item) for item in page.items if item.kind in CHAT_KINDS}
    visible = set(
        Chat.objects.filter(
            agent_chat_scope(agent), pk__in=[c for c in chats if c is not None]
        ).values_list("pk", flat=True)
    )
    page.items = [
        item for item in page.items if item.kind not in CHAT_KINDS or _item_chat(item) in visible
    ]
    for kind in CHAT_KINDS:
        page.counts.pop(kind, None)
        page.capped.pop(kind, None)


def _page_url(ref: str) -> str:
    kind, _, public = ref.partition(":")
    return reverse(PAGES[kind], args=[public])


def _item_out(item: Item) -> AllItemOut:
    return AllItemOut(
        kind=item.kind,
        ref=item.ref,
        title=item.title,
        snippet=[SnippetPart(text=part.text, hit=part.hit) for part in item.snippet],
        when=item.when,
        why=[side for side in ("words", "meaning") if side in item.why],
        score=item.score,
        url=_page_url(item.ref),
        at_ms=item.at_ms,
    )


@router.get(
    "/search/all",
    response=answers(SearchAllOut),
    summary="Search everything (messages, mail, notes, meetings, conversations, files)"
    " by words, meaning or both",
    **scope("messages.read"),
)
@requires("messages.read")
def search_everything(
    request: HttpRequest,
    q: Annotated[str, Format("wirecat-query", most=MAX_QUERY_CHARS)] = Query(
        "", description="a query in the query language (docs/search.md); may be empty with `like`"
    ),
    mode: Annotated[str, Choice("mode", MODES)] = Query(
        "hybrid", description="words, meaning, or both fused by rank (hybrid)"
    ),
    kinds: Annotated[str, Matching("kinds", KINDS_PATTERN, "kinds separated by commas")]
    | None = Query(
        None,
        description=f"the kinds to search, separated by commas ({', '.join(KINDS)}); all"
        " by default",
    ),
    cursor: Annotated[str, Format("wirecat-search-all-cursor", most=ALL_CURSOR_MAX)] | None = (
        Query(None, description="the `next_cursor` of the same search")
    ),
    limit: int = limit_query(20, ALL_MAX_LIMIT),
    like: Annotated[
        str, Matching("like", LIKE_PATTERN, "a message:, note:, meeting: or conversation: id")
    ]
    | None = Query(
        None,
        description="more like this: a `message:msg_…`, `note:note_…`, `meeting:mtg_…` or"
        " `conversation:cnv_…` whose nearest in meaning to find (the mode is then meaning)",
    ),
) -> SearchAllOut:
    """Every kind that can answer `q` searches it its own way — by words with the query
    language, by meaning with the local model over the meaning index, or both — and the
    lists are merged by reciprocal rank fusion, best first. Each item says why it matched
    (`words`, `meaning`), shows a snippet, and links the owner's page of it. `counts` says
    how many each kind found; a kind that could not answer (an operator it lacks, nothing
    stored, its index not embedded yet, a scope the agent lacks) is in `skipped` with the
    reason instead of failing. Notes need the scope notes.read and meetings
    meetings.read too: asked for in `kinds` without it, 403; not asked for, they are
    skipped. An agent limited to some chats finds only their messages, mail,
    conversations and files (a page may hold fewer than `limit`: follow `next_cursor`),
    and gets no counts of those kinds. A syntax error answers 422 with its `position`;
    `like` naming nothing stored, 404. `GET /api/meaning/status` says how much of the
    archive is embedded."""
    agent = caller_agent(request)
    wanted, left_out = _kinds_allowed(agent, kinds)
    if like:
        _like_check(agent, like)
    page = search_all(
        query=q, mode=mode, kinds=wanted, cursor=cursor or None, limit=limit, like=like
    )
    page.skipped.update(left_out)
    _within_limits(agent, page)
    return SearchAllOut(
        query=page.query,
        mode=page.mode,
        kinds=list(page.kinds),
        like=page.like,
        items=[_item_out(item) for item in page.items],
        next_cursor=page.next_cursor,
        counts=page.counts,
        capped=page.capped,
        skipped=page.skipped,
        stale=page.stale,
    )
