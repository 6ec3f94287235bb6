"""Store upkeep: the nightly optimise and the worker heartbeat."""

from __future__ import annotations

import os
import socket

from django.db import connection, transaction
from django.utils import timezone

from archive.models import WorkerHeartbeat
from archive.sink import FTS_TABLES
from wirecat.db.pragmas import connection_report


def store_optimize() -> list[str]:
    """Merge FTS segments and let SQLite refresh its statistics. Returns what it did."""
    done = []
    with connection.cursor() as cursor:
        for table in (*FTS_TABLES, "message_stems"):
            cursor.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")
            done.append(f"{table}: optimize")
        cursor.execute("PRAGMA optimize")
        done.append("PRAGMA optimize")
    return done


def heartbeat_record() -> WorkerHeartbeat:
    """Record that this worker is alive, with the SQLite settings its connection runs with."""
    report = connection_report()
    with transaction.atomic():
        beat, _ = WorkerHeartbeat.objects.update_or_create(
            hostname=socket.gethostname(),
            defaults={"seen_at": timezone.now(), "pid": os.getpid(), "store": report},
        )
    return beat
