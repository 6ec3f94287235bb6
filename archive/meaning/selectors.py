"""Reading the meaning index: how ready it is, and the chunks nearest in meaning to a text.

A search embeds its text with the setting's model, asks the model's vec0 table for the
nearest vectors of each kind (exact: sqlite-vec compares with every vector of the kind),
finds the chunks holding those texts, and reads each chunk's text again from its source:
one whose source changed since it was cut is left out and counted (`stale`), so a search
never shows what the source no longer says. One hit per source (its best chunk).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

import numpy as np
from django.db import connection

from archive.meaning.model import current_spec, embedder
from archive.meaning.models import Chunk, ChunkKind, VectorModel
from archive.meaning.services.cutting import due_sql
from archive.meaning.texts import chunk_texts, fresh
from archive.meaning.texts import conversation_lines as conversation_lines

KIND_NAMES = {kind: kind.label for kind in ChunkKind}
# Nearest vectors asked of the index per hit wanted: room for stale chunks and several
# chunks of one source.
OVERFETCH = 3
MAX_K = 1_000  # sqlite-vec's own ceiling on k is 4,096
# Farther than this (cosine similarity below 0.2) a chunk is not taken as meaning the same:
# unrelated texts sit 0.8 to 1.1 from each other under this model, paraphrases 0.4 to 0.7.
# A search for nonsense finds nothing by meaning rather than the 50 least unrelated chunks;
# on the held-out evaluation's tuning half, floors from 0.7 to 0.85 changed no figure.
MAX_DISTANCE = 0.8


@dataclass(frozen=True)
class KindReadiness:
    kind: str
    sources_due: int  # sources to cut (again)
    chunks: int
    embedded: int

    @property
    def waiting(self) -> int:
        return self.chunks - self.embedded

    @property
    def ready(self) -> bool:
        return self.sources_due == 0 and self.waiting == 0


@dataclass(frozen=True)
class Readiness:
    model: str
    kinds: dict[str, KindReadiness]

    @property
    def chunks(self) -> int:
        return sum(k.chunks for k in self.kinds.values())

    @property
    def embedded(self) -> int:
        return sum(k.embedded for k in self.kinds.values())

    @property
    def sources_due(self) -> int:
        return sum(k.sources_due for k in self.kinds.values())

    @property
    def ready(self) -> bool:
        return all(k.ready for k in self.kinds.values())

    @property
    def percent(self) -> int:
        return 100 if not self.chunks else int(100 * self.embedded / self.chunks)


def readiness() -> Readiness:
    """Per kind: sources due to be cut, chunks, and chunks with the setting's model's
    vector — one query."""
    spec = current_spec()
    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH due AS ({due_sql()}),"
            " model AS (SELECT id FROM archive_vectormodel WHERE name = %s)"
            " SELECT k.kind,"
            " (SELECT COUNT(*) FROM due WHERE due.kind = k.kind),"
            " (SELECT COUNT(*) FROM archive_chunk AS c WHERE c.kind = k.kind),"
            " (SELECT COUNT(*) FROM archive_chunk AS c WHERE c.kind = k.kind AND EXISTS"
            "   (SELECT 1 FROM archive_vector AS v WHERE v.model_id = (SELECT id FROM model)"
            "    AND v.kind = c.kind AND v.sha = c.sha))"
            " FROM ("
            + " UNION ALL ".join(f"SELECT {int(k)} AS kind" for k in ChunkKind)
            + ") AS k",
            [spec.name],
        )
        rows = cursor.fetchall()
    return Readiness(
        model=spec.name,
        kinds={
            KIND_NAMES[ChunkKind(kind)]: KindReadiness(KIND_NAMES[ChunkKind(kind)], due, n, done)
            for kind, due, n, done in rows
        },
    )


@dataclass(frozen=True)
class MeaningHit:
    """The best chunk of one source: its kind, the source's row (conversation, note,
    transcript, attachment), the cosine distance (0 same, 2 opposite) and its text."""

    chunk: Chunk
    distance: float
    text: str

    @property
    def kind(self) -> str:
        return KIND_NAMES[ChunkKind(self.chunk.kind)]

    @property
    def source_id(self) -> int:
        return self.chunk.source_id


@dataclass
class MeaningAnswer:
    model: str
    hits: dict[str, list[MeaningHit]] = field(default_factory=dict)
    stale: int = 0  # hits left out: their source changed since they were cut
    # Kinds that could not answer, and why (nothing embedded yet).
    skipped: dict[str, str] = field(default_factory=dict)


def _model() -> VectorModel | None:
    return VectorModel.objects.filter(name=current_spec().name).first()


def query_vector(text: str) -> np.ndarray:
    return embedder().embed([text])[0]


def nearest(
    vector: np.ndarray,
    *,
    kinds: Collection[str],
    most: int = 50,
    exclude: Collection[tuple[str, int]] = (),
) -> MeaningAnswer:
    """Up to `most` sources of each of `kinds` ("conversation", "note", "transcript",
    "file") nearest to `vector`, best first; `exclude` (kind, source id) pairs are left
    out (the thing "more like this" started from)."""
    answer = MeaningAnswer(model=current_spec().name)
    model = _model()
    wanted = [kind for kind in ChunkKind if KIND_NAMES[kind] in kinds]
    if model is None:
        for kind in wanted:
            answer.skipped[KIND_NAMES[kind]] = "nothing is embedded yet"
        return answer
    probe = np.asarray(vector, dtype=np.float32).tobytes()
    k = min(max(most, 1) * OVERFETCH, MAX_K)
    for kind in wanted:
        name = KIND_NAMES[kind]
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT rowid, distance FROM {model.vec_table}"
                " WHERE embedding MATCH %s AND k = %s AND kind = %s",
                [probe, k, int(kind)],
            )
            found = [(int(rowid), float(distance)) for rowid, distance in cursor.fetchall()]
        if not found:
            answer.skipped[name] = f"no {name} is embedded yet"
            answer.hits[name] = []
            continue
        found = [(rowid, how_far) for rowid, how_far in found if how_far <= MAX_DISTANCE]
        answer.hits[name], stale = _sources(model, kind, found, most, set(exclude))
        answer.stale += stale
    return answer


def _sources(
    model: VectorModel,
    kind: ChunkKind,
    found: list[tuple[int, float]],
    most: int,
    exclude: set[tuple[str, int]],
) -> tuple[list[MeaningHit], int]:
    distance = dict(found)
    with connection.cursor() as cursor:
        marks = ",".join("%s" for _ in found)
        cursor.execute(
            "SELECT v.id, c.id FROM archive_vector AS v"
            " JOIN archive_chunk AS c ON c.kind = v.kind AND c.sha = v.sha"
            f" WHERE v.id IN ({marks})",
            [rowid for rowid, _ in found],
        )
        pairs = cursor.fetchall()
    chunks = Chunk.objects.in_bulk([chunk_id for _, chunk_id in pairs])
    ranked = sorted(
        ((distance[int(v)], chunks[int(c)]) for v, c in pairs if int(c) in chunks),
        key=lambda pair: (pair[0], pair[1].pk),
    )
    name = KIND_NAMES[kind]
    hits: list[MeaningHit] = []
    seen: set[int] = set()
    stale = 0
    # The best chunk of each source first, read from its source a few at a time: a stale
    # one gives way to the source's next chunk or the next source.
    waiting = [pair for pair in ranked if (name, pair[1].source_id) not in exclude]
    while waiting and len(hits) < most:
        batch: list[tuple[float, Chunk]] = []
        rest: list[tuple[float, Chunk]] = []
        sources: set[int] = set()
        for pair in waiting:
            source = pair[1].source_id
            if source in seen:
                continue
            if source in sources or len(batch) >= most - len(hits):
                rest.append(pair)
                continue
            sources.add(source)
            batch.append(pair)
        texts = chunk_texts([chunk for _, chunk in batch])
        for how_far, chunk in batch:
            text = texts.get(chunk.pk)
            if not fresh(chunk, text):
                stale += 1
                continue
            seen.add(chunk.source_id)
            hits.append(MeaningHit(chunk=chunk, distance=how_far, text=str(text)))
        waiting = rest
    hits.sort(key=lambda hit: (hit.distance, hit.chunk.pk))
    return hits, stale


def meaning_search(text: str, *, kinds: Collection[str], most: int = 50) -> MeaningAnswer:
    """The sources of `kinds` nearest in meaning to `text`."""
    if _model() is None:
        return nearest(np.zeros(current_spec().dims, dtype=np.float32), kinds=kinds, most=most)
    return nearest(query_vector(text), kinds=kinds, most=most)
