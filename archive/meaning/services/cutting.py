"""Cutting sources into chunks: which sources are due (one query), and cutting one.

A source is due when what it was cut from (`Chunked.version`) is not what it is now: a
chat's current build and its length, a note's revision, a transcript's segments, a file
text's reading. A source that is gone (a note deleted, a file's text no longer read) has
its chunks removed. Each source is cut in one short transaction of its own.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime

from django.conf import settings
from django.db import connection, transaction

from archive.conversations.models import Conversation, ConversationState
from archive.files.models import AttachmentText
from archive.meaning.chunks import Piece, cut_document, cut_lines, document_text, text_sha
from archive.meaning.models import Chunk, Chunked, ChunkKind
from archive.meaning.texts import conversation_lines, file_title, transcript_lines
from notes.models import Note

# Each kind's sources with the version they are at now: (kind, source id, version).
_SOURCES_NOW = """
SELECT 1, s.chat_id, b.id || ':' || b.message_count || ':' || b.through_pk
  FROM archive_conversationstate AS s JOIN archive_conversationbuild AS b ON b.id = s.current_id
UNION ALL
SELECT 2, n.id, 'r' || n.revision FROM notes_note AS n
UNION ALL
SELECT 3, t.id, (SELECT COUNT(*) || ':' || COALESCE(MAX(g.id), 0) FROM meetings_segment AS g
                 WHERE g.transcript_id = t.id)
  FROM meetings_transcript AS t
UNION ALL
SELECT 4, a.attachment_id, a.made_at || ':' || a.sha256 FROM archive_attachmenttext AS a
 WHERE a.state = 'done'
"""

# Sources whose chunks are not of their version now, and chunked sources that are gone:
# (kind, source id, version now or NULL when gone). A version names the chunk limit too,
# so a changed WIRECAT_MEANING_CHUNK_CHARS cuts everything again.
_DUE_SQL = """
WITH raw(kind, source_id, version) AS ({now}),
now AS (SELECT kind, source_id, version || '@{limit}' AS version FROM raw)
SELECT n.kind, n.source_id, n.version FROM now AS n
  LEFT JOIN archive_chunked AS k ON k.kind = n.kind AND k.source_id = n.source_id
 WHERE k.version IS NOT n.version
UNION ALL
SELECT k.kind, k.source_id, NULL FROM archive_chunked AS k
 WHERE NOT EXISTS (SELECT 1 FROM now AS n WHERE n.kind = k.kind AND n.source_id = k.source_id)
"""


def due_sql() -> str:
    """The statement reading which sources are due (the limit is an int, inlined)."""
    return _DUE_SQL.format(limit=int(chunk_limit()), now=_SOURCES_NOW)


@dataclass(frozen=True)
class Due:
    kind: int
    source_id: int
    version: str | None  # None: the source is gone


def sources_due(*, kinds: tuple[int, ...] = tuple(ChunkKind), chat: int | None = None) -> list[Due]:
    """Every source whose chunks are behind it, the chats first (newest activity first)."""
    with connection.cursor() as cursor:
        cursor.execute(due_sql())
        found = [Due(int(k), int(s), v) for k, s, v in cursor.fetchall()]
    return [
        due
        for due in found
        if due.kind in kinds
        and (chat is None or (due.kind == ChunkKind.CONVERSATION and due.source_id == chat))
    ]


def chunk_limit() -> int:
    return max(int(getattr(settings, "MEANING_CHUNK_CHARS", 800)), 200)


def _chat_pieces(chat_id: int) -> list[tuple[int, Piece]]:
    state = ConversationState.objects.filter(chat_id=chat_id).first()
    if state is None or state.current_id is None:
        return []
    ids = list(Conversation.objects.filter(build_id=state.current_id).values_list("id", flat=True))
    pieces: list[tuple[int, Piece]] = []
    limit = chunk_limit()
    for start in range(0, len(ids), 2_000):
        lines = conversation_lines(ids[start : start + 2_000])
        for conversation_id, found in lines.items():
            pieces.extend((conversation_id, piece) for piece in cut_lines(found, limit))
    return pieces


def _document_pieces(title: str, text: str) -> list[Piece]:
    return [
        Piece(0, 0, start, end, document_text(title, text, start, end))
        for start, end in cut_document(text, chunk_limit())
    ] or ([Piece(0, 0, 0, 0, title.strip())] if title.strip() else [])


def _pieces(due: Due) -> list[tuple[int, Piece]]:
    if due.kind == ChunkKind.CONVERSATION:
        return _chat_pieces(due.source_id)
    if due.kind == ChunkKind.NOTE:
        note = Note.objects.filter(pk=due.source_id).first()
        return (
            [] if note is None else [(note.pk, p) for p in _document_pieces(note.title, note.body)]
        )
    if due.kind == ChunkKind.TRANSCRIPT:
        lines = transcript_lines([due.source_id]).get(due.source_id, [])
        return [(due.source_id, piece) for piece in cut_lines(lines, chunk_limit())]
    row = AttachmentText.objects.select_related("attachment").filter(pk=due.source_id).first()
    if row is None:
        return []
    return [(row.pk, p) for p in _document_pieces(file_title(row), row.text)]


def source_cut(due: Due) -> int:
    """Cut one due source again (or remove the chunks of a gone one): its chunk count."""
    pieces = _pieces(due) if due.version is not None else []
    chat = due.source_id if due.kind == ChunkKind.CONVERSATION else None
    with transaction.atomic():
        if due.kind == ChunkKind.CONVERSATION:
            Chunk.objects.filter(kind=due.kind, chat_id=due.source_id).delete()
        else:
            Chunk.objects.filter(kind=due.kind, source_id=due.source_id).delete()
        Chunk.objects.bulk_create(
            [
                Chunk(
                    kind=due.kind,
                    source_id=source_id,
                    chat_id=chat,
                    first_id=piece.first_id,
                    last_id=piece.last_id,
                    text_start=piece.text_start,
                    text_end=piece.text_end,
                    sha=text_sha(piece.text),
                    chars=len(piece.text),
                )
                for source_id, piece in pieces
            ],
            batch_size=500,
        )
        if due.version is None:
            Chunked.objects.filter(kind=due.kind, source_id=due.source_id).delete()
        else:
            Chunked.objects.update_or_create(
                kind=due.kind,
                source_id=due.source_id,
                defaults={
                    "version": due.version,
                    "chunks": len(pieces),
                    "chunked_at": datetime.now(UTC),
                },
            )
    return len(pieces)


def chunks_by_kind() -> dict[int, int]:
    found: dict[int, int] = defaultdict(int)
    for kind, count in Chunked.objects.values_list("kind", "chunks"):
        found[kind] += count
    return dict(found)
