"""A store made by an earlier WireCat migrates forward and keeps every row.

The store is built by the migrations as they stood at the last release before the
capability split (archive 0019, tasks 0001): a row goes into every table those
migrations made, through the historical models. Then every later migration runs, and
each table must still hold its rows, the message must still be found by its words.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.db import connection, models
from django.db.migrations.executor import MigrationExecutor

RELEASED = [("archive", "0019_syncrun_deleted"), ("tasks", "0001_initial")]


def _value(field: models.Field, made: dict[str, Any], serial: int) -> Any:
    if field.choices:
        return field.choices[0][0]
    if isinstance(field, models.JSONField):
        return {}
    if isinstance(field, models.DateTimeField):
        return dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    if isinstance(field, models.DateField):
        return dt.date(2024, 1, 2)
    if isinstance(field, models.BooleanField):
        return False
    if isinstance(field, (models.IntegerField, models.FloatField, models.DecimalField)):
        return 1
    if isinstance(field, models.BinaryField):
        return b"x"
    if isinstance(field, models.UUIDField):
        import uuid

        return uuid.uuid4()
    if isinstance(field, (models.CharField, models.TextField)):
        text = f"hello upgrade {serial}"
        return text[: field.max_length] if field.max_length else text
    raise AssertionError(f"no sample value for {field!r}")


def _fill(apps: Any) -> dict[str, int]:
    """One row in every table of the released schema, parents first."""
    made: dict[str, Any] = {}
    pending = [
        m
        for label in ("archive", "tasks")
        for m in apps.get_app_config(label).get_models()
        if not m._meta.auto_created
    ]
    for label, name in (("auth", "User"), ("django_celery_beat", "IntervalSchedule")):
        model = apps.get_model(label, name)
        values = {"username": "owner"} if name == "User" else {"every": 60, "period": "seconds"}
        made[model._meta.label_lower] = model.objects.create(**values)
    beat = apps.get_model("django_celery_beat", "PeriodicTask")
    made["django_celery_beat.periodictask"] = beat.objects.create(
        name="sync",
        task="archive.jobs.account_sync",
        interval=made["django_celery_beat.intervalschedule"],
    )
    serial = 0
    while pending:
        progressed = False
        for model in list(pending):
            values: dict[str, Any] = {}
            ready = True
            for field in model._meta.concrete_fields:
                if field.primary_key or field.has_default() or field.null:
                    continue  # the database or the model fills it
                if field.is_relation:
                    target = field.related_model._meta.label_lower
                    if target not in made:
                        ready = False
                        break
                    values[field.name] = made[target]
                    continue
                if getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False):
                    continue
                serial += 1
                values[field.name] = _value(field, made, serial)
            if not ready:
                continue
            made[model._meta.label_lower] = row = model.objects.create(**values)
            if model._meta.db_table == "archive_message":
                _index_as_the_released_sink_did(row.pk)
            pending.remove(model)
            progressed = True
        assert progressed, f"cannot order {[m.__name__ for m in pending]}"
    for label, row in made.items():
        if not label.startswith(("archive.", "tasks.")):
            continue
        for field in row._meta.many_to_many:
            getattr(row, field.name).add(made[field.related_model._meta.label_lower])
    return _counts()


def _index_as_the_released_sink_did(message_id: int) -> None:
    with connection.cursor() as cursor:
        for table in ("message_fts", "message_trigram"):
            cursor.execute(
                f"INSERT INTO {table}(rowid, text) SELECT id, text FROM archive_message"
                " WHERE id = %s",
                [message_id],
            )
        cursor.execute("INSERT INTO archive_stem_queue (message_id) VALUES (%s)", [message_id])


def _tables() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'"
            " AND (name LIKE 'archive_%' OR name LIKE 'tasks_%')"
        )
        return sorted(row[0] for row in cursor.fetchall())


def _counts() -> dict[str, int]:
    counts = {}
    with connection.cursor() as cursor:
        for table in _tables():
            cursor.execute(f'SELECT count(*) FROM "{table}"')
            counts[table] = int(cursor.fetchone()[0])
    return counts


@pytest.mark.django_db(transaction=True)
def test_a_released_store_migrates_forward_and_keeps_every_row() -> None:
    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes()
    # Django's own apps and beat at their latest; meetings and notes did not exist at the
    # release (and their migrations depend on later archive ones).
    others = [node for node in latest if node[0] not in {"archive", "tasks", "meetings", "notes"}]
    executor.migrate(RELEASED)
    try:
        executor.loader.build_graph()
        apps = executor.loader.project_state(RELEASED + others).apps
        before = _fill(apps)
    finally:
        # Whatever happened, the store goes forward again: the tests after this one share it.
        MigrationExecutor(connection).migrate(latest)
    assert [t for t, n in before.items() if n == 0] == [], "every released table holds a row"
    assert "archive_message" in before and "tasks_task" in before

    after = _counts()
    lost = {t: (n, after.get(t)) for t, n in before.items() if after.get(t, 0) < n}
    assert lost == {}, "rows lost by the upgrade"
    with connection.cursor() as cursor:
        cursor.execute("SELECT text FROM archive_message")
        text = cursor.fetchone()[0]
        word = text.split()[0]
        cursor.execute("SELECT count(*) FROM message_fts WHERE message_fts MATCH ?", [f'"{word}"'])
        assert cursor.fetchone()[0] == 1, "the message is still found by its words"
