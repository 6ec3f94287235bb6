"""`embeddings_refresh` on the real store and the real model: its bounds (chunks, sources,
time), and the sources other than conversations — notes, transcripts and file texts — cut,
cut again when they change (a chunk whose text did not change keeps its vector) and
forgotten when they go."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from archive.files.services import attachment_text_extract
from archive.meaning.models import Chunk, Chunked, ChunkKind, Vector
from archive.meaning.selectors import meaning_search, readiness
from archive.meaning.services.refresh import embeddings_refresh
from meetings.models import Segment
from notes.services.notes import note_create, note_delete, note_update
from tests.files.test_services import NOTES, store_file
from tests.meetings.factories import meeting, transcript

pytestmark = pytest.mark.django_db(transaction=True)

# Two paragraphs that do not fit one chunk of 200 characters together.
FIRST = "The boiler in the basement needs its yearly service before the winter. " * 2
SECOND = "Book the plumber for the kitchen tap, which has been dripping for weeks. " * 2
THIRD = "Sell the old bike that has stood in the hall since the spring. " * 2


@pytest.fixture
def small_chunks(settings: Any) -> None:
    settings.MEANING_CHUNK_CHARS = 200


def _vectors(kind: ChunkKind) -> dict[bytes, int]:
    return {bytes(sha): pk for pk, sha in Vector.objects.filter(kind=kind).values_list("id", "sha")}


def test_the_refresh_stops_at_its_bounds_and_says_there_is_more() -> None:
    for n, title in enumerate(("Boiler", "Plumber", "Garden")):
        note_create(title=title, body=f"Item {n}: what to do about the {title.lower()}.")

    run = embeddings_refresh(most_sources=1)
    assert (run.sources_cut, run.sources_left, run.embedded, run.more) == (1, 2, 1, True)
    run = embeddings_refresh(most_chunks=1)
    assert (run.sources_cut, run.sources_left, run.embedded, run.more) == (2, 0, 1, True)
    # No time at all: one source cut, one batch embedded, then it stops.
    note_create(title="Roof", body="Check the gutters.")
    run = embeddings_refresh(seconds=0)
    assert run.sources_cut == 1 and run.more and "more to do" in run.summary()
    run = embeddings_refresh()
    assert not run.more and readiness().ready
    assert Chunk.objects.filter(kind=ChunkKind.NOTE).count() == 4 == Vector.objects.count()


def test_a_note_saved_again_is_cut_again_and_an_unchanged_chunk_keeps_its_vector(
    small_chunks: None,
) -> None:
    note = note_create(title="House", body=f"{FIRST}\n\n{SECOND}")
    embeddings_refresh()
    chunks = Chunk.objects.filter(kind=ChunkKind.NOTE, source_id=note.pk)
    assert chunks.count() == 2
    before = _vectors(ChunkKind.NOTE)
    first = chunks.order_by("text_start").first()
    assert first is not None

    note = note_update(public_id=note.public_id, revision=note.revision, body=f"{FIRST}\n\n{THIRD}")
    assert readiness().kinds["note"].sources_due == 1
    run = embeddings_refresh()
    assert run.sources_cut == 1 and run.embedded == 1 and run.forgotten == 1
    assert Chunked.objects.get(kind=ChunkKind.NOTE, source_id=note.pk).version == "r2@200"
    after = _vectors(ChunkKind.NOTE)
    assert after[bytes(first.sha)] == before[bytes(first.sha)]  # the same vector, found again
    assert len(after) == 2 and set(after) != set(before)
    best = meaning_search("selling a bicycle", kinds=["note"]).hits["note"][0]
    assert best.source_id == note.pk and "old bike" in best.text


def test_a_deleted_note_loses_its_chunks_and_vectors() -> None:
    keep = note_create(title="Keep", body="Water the plants on Sunday.")
    gone = note_create(title="Gone", body="Return the library books.")
    embeddings_refresh()
    note_delete(public_id=gone.public_id)
    assert readiness().kinds["note"].sources_due == 1  # gone, its chunks to remove
    run = embeddings_refresh()
    assert run.sources_cut == 1 and run.forgotten == 1
    assert not Chunk.objects.filter(kind=ChunkKind.NOTE, source_id=gone.pk).exists()
    assert not Chunked.objects.filter(kind=ChunkKind.NOTE, source_id=gone.pk).exists()
    assert list(Chunked.objects.values_list("source_id", flat=True)) == [keep.pk]
    assert Vector.objects.count() == 1


def test_a_transcript_is_cut_by_its_segments_and_again_when_one_is_added() -> None:
    held = meeting("Budget review", datetime(2026, 3, 2, 10, tzinfo=UTC))
    made = transcript(
        held,
        [
            ("Ann", 0, "Let us go through the budget for the next quarter."),
            ("Ben", 20, "Travel costs went up by a third."),
        ],
    )
    run = embeddings_refresh()
    assert run.sources_cut == 1 and run.embedded == 1
    chunk = Chunk.objects.get(kind=ChunkKind.TRANSCRIPT)
    segments = list(Segment.objects.filter(transcript=made).order_by("seq"))
    assert (chunk.source_id, chunk.first_id, chunk.last_id) == (
        made.pk,
        segments[0].pk,
        segments[-1].pk,
    )
    Segment.objects.create(
        transcript=made, seq=2, start_ms=40_000, end_ms=44_000, speaker="Ann", text="Agreed."
    )
    assert readiness().kinds["transcript"].sources_due == 1
    run = embeddings_refresh()
    assert run.sources_cut == 1 and run.embedded == 1 and run.forgotten == 1
    found = meaning_search("spending on trips", kinds=["transcript"]).hits["transcript"]
    assert [hit.source_id for hit in found] == [made.pk] and "Agreed." in found[0].text


def test_a_files_text_is_cut_under_its_name_and_found_by_meaning() -> None:
    attachment = store_file(NOTES, "invoice.txt", "text/plain")
    assert readiness().kinds["file"].sources_due == 0  # not read yet: nothing to cut
    row = attachment_text_extract(attachment_id=attachment.pk)
    assert row is not None and row.state == "done"
    assert readiness().kinds["file"].sources_due == 1
    run = embeddings_refresh()
    assert run.sources_cut == 1 and run.embedded == 1
    chunk = Chunk.objects.get(kind=ChunkKind.FILE)
    assert chunk.source_id == attachment.pk
    best = meaning_search("repairing the heating", kinds=["file"]).hits["file"][0]
    assert best.source_id == attachment.pk
    assert best.text.startswith("invoice.txt\n\n") and "boiler repair" in best.text
