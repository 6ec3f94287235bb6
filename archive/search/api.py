"""The API's message search: the query language, facets, cursors."""

from __future__ import annotations

import functools
from typing import Annotated

from django.http import HttpRequest
from ninja import Query, Router

from archive.gateway.selectors import agent_search
from archive.search.facets import FacetValue
from archive.search.parser import MAX_QUERY_CHARS
from archive.search.schemas import (
    FacetsOut,
    FacetValueOut,
    FromMatchOut,
    HitConversationOut,
    MatchedInOut,
    SearchHitOut,
    SearchOut,
    SnippetPart,
)
from archive.search.selectors import MAX_LIMIT, SORTS
from archive.search.services.searches import search_run, search_run_record
from archive.web.api import answers, caller_agent, limit_query, requires, scope
from archive.web.middleware import after_response
from archive.web.schemas import Choice, Format

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
