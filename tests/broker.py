"""What the tests read of the embedded broker (Kombu's SQLite file): the jobs waiting."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any


def queued(settings: Any, task: str) -> int:
    """Jobs of `task` (its Celery name) waiting in the embedded broker's file."""
    path = Path(settings.CELERY_BROKER_URL.removeprefix("sqla+sqlite:///"))
    if not path.exists():
        return 0
    with sqlite3.connect(path) as broker:
        found = broker.execute(
            "SELECT count(*) FROM sqlite_master WHERE name = 'kombu_message'"
        ).fetchone()[0]
        if not found:
            return 0
        rows = broker.execute("SELECT payload FROM kombu_message WHERE visible = 1").fetchall()
    return sum(1 for (payload,) in rows if task in str(payload))
