"""What the Conversations pages read: how far a chat's conversations are built, a page of
them with their participants' names (one query for every conversation shown), where one
conversation falls in the chat's list, and a window of one conversation's messages read
as the chat page reads its own (cursors, attachments with their text's state).
Reads only, always through the chat's current build."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Exists, OuterRef, Prefetch, Q, QuerySet
from django.utils import timezone

from archive.conversations.models import Conversation, ConversationLink, ConversationState, Need
from archive.conversations.selectors import ConversationView, chat_conversations, current_build_id
from archive.store.models import Attachment, Identity, Message
from archive.store.selectors import NOT_IN_CHAT, MessageWindow, decode_cursor, encode_cursor

LIST_PAGE = 30  # conversations on a page of the list
MESSAGES_PAGE = 50  # messages of one conversation shown at a time
NAMES_SHOWN = 3  # participants named in a conversation's summary; the rest are counted
# Longer conversations are read along the chat's time index (see _conversation_messages).
LONG_CONVERSATION = 2_000
DASH = "\u2013"  # between the ends of a time span


@dataclass(frozen=True)
class BuildStatus:
    """How far a chat's conversations are: `built` (a current build to read), `waiting` (a
    build is asked for: never built, or the chat changed since), the last failure."""

    built: bool
    waiting: bool
    known: bool  # the chat has a state row at all (it was written since conversations came)
    error: str
    built_at: datetime | None


def build_status(*, chat_id: int) -> BuildStatus:
    state = ConversationState.objects.filter(chat_id=chat_id).first()
    if state is None:
        return BuildStatus(built=False, waiting=False, known=False, error="", built_at=None)
    return BuildStatus(
        built=state.current_id is not None,
        waiting=state.need != Need.NOTHING,
        known=True,
        error=state.error,
        built_at=state.built_at,
    )


@dataclass(frozen=True)
class ConversationCard:
    """One conversation as its summary shows it: its names (the most active first, at most
    NAMES_SHOWN) and how many others there are."""

    conversation: ConversationView
    names: list[str]
    others: int

    @property
    def public_id(self) -> str:
        return self.conversation.public_id

    @property
    def span(self) -> str:
        return time_span(self.conversation.first_at, self.conversation.last_at)


def conversation_cards(views: list[ConversationView]) -> list[ConversationCard]:
    """The conversations with their participants' names, read in one query for all."""
    wanted = {pk for view in views for pk in view.participants[:NAMES_SHOWN]}
    names = {
        identity.pk: str(identity)
        for identity in Identity.objects.filter(pk__in=wanted).only(
            "id", "display_name", "handle", "external_id"
        )
    }
    cards = []
    for view in views:
        shown = [names[pk] for pk in view.participants[:NAMES_SHOWN] if pk in names]
        cards.append(ConversationCard(view, shown, max(0, view.participant_count - len(shown))))
    return cards


@dataclass(frozen=True)
class ConversationList:
    cards: list[ConversationCard]
    total: int
    page: int
    pages: int


def page_number(raw: str | None, pages: int) -> int:
    """`?page=` as a page that exists: anything else (a word, 0, past the end) is the
    nearest one."""
    try:
        number = int((raw or "1").strip()[:12])
    except ValueError:
        number = 1
    return min(max(number, 1), max(pages, 1))


def conversation_list(*, chat_id: int, page: int) -> ConversationList:
    """Page `page` of the chat's conversations, the most recently active first."""
    views, total = chat_conversations(
        chat_id=chat_id, limit=LIST_PAGE, offset=(max(page, 1) - 1) * LIST_PAGE
    )
    pages = max(1, -(-total // LIST_PAGE))
    if page > pages and total:  # the list shrank under the reader: its last page
        return conversation_list(chat_id=chat_id, page=pages)
    return ConversationList(conversation_cards(views), total, min(page, pages), pages)


def list_page_of(view: ConversationView) -> int:
    """The page of its chat's list that shows `view` (the list's order: last_at, then id,
    both descending)."""
    build = current_build_id(view.chat_id)
    if build is None:
        return 1
    ahead = (
        Conversation.objects.filter(build_id=build)
        .filter(Q(last_at__gt=view.last_at) | Q(last_at=view.last_at, id__gt=view.id))
        .count()
    )
    return ahead // LIST_PAGE + 1


# --- a conversation's messages ---------------------------------------------------------------


def _conversation_messages(view: ConversationView) -> QuerySet[Message]:
    """Its live messages with what the chat page's rendering reads, attachments with their
    text's state (never the text itself). A conversation of a few messages is read from its
    links (sorting them is cheap; with a filter on the chat, SQLite walks the chat's time
    index instead, past every other message); a long one along the chat's time index within
    its span (sorting all of it for each page is not)."""
    attachments = (
        Attachment.objects.select_related("text_row").defer("text_row__text").order_by("id")
    )
    links = ConversationLink.objects.filter(conversation_id=view.id)
    if view.message_count > LONG_CONVERSATION:
        qs = Message.objects.visible().filter(
            Exists(links.filter(message_id=OuterRef("pk"))),
            chat_id=view.chat_id,
            sent_at__gte=view.first_at,
            sent_at__lte=view.last_at,
        )
    else:
        qs = Message.objects.visible().filter(pk__in=links.values("message_id"))
    return (
        qs.exclude(delivery_status__in=NOT_IN_CHAT)
        .select_related("sender", "reply_to", "reply_to__sender")
        .prefetch_related(Prefetch("attachments", queryset=attachments))
    )


def conversation_window(
    view: ConversationView,
    *,
    before: str | None = None,
    after: str | None = None,
    around: Message | None = None,
    limit: int = MESSAGES_PAGE,
) -> MessageWindow:
    """Up to `limit` of a conversation's messages in time order: its first ones by default,
    the page before or after a cursor (the store's cursors), or a few before `around` and
    the rest after it (a message opened in its conversation)."""
    qs = _conversation_messages(view)
    if around is not None:
        earlier = list(
            qs.filter(
                Q(sent_at__lt=around.sent_at) | Q(sent_at=around.sent_at, id__lt=around.pk)
            ).order_by("-sent_at", "-id")[: limit // 5 + 1]
        )
        more_earlier = len(earlier) > limit // 5
        start = list(reversed(earlier[: limit // 5]))
        rest = list(
            qs.filter(
                Q(sent_at__gt=around.sent_at) | Q(sent_at=around.sent_at, id__gte=around.pk)
            ).order_by("sent_at", "id")[: limit - len(start) + 1]
        )
        more_later = len(rest) > limit - len(start)
        rows = start + rest[: limit - len(start)]
        focus = next((m for m in rows if m.pk == around.pk), None)
        return MessageWindow(
            messages=rows,
            older=encode_cursor(rows[0]) if rows and more_earlier else None,
            newer=encode_cursor(rows[-1]) if rows and more_later else None,
            focus=focus,
        )
    if before is not None:
        sent_at, pk = decode_cursor(before)
        found = list(
            qs.filter(Q(sent_at__lt=sent_at) | Q(sent_at=sent_at, id__lt=pk)).order_by(
                "-sent_at", "-id"
            )[: limit + 1]
        )
        rows = list(reversed(found[:limit]))
        return MessageWindow(
            messages=rows,
            older=encode_cursor(rows[0]) if rows and len(found) > limit else None,
            newer=encode_cursor(rows[-1]) if rows else None,
        )
    if after is not None:
        sent_at, pk = decode_cursor(after)
        qs = qs.filter(Q(sent_at__gt=sent_at) | Q(sent_at=sent_at, id__gt=pk))
    found = list(qs.order_by("sent_at", "id")[: limit + 1])
    rows = found[:limit]
    return MessageWindow(
        messages=rows,
        older=encode_cursor(rows[0]) if rows and after is not None else None,
        newer=encode_cursor(rows[-1]) if rows and len(found) > limit else None,
    )


def time_span(first: datetime, last: datetime) -> str:
    """When a conversation went on, in the archive's time zone: "1 March 2024, 12:00" to
    "12:40" joined by a dash, or across days "1 March, 12:00" to "3 March 2024, 09:15"."""
    a, b = timezone.localtime(first), timezone.localtime(last)
    start = f"{a.day} {a:%B %Y}"
    if a.date() == b.date():
        return f"{start}, {a:%H:%M}" if a == b else f"{start}, {a:%H:%M}{DASH}{b:%H:%M}"
    if a.year == b.year:
        start = f"{a.day} {a:%B}"
    return f"{start}, {a:%H:%M} {DASH} {b.day} {b:%B %Y}, {b:%H:%M}"
