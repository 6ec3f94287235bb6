"""The search page (its Messages and Meetings tabs), results as you type, saved searches."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from urllib.parse import urlencode

from django.contrib import messages as flash
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers

from archive.conversations.selectors import ConversationView
from archive.search.parser import QuerySyntaxError
from archive.search.selectors import SORTS as SEARCH_SORTS
from archive.search.selectors import Hit, message_search, recent_searches, saved_searches
from archive.search.services.searches import (
    search_delete,
    search_run,
    search_run_record,
    search_save,
)
from archive.tags.selectors import tag_names
from archive.web.middleware import after_response
from archive.web.pages import HtmxHttpRequest
from meetings.selectors import MeetingHit, meeting_search, short_when, timestamp
from wirecat.errors import Invalid

# The page's tabs, read from ?kind= (not ?in=: `in:` is an operator of the query).
KINDS = ("messages", "meetings")
# How a page of message hits is laid out, read from ?group=: in rank order, or gathered
# under their conversations.
GROUPINGS = ("", "conversation")


@dataclass(frozen=True)
class HitGroup:
    """Hits of one page that are in one conversation, in their order (a hit whose chat is
    not built yet is a group of its own, without a conversation)."""

    conversation: ConversationView | None
    url: str | None  # the conversation's page
    hits: list[Hit]


def conversation_url(conversation: ConversationView) -> str:
    """The conversation's page (the Conversations view's)."""
    return reverse("archive:conversation", args=[conversation.public_id])


def hit_groups(hits: list[Hit], *, together: bool) -> list[HitGroup]:
    """The page's hits each with its conversation; `together`: gathered by conversation,
    the groups in the order of their best hit (the page's order is the search's:
    relevance, newest or oldest)."""
    groups: list[HitGroup] = []
    by_conversation: dict[str, HitGroup] = {}
    for hit in hits:
        found = hit.conversation
        if found is None:
            groups.append(HitGroup(None, None, [hit]))
        elif together and found.public_id in by_conversation:
            by_conversation[found.public_id].hits.append(hit)
        else:
            group = HitGroup(found, conversation_url(found), [hit])
            by_conversation[found.public_id] = group
            groups.append(group)
    return groups


@dataclass(frozen=True)
class MeetingHitRow:
    """A meetings hit as the page shows it: when the meeting was (the owner's time zone),
    and how far into it the line was said."""

    hit: MeetingHit
    when: str
    at: str | None


def _meeting_rows(hits: list[MeetingHit]) -> list[MeetingHitRow]:
    return [
        MeetingHitRow(
            hit=hit,
            when=short_when(hit.meeting),
            at=timestamp(hit.start_ms) if hit.start_ms is not None else None,
        )
        for hit in hits
    ]


@require_GET
@vary_on_headers("HX-Request")
def search(request: HtmxHttpRequest) -> HttpResponse:
    """One box; results as you type (htmx swaps #results), a plain form without JS. Two
    tabs: messages (the default) and meetings (?kind=meetings: what was said in them, and
    their titles and descriptions)."""
    query = request.GET.get("q", "")
    sort = request.GET.get("sort", "relevance")
    if sort not in SEARCH_SORTS:
        sort = "relevance"
    kind = request.GET.get("kind", KINDS[0])
    if kind not in KINDS:
        kind = KINDS[0]
    group = request.GET.get("group", "")
    if group not in GROUPINGS:
        group = ""
    context: dict[str, object] = {
        "query": query,
        "sort": sort,
        "sorts": SEARCH_SORTS,
        "kind": kind,
        "group": group,
        "meetings_count": None,
    }
    cursor = request.GET.get("cursor") or None
    run = None
    try:
        if kind == "meetings":
            found = meeting_search(query=query, cursor=cursor)
            context["page"] = found
            context["meeting_hits"] = _meeting_rows(found.hits)
            # Counted only when the whole answer is on this one page: counting more would
            # cost a second search.
            if cursor is None and found.next_cursor is None:
                context["meetings_count"] = len(found.hits)
        else:
            found_messages = message_search(query=query, sort=sort, cursor=cursor, facets=True)
            context["page"] = found_messages
            context["groups"] = hit_groups(found_messages.hits, together=group == "conversation")
    except QuerySyntaxError as exc:
        context["syntax_error"] = exc
    except Invalid as exc:
        context["problem"] = exc
    else:
        if kind == "messages":  # the recorded searches are the messages' (their links open it)
            typing = bool(request.htmx and request.htmx.trigger == "q")
            run = search_run(query=query, sort=sort, cursor=cursor, typing=typing)
    if request.htmx:
        response = render(request, "archive/search.html#results", context)
    else:
        context["saved"] = saved_searches()
        context["recent"] = recent_searches()
        context["tag_choices"] = tag_names(limit=200)
        response = render(request, "archive/search.html", context)
    if run is not None:  # recorded once the answer is sent: a read never waits on a write
        after_response(request, functools.partial(search_run_record, run=run))
    return response


@require_POST
def search_save_view(request: HttpRequest) -> HttpResponse:
    query = request.POST.get("q", "")
    sort = request.POST.get("sort", "relevance")
    try:
        saved = search_save(name=request.POST.get("name", ""), query=query, sort=sort)
    except Invalid as exc:
        flash.error(request, str(exc))
    else:
        flash.success(request, f"Saved as “{saved.name}”.")
    return redirect(f"{reverse('archive:search')}?{urlencode({'q': query, 'sort': sort})}")


@require_POST
def search_delete_view(request: HttpRequest, saved_id: int) -> HttpResponse:
    search_delete(saved_id=saved_id)
    flash.success(request, "Saved search deleted.")
    return redirect("archive:search")
