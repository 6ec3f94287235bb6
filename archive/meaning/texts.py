"""Reading the text of chunks from their sources, as they stand now.

One reader for the refresh (which embeds a chunk only when its text still hashes as it did
when it was cut) and for a search (which drops a hit whose source changed since): a chunk's
text is never stored, so both read it here, the same way.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from django.db import connection

from archive.files.models import AttachmentText
from archive.meaning.chunks import document_text, lines_text, text_sha
from archive.meaning.models import Chunk, ChunkKind
from meetings.models import Segment
from notes.models import Note

Lines = list[tuple[int, str]]

# A conversation's live messages in its order (the messages of the build's links; one
# tombstoned since the build is left out, so its chunks no longer hash the same).
_CONVERSATION_LINES = (
    "SELECT l.conversation_id, m.id, m.text FROM archive_conversationlink AS l"
    " JOIN archive_message AS m ON m.id = l.message_id"
    " WHERE l.conversation_id IN ({}) AND m.deleted_at IS NULL"
    " ORDER BY l.conversation_id, m.sent_at, m.id"
)


def conversation_lines(conversation_ids: Iterable[int]) -> dict[int, Lines]:
    ids = sorted({int(pk) for pk in conversation_ids})
    found: dict[int, Lines] = defaultdict(list)
    for start in range(0, len(ids), 500):
        part = ids[start : start + 500]
        with connection.cursor() as cursor:
            cursor.execute(_CONVERSATION_LINES.format(",".join("%s" for _ in part)), part)
            for conversation_id, message_id, text in cursor.fetchall():
                found[int(conversation_id)].append((int(message_id), text or ""))
    return found


def transcript_lines(transcript_ids: Iterable[int]) -> dict[int, Lines]:
    found: dict[int, Lines] = defaultdict(list)
    rows = (
        Segment.objects.filter(transcript_id__in=set(transcript_ids))
        .order_by("transcript_id", "seq")
        .values_list("transcript_id", "id", "text")
    )
    for transcript_id, segment_id, text in rows:
        found[int(transcript_id)].append((int(segment_id), text or ""))
    return found


# The segments from one to another of the same transcript, in its order: a chunk's lines
# only (an hour's transcript holds about 900).
_SEGMENT_RANGE = (
    "SELECT g.id, g.text FROM meetings_segment AS a"
    " JOIN meetings_segment AS b ON b.id = %s AND b.transcript_id = a.transcript_id"
    " JOIN meetings_segment AS g ON g.transcript_id = a.transcript_id"
    " AND g.seq BETWEEN a.seq AND b.seq"
    " WHERE a.id = %s ORDER BY g.seq"
)


def segment_range(first_id: int, last_id: int) -> Lines:
    with connection.cursor() as cursor:
        cursor.execute(_SEGMENT_RANGE, [last_id, first_id])
        return [(int(pk), text or "") for pk, text in cursor.fetchall()]


def note_document(note: Note) -> tuple[str, str]:
    return note.title, note.body


def file_title(text: AttachmentText) -> str:
    return text.attachment.file_name


def chunk_texts(chunks: Sequence[Chunk]) -> dict[int, str | None]:
    """Each chunk's text read from its source now (None: the source or the chunk's ends
    are gone)."""
    by_kind: dict[int, list[Chunk]] = defaultdict(list)
    for chunk in chunks:
        by_kind[chunk.kind].append(chunk)
    found: dict[int, str | None] = {}
    sources = {kind: {c.source_id for c in part} for kind, part in by_kind.items()}
    lines: dict[int, Lines] = {}
    if ChunkKind.CONVERSATION in sources:
        lines.update(conversation_lines(sources[ChunkKind.CONVERSATION]))
    for chunk in by_kind.get(ChunkKind.CONVERSATION, []):
        found[chunk.pk] = lines_text(
            lines.get(chunk.source_id, []),
            chunk.first_id,
            chunk.last_id,
            chunk.text_start,
            chunk.text_end,
        )
    for chunk in by_kind.get(ChunkKind.TRANSCRIPT, []):
        found[chunk.pk] = lines_text(
            segment_range(chunk.first_id, chunk.last_id),
            chunk.first_id,
            chunk.last_id,
            chunk.text_start,
            chunk.text_end,
        )
    if ChunkKind.NOTE in sources:
        notes = Note.objects.in_bulk(sources[ChunkKind.NOTE])
        for chunk in by_kind[ChunkKind.NOTE]:
            note = notes.get(chunk.source_id)
            found[chunk.pk] = (
                None
                if note is None
                else document_text(note.title, note.body, chunk.text_start, chunk.text_end)
            )
    if ChunkKind.FILE in sources:
        texts = AttachmentText.objects.select_related("attachment").in_bulk(sources[ChunkKind.FILE])
        for chunk in by_kind[ChunkKind.FILE]:
            row = texts.get(chunk.source_id)
            found[chunk.pk] = (
                None
                if row is None or row.state != "done"
                else document_text(file_title(row), row.text, chunk.text_start, chunk.text_end)
            )
    return found


def fresh(chunk: Chunk, text: str | None) -> bool:
    """The chunk's source still holds the text it was cut from."""
    return text is not None and text_sha(text) == bytes(chunk.sha)
