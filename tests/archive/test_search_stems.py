"""The stems index: written by Python from a queue, per-script stemmers, rebuilt when the
analyzer changes, kept right through edits and purges, filled by the index job once a batch
commits — never by a search, which reads it as it stands and says when it is behind."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import Client

from archive.search.analyzer import Analyzer, latin_choices
from archive.search.jobs import search_stems_drain
from archive.search.models import SearchConfig
from archive.search.selectors import message_search
from archive.search.services.index import stems_drain
from archive.store.effects import STEMS_QUEUED, Effect
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
    stems_drain()  # the index job, once the batch commits
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


WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE", "CREATE", "DROP", "SAVEPOINT", "BEGIN")


def statements_of(action: Callable[[], object]) -> list[str]:
    """Every SQL statement `action` sends to the store."""
    seen: list[str] = []

    def record(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        seen.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        action()
    return seen


def writes(statements: list[str]) -> list[str]:
    return [sql for sql in statements if sql.lstrip().upper().startswith(WRITES)]


def test_a_search_never_writes_and_says_when_the_stems_are_behind(owner_client: Client) -> None:
    batch_record(batch=batch(message("1", "the cats are sleeping")))
    assert queued() == 1
    # Never indexed: the words index answers alone ("cat" is only a stem of "cats").
    statements = statements_of(lambda: message_search(query="cat"))
    assert statements and writes(statements) == []
    page = message_search(query="cat")
    assert (page.hits, page.stems_behind) == ([], True)
    assert found("cats") == ["1"]
    assert queued() == 1  # the queue is the index job's, not the search's

    search_stems_drain.run()  # the index job (on the batch's commit, and every minute)
    page = message_search(query="cat")
    assert [h.message.external_id for h in page.hits] == ["1"] and not page.stems_behind

    batch_record(batch=batch(message("2", "two cats, one mat", minutes=1)))
    statements = statements_of(lambda: message_search(query="cat"))
    assert writes(statements) == []
    page = message_search(query="cat")
    # The stems index answers for what it holds, the words index for what waits.
    assert [h.message.external_id for h in page.hits] == ["1"] and page.stems_behind
    assert found("cats") == ["2", "1"]
    # The page and the API say so; neither fills the queue.
    html = owner_client.get("/search/", {"q": "cat"}).content.decode()
    assert "Word forms are still being indexed" in html
    answer = owner_client.get("/api/search/messages", {"q": "cat"}).json()
    assert answer["stems_behind"] is True and len(answer["hits"]) == 1
    assert queued() == 1
    search_stems_drain.run()
    assert found("cat") == ["2", "1"]
    answer = owner_client.get("/api/search/messages", {"q": "cat"}).json()
    assert answer["stems_behind"] is False and len(answer["hits"]) == 2
    assert "Word forms are still being indexed" not in (
        owner_client.get("/search/", {"q": "cat"}).content.decode()
    )


def test_a_new_analyzer_is_used_only_once_the_job_has_rebuilt_the_index() -> None:
    batch_record(batch=batch(message("1", "ella corre cada mañana")))
    stems_drain()
    SearchConfig.objects.filter(pk=1).update(latin_stemmers="english,spanish")
    # The index holds English stems only: a search does not mix them with Spanish ones.
    assert writes(statements_of(lambda: message_search(query="corriendo"))) == []
    assert message_search(query="corriendo").stems_behind and found("corriendo") == []
    stems_drain()
    assert found("corriendo") == ["1"]


def _stems(effects: list[Effect]) -> list[Effect]:
    """The stems' effects among a commit's (the conversations ask for their build too)."""
    return [effect for effect in effects if effect.name == STEMS_QUEUED]


def test_the_sinks_commit_asks_the_index_job_for_the_stems(
    celery_inline: None, committed: Any
) -> None:
    with committed() as first:
        batch_record(batch=batch(message("1", "the cats are sleeping")))
    assert _stems(first) == [Effect(STEMS_QUEUED)]
    assert queued() == 0 and found("cat") == ["1"]  # the job ran once the batch committed
    with committed() as again:
        batch_record(batch=batch(message("1", "the cats are sleeping")))
    assert again == []  # nothing changed: nothing to index
    with committed() as edited:
        batch_record(batch=batch(message("1", "dogs barking", edited_at=T0 + timedelta(minutes=5))))
    assert _stems(edited) == [Effect(STEMS_QUEUED)] and found("dog") == ["1"] and found("cat") == []
    with committed() as purged:
        message_purge(message_ids=[Message.objects.get().pk])
    assert _stems(purged) == [Effect(STEMS_QUEUED)] and stem_rows("dog") == set()
