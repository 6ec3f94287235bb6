"""The stems index: written by Python from a queue, per-script stemmers, rebuilt when the
analyzer changes, kept right through edits and purges, drained before every search."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection

from archive.search.analyzer import Analyzer, latin_choices
from archive.search.models import SearchConfig
from archive.search.selectors import message_search
from archive.search.services.index import stems_drain
from archive.store.models import Message
from archive.store.sink import batch_record, message_purge
from tests.factories import T0, batch, message

pytestmark = pytest.mark.django_db


def stem_rows(stem: str) -> set[int]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT rowid FROM message_stems WHERE message_stems MATCH %s", [f'"{stem}"']
        )
        return {row[0] for row in cursor.fetchall()}


def queued() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM archive_stem_queue")
        return int(cursor.fetchone()[0])


def found(query: str, **options: object) -> list[str]:
    return [h.message.external_id for h in message_search(query=query, **options).hits]


def test_the_analyzer_picks_the_stemmer_by_script() -> None:
    english = Analyzer()
    assert english.stems("Running runs, книгами! 2024") == "run run книг"
    assert english.word_stems("Running") == ("run",)
    assert english.word_stems("книгами") == ("книг",)  # Cyrillic: Russian, whatever the setting
    assert english.word_stems("2024") == ()
    both = Analyzer(latin=("english", "spanish"))
    assert set(both.word_stems("corriendo")) == {"corriendo", "corr"}
    assert "latin=english+spanish" in both.signature and "snowballstemmer" in both.signature
    assert english.signature != both.signature
    with pytest.raises(ValueError, match="unknown stemmer klingon"):
        latin_choices("english, klingon")


def test_words_find_other_forms_and_exact_forms_rank_first() -> None:
    batch_record(
        batch=batch(
            message("1", "she runs every day", minutes=0),
            message("2", "I was running late", minutes=1),
            message("3", "the runner's high", minutes=2),
            message("4", "Книга лежит на столе", minutes=3, chat="chat-2"),
            message("5", "nothing related", minutes=4),
        )
    )
    hits = message_search(query="running").hits
    assert [h.message.external_id for h in hits] == ["2", "1"]  # the exact form first
    assert hits[0].score is not None and hits[1].score is None
    assert [s.text for s in hits[1].snippet if s.hit] == ["runs"]
    assert found("книгами") == ["4"]
    assert found("exact:running") == ["2"]  # exact: never uses stems
    assert found("-running") == ["5", "4", "3"]  # excluded in every form


def test_more_latin_stemmers_are_a_store_setting_and_rebuild_the_index() -> None:
    batch_record(batch=batch(message("1", "ella corre cada mañana")))
    assert found("corriendo") == []  # English only: no Spanish stems
    SearchConfig.objects.update_or_create(pk=1, defaults={"latin_stemmers": "english,spanish"})
    result = stems_drain()
    assert result.rebuilt and result.indexed == 1 and result.left == 0
    assert SearchConfig.objects.get().stems_analyzer == result.analyzer.signature
    assert found("corriendo") == ["1"]
    assert stems_drain().rebuilt is False  # the same analyzer again: nothing to rebuild


def test_the_index_follows_edits_tombstones_and_purges() -> None:
    batch_record(batch=batch(message("1", "walking the dog")))
    stems_drain()
    msg = Message.objects.get()
    assert stem_rows("walk") == {msg.pk}
    batch_record(batch=batch(message("1", "swimming instead", edited_at=T0 + timedelta(minutes=5))))
    assert queued() == 1  # the edit queued it
    stems_drain()
    assert stem_rows("walk") == set() and stem_rows("swim") == {msg.pk}
    message_purge(message_ids=[msg.pk])
    stems_drain()
    assert stem_rows("swim") == set() and queued() == 0


def test_a_search_drains_the_queue_first() -> None:
    batch_record(batch=batch(message("1", "the cats are sleeping")))
    assert queued() == 1
    assert found("cat") == ["1"]  # only the stems index has "cat"
    assert queued() == 0
