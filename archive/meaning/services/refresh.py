"""`embeddings_refresh`: bring the meaning index up to its sources, bounded.

In order: retire the vectors of a model the setting no longer names; cut the sources that
are due (readiness, one query); embed the chunks that have no vector for the model,
newest sources first, reading each chunk's text again and embedding it only when it still
hashes as it did when it was cut (one whose source changed since waits to be cut again);
forget vectors no chunk holds any more. The model runs outside any transaction; each batch
of vectors is written in one short transaction.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from django.db import connection

from archive.meaning.model import current_spec, embedder
from archive.meaning.models import Chunk, ChunkKind, VectorModel
from archive.meaning.services.cutting import source_cut, sources_due
from archive.meaning.services.vectors import (
    model_row,
    models_retire,
    orphans_forget,
    vectors_write,
)
from archive.meaning.texts import chunk_texts, fresh

# The effect a write asks for when it made something to embed (a conversation build); the
# meaning job answers it (archive/meaning/jobs.py).
EMBEDDINGS_DUE = "meaning.embeddings_due"
EMBED_BATCH = 32  # chunks read, embedded and written at a time
ORPHANS_AT_ONCE = 5_000

# A chunk with no vector of the model (the chunks of conversations, notes, transcripts and
# files alike).
_MISSING = (
    "NOT EXISTS (SELECT 1 FROM archive_vector AS v"
    " WHERE v.model_id = %s AND v.kind = c.kind AND v.sha = c.sha)"
)
# A page of them, newest first (a chunk's id grows with its cutting).
_WAITING_SQL = (
    f"SELECT c.id FROM archive_chunk AS c WHERE {_MISSING} AND c.id < %s {{chat}}"
    " ORDER BY c.id DESC LIMIT %s"
)
_WAITING_COUNT_SQL = f"SELECT COUNT(*) FROM archive_chunk AS c WHERE {_MISSING} {{chat}}"


@dataclass
class Refresh:
    model: str
    retired: list[str] = field(default_factory=list)
    sources_cut: int = 0
    sources_left: int = 0
    embedded: int = 0
    changed: int = 0  # chunks whose source changed since they were cut: cut again later
    forgotten: int = 0
    seconds: float = 0.0
    more: bool = False  # a bound stopped it: another run goes on

    def summary(self) -> str:
        parts = [f"{self.embedded} chunk{'' if self.embedded == 1 else 's'} embedded"]
        if self.sources_cut:
            parts.append(f"{self.sources_cut} sources cut")
        if self.changed:
            parts.append(f"{self.changed} changed since cut")
        if self.retired:
            parts.append(f"vectors of {', '.join(self.retired)} dropped")
        if self.more:
            parts.append("more to do")
        return f"meaning ({self.model}): " + ", ".join(parts)


Progress = Callable[[int, int], None]  # (done, of) chunks


def embeddings_refresh(
    *,
    most_chunks: int = 2_000,
    most_sources: int = 500,
    seconds: float | None = None,
    chat: int | None = None,
    progress: Progress | None = None,
) -> Refresh:
    """One bounded pass: at most `most_sources` sources cut, `most_chunks` chunks
    embedded, and (when given) about `seconds` spent; `chat` only that chat's
    conversations."""
    began = time.monotonic()
    spec = current_spec()
    run = Refresh(model=spec.name)
    run.retired = models_retire(spec.name)
    model = model_row(spec)
    kinds = (ChunkKind.CONVERSATION,) if chat is not None else tuple(ChunkKind)
    due = sources_due(kinds=kinds, chat=chat)
    for item in due[:most_sources]:
        source_cut(item)
        run.sources_cut += 1
        if seconds is not None and time.monotonic() - began > seconds:
            break
    run.sources_left = len(due) - run.sources_cut
    run.embedded, run.changed, stopped = _embed(model, most_chunks, seconds, began, chat, progress)
    run.forgotten = orphans_forget(model, ORPHANS_AT_ONCE) if chat is None else 0
    run.more = run.sources_left > 0 or stopped
    run.seconds = time.monotonic() - began
    return run


def waiting_count(model: VectorModel, chat: int | None = None) -> int:
    """Chunks with no vector of `model` (of one chat's conversations)."""
    params: list[int] = [model.pk]
    if chat is not None:
        params.append(chat)
    with connection.cursor() as cursor:
        cursor.execute(
            _WAITING_COUNT_SQL.format(chat="AND c.chat_id = %s" if chat is not None else ""),
            params,
        )
        return int(cursor.fetchone()[0])


def _embed(
    model: VectorModel,
    most: int,
    seconds: float | None,
    began: float,
    chat: int | None,
    progress: Progress | None,
) -> tuple[int, int, bool]:
    """Embed up to `most` waiting chunks: (embedded, changed since cut, stopped by a bound)."""
    total = min(waiting_count(model, chat), most)
    sql = _WAITING_SQL.format(chat="AND c.chat_id = %s" if chat is not None else "")
    embedded = changed = done = 0
    below = 2**62
    model_of = embedder()
    while done < most:
        params: list[int] = [model.pk, below]
        if chat is not None:
            params.append(chat)
        params.append(min(EMBED_BATCH, most - done))
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            ids = [int(row[0]) for row in cursor.fetchall()]
        if not ids:
            return embedded, changed, False
        below = min(ids)
        chunks = list(Chunk.objects.filter(pk__in=ids).order_by("-id"))
        texts = chunk_texts(chunks)
        keyed: dict[tuple[int, bytes], str] = {}
        for chunk in chunks:
            text = texts.get(chunk.pk)
            if not fresh(chunk, text):
                changed += 1
                continue
            keyed.setdefault((chunk.kind, bytes(chunk.sha)), str(text))
        if keyed:
            keys = list(keyed)
            embedded += vectors_write(model, keys, model_of.embed([keyed[k] for k in keys]))
        done += len(ids)
        if progress is not None:
            progress(min(done, total), total)
        if seconds is not None and time.monotonic() - began > seconds:
            return embedded, changed, True
    return embedded, changed, waiting_count(model, chat) > 0
