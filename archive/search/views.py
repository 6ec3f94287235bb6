"""The search page: one box, a tab per kind of thing (All, Messages, Mail, Notes, Meetings,
Conversations, Files) with its count, results as you type, saved searches.

The Messages tab (the default) is the messages' full words search: facets, sort, grouping
by conversation, saved and recorded searches. The Meetings tab is the meetings' words
search (the line said, who said it, when into the meeting). All and the other tabs show
search all's fused list (`archive.search.everything`) by words, meaning or both; "more
like this" (`?like=<ref>`) is a meaning search from a message, note or meeting."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, replace
from urllib.parse import urlencode

from django.contrib import messages as flash
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers

from archive.conversations.selectors import ConversationView, conversation_by_public_id
from archive.meaning.selectors import readiness
from archive.search.everything import KIND_LABELS, MODES, AllPage, Item, search_all
from archive.search.everything import KINDS as ALL_KINDS
from archive.search.parser import QuerySyntaxError
from archive.search.selectors import SORTS as SEARCH_SORTS
from archive.search.selectors import Hit, message_search, recent_searches, saved_searches
from archive.search.services.searches import (
    search_delete,
    search_run,
    search_run_record,
    search_save,
)
from archive.store.models import Message
from archive.tags.selectors import tag_names
from archive.web.middleware import after_response
from archive.web.pages import HtmxHttpRequest
from meetings.models import Meeting, Segment
from meetings.selectors import MeetingHit, meeting_search, short_when, timestamp
from notes.models import Note
from wirecat.errors import Invalid, WireCatError

# The page's tabs, read from ?tab= (not ?in=: `in:` is an operator of the query): All, or
# one kind of search all's. Without one, Messages.
TABS = ("all", *ALL_KINDS)
DEFAULT_MODE = "hybrid"
MODE_LABELS = {"words": "Words", "meaning": "Meaning", "hybrid": "Both"}
_OWN_COUNT = re.compile(r"[0-9][0-9,]{0,15}")  # a tab's own count, as the page wrote it
KIND_BADGES = {
    "message": "Message",
    "mail": "Mail",
    "note": "Note",
    "meeting": "Meeting",
    "conversation": "Conversation",
    "file": "File",
}
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


@dataclass(frozen=True)
class TabLink:
    """One tab of the page: its address (keeping the query and the mode), its count."""

    key: str
    label: str
    url: str
    count: str | None  # None: not counted (no query, or the tab's search failed)
    current: bool


@dataclass(frozen=True)
class ItemRow:
    """A thing search all found, as the page shows it."""

    item: Item
    kind_label: str
    url: str
    why: str  # "words", "meaning" or "both"
    at: str | None  # how far into a meeting, for a transcript's moment


def _count(found: AllPage | None, kinds: tuple[str, ...]) -> str | None:
    """A tab's count: the items its lists gave, "50+" when one was full."""
    if found is None:
        return None
    total = sum(found.counts.get(kind, 0) for kind in kinds)
    return f"{total}+" if any(found.capped.get(kind) for kind in kinds) else str(total)


def _address(**params: str) -> str:
    return "?" + urlencode({name: value for name, value in params.items() if value})


def _tabs(
    *, tab: str, query: str, sort: str, mode: str, like: str, found: AllPage | None
) -> list[TabLink]:
    """The tabs: Messages as it always was (`?q=&sort=`), the others by `tab=` and `mode=`
    (a Messages or Meetings tab reached from a meaning search keeps its mode in the link,
    so the way back keeps it too)."""
    links: list[TabLink] = []
    for key in TABS:
        kept_mode = mode if mode != DEFAULT_MODE else ""
        if key == "message" and not like:
            url = _address(q=query, sort=sort, mode=kept_mode)
        else:
            url = _address(q=query, tab=key, mode=mode, like=like)
        kinds = ALL_KINDS if key == "all" else (key,)
        label = "All" if key == "all" else KIND_LABELS[key]
        links.append(TabLink(key, label, url, _count(found, kinds), key == tab))
    return links


def _moment_lines(items: list[Item]) -> dict[tuple[str, int], int]:
    """The transcript line each meeting moment of `items` falls in (the meeting page opens
    at a line, `?line=`): the last line that started by then."""
    lines: dict[tuple[str, int], int] = {}
    for item in items:
        if item.kind != "meeting" or item.at_ms is None:
            continue
        segment = getattr(item.target, "segment", None)
        if segment is not None:
            lines[(item.ref, item.at_ms)] = segment.pk
            continue
        found = (
            Segment.objects.filter(
                transcript__meeting__public_id=item.ref.partition(":")[2],
                start_ms__lte=item.at_ms,
            )
            .order_by("-start_ms", "-pk")
            .values_list("pk", flat=True)
            .first()
        )
        if found is not None:
            lines[(item.ref, item.at_ms)] = found
    return lines


def item_url(item: Item, lines: dict[tuple[str, int], int]) -> str:
    """The page of a thing found, from its reference: a message in its chat (its
    permalink), a note, a meeting at the moment, a conversation, a file's text."""
    kind, _, key = item.ref.partition(":")
    if kind == "message":
        return reverse("archive:message", args=[key])
    if kind == "note":
        return reverse("notes:note", args=[key])
    if kind == "meeting":
        url = reverse("meetings:meeting", args=[key])
        line = lines.get((item.ref, item.at_ms)) if item.at_ms is not None else None
        return f"{url}?line={line}#seg-{line}" if line else url
    if kind == "conversation":
        return reverse("archive:conversation", args=[key])
    if kind == "attachment":
        return reverse("archive:attachment_text", args=[key])
    return reverse("archive:search")


def _rows(items: list[Item]) -> list[ItemRow]:
    lines = _moment_lines(items)
    return [
        ItemRow(
            item=item,
            kind_label=KIND_BADGES.get(item.kind, item.kind),
            url=item_url(item, lines),
            why="both" if len(item.why) > 1 else next(iter(item.why), "words"),
            at=timestamp(item.at_ms) if item.at_ms is not None else None,
        )
        for item in items
    ]


def _short(text: str, size: int = 70) -> str:
    text = " ".join(text.split())
    return text if len(text) <= size else text[: size - 1] + "…"


def like_title(ref: str) -> str:
    """What a "more like this" search started from, in a few words (the reference itself
    when it names nothing stored)."""
    kind, _, key = ref.partition(":")
    title: str | None = None
    if kind == "message":
        message = Message.objects.select_related("sender").filter(public_id=key).first()
        if message is not None:
            who = "You" if message.direction == "out" else str(message.sender or "")
            text = _short(message.text or "(no text)")
            title = f"{who}: {text}" if who else text
    elif kind == "note":
        title = Note.objects.filter(public_id=key).values_list("title", flat=True).first()
    elif kind == "meeting":
        found = Meeting.objects.filter(public_id=key).values_list("title", flat=True).first()
        title = None if found is None else found or "Untitled meeting"
    elif kind == "conversation":
        view = conversation_by_public_id(key)
        title = None if view is None else view.title or "(a conversation)"
    return _short(title) if title else ref


@require_GET
@vary_on_headers("HX-Request")
def search(request: HtmxHttpRequest) -> HttpResponse:
    """One box; results as you type (htmx swaps #results), a plain form without JS. The
    tab is `?tab=` (Messages without one; the Meetings tab's old `?kind=meetings` still
    opens it), the mode `?mode=` (words, meaning, or both: `hybrid`), "more like this"
    `?like=<ref>` (by meaning, on the All tab unless one is named)."""
    query = request.GET.get("q", "")
    like = request.GET.get("like", "").strip()[:200]
    sort = request.GET.get("sort", "relevance")
    if sort not in SEARCH_SORTS:
        sort = "relevance"
    legacy = "meeting" if request.GET.get("kind") == "meetings" else "message"
    tab = request.GET.get("tab") or ("all" if like else legacy)
    mode = request.GET.get("mode") or ("meaning" if like else DEFAULT_MODE)
    group = request.GET.get("group", "")
    if group not in GROUPINGS:
        group = ""
    # Messages and Meetings are their words searches, with their own tools; a "more like
    # this" search is search all's on every tab.
    words_tab = tab in ("message", "meeting") and not like
    if request.htmx and request.GET.get("counts") == "1":
        return _tab_counts(request, tab=tab, query=query, sort=sort, mode=mode, like=like)
    context: dict[str, object] = {
        "query": query,
        "sort": sort,
        "sorts": SEARCH_SORTS,
        "kind": "meetings" if tab == "meeting" else "messages",
        "tab": tab,
        "words_tab": words_tab,
        "mode": mode,
        "modes": [(key, MODE_LABELS[key]) for key in MODES],
        "like": like,
        "group": group,
        "meetings_count": None,
    }
    cursor = request.GET.get("cursor") or None
    run = None
    counted: AllPage | None = None
    try:
        if tab not in TABS:
            raise Invalid(f"tab: one of {', '.join(TABS)}, not {tab[:40]!r}")
        if mode not in MODES:
            raise Invalid(f"mode: one of {', '.join(MODES)}, not {mode[:40]!r}")
        asked = bool(query.strip() or like)
        if like:
            context["like_title"] = like_title(like)
        if not words_tab:
            kinds = None if tab == "all" else (tab,)
            found_all = search_all(
                query=query, mode=mode, kinds=kinds, cursor=cursor, like=like or None
            )
            context["page"] = found_all
            context["rows"] = _rows(found_all.items)
            context["skipped"] = skipped_notes(found_all.skipped)
            if mode != "words":
                context["readiness"] = readiness()
            counted = found_all if kinds is None else None
        elif tab == "meeting":
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
        if counted is None and asked:
            # The other tabs are counted by search all after the page is shown (htmx asks
            # for the tabs again): the tab's own answer never waits on six more searches.
            own = _own_count(context) if words_tab else None
            context["counts_url"] = _address(
                q=query, sort=sort, tab=tab, mode=mode, like=like, own=own or "", counts="1"
            )
    except QuerySyntaxError as exc:
        context["syntax_error"] = exc
    except WireCatError as exc:
        context["problem"] = exc
    else:
        if tab == "message" and words_tab:  # the recorded searches are the messages'
            typing = bool(request.htmx and request.htmx.trigger == "q")
            run = search_run(query=query, sort=sort, cursor=cursor, typing=typing)
    tabs = _tabs(
        tab=tab if tab in TABS else "", query=query, sort=sort, mode=mode, like=like, found=counted
    )
    if words_tab:  # its own search counts it exactly (Messages: every message, mail too)
        tabs = [t if not t.current else replace(t, count=_own_count(context)) for t in tabs]
    context["tabs"] = tabs
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


def _tab_counts(
    request: HtmxHttpRequest, *, tab: str, query: str, sort: str, mode: str, like: str
) -> HttpResponse:
    """The tabs again, each counted by search all (`?counts=1`, asked by the page once it
    is shown); the current Messages or Meetings tab keeps the count its own search gave
    (`own`). A query search all cannot answer leaves the tabs uncounted."""
    found: AllPage | None = None
    if tab in TABS and mode in MODES:
        try:
            found = search_all(query=query, mode=mode, limit=1, like=like or None)
        except WireCatError:
            found = None
    tabs = _tabs(
        tab=tab if tab in TABS else "", query=query, sort=sort, mode=mode, like=like, found=found
    )
    if tab in ("message", "meeting") and not like:
        own = request.GET.get("own", "")
        own_count = own if _OWN_COUNT.fullmatch(own) else None
        tabs = [t if not t.current else replace(t, count=own_count) for t in tabs]
    return render(request, "archive/search.html#tabs", {"tabs": tabs})


def _own_count(context: dict[str, object]) -> str | None:
    """The Messages or Meetings tab's count from its own search, when it is exact."""
    if context["tab"] == "meeting":
        count = context["meetings_count"]
        return None if count is None else str(count)
    page = context.get("page")
    facets = getattr(page, "facets", None)
    if facets is None or facets.sampled:
        return None
    return f"{facets.total:,}"


def skipped_notes(skipped: dict[str, str]) -> list[tuple[str, str]]:
    """Why kinds gave nothing, a line per reason: ("Notes, Meetings by meaning", "…")."""
    by_reason: dict[tuple[str, str], list[str]] = {}
    for key, reason in skipped.items():
        kind, _, side = key.partition(":")
        by_reason.setdefault((side, reason), []).append(KIND_LABELS.get(kind, kind))
    return [
        (", ".join(labels) + (f" by {side}" if side else ""), reason)
        for (side, reason), labels in by_reason.items()
    ]


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
