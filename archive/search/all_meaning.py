"""Search all's meaning side: the meaning index's nearest chunks as ranked lists of things.

The index (`archive.meaning`) answers by chunk kind — conversation, note, transcript, file —
one hit per source, nearest first. Search all's kinds are made of them: a conversation's
chunk gives the conversation and, in the chunk's order, each message it holds (a message
of a mail account under mail, any other under messages); a note's chunk its note; a
transcript's chunk its meeting (at the chunk's first line); a file's chunk the file. A
meaning hit shows the start of its text (no word to mark).

"More like this" starts from one thing instead of a query: its text is embedded (a
message's text; a note's title and the start of its body; a meeting's title, description
and the start of its transcript; a conversation's first chunk) and the thing itself is
left out of what is found.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from archive.connectors.registry import MAIL_PROVIDERS
from archive.conversations.selectors import (
    conversation_by_public_id,
    conversations_by_ids,
)
from archive.files.models import AttachmentText
from archive.meaning.models import Chunk, ChunkKind, VectorModel
from archive.meaning.selectors import (
    MeaningHit,
    chunk_texts,
    conversation_lines,
    nearest,
    query_vector,
)
from archive.search.selectors import Segment, snippet
from archive.store.models import Chat, Message
from meetings.models import Meeting, Transcript
from meetings.models import Segment as TranscriptLine
from notes.models import Note
from wirecat.errors import Invalid

# The meaning index's chunk kinds each of search all's kinds is found by.
CHUNK_KINDS = {
    "message": "conversation",
    "mail": "conversation",
    "conversation": "conversation",
    "note": "note",
    "meeting": "transcript",
    "file": "file",
}
# What of a thing "more like this" embeds: its first characters (the model reads about a
# paragraph; more is cut off by its tokenizer anyway).
LIKE_CHARS = 1_000
LIKE_KINDS = ("message", "note", "meeting", "conversation")
_LIKE_USAGE = "like: a reference to a message:, note:, meeting: or conversation:"


@dataclass(frozen=True)
class Found:
    """A thing one ranked list holds, before the lists are fused: its kind, its typed
    reference, and what an item shows of it (see `everything.Item`)."""

    kind: str
    ref: str
    title: str
    snippet: tuple[Segment, ...]
    when: datetime | None
    target: Any = None
    at_ms: int | None = None


@dataclass
class MeaningLists:
    """Per kind, its things nearest in meaning, best first; the kinds that could not
    answer and why (the index's own reasons); the hits left out as stale."""

    lists: dict[str, list[Found]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    stale: int = 0


def anything_embedded() -> bool:
    """Whether any vector was ever made (else a search need not load the model)."""
    return VectorModel.objects.exists()


def meaning_lists(
    vector: np.ndarray,
    kinds: Collection[str],
    *,
    most: int,
    exclude: Collection[tuple[str, int]] = (),
) -> MeaningLists:
    """Up to `most` things of each of `kinds` nearest to `vector`, best first."""
    chunk_kinds = {CHUNK_KINDS[kind] for kind in kinds}
    answer = nearest(vector, kinds=chunk_kinds, most=most, exclude=exclude)
    found = MeaningLists(stale=answer.stale)
    for kind in kinds:
        reason = answer.skipped.get(CHUNK_KINDS[kind])
        if reason:
            found.skipped[kind] = reason
    conversations = answer.hits.get("conversation", [])
    if conversations and {"message", "mail"} & set(kinds):
        messages, mail = _messages(
            conversations, most=most, wanted={"message", "mail"} & set(kinds)
        )
        if "message" in kinds:
            found.lists["message"] = messages[:most]
        if "mail" in kinds:
            found.lists["mail"] = mail[:most]
    if conversations and "conversation" in kinds:
        found.lists["conversation"] = _conversations(conversations)
    if answer.hits.get("note") and "note" in kinds:
        found.lists["note"] = _notes(answer.hits["note"])
    if answer.hits.get("transcript") and "meeting" in kinds:
        found.lists["meeting"] = _meetings(answer.hits["transcript"])
    if answer.hits.get("file") and "file" in kinds:
        found.lists["file"] = _files(answer.hits["file"])
    return found


def start_of(text: str) -> tuple[Segment, ...]:
    """A meaning hit's snippet: the start of its text, on one line, nothing marked."""
    return snippet(" ".join(text.split()), [])


def message_title(message: Message) -> str:
    """What an item of a message is called: its chat, else its sender."""
    if message.chat.title:
        return message.chat.title
    sender = message.sender
    return (sender.display_name or sender.handle or sender.email) if sender else "a message"


def message_found(message: Message, kind: str, shown: tuple[Segment, ...]) -> Found:
    return Found(
        kind=kind,
        ref=f"message:{message.public_id}",
        title=message_title(message),
        snippet=shown,
        when=message.sent_at,
        target=message,
    )


# Conversation hits whose messages are read at a time, until the lists asked for are full.
_HITS_AT_ONCE = 10


def _messages(
    hits: list[MeaningHit], *, most: int, wanted: set[str]
) -> tuple[list[Found], list[Found]]:
    """The messages each conversation chunk holds, chunk by chunk, in the chat's order,
    until `most` of each kind `wanted` are found: (messages, mail)."""
    mail_chats = set(
        Chat.objects.filter(
            pk__in={hit.chunk.chat_id for hit in hits}, account__provider__in=MAIL_PROVIDERS
        ).values_list("pk", flat=True)
    )
    ranked: dict[str, list[int]] = {"message": [], "mail": []}
    for start in range(0, len(hits), _HITS_AT_ONCE):
        if all(len(ranked[kind]) >= most for kind in wanted):
            break
        part = hits[start : start + _HITS_AT_ONCE]
        lines = conversation_lines(hit.source_id for hit in part)
        for hit in part:
            ids = [message_id for message_id, _ in lines.get(hit.source_id, [])]
            first, last = hit.chunk.first_id, hit.chunk.last_id
            if first in ids and last in ids:
                kind = "mail" if hit.chunk.chat_id in mail_chats else "message"
                ranked[kind].extend(ids[ids.index(first) : ids.index(last) + 1])
    lists: dict[str, list[Found]] = {"message": [], "mail": []}
    for kind, ids in ranked.items():
        if kind not in wanted:
            continue
        order = list(dict.fromkeys(ids))[: most * 2]  # room for a few deleted since
        found = Message.objects.select_related("chat", "sender").in_bulk(order)
        for message_id in order:
            message = found.get(message_id)
            if message is None or message.deleted_at is not None:
                continue
            lists[kind].append(message_found(message, kind, start_of(message.text)))
            if len(lists[kind]) >= most:
                break
    return lists["message"], lists["mail"]


def _conversations(hits: list[MeaningHit]) -> list[Found]:
    views = conversations_by_ids([hit.source_id for hit in hits])
    found: list[Found] = []
    for hit in hits:
        view = views.get(hit.source_id)
        if view is None:
            continue
        found.append(
            Found(
                kind="conversation",
                ref=f"conversation:{view.public_id}",
                title=view.title,
                snippet=start_of(hit.text),
                when=view.last_at,
                target=view,
            )
        )
    return found


def _notes(hits: list[MeaningHit]) -> list[Found]:
    notes = Note.objects.in_bulk([hit.source_id for hit in hits])
    found: list[Found] = []
    for hit in hits:
        note = notes.get(hit.source_id)
        if note is None:
            continue
        # The chunk's text starts with the note's title, which the item shows already.
        text = hit.text.removeprefix(note.title.strip()).strip() or hit.text
        found.append(
            Found(
                kind="note",
                ref=f"note:{note.public_id}",
                title=note.title,
                snippet=start_of(text),
                when=note.updated_at,
                target=note,
            )
        )
    return found


def _meetings(hits: list[MeaningHit]) -> list[Found]:
    transcripts = Transcript.objects.select_related("meeting").in_bulk(
        [hit.source_id for hit in hits]
    )
    starts = dict(
        TranscriptLine.objects.filter(pk__in=[hit.chunk.first_id for hit in hits]).values_list(
            "pk", "start_ms"
        )
    )
    found: list[Found] = []
    seen: set[int] = set()
    for hit in hits:
        transcript = transcripts.get(hit.source_id)
        if transcript is None or transcript.meeting_id in seen:
            continue
        seen.add(transcript.meeting_id)
        meeting = transcript.meeting
        found.append(
            Found(
                kind="meeting",
                ref=f"meeting:{meeting.public_id}",
                title=meeting.title,
                snippet=start_of(hit.text),
                when=meeting.start,
                target=meeting,
                at_ms=starts.get(hit.chunk.first_id),
            )
        )
    return found


def _files(hits: list[MeaningHit]) -> list[Found]:
    texts = AttachmentText.objects.select_related("attachment__message__chat").in_bulk(
        [hit.source_id for hit in hits]
    )
    found: list[Found] = []
    for hit in hits:
        row = texts.get(hit.source_id)
        if row is None:
            continue
        name = row.attachment.file_name
        text = hit.text.removeprefix(name.strip()).strip() or hit.text
        found.append(
            Found(
                kind="file",
                ref=f"attachment:{row.attachment.public_id}",
                title=name,
                snippet=start_of(text),
                when=row.attachment.message.sent_at,
                target=row,
            )
        )
    return found


# --- more like this ------------------------------------------------------------------------


@dataclass(frozen=True)
class Reference:
    """What "more like this" starts from: its reference, the text embedded, and the chunk
    sources to leave out of the nearest (kind, source id)."""

    ref: str
    text: str
    exclude: tuple[tuple[str, int], ...] = ()

    def vector(self) -> np.ndarray:
        return query_vector(self.text)


def reference(like: str) -> Reference:
    """The thing `like` names (`message:msg_…`, `note:note_…`, `meeting:mtg_…`,
    `conversation:cnv_…`). Invalid, naming it, when it is no such reference or names
    nothing stored, or nothing with text to compare."""
    kind, _, public_id = like.strip().partition(":")
    public_id = public_id.strip()
    if kind not in LIKE_KINDS or not public_id:
        raise Invalid(_LIKE_USAGE)
    ref = f"{kind}:{public_id}"
    found: Reference | None
    if kind == "message":
        found = _message_reference(ref, public_id)
    elif kind == "note":
        found = _note_reference(ref, public_id)
    elif kind == "meeting":
        found = _meeting_reference(ref, public_id)
    else:
        found = _conversation_reference(ref, public_id)
    if found is None:
        raise Invalid(f"like: {ref} names nothing stored")
    if not found.text.strip():
        raise Invalid(f"like: {ref} has no text to compare with")
    return found


def _message_reference(ref: str, public_id: str) -> Reference | None:
    message = Message.objects.filter(public_id=public_id, deleted_at__isnull=True).first()
    return None if message is None else Reference(ref, message.text[:LIKE_CHARS])


def _note_reference(ref: str, public_id: str) -> Reference | None:
    note = Note.objects.filter(public_id=public_id).first()
    if note is None:
        return None
    text = f"{note.title}\n\n{note.body}"[:LIKE_CHARS]
    return Reference(ref, text, exclude=(("note", note.pk),))


def _meeting_reference(ref: str, public_id: str) -> Reference | None:
    meeting = Meeting.objects.filter(public_id=public_id).first()
    if meeting is None:
        return None
    transcripts = list(Transcript.objects.filter(meeting=meeting).values_list("pk", flat=True))
    parts = [meeting.title, meeting.description]
    size = sum(len(part) for part in parts)
    lines = TranscriptLine.objects.filter(transcript_id__in=transcripts).order_by(
        "transcript_id", "seq"
    )
    for text in lines.values_list("text", flat=True).iterator():
        if size >= LIKE_CHARS:
            break
        parts.append(text)
        size += len(text)
    text = "\n".join(part for part in parts if part.strip())[:LIKE_CHARS]
    return Reference(ref, text, exclude=tuple(("transcript", pk) for pk in transcripts))


def _conversation_reference(ref: str, public_id: str) -> Reference | None:
    view = conversation_by_public_id(public_id)
    if view is None:
        return None
    first = (
        Chunk.objects.filter(kind=ChunkKind.CONVERSATION, source_id=view.id).order_by("pk").first()
    )
    text = chunk_texts([first]).get(first.pk) if first is not None else None
    if text is None:
        # Not cut yet (or changed since): the start of its messages as they stand.
        lines = conversation_lines([view.id]).get(view.id, [])
        text = "\n".join(line for _, line in lines if line.strip())
    return Reference(ref, text[:LIKE_CHARS], exclude=(("conversation", view.id),))
